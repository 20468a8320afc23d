"""JSON-style body grammars: calls as JSON, or as JSON after a name; Gemma's call notation."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from textcalls.dialects.context import Context
from textcalls.dialects.jsonlike import (
    apertus,
    bare_json_message,
    function_gemma,
    function_tag,
    gemma4,
    json_calls,
    json_lines_or_array,
    kimi_k2,
    mistral,
    wrapped_call,
)
from textcalls.toolcall import ToolCall

CTX = Context()
WEATHER_CTX = Context(
    [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                },
            },
        }
    ]
)
GRAMMARS = [
    json_calls,
    json_lines_or_array,
    wrapped_call,
    function_tag,
    kimi_k2,
    mistral,
    apertus,
    gemma4,
    function_gemma,
]
Q = '<|"|>'  # Gemma 4's string delimiter
# the grammars keep plain JSON arguments as written (_scan.impl.KERNELS.plain_object): run each test on both
pytestmark = pytest.mark.usefixtures("impl")


def pairs(calls):
    """Calls as ``(name, arguments)``; ``None`` stays ``None``."""
    if calls is None:
        return None
    assert all(isinstance(call, ToolCall) for call in calls)
    return [(call.name, json.loads(call.arguments)) for call in calls]


# --- json_calls -------------------------------------------------------------------------------


def test_json_calls_single_object():
    body = '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}'
    assert pairs(json_calls("<|tool_call|>", body, CTX)) == [("get_weather", {"city": "Paris", "days": 3})]


def test_json_calls_granite_array():
    body = '[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "arguments": {}}]'
    assert pairs(json_calls("<|tool_call|>", body, CTX)) == [("get_weather", {"city": "Paris"}), ("get_time", {})]


def test_json_calls_llama3_parameters_and_semicolons():
    body = '{"name": "a", "parameters": {"x": 1}}; {"name": "b", "parameters": {"y": [true, null]}}'
    assert pairs(json_calls("<|python_tag|>", body, CTX)) == [("a", {"x": 1}), ("b", {"y": [True, None]})]


def test_json_calls_command_r_tool_name():
    body = '[{"tool_call_id": "0", "tool_name": "search", "parameters": {"query": "q"}}]'
    assert pairs(json_calls("<|START_ACTION|>", body, CTX)) == [("search", {"query": "q"})]


def test_json_calls_string_encoded_arguments_and_fence():
    body = '```json\n{"name": "f", "arguments": "{\\"a\\": 1}"}\n```'
    assert pairs(json_calls("<tool_call>", body, CTX)) == [("f", {"a": 1})]


def test_json_calls_relaxed_repairs():
    assert pairs(json_calls("<TOOLCALL>", "[{name: \"f\", 'arguments': {a: 1,},},]", CTX)) == [("f", {"a": 1})]


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("\ud83d\\ude00", "\U0001f600"),  # one half raw, one escaped: written and read back, they join
        ("\\ud83d\ude00", "\U0001f600"),
        ("\\ud83d\\ude00", "\U0001f600"),  # both escaped: json joins them itself
        ("\ud83d\ude00", "\U0001f600"),  # both raw
        ("\\ud83d", "\ufffd"),  # a lone half: U+FFFD (strict parsers refuse it: issue 28)
        ("\\\\ud83d", "\\ud83d"),  # an escaped backslash, then text: no surrogate
    ],
)
def test_json_calls_surrogate_halves_join_as_json_would_join_them(written, read):
    body = '[{"name": "f", "arguments": {"s": "' + written + '"}}, {"name": "g", "arguments": {}}]'
    assert pairs(json_calls("<|tool_call|>", body, CTX)) == [("f", {"s": read}), ("g", {})]


def test_json_calls_non_ascii():
    body = '[{"name": "天気", "arguments": {"city": "Zürich", "note": "\\u65e5\\u672c"}}]'
    assert pairs(json_calls("<TOOLCALL>", body, CTX)) == [("天気", {"city": "Zürich", "note": "日本"})]


@pytest.mark.parametrize(
    "body",
    [
        '[{"name": "f", "arguments": {}}, {"arguments": {}}]',  # one element without a name
        '[{"name": "f", "arguments": {}}, 3]',
        '{"name": "f", "arguments": [1]}',
        '{"name": "f", "arguments": {"a": NaN}}',
        '{"name": "f", "arguments": {',  # truncated
        '{"name": "f"} garbage',
        "[]",
        "",
        "  \n ",
    ],
)
def test_json_calls_malformed(body):
    assert json_calls("<|tool_call|>", body, CTX) == []


@pytest.mark.parametrize("body", ["import math\nprint(math.pi)", "brave_search.call(query='x')", "hello"])
def test_json_calls_not_json_is_text(body):
    assert json_calls("<|python_tag|>", body, CTX) is None


# --- json_lines_or_array ------------------------------------------------------------------------


def test_json_lines_minimax():
    body = '\n{"name": "a", "arguments": {"x": 1}}\n{"name": "b", "arguments": {"y": "ü"}}\n'
    assert pairs(json_lines_or_array("<tool_calls>", body, CTX)) == [("a", {"x": 1}), ("b", {"y": "ü"})]


def test_json_lines_array_jamba_hunyuan():
    body = '[{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"q": "检索"}}]'
    assert pairs(json_lines_or_array("<tool_calls>", body, CTX)) == [("a", {}), ("b", {"q": "检索"})]


def test_json_lines_single_pretty_printed_object():
    body = '{\n  "name": "a",\n  "arguments": {"x": 1}\n}'
    assert pairs(json_lines_or_array("<tool_calls>", body, CTX)) == [("a", {"x": 1})]


@pytest.mark.parametrize(
    "body",
    [
        "",
        "Use these tags to wrap the calls.",
        '{"arguments": {"x": 1}}',  # no name
        '[{"name": "a", "arguments": {}}, {"type": "x"}]',
        '{"name": "a", "arguments": {}}\nand some prose',
        "[1, 2]",
        '"a string"',
    ],
)
def test_json_lines_not_calls_is_text(body):
    assert json_lines_or_array("<tool_calls>", body, CTX) is None


@pytest.mark.parametrize(
    "body",
    [
        '{"name": "a", "arguments": {}}\n{"name": "b", "arguments": 5}',
        '[{"name": "a", "arguments": "not json"}]',
        '{"name": "", "arguments": {}}',
    ],
)
def test_json_lines_malformed_calls(body):
    assert json_lines_or_array("<tool_calls>", body, CTX) == []


# --- wrapped_call -----------------------------------------------------------------------------


@pytest.mark.parametrize("opener", ["<tools>", "<tool>", "<response>", "<json>", "<JSON>", "<xml>", "<function_call>"])
def test_wrapped_call(opener):
    body = '\n{"name": "get_weather", "arguments": {"city": "Zürich"}}\n'
    assert pairs(wrapped_call(opener, body, CTX)) == [("get_weather", {"city": "Zürich"})]


def test_wrapped_call_array_fence_and_inner_json():
    body = (
        '<json>```json\n[{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"n": 2}, "id": "x"}]\n```</json>'
    )
    assert pairs(wrapped_call("<xml>", body, CTX)) == [("a", {}), ("b", {"n": 2})]


@pytest.mark.parametrize(
    "body",
    [
        "the list of tools is below",
        '[{"name": "get_weather", "description": "Weather", "parameters": {"type": "object"}}]',  # a tool listing
        '{"type": "function", "function": {"name": "get_weather"}}',
        '{"name": "get_weather", "parameters": {"city": "x"}}',
        '{"name": "get_weather"}',
        "[]",
        '{"name": "get_weather", "arguments": {}',
    ],
)
def test_wrapped_call_other_text_is_kept(body):
    assert wrapped_call("<tools>", body, CTX) is None


def test_wrapped_call_unknown_tool_is_text():
    body = '{"name": "launch", "arguments": {}}'
    assert wrapped_call("<response>", body, WEATHER_CTX) is None
    assert pairs(wrapped_call("<response>", '{"name": "get_weather", "arguments": {}}', WEATHER_CTX)) == [
        ("get_weather", {})
    ]


def test_wrapped_call_malformed_arguments():
    assert wrapped_call("<function_call>", '{"name": "f", "arguments": [1, 2]}', CTX) == []


# --- function_tag -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "opener",
    [
        "<function=get_weather>",
        '<function name="get_weather">',
        "<function name='get_weather'>",
        '<function="get_weather">',
    ],
)
def test_function_tag_openers(opener):
    assert pairs(function_tag(opener, '{"city": "Paris", "days": 2}', CTX)) == [
        ("get_weather", {"city": "Paris", "days": 2})
    ]


def test_function_tag_empty_body_and_relaxed_and_non_ascii():
    assert pairs(function_tag("<function=now>", "  ", CTX)) == [("now", {})]
    assert pairs(function_tag("<function=f>", '{city: "Zürich",}', CTX)) == [("f", {"city": "Zürich"})]
    assert function_tag("<function=f>", "{city: 'Zürich'}", CTX) == []  # single-quoted values are not repaired


@pytest.mark.parametrize("body", ["[1]", '"x"', "print(1)", '{"a": ', "<parameter=a>1</parameter>"])
def test_function_tag_not_an_object(body):
    assert function_tag("<function=f>", body, CTX) == []


@pytest.mark.parametrize("opener", ["<function>", "<function name=get_weather>", "<function=>", "<fn=a>"])
def test_function_tag_opener_without_name(opener):
    assert function_tag(opener, "{}", CTX) is None


# --- kimi_k2 --------------------------------------------------------------------------------------


def test_kimi_k2_call_id_is_kept():
    body = 'functions.get_weather:0<|tool_call_argument_begin|>{"city": "北京"}'
    (call,) = kimi_k2("<|tool_call_begin|>", body, CTX)
    assert (call.name, json.loads(call.arguments), call.id) == (
        "get_weather",
        {"city": "北京"},
        "functions.get_weather:0",
    )


def test_kimi_k2_whitespace_and_no_prefix():
    body = " search:12 \n<|tool_call_argument_begin|> {} "
    (call,) = kimi_k2("<|tool_call_begin|>", body, CTX)
    assert (call.name, json.loads(call.arguments), call.id) == ("search", {}, "search:12")


def test_kimi_k2_dotted_name_and_empty_arguments():
    (call,) = kimi_k2("<|tool_call_begin|>", "functions.fs.read:3<|tool_call_argument_begin|>", CTX)
    assert (call.name, json.loads(call.arguments), call.id) == ("fs.read", {}, "functions.fs.read:3")


@pytest.mark.parametrize(
    "body",
    [
        'functions.get_weather<|tool_call_argument_begin|>{"a": 1}',  # no index
        'functions.get_weather:x<|tool_call_argument_begin|>{"a": 1}',
        'functions.get_weather:0{"a": 1}',  # no argument marker
        'get weather:0<|tool_call_argument_begin|>{"a": 1}',
        "functions.:0<|tool_call_argument_begin|>{}",
        "functions.f:0<|tool_call_argument_begin|>[1]",
        'functions.f:0<|tool_call_argument_begin|>{"a": ',
    ],
)
def test_kimi_k2_malformed(body):
    assert kimi_k2("<|tool_call_begin|>", body, CTX) == []


# --- mistral ------------------------------------------------------------------------------------


def test_mistral_v7_array_with_ids():
    body = ' [{"name": "a", "arguments": {"x": 1}, "id": "abc123XYZ"}, {"name": "b", "arguments": {}}]'
    calls = mistral("[TOOL_CALLS]", body, CTX)
    assert pairs(calls) == [("a", {"x": 1}), ("b", {})]
    assert calls[0].id == "abc123XYZ"
    assert calls[1].id.startswith("call_")


def test_mistral_v11_with_call_id():
    (call,) = mistral("[TOOL_CALLS]", 'get_weather[CALL_ID]q1w2e3r4t[ARGS]{"city": "Zürich"}', CTX)
    assert (call.name, json.loads(call.arguments), call.id) == ("get_weather", {"city": "Zürich"}, "q1w2e3r4t")


def test_mistral_v13_args_only():
    (call,) = mistral("[TOOL_CALLS]", 'get_weather[ARGS]{"city": "Paris", "days": 1}', CTX)
    assert (call.name, json.loads(call.arguments)) == ("get_weather", {"city": "Paris", "days": 1})
    assert call.id.startswith("call_")


def test_mistral_v11_control_tokens_skipped():
    assert pairs(mistral("[TOOL_CALLS]", 'add{"a": 3.5, "b": 4}', CTX)) == [("add", {"a": 3.5, "b": 4})]


@pytest.mark.parametrize(
    "body",
    [
        "",
        "I will call a tool now.",
        "get_weather[ARGS]",
        "get_weather[ARGS][1]",
        'get_weather[CALL_ID][ARGS]{"a": 1}',
        '[{"name": "a", "arguments": {}}, {"arguments": {}}]',
        "[ARGS]{}",
        '{"name": "a", "arguments": {',
    ],
)
def test_mistral_malformed(body):
    assert mistral("[TOOL_CALLS]", body, CTX) == []


# --- apertus ------------------------------------------------------------------------------------


def test_apertus_calls():
    body = '[{"get_weather": {"city": "Genève"}}, {"get_time": {}}]'
    assert pairs(apertus("<|tools_prefix|>", body, CTX)) == [("get_weather", {"city": "Genève"}), ("get_time", {})]


def test_apertus_single_object_and_null_arguments():
    assert pairs(apertus("<|tools_prefix|>", '{"now": null}', CTX)) == [("now", {})]


@pytest.mark.parametrize(
    "body",
    [
        '[{"name": "f", "arguments": {}}]',  # two keys: not the short form
        '[{"f": [1]}]',
        '[{"f": {}}, "g"]',
        "[{}]",
        '[{"f": {}}',
        "",
        '[{"": {}}]',
    ],
)
def test_apertus_malformed(body):
    assert apertus("<|tools_prefix|>", body, CTX) == []


# --- gemma4 / function_gemma ---------------------------------------------------------------------


def test_gemma4_typed_values():
    body = f"call:get_weather{{location:{Q}Tokyo, JP{Q},days:3,scale:-1.5e2,metric:true,extra:null}}"
    assert pairs(gemma4("<|tool_call>", body, CTX)) == [
        ("get_weather", {"location": "Tokyo, JP", "days": 3, "scale": -150.0, "metric": True, "extra": None})
    ]


def test_gemma4_strings_are_verbatim_and_stay_strings():
    body = f'call:f{{path:{Q}C:\\new "dir"{{}}[]{Q},n:{Q}42{Q},s:"json \\"quoted\\""}}'
    assert pairs(gemma4("<|tool_call>", body, WEATHER_CTX)) == [
        ("f", {"path": 'C:\\new "dir"{}[]', "n": "42", "s": 'json "quoted"'})
    ]


def test_gemma4_nested_and_non_ascii():
    body = (
        f"call:plan{{trip:{{from:{Q}Zürich{Q},stops:[{Q}東京{Q},{{name:{Q}Kyoto{Q},nights:2}}],legs:[]}},empty:{{}}}}"
    )
    assert pairs(gemma4("<|tool_call>", body, CTX)) == [
        (
            "plan",
            {"trip": {"from": "Zürich", "stops": ["東京", {"name": "Kyoto", "nights": 2}], "legs": []}, "empty": {}},
        )
    ]


def test_gemma4_several_calls_and_whitespace():
    body = " call:a{}\ncall:b{ x : 1 , y : [ 1 , 2 ] , } "
    assert pairs(gemma4("<|tool_call>", body, CTX)) == [("a", {}), ("b", {"x": 1, "y": [1, 2]})]


@pytest.mark.parametrize(
    "body",
    [
        "call:f{unit:celsius}",  # a bare word: no quotes are guessed
        f"call:f{{a:{Q}open}}",  # unterminated string
        f"call:f{{a:{Q}x{Q}",  # missing brace
        "call:f{a:1}}",
        "call:f{a:1 b:2}",
        "call:f{a}",
        "call:{a:1}",
        "f{a:1}",
        "call:f{a:1} trailing",
        "call:f{a:01}",
        "call:f{a:1e999}",
        "call:f{a:[1,}",
        "",
    ],
)
def test_gemma4_malformed(body):
    assert gemma4("<|tool_call>", body, CTX) == []


def test_function_gemma():
    body = "call:set_alarm{time:<escape>07:30<escape>,days:[<escape>月<escape>,<escape>火<escape>],repeat:3,loud:false}"
    assert pairs(function_gemma("<start_function_call>", body, CTX)) == [
        ("set_alarm", {"time": "07:30", "days": ["月", "火"], "repeat": 3, "loud": False})
    ]


def test_function_gemma_multiple_and_malformed():
    assert pairs(function_gemma("<start_function_call>", "call:a{}call:b{n:1}", CTX)) == [("a", {}), ("b", {"n": 1})]
    assert function_gemma("<start_function_call>", "call:a{k:<escape>v}", CTX) == []
    assert (
        function_gemma("<start_function_call>", f"call:a{{k:{Q}v{Q}}}", CTX) == []
    )  # Gemma 4's delimiter is not FunctionGemma's


# --- bare_json_message --------------------------------------------------------------------------


def test_bare_json_message():
    assert pairs(bare_json_message('  {"name": "get_weather", "parameters": {"city": "Zürich"}}\n', WEATHER_CTX)) == [
        ("get_weather", {"city": "Zürich"})
    ]
    assert pairs(bare_json_message('{"name": "f", "arguments": {}}', CTX)) == [("f", {})]


@pytest.mark.parametrize(
    "text",
    [
        'Sure: {"name": "get_weather", "arguments": {}}',
        '{"name": "get_weather", "arguments": {}} done',
        '{"name": "Ada", "age": 36}',
        '{"name": "get_weather", "arguments": {}, "extra": 1}',
        '{"name": "get_weather", "arguments": [1]}',
        '{"name": "launch", "arguments": {}}',  # not an offered tool
        '[{"name": "get_weather", "arguments": {}}]',
        "",
    ],
)
def test_bare_json_message_other_text(text):
    assert bare_json_message(text, WEATHER_CTX) is None


# --- properties ----------------------------------------------------------------------------------

FRAGMENTS = [
    "call:", "f", "{", "}", "[", "]", ",", ":", ";", Q, "<escape>", '"', "'", "\\", " ", "\n", "-", "1", "0.5",
    "1e999", "NaN", "true", "null", "name", '"name"', '"arguments"', '"parameters"', "tool_name",
    "functions.f:0", "<|tool_call_argument_begin|>", "[ARGS]", "[CALL_ID]", "<json>", "</json>", "```json\n", "```",
    "<|", "|>", "ü", "日本",
]  # fmt: skip
markup_text = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=3), max_size=40).map("".join)
OPENERS = ["<tool_call>", "<function=f>", '<function name="f">', "<|tool_call_begin|>", "[TOOL_CALLS]", "<tools>", ""]


def check_result(result):
    assert result is None or isinstance(result, list)
    for call in result or []:
        assert isinstance(call, ToolCall) and call.name.strip() == call.name and call.name
        assert isinstance(json.loads(call.arguments), dict)


@settings(max_examples=300)
@given(body=st.text() | markup_text, opener=st.sampled_from(OPENERS))
def test_no_grammar_raises(body, opener):
    for grammar in GRAMMARS:
        check_result(grammar(opener, body, CTX))
        check_result(grammar(opener, body, WEATHER_CTX))
    check_result(bare_json_message(body, CTX))


@pytest.mark.parametrize(
    "body",
    [
        "[" * (1 << 20),
        "{" * (1 << 20),
        "call:f{a:" + "[" * (1 << 20),
        "call:f{" + "a:1," * (1 << 18) + "}",
        '{"name": "f", "arguments": {"a": "' + "x" * (1 << 20) + '"}}',
        "functions.f:0" * (1 << 16) + "<|tool_call_argument_begin|>{}",
        "x" * (1 << 20) + "[ARGS]{}",
        "\n".join(['{"name": "f", "arguments": {}}'] * (1 << 15)),
        "9" * 5000,
    ],
    ids=[
        "brackets",
        "braces",
        "gemma-nesting",
        "gemma-long",
        "long-string",
        "kimi-ids",
        "mistral-name",
        "lines",
        "digits",
    ],
)
@pytest.mark.slow
def test_big_and_deep_bodies(body):
    for grammar in GRAMMARS:
        check_result(grammar("<x>", body, CTX))


def test_a_gemma_body_of_too_many_nodes_is_malformed_but_long_strings_are_not(impl, tc):
    from textcalls.dialects.jsonlike import NOTATION_NODES_MAX

    def gemma(members):
        return tc.parse("<|tool_call>call:f{" + members + "}<tool_call|>")

    # "call:f{" is 2 nodes, then each "aK:1" 1 and each "," 1: at the cap a call, one more malformed
    n = (NOTATION_NODES_MAX - 1) // 2
    at_cap = ",".join(f"a{k}:1" for k in range(n))
    assert [c.name for c in gemma(at_cap).calls] == ["f"]
    parsed = gemma(at_cap + ",b:2")
    assert (parsed.calls, parsed.removed) == ([], 1)
    code = "x = f(a, [b], {c: d})\n" * 2000  # thousands of , : { [ inside a quoted string: no nodes
    (call,) = gemma('content:<|"|>' + code + '<|"|>').calls
    assert json.loads(call.arguments) == {"content": code}


@settings(max_examples=500, deadline=None)
@given(
    quote=st.sampled_from(['<|"|>', "<escape>"]),
    parts=st.lists(
        st.sampled_from(["Q", ",", ":", "{", "[", "a", " ", "<", "|", '"', ">", "<|", "escape>"]), max_size=30
    ),
    cap=st.integers(0, 6),
)
def test_notation_nodes_are_counted_outside_strings_paired_from_the_start(quote, parts, cap):
    # issue 31: counted over the text outside the strings only (str.split), as the strings' regex removal counted them
    import re

    from textcalls.dialects.jsonlike import too_many_nodes

    text = "".join(quote if p == "Q" else p for p in parts)
    outside = re.sub(re.escape(quote) + ".*?" + re.escape(quote), "", text, flags=re.S)
    assert too_many_nodes(text, quote, ",:{[", cap) == (sum(map(outside.count, ",:{[")) > cap)
