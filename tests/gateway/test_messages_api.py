"""The Anthropic Messages API (``textcalls.messages_api``): whole messages, event streams in any byte splits, and
end to end: a stub upstream sending faithful event sequences -> the textcalls proxy -> the official ``anthropic``
SDK (``client.messages.create``, streamed and not, and ``client.messages.stream``)."""

from __future__ import annotations

import json
import logging
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from textcalls.messages_api import (
    MessagesRecovery,
    MessagesSSERecovery,
    messages_tools,
    recover_message,
    recover_message_bytes,
)

from ..gateway_support import api_texts
from ..gateway_support.api_texts import (
    EXPECTED,
    LEAKS,
    NAMES,
    PROPERTY,
    AfterBlanks,
    Gateway,
    is_end,
    log_lines,
    run,
    seen,
    split,
    texts,
    without_end,
)
from ..gateway_support.api_upstream import message_body, message_events, sse
from ..gateway_support.upstream import HERMES, PLAIN

TOOLS = [
    {"name": name, "description": "d", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}
    for name in NAMES
]


def check(events: list, leaks=LEAKS, end="") -> dict:
    """The message a stream's events build, after checking them as the SDK's accumulator reads them: a
    block starts at the next index, deltas and its stop come while it is open, tool input is whole JSON,
    ``message_delta`` then ``message_stop`` end it, and none of ``leaks`` is in any text."""
    assert events[0][0] == "message_start" and events[-1][0] == "message_stop"
    message = events[0][1]["message"]
    blocks: list = []
    partial: dict = {}
    open_: set = set()
    for kind, e in events[1:-1]:
        assert kind == e["type"]
        if kind == "content_block_start":
            assert e["index"] == len(blocks)
            blocks.append(dict(e["content_block"]))
            open_.add(e["index"])
        elif kind == "content_block_delta":
            assert e["index"] in open_
            delta = e["delta"]
            if delta["type"] == "text_delta":
                assert is_end(delta["text"], end) or not any(c in delta["text"] for c in leaks)
                blocks[e["index"]]["text"] += delta["text"]
            else:
                partial[e["index"]] = partial.get(e["index"], "") + delta["partial_json"]
        elif kind == "content_block_stop":
            open_.remove(e["index"])
            if e["index"] in partial:
                blocks[e["index"]]["input"] = json.loads(partial[e["index"]])
        elif kind == "message_delta":
            assert not open_
            message = {**message, "stop_reason": e["delta"]["stop_reason"], "usage": e["usage"]}
        else:
            assert kind == "ping"
    for block in blocks:
        assert not any(c in without_end(block.get("text", ""), end) for c in leaks)
    return {**message, "content": blocks}


def masked(content: list) -> list:
    """Content blocks with the fresh ids of recovered calls left out."""
    return [
        {k: v for k, v in b.items() if k != "id"} if b["type"] == "tool_use" and b["id"] != "toolu_native0" else b
        for b in content
    ]


def calls_of(content: list) -> list:
    return [(b["name"], b["input"]) for b in content if b["type"] == "tool_use"]


# --- the library ------------------------------------------------------------------------------------


@pytest.mark.parametrize("options", [{}, {"trim_blanks": True}], ids=["default", "trim_blanks"])
@PROPERTY
@given(texts(), st.data())
def test_any_split_gives_the_whole_message_recovery(impl, options, drawn, data):
    text, expected, end = drawn
    upstream = sse(message_events("m", api_texts.pieces(data.draw, text)))
    # (the held end as texts() predicts it: the dialects' holds; the schema-guided stage may hold a line's start
    # too, and the differential fuzzer covers this layer with it: tests/unit/test_differential.py)
    options = {**options, "schema_guided": False}
    recovery = MessagesSSERecovery(native=True, has_tools=True, tools=TOOLS, **options)
    out, _ = run(recovery, split(data.draw, upstream))
    message = check(seen(out), end=AfterBlanks(end) if options.get("trim_blanks") else end)
    whole = recover_message(message_body("m", text), native=True, has_tools=True, tools=TOOLS, **options)
    assert masked(message["content"]) == masked(whole["content"])
    assert calls_of(message["content"]) == expected
    assert message["stop_reason"] == whole["stop_reason"] == ("tool_use" if expected else "end_turn")
    ids = [b["id"] for b in message["content"][1:]]
    assert all(re.fullmatch(r"toolu_[0-9a-f]{22}", i) for i in ids) and len(set(ids)) == len(ids)


