"""SSERecovery, recover_sse / arecover_sse and `textcalls recover` on SSE captures (both implementations)."""

from __future__ import annotations

import asyncio
import json
import pathlib
import re
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from textcalls.cli import main
from textcalls.parse import parse
from textcalls.sse import MAX_EVENT, SSERecovery, arecover_sse, recover_sse

from ..gateway_support.sse_client import CALL_ID, assemble, chunk, data_line, masked, recover, seen, stream

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent.parent / "examples"
BLOCK_F = '<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'
HERMES_CHUNKS = [
    chunk("", role="assistant"),
    chunk("Hi <tool"),
    chunk('_call>{"name": "f", "arguments": {"a": 1}}'),
    chunk("</tool_call> bye"),
    chunk(finish="stop"),
]


# --- passthrough ---------------------------------------------------------------------------------


def test_untouched_events_are_byte_identical(impl):
    data = (
        b"\xef\xbb\xbf: keep-alive\r\n\r\n"
        b"event: message\r\nid: 41\r\nretry: 3000\r\n"
        + data_line(chunk("", role="assistant"))
        + b"\r\n\r\n"
        + data_line(chunk("a < b and <b>c</b>"))
        + b"\n\n"
        + data_line(chunk("x \\u003c y"))
        + b"\r\r"
        + b"\n\n\n"
        + data_line(chunk(finish="stop"))
        + b"\r\n\r\n"
        + data_line({"id": "c1", "choices": [], "usage": {"total_tokens": 3}})
        + b"\n\n"
        + b"data: [DONE]\n\n"
    )
    assert recover(data) == data
    assert recover(data, cuts=range(1, len(data))) == data


def test_without_tools_input_comes_straight_back(impl):
    data = stream([chunk(BLOCK_F)])
    r = SSERecovery(native=True, has_tools=False)
    assert r.feed(data) is data
    assert r.feed(bytearray(b"data: x\n")) == b"data: x\n"
    assert r.close() == b""


def test_unchanged_events_after_a_call_stay_byte_identical(impl):
    later = b'data: {"choices": [{"index": 0, "delta": {"content": "x <b> y"}}]}\n\n'
    out = recover(data_line(chunk(BLOCK_F)) + b"\n\n" + later)
    assert out.endswith(b"\n\n" + later)  # decoded (a choice is active), left unchanged: sent as it came


@pytest.mark.parametrize(
    "payload",
    [
        b"<tool_call>not json</tool_call>",
        b'{"error": {"message": "<tool_call>{\\"name\\": \\"f\\"}</tool_call>"}}',
        b'["<tool_call>"]',
        b'{"choices": "<tool_call>"}',
        b'{"choices": [{"index": -1, "delta": {"content": "<tool_call>"}}]}',
        b'{"choices": [{"index": 0, "delta": {"content": "<tool_call>"}}]',
        b"\xff\xfe<tool_call>",
    ],
)
def test_events_that_are_not_chunks_pass_verbatim(impl, payload):
    data = b"id: 1\ndata: " + payload + b"\n\n" + data_line(chunk("ok")) + b"\n\n"
    assert recover(data) == data


# --- recovery ------------------------------------------------------------------------------------


def test_hermes_stream_is_recovered(impl):
    r = SSERecovery(native=True, has_tools=True)
    out = r.feed(stream(HERMES_CHUNKS)) + r.close()
    got = seen(out)
    assert assemble(got) == ("Hi  bye", [(0, "f", '{"a": 1}')], ["tool_calls"])
    assert got[-1] == "[DONE]"
    assert r.recovered == 1


def test_n_choices_interleaved(impl):
    a = ["A: <tool", '_call>{"name": "f", "arguments": {"a": 1}}</tool_call>', " done"]
    b = ["B: 1 < 2", " and <b>", " bold"]
    chunks = [c for pair in zip(a, b, strict=False) for c in (chunk(pair[0], index=0), chunk(pair[1], index=1))]
    both = chunk(finish="stop", index=0)
    both["choices"].append({"index": 1, "delta": {}, "logprobs": None, "finish_reason": "stop"})
    got = seen(recover(stream([*chunks, both])))
    assert assemble(got, 0) == ("A:  done", [(0, "f", '{"a": 1}')], ["tool_calls"])
    assert assemble(got, 1) == ("B: 1 < 2 and <b> bold", [], ["stop"])


