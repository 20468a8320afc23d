"""Text that describes a call's format is no call (issue 27, item 4): markup in an inline code span, and a call
whose name or values are a description's placeholders, stay text, exactly as written; both implementations,
whole and in any split. The real texts these rules come from are in ``field/negative.jsonl``."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from textcalls._calls import placeholder
from textcalls.toolcall import ToolCall

from ..streams import feed_in_pieces

HERMES = '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>'
WEATHER = [{"type": "function", "function": {"name": "get_weather"}}]


@pytest.mark.parametrize(
    "text",
    [
        f"GLM writes `{HERMES}` in its content.",
        f"Use ``{HERMES}`` as the shape.",
        f"- `<think>` then `{HERMES}`",
        "Qwen: `<tool_call><function=get_weather><parameter=city>Oslo</parameter></function>` (XML).",
        "The reasoning is in `<think>…</think>`, and then the answer.",
    ],
)
def test_markup_in_an_inline_code_span_is_text(impl, tc, text):
    for tools in (None, WEATHER):
        p = tc.parse(text, tools=tools)
        assert (p.calls, p.content, p.reasoning) == ([], text, "")


def test_a_code_span_ends_at_its_closer_or_its_line(impl, tc):
    p = tc.parse(f"`x` {HERMES}")  # closed before the markup: a call
    assert [c.name for c in p.calls] == ["get_weather"] and p.content == "`x`"
    p = tc.parse(f"an unclosed ` tick\n{HERMES}")  # a span does not pass a line's end
    assert [c.name for c in p.calls] == ["get_weather"]
    p = tc.parse(f"x ``` {HERMES}")  # three or more mid-line: no span (nor a fence)
    assert [c.name for c in p.calls] == ["get_weather"]
    p = tc.parse(f"`{HERMES}`", code_fences=False)  # code_fences=False: markup in code is read too
    assert [c.name for c in p.calls] == ["get_weather"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    parts=st.lists(st.sampled_from(["`", "``", "```", "\n", " x ", HERMES, "<think>", "</think>", "y"]), max_size=8),
    data=st.data(),
)
def test_any_split_of_code_spans_gives_what_parse_gives(impl, tc, parts, data):
    text = "".join(parts)
    p = tc.parse(text)
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=6)))
    content, reasoning, calls, removed = feed_in_pieces(impl, text, cuts)
    assert (content.strip(), reasoning.strip(), calls, removed) == (
        p.content,
        p.reasoning,
        [(c.name, c.arguments) for c in p.calls],
        p.removed,
    )


@pytest.mark.parametrize(
    ("name", "arguments", "is_placeholder"),
    [
        ("function_name", {"key": "value"}, True),
        ("get_weather", {"key": "value"}, True),  # every string a placeholder, under a placeholder key
        ("get_weather", {"city": "value"}, False),  # "value" under a real key: a value
        ("TaskCreate", {"subject": "...", "description": "…"}, True),
        ("func_name", {"key": "value", "num": 42}, True),  # numbers may stand beside them
        ("function_name", {}, True),
        ("' + tool['function']['name'] + '", {}, True),  # a template's expression is no name
        ("…", {}, True),
        ("get_weather", {"city": "Oslo"}, False),
        ("get_weather", {"city": "...", "days": "3"}, False),  # one real value: a call
        ("get_weather", {}, False),
        ("function_name", {"city": "Oslo"}, False),
        ("set", {"key": "value", "nested": {"a": 1}}, False),  # structure beyond scalars
        ("Web Search", {"query": "x"}, False),  # a blank may be in a name
        ('g<｜tool▁sep｜>{"a":1}', {}, True),  # a quote: no function's name
        ("write_file", {"content": "value" * 100}, False),
        ("write_file", {"content": "...", "path": "a" * 300}, False),  # long arguments are never placeholders
    ],
)
def test_what_is_a_placeholder(name, arguments, is_placeholder):
    assert placeholder(ToolCall(name, json.dumps(arguments, ensure_ascii=False))) is is_placeholder


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"name": "function_name", "arguments": {"key": "value"}}</tool_call>',
        "<function=name>\n<parameter=key>\nvalue\n</parameter>\n</function>",
        '<minimax:tool_call><invoke name="func"><parameter name="arg">value</parameter></invoke></minimax:tool_call>',
        "<tool_call>\n<function=write_file>\n<parameter=content>\n...\n</parameter>\n</function>\n</tool_call>",
        '[TOOL_CALLS]get_weather[ARGS]{"city": "..."}',
    ],
)
def test_a_format_described_with_placeholders_stays_text(impl, tc, text):
    names = ["function_name", "name", "func", "get_weather"]
    for tools in (None, [{"type": "function", "function": {"name": n}} for n in names]):
        p = tc.parse(text, tools=tools)
        assert (p.calls, p.content, p.malformed) == ([], text, 0)
