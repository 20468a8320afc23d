"""The Responses and Messages screens (``_apis.EventRecovery``: text delta events sent on undecoded once their
shape is learned): the screened path gives, byte for byte, what decoding every event gives, for any split of the
SSE bytes, any event layout and any text; and it does skip the decoding."""

from __future__ import annotations

import itertools
import json
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from textcalls import _apis
from textcalls._apis import EventRecovery
from textcalls.messages_api import MessagesSSERecovery
from textcalls.responses_api import ResponsesSSERecovery
from textcalls.toolcall import ID_PREFIX

from ..gateway_support.api_texts import NAMES, PROPERTY
from ..gateway_support.api_upstream import message_events, response_events

RESPONSES_TOOLS = [{"type": "function", "name": name, "parameters": {}} for name in NAMES]
MESSAGES_TOOLS = [{"name": name, "input_schema": {"type": "object"}} for name in NAMES]
APIS = {
    "responses": (ResponsesSSERecovery, response_events, RESPONSES_TOOLS),
    "messages": (MessagesSSERecovery, message_events, MESSAGES_TOOLS),
}
#: Pieces of text: prose, markup and its parts, what JSON escapes (quotes, backslashes, control characters,
#: a lone surrogate), non-ASCII, and "¤", which a stream may write as a byte that is not UTF-8.
PIECES = st.sampled_from(
    [
        "hi ",
        "a < b",
        "x",
        "y",
        "",
        "\n",
        "\t",
        "\x01",
        '"',
        "\\",
        "é",
        "｜",
        "\udcff",
        "¤",
        "<",
        "tool",
        "_call",
        ">",
        "<tool_call>",
        '{"name": "get_time", "arguments": {}}',
        "</tool_call>",
        "<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{}<｜tool▁call▁end｜>",
        "sequence_number",
        "delta",
        "msg_stub",
        "0",
        "7",
        "{",
        "```",
    ]
)
_IDS = re.compile(re.escape(ID_PREFIX[len("call_") :].encode()) + rb"[0-9a-f]{10}")


def masked(data: bytes) -> bytes:
    """``data`` with the fresh ids of recovered calls and items (``call_…``, ``fc_…``, ``toolu_…``, ``msg_…``) alike."""
    return _IDS.sub(b"ID", data)


@st.composite
def streams(draw, events_of) -> list:
    """The events of an answer whose text comes in drawn pieces, each written as SSE bytes in a drawn way: its
    JSON compact or spaced, ASCII or not, its keys in another order; with or without its ``event:`` line, other
    fields and comments, one of three line endings; sequence numbers from a drawn start, or none."""
    pieces = draw(st.lists(PIECES, max_size=24))
    events = events_of("m", pieces or [""], native=draw(st.booleans()))
    start = draw(st.sampled_from([0, 0, 7, 95, None]))
    rng = random.Random(draw(st.integers(0, 1 << 16)))
    out = []
    for n, event in enumerate(events):
        if "sequence_number" in event:
            event = {k: v for k, v in event.items() if k != "sequence_number"}
            if start is not None:
                event["sequence_number"] = start + n
        if draw(st.integers(0, 9)) == 0:  # another key order
            keys = list(event)
            rng.shuffle(keys)
            event = {k: event[k] for k in keys}
        compact = draw(st.booleans())
        payload = json.dumps(
            event, ensure_ascii=draw(st.integers(0, 4)) == 0, separators=(",", ":") if compact else None
        ).encode("utf-8", "surrogatepass")
        if draw(st.integers(0, 9)) == 0:
            payload = payload.replace("¤".encode(), b"\xff")  # not UTF-8: the event does not decode
        nl = draw(st.sampled_from([b"\n", b"\n", b"\r\n", b"\r"]))
        lines = []
        extra = draw(st.sampled_from(["", "", "", "id", "comment", "noevent"]))
        if extra == "comment":
            lines.append(b": ping")
        if extra != "noevent":
            lines.append(b"event: " + event["type"].encode())
        if extra == "id":
            lines.append(b"id: " + str(n).encode())
        lines.append(b"data: " + payload)
        out.append(nl.join(lines) + nl + nl)
    return out


OPTIONS = st.sampled_from(
    [
        {},
        {},
        {"trim_blanks": True},
        {"stream_arguments": True},
        {"tools": None},
        {"native": False},
        {"has_tools": False},
        {"max_event": 160},
    ]
)


def _run(cls, tools, options, chunks, screen: bool) -> tuple:
    keywords = {"native": True, "has_tools": True, "tools": tools, **options}
    recovery = cls(**keywords)
    if not screen:
        recovery._learn = lambda raw, lines, event: None  # every event decoded
    out = b"".join(recovery.feed(chunk) for chunk in chunks) + recovery.close()
    return masked(out), recovery.recovered, recovery.abandoned


