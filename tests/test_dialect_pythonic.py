"""Pythonic body grammars: ``[f(a='x'), g()]`` lists and Olmo 3's call-per-line bodies."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from textcalls.dialects.context import Context
from textcalls.dialects.pythonic import pythonic_lines, pythonic_list, pythonic_message
from textcalls.toolcall import ToolCall

CTX = Context()
TOOLS_CTX = Context(
    [
        {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}}},
        {"type": "function", "function": {"name": "get_time"}},
    ]
)


def pairs(calls):
    """Calls as ``(name, arguments)``; ``None`` stays ``None``."""
    if calls is None:
        return None
    assert all(isinstance(call, ToolCall) for call in calls)
    return [(call.name, json.loads(call.arguments)) for call in calls]


# --- pythonic_list ----------------------------------------------------------------------------


def test_list_of_calls_with_literals():
    body = "[get_weather(city='Paris', days=3, hourly=False, extra=None), get_time()]"
    assert pairs(pythonic_list("<|tool_call_start|>", body, CTX)) == [
        ("get_weather", {"city": "Paris", "days": 3, "hourly": False, "extra": None}),
        ("get_time", {}),
    ]


def test_nested_literals_signs_and_tuples():
    body = '[f(a=[1, (2, 3)], b={"k": {"x": -1.5}}, c=+4, d="""multi\nline""")]'
    assert pairs(pythonic_list("<|python_start|>", body, CTX)) == [
        ("f", {"a": [1, [2, 3]], "b": {"k": {"x": -1.5}}, "c": 4, "d": "multi\nline"})
    ]


def test_json_literal_names():
    assert pairs(pythonic_list("", "[f(a=true, b=false, c=null)]", CTX)) == [("f", {"a": True, "b": False, "c": None})]


def test_single_call_without_brackets_and_whitespace():
    assert pairs(pythonic_list("<|python_start|>", "\n  get_time(zone='UTC')  \n", CTX)) == [
        ("get_time", {"zone": "UTC"})
    ]


def test_dotted_name_kept_as_written():
    assert pairs(pythonic_list("", "[functions.get_weather(city='Oslo')]", CTX)) == [
        ("functions.get_weather", {"city": "Oslo"})
    ]


def test_non_ascii():
    body = "[天気(都市='東京', note='Zürich \\u00e9')]"
    assert pairs(pythonic_list("", body, CTX)) == [("天気", {"都市": "東京", "note": "Zürich é"})]


@pytest.mark.parametrize(
    "body",
    [
        "[f('positional')]",
        "[f(a=x)]",  # a name that is not a literal
        "[f(a=1 + 2)]",
        "[f(**kw)]",
        "[f(a=1, a=2)]",
        "[f(a={1: 'x'})]",
        "[f(a={**d})]",
        "[f(a=[*xs])]",
        "[f(a={1, 2})]",
        "[f(a=b'bytes')]",
        "[f(a=1j)]",
        "[f(a=...)]",
        "[f(a=-True)]",
        "[f(a=1e999)]",
        "[f(a=f(b=1))]",
        "[f()(a=1)]",
        "[f(a=1), 3]",
        "[f(a=1)",
        "[]",
        "[1, 2, 3]",
        "[f(a=1)] and more",
        "[f(a=" + "9" * 5000 + ")]",
        "[f(a='\x00')]",
    ],
)
def test_malformed(body):
    assert pythonic_list("<|tool_call_start|>", body, CTX) == []


@pytest.mark.parametrize("body", ["", "plain prose", "import os\nos.getcwd()", "<invoke name='f'/>", "42"])
def test_not_call_shaped_is_text(body):
    assert pythonic_list("<|python_start|>", body, CTX) is None


# --- pythonic_lines -----------------------------------------------------------------------------


def test_lines_olmo3():
    body = "\nget_weather(city=\"Zürich\", days=null)\nget_time(zone='UTC', dst=true)\n"
    assert pairs(pythonic_lines("<function_calls>", body, CTX)) == [
        ("get_weather", {"city": "Zürich", "days": None}),
        ("get_time", {"zone": "UTC", "dst": True}),
    ]


def test_lines_call_spanning_lines_and_indented_lines():
    body = "f(a=1,\n  b='x\\ny')\ng()"
    assert pairs(pythonic_lines("<function_calls>", body, CTX)) == [("f", {"a": 1, "b": "x\ny"}), ("g", {})]
    assert pairs(pythonic_lines("<function_calls>", "f(a=1)\n    g(b=2)", CTX)) == [("f", {"a": 1}), ("g", {"b": 2})]


def test_lines_single_list():
    assert pairs(pythonic_lines("<function_calls>", "[f(a=1), g(b='ü')]", CTX)) == [("f", {"a": 1}), ("g", {"b": "ü"})]


def test_lines_single_call():
    assert pairs(pythonic_lines("<function_calls>", "f(a=[1, 2])", CTX)) == [("f", {"a": [1, 2]})]


@pytest.mark.parametrize(
    "body",
    [
        "f(a=1)\ng(2)",
        "f(a=1)\nx = g(b=2)",
        "f(a=1)\nif x: g()",
        "f(a=1)\ng(b=",
        "f(a=1)\nprose here",
        "[f(a=1)]\n[g(b=2)]",
    ],
)
def test_lines_malformed(body):
    assert pythonic_lines("<function_calls>", body, CTX) == []


@pytest.mark.parametrize("body", ["", '<invoke name="f"><parameter name="a">1</parameter></invoke>', "Sure thing."])
def test_lines_not_call_shaped_is_text(body):
    assert pythonic_lines("<function_calls>", body, CTX) is None


# --- pythonic_message ---------------------------------------------------------------------------


def test_message():
    text = "  [get_weather(city='Paris'), get_time()]\n"
    assert pairs(pythonic_message(text, TOOLS_CTX)) == [("get_weather", {"city": "Paris"}), ("get_time", {})]
    assert pairs(pythonic_message("[anything(x=1)]", CTX)) == [("anything", {"x": 1})]


@pytest.mark.parametrize(
    "text",
    [
        "Calling: [get_weather(city='Paris')]",
        "[get_weather(city='Paris')] then more",
        "get_weather(city='Paris')",  # not a list
        "[launch(codes=1)]",  # not an offered tool
        "[get_weather('Paris')]",
        "[]",
        "[1, 2]",
        "",
    ],
)
def test_message_other_text(text):
    assert pythonic_message(text, TOOLS_CTX) is None


# --- properties ----------------------------------------------------------------------------------

FRAGMENTS = [
    "[", "]", "(", ")", "{", "}", ",", "=", ":", ".", "f", "g", "a", "functions", "'", '"', '"""', "\\", " ", "\n",
    "    ", "1", "-", "+", "1.5", "1e999", "True", "null", "None", "**", "*", "lambda", "#", ";", "ü", "\x00",
]  # fmt: skip
python_text = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=3), max_size=40).map("".join)


