"""Bare JSON calls when the request's tools are known (issue 8, class 3), on both implementations.

With ``tools=``, a message that starts with a JSON call of an offered tool — the whole message, or its
first line(s) followed by a line break and content, or a single fence that is the whole message — is a
call; so are JSON calls that end the message from the start of a line (the trailing part: content, then
the calls on their own lines, then only whitespace). Without tools nothing changes; a tool that is not
offered stays text.
"""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from textcalls import _scan_py
from textcalls.chat_bytes import recover_response_bytes
from textcalls.sse import SSERecovery
from textcalls.stream import ChunkRecovery, recover_stream

from ..conftest import IMPLS
from ..streams import ch, feed_in_pieces


def _tools(*names):
    return [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in names]


TOOLS = _tools("get_weather", "now")
W = {"city": "Paris"}
CALL = '{"name": "get_weather", "arguments": {"city": "Paris"}}'


def calls(parsed):
    return [(c.name, json.loads(c.arguments)) for c in parsed.calls]


# (text, content with tools, calls with tools)
CALLS = [
    (CALL, "", [("get_weather", W)]),
    # two values side by side at the message's start (field sample bare_json-09, pretty-printed there)
    (CALL + " " + CALL, "", [("get_weather", W), ("get_weather", W)]),
    (CALL + "  " + CALL + "\nThen more.", "Then more.", [("get_weather", W), ("get_weather", W)]),
    ('  \n{"name": "get_weather", "parameters": {"city": "Paris"}}\n\n', "", [("get_weather", W)]),
    ('{\n  "name": "get_weather",\n  "arguments": {\n    "city": "Paris"\n  }\n}', "", [("get_weather", W)]),
    (
        '{"type": "function", "function": {"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}}',
        "",
        [("get_weather", W)],
    ),
    (
        '{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}',
        "",
        [("get_weather", W)],
    ),
    ('{"type": "function", "name": "get_weather", "parameters": {"city": "Paris"}}', "", [("get_weather", W)]),
    ('{"id": "c1", "type": "function", "function": {"name": "now", "arguments": null}}', "", [("now", {})]),
    (
        '[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "now", "arguments": {}}]',
        "",
        [("get_weather", W), ("now", {})],
    ),
    (
        '{"name": "get_weather", "parameters": {"city": "Paris"}}; {"name": "now", "parameters": {}}',
        "",
        [("get_weather", W), ("now", {})],
    ),
    ("```json\n" + CALL + "\n```", "", [("get_weather", W)]),
    ("```\n" + CALL + "\n```\n\n", "", [("get_weather", W)]),
    ("````json\n[" + CALL + "]\n````", "", [("get_weather", W)]),
    # the leading part: the call on its own line(s), then a line break and content (scanned as usual)
    (CALL + "\nI will check the weather.", "I will check the weather.", [("get_weather", W)]),
    (CALL + "  \r\n\nDone.", "Done.", [("get_weather", W)]),
    (
        CALL + '\nAnd <tool_call>{"name": "now", "arguments": {}}</tool_call> too',
        "And  too",
        [("get_weather", W), ("now", {})],
    ),
    # the trailing part: content, then the calls from a line start to the end of the message
    ("I will check the weather.\n" + CALL, "I will check the weather.", [("get_weather", W)]),
    ("Let me look.\n\n" + CALL + "  \n\n", "Let me look.", [("get_weather", W)]),
    (
        'Checking:\n{\n  "name": "get_weather",\n  "arguments": {\n    "city": "Paris"\n  }\n}',
        "Checking:",
        [("get_weather", W)],
    ),
    ("Both:\n" + CALL + '\n\n{"name": "now", "arguments": {}}', "Both:", [("get_weather", W), ("now", {})]),
    ("Both:\r\n" + CALL + '; {"name": "now", "parameters": {}}\r\n', "Both:", [("get_weather", W), ("now", {})]),
    ("A\n   [" + CALL + "]", "A", [("get_weather", W)]),  # up to 3 spaces before it
    ("<think>The user wants Paris.</think>\n\n" + CALL, "", [("get_weather", W)]),
    (CALL + '\nthen\n{"name": "now", "arguments": {}}', "then", [("get_weather", W), ("now", {})]),
    (
        'Data: {"a": 1}\n{"type": "function", "function": {"name": "now", "arguments": "{}"}}',
        'Data: {"a": 1}',
        [("now", {})],
    ),
    ('<tool_call>{"name": "now", "arguments": {}}</tool_call>\n' + CALL, "", [("now", {}), ("get_weather", W)]),
    ('{"name": "get_weather", "arguments": {"city": "a}b\\"{"}}\nok', "ok", [("get_weather", {"city": 'a}b"{'})]),
    # OpenAI's message key around the calls, as a model echoes it (field sample bare_json-10, pretty-printed there)
    ('{"tool_calls": [' + CALL + "]}", "", [("get_weather", W)]),
    (
        '{\n  "tool_calls": [\n    {"name": "now", "arguments": {}, "id": "1"},\n    {"type": "function", "function": '
        '{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}}\n  ]\n}',
        "",
        [("now", {}), ("get_weather", W)],
    ),
    ('Checking.\n{"tool_calls": [' + CALL + "]}", "Checking.", [("get_weather", W)]),
]

