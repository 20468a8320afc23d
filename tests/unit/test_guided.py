"""Schema-guided recovery (``textcalls._guided``, issue 27): with the request's tools known, a call of an offered
tool at a message's start or end is recovered whatever its markup, if its arguments validate against the tool's
schema; everything else stays text, exactly as written. Both implementations; streamed in any split, the same as
``parse``.

The expected calls and texts are decided by reading the rules in the module's doc, never by running the code.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from textcalls import _guided, parse

from ..streams import feed_in_pieces


def tool(name: str, **schema) -> dict:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object", **schema}}}


SHELL = tool("terminal", properties={"command": {"type": "string"}}, required=["command"])
WRITE = tool("write_file", properties={"path": {"type": "string"}, "content": {"type": "string"}}, required=["path"])
WEATHER = tool(
    "get_weather",
    properties={"city": {"type": "string"}, "days": {"type": "integer"}, "unit": {"enum": ["c", "f"]}},
    required=["city"],
)
BASH = tool("bash", properties={"command": {"type": "string"}})
READ = tool("read", properties={"filePath": {"type": "string"}})
SEARCH = tool("search_files", properties={"path": {"type": "string"}, "file_glob": {"type": "string"}})
OPEN = tool("anything")  # no properties: any key, any value
TOOLS = [SHELL, WRITE, WEATHER, BASH, READ, SEARCH, OPEN]

RECOVERED = [
    # (text, [(name, arguments)], content)
    pytest.param(
        "I'll check.\n<terminal>\n<command>echo hi</command>\n</terminal>",
        [("terminal", {"command": "echo hi"})],
        "I'll check.",
        id="tool-name-tag",
    ),
    pytest.param(
        "call:write_file{content:hello,path:a.txt}",
        [("write_file", {"content": "hello", "path": "a.txt"})],
        "",
        id="notation-bare-values",
    ),
    pytest.param(
        '[Calling tool: search_files]\n<parameter name=“file_glob”>*.tsx</parameter>\n<parameter name="path">/w'
        "</parameter>\n</invoke>\n</minimax:tool_call>",
        [("search_files", {"file_glob": "*.tsx", "path": "/w"})],
        "",
        id="label-then-parameters",
    ),
    pytest.param(
        "<call>get_weather(city='Berlin', days=3)",
        [("get_weather", {"city": "Berlin", "days": 3})],
        "",
        id="pythonic-after-tag",
    ),
    pytest.param(
        "read<arg_key>filePath</arg_key><arg_value>/x</arg_value>",
        [("read", {"filePath": "/x"})],
        "",
        id="arg-key-value",
    ),
    pytest.param(
        "<parameter=bash>\n<parameter=command>\nls\n</parameter>\n</function>",
        [("bash", {"command": "ls"})],
        "",
        id="function-opener-as-parameter",
    ),
    pytest.param(
        'Sure.\n\nget_weather({"city": "Paris", "unit": "c"})',
        [("get_weather", {"city": "Paris", "unit": "c"})],
        "Sure.",
        id="json-in-parentheses",
    ),
    pytest.param(  # as field sample llama3-02 shows (a Llama 3 end token relayed after the call)
        '{"name":"get_weather","parameters":{"city":"Hangzhou"}}<|eot_id|>',
        [("get_weather", {"city": "Hangzhou"})],
        "",
        id="json-call-then-token",
    ),
    pytest.param(
        'call:write_file{path:<|"|>a.txt<|"|>,content:\'x = 1\'<|"|>}',
        [("write_file", {"path": "a.txt", "content": "x = 1"})],
        "",
        id="gemma-quote-then-stray-delimiter",
    ),
    pytest.param(
        "<terminal>\n<command>make</command>\n</terminal>\nI ran the build.",
        [("terminal", {"command": "make"})],
        "I ran the build.",
        id="leading-call-then-prose",
    ),
    pytest.param(
        "Two steps.\nget_weather(city='Oslo')\nget_weather(city='Rome', days=2)\n",
        [("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Rome", "days": 2})],
        "Two steps.",
        id="two-trailing-calls",
    ),
    pytest.param(
        "get_weather:{city: 'Lima', days: '4'}",
        [("get_weather", {"city": "Lima", "days": 4})],
        "",
        id="text-typed-by-the-schema",
    ),
    pytest.param(
        '<terminal>\n<command><![CDATA[a < b && echo "ok"]]></command>\n</terminal>',
        [("terminal", {"command": 'a < b && echo "ok"'})],
        "",
        id="cdata-value",
    ),
    pytest.param(
        "anything{x: 1, y: [1, 2]}",
        [("anything", {"x": 1, "y": [1, 2]})],
        "",
        id="no-properties-any-key",
    ),
    pytest.param(  # DSML's structure without its tokens (field sample gigachat-01)
        '<tool_calls> <invoke name="search_files"> <parameter name="path" string="true">/w</parameter> </invoke>'
        " </tool_calls>",
        [("search_files", {"path": "/w"})],
        "",
        id="invoke-with-more-attributes",
    ),
    pytest.param(  # the function opener damaged into a tag and a stray closer (field sample qwen3_coder-10)
        "<name>bash\n</parameter>\n<parameter=command>\nls -la\n</parameter>\n</function>",
        [("bash", {"command": "ls -la"})],
        "",
        id="stray-closer-before-the-parameters",
    ),
    pytest.param(
        'Found it.\nsearch_files<param name="file_glob">*.md</param>',
        [("search_files", {"file_glob": "*.md"})],
        "Found it.",
        id="param-closed-by-its-own-tag",
    ),
    pytest.param(  # DeepSeek's name-then-JSON body, its tokens gone
        'Checking.\nget_weather\n```json\n{"city": "Oslo"}\n```',
        [("get_weather", {"city": "Oslo"})],
        "Checking.",
        id="name-then-fenced-json",
    ),
    pytest.param(
        'get_weather\n{"city": "Oslo", "days": 2}\nI asked for two days.',
        [("get_weather", {"city": "Oslo", "days": 2})],
        "I asked for two days.",
        id="name-then-json-on-the-next-line",
    ),
]


@pytest.mark.parametrize(("text", "calls", "content"), RECOVERED)
def test_a_call_of_an_offered_tool_is_recovered_whatever_its_markup(impl, tc, text, calls, content):
    p = tc.parse(text, tools=TOOLS)
    assert [(c.name, json.loads(c.arguments)) for c in p.calls] == calls
    assert p.content == content
    assert {c.dialect for c in p.calls} == {"schema_guided"}
    assert p.removed == len(calls)


KEPT = [
    # the schema is the guard
    pytest.param("get_weather(days=3)", id="required-key-missing"),
    pytest.param("get_weather(city='Oslo', country='NO')", id="key-not-among-properties"),
    pytest.param("get_weather(city='Oslo', days='three')", id="value-of-the-wrong-type"),
    pytest.param("get_weather:{city: 'Oslo', days: 'x'}", id="text-the-schema-cannot-type"),
    pytest.param("get_weather(city='Oslo', unit='k')", id="enum-not-respected"),
    pytest.param("get_weather(city=3)", id="a-number-for-a-string"),
    # only offered tools, only call syntax
    pytest.param("get_time(zone='UTC')", id="tool-not-offered"),
    pytest.param("terminal is the tool to run commands.", id="a-name-in-prose"),
    pytest.param("The tool is <terminal>, see <command>ls</command>.", id="tags-in-prose-mid-line"),
    pytest.param("<terminal>\n<command>echo hi</command>\n</terminal> and then more", id="text-after-the-closer"),
    pytest.param("<terminal>\n<command>echo hi", id="value-never-closed"),
    pytest.param("call:write_file{path:a.txt", id="object-never-closed"),
    pytest.param("terminal()", id="nothing-to-validate-a-required-key"),
    pytest.param('{"name": "get_weather"}', id="a-json-call-object-without-arguments"),
    pytest.param('{"name": "get_weather", "arguments": {"city": "Oslo"}, "note": 1}', id="a-json-object-with-more"),
    pytest.param('x\n{"name": "get_weather",\nget_weather(city=\'Oslo\')', id="inside-a-value-that-never-ends"),
    pytest.param("Code:\n    get_weather(city='Oslo')", id="an-indented-code-block"),
    pytest.param('Example:\nget_weather\n{"city": "Oslo"}\nThat is how it is called.', id="name-then-json-mid-text"),
    # position: only a message's leading or trailing part
    pytest.param("First.\nget_weather(city='Oslo')\nThen the weather.", id="between-prose"),
    pytest.param("Example:\n```\nget_weather(city='Oslo')\n```", id="in-a-fence"),
    pytest.param("Use `get_weather(city='Oslo')` to ask.", id="in-a-code-span"),
    pytest.param("    get_weather(city='Oslo') is how it is called, as in\nthe docs.", id="prose-on-its-line"),
]


@pytest.mark.parametrize("text", KEPT)
def test_anything_else_stays_text_exactly(impl, tc, text):
    p = tc.parse(text, tools=TOOLS)
    assert (p.calls, p.content) == ([], text.strip())


def test_it_runs_only_with_tools_and_when_no_dialect_rule_found_a_call(impl, tc):
    text = "I'll check.\n<terminal>\n<command>ls</command>\n</terminal>"
    assert tc.parse(text).calls == []  # no tools: no schema to guard with
    assert tc.parse(text, tools=TOOLS, schema_guided=False).calls == []
    assert tc.parse(text, tools=TOOLS).calls != []
    # a Hermes call elsewhere in the message: the dialect rules had their say, the candidate stays text
    hermes = '<tool_call>{"name": "bash", "arguments": {"command": "pwd"}}</tool_call>\n'
    p = tc.parse(hermes + text, tools=TOOLS)
    assert [(c.name, c.dialect) for c in p.calls] == [("bash", "hermes")]
    assert p.content == text


def test_a_cut_output_gives_no_trailing_call(impl, tc):
    text = "Running it.\nget_weather(city='Oslo')"
    assert tc.parse(text, tools=TOOLS, truncated=True).calls == []
    assert tc.parse(text, tools=TOOLS, truncated=True).content == text
    # a leading call followed by prose was finished before the cut
    lead = "get_weather(city='Oslo')\nAnd then the text was cut mid-sen"
    p = tc.parse(lead, tools=TOOLS, truncated=True)
    assert [c.name for c in p.calls] == ["get_weather"] and p.content == "And then the text was cut mid-sen"


def test_schema_guided_must_be_a_bool(tc):
    with pytest.raises(TypeError, match="schema_guided must be a bool"):
        tc.Options(schema_guided="yes")


@pytest.mark.parametrize(
    ("args", "schema", "typed"),
    [
        ({"n": _guided._Raw("42")}, {"properties": {"n": {"type": "integer"}}}, {"n": 42}),
        ({"n": _guided._Raw("4.5")}, {"properties": {"n": {"type": ["integer", "number"]}}}, {"n": 4.5}),
        ({"n": _guided._Raw("x")}, {"properties": {"n": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}}, None),
        (
            {"n": _guided._Raw("null")},
            {"properties": {"n": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}},
            {"n": None},
        ),
        ({"b": True}, {"properties": {"b": {"type": "integer"}}}, None),  # a bool is no integer
        ({"b": 2.0}, {"properties": {"b": {"type": "integer"}}}, {"b": 2.0}),
        ({"s": "x"}, {"properties": {"s": {}}}, {"s": "x"}),  # a property without a type takes any value
        ({}, {"required": ["a"]}, None),
        ({"a": 1}, {}, {"a": 1}),
        ({"a": _guided._Raw("on")}, {"properties": {"a": {"type": "boolean"}}}, None),
        ({"a": _guided._Raw("TRUE")}, {"properties": {"a": {"type": "boolean"}}}, {"a": True}),
    ],
)
def test_the_guard_types_and_validates(args, schema, typed):
    assert _guided.fits(args, schema) == typed


# --- streaming ----------------------------------------------------------------------------------------------


def test_a_prose_line_is_not_held_when_no_tool_name_begins_with_its_letter(impl):
    s = impl.StreamScrubber(tools=TOOLS)
    assert s.feed("Paris is") == "Paris is"
    assert s.feed(" sunny.\nRain") == " sunny.\nRain"
    # a line whose first letter begins a tool's name: held until its first word is told apart
    assert s.feed("\nre") == "\n"
    assert s.feed("ady now") == "ready now"
    assert s.flush() == ""


def test_from_a_head_to_the_end_is_held_then_read(impl):
    s = impl.StreamScrubber(tools=TOOLS)
    out = [s.feed("Checking.\n"), s.feed("<terminal>\n<comm"), s.feed("and>ls</command>\n</terminal>")]
    assert out == ["Checking.\n", "", ""]
    assert s.calls == []
    assert s.flush() == ""
    assert [(c.name, json.loads(c.arguments)) for c in s.calls] == [("terminal", {"command": "ls"})]


def test_what_a_candidate_holds_is_bounded(impl, monkeypatch):
    monkeypatch.setattr(_guided, "HOLD_MAX", 64)
    s = impl.StreamScrubber(tools=TOOLS)
    head = "<terminal>\n<command>"
    assert s.feed(head) == ""
    body = "x" * 100
    shown = s.feed(body)
    assert shown == head + body  # past HOLD_MAX the region is shown, and the rest of its line ...
    rest = s.feed("</command>\n</terminal>") + s.flush()
    assert shown + rest == head + body + "</command>\n</terminal>"  # ... and nothing of it is a call
    assert s.calls == []


def test_a_dialect_call_turns_the_stage_off_and_shows_what_it_held(impl):
    s = impl.StreamScrubber(tools=TOOLS)
    assert s.feed("get_weather(city='Oslo')\n") == ""
    out = s.feed('<tool_call>{"name": "bash", "arguments": {"command": "pwd"}}</tool_call>')
    assert out == "get_weather(city='Oslo')\n"
    assert s.flush() == ""
    assert [c.name for c in s.calls] == ["bash"]


def test_a_blank_line_before_a_head_is_shown_in_any_split(impl):
    # a blank line was held (and then taken into the region) when a split ended after it, but shown when the head
    # came in the same delta: a blank line is no head and never part of a region
    text = "Done.\n\n<terminal>\n<command>ls</command>\n</terminal>"
    for cut in range(1, len(text)):
        s = impl.StreamScrubber(tools=TOOLS)
        out = s.feed(text[:cut]) + s.feed(text[cut:]) + s.flush()
        assert (out, [(c.name, json.loads(c.arguments)) for c in s.calls]) == (
            "Done.\n\n",
            [("terminal", {"command": "ls"})],
        ), cut


def test_a_long_run_of_blank_lines_stays_linear(impl):
    # each blank line was decided by a search that looked past all the blank lines after it: quadratic (40,000
    # line breaks took seconds; this would hang the suite)
    text = "Done." + "\n" * 1_000_000 + 'terminal {"command": "ls"}'
    parsed = parse(text, tools=TOOLS)
    assert (parsed.content, [(c.name, json.loads(c.arguments)) for c in parsed.calls]) == (
        "Done.",
        [("terminal", {"command": "ls"})],
    )
    s = impl.StreamScrubber(tools=TOOLS)
    out = "".join(s.feed(text[i : i + 4096]) for i in range(0, len(text), 4096)) + s.flush()
    assert out == "Done." + "\n" * 1_000_000 and [c.name for c in s.calls] == ["terminal"]


def test_a_gateway_skips_a_choice_only_while_its_stage_is_quiet(impl):
    from textcalls.stream import ChunkRecovery

    from ..streams import ch

    m = ChunkRecovery(native=True, has_tools=True, tools=TOOLS)
    assert "\n" in m.starts and not m.quiet(0)  # a fresh choice is at its message's start
    for text, quiet in [("Paris is", True), (" sunny", True), (" today.\n", False), ("Nice", True), (" day.", True)]:
        chunk = ch(text)
        assert m.push(chunk) == [chunk]  # prose: every chunk goes on as it came
        assert (m.quiet(0), m.active) == (quiet, 0)
    # a line whose first letter begins a tool's name is held (the choice is active) ...
    assert m.push(ch("\nre"))[0]["choices"][0]["delta"]["content"] == "\n"
    assert m.active == 1 and not m.quiet(0)
    assert m.push(ch("ady now"))[0]["choices"][0]["delta"]["content"] == "ready now"
    # ... until all it held went out and its stage is quiet: the next delta unchanged settles it again
    chunk = ch(" and")
    assert m.push(chunk) == [chunk] and (m.active, m.quiet(0)) == (0, True)
    # ... and a call at the end of the message, after quiet prose, is recovered as parse recovers it
    out = m.push(ch('.\nterminal {"command": "ls"}')) + m.push(ch(finish="stop"))
    deltas = [c["delta"] for chunk in out for c in chunk["choices"]]
    assert "".join(d.get("content") or "" for d in deltas) == ".\n"
    assert [
        (t["function"]["name"], json.loads(t["function"]["arguments"]))
        for d in deltas
        for t in d.get("tool_calls") or []
    ] == [("terminal", {"command": "ls"})]


def test_sse_events_of_a_quiet_choice_go_on_undecoded_and_a_line_start_is_read(impl):
    from textcalls.sse import SSERecovery

    from ..streams import ch

    def event(chunk):
        return b"data: " + json.dumps(chunk).encode() + b"\n\n"

    r = SSERecovery(native=True, has_tools=True, tools=TOOLS)
    prose = [event(ch(t)) for t in ["Paris is", " sunny", " today", ", warm", " and", " dry", "."]]
    out = b"".join(r.feed(e) for e in prose)
    assert out == b"".join(prose)  # byte for byte
    assert r.chunks.quiet(0) and r._around is not None  # mid-line, the remembered shape applies
    tail = [
        event(ch("\n")),
        event(ch("terminal")),
        event(ch(' {"command": "ls"}')),
        event(ch(finish="stop")),
        b"data: [DONE]\n\n",
    ]
    got = b"".join(r.feed(e) for e in tail) + r.close()
    chunks = [json.loads(line[6:]) for line in got.split(b"\n\n") if line.startswith(b"data: {")]
    deltas = [c["delta"] for chunk in chunks for c in chunk["choices"]]
    assert "".join(d.get("content") or "" for d in deltas) == "\n"
    calls = [
        (t["function"]["name"], json.loads(t["function"]["arguments"]))
        for d in deltas
        for t in d.get("tool_calls") or []
    ]
    assert calls == [("terminal", {"command": "ls"})]


HEADS = [
    "<terminal>\n<command>ls</command>\n</terminal>",
    "get_weather(city='Oslo', days=2)",
    'call:write_file{path:a.txt,content:<|"|>x<|"|>}',
    '[Calling tool: search_files]\n<parameter name="path">/w</parameter>',
    '{"name": "get_weather", "arguments": {"city": "Rome"}}',
    "read<arg_key>filePath</arg_key><arg_value>/x</arg_value>",
    "get_weather(city='Oslo', days='x')",
    "terminal is a tool",
    "<terminal>\n<command>never closed",
    '<tool_call>{"name": "bash", "arguments": {"command": "pwd"}}</tool_call>',
    'get_weather\n```json\n{"city": "Oslo"}\n```',
    'get_weather\n{"city": "Oslo", "days": "x"}',
]
PROSE = [
    "Sure.",
    "reading it now",
    "The result:",
    "```",
    "`code`",
    "",
    "  ",
    "tools:",
    "call me",
    "<b>bold</b>",
    "</x>",
    "<",
    "[note",
    "{",
    "call:",
    "get_wea",
    "te",
    "(",
    '{"name": "get_weather"',
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=st.lists(st.sampled_from(HEADS + PROSE), min_size=1, max_size=6),
    seps=st.lists(st.sampled_from(["\n", "\n\n", " ", ""]), min_size=6, max_size=6),
    data=st.data(),
)
def test_any_split_gives_what_parse_gives(impl, tc, lines, seps, data):
    text = "".join(line + sep for line, sep in zip(lines, seps, strict=False))
    truncated = data.draw(st.booleans())
    p = tc.parse(text, tools=TOOLS, truncated=truncated)
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=8)))
    content, _, calls, removed = feed_in_pieces(impl, text, cuts, tools=TOOLS, truncated=truncated)
    assert content.strip() == p.content
    assert calls == [(c.name, c.arguments) for c in p.calls]
    assert removed == p.removed
    if not p.calls:  # never a byte lost
        assert p.content == text.strip()
    if not any(c in text for c in "{(<"):  # (what Options.quiet relies on: a call's arguments open so)
        assert p.calls == []


PIECES = [
    "<",
    ">",
    "<terminal>",
    "</",
    "[",
    "(",
    "{",
    '"name"',
    ": ",
    '"get_weather"',
    "get_weather",
    "get_wea",
    "call",
    ":",
    ".",
    "default_api",
    "terminal",
    "te",
    " ",
    "\n",
    "\t",
    "    ",
    "x",
    "Paris",
    "<|",
    "|>",
    "```",
    "[Calling tool: ",
    "<invoke name=",
    '"bash"',
    "<parameter=",
    "=",
    "'",
    "]",
    "read",
]


@settings(max_examples=500, deadline=None)
@given(text=st.lists(st.sampled_from(PIECES), max_size=12).map("".join), data=st.data())
def test_a_line_decided_on_part_of_its_text_is_decided_so_on_all_of_it(text, data):
    # the streaming hold's ground: a head decided from a prefix (not _MORE) is what the whole text decides
    from textcalls.dialects.context import Context

    stage = _guided.Guided(Context(TOOLS), 1 << 20)
    k = data.draw(st.integers(0, len(text)))
    early = stage.head(text[:k], 0, False)
    if early == _guided._MORE:
        return
    late = stage.head(text, 0, True)
    if isinstance(early, _guided._Head):
        assert isinstance(late, _guided._Head) and (early.name, early.at, early.json) == (late.name, late.at, late.json)
    else:
        assert late == early