@settings(PROPERTY, max_examples=200)
@given(st.sampled_from(sorted(APIS)), OPTIONS, st.data())
def test_screened_and_decoded_give_the_same_bytes(impl, api, options, data):
    cls, events_of, tools = APIS[api]
    events = data.draw(streams(events_of))
    raw = b"".join(events)
    how = data.draw(st.sampled_from(["events", "splits", "bytes", "whole"]))
    if how == "events":  # one event per feed: feed's own short path
        chunks = events
    elif how == "splits":
        cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(raw) - 1)), max_size=16)))
        chunks = [raw[a:b] for a, b in itertools.pairwise([0, *cuts, len(raw)])]
    elif how == "bytes" and len(raw) < 3000:
        chunks = [raw[i : i + 1] for i in range(len(raw))]
    else:
        chunks = [raw]
    assert _run(cls, tools, options, chunks, True) == _run(cls, tools, options, chunks, False)


def _decodes(monkeypatch) -> list:
    """The payloads ``_apis`` decodes from now on."""
    decoded: list = []
    loads = _apis.loads

    def counted(data):
        decoded.append(data)
        return loads(data)

    monkeypatch.setattr(_apis, "loads", counted)
    return decoded


@pytest.mark.parametrize("stream_arguments", [False, True])
def test_plain_text_deltas_are_not_decoded(impl, monkeypatch, stream_arguments):
    words = [f" word{i % 7}" for i in range(200)]
    for api, (cls, events_of, tools) in APIS.items():
        events = events_of("m", words)
        upstream = b"".join(
            b"event: " + e["type"].encode() + b"\ndata: " + json.dumps(e, separators=(",", ":")).encode() + b"\n\n"
            for e in events
        )
        for chunks in (
            [upstream[i : i + 4096] for i in range(0, len(upstream), 4096)],
            [upstream[i : i + 97] for i in range(0, len(upstream), 97)],
            [event + b"\n\n" for event in upstream.split(b"\n\n")[:-1]],  # one event per feed
        ):
            decoded = _decodes(monkeypatch)
            recovery = cls(native=True, has_tools=True, tools=tools, stream_arguments=stream_arguments)
            out = b"".join(recovery.feed(c) for c in chunks) + recovery.close()
            assert out == upstream, api
            others = len(events) - len(words)
            assert len(decoded) <= others + 2, (api, len(decoded))  # (the first delta, and the check of its shape)


def test_a_delta_with_markup_is_still_scrubbed_once_the_shape_is_known(impl):
    pieces = ["Checking", " now.", " <tool", '_call>{"name": "get_time", "arguments": {}}</tool_call>', " done"]
    for api, (cls, events_of, tools) in APIS.items():
        upstream = b"".join(
            b"event: " + e["type"].encode() + b"\ndata: " + json.dumps(e, separators=(",", ":")).encode() + b"\n\n"
            for e in events_of("m", pieces)
        )
        for chunks in ([upstream], upstream.split(b"\n\n")):
            screened = cls(native=True, has_tools=True, tools=tools)
            out = b"".join(screened.feed(c + b"\n\n" if len(chunks) > 1 and c else c) for c in chunks)
            out += screened.close()
            assert b"<tool" not in out and b"_call>" not in out
            assert screened.recovered == 1, api


def test_a_learned_shape_is_checked_by_decoding(impl):
    """A text that is also found elsewhere in the event, or an event whose text is not where its shape would
    say, teaches nothing; the recovery then decodes as before."""
    recovery = ResponsesSSERecovery(native=True, has_tools=True, tools=RESPONSES_TOOLS)
    events = response_events("m", ["msg_stub", "a", "b"])
    for e in events:
        recovery.feed(b"event: " + e["type"].encode() + b"\ndata: " + json.dumps(e).encode() + b"\n\n")
    shape = recovery._shape
    assert shape is not None and shape.number == 1 and shape.slot == (0, 0, ("msg_stub",))
    # a duplicated key: the delta the event decodes to is the last one, which the shape must not stand for
    dup = EventRecovery.__new__(ResponsesSSERecovery)
    ResponsesSSERecovery.__init__(dup, native=True, has_tools=True, tools=RESPONSES_TOOLS)
    for e in events[:4]:
        dup.feed(b"data: " + json.dumps(e).encode() + b"\n\n")
    dup.feed(
        b'data: {"type":"response.output_text.delta","sequence_number":4,"output_index":0,"content_index":0,'
        b'"delta":"q","item_id":"msg_stub","delta":"q"}\n\n'
    )
    assert dup._shape is None


def test_a_machine_without_the_screen_decodes_every_event(monkeypatch):
    class Echo:
        """A machine that sends every event on as it came, without the screen's methods."""

        recovered = abandoned = 0
        has_tools = True

        def push(self, event):
            return [event]

        def close(self):
            return []

    decoded = _decodes(monkeypatch)
    events = [b'data: {"type":"d","delta":"w%d"}\n\n' % i for i in range(20)]
    recovery = EventRecovery(Echo())
    assert b"".join(recovery.feed(e) for e in events) + recovery.close() == b"".join(events)
    assert len(decoded) == 20