# texts that stay text with tools too
NEGATIVE = [
    '{"name": "search", "arguments": {"q": 1}}',  # not offered
    '[{"name": "get_weather", "arguments": {}}, {"name": "search", "arguments": {}}]',  # one not offered
    '{"name": "x"}',
    '{"name": "get_weather"}',  # no arguments: not a call object
    '{"queries": ["Current weather in europe"]}',  # a JSON answer
    '{"name": "get_weather", "arguments": {"city": "Paris"}, "note": 1}',  # another key
    '{"name": "get_weather", "arguments": [1]}',
    '{"name": "get_weather", "arguments": "not json"}',
    "[]",
    "[1, 2, 3]",
    CALL + " is what I would send.",  # prose on the same line
    "Here is how to call it:\n```json\n" + CALL + "\n```\nThat is all.",  # an example in prose
    "```json\n" + CALL + "\n```\nThat is the call.",  # the fence is not the whole message
    "```python\n" + CALL + "\n```",
    "Sure: " + CALL,  # on the same line as prose
    "{'name': 'get_weather', 'arguments': {}}",  # not strict JSON
    '{"name": "get_weather", "arguments": {"city": "Paris"}',  # cut before its end
    # not the trailing part
    "Sure:\n" + CALL + "\nis what I would send.",  # content after it: a call in the middle stays text
    "Code:\n    " + CALL,  # four spaces: an indented code block
    "Here:\n" + '{"name": "search", "arguments": {}}',  # not offered
    "The data:\n" + '{"city": "Paris", "temp": 21}',  # a JSON answer
    "Two:\n" + CALL + " " + CALL,  # two values on one line, no ";"
    'x\n{"name": "get_weather",\n' + CALL,  # a line-start call inside a value that never ends
    "Example:\n```json\n" + CALL + "\n```",  # in a fence that is not the whole message
    "Sure: " + CALL + "\n",  # on a line with prose
    "Try\r" + CALL,  # a lone CR does not start a line
    # the envelope: that key alone, around a non-empty array of calls of offered tools
    '{"tool_calls": []}',
    '{"tool_calls": ' + CALL + "}",  # not an array
    '{"tool_calls": [' + CALL + '], "content": null}',  # another key
    '{"role": "assistant", "tool_calls": [' + CALL + "]}",
    '{"tool_calls": [{"name": "search", "arguments": {}}]}',  # not offered
    '{"tool_calls": [{"name": "get_weather", "arguments": {}, "note": 1}]}',  # another key in a call
    '{"calls": [' + CALL + "]}",
]


@pytest.mark.parametrize(("text", "content", "expected"), CALLS)
def test_bare_calls_with_tools(impl, tc, text, content, expected):
    parsed = tc.parse(text, tools=TOOLS)
    assert (parsed.content, calls(parsed)) == (content, expected)
    assert parsed.removed >= 1


@pytest.mark.parametrize(("text", "content", "expected"), CALLS)
def test_without_tools_nothing_changes(impl, tc, text, content, expected):
    parsed = tc.parse(text)
    blocks = [c for c in calls(parsed) if "<tool_call>" in text]
    if "<think>" in text:  # the span is reasoning either way; the call after it stays text
        assert parsed.content == text.split("</think>")[1].strip() and parsed.calls == []
    elif "<tool_call>" not in text:
        assert parsed.content == text.strip() and parsed.calls == [] and parsed.removed == 0
    else:
        assert blocks == [("now", {})]


