"""Marker text inside an argument value is data (the scanning rules, "Values"; ``Block.values``).

A block's body may hold value tags: the XML dialects' parameter values (Qwen3-Coder, Seed-OSS, GLM's
``<arg_value>``, MiniMax-M2, Step-3, DSML and its V4.1 spelling, Kimi K3's arguments) and the quoted strings
of Gemma 4 (``<|"|>``) and FunctionGemma (``<escape>``). From a value's opening tag to its closing tag the
block's closer and every opener are the value's text. A value that never closes (another value of its kind
opens first, or the text or the block's cap ends) protects nothing: the first closer or opener inside it
ends the block as it would without the rule. A JSON body keeps its strings so too: at the end of the text
(a closer the server stripped), a closer inside a string that closed is data. A block opened inside a
reasoning span ends at the span's closer (outside its strings and values): it is prose of the span.

Every expected value below was read off the text by these rules, not taken from a run.
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ..streams import feed_in_pieces


def _tool(name, *keys):
    properties = {k: {"type": "string"} for k in keys}
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": properties}}}


TOOLS = [_tool("echo", "text"), _tool("write_file", "path", "content"), _tool("f", "a", "b"), _tool("g")]
TOOLS += [_tool("get_weather", "city")]

# (id, text, calls as (name, arguments), content as parse gives it)
DATA = [
    (
        "qwen3-coder",
        "<tool_call>\n<function=write_file>\n<parameter=content>\nClose with </function> then </tool_call>; "
        "open with <tool_call>.\n</parameter>\n</function>\n</tool_call>",
        [("write_file", {"content": "Close with </function> then </tool_call>; open with <tool_call>."})],
        "",
    ),
    (
        "qwen3-coder-no-tool-call",
        "<function=write_file>\n<parameter=content>\nsee </function> here\n</parameter>\n</function>",
        [("write_file", {"content": "see </function> here"})],
        "",
    ),
    (
        "glm47",
        "<tool_call>echo<arg_key>text</arg_key><arg_value>Wrap in <tool_call> and </tool_call>.</arg_value>"
        "</tool_call>",
        [("echo", {"text": "Wrap in <tool_call> and </tool_call>."})],
        "",
    ),
    (
        "dsml",
        '<｜DSML｜function_calls>\n<｜DSML｜invoke name="echo">\n<｜DSML｜parameter name="text" string="true">'
        "End with </｜DSML｜function_calls> here.</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
        [("echo", {"text": "End with </｜DSML｜function_calls> here."})],
        "",
    ),
    (
        "dsml-v41",
        '<｜DSML｜ calls>\n<｜DSML｜ invoke name="echo">\n<｜DSML｜ parameter name="text" string="true">'
        "A </｜DSML｜ calls> B</｜DSML｜ parameter>\n</｜DSML｜ invoke>\n</｜DSML｜ calls>",
        [("echo", {"text": "A </｜DSML｜ calls> B"})],
        "",
    ),
    (
        "minimax-m2",
        '<minimax:tool_call>\n<invoke name="echo">\n<parameter name="text">a </minimax:tool_call> b</parameter>\n'
        "</invoke>\n</minimax:tool_call>",
        [("echo", {"text": "a </minimax:tool_call> b"})],
        "",
    ),
    (
        "seed-oss",
        "<seed:tool_call>\n<function=echo>\n<parameter=text>\nx </seed:tool_call> y\n</parameter>\n</function>\n"
        "</seed:tool_call>",
        [("echo", {"text": "x </seed:tool_call> y"})],
        "",
    ),
    (
        "gemma4",
        '<|tool_call>call:echo{text:<|"|>x <tool_call|> and <|tool_call>call:g{}<tool_call|> y<|"|>}<tool_call|>',
        [("echo", {"text": "x <tool_call|> and <|tool_call>call:g{}<tool_call|> y"})],
        "",
    ),
    (
        "function-gemma",
        "<start_function_call>call:echo{text:<escape>x <end_function_call> y<escape>}<end_function_call>",
        [("echo", {"text": "x <end_function_call> y"})],
        "",
    ),
    (
        "kimi-k3",
        '<|open|>tools<|sep|><|open|>call tool="echo" index="1"<|sep|><|open|>argument key="text" type="string"'
        "<|sep|>x <|close|>tools<|sep|> y<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>",
        [("echo", {"text": "x <|close|>tools<|sep|> y"})],
        "",
    ),
    # a value that never closes protects nothing: the first closer inside it ends the block (GLM's missing
    # last </arg_value>, a shape the field writes)
    (
        "unclosed-last-value",
        "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Berlin</tool_call> Done.",
        [("get_weather", {"city": "Berlin"})],
        "Done.",
    ),
    # ... nor does one that another value's tag follows before its closing tag: the block ends at the first
    # closer inside it, the rest is text
    (
        "another-value-opens",
        "<tool_call>\n<function=f>\n<parameter=a>\nx\n</tool_call>\n<parameter=b>\ny\n</parameter>\n</function>\n"
        "</tool_call>",
        [("f", {"a": "x"})],
        "<parameter=b>\ny\n</parameter>\n</function>\n</tool_call>",
    ),
    # ... and when the first thing inside it is an opener, the block is text up to that opener
    (
        "opener-in-unclosed-value",
        '<tool_call>\n<function=f>\n<parameter=a>\nx <tool_call>{"name": "g", "arguments": {}}</tool_call>',
        [("g", {})],
        "<tool_call>\n<function=f>\n<parameter=a>\nx",
    ),
    # a tag whose head meets a "<" first is no value tag: the value goes on
    (
        "no-tag",
        "<tool_call>\n<function=f>\n<parameter=a>\n<parameter=</parameter>\n</function>\n</tool_call>",
        [("f", {"a": "<parameter="})],
        "",
    ),
    # a JSON body at the end of the text (its closer stripped): a closer inside a string is data
    (
        "harmony-at-end",
        '<|channel|>commentary to=functions.echo <|constrain|>json<|message|>{"text": "ends with <|call|> here"}',
        [("echo", {"text": "ends with <|call|> here"})],
        "",
    ),
    # ... but in a string that never closes, the first closer ends the block: a call object cut short,
    # malformed markup (removed, no call)
    ("unclosed-string", '<tool_call>{"name": "echo", "arguments": {"text": "a</tool_call> b', [], "b"),
]

# (id, text, reasoning, content, calls)
SPANS = [
    ("mistral", "[THINK]The tag [TOOL_CALLS] is text.[/THINK]Answer.", "The tag [TOOL_CALLS] is text.", "Answer.", []),
    (
        "think",
        '<think>Use <tool_call> tags.</think>Hi <tool_call>{"name": "g", "arguments": {}}</tool_call>',
        "Use <tool_call> tags.",
        "Hi",
        [("g", {})],
    ),
]


def _calls(parsed_calls):
    return [(c.name, json.loads(c.arguments)) for c in parsed_calls]


def _cuts(text, seed):
    rng = random.Random(seed)
    cuts, i = [], 0
    while True:
        i += rng.randint(1, 9)
        if i >= len(text):
            return cuts
        cuts.append(i)


def _splits(text):
    return [[], list(range(1, len(text))), _cuts(text, 1), _cuts(text, 2)]


@pytest.mark.parametrize(("text", "calls", "content"), [d[1:] for d in DATA], ids=[d[0] for d in DATA])
def test_a_value_keeps_the_markup_written_in_it(impl, tc, text, calls, content):
    parsed = tc.parse(text, tools=TOOLS)
    assert (_calls(parsed.calls), parsed.content) == (calls, content)


@pytest.mark.parametrize(("text", "calls", "content"), [d[1:] for d in DATA], ids=[d[0] for d in DATA])
@pytest.mark.parametrize("stream_arguments", [False, True])
def test_a_stream_reads_a_value_as_the_whole_text_does(impl, text, calls, content, stream_arguments):
    for cuts in _splits(text):
        got, _, got_calls, _ = feed_in_pieces(impl, text, cuts, tools=TOOLS, stream_arguments=stream_arguments)
        assert (got.strip(), [(n, json.loads(a)) for n, a in got_calls]) == (content, calls), cuts


@pytest.mark.parametrize(("text", "reasoning", "content", "calls"), [s[1:] for s in SPANS], ids=[s[0] for s in SPANS])
def test_a_block_in_a_reasoning_span_ends_with_the_span(impl, tc, text, reasoning, content, calls):
    parsed = tc.parse(text, tools=TOOLS)
    assert (parsed.reasoning, parsed.content, _calls(parsed.calls)) == (reasoning, content, calls)
    for cuts in _splits(text):
        got, thought, got_calls, _ = feed_in_pieces(impl, text, cuts, tools=TOOLS)
        assert (thought.strip(), got.strip(), [(n, json.loads(a)) for n, a in got_calls]) == (
            reasoning,
            content,
            calls,
        ), cuts


def test_a_value_that_never_closes_is_cut_at_the_cap(impl, tc):
    # past max_block the block is decided as without the rule: at the first closer inside the value
    text = "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Berlin</tool_call>" + "z" * 300
    parsed = tc.parse(text, tools=TOOLS, max_block=200)
    assert (_calls(parsed.calls), parsed.content) == ([("get_weather", {"city": "Berlin"})], "z" * 300)
    got, _, got_calls, _ = feed_in_pieces(impl, text, list(range(1, len(text), 7)), tools=TOOLS, max_block=200)
    assert (got.strip(), got_calls) == (parsed.content, [(c.name, c.arguments) for c in parsed.calls])


# -- any text made of these pieces, any split: a stream gives what parse gives, on both implementations ------

PIECES = [
    "<tool_call>",
    "</tool_call>",
    "\n<function=f>\n",
    "</function>",
    "<parameter=a>",
    "<parameter=b>\n",
    "</parameter>",
    "<parameter=</parameter>",
    "echo<arg_key>text</arg_key>",
    "<arg_value>",
    "</arg_value>",
    '<|tool_call>call:echo{text:<|"|>',
    '<|"|>}',
    "<tool_call|>",
    '<｜DSML｜function_calls>\n<｜DSML｜invoke name="echo">\n<｜DSML｜parameter name="text" string="true">',
    "</｜DSML｜parameter>",
    "</｜DSML｜invoke>\n</｜DSML｜function_calls>",
    '{"name": "g", "arguments": {}}',
    "<think>",
    "</think>",
    "x",
    " ",
    "\n",
    "x < 3",  # "<" in code and HTML (the extension passes those inside a value: issue 31)
    "<=",
    "<b>",
    "'<tag>'",
    "<",
    "</",
    "<|",
]


@given(st.lists(st.sampled_from(PIECES), max_size=14), st.data())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_split_reads_values_as_parse_does(impl, tc, pieces, data):
    text = "".join(pieces)
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=8)))
    cuts = [c for c in cuts if c < len(text)]
    whole = tc.parse(text, tools=TOOLS, trim_blanks=True)
    for stream_arguments in (False, True):
        got = feed_in_pieces(impl, text, cuts, tools=TOOLS, trim_blanks=True, stream_arguments=stream_arguments)
        assert got[:3] == (whole.content, whole.reasoning, [(c.name, c.arguments) for c in whole.calls])


def test_values_that_never_close_stay_linear(impl, tc):
    # every value broken by the next one, an opener inside each: each block ends where that opener is, and
    # the scan goes on from there in the same text (a copy of the rest at each would hang this: quadratic; the
    # twin, some 30 times slower, is given a quarter of the text)
    text = "<tool_call><parameter=a>x <tool_call>" * (50_000 if impl.__name__.endswith("_py") else 200_000)
    parsed = tc.parse(text)
    assert (parsed.content, parsed.calls) == (text, [])
    got, _, calls, _ = feed_in_pieces(impl, text, range(7, len(text), 7))
    assert (got, calls) == (text, [])


@given(st.lists(st.sampled_from(PIECES), max_size=14))
@settings(max_examples=300, deadline=None)
def test_the_extension_reads_values_dense_in_lt_as_the_twin_does(pieces):
    # issue 31: inside a value the extension passes a "<" whose next character begins nothing it matches
    from textcalls import _scan, _scan_py, parse

    if _scan.IMPLEMENTATION != "cython":
        pytest.skip("the extension is not built")
    from textcalls import _scan_c

    text = "".join(pieces)
    answers = []
    for scanner in (_scan_c, _scan_py):
        before = _scan.use(scanner)
        try:
            parsed = parse(text, tools=TOOLS)
        finally:
            _scan.use(before)
        answers.append(
            (parsed.content, parsed.reasoning, [(c.name, c.arguments) for c in parsed.calls], parsed.removed)
        )
    assert answers[0] == answers[1]