@PROPERTY
@given(st.data())
def test_a_stream_without_markup_is_relayed_byte_for_byte(impl, data):
    upstream = sse(message_events("m", api_texts.pieces(data.draw, PLAIN.replace("<", "("))))
    out, _ = run(MessagesSSERecovery(native=True, has_tools=True, tools=TOOLS), split(data.draw, upstream))
    assert out == upstream


def test_without_tools_every_byte_comes_back_untouched(impl):
    upstream = sse(message_events("m", [HERMES[:20], HERMES[20:]]))
    recovery = MessagesSSERecovery(native=True, has_tools=False)
    chunk = upstream[:50]
    assert recovery.feed(chunk) is chunk
    assert recovery.feed(upstream[50:]) + recovery.close() == upstream[50:]
    message = message_body("m", HERMES)
    assert recover_message(message, native=False, has_tools=False) is message
    body = json.dumps(message).encode()
    assert recover_message_bytes(body, native=False, has_tools=False) is body


def test_untouched_events_are_the_same_objects_and_calls_come_before_message_delta(impl):
    events = message_events("m", ["Hi <tool", '_call>{"name": "get_time", "arguments": {}}</tool_call>', " bye."])
    recovery = MessagesRecovery(native=True, has_tools=True, tools=TOOLS)
    out = [e for event in events for e in recovery.push(event)] + recovery.close()
    assert all(a is b for a, b in zip(out[:3], events[:3], strict=True))  # message_start, block start, ping
    assert [(e["type"], e.get("index")) for e in out[3:]] == [
        ("content_block_delta", 0),
        ("content_block_delta", 0),
        ("content_block_stop", 0),
        ("content_block_start", 1),
        ("content_block_delta", 1),
        ("content_block_stop", 1),
        ("message_delta", None),
        ("message_stop", None),
    ]
    assert [out[3]["delta"]["text"], out[4]["delta"]["text"]] == ["Hi ", " bye."]
    assert out[6]["content_block"] == {
        "type": "tool_use",
        "id": out[6]["content_block"]["id"],
        "name": "get_time",
        "input": {},
    }
    assert out[7]["delta"] == {"type": "input_json_delta", "partial_json": "{}"}
    assert out[9]["delta"]["stop_reason"] == "tool_use" and out[9]["usage"] == events[-2]["usage"]
    assert out[10] is events[-1]
    assert recovery.recovered == 1


def test_a_held_tail_goes_out_before_the_block_stops(impl):
    out, _ = run(
        MessagesSSERecovery(native=True, has_tools=True, tools=TOOLS),
        [sse(message_events("m", ["Compare a <tool", "_cal"]))],
    )
    client = seen(out)
    message = check(client, leaks=())
    assert [e["delta"]["text"] for k, e in client if k == "content_block_delta"] == ["Compare a ", "<tool_cal"]
    assert message["content"] == [{"type": "text", "text": "Compare a <tool_cal"}]
    assert message["stop_reason"] == "end_turn"


def test_the_gate_native_keeps_tool_use_blocks_alone(impl):
    events = sse(message_events("native", [HERMES[:40], HERMES[40:]], native=True))
    hermes = [("get_weather", {"city": "Paris", "unit": "celsius"}), ("get_time", {"tz": "Europe/Paris"})]
    for native, expected in ((True, []), (False, hermes)):
        out, _ = run(MessagesSSERecovery(native=native, has_tools=True, tools=TOOLS), [events])
        message = check(seen(out))
        assert message["content"][0]["text"] == "I will check the weather.\n\n"  # scrubbed either way
        assert calls_of(message["content"]) == [("lookup", {"q": "native"}), *expected]
        assert message["stop_reason"] == "tool_use"
        whole = recover_message(message_body("native", HERMES, native=True), native=native, has_tools=True, tools=TOOLS)
        assert masked(whole["content"]) == masked(message["content"])