@pytest.mark.parametrize("text", NEGATIVE)
def test_what_is_not_a_bare_call_of_an_offered_tool_stays_text(impl, tc, text):
    parsed = tc.parse(text, tools=TOOLS)
    assert parsed.content == text.strip() and parsed.calls == [] and parsed.removed == 0
    # unknown_tools never makes a tool that was not offered a call here: there is no markup
    assert tc.parse(text, tools=TOOLS, unknown_tools="accept").calls == []


def test_a_fenced_example_inside_prose_keeps_the_fence_rule(impl, tc):
    text = "Example:\n```\n<tool_call>" + CALL + "</tool_call>\n```\n"
    assert tc.parse(text, tools=TOOLS).calls == []


def test_opt_in_json_message_with_tools_takes_the_other_shapes_too(impl, tc):
    formats = [n for n, on in tc.DIALECTS.items() if on] + ["json_message"]
    assert calls(tc.parse(CALL, formats=formats, tools=TOOLS)) == [("get_weather", W)]
    text = '{"type": "function", "function": {"name": "now", "arguments": {}}}\nthen this'
    parsed = tc.parse(text, formats=formats, tools=TOOLS)
    assert (parsed.content, calls(parsed)) == ("then this", [("now", {})])
    assert tc.parse('{"name": "search", "arguments": {}}', formats=formats, tools=TOOLS).calls == []


def test_a_held_start_is_released_as_soon_as_it_cannot_be_a_call(impl):
    # the bare-call reader's own holds (the schema-guided stage holds a head's line to the end: test_guided.py)
    s = impl.StreamScrubber(tools=TOOLS, schema_guided=False)
    assert s.feed("  {") == "  " and s.feed('"name": "get_weather", "arguments": {}}') == ""  # blanks shown
    assert s.feed(" x") == '{"name": "get_weather", "arguments": {}} x'  # prose on its line
    s = impl.StreamScrubber(tools=TOOLS, schema_guided=False)
    assert s.feed('{"name": "search", "arguments": {}') == ""
    assert s.feed("}") == '{"name": "search", "arguments": {}}'  # the value ended: not an offered tool
    s = impl.StreamScrubber(tools=TOOLS, schema_guided=False)
    assert s.feed('{"queries": ["a"]}') == '{"queries": ["a"]}'
    s = impl.StreamScrubber(tools=TOOLS, schema_guided=False)
    assert s.feed("Hello {") == "Hello {"  # not a JSON start: nothing held
    s = impl.StreamScrubber(tools=TOOLS, schema_guided=False)
    assert s.feed(CALL) == "" and s.feed("\nNow ") == "\nNow " and [c.name for c in s.calls] == ["get_weather"]
    assert s.flush() == ""
    s = impl.StreamScrubber()  # without tools nothing is held
    assert s.feed("{") == "{"


def test_a_held_end_is_released_as_soon_as_it_cannot_be_a_call(impl):
    # the bare-call reader's own holds (the schema-guided stage holds a head's line to the end: test_guided.py)
    s = impl.StreamScrubber(tools=TOOLS, schema_guided=False)
    assert s.feed("Let me check.\n") == "Let me check.\n"
    assert s.feed(CALL[:20]) == "" and s.feed(CALL[20:]) == "" and s.feed("\n\n") == ""
    assert s.feed("More.") == CALL + "\n\nMore."  # content after it: it was text
    assert s.flush() == "" and s.calls == []
    s = impl.StreamScrubber(tools=TOOLS, schema_guided=False)
    assert s.feed('Hi\n{"quer') == "Hi\n"  # a key a call may have? not yet known
    assert s.feed('ies": 1') == '{"queries": 1'  # no call has this key: text at once, before the value ends
    s = impl.StreamScrubber(tools=TOOLS, schema_guided=False)
    assert s.feed('Hi\n{"abcdefghij') == "Hi\n" and s.feed("k") == '{"abcdefghijk'  # longer than any call key
    s = impl.StreamScrubber(tools=TOOLS, schema_guided=False)
    assert s.feed("Hi {") == "Hi {" and s.feed("\n[x") == "\n"  # mid-line: nothing held; a line start: held
    assert s.feed("]") == "[x]"  # a value that is not a call
    s = impl.StreamScrubber(tools=TOOLS, schema_guided=False)
    assert s.feed("Hi\n" + CALL) == "Hi\n" and s.flush() == "" and [c.name for c in s.calls] == ["get_weather"]


