"""relaxed_json: the listed repairs work, everything else is refused (never invented). The rules run on
both implementations of the repairs (``repair``: ``_scan_c``'s over the buffer, ``relaxed_json``'s on a
regex tokenizer), and the two give the same text or error for any text."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from textcalls import _scan_py
from textcalls.relaxed_json import loads, strip_fence

try:
    from textcalls import _scan_c
except ImportError:  # a pure-Python install
    _scan_c = None

# --- must fail: nothing may be invented -------------------------------------------------

MUST_FAIL = [
    '{tool:"X",{guild_id:"Y"}}',  # an object where a key belongs
    "{tags:[hi,bye]}",  # bare values are never quoted
    '{"a":1]',  # mismatched bracket
    "not json",
    "",
    "{",
]


@pytest.mark.parametrize("text", MUST_FAIL)
def test_never_invents(impl, text):
    with pytest.raises(ValueError):
        loads(text)


@pytest.mark.parametrize(
    "text",
    [
        "   ",
        '{"a": "unterminated}',
        '{<|"|>a<|"|>: <|"|>unterminated}',
        "{'unterminated: 1}",
        '{"a": 1}}',  # extra closer
        '{"a": 1',  # missing closer
        "[1,,]",  # a double comma is not a trailing comma
        "{,}",
        "[,]",
        '{"a":,}',
        "{a: b}",  # bare value
        "{\"a\": 'x'}",  # single-quoted values are not repaired
        "['a']",
        '{{{"a": 1}}}',  # only one pair of redundant braces
        '{{"a": 1}, {"b": 2}}',
        "{[1]}",
        "{a b: 1}",
        '{"a": 1} trailing text',
        '```python\n{"a": 1}\n```',  # only json or bare fences
        '```json\n```json\n{"a": 1}\n```\n```',  # one fence only
        '```json\n{"a": 1}',  # unclosed fence
    ],
)
def test_other_broken_text_is_refused(impl, text):
    with pytest.raises(ValueError):
        loads(text)


# --- repairs ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('```json\n{"a":1}\n```', {"a": 1}),
        ('```\n{"a": 1}\n```', {"a": 1}),
        ('  \n```json\n {"a": 1} \n```\n  ', {"a": 1}),
        ("```JSON\n[1, 2]\n```", [1, 2]),
        ("```json\n{a: 1,}\n```", {"a": 1}),
    ],
)
def test_fence(impl, text, expected):
    assert loads(text) == expected


def test_strip_fence():
    assert strip_fence('```json\n{"a": 1}\n```').strip() == '{"a": 1}'
    assert strip_fence("```\n[]\n```").strip() == "[]"
    assert strip_fence("```json\n```") == ""
    for text in ('{"a": 1}', "```json {}```", "```py\n{}\n```", "```json\n{}"):
        assert strip_fence(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{<|"|>name<|"|>:<|"|>x<|"|>}', {"name": "x"}),
        ('{<|">name<|">: <|">x<|">}', {"name": "x"}),
        ('{"a": <|"|>b<|"|>, <|">c<|">: "d"}', {"a": "b", "c": "d"}),
        ('{<|"|>a<|"|>: <|"|>say \\"hi\\" <b><|"|>}', {"a": 'say "hi" <b>'}),
        ('[<|"|><|"|>]', [""]),
    ],
)
def test_leaked_quote_tokens(impl, text, expected):
    assert loads(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{toolkits:["discord"]}', {"toolkits": ["discord"]}),
        ("{$ref: 1, _a-b: 2, x9: 3}", {"$ref": 1, "_a-b": 2, "x9": 3}),
        ("{a : true, b:false, c: null}", {"a": True, "b": False, "c": None}),
        ('{a: {b: [{c: "d"}]}}', {"a": {"b": [{"c": "d"}]}}),
        ('{"x": "{a: 1,}", y: 2}', {"x": "{a: 1,}", "y": 2}),  # strings untouched
        ("{\n  a:\n  1\n}", {"a": 1}),
    ],
)
def test_bare_keys(impl, text, expected):
    assert loads(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{'name': \"x\", 'arguments': {}}", {"name": "x", "arguments": {}}),
        ("{'it\\'s': 1}", {"it's": 1}),
        ("{'say \"hi\"': 1}", {'say "hi"': 1}),
        ("{'a\\nb': 1}", {"a\nb": 1}),
        ("{'a\\\\': 1}", {"a\\": 1}),
        ("{'': 1}", {"": 1}),
    ],
)
def test_single_quoted_keys(impl, text, expected):
    assert loads(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a":1,}', {"a": 1}),
        ("[1,2,]", [1, 2]),
        ('{"a": [1, ], }', {"a": [1]}),
        ('{"a": 1 ,\n}', {"a": 1}),
        ('{"a": ",}",}', {"a": ",}"}),  # ",}" inside a string is kept
        ('[{"a": "]"},]', [{"a": "]"}]),
        ("[[],]", [[]]),
    ],
)
def test_trailing_commas(impl, text, expected):
    assert loads(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{{"tool":"X"}}', {"tool": "X"}),
        ('{ {"tool": "X"} }', {"tool": "X"}),
        ('{{"a": "}"}}', {"a": "}"}),
        ('{{tool: "X",}}', {"tool": "X"}),
    ],
)
def test_redundant_outer_braces(impl, text, expected):
    assert loads(text) == expected


def test_nested_combination(impl):
    assert loads('{name: "f", arguments: {city: "Paris",},}') == {"name": "f", "arguments": {"city": "Paris"}}
    assert loads("```json\n{'name': <|\"|>f<|\"|>, arguments: {'a': [1, 2,],},}\n```") == {
        "name": "f",
        "arguments": {"a": [1, 2]},
    }


def test_valid_json_passes_through(impl):
    assert loads('{"a": [1, 2.5, "x", true, null], "b": {}}') == {"a": [1, 2.5, "x", True, None], "b": {}}
    assert loads('"text"') == "text"
    assert loads("  7  ") == 7


def test_too_deep_is_value_error(impl):
    with pytest.raises(ValueError):
        loads("[" * 100_000 + "]" * 100_000)


@pytest.mark.parametrize(
    "text",
    [
        "{a: 1, " * 150_000 + "}",  # token-dense, a key repeated after a dangling comma
        '"' + '\\"' * 500_000,  # unterminated string full of escapes
        '"' + "<" * 1_000_000,  # unterminated string
        '<|"|>' * 200_000 + "<|",  # quote tokens only, then a stray fragment
        "{'" + "\\'" * 500_000,  # an unterminated single-quoted key
        "[" * 1_000_000,  # nothing closed
    ],
)
def test_one_megabyte_of_malformed_input_is_refused(impl, text):
    # (linear time on such inputs is measured in benchmarks/bench_grammars.py)
    with pytest.raises(ValueError):
        loads(text)


def test_one_megabyte_value_with_a_trailing_comma(impl):
    assert loads('{"a": "' + "x" * 1_000_000 + '",}') == {"a": "x" * 1_000_000}


# --- properties ------------------------------------------------------------------------

FRAGMENTS = ['"', "'", '<|"|>', '<|">', "{", "}", "[", "]", ",", ":", " ", "\\", "a", "1", "```json\n", "\n```"]


@given(st.one_of(st.text(), st.lists(st.sampled_from(FRAGMENTS)).map("".join)))
def test_returns_or_raises_value_error(text):
    try:
        loads(text)
    except ValueError:
        pass


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=20,
)


@given(json_values, st.sampled_from([None, 0, 2]))
def test_valid_json_is_unchanged(value, indent):
    text = json.dumps(value, indent=indent)
    assert loads(text) == json.loads(text)


# --- bounded cost -------------------------------------------------------------------------


def test_nesting_deeper_than_json_can_read_is_refused_where_it_gets_too_deep(impl):
    from textcalls.relaxed_json import MAX_DEPTH

    expected: object = 1
    for _ in range(100):
        expected = [expected]
    assert loads("[" * 100 + "1," + "]" * 100) == expected  # well within the limit: repaired
    with pytest.raises(ValueError, match=f"nested deeper than {MAX_DEPTH} at {MAX_DEPTH}$"):
        loads("[" * (MAX_DEPTH + 1) + "x" * 100_000)


def test_the_repairs_read_a_bounded_number_of_tokens(impl):
    from textcalls.relaxed_json import REPAIR_TOKENS, decode

    small = "{" + "a: 1, " * 1000 + "}"  # bare keys, a trailing comma: repaired
    assert loads(small) == {"a": 1}
    dense = "{" + "a: 1, " * REPAIR_TOKENS + "}"
    with pytest.raises(ValueError, match=f"more than {REPAIR_TOKENS} tokens"):
        loads(dense)
    strict = json.dumps({f"k{i}": i for i in range(REPAIR_TOKENS)})  # strict JSON has no such bound
    assert decode(strict) == json.loads(strict)
    assert loads('{"a": "' + "x" * 1_000_000 + '",}') == {"a": "x" * 1_000_000}  # one long string: one token


def test_bounded_bodies_are_malformed_blocks(impl, tc):
    deep = tc.parse("a <tool_call>" + "[" * 100_000 + "</tool_call> b")
    assert (deep.content, deep.calls, deep.removed) == ("a  b", [], 1)
    dense = '<tool_call>{"name": "f", "arguments": {' + "a: 1, " * 70_000 + "}}</tool_call>"
    assert tc.parse(dense).calls == [] and tc.parse(dense).removed == 1


# the string token as a plain unrolled loop: the atomic form in _TOKEN must tokenize the same way
_PLAIN_STRING = re.compile(r'(?:"|<\|"\|?>)(?P<text>[^"\\<]*(?:(?:\\.|<(?!\|"\|?>))[^"\\<]*)*)(?:"|<\|"\|?>)', re.S)


@given(
    st.lists(st.sampled_from(['"', "\\", '<|"|>', '<|">', "<", "x", " ", '\\"', "<|", "\n"]), max_size=14).map("".join)
)
def test_the_atomic_string_token_reads_as_the_plain_one(text):
    from textcalls._kernels_py import _TOKEN

    for start in range(len(text)):
        plain = _PLAIN_STRING.match(text, start)
        atomic = _TOKEN.match(text, start)
        if plain is None:
            assert atomic is None or atomic.lastgroup != "string"
        else:
            assert atomic is not None and atomic.lastgroup == "string"
            assert (atomic.group(), atomic.group("text")) == (plain.group(), plain.group("text"))


# --- the two repairers agree --------------------------------------------------------------------------

REPAIR_PIECES = [
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    '"',
    "'",
    "\\",
    '<|"|>',
    '<|">',
    "<|",
    "<",
    "a",
    "key",
    "$_-",
    "1",
    "-2.5",
    " ",
    "\n",
    "\u3000",
    "\x1c",
    "\u00e9",
    "\U0001f600",
    "true",
    "\\'",
    '\\"',
]


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(REPAIR_PIECES), max_size=24).map("".join) | st.text(max_size=24))
def test_both_repairers_give_the_same_text_or_error(text):
    if _scan_c is None:
        return

    def run(repair):
        try:
            return repair(text)
        except ValueError as e:
            return ("ValueError", str(e))

    assert run(_scan_c.KERNELS.repair) == run(_scan_py.KERNELS.repair)


@pytest.mark.parametrize(
    ("text", "repaired"),
    [  # each decided by the rules: only a comma after a value, before a closer, is trailing
        ("[1,,]", "[1,,]"),
        ("{,}", "{,}"),
        ("[[],]", "[[]]"),
        ('{"a": [1,] ,}', '{"a": [1] }'),
        ('{<|">k<|">: <|"|>v"}', '{"k": "v"}'),  # either quote token, either side
        ("{k-1$: 1}", '{"k-1$": 1}'),
        ("{k\u3000:1}", '{"k"\u3000:1}'),
        ("{k 1: 2}", "{k 1: 2}"),  # not followed by a colon: not a key
        ("{'k\\'s': 1}", '{"k\'s": 1}'),
    ],
)
def test_each_repairer_writes_the_same_text(kernels, text, repaired):
    assert kernels.repair(text) == repaired


@pytest.mark.parametrize("extra", [0, 1])
def test_both_repairers_stop_at_the_same_token_and_depth(extra):
    from textcalls.relaxed_json import MAX_DEPTH, REPAIR_TOKENS

    # REPAIR_TOKENS tokens are read (a run of spaces is one), one more is refused; MAX_DEPTH brackets likewise
    texts = ["[ " + "1," * ((REPAIR_TOKENS - 4) // 2) + "2]" + " " * extra, "[" * (MAX_DEPTH + extra) + "]"]
    for text in texts:
        results = []
        for impl in [_scan_py] if _scan_c is None else [_scan_py, _scan_c]:
            try:
                results.append(impl.KERNELS.repair(text))
            except ValueError as e:
                results.append(("ValueError", str(e)))
        assert len(set(map(str, results))) == 1
        assert isinstance(results[0], tuple) == bool(extra)  # refused exactly one past the bound
