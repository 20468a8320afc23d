"""call_from_block: Hermes and DeepSeek bodies become calls, malformed ones None."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from textcalls.dialects.jsonlike import call_from_block
from textcalls.markers import DEEPSEEK, DEEPSEEK_SEP, HERMES
from textcalls.toolcall import ToolCall

SEP = "<\uff5ctool\u2581sep\uff5c>"
# the grammars keep plain JSON arguments as written (_scan.impl.KERNELS.plain_object): run each test on both
pytestmark = pytest.mark.usefixtures("impl")


def test_separator_literal():
    assert DEEPSEEK_SEP == SEP


def hermes(body):
    return call_from_block(HERMES, body)


def deepseek(body):
    return call_from_block(DEEPSEEK, body)


# --- Hermes ----------------------------------------------------------------------------


def test_hermes_basic():
    call = hermes('{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}')
    assert call == ToolCall("get_weather", '{"city": "Paris", "days": 3}')
    assert call.id.startswith("call_")


def test_hermes_surrounding_whitespace():
    assert hermes('\n  {"name": "f", "arguments": {"a": 1}}\n ') == ToolCall("f", '{"a": 1}')


def test_hermes_arguments_kept_as_written_escapes_and_non_ascii_alike():
    call = hermes('{"name": "f", "arguments": {"city": "Z\\u00fcrich", "x": "日本"}}')
    assert call == ToolCall("f", '{"city": "Z\\u00fcrich", "x": "日本"}')
    assert json.loads(call.arguments) == {"city": "Zürich", "x": "日本"}


def test_hermes_arguments_as_json_text_are_written_again_non_ascii_kept():
    # a string holding the object is read and written by json.dumps(ensure_ascii=False)
    call = hermes('{"name": "f", "arguments": "{\\"city\\": \\"Z\\\\u00fcrich\\",\\"x\\":\\"日本\\"}"}')
    assert call == ToolCall("f", '{"city": "Zürich", "x": "日本"}')


@pytest.mark.parametrize("name", ["  f", "f  ", "\n f \t"])
def test_name_is_trimmed(name):
    assert hermes(json.dumps({"name": name, "arguments": {}})) == ToolCall("f", "{}")


@pytest.mark.parametrize(
    "body",
    [
        '{"arguments": {"a": 1}}',  # no name
        '{"name": "", "arguments": {}}',
        '{"name": "  \\n", "arguments": {}}',
        '{"name": null, "arguments": {}}',
        '{"name": 5, "arguments": {}}',
        '{"name": ["f"], "arguments": {}}',
        '{"function": "f", "arguments": {}}',
    ],
)
def test_nameless_is_none(body):
    assert hermes(body) is None


@pytest.mark.parametrize(
    "body", ["", "   ", "not json", "[1, 2]", '"f"', "42", "null", '{"name": "f"', "{tags:[hi,bye]}"]
)
def test_not_an_object_is_none(body):
    assert hermes(body) is None


@pytest.mark.parametrize(
    ("body", "arguments"),
    [
        ('{"name": "f", "parameters": {"a": 1}}', '{"a": 1}'),
        ('{"name": "f", "args": {"a": 1}}', '{"a": 1}'),
        ('{"name": "f", "input": {"a": 1}}', '{"a": 1}'),
        # priority: arguments > parameters > args > input
        (
            '{"name": "f", "input": {"i": 1}, "args": {"g": 1}, "parameters": {"p": 1}, "arguments": {"a": 1}}',
            '{"a": 1}',
        ),
        ('{"name": "f", "input": {"i": 1}, "args": {"g": 1}, "parameters": {"p": 1}}', '{"p": 1}'),
        ('{"name": "f", "input": {"i": 1}, "args": {"g": 1}}', '{"g": 1}'),
        # the first key present wins even when it is empty
        ('{"name": "f", "arguments": null, "parameters": {"p": 1}}', "{}"),
    ],
)
def test_argument_keys(body, arguments):
    assert hermes(body) == ToolCall("f", arguments)


@pytest.mark.parametrize(
    "body",
    [
        '{"name": "f"}',
        '{"name": "f", "arguments": null}',
        '{"name": "f", "arguments": ""}',
        '{"name": "f", "arguments": {}}',
        '{"name": "f", "parameters": ""}',
    ],
)
def test_empty_arguments(body):
    assert hermes(body) == ToolCall("f", "{}")


@pytest.mark.parametrize(
    ("args", "arguments"),
    [
        ('"{\\"a\\": 1}"', '{"a": 1}'),  # Granite writes the arguments as JSON text
        ('"  {\\"a\\": [1, 2]}  "', '{"a": [1, 2]}'),
        ('"{a: 1,}"', '{"a": 1}'),  # relaxed inside the string too
        ('"{}"', "{}"),
    ],
)
def test_string_arguments_are_decoded(args, arguments):
    assert hermes('{"name": "f", "arguments": ' + args + "}") == ToolCall("f", arguments)


@pytest.mark.parametrize(
    "args",
    ["[1, 2]", "1", "0", "true", "false", '"hello"', '"[1]"', '"1"', '"null"', '" "', '"{a: b}"'],
)
def test_non_object_arguments_are_none(args):
    assert hermes('{"name": "f", "arguments": ' + args + "}") is None


@pytest.mark.parametrize(
    "body",
    [
        '{name: "f", arguments: {city: "Paris",},}',
        "{'name': \"f\", 'arguments': {'city': \"Paris\"}}",
        '{<|"|>name<|"|>: <|"|>f<|"|>, <|"|>arguments<|"|>: {<|"|>city<|"|>: <|"|>Paris<|"|>}}',
        '```json\n{"name": "f", "arguments": {"city": "Paris"}}\n```',
        '{{"name": "f", "arguments": {"city": "Paris"}}}',
    ],
)
def test_hermes_relaxed(body):
    assert hermes(body) == ToolCall("f", '{"city": "Paris"}')


def test_unknown_family():
    with pytest.raises(ValueError):
        call_from_block("mistral", '{"name": "f"}')


# --- DeepSeek V3.1: NAME<sep>{args} ----------------------------------------------------


def test_v31():
    assert deepseek("get_weather" + SEP + '{"city": "Paris"}') == ToolCall("get_weather", '{"city": "Paris"}')


def test_v31_whitespace_and_relaxed():
    body = " get_weather \n" + SEP + '\n {city: "Paris",} \n'
    assert deepseek(body) == ToolCall("get_weather", '{"city": "Paris"}')


def test_v31_object_is_the_arguments():
    assert deepseek("f" + SEP + '{"name": "g", "arguments": {"a": 1}}') == ToolCall(
        "f", '{"name": "g", "arguments": {"a": 1}}'
    )


def test_v31_splits_at_first_separator():
    assert deepseek("f" + SEP + '{"a": "x' + SEP + 'y"}') == ToolCall("f", '{"a": "x' + SEP + 'y"}')


def test_v31_fenced_arguments():
    assert deepseek("f" + SEP + '```json\n{"a": 1}\n```') == ToolCall("f", '{"a": 1}')


@pytest.mark.parametrize(
    "body",
    [
        SEP + '{"a": 1}',  # no name
        "  \n" + SEP + '{"a": 1}',
        "f" + SEP + '{"a": 1',
        "f" + SEP + "{tags:[hi,bye]}",
        "f" + SEP + '{"a": 1} {"b": 2}',
    ],
)
def test_v31_malformed(body):
    assert deepseek(body) is None


# --- DeepSeek V3: TYPE<sep>NAME\n```json {args} ``` -----------------------------------


def test_v3_fenced():
    body = "function" + SEP + 'get_weather\n```json\n{"city": "Paris"}\n```'
    assert deepseek(body) == ToolCall("get_weather", '{"city": "Paris"}')


def test_v3_bare_fence():
    assert deepseek("function" + SEP + 'f\n```\n{"a": 1}\n```') == ToolCall("f", '{"a": 1}')


def test_v3_without_fence():
    assert deepseek("function" + SEP + 'f\n{"a": 1}') == ToolCall("f", '{"a": 1}')


def test_v3_type_is_ignored():
    assert deepseek("anything" + SEP + 'f\n{"a": 1}') == ToolCall("f", '{"a": 1}')
    assert deepseek(SEP + 'f\n{"a": 1}') == ToolCall("f", '{"a": 1}')


def test_v3_name_trimmed():
    assert deepseek("function" + SEP + '  f \r\n```json\n{"a": 1}\n```') == ToolCall("f", '{"a": 1}')


@pytest.mark.parametrize("tail", ["f", "f\n", "f\n  \n", "f\n```json\n```", "f\n```\n\n```"])
def test_v3_empty_rest(tail):
    assert deepseek("function" + SEP + tail) == ToolCall("f", "{}")


def test_v3_relaxed_arguments():
    assert deepseek("function" + SEP + "f\n```json\n{city: 'Paris'}\n```") is None  # values stay strict
    body = "function" + SEP + 'f\n```json\n{city: "Paris",}\n```'
    assert deepseek(body) == ToolCall("f", '{"city": "Paris"}')


@pytest.mark.parametrize(
    "tail",
    [
        '\nf\n```json\n{"a": 1}\n```',  # the first line is the name: here empty
        "f\n```json\n[1]\n```",
        'f\n```json\n{"a": 1\n```',
        "f\nnot json",
        'f\n```json\n{"a": 1}',  # unclosed fence
    ],
)
def test_v3_malformed(tail):
    assert deepseek("function" + SEP + tail) is None


# --- DeepSeek without separator: a Hermes body -------------------------------------------


def test_deepseek_without_separator():
    assert deepseek(' {"name": " f ", "parameters": {"a": 1}} ') == ToolCall("f", '{"a": 1}')
    assert deepseek('{name: "f", arguments: "{\\"a\\": 1}"}') == ToolCall("f", '{"a": 1}')
    assert deepseek('{"arguments": {}}') is None
    assert deepseek("get_weather") is None


# --- properties ------------------------------------------------------------------------

FRAGMENTS = [
    SEP,
    '{"name": "f"',
    '"arguments":',
    "name:",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    '"',
    "'",
    '<|"|>',
    "\n",
    " ",
    "```json\n",
    "\n```",
    "f",
    "1",
    "\\",
]
bodies = st.one_of(st.text(), st.lists(st.sampled_from(FRAGMENTS)).map("".join))


@given(bodies, st.sampled_from([HERMES, DEEPSEEK]))
def test_never_raises(body, family):
    call = call_from_block(family, body)
    if call is not None:
        assert call.name and call.name == call.name.strip()
        assert isinstance(json.loads(call.arguments), dict)


def test_deep_nesting_is_none():
    deep = "[" * 100_000 + "]" * 100_000
    assert hermes('{"name": "f", "arguments": ' + deep + "}") is None
    assert deepseek("f" + SEP + '{"a": ' + deep + "}") is None
    assert hermes('{"name": "f", "arguments": "' + "{" * 100_000 + '"}') is None


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_non_json_numbers_make_the_block_malformed(value):
    # json.loads accepts these, but arguments must be JSON text: OpenAI clients reject NaN.
    assert call_from_block(HERMES, '{"name": "f", "arguments": {"x": ' + value + "}}") is None