def test_server_tools_are_left_out_and_their_calls_stay_text(impl):
    tools = [TOOLS[1], {"type": "web_search_20250305", "name": "web_search"}, {"type": "custom", **TOOLS[0]}]
    assert [t["function"]["name"] for t in messages_tools(tools)] == ["get_time", "get_weather"]
    text = 'A<tool_call>{"name": "web_search", "arguments": {}}</tool_call>B<tool_call>{"name": "get_time", "arguments": {}}</tool_call>'
    whole = recover_message(message_body("m", text), native=True, has_tools=True, tools=tools)
    assert whole["content"][0]["text"] == 'A<tool_call>{"name": "web_search", "arguments": {}}</tool_call>B'
    assert calls_of(whole["content"]) == [("get_time", {})]


def test_tools_in_the_messages_shape():
    assert messages_tools(TOOLS[:1]) == [
        {
            "type": "function",
            "function": {"name": "get_weather", "parameters": TOOLS[0]["input_schema"], "description": "d"},
        }
    ]
    with pytest.raises(TypeError, match="tools: tools is a string, not an array"):
        messages_tools("get_weather")
    with pytest.raises(ValueError, match=r"tools\[0\] is a client tool without a name"):
        messages_tools([{"input_schema": {}}])
    with pytest.raises(ValueError, match=r"tools\[0\].type is a number, not a string"):
        messages_tools([{"type": 1, "name": "x"}])
    with pytest.raises(ValueError, match=r"tools\[0\].input_schema is a string, not an object"):
        recover_message(
            message_body("m", "x"), native=True, has_tools=True, tools=[{"name": "f", "input_schema": "{}"}]
        )


def test_bad_input_raises():
    with pytest.raises(TypeError, match="message must be a dict"):
        recover_message("m", native=True, has_tools=True)
    with pytest.raises(TypeError, match="has_tools must be a bool"):
        MessagesRecovery(native=True, has_tools=None)
    with pytest.raises(TypeError, match=r"message\['content'\] must be a list"):
        recover_message({"content": "text"}, native=True, has_tools=True)
    with pytest.raises(TypeError, match="feed\\(\\) expects bytes"):
        MessagesSSERecovery(native=True, has_tools=True).feed("data: x\n\n")


def test_bytes_and_dicts_agree_and_unchanged_bodies_are_the_same_object(impl):
    body = json.dumps(message_body("m", HERMES)).encode()
    new = json.loads(recover_message_bytes(body, native=True, has_tools=True, tools=TOOLS))
    whole = recover_message(json.loads(body), native=True, has_tools=True, tools=TOOLS)
    assert masked(new["content"]) == masked(whole["content"]) and new["stop_reason"] == "tool_use"
    plain = json.dumps(message_body("m", PLAIN)).encode()
    assert recover_message_bytes(plain, native=True, has_tools=True, tools=TOOLS) is plain
    error = b'{"type": "error", "error": {"type": "overloaded_error", "message": "<tool_call>"}}'
    assert recover_message_bytes(error, native=True, has_tools=True, tools=TOOLS) is error


def test_a_stream_that_stops_early_is_flushed_by_close(impl):
    events = message_events("m", ["Hi <tool_call>", '{"name": "get_time", "arguments": {}}'])[:5]  # no closer, no stop
    recovery = MessagesRecovery(native=True, has_tools=True, tools=TOOLS)
    out = [e for event in events for e in recovery.push(event)]
    assert [e["delta"]["text"] for e in out if e["type"] == "content_block_delta"] == ["Hi "]
    tail = recovery.close()  # an unterminated call of an offered tool is a call at the end
    assert [(e["type"], e["index"]) for e in tail] == [
        ("content_block_start", 1),
        ("content_block_delta", 1),
        ("content_block_stop", 1),
    ]
    assert tail[0]["content_block"]["name"] == "get_time"


def test_byte_splits_crlf_and_cr_line_endings_give_the_same_events(impl):
    upstream = sse(message_events("m", ["Hi <tool_call>", '{"name": "get_time", "arguments": {}}</tool_call>']))
    expected = seen(run(MessagesSSERecovery(native=True, has_tools=True, tools=TOOLS), [upstream])[0])
    for nl in (b"\r\n", b"\r"):
        data = upstream.replace(b"\n", nl)
        for size in (1, 2, 3, 7):
            chunks = [data[i : i + size] for i in range(0, len(data), size)]
            out, _ = run(MessagesSSERecovery(native=True, has_tools=True, tools=TOOLS), chunks)
            assert masked_events(seen(out)) == masked_events(expected)