def check_result(result):
    assert result is None or isinstance(result, list)
    for call in result or []:
        assert isinstance(call, ToolCall) and call.name
        assert isinstance(json.loads(call.arguments), dict)


@settings(max_examples=300)
@given(body=st.text() | python_text)
def test_no_grammar_raises(body):
    check_result(pythonic_list("<|tool_call_start|>", body, CTX))
    check_result(pythonic_lines("<function_calls>", body, CTX))
    check_result(pythonic_message(body, TOOLS_CTX))


@pytest.mark.parametrize(
    "body",
    [
        "[" * (1 << 20),
        "[f(a=" + "-" * (1 << 20) + "1)]",
        "[f(a=" + "[" * 300 + "]" * 300 + ")]",
        "[" + ",".join(["f(a=1)"] * (1 << 15)) + "]",
        "\n".join(["f(a=1)"] * (1 << 15)),
        "[f(a='" + "x" * (1 << 20) + "')]",
    ],
    ids=["brackets", "signs", "nesting", "many-calls", "many-lines", "long-string"],
)
@pytest.mark.slow
def test_big_and_deep_bodies(body):
    check_result(pythonic_list("", body, CTX))
    check_result(pythonic_lines("", body, CTX))
    check_result(pythonic_message(body, CTX))


def test_python_keywords_as_argument_names():
    # Olmo 3 writes book_flight(from="SFO"): a keyword argument named like a Python keyword.
    from textcalls.dialects.pythonic import pythonic_lines, pythonic_list

    calls = pythonic_lines("", 'book_flight(from="SFO", to="NYC", class="eco")', Context())
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("book_flight", {"from": "SFO", "to": "NYC", "class": "eco"})
    ]
    calls = pythonic_list("", "[f(note='from=x', import=1)]", Context())
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("f", {"note": "from=x", "import": 1})]