def test_rewritten_event_keeps_its_other_lines(impl):
    raw = b": note\nevent: completion\nid: 7\n" + data_line(chunk("a " + BLOCK_F + " b")) + b"\nretry: 100\n\n"
    out = recover(raw)
    call_id = CALL_ID.search(out).group().decode()
    first = chunk("a  b")
    second = chunk(
        tool_calls=[{"index": 0, "id": call_id, "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}]
    )
    second["choices"][0]["delta"] = {"tool_calls": second["choices"][0]["delta"]["tool_calls"]}
    assert out == (
        b"event: completion\n"
        + data_line(first)
        + b"\n\n"
        + b": note\nevent: completion\nid: 7\n"
        + data_line(second)
        + b"\nretry: 100\n\n"
    )


def test_dropped_chunk_keeps_only_its_other_lines(impl):
    out = recover(
        b"id: 3\n"
        + data_line(chunk("<tool_call>"))
        + b"\n\n"
        + data_line(chunk('{"name": "f", "arguments": {}}</tool_call>'))
        + b"\n\n"
    )
    call = {
        "index": 0,
        "id": CALL_ID.search(out).group().decode(),
        "type": "function",
        "function": {"name": "f", "arguments": "{}"},
    }
    assert out == b"id: 3\n\n" + data_line(chunk(tool_calls=[call])) + b"\n\n"
    r = SSERecovery(native=True, has_tools=True)
    assert r.feed(data_line(chunk("<tool_call>")) + b"\n\n") == b""


@pytest.mark.parametrize("nl", [b"\n", b"\r\n", b"\r"])
def test_line_endings_give_the_same_events(impl, nl):
    out = recover(stream(HERMES_CHUNKS, nl=nl))
    assert assemble(seen(out)) == ("Hi  bye", [(0, "f", '{"a": 1}')], ["tool_calls"])
    # rewritten events use the stream's own line ending
    if nl == b"\r":
        assert b"\n" not in out
    else:
        assert out.count(b"\n") == out.count(nl)


def test_multi_line_data_is_one_chunk(impl):
    pretty = json.dumps(chunk("Hi " + BLOCK_F), indent=1).encode()
    data = b"".join(b"data:" + line + b"\n" for line in pretty.split(b"\n")) + b"\n"
    assert data.count(b"data:") > 5
    assert assemble(seen(recover(data))) == ("Hi ", [(0, "f", '{"a": 1}')], [])


def test_data_field_forms(impl):
    # "data:x" (no space) and "data" alone (an empty value) are data lines too
    lines = json.dumps(chunk(BLOCK_F)).encode()
    data = b"data\ndata:" + lines + b"\n\n"
    assert assemble(seen(recover(data))) == ("", [(0, "f", '{"a": 1}')], [])


def test_done_flushes_what_is_held_first(impl):
    out = recover(stream([chunk("a <tool")]))
    assert seen(out) == [chunk("a "), chunk("<tool"), "[DONE]"]


def test_close_flushes_and_returns_an_incomplete_event_verbatim(impl):
    data = stream([chunk("a <tool")], done=False) + b'data: {"partial'
    r = SSERecovery(native=True, has_tools=True)
    first = r.feed(data)
    assert first == data_line(chunk("a ")) + b"\n\n"
    assert r.close() == data_line(chunk("<tool")) + b"\n\n" + b'data: {"partial'
    assert r.close() == b""
    with pytest.raises(ValueError, match="feed\\(\\) after close\\(\\)"):
        r.feed(b"x")


def test_bom_is_kept_and_the_first_event_still_read(impl):
    data = b"\xef\xbb\xbf" + stream([chunk(BLOCK_F)], done=False)
    for cuts in [(), (1,), (1, 2), (2, 3, 4)]:
        out = recover(data, cuts)
        assert out.startswith(b"\xef\xbb\xbf")
        assert assemble(seen(out)) == ("", [(0, "f", '{"a": 1}')], [])


def test_crlf_split_between_cr_and_lf_of_a_rewritten_event(impl):
    data = stream([chunk("a " + BLOCK_F)], nl=b"\r\n", done=False)
    whole = recover(data)
    assert whole.endswith(b"\r\n\r\n")
    assert masked(recover(data, [len(data) - 1])) == masked(whole)
    assert masked(recover(data, [len(data) - 3])) == masked(whole)


def test_lone_surrogates_stay_escaped(impl):
    data = b'data: {"choices":[{"index":0,"delta":{"content":"\\ud83d <tool_call>"}}]}\n\n'
    out = recover(data)
    out.decode("utf-8")  # valid UTF-8
    assert b"\\ud83d " in out
    assert assemble(seen(out)) == ("\ud83d <tool_call>", [], [])


def test_mistral_opener_split_over_events_and_escaped(impl):
    pieces = ["x [", "TOOL_", 'CALLS][{"name": "f", "arguments": {"a": 1}}]', " y"]
    expected = ("x  y", [(0, "f", '{"a": 1}')], [])
    assert assemble(seen(recover(stream([chunk(p) for p in pieces], done=False)))) == expected
    escaped = stream([chunk("@") for _ in pieces], done=False)  # "[" written \u005b inside the text
    for p in pieces:
        escaped = escaped.replace(b'"@"', json.dumps(p).replace("[", "\\u005b").encode(), 1)
    assert escaped.count(b"\\u005b") == 2
    assert assemble(seen(recover(escaped))) == expected
    plain = stream([chunk("a [1, 2] b"), chunk("[x]")])
    assert recover(plain) == plain


def test_a_remembered_event_shape_does_not_let_markup_through(impl):
    texts = ["one ", "two ", "<tool_", 'call>{"name": "f", "arguments": {"a": 1}}</tool_call>', " three", " ["]
    r = SSERecovery(native=True, has_tools=True)
    out = b"".join(r.feed(data_line(chunk(t)) + b"\n\n") for t in texts) + r.close()
    assert assemble(seen(out)) == ("one two  three [", [(0, "f", '{"a": 1}')], [])


def test_whole_message_format_over_sse(impl):
    call = '{"name": "f", "arguments": {"a": 1}}'
    data = stream([chunk(call[:5]), chunk(call[5:]), chunk(finish="stop")])
    r = SSERecovery(native=True, has_tools=True, formats=["json_message"])
    assert assemble(seen(r.feed(data) + r.close())) == ("", [(0, "f", '{"a": 1}')], ["tool_calls"])
    assert recover(data) == data  # not a default format


# --- the cap ------------------------------------------------------------------------------------


def test_an_event_over_the_cap_passes_verbatim_and_holds_at_most_the_cap(impl):
    big = data_line(chunk("x" * 300 + BLOCK_F)) + b"\n\n"
    after = data_line(chunk(BLOCK_F)) + b"\n\n"
    assert len(after) < 256 < len(big)
    data = big + after
    r = SSERecovery(native=True, has_tools=True, max_event=256)
    out = b""
    for i in range(len(data)):
        out += r.feed(data[i : i + 1])
        assert i + 1 - len(out) <= 256
    out += r.close()
    assert out.startswith(big)  # not scrubbed
    assert assemble(seen(out[len(big) :])) == ("", [(0, "f", '{"a": 1}')], [])


def test_default_cap():
    assert MAX_EVENT == 1 << 20
    assert SSERecovery(native=True, has_tools=True).max_event == MAX_EVENT


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"max_event": 0}, ValueError, "max_event must be >= 1, not 0"),
        ({"max_event": 1.5}, TypeError, "max_event must be an int, not float"),
        ({"native": "yes"}, TypeError, "native must be a bool, not str"),
    ],
)
def test_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=re.escape(message)):
        SSERecovery(**{"native": True, "has_tools": True, **kwargs})