def test_an_event_over_max_event_passes_verbatim_in_any_split(impl):
    events = message_events("m", ["Hi ", "x" * 300, '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>'])
    data = sse(events)
    whole, _ = run(MessagesSSERecovery(native=True, has_tools=True, tools=TOOLS, max_event=200), [data])
    assert sse(events[4:5]) in whole  # unread, as it came
    message = check(seen(whole))
    assert message["content"][0]["text"] == "Hi " + "x" * 300 and calls_of(message["content"]) == [("get_time", {})]
    for size in (1, 5, 64):
        chunks = [data[i : i + size] for i in range(0, len(data), size)]
        out, _ = run(MessagesSSERecovery(native=True, has_tools=True, tools=TOOLS, max_event=200), chunks)
        assert masked_events(seen(out)) == masked_events(seen(whole))


def masked_events(events: list) -> list:
    return [json.loads(re.sub(r"toolu_[0-9a-f]{22}", "toolu_ID", json.dumps(e))) for e in events]


# --- end to end: the anthropic SDK through the proxy ------------------------------------------------


MESSAGES = [{"role": "user", "content": "Weather and time?"}]


def connect(sdk, url: str):
    return sdk.Anthropic(base_url=url, api_key="sk-ant-test", max_retries=0, timeout=10)


@pytest.fixture(scope="module")
def gateway():
    gw = Gateway("anthropic", connect)
    yield gw
    gw.close()


def sdk_blocks(content) -> tuple:
    """(the text blocks' texts, the tool_use blocks' (name, input)), the ids checked unique."""
    ids = [b.id for b in content if b.type == "tool_use"]
    assert len(set(ids)) == len(ids)
    return [b.text for b in content if b.type == "text"], [(b.name, b.input) for b in content if b.type == "tool_use"]


@pytest.mark.parametrize("model", ["hermes", "deepseek"])
def test_sdk_message_stream_helper_is_recovered(impl, gateway, model):
    for seed in range(3):
        with gateway.client().messages.stream(
            model=model, max_tokens=100, messages=MESSAGES, tools=TOOLS, extra_body={"x_seed": seed}
        ) as stream:
            text = "".join(stream.text_stream)
            message = stream.get_final_message()
        assert text == EXPECTED[model][0]
        assert sdk_blocks(message.content) == ([EXPECTED[model][0]], EXPECTED[model][1])
        assert message.stop_reason == "tool_use"
        assert (message.usage.input_tokens, message.usage.output_tokens) == (10, 20)


@pytest.mark.parametrize("stream_arguments", [False, True])
def test_sdk_reads_arguments_that_held_a_lone_surrogate(impl, stream_arguments):
    # issue 28: arguments kept as written held "\ud83d", and messages.stream() raised on them; a lone surrogate
    # is U+FFFD in every arguments string handed out
    gw = Gateway("anthropic", connect, stream_arguments=stream_arguments)
    try:
        for seed in range(3):
            with gw.client(gw.guided).messages.stream(
                model="lone_surrogate", max_tokens=100, messages=MESSAGES, tools=TOOLS, extra_body={"x_seed": seed}
            ) as stream:
                message = stream.get_final_message()
            assert sdk_blocks(message.content) == (["Looking."], [("get_weather", {"city": "Paris \ufffd"})])
    finally:
        gw.close()


@pytest.mark.parametrize("model", ["hermes", "deepseek"])
def test_sdk_raw_events_and_non_streamed_are_recovered(impl, gateway, model):
    client = gateway.client()
    events = list(
        client.messages.create(
            model=model, max_tokens=100, messages=MESSAGES, tools=TOOLS, stream=True, extra_body={"x_seed": 5}
        )
    )
    starts = [(e.index, e.content_block.type) for e in events if e.type == "content_block_start"]
    assert starts == [(0, "text"), (1, "tool_use"), (2, "tool_use")]
    assert [e.delta.stop_reason for e in events if e.type == "message_delta"] == ["tool_use"]
    message = client.messages.create(model=model, max_tokens=100, messages=MESSAGES, tools=TOOLS)
    assert sdk_blocks(message.content) == ([EXPECTED[model][0]], EXPECTED[model][1])
    assert message.stop_reason == "tool_use"