def test_a_pending_call_that_ended_reasoning_was_a_rehearsal_when_the_end_calls(impl, tc):
    text = "<think>" + '<tool_call>{"name": "now", "arguments": {}}</tool_call>' + "</think>\nOK.\n" + CALL
    parsed = tc.parse(text, tools=TOOLS)
    assert calls(parsed) == [("get_weather", W)] and parsed.content == "OK."
    parsed = tc.parse(text.replace(CALL, "bye"), tools=TOOLS)
    assert calls(parsed) == [("now", {})] and parsed.content == "OK.\nbye"


ADVERSARIAL = [
    "\n[" * 5000,
    "\n{" * 5000,
    "\n{}" * 5000,
    ("\n[" + "[" * 40) * 200,
    '\n{"name": "get_weather", "arguments": {"a": "' * 400,
    '\n{"' + ("a" * 20 + "\n{") * 500,
    ("\n" + CALL + " x") * 300,
    "\n" + "[\n" * 5000 + "]" * 5000,
]


@pytest.mark.parametrize("text", ADVERSARIAL)
@pytest.mark.parametrize("max_block", [64, 1 << 20])
def test_each_character_is_read_by_one_candidate_at_most(monkeypatch, impl, tc, text, max_block):
    """Linear: a candidate that is not a call keeps every other from starting where it read, so the
    candidates read at most the text's length between them, whatever the splitting."""
    from textcalls import _table

    extent: dict = {}  # candidate -> how far from its first character it was read
    feed, take = _table.BareLead.feed, _table.BareLead.read

    def counted_read(self, s, start):
        r = take(self, s, start)
        extent[self] = self.seen if r < 0 else r
        return r

    def counted_feed(self, delta):
        decided = feed(self, delta)
        extent[self] = self.seen if decided is None else decided[2]  # held, or consumed / stop
        return decided

    monkeypatch.setattr(_table.BareLead, "read", counted_read)
    monkeypatch.setattr(_table.BareLead, "feed", counted_feed)
    monkeypatch.setattr(_table.BareLead, "__hash__", object.__hash__, raising=False)
    whole = tc.parse(text, tools=TOOLS, max_block=max_block)
    assert sum(extent.values()) <= len(text)
    extent.clear()
    split = feed_in_pieces(impl, text, list(range(0, len(text), 7)), tools=TOOLS, max_block=max_block)
    assert sum(extent.values()) <= len(text)
    assert split == feed_in_pieces(impl, text, [], tools=TOOLS, max_block=max_block)
    assert whole.calls == [] or text.startswith("\n" + CALL)


def test_the_hold_is_capped_by_max_block(impl, tc):
    assert tc.parse(CALL, tools=TOOLS, max_block=len(CALL)).calls != []
    assert tc.parse(CALL, tools=TOOLS, max_block=len(CALL) - 1).calls == []
    s = impl.StreamScrubber(tools=TOOLS, max_block=10, schema_guided=False)
    assert s.feed(CALL[:10]) == "" and s.feed(CALL[10:11]) == CALL[:11]


def test_reasoning_started_streams_do_not_take_a_bare_start(impl, tc):
    parsed = tc.parse(CALL + "</think>ok", tools=TOOLS, reasoning_started=True)
    assert parsed.calls == [] and parsed.content == "ok"


SPLIT_TEXT = st.lists(
    st.sampled_from([c[0] for c in CALLS] + NEGATIVE + [" ", "\n", "ok", "```"]), min_size=1, max_size=3
).map("".join)


@pytest.mark.parametrize("mod", IMPLS)
@settings(max_examples=200, deadline=None)
@given(data=st.data(), text=SPLIT_TEXT, max_block=st.sampled_from([8, 60, 1 << 20]))
def test_any_split_equals_one_feed(mod, data, text, max_block):
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=20).map(sorted))
    options = {"tools": TOOLS, "max_block": max_block}
    assert feed_in_pieces(mod, text, cuts, **options) == feed_in_pieces(mod, text, [], **options)


