"""Pythonic body grammars: ``[f(a='x'), g()]`` lists and Olmo 3's call-per-line bodies."""

from __future__ import annotations

import ast
import io
import itertools
import json
import keyword
import re
import tokenize
import warnings
from unittest import mock

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from textcalls import _kernels
from textcalls.dialects import pythonic
from textcalls.dialects.context import Context
from textcalls.dialects.pythonic import pythonic_lines, pythonic_list, pythonic_message
from textcalls.toolcall import EncodedString, ToolCall

from ..conftest import IMPLS

BOTH = [param.values[0] for param in IMPLS if param.values[0] is not None]  # the implementations built

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
    # a lone half is U+FFFD (issue 28: strict parsers refuse a lone surrogate)
    assert json.loads(call.arguments) == {"city": "\U0001f600", "alone": "\ufffd", "k": {"\U0001f600": 1}}
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
            # keywords at the end of longer words, and numbers that tokens touch
            "el",
            "mod",
            "min",
            "_",
            "x1",
            "0x",
            ".",
            "j",
            "e5",
        ]
    ),
    max_size=12,
).map("".join)


def escape_by_all_tokens(text):
    """Every keyword token before a ``=`` token renamed, all the tokens read first: what ``_escape_by_tokens``
    does but for its early return at an unterminated string."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return text
    lines = io.StringIO(text).readlines()
    for tok, after in reversed(list(itertools.pairwise(tokens))):
        if tok.type == tokenize.NAME and keyword.iskeyword(tok.string) and after.string == "=":
            (row, col) = tok.start
            lines[row - 1] = lines[row - 1][:col] + pythonic._KW_PREFIX + lines[row - 1][col:]
    return "".join(lines)


def parses(source):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.dump(ast.parse(source))
    except (SyntaxError, ValueError):
        return None


@settings(max_examples=1500, deadline=None)
@given(text=KEYWORD_TEXT)
def test_the_keyword_precheck_skips_only_what_tokens_would_leave(text):
    """``_escape_keywords`` returns early when no keyword stands before a ``=`` (a keyword at the end of a longer
    name is not one): exactly when reading the tokens would change nothing. Reading them stops at an unterminated
    string, which no renaming makes parse."""
    from textcalls.dialects.pythonic import _escape_by_tokens, _escape_keywords

    assert _escape_keywords(text) == _escape_by_tokens(text)
    escaped, reference = _escape_by_tokens(text), escape_by_all_tokens(text)
    assert escaped == reference or parses(escaped) is None is parses(reference)


@pytest.mark.parametrize(
    ("text", "reads_tokens"),
    [
        ("f(from=1)", True),
        ("f(elif=1)", True),
        ("f(model=1, min=2, color=3, _if=4, x1in=5)", False),  # keywords inside longer names
        ("f(a=1if=2)", True),  # "1" then "if": tokens touch
        ("f(a=1.jif=2)", True),  # "1.j" then "if"
        ("f(a=éif=2)", True),  # a name may go on through a non-ASCII letter: read the tokens
        ("f(a=x.if=2)", True),
        ("f(a=b==None)", False),
    ],
)
def test_the_keyword_precheck_on_names_that_end_with_a_keyword(text, reads_tokens):
    assert pythonic._may_escape(text) is reads_tokens


#: What the node count (``too_many_python_nodes``) reads as string literals, stated as a regex that finds them from
#: left to right (``sub``): the definition the implementations are checked against. (Not theirs: on some texts,
#: such as ``"'x,\\" * n``, where each escaped quote opens a literal that reads to the end and fails, it takes
#: quadratic time.)
NODE_COUNT_STRINGS = re.compile(
    r"'''(?:[^'\\]|\\.|'(?!''))*'''"
    r'|"""(?:[^"\\]|\\.|"(?!""))*"""'
    r"|'[^'\\\n]*(?:\\.[^'\\\n]*)*'"
    r'|"[^"\\\n]*(?:\\.[^"\\\n]*)*"',
    re.S,
)


def nodes_outside_strings(text):
    outside = NODE_COUNT_STRINGS.sub("", text)
    return sum(map(outside.count, "(,=[{"))


NODE_COUNTS = [  # (text, its nodes outside string literals), read by hand
    ("f(a=1, b=[2, {3: 4}])", 7),
    ("'a,b'", 0),
    ("'a,b", 1),  # never closes: the quote is a character like the others
    ("'a\\',b'", 0),  # an escaped quote does not close it
    ("'a\\\\',b", 1),  # an escaped backslash, then the closing quote
    ("'a\n,'", 1),  # a one-line literal does not reach past its line: the comma, then a last quote that fails
    ("'a\\\n,'", 0),  # a backslash and a line feed are read together: the literal goes on
    ('"""a\n,"""', 0),  # a triple-quoted one does
    ("'''a,''", 0),  # three quotes that never close: '' then 'a,' are one-line literals, the last quote fails
    ("''''''", 0),  # an empty triple-quoted literal
    ("'''a''''", 0),  # closed by the first three quotes; the fourth opens nothing
    ("'a\"b', \"c'd\"", 1),  # each quote is a character in a literal of the other
    ("x('''a,\\'''b,''''", 1),  # \' is escaped: three quotes close after "b,", the last quote fails
    ("'x,\\" * 3, 3),  # every literal opened runs to the end and fails
    # outside a literal a backslash escapes nothing: each three quotes open one that never closes (inside it, each
    # later three follow a backslash), then '' closes and the third quote fails at its line's end
    (",\\'''\n" * 3, 3),
]


@pytest.mark.parametrize(("text", "nodes"), NODE_COUNTS)
def test_the_node_count_reads_string_literals_as_stated(kernels, text, nodes):
    assert nodes_outside_strings(text) == nodes  # the regex definition says the same
    assert kernels.too_many_python_nodes(text, nodes) is False
    if nodes:
        assert kernels.too_many_python_nodes(text, nodes - 1) is True
    with pytest.raises(TypeError):
        kernels.too_many_python_nodes(text.encode(), nodes)
    with pytest.raises(ValueError, match="cap of 0 or more"):
        kernels.too_many_python_nodes(text, -1)


@settings(max_examples=3000, deadline=None)
@given(
    text=st.lists(
        # (and characters whose low byte is a quote, a node or a backslash: ħ, ¨, 尧)
        st.sampled_from(
            ["'", '"', "\\", "\n", "(", ",", "=", "x", "\u0127", "\u00a8", "\u5c27", "\U0001f600", "'''", '"""']
        ),
        max_size=24,
    ).map("".join),
    slack=st.integers(-3, 2),
)
def test_the_node_count_agrees_with_its_definition_on_both_implementations(text, slack):
    nodes = nodes_outside_strings(text)
    cap = max(0, nodes + slack)
    assert [impl.KERNELS.too_many_python_nodes(text, cap) for impl in BOTH] == [nodes > cap] * len(BOTH)