def test_feed_takes_bytes_only(impl):
    r = SSERecovery(native=True, has_tools=True)
    with pytest.raises(TypeError, match="feed\\(\\) expects bytes, bytearray or memoryview, not str"):
        r.feed("data: x\n\n")
    assert r.feed(memoryview(b"data: x\n\n")) == b"data: x\n\n"


# --- helpers and disconnects ---------------------------------------------------------------------


def test_recover_sse_over_pieces_and_closing(impl):
    data = stream(HERMES_CHUNKS)
    log = []

    def pieces():
        try:
            for i in range(0, len(data), 7):
                yield data[i : i + 7]
        finally:
            log.append("closed")

    out = b"".join(recover_sse(pieces(), native=True, has_tools=True))
    assert masked(out) == masked(recover(data))
    it = recover_sse(pieces(), native=True, has_tools=True)
    next(it)
    it.close()  # the client went away
    assert log == ["closed", "closed"]
    with pytest.raises(TypeError, match="chunks must be an iterable of bytes, not int"):
        recover_sse(3, native=True, has_tools=True)


def test_arecover_sse_and_closing(impl):
    data = stream(HERMES_CHUNKS)
    log = []

    async def pieces():
        try:
            for i in range(0, len(data), 5):
                yield data[i : i + 5]
        finally:
            log.append("closed")

    async def go():
        whole = b"".join([b async for b in arecover_sse(pieces(), native=True, has_tools=True)])
        it = arecover_sse(pieces(), native=True, has_tools=True)
        await it.__anext__()
        await it.aclose()
        return whole

    assert masked(asyncio.run(go())) == masked(recover(data))
    assert log == ["closed", "closed"]
    with pytest.raises(TypeError, match="chunks must be an async iterable of bytes, not list"):
        arecover_sse([], native=True, has_tools=True)