@pytest.mark.skipif(IMPLS[0].id != "c", reason="the Cython extension is disabled")
@settings(max_examples=200, deadline=None)
@given(data=st.data(), text=SPLIT_TEXT)
def test_twin_agrees(data, text):
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=20).map(sorted))
    assert feed_in_pieces(IMPLS[0].values[0], text, cuts, tools=TOOLS) == feed_in_pieces(
        _scan_py, text, cuts, tools=TOOLS
    )


# --- through the gateway helpers --------------------------------------------------------------------


def _out(chunks):
    ds = [c["delta"] for chunk in chunks for c in chunk["choices"]]
    text = "".join(d.get("content") or "" for d in ds)
    entries = [
        (t["function"]["name"], json.loads(t["function"]["arguments"])) for d in ds for t in d.get("tool_calls") or []
    ]
    finish = [c["finish_reason"] for chunk in chunks for c in chunk["choices"] if c["finish_reason"]]
    return text, entries, finish


@pytest.mark.parametrize("code_fences", [True, False])
def test_recover_stream(impl, code_fences):
    text = CALL + "\nChecking now."
    pieces = [ch("", role="assistant")] + [ch(text[k : k + 5]) for k in range(0, len(text), 5)] + [ch(finish="stop")]
    out = list(recover_stream(pieces, native=True, has_tools=True, tools=TOOLS, code_fences=code_fences))
    text_out, entries, finish = _out(out)
    assert text_out.strip() == "Checking now." and entries == [("get_weather", W)] and finish == ["tool_calls"]
    # a first chunk without any markup character must still be read: the floor applies with tools
    plain = [ch("Hi "), ch(CALL), ch(finish="stop")]
    out = list(recover_stream(plain, native=True, has_tools=True, tools=TOOLS, code_fences=code_fences))
    assert _out(out) == ("Hi " + CALL, [], ["stop"])
    # with tools, skipped content still reaches the scrubber (as with code fences on), and `{`, `[` are starts
    for fences in (True, False):
        m = ChunkRecovery(native=True, has_tools=True, tools=TOOLS, code_fences=fences, schema_guided=False)
        assert m.active == 0 and m.screen.fences and "{" in m.starts and "[" in m.starts
        # schema-guided recovery (the default with tools): a line break is a start too, and a choice is skipped
        # only while its stage is quiet (a fresh choice, at its message's start, is not)
        m = ChunkRecovery(native=True, has_tools=True, tools=TOOLS, code_fences=fences)
        assert m.active == 0 and "\n" in m.starts and not m.quiet(0)
    m = ChunkRecovery(native=True, has_tools=True, code_fences=False)  # without tools: as before
    assert m.active == 0 and not m.screen.fences and "{" not in m.starts


@pytest.mark.parametrize("code_fences", [True, False])
@pytest.mark.parametrize("first", ["    ", " \r", "\n", "  \n   ", "", "\t"])
def test_blank_first_chunks_then_text_then_json(impl, code_fences, first):
    pieces = [ch("", role="assistant"), ch(first), ch("Hello"), ch(" there"), ch(CALL), ch(finish="stop")]
    out = list(recover_stream(pieces, native=True, has_tools=True, tools=TOOLS, code_fences=code_fences))
    assert _out(out) == (first + "Hello there" + CALL, [], ["stop"])
    pieces = [ch("", role="assistant"), ch(first), ch(CALL[:3]), ch(CALL[3:]), ch(finish="stop")]
    out = list(recover_stream(pieces, native=True, has_tools=True, tools=TOOLS, code_fences=code_fences))
    expected = ([], ["stop"]) if first == "\t" else ([("get_weather", W)], ["tool_calls"])
    text, entries, finish = _out(out)
    assert (entries, finish) == expected and text.strip() == ("" if entries else (first + CALL).strip())


