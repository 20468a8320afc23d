"""Cousins of the known dialects seen in the field (issue 8, class 6): each is a table entry and a grammar,
on both implementations, whole and in any split, prose kept as prose."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from textcalls import _scan_py
from textcalls.dialects import GRAMMARS, Context
from textcalls.markers import BLOCKS

from ..conftest import IMPLS
from ..streams import feed_in_pieces

P = "Paris"
WEATHER = {"city": P}
INVOKE = '<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n</invoke>'
DSML_INVOKE = (
    '<｜DSML｜invoke name="get_weather"><｜DSML｜parameter name="city" string="true">Paris'
    "</｜DSML｜parameter></｜DSML｜invoke>"
)

# (id, text, expected content, expected calls)
CASES = [
    # LM Studio's own format
    (
        "lmstudio",
        '[TOOL_REQUEST]{"name": "get_weather", "arguments": {"city": "Paris"}}[END_TOOL_REQUEST]',
        "",
        [("get_weather", WEATHER)],
    ),
    (
        "lmstudio-lines",
        'Sure.\n[TOOL_REQUEST]\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n[END_TOOL_REQUEST]\nok',
        "Sure.\n\nok",
        [("get_weather", WEATHER)],
    ),
    # MiniMax M2.5/M2.7's [TOOL_CALL] pseudo-syntax
    (
        "arrow-flags",
        '[TOOL_CALL]\n{tool => "search", args => {\n  --query "Python"\n  --top_k 20\n}}\n[/TOOL_CALL]',
        "",
        [("search", {"query": "Python", "top_k": 20})],
    ),
    (
        "arrow-json-args",
        'Look.\n[TOOL_CALL]\n{tool => "Glob", args => {"pattern":"*"}}\n[/TOOL_CALL]\nDone.',
        "Look.\n\nDone.",
        [("Glob", {"pattern": "*"})],
    ),
    (
        "arrow-relaxed-args",
        '[TOOL_CALL]\n{tool => "read_file", args => {path: "README.md"}}\n[/TOOL_CALL]',
        "",
        [("read_file", {"path": "README.md"})],
    ),
    ("arrow-no-args", '[TOOL_CALL]\n{tool => "skills_list"}\n[/TOOL_CALL]', "", [("skills_list", {})]),
    (
        "arrow-two-calls",
        '[TOOL_CALL]{tool => "a", args => {--x 1}}\n{tool => "b", args => {--mode fast}}[/TOOL_CALL]',
        "",
        [("a", {"x": 1}), ("b", {"mode": "fast"})],
    ),
    (
        "arrow-json-call",
        '[TOOL_CALL]{"name": "get_weather", "arguments": {"city": "Paris"}}[/TOOL_CALL]',
        "",
        [("get_weather", WEATHER)],
    ),
    # lowercase Nemotron
    (
        "toolcall-lower",
        '<toolcall>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</toolcall>',
        "",
        [("get_weather", WEATHER)],
    ),
    # the name in the opener's attribute, the body the arguments
    (
        "tool-call-name-attr",
        '<tool_call id="call_0" name="get_weather">\n{"city": "Paris"}\n</tool_call>',
        "",
        [("get_weather", WEATHER)],
    ),
    (
        "tool-call-name-attr-args-with-name",
        '<tool_call name=\'create_user\'>{"name": "Bob"}</tool_call>',
        "",
        [("create_user", {"name": "Bob"})],
    ),
    (
        "tool-call-name-attr-call-body",
        '<tool_call name="get_weather">{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>',
        "",
        [("get_weather", WEATHER)],
    ),
    ("tool-call-name-attr-empty", '<tool_call name="now"></tool_call>', "", [("now", {})]),
    # DSML as DeepSeek V4 misspells it, with ASCII bars, and NAME + fenced JSON
    ("dsml-toolcalls", f"<｜DSML｜toolcalls>\n{DSML_INVOKE}\n</｜DSML｜tool_calls>", "", [("get_weather", WEATHER)]),
    ("dsml-tool", f"<｜DSML｜tool>{DSML_INVOKE}</｜DSML｜tool_calls>", "", [("get_weather", WEATHER)]),
    (
        "dsml-ascii",
        "<|DSML|tool_calls>" + DSML_INVOKE.replace("｜", "|") + "</|DSML|tool_calls>",
        "",
        [("get_weather", WEATHER)],
    ),
    (
        "dsml-ascii-v3.2",
        "<|DSML|function_calls>" + DSML_INVOKE.replace("｜", "|") + "</|DSML|function_calls>",
        "",
        [("get_weather", WEATHER)],
    ),
    (
        "dsml-toolcall-fenced",
        '<｜DSML｜toolcall>get_weather\n```json\n{"city": "Paris"}\n```\n</｜DSML｜toolcall>',
        "",
        [("get_weather", WEATHER)],
    ),
    ("dsml-toolcall-invoke", f"<｜DSML｜toolcall>{DSML_INVOKE}</｜DSML｜toolcall>", "", [("get_weather", WEATHER)]),
    # Llama 3.1 built-in tools
    (
        "llama3-brave",
        'Searching.<|python_tag|>brave_search.call(query="Paris weather")<|eom_id|>',
        "Searching.",
        [("brave_search", {"query": "Paris weather"})],
    ),
    (
        "llama3-wolfram",
        "<|python_tag|>wolfram_alpha.call(query='2+2')<|eom_id|>",
        "",
        [("wolfram_alpha", {"query": "2+2"})],
    ),
    # JSON call objects where LFM2 / Llama 4 usually write pythonic calls
    (
        "lfm2-json",
        '<|tool_call_start|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]<|tool_call_end|>',
        "",
        [("get_weather", WEATHER)],
    ),
    (
        "llama4-json",
        '<|python_start|>{"name": "get_weather", "parameters": {"city": "Paris"}}<|python_end|>',
        "",
        [("get_weather", WEATHER)],
    ),
    # Kimi K2 cousins: tokens decoded by id, the argument token left out, arguments encoded twice
    (
        "kimi-reserved",
        "Now:<|reserved_token_163595|><|reserved_token_163597|>functions.get_weather:0"
        '<|reserved_token_163598|>{"city": "Paris"}<|reserved_token_163599|><|reserved_token_163596|>',
        "Now:",
        [("get_weather", WEATHER)],
    ),
    (
        "kimi-no-argument-token",
        '<|tool_call_begin|> functions.get_weather:0 {"city": "Paris"} <|tool_call_end|>',
        "",
        [("get_weather", WEATHER)],
    ),
    (
        "kimi-double-encoded",
        "<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
        '"{\\"city\\": \\"Paris\\"}"<|tool_call_end|>',
        "",
        [("get_weather", WEATHER)],
    ),
    # <function_calls><invoke …>: Claude's XML, or V3.2 DSML with its markers stripped
    ("invoke-xml", f"<function_calls>\n{INVOKE}\n</function_calls>", "", [("get_weather", WEATHER)]),
    (
        "invoke-xml-inline",
        '<function_calls><invoke name="skills_list"></invoke></function_calls>',
        "",
        [("skills_list", {})],
    ),
    # Qwen3-Coder without its <tool_call> opener: the stray closer after the call goes too
    (
        "qwen-closer-only",
        "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>\nok",
        "ok",
        [("get_weather", WEATHER)],
    ),
]

# Markup-looking prose: kept exactly, nothing removed.
NEGATIVE = [
    "LM Studio writes [TOOL_REQUEST] … [END_TOOL_REQUEST] around calls.",
    "<<<[TOOL_REQUEST]>>>\ntool_name:「始」SciCalculator「末」,\nexpression:「始」2+2「末」\n<<<[END_TOOL_REQUEST]>>>",
    "[TOOL_CALL] and [/TOOL_CALL] in prose",
    "[TOOL_CALL]\nsee the docs\n[/TOOL_CALL]",
    "use <toolcall>foo</toolcall> here",
    "<toolcall>[1, 2]</toolcall> is a list",
    "a </tool_call> that closes nothing",
    "<function_calls> and <invoke> are Claude's tags",
    "the <|python_tag|>brave_search.call( prefix",
    '<tool_call name="x"> alone',
]

# Markup, but malformed: removed without a call.
MALFORMED = [
    '[TOOL_CALL]\n{tool => "x", args => {...}}\n[/TOOL_CALL]',
    '[TOOL_CALL]{tool => "x", args => {--a}}[/TOOL_CALL]',
    "<|python_tag|>brave_search.call(query=x + 1)<|eom_id|>",
    '<|python_tag|>brave_search.call(query="a"), other()<|eom_id|>',
    '<tool_call name="a">{"name": "b", "arguments": {}}</tool_call>',  # which tool? not known
    '<tool_call name="a">[1]</tool_call>',
    "<｜DSML｜toolcall>get_weather\n```json\n[1]\n```\n</｜DSML｜toolcall>",
    '<|tool_call_begin|>functions.f:0{"a": 1}<|tool_call_end|>',  # glued: the argument token is needed
]


def calls(parsed):
    return [(c.name, json.loads(c.arguments)) for c in parsed.calls]


@pytest.mark.parametrize(("name", "text", "content", "expected"), CASES, ids=[c[0] for c in CASES])
def test_cousin_whole_text(impl, tc, name, text, content, expected):
    parsed = tc.parse(text)
    assert parsed.content == content
    assert calls(parsed) == expected


@pytest.mark.parametrize("text", NEGATIVE)
def test_cousin_prose_stays_prose(impl, tc, text):
    parsed = tc.parse(text)
    assert calls(parsed) == [] and parsed.content == text.strip() and parsed.removed == 0


@pytest.mark.parametrize("text", MALFORMED)
def test_malformed_cousin_markup_is_removed_without_a_call(impl, tc, text):
    parsed = tc.parse(text)
    assert calls(parsed) == [] and parsed.content == "" and parsed.removed == 1


def test_every_cousin_is_in_the_table_and_can_be_turned_off(impl, tc):
    for dialect in ("lmstudio", "bracket_tool_call"):
        assert tc.DIALECTS[dialect] is True
    text = {c[0]: c[1] for c in CASES}["arrow-flags"]
    formats = [n for n, on in tc.DIALECTS.items() if on and n != "bracket_tool_call"]
    assert tc.parse(text, formats=formats).content == text and tc.parse(text, formats=formats).calls == []


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}},
        },
    }
]


def test_unknown_tools_applies_to_cousins(impl, tc):
    text = '<tool_call name="rm_rf">{"path": "/"}</tool_call> ok'
    assert tc.parse(text, tools=TOOLS).content == text and tc.parse(text, tools=TOOLS).calls == []
    assert tc.parse(text, tools=TOOLS, unknown_tools="drop").content == "ok"
    text = '[TOOL_CALL]{tool => "rm_rf"}[/TOOL_CALL] ok'
    assert tc.parse(text, tools=TOOLS).content == text


def test_invoke_values_are_typed_by_the_schema(impl, tc):
    text = (
        '<function_calls><invoke name="get_weather"><parameter name="city">Paris</parameter>'
        '<parameter name="days">3</parameter></invoke></function_calls>'
    )
    assert calls(tc.parse(text, tools=TOOLS)) == [("get_weather", {"city": P, "days": 3})]
    assert calls(tc.parse(text)) == [("get_weather", {"city": P, "days": "3"})]


def test_the_python_tag_still_carries_json(impl, tc):
    text = '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}<|eom_id|>'
    assert calls(tc.parse(text)) == [("get_weather", WEATHER)]


@pytest.mark.parametrize(
    ("grammar", "opener", "body", "expected"),
    [
        (
            "arrow_call",
            "[TOOL_CALL]",
            '{tool => "f", args => {--a "x" --b=2, --c true}}',
            [("f", {"a": "x", "b": 2, "c": True})],
        ),
        ("arrow_call", "[TOOL_CALL]", '{tool => "f", args => {--path /tmp/x}}', [("f", {"path": "/tmp/x"})]),
        ("arrow_call", "[TOOL_CALL]", "plain text", None),
        ("arrow_call", "[TOOL_CALL]", '{tool => "f", args => {--a 1 --a 2}}', []),  # a repeated flag
        ("arrow_call", "[TOOL_CALL]", '{tool => "f", args => [1]}', []),
        ("arrow_call", "[TOOL_CALL]", '{tool => "f"} trailing', []),
        ("arrow_call", "[TOOL_CALL]", "{tool => 3}", []),
        ("arrow_call", "[TOOL_CALL]", '{tool => "f", args => {"a": "}"}', []),  # unclosed
        ("dsml_toolcall", "<｜DSML｜toolcall>", "now", [("now", {})]),
        ("dsml_toolcall", "<｜DSML｜toolcall>", 'get_weather {"city": "Paris"}', [("get_weather", WEATHER)]),
        ("builtin_call", "<|python_tag|>brave_search.call(", 'query="a")', [("brave_search", {"query": "a"})]),
        ("builtin_call", "<|python_tag|>brave_search.call(", 'query="a"', []),
        ("builtin_call", "<|python_tag|>brave_search.call(", "'a')", []),  # positional
        (
            "pythonic_lines",
            "<function_calls>",
            '\n<invoke name="f"><parameter name="a">1</parameter></invoke>',
            [("f", {"a": "1"})],
        ),
        ("pythonic_lines", "<function_calls>", "f(a=1)\ng()", [("f", {"a": 1}), ("g", {})]),
        ("pythonic_lines", "<function_calls>", "Sure thing.", None),
        ("kimi_k2", "<|reserved_token_163597|>", 'functions.f:2<|reserved_token_163598|>{"a": 1}', [("f", {"a": 1})]),
        ("kimi_k2", "<|tool_call_begin|>", 'functions.f:0 "{\\"a\\": 1}"', []),  # a string is not an object
    ],
)
def test_cousin_grammars(grammar, opener, body, expected):
    result = GRAMMARS[grammar](opener, body, Context())
    assert (result if result is None else [(c.name, json.loads(c.arguments)) for c in result]) == expected


def test_cousin_grammars_never_raise():
    bodies = [
        "",
        "{",
        "}",
        '{tool => "',
        '{tool => "f", args => {--',
        '{tool => "f", args => {',
        "--x",
        "\x00",
        '"' * 7,
        "{" * 500,
        "[" * 500,
        "<invoke",
        ")",
        "a.call(",
        "functions.f:0 {",
        "```json\n{\n```",
    ]
    for name in ("arrow_call", "dsml_toolcall", "builtin_call", "pythonic_lines", "kimi_k2", "hermes", "pythonic_list"):
        for b in (b for b in BLOCKS if b.grammar == name):
            for body in bodies:
                result = GRAMMARS[name](b.opener, body, Context())
                assert result is None or isinstance(result, list)


PIECES = (
    [c[1] for c in CASES]
    + NEGATIVE
    + MALFORMED
    + [
        " and ",
        "\n",
        "[",
        "]",
        "[TOOL_",
        "[/TOOL_CALL]",
        "{tool => ",
        "<function_calls>",
        "\n<invoke",
        "<invoke",
        "</tool_call>",
        "<tool_call",
    ]
)
TEXTS = st.lists(st.sampled_from(PIECES), min_size=1, max_size=4).map("".join)
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("mod", IMPLS)
@SETTINGS
@given(data=st.data(), text=TEXTS)
def test_any_split_of_cousin_text_equals_the_whole(mod, data, text):
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=20).map(sorted))
    assert feed_in_pieces(mod, text, cuts) == feed_in_pieces(mod, text, [])


@pytest.mark.skipif(IMPLS[0].id != "c", reason="the Cython extension is disabled")
@SETTINGS
@given(data=st.data(), text=TEXTS, max_block=st.sampled_from([8, 40, 1 << 20]))
def test_twin_agrees_on_cousin_text(data, text, max_block):
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=20).map(sorted))
    c_impl = IMPLS[0].values[0]
    assert feed_in_pieces(c_impl, text, cuts, max_block=max_block) == feed_in_pieces(
        _scan_py, text, cuts, max_block=max_block
    )
    assert c_impl.hold_from(text) == _scan_py.hold_from(text)