def test_sdk_native_and_prompt_guided(impl, gateway):
    for url, expected in ((gateway.native, []), (gateway.guided, EXPECTED["hermes"][1])):
        with gateway.client(url).messages.stream(
            model="native", max_tokens=100, messages=MESSAGES, tools=TOOLS, extra_body={"x_seed": 1}
        ) as stream:
            message = stream.get_final_message()
        assert sdk_blocks(message.content) == ([EXPECTED["hermes"][0]], [("lookup", {"q": "native"}), *expected])


def test_sdk_without_tools_or_markup_gets_the_upstream_bytes(impl, gateway):
    client = gateway.client()
    for model, tools in (("hermes", None), ("plain", TOOLS)):
        extra = {"tools": tools} if tools else {}
        with client.messages.with_streaming_response.create(
            model=model, max_tokens=100, messages=MESSAGES, stream=True, extra_body={"x_seed": 2}, **extra
        ) as response:
            got = b"".join(response.iter_bytes())
        assert got == gateway.upstream.sent[-1]
        raw = client.messages.with_raw_response.create(model=model, max_tokens=100, messages=MESSAGES, **extra)
        assert raw.http_response.content == gateway.upstream.sent[-1]


def test_headers_are_relayed_and_malformed_tools_relayed_unrecovered(impl, gateway, caplog):
    caplog.set_level(logging.WARNING, logger="textcalls.proxy")
    bad = [{"description": "no name", "input_schema": {"type": "object"}}]
    raw = gateway.client().messages.with_raw_response.create(
        model="hermes", max_tokens=100, messages=MESSAGES, tools=bad
    )
    assert raw.http_response.content == gateway.upstream.sent[-1]
    assert any("tools[0] is a client tool without a name" in r.getMessage() for r in caplog.records)
    headers = gateway.upstream.requests[-1][2]
    assert "anthropic-version" in headers  # the key is relayed, however this SDK version sends it
    assert headers.get("x-api-key") == "sk-ant-test" or headers.get("Authorization") == "Bearer sk-ant-test"


def test_one_log_line_per_request(impl, gateway, caplog):
    caplog.set_level(logging.INFO, logger="textcalls.proxy")
    client = gateway.client()
    with client.messages.stream(
        model="hermes", max_tokens=100, messages=MESSAGES, tools=TOOLS, extra_query={"t": "log"}
    ) as stream:
        stream.get_final_message()
    client.messages.create(model="deepseek", max_tokens=100, messages=MESSAGES, tools=TOOLS, extra_query={"t": "log"})
    assert log_lines(caplog, "log", 2) == [
        "POST /v1/messages?t=log 200 json recovered",
        "POST /v1/messages?t=log 200 sse recovered=2",
    ]


def test_hostile_event_types_pass_once_and_never_inject(impl):
    # issue 28: an upstream event type with a line break must not inject an event, one with a lone surrogate
    # must not cut the stream; events the machine does not rewrite pass as the upstream wrote them ("e")
    types = ['content_block_delta\ndata: {"type": "injected"}', "x\r\rmessage_stop", "odd\ud800type"]
    events = message_events("m", ["Hi <tool", '_call>{"name": "get_time", "arguments": {}}</tool_call>', " bye."])
    events = events[:-1] + [{"type": t} for t in types] + events[-1:]
    data = b"".join(b"event: e\ndata: " + json.dumps(e).encode() + b"\n\n" for e in events)
    out, _ = run(MessagesSSERecovery(native=True, has_tools=True, tools=TOOLS), [data])
    out.decode("ascii")
    client = seen(out)
    assert [e["type"] for _, e in client if e["type"] in types] == types
    assert all(kind in ("e", json.dumps(e["type"])[1:-1]) for kind, e in client if e["type"] in types)
    assert not any(e.get("type") == "injected" for _, e in client)
    assert [e["type"] for _, e in client].count("message_stop") == 1 and client[-1][1]["type"] == "message_stop"