@pytest.mark.parametrize("code_fences", [True, False])
@pytest.mark.parametrize("reads", [1, 7, 4096])
def test_sse_any_read_size(impl, code_fences, reads):
    for first, expected in [("  ", [("get_weather", W)]), ("Hi", [])]:
        text = first + CALL + "\nok"
        events = b"".join(
            b"data: " + json.dumps(ch(text[k : k + 4])).encode() + b"\n\n" for k in range(0, len(text), 4)
        )
        events += b"data: " + json.dumps(ch(finish="stop")).encode() + b"\n\ndata: [DONE]\n\n"
        sse = SSERecovery(native=True, has_tools=True, tools=TOOLS, code_fences=code_fences)
        raw = b"".join(sse.feed(events[k : k + reads]) for k in range(0, len(events), reads)) + sse.close()
        chunks = [json.loads(line[6:]) for line in raw.decode().split("\n\n") if line.startswith("data: {")]
        got, entries, _ = _out(chunks)
        assert entries == expected and got.strip() == ("ok" if expected else text)


def test_not_offered_passes_through_the_stream(impl):
    text = '{"name": "search", "arguments": {}}'
    out = list(
        recover_stream([ch(text[:7]), ch(text[7:]), ch(finish="stop")], native=True, has_tools=True, tools=TOOLS)
    )
    assert _out(out) == (text, [], ["stop"])


def test_sse_and_response_bytes(impl):
    text = "```json\n" + CALL + "\n```"
    events = b"".join(b"data: " + json.dumps(ch(text[k : k + 7])).encode() + b"\n\n" for k in range(0, len(text), 7))
    events += b"data: " + json.dumps(ch(finish="stop")).encode() + b"\n\ndata: [DONE]\n\n"
    sse = SSERecovery(native=True, has_tools=True, tools=TOOLS)
    raw = sse.feed(events) + sse.close()
    chunks = [json.loads(line[6:]) for line in raw.decode().split("\n\n") if line.startswith("data: {")]
    text_out, entries, finish = _out(chunks)
    assert text_out == "" and entries == [("get_weather", W)] and finish == ["tool_calls"]
    body = json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "model": "m",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "\n" + CALL}, "finish_reason": "stop"}
            ],
        }
    ).encode()
    new = json.loads(recover_response_bytes(body, native=True, has_tools=True, tools=TOOLS))
    choice = new["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert recover_response_bytes(body, native=True, has_tools=True) is body  # without tools: untouched
    escaped = body.replace(b'"\\n{', b'"\\u007b')
    assert escaped != body and json.loads(escaped)["choices"][0]["message"]["content"].startswith("{")
    assert recover_response_bytes(escaped, native=True, has_tools=True, tools=TOOLS) is not escaped


GATEWAY_TEXT = st.lists(
    st.sampled_from(
        [c[0] for c in CALLS[:6]]
        + NEGATIVE[:6]
        + [" ", "    ", "\n", "\r", "\t", "Hi", "ok {", "[x]", "```", "<tool_call>" + CALL + "</tool_call>"]
    ),
    min_size=1,
    max_size=4,
).map("".join)


@pytest.mark.parametrize("mod", IMPLS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), text=GATEWAY_TEXT, code_fences=st.booleans())
def test_chunk_and_sse_streams_agree_with_parse(monkeypatch, mod, data, text, code_fences):
    """Whatever the chunking and read sizes, the gateway helpers (whose screens skip chunks) recover what
    ``parse`` does: the screens never disagree with the scanner."""
    from textcalls import _kernels, _scan, parse

    monkeypatch.setattr(_scan, "impl", mod)

    monkeypatch.setattr(_kernels, "impl", mod.KERNELS)
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=8).map(sorted))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=False)]
    chunks = [ch("", role="assistant")] + [ch(p) for p in pieces] + [ch(finish="stop")]
    options = {"tools": TOOLS, "code_fences": code_fences}
    p = parse(text, **options)
    expected = (p.content, [(c.name, json.loads(c.arguments)) for c in p.calls])
    got, entries, _ = _out(list(recover_stream(chunks, native=True, has_tools=True, **options)))
    assert (got.strip(), entries) == expected
    events = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
    reads = data.draw(st.sampled_from([1, 5, 64, 1 << 16]))
    sse = SSERecovery(native=True, has_tools=True, **options)
    raw = b"".join(sse.feed(events[k : k + reads]) for k in range(0, len(events), reads)) + sse.close()
    got, entries, _ = _out([json.loads(line[6:]) for line in raw.decode().split("\n\n") if line.startswith("data: {")])
    assert (got.strip(), entries) == expected