# --- properties ----------------------------------------------------------------------------------

PROPERTY = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
PIECES = st.sampled_from(
    [
        "hi ",
        "a < b",
        "x",
        "\n",
        "<",
        "tool",
        "_call",
        ">",
        "é",
        '"',
        BLOCK_F,
        "<tool_call>",
        '{"name": "g", "arguments": {}}',
        "</tool_call>",
        "<｜tool▁call▁begin｜>h<｜tool▁sep｜>{}<｜tool▁call▁end｜>",
        "[",
        "TOOL_CALLS",
        "]",
        '[{"name": "m", "arguments": {}}]',
        "[1]",
    ]
)
NEWLINES = st.sampled_from([b"\n", b"\r\n", b"\r"])


@st.composite
def sse_streams(draw):
    """(bytes, text, structured): chunk events carrying ``text`` in pieces, among comments, fields, blank
    lines, non-chunk events, escaped forms and maybe a structured call, each with its own line ending."""
    pieces = draw(st.lists(PIECES, max_size=10))
    out = [b"\xef\xbb\xbf"] if draw(st.booleans()) else []
    structured = draw(st.booleans())
    if structured:  # first, so that the native gate stays closed for every text call
        call = {"index": 0, "id": "call_s", "type": "function", "function": {"name": "s", "arguments": "{}"}}
        out.append(data_line(chunk(tool_calls=[call])) + b"\n\n")
    for piece in [""] + pieces:
        nl = draw(NEWLINES)
        extra = draw(st.sampled_from(["", "comment", "fields", "blank", "other", "escaped"]))
        if extra == "comment":
            out.append(b": ping" + nl)
        elif extra == "fields":
            out.append(b"event: chunk" + nl + b"id: 9" + nl)
        elif extra == "blank":
            out.append(nl)
        elif extra == "other":
            out.append(b'data: {"error": "<tool_call>"}' + nl + nl)
        line = json.dumps(chunk(piece), ensure_ascii=extra == "escaped").encode()
        if extra == "escaped":
            line = line.replace(b"<", b"\\u003c").replace(b"[T", b"\\u005bT")
        out.append(b"data: " + line + nl + nl)
    if draw(st.booleans()):
        out.append(data_line(chunk(finish="stop")) + b"\n\n")
    if draw(st.booleans()):
        out.append(b"data: [DONE]\n\n")
    return b"".join(out), "".join(pieces), structured


@PROPERTY
@given(sse_streams(), st.sampled_from([None, None, ["hermes", "mistral"], ["deepseek", "json_message"]]), st.data())
def test_any_split_gives_the_same_bytes(impl, case, formats, data):
    raw, text, structured = case
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=12)))
    whole = recover(raw, formats=formats)
    assert masked(recover(raw, cuts, formats=formats)) == masked(whole)
    every_byte = recover(raw, range(1, len(raw)), formats=formats) if len(raw) < 600 else whole
    assert masked(every_byte) == masked(whole)
    # the fast paths (events sent undecoded) change nothing
    with pytest.MonkeyPatch.context() as mp:
        init = SSERecovery.__init__

        def no_screen(self, **kwargs):
            init(self, **kwargs)
            self._untouched = lambda data: False

        mp.setattr(SSERecovery, "__init__", no_screen)
        mp.setattr(SSERecovery, "_remember", lambda self, raw, chunk: None)
        assert masked(recover(raw, cuts, formats=formats)) == masked(whole)
    # and the client sees the text recovered as parse() says (natively: no call added to a structured one)
    content, calls, _ = assemble(seen(whole))
    expected = parse(text, formats=formats)
    assert content.strip() == expected.content
    assert [(name, args) for _, name, args in calls] == (
        [("s", "{}")] if structured else [(c.name, c.arguments) for c in expected.calls]
    )