@pytest.mark.parametrize("unit", ["'x,\\", ",\\'''\n"], ids=["one-line", "triple"])
def test_the_node_count_stays_linear_where_literals_fail(kernels, unit):
    # (as in NODE_COUNTS) every quote opens a literal that reads to the end and fails: read again from each,
    # 100,000 units would take hours (the suite would hang)
    text = unit * 100_000
    assert kernels.too_many_python_nodes(text, 99_999) is True
    assert kernels.too_many_python_nodes(text, 100_000) is False


def test_a_body_of_unclosed_escaped_literals_stays_linear(impl, tc):
    # Each escaped quote opens a one-line literal that reads to the end and fails: read again from every one of
    # them, 800 kB took hours (the suite would hang); a body over the node cap, malformed.
    body = "[f(a=" + "'x,\\" * 200_000
    parsed = tc.parse("<|tool_call_start|>" + body + "<|tool_call_end|>")
    assert (parsed.calls, parsed.removed, parsed.content) == ([], 1, "")
    scrubber = tc.StreamScrubber()
    streamed = scrubber.feed("<|tool_call_start|>" + body) + scrubber.feed("<|tool_call_end|> after") + scrubber.flush()
    assert (streamed, scrubber.calls, scrubber.removed) == (" after", [], 1)