def test_string_escapes_read_as_json_reads_them(impl, tc):
    """``"\\ud83d\\ude00"`` is one character in JSON; a Python literal would make it two surrogates, which no
    UTF-8 stream can carry: the arguments hold the character, the same whole, streamed or through SSE."""
    text = '[get_weather(city="\\ud83d\\ude00", alone="\\ud83d", k={"\\ud83d\\ude00": 1})]'
    (call,) = tc.parse("<|tool_call_start|>" + text + "<|tool_call_end|>").calls
    assert json.loads(call.arguments) == {"city": "\U0001f600", "alone": "\ud83d", "k": {"\U0001f600": 1}}
    assert "\U0001f600" in call.arguments


KEYWORD_TEXT = st.lists(
    st.sampled_from(
        [
            "from",
            "class",
            "if",
            "a",
            "xfrom",
            "from_",
            "=",
            "==",
            " ",
            "\t",
            "\\\n",
            "\n",
            "(",
            ")",
            ",",
            '"',
            "'",
            "1",
            "#",
            "f",
            "True",
            "é",
        ]
    ),
    max_size=12,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(text=KEYWORD_TEXT)
def test_the_keyword_precheck_skips_only_what_tokens_would_leave(text):
    """``_escape_keywords`` returns early when no keyword stands before a ``=``: exactly when reading the
    tokens would change nothing."""
    from textcalls.dialects.pythonic import _escape_by_tokens, _escape_keywords

    assert _escape_keywords(text) == _escape_by_tokens(text)


def test_a_body_of_too_many_nodes_is_malformed_but_long_strings_are_not(impl, tc):
    from textcalls.dialects.pythonic import NODES_MAX

    def lfm2(body):
        return tc.parse("<|tool_call_start|>" + body + "<|tool_call_end|>")

    # "[f(" and ")]" are 2 nodes, each "aN=1," 2 more: at the cap, a call; one node past it, malformed
    args = "".join(f"a{k}=1," for k in range((NODES_MAX - 2) // 2))
    at_cap = "[f(" + args + ")]"
    assert [c.name for c in lfm2(at_cap).calls] == ["f"]
    over = "[f(" + args + "b=2)]"
    parsed = lfm2(over)
    assert (parsed.calls, parsed.removed, parsed.content) == ([], 1, "")
    lines = tc.parse("<function_calls>" + "f(a=1)\n" * NODES_MAX + "</function_calls>", formats=["olmo3"])
    assert (lines.calls, lines.removed) == ([], 1)
    code = "x = f(a, [b], {c: d})\n" * 2000  # thousands of ( , = [ { inside strings: no nodes
    for body in (f"[write(content={code!r})]", f'[write(content="""{code}""")]'):
        (call,) = lfm2(body).calls
        assert json.loads(call.arguments) == {"content": code}