# --- the command line ----------------------------------------------------------------------------


def test_cli_recovers_the_hermes_capture(impl, capsysbinary):
    assert main(["recover", str(EXAMPLES / "hermes_stream.sse")]) == 0
    got = seen(capsysbinary.readouterr().out)
    content, calls, finishes = assemble(got)
    assert content == "I'll check the current weather in Paris for you.\n"
    assert calls == [(0, "get_weather", '{"city": "Paris", "unit": "celsius"}')]
    assert finishes == ["tool_calls"]
    assert got[-2]["usage"] == {"prompt_tokens": 182, "completion_tokens": 41, "total_tokens": 223}
    assert got[-1] == "[DONE]"


def test_cli_recovers_the_deepseek_capture(impl, capsysbinary):
    assert main(["recover", str(EXAMPLES / "deepseek_stream.sse")]) == 0
    content, calls, finishes = assemble(seen(capsysbinary.readouterr().out))
    assert content == "Let me look up both cities."
    assert calls == [(0, "get_weather", '{"city": "Oslo"}'), (1, "get_weather", '{"city": "Bergen"}')]
    assert finishes == ["tool_calls"]


@pytest.mark.parametrize("name", ["hermes_stream.sse", "deepseek_stream.sse"])
def test_cli_without_tools_prints_the_capture_unchanged(impl, capsysbinary, name):
    assert main(["recover", "--no-tools", str(EXAMPLES / name)]) == 0
    assert capsysbinary.readouterr().out == (EXAMPLES / name).read_bytes()


@pytest.mark.parametrize(
    ("name", "content", "calls"),
    [
        (
            "hermes_response.json",
            "I'll check the current weather in Paris for you.",
            [("get_weather", '{"city": "Paris", "unit": "celsius"}')],
        ),
        (
            "deepseek_response.json",
            "Let me look up both cities.",
            [("get_weather", '{"city": "Oslo"}'), ("get_weather", '{"city": "Bergen"}')],
        ),
    ],
)
def test_cli_recovers_the_json_examples(impl, capsys, name, content, calls):
    assert main(["recover", str(EXAMPLES / name)]) == 0
    choice = json.loads(capsys.readouterr().out)["choices"][0]
    assert choice["message"]["content"] == content
    assert [(t["function"]["name"], t["function"]["arguments"]) for t in choice["message"]["tool_calls"]] == calls
    assert choice["finish_reason"] == "tool_calls"


def test_cli_reads_a_capture_on_stdin_byte_for_byte():
    data = stream(HERMES_CHUNKS, nl=b"\r\n")
    proc = subprocess.run([sys.executable, "-m", "textcalls", "recover"], input=data, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert assemble(seen(proc.stdout)) == ("Hi  bye", [(0, "f", '{"a": 1}')], ["tool_calls"])
    assert proc.stdout.count(b"\n") == proc.stdout.count(b"\r\n")  # no newline translation
    proc = subprocess.run(
        [sys.executable, "-m", "textcalls", "recover", "--no-tools"], input=data, capture_output=True, timeout=60
    )
    assert proc.stdout == data


def test_cli_sse_detection_needs_a_field_first_and_a_data_line(impl, tmp_path, capsys):
    text = "Note: data: is a word here <tool_call>" + '{"name": "f", "arguments": {}}</tool_call>'
    path = tmp_path / "t.txt"
    path.write_text(text, encoding="utf-8")
    assert main(["recover", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["content"] == "Note: data: is a word here"


def test_a_remembered_shape_does_not_feed_a_text_that_is_not_json(impl):
    """An event whose text holds a raw control character does not decode (JSON writes none raw): it goes out as
    it came and its text is not fed, screened or not, so a later fence is read alike (code fences on)."""
    events = [data_line(chunk(c)) + b"\n\n" for c in ("Hi", " there", "\n", "TAB")]
    events[3] = events[3].replace(b"TAB", b"\t")
    events.append(data_line(chunk('```\n<tool_call>{"name": "f", "arguments": {}}</tool_call>\n```\n')) + b"\n\n")
    events.append(b"data: [DONE]\n\n")

    def run(screen: bool):
        recovery = SSERecovery(native=False, has_tools=True)
        if not screen:
            recovery._untouched = lambda data: False
            recovery._remember = lambda raw, chunk: None
        out = b"".join(recovery.feed(e) for e in events) + recovery.close()
        return masked(out), recovery.recovered

    assert run(True) == run(False)