def test_unterminated_strings_after_a_keyword_argument_stay_linear(impl, tc):
    # "from=" makes the keywords be read by tokenize, which (before 3.12, in Python) read from each quote of a
    # string that does not close on its line to the line's end: 8,000 of them took seconds (the suite would
    # hang); the tokens are read no further than the first
    body = "[f(from=1, a=" + "'x\\" * 200_000
    parsed = tc.parse("<|tool_call_start|>" + body + "<|tool_call_end|>")
    assert (parsed.calls, parsed.removed, parsed.content) == ([], 1, "")


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


# --- long strings, decoded apart from ast.parse -----------------------------------------------------------------


def literal_value(source):
    """What Python makes of a literal (its warnings about invalid escapes aside)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.literal_eval(source)


def as_read(calls):
    """Calls as ``(name, arguments as written)``; ``None`` stays ``None``."""
    return None if calls is None else [(call.name, call.arguments) for call in calls]


def cut_values(body):
    """The long strings ``_Strings.cut`` takes out of ``body``, by placeholder: their values (one written as JSON
    read back)."""
    strings = pythonic._Strings.cut(body)
    return {placeholder: strings.value(placeholder) for placeholder in strings.values}


def read_alone(body):
    """``pythonic_list`` of ``body`` with every plain single-quoted string long enough to be cut, and whether one
    was: ``(calls as pairs, cut)``."""
    with mock.patch.object(pythonic, "_LONG_STRING", 1):
        return pairs(pythonic_list("", body, CTX)), bool(pythonic._Strings.cut(body).values)


# (literal, its value by Python's rules, whether it is cut and decoded apart); LONG_STRING is 1 here
LITERALS = [
    (r"'plain, (with) [nodes] = {x}'", "plain, (with) [nodes] = {x}", True),
    (r"'a\nb\tc\rd'", "a\nb\tc\rd", True),
    (r"'it\'s'", "it's", True),
    (r'"say \"hi\", it\'s"', 'say "hi", it\'s', True),
    (r"""'"quoted" inside'""", '"quoted" inside', True),
    (r"'\a\b\f\v'", "\a\b\f\v", True),
    (r"'\0 \7'", "\x00 \x07", True),  # one-digit octal escapes, a digit 4-7 in the body
    (r"'\x21\123'", "!S", True),  # hex and three-digit octal, no digit 4-7: the bytes decoder's reading
    (r"'\x41\101\47'", "AA'", True),  # the same with digits 4-7: read by the str decoder
    (r"'\477 \777'", "\u013f \u01ff", True),  # octal above \377: nine bits in a str literal (a bytes one drops one)
    (r"'\u00e9 \U0001F600 \N{BULLET}'", "é \U0001f600 •", True),
    (r"'\d \8 \q'", "\\d \\8 \\q", True),  # invalid escapes keep their backslash
    (r"'a\\b \\n'", "a\\b \\n", True),
    (r"'\\'", "\\", True),
    (r"'\\\''", "\\'", True),
    (r"'a\\\\'", "a\\\\", True),
    ("'Zürich \\u00e9 \U0001f600 \\n'", "Zürich é \U0001f600 \n", True),
    ("'\\é'", "\\é", False),  # a backslash before a non-ASCII character: left to the parser
    ("'a\\\nb'", "ab", False),  # a line continuation: left to the parser
    (r"r'\n'", "\\n", False),  # a prefix: left to the parser
    (r"'''a'b'''", "a'b", False),  # triple quotes: left to the parser
]


@pytest.mark.parametrize(("literal", "value", "cut"), LITERALS, ids=[lit for lit, _, _ in LITERALS])
def test_a_long_string_has_the_value_python_gives_it(impl, literal, value, cut):
    assert literal_value(literal) == value
    assert read_alone(f"[write_file(content={literal})]") == ([("write_file", {"content": value})], cut)


@pytest.mark.parametrize(
    "literal",
    [r"'\x4'", r"'\N{NO SUCH NAME}'", r"'\u12'", r"'\U00110000'", "'\ud800'", "'a\rb'", "'a\x00b'"],
    ids=["short-hex", "unknown-name", "short-u", "out-of-range", "lone-surrogate", "cr", "nul"],
)
def test_a_long_string_python_cannot_read_is_malformed(impl, literal):
    with pytest.raises((SyntaxError, ValueError)):
        literal_value(literal)
    assert read_alone(f"[write_file(content={literal})]") == ([], False)


MANY = "".join(f", c{k}='z'" for k in range(40))


@pytest.mark.parametrize(
    ("body", "calls"),
    [
        ("[f(a='x' 'y')]", [("f", {"a": "xy"})]),  # implicit concatenation
        ("[f(a='x'\n  'y')]", [("f", {"a": "xy"})]),
        ("[f(a='x',  # it's\n b='y')]", [("f", {"a": "x", "b": "y"})]),  # a comment
        ("[f(a='x', \\\n b='y')]", [("f", {"a": "x", "b": "y"})]),  # a line continuation outside strings
        ("[f(a=u'x')]", [("f", {"a": "x"})]),
        ("[f(a=b'x')]", []),
        ("[f(a=f'x')]", []),
        ("[f(a='x)]", []),  # unterminated
        ("[f(a='''x)]", []),
        ("[f(a='x', b='y'" + MANY + ")]", [("f", {"a": "x", "b": "y"} | {f"c{k}": "z" for k in range(40)})]),
    ],
    ids=["adjacent", "adjacent-lines", "comment", "continuation", "prefix", "bytes", "f-string", "unterminated",
         "unterminated-triple", "many-literals"],
)  # fmt: skip
def test_text_whose_strings_the_tokenizer_may_see_otherwise_is_left_whole(impl, body, calls):
    with mock.patch.object(pythonic, "_LONG_STRING", 1):
        assert pythonic._Strings.cut(body).values == {}
        assert pairs(pythonic_list("", body, CTX)) == calls


def test_a_string_that_looks_like_a_placeholder_is_read_as_written(impl):
    long = "x" * 5000
    body = f"[f(a='_textcalls_string_0', b='{long}', c={{'_textcalls_string_0': 1}})]"
    assert cut_values(body) == {"_textcalls_string_0": long}
    assert pairs(pythonic_list("", body, CTX)) == [
        ("f", {"a": "_textcalls_string_0", "b": long, "c": {"_textcalls_string_0": 1}})
    ]


@pytest.mark.parametrize("size", [1, 3000])  # read whole, or with the long string cut
@pytest.mark.parametrize("brk", ["\x1e", "\x0c", "\x85", "\u2028"])
def test_a_keyword_argument_after_a_character_splitlines_breaks_at_is_read(brk, size):
    """The tokenizer's rows end at "\n" only: a keyword argument (``from``) is found where it is written
    after a string holding a character ``str.splitlines`` also breaks at (it was read as malformed)."""
    value = "x" * size + brk
    body = f"[f(a='{value}', from=1)]"
    assert pairs(pythonic_list("", body, CTX)) == [("f", {"a": value, "from": 1})]
    assert as_read(pythonic._parse_calls(body)) == as_read(pythonic._parse_calls(body, cut=False))


# a coding agent's write_file call: code with quotes, backslashes, non-ASCII text, octal-looking digits
CODE = {
    "plain": "def f(x):\n    return x * 2  # with 'quotes' and \"quotes\"\n",
    "backslashes": 'print("a\\tb\\n", r"\\d+", "C:\\\\temp")  # 4-7\n',
    "non-ascii": "# Grüße, 東京 \U0001f600\nprint('é')\n",
    "digits": "x = [4, 5, 6, 7]  # 'quoted'\n",
}  # read by the bytes decoder: plain (no digit 4-7), digits (each escape one character); else by the str one


@pytest.mark.parametrize("kind", CODE)
def test_a_big_write_file_call_is_read_with_its_long_string_cut(impl, tc, kind):
    code = CODE[kind] * (300_000 // len(CODE[kind]))
    body = f"[write_file(path='a.py', content={code!r})]"
    assert cut_values(body) == {"_textcalls_string_0": code}
    (call,) = tc.parse("<|tool_call_start|>" + body + "<|tool_call_end|>").calls
    assert call.arguments == json.dumps({"path": "a.py", "content": code}, ensure_ascii=False)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ("path='a.py', content=LONG", {"path": "a.py", "content": "L"}),
        ("content=LONG, mode=0o644, force=True, tags=['x', LONG]", {"content": "L", "mode": 420, "force": True, "tags": ["x", "L"]}),
        ("meta={LONG: LONG}", {"meta": {"L": "L"}}),
        ("content=LONG, note=LONG", {"content": "L", "note": "L"}),
    ],
    ids=["strings", "among-other-values", "key-and-value", "twice"],
)  # fmt: skip
def test_a_long_string_is_the_same_argument_wherever_it_stands(impl, tc, args, expected):
    """A long literal is written as JSON where it is a call's argument, and read back where it is part of
    another value (a list, a dict's key or value) or beside values that are not strings."""
    long = "line with 'quotes', \"quotes\" and a \\ backslash\n\ta\x07" * 200
    body = "[write_file(" + args.replace("LONG", repr(long)) + ")]"
    (call,) = tc.parse("<|tool_call_start|>" + body + "<|tool_call_end|>").calls
    want = json.loads(json.dumps(expected).replace('"L"', json.dumps(long)))
    assert json.loads(call.arguments) == want
    assert call.arguments == json.dumps(want, ensure_ascii=False)


def test_the_node_cap_holds_with_a_long_string_cut():
    from textcalls.dialects.pythonic import NODES_MAX

    long = "(x, [y], {z: 1})," * 1000  # node characters inside the string count for nothing
    args = "".join(f"a{k}=1," for k in range((NODES_MAX - 4) // 2))  # "[f(", "content=" and ", " are 4
    at_cap = f"[f(content='{long}', {args})]"
    assert pythonic._Strings.cut(at_cap).values
    assert [name for name, _ in pairs(pythonic_list("", at_cap, CTX))] == ["f"]
    assert pythonic_list("", f"[f(content='{long}', {args} b=2)]", CTX) == []


VALID_PIECES = [
    "a", " ", "é", "\U0001f600", "4", "7", "(", ",", "=", "#", "\t", "\x0c", "\x1e", "_textcalls_string_0",
    "\\n", "\\'", '\\"', "\\\\", "\\x41", "\\101", "\\477", "\\0", "\\u00e9", "\\U0001F600", "\\N{BULLET}",
    "\\d", "\\8", "\\\\\\'",
]  # fmt: skip
OTHER_PIECES = ["'", '"', "\\", "\n", "\\x4", "\\u12", "\\N{NOPE}", "\\\n", "\\é", "\\\\'"]
string_body = st.lists(
    st.sampled_from(VALID_PIECES) | st.sampled_from(VALID_PIECES + OTHER_PIECES) | st.text(max_size=2), max_size=12
).map("".join)


def call_bodies(prefix, quote, separator):
    """Call lists, or calls one a line, whose arguments are literals of these prefixes and quotes."""
    literal = st.builds(lambda p, q, s: p + q + s + q, prefix, quote, string_body)
    value = (
        literal | st.sampled_from(["1", "None", "x"]) | st.lists(literal, max_size=2).map(", ".join).map("[{}]".format)
    )
    argument = st.builds("{}={}".format, st.sampled_from(["a", "b", "from"]), value)
    call = st.builds(
        lambda name, args, sep: f"{name}({sep.join(args)})",
        st.sampled_from(["f", "g.h"]),
        st.lists(argument, max_size=4),
        separator,
    )
    return st.lists(call, min_size=1, max_size=3).flatmap(
        lambda calls: st.sampled_from(["[" + ", ".join(calls) + "]", "\n".join(calls), "\n  ".join(calls)])
    )


call_body = call_bodies(
    st.sampled_from(["", "r", "b", "f", "u", "rb"]),
    st.sampled_from(["'", '"', "'''"]),
    st.sampled_from([", ", ",\n ", " ", ", # c\n", ",\\\n"]),
)
plain_call_body = call_bodies(st.just(""), st.sampled_from("'\""), st.just(", "))  # mostly cut


@settings(max_examples=600, deadline=None)
@given(body=call_body | plain_call_body)
def test_cutting_long_strings_changes_no_answer(body):
    """Every plain single-quoted string cut (LONG_STRING 1): the calls, arguments and malformed/None answers are
    those of ``ast.parse`` reading the whole text, on both implementations."""
    for impl in BOTH:
        with mock.patch.object(_kernels, "impl", impl.KERNELS), mock.patch.object(pythonic, "_LONG_STRING", 1):
            assert as_read(pythonic._parse_calls(body)) == as_read(pythonic._parse_calls(body, cut=False))
            assert as_read(pythonic._parse_statements(body)) == as_read(pythonic._parse_statements(body, cut=False))


@settings(max_examples=600, deadline=None)
@given(quote=st.sampled_from("'\""), string=string_body, after=st.sampled_from(["", ")", "'", 'x"']))
def test_a_single_quoted_string_ends_and_reads_as_python_reads_it(quote, string, after):
    """Where ``_single_quoted`` ends a literal, the node count's pattern and the parser end it there too; the value
    it decodes is the parser's; the same on both implementations."""
    text = quote + string + quote + after
    assume("\r" not in text and "\x00" not in text and not text.startswith(quote * 3))  # checked by the caller
    answers = []
    for impl in BOTH:
        with mock.patch.object(_kernels, "impl", impl.KERNELS), mock.patch.object(pythonic, "_LONG_STRING", 1):
            answers.append(pythonic._single_quoted(text, 0, quote))
    assert answers[0] == answers[-1]
    if answers[0] is not None:
        end, value = answers[0]
        assert NODE_COUNT_STRINGS.match(text).end() == end
        if isinstance(value, EncodedString):  # a simple literal, written as JSON
            value = json.loads(value.json)
        if value is not None:
            assert literal_value(text[:end]) == value


# --- simple_literal_json: most long literals, written as JSON in one pass (both implementations) -------------

SIMPLE = [  # (text, the quote's index, (end, value) by Python's rules, or None: not simple)
    ("'ab'", 0, (4, "ab")),
    ("x='ab', y", 2, (6, "ab")),
    ('"it\'s"', 0, (6, "it's")),
    ("'say \\\"hi\\\"'", 0, (12, 'say "hi"')),
    ("'a\\'b'", 0, (6, "a'b")),
    ("'\\\\'", 0, (4, "\\")),
    ("'\\n\\t\\r\\a\\b\\f\\v'", 0, (16, "\n\t\r\a\b\f\v")),
    ("'\\d \\8 \\q'", 0, (10, "\\d \\8 \\q")),  # no escape: the backslash is kept
    ("'a\tb\x0cc'", 0, (7, "a\tb\x0cc")),  # control characters other than NUL, LF and CR, as written
    ("'Grüße 東京 \U0001f600'", 0, (12, "Grüße 東京 \U0001f600")),
    ("'é\\n'", 0, (5, "é\n")),
    ("''", 0, (2, "")),
    ("'a\"b'", 0, (5, 'a"b')),  # the other quote, as written
    ("'\\x41'", 0, None),  # escapes left to the caller: hex, octal, \u, \U, \N
    ("'\\101'", 0, None),
    ("'\\0'", 0, None),
    ("'\\u00e9'", 0, None),
    ("'\\U0001F600'", 0, None),
    ("'\\N{BULLET}'", 0, None),
    ("'\\é'", 0, None),  # a backslash before a non-ASCII character
    ("'a\\\nb'", 0, None),  # a line continuation
    ("'a\nb'", 0, None),
    ("'a\rb'", 0, None),
    ("'a\x00b'", 0, None),
    ("'a\ud800b'", 0, None),  # a lone surrogate: the parser cannot read the text
    ("'ab", 0, None),
    ("'ab\\'", 0, None),  # the quote is escaped: the literal does not end
    ("'ab\\", 0, None),
]


def test_simple_literal_json_bad_arguments(kernels):
    with pytest.raises(TypeError):
        kernels.simple_literal_json(b"'a'", 0, 0)
    for start in (-1, 3, 1):  # out of the text, past it, not at a quote
        with pytest.raises(ValueError, match="index of a quote"):
            kernels.simple_literal_json("'a'", start, 0)


@pytest.mark.parametrize(("text", "start", "read"), SIMPLE, ids=[repr(text) for text, _, _ in SIMPLE])
def test_simple_literal_json_is_the_value_python_reads_written_as_json(kernels, text, start, read):
    written = kernels.simple_literal_json(text, start, 0)
    if read is None:
        assert written is None
        return
    end, value = read
    assert literal_value(text[start:end]) == value
    assert written == (end, json.encoder.encode_basestring(value))
    assert kernels.simple_literal_json(text, start, end - start - 2) == written  # the body is that long: written
    assert kernels.simple_literal_json(text, start, end - start - 1) == (end, None)  # one more: only its end


@pytest.mark.parametrize("first", ["", "é", "\u4e2d", "\U0001f600"])
@pytest.mark.parametrize("piece", ["\\n", "\\\\", "\\'", "\\d", "\\a", "\\v", '"', "\t", "\x01", "\\\x1f", "x" * 13])
def test_simple_literal_json_of_every_length(kernels, first, piece):
    """Each escape or character JSON writes otherwise (shorter, as long, longer: ``\\a`` is ``\\u0007``), in
    bodies of every length around the 16-byte blocks, in text of each kind: a body of escapes that JSON writes
    shorter ends where the blocks written would pass the output's end."""
    for count in range(40):
        text = "'" + first + piece * count + "'"
        value = literal_value(text)
        assert kernels.simple_literal_json(text, 0, 0) == (len(text), json.encoder.encode_basestring(value))


@pytest.mark.parametrize("first", ["", "é", "\u4e2d"])
def test_simple_literal_json_shorter_than_its_body_is_written_inside_its_output(kernels, first):
    """``\\'`` is written ``'``: after a run, a few such escapes make the JSON shorter than the body left to read,
    so the blocks must stop on the output's room, not only on the body's end (with an escape written whole, 8
    characters at once, 24 bytes are kept free): every run length and count of escapes around a block."""
    for run in range(20):
        for count in range(12):
            text = "'" + first + "x" * run + "\\'" * count + "'"
            assert kernels.simple_literal_json(text, 0, 0) == (
                len(text),
                json.encoder.encode_basestring(first + "x" * run + "'" * count),
            )


SIMPLE_PIECES = [
    "a", "é", "\u2222", "\U0001f600", "\t", "'", '"', "\\", "\\n", "\\'", '\\"', "\\\\", "\\d", "\\x41",
    "\\0", "\\u00e9", "\\é", "\n", "\r", "\x00", "\ud800", "x" * 17, "\u4e2d" * 9,
]  # fmt: skip


@settings(max_examples=1500, deadline=None)
@given(
    quote=st.sampled_from("'\""),
    body=st.lists(st.sampled_from(SIMPLE_PIECES), max_size=14).map("".join),
    after=st.sampled_from(["", "'", ")", 'x"']),
)
def test_simple_literal_json_agrees_with_the_twin_and_with_python(quote, body, after):
    """Runs long enough to be read 16 bytes at a time (and 2-byte text) among escapes and stops: both
    implementations give the same answer, and a value is the parser's, ended where the node count's pattern ends it."""
    text = "f(a=" + quote + body + after
    written = [impl.KERNELS.simple_literal_json(text, 4, 0) for impl in BOTH]
    assert written[0] == written[-1]
    if written[0] is not None:
        end, encoded = written[0]
        if not text.startswith(quote * 3, 4):  # (triple quotes: ``_Strings.cut`` leaves such text whole)
            assert NODE_COUNT_STRINGS.match(text, 4).end() == end
        assert literal_value(text[4:end]) == json.loads(encoded)
