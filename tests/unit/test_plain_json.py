"""``plain_object``: JSON objects read where they are written, so that arguments are kept as the model wrote
them (no ``json.loads`` then ``json.dumps``). Both implementations give the same answer for any text, and
accept only what ``json.loads`` reads."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from textcalls import _scan_py, parse
from textcalls._calls import placeholder
from textcalls._json_rules import strict_surrogates
from textcalls._table import JSON_OUTSIDE, json_proof
from textcalls.dialects.jsonlike import _all_calls, as_written, call_from_block
from textcalls.markers import BLOCKS, DEEPSEEK, DEEPSEEK_CLOSE, DEEPSEEK_OPEN, DEEPSEEK_SEP, HERMES
from textcalls.options import DEFAULT
from textcalls.relaxed_json import PLAIN_DEPTH_MAX, PLAIN_NUMBER_MAX, decode
from textcalls.toolcall import EncodedString, ToolCall, make_call, new_call_id

from ..streams import feed_in_pieces

try:
    from textcalls import _scan_c
except ImportError:  # a pure-Python install
    _scan_c = None

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def plain(impl, text):
    return impl.KERNELS.plain_object(text)


# --- the rules, one by one ----------------------------------------------------------------------------


def test_members_are_spans_of_the_values_in_order(impl):
    text = ' {"a": 1, "b" :[true, {"c": null}] ,"a":"x"}\n'
    start, end, members = plain(impl, text)
    assert text[start:end] == text.strip()
    assert [(key, text[s:e]) for key, s, e in members] == [
        ("a", "1"),
        ("b", '[true, {"c": null}]'),
        ("a", '"x"'),  # duplicates are kept, in order
    ]


def test_an_empty_object(impl):
    assert plain(impl, "{}") == (0, 2, [])
    assert plain(impl, " { \t\r\n} ") == (1, 7, [])


def test_a_key_written_with_an_escape_is_none(impl):
    text = '{"n\\u0061me": "f", "x\\"": 1, "ok": 2}'
    assert [key for key, _, _ in plain(impl, text)[2]] == [None, None, "ok"]


@pytest.mark.parametrize(
    "text",
    [
        "[1]",  # not an object
        '"x"',
        "",
        "   ",
        "{",
        '{"a": 1',
        '{"a": 1,}',  # trailing commas
        '{"a": [1,]}',
        '{"a" 1}',
        "{a: 1}",  # bare and single-quoted keys: the repairer's business, not JSON
        "{'a': 1}",
        '{"a": 01}',
        '{"a": 1.}',
        '{"a": .5}',
        '{"a": +1}',
        '{"a": -}',
        '{"a": 1e5}',  # exponents: json.dumps would write another text (and 1e400 is no JSON value for us)
        '{"a": 1E-2}',
        '{"a": NaN}',
        '{"a": Infinity}',
        '{"a": -Infinity}',
        '{"a": tru}',
        '{"a": nul}',
        '{"a": True}',
        '{"a": "\x01"}',  # a raw control character in a string
        '{"a": "\\x41"}',  # not a JSON escape
        '{"a": "\\u12G4"}',
        '{"a": "\\u12"}',
        '{"a": 1} x',  # text after the object
        '{"a": 1}{}',
        "\u3000{}",  # whitespace that is not JSON's
        "{}\u00a0",
        "\ufeff{}",
    ],
)
def test_what_is_not_read_as_written(impl, text):
    assert plain(impl, text) is None


@pytest.mark.parametrize(
    "text",
    ['{"a": -0}', '{"a": 0.5}', '{"a": -12.250}', '{"a": "\\ud800"}', '{"a": "\ud800"}', '{"a": "\\/\\b\\f\\n\\r\\t"}'],
)
def test_what_is_read_as_written(impl, text):
    assert plain(impl, text) == (0, len(text), [("a", 6, len(text) - 1)])


def test_numbers_up_to_the_length_limit(impl):
    ok = "1" * PLAIN_NUMBER_MAX
    assert plain(impl, f'{{"a": {ok}}}') is not None
    assert plain(impl, f'{{"a": {ok}1}}') is None
    assert plain(impl, f'{{"a": -{ok[1:]}}}') is not None  # the sign counts
    assert plain(impl, f'{{"a": -{ok}}}') is None
    assert plain(impl, f'{{"a": 0.{ok[2:]}}}') is not None
    assert plain(impl, f'{{"a": 0.{ok[1:]}}}') is None


@pytest.mark.parametrize("bracket", ["[", "{"])
def test_depth_up_to_the_limit(impl, bracket):
    def nested(depth):  # the object itself is one level
        inner = "1"
        for _ in range(depth - 1):
            inner = f"[{inner}]" if bracket == "[" else f'{{"k": {inner}}}'
        return f'{{"a": {inner}}}' if depth > 1 else "{}"

    assert plain(impl, nested(PLAIN_DEPTH_MAX)) is not None
    assert plain(impl, nested(PLAIN_DEPTH_MAX + 1)) is None


def test_non_string_text_is_a_type_error(kernels):
    with pytest.raises(TypeError, match="plain_object"):
        kernels.plain_object(b"{}")


def test_a_mebibyte_string_value_and_one_that_never_closes(impl):
    body = "x" * (1 << 20)
    text = f'{{"content": "{body}", "path": "a.py"}}'
    assert plain(impl, text)[2][0] == ("content", 12, 12 + len(body) + 2)
    assert plain(impl, text[:-2]) is None  # the string never closes


# --- the same answers, and only what json.loads reads --------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**40), 10**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
)
values = st.recursive(
    scalars,
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=4), kids, max_size=3),
    max_leaves=12,
)
ALPHABET = '{}[]":,\\ \t\n\r0123456789eE.-+tfnulr/bu\x01\x7f\u3000\ud800日x'


@st.composite
def texts(draw):
    """JSON objects written in various ways (separators, indentation, escapes), then maybe damaged."""
    obj = draw(st.dictionaries(st.text(max_size=5), values, max_size=4))
    text = json.dumps(
        obj,
        ensure_ascii=draw(st.booleans()),
        indent=draw(st.none() | st.integers(0, 2)),
        separators=draw(st.sampled_from([None, (",", ":"), (" ,", " : ")])),
    )
    for _ in range(draw(st.integers(0, 2))):
        i = draw(st.integers(0, len(text)))
        if draw(st.booleans()) and i < len(text):
            text = text[:i] + text[i + 1 :]
        else:
            text = text[:i] + draw(st.sampled_from(ALPHABET)) + text[i:]
    return text


def check(text):
    py = _scan_py.KERNELS.plain_object(text)
    if _scan_c is not None:
        assert _scan_c.KERNELS.plain_object(text) == py
    if py is None:
        return
    start, end, members = py
    value = json.loads(text)  # accepted: json reads it, and the span is the same value
    assert json.loads(text[start:end]) == value
    read = {key: json.loads(text[s:e]) for key, s, e in members if key is not None}  # the last of duplicates
    if all(key is not None for key, _, _ in members):
        assert read == value
    else:  # an escaped key may spell any other
        assert read.keys() <= value.keys()
        assert len(members) >= len(value)


@SETTINGS
@given(texts())
def test_both_implementations_agree_on_written_json(text):
    check(text)


@SETTINGS
@given(st.text(alphabet=ALPHABET, max_size=30).map(lambda t: "{" + t))
def test_both_implementations_agree_on_any_text(text):
    check(text)


# The scanners read a string's run between stops (quote, backslash, control character) a block at a time
# (16 bytes with SSE2, 8 without). A stop at every place of two blocks, in runs of characters of each kind,
# some with a byte equal to a stop's (U+2222, U+5C5C, U+011F) or a high bit (U+00A2, U+8022).
FILLERS = ["a", "\xa2", "\xdc", "\u2222", "\u5c5c", "\u011f", "\u8022", "\u4e2d", "\U0001f600"]
STOPS = ["\\n", '\\"', "\\u0041", "\x01", "\x1f", '"', "\\"]  # as written between the string's quotes


@pytest.mark.parametrize("filler", FILLERS)
def test_a_stop_anywhere_in_a_run(impl, kernels, filler):
    for before in range(34):
        for stop in STOPS:
            text = '{"k": "' + filler * before + stop + filler * 5 + '"}'
            try:
                json.loads(text)
                read = True
            except ValueError:
                read = False
            want = (0, len(text), [("k", 6, len(text) - 1)]) if read else None
            assert plain(impl, text) == want, (before, stop)
        value = filler * before + "\x1f" + '"' + "\\" + filler
        assert kernels.json_string(value) == json.encoder.encode_basestring(value)


@pytest.mark.parametrize("filler", FILLERS)
def test_string_arguments_are_written_at_once(kernels, filler):
    """``string_object`` (and ``json_string``) write a string a block at a time while the output has room for a
    block and an escape written whole (24 bytes; 2-byte text 16 code units): an escape at every place of the last
    blocks, keys and values of other kinds in the same object."""
    for before in range(34):
        for stop in ['"', "\\", "\n", "\x01", "\x1f", ""]:
            value = filler * before + stop + filler * 3
            assert kernels.json_string(value) == json.encoder.encode_basestring(value)
            for args in ({"k": value}, {value: "a", "b": value}, {"path": "a.py", "content": value, "é": "\U0001f600"}):
                assert kernels.string_object(args) == json.dumps(args, ensure_ascii=False), (before, stop)


def test_string_object_is_none_for_other_arguments(kernels):
    class Text(str):
        pass

    class Args(dict):
        pass

    for args in ({"a": 1}, {"a": None}, {"a": ["x"]}, {"a": Text("x")}, {Text("a"): "x"}, Args(a="x"), [("a", "x")]):
        assert kernels.string_object(args) is None
    assert kernels.string_object({}) == "{}"


@pytest.mark.parametrize("value", ["x", 'line\n"quoted"', "é", "\u4e2d\u2222", "\U0001f600", "\x01"])
@pytest.mark.parametrize("key", ["k", "ké", "\u4e2d"])
def test_an_encoded_string_is_written_as_it_is(kernels, value, key):
    """An ``EncodedString`` (a grammar's JSON text of a string) goes into the arguments as written, among values
    and keys of other kinds; ``make_call`` reads it back where other values are not strings."""
    encoded = EncodedString(json.encoder.encode_basestring(value))
    assert kernels.string_object({key: encoded}) == json.dumps({key: value}, ensure_ascii=False)
    args = {"path": "a.py", key: encoded, "tail": "\u4e2d"}
    assert kernels.string_object(args) == json.dumps({"path": "a.py", key: value, "tail": "\u4e2d"}, ensure_ascii=False)
    call = make_call("f", {key: encoded, "n": 1, "list": [1]})
    assert call.arguments == json.dumps({key: value, "n": 1, "list": [1]}, ensure_ascii=False)
    assert make_call("f", {key: encoded}).arguments == json.dumps({key: value}, ensure_ascii=False)


@SETTINGS
@given(st.dictionaries(st.text(max_size=40), st.text(max_size=60), max_size=4))
def test_string_object_is_json_dumps_on_both_implementations(args):
    for impl in (_scan_py, _scan_c):
        if impl is not None:
            assert impl.KERNELS.string_object(args) == json.dumps(args, ensure_ascii=False)


# A block's body outside JSON strings is also read a block at a time (16 bytes with SSE2) up to a character the
# lexer must look at: the closer and any other literal's first character, the quote and brackets (a backslash
# outside a string is none).
# Values of XML calls with one such character after a run of each length, the closer after it.
@pytest.mark.parametrize("filler", FILLERS)
def test_a_lexer_stop_anywhere_in_a_body_run(impl, filler):
    for before in range(34):
        for stop in '<[]{}\\"':
            value = filler * before + stop + filler * 5
            for text in (
                f"<tool_call>\n<function=f>\n<parameter=a>\n{value}\n</parameter>\n</function>\n</tool_call>",  # Qwen3
                f"<tool_call>f\n<arg_key>a</arg_key>\n<arg_value>{value}</arg_value>\n</tool_call>",  # GLM
            ):
                parsed = parse(text)
                assert (parsed.content, [(c.name, json.loads(c.arguments)) for c in parsed.calls]) == (
                    "",
                    [("f", {"a": value})],
                ), (before, stop, text)
                # streamed: cut in the value, and in pieces of 11 (a block read across the pieces' ends)
                whole = (parsed.content, parsed.reasoning, [(c.name, c.arguments) for c in parsed.calls])
                for cuts in ([len(text) // 2], range(5, len(text), 11)):
                    assert feed_in_pieces(impl, text, cuts)[:3] == whole, (before, stop, text, cuts)


# Before a block's JSON object opens, only "{" and the literals' first characters matter to the lexer (a quote or
# a bracket there is read as nothing): the run it skips is cut by "{" alone, and a closer after it in a JSON
# string is then inside the string. A call array whose object opens after a run of every length, in text of
# each filler's kind, the closer in the arguments.
@pytest.mark.parametrize("filler", FILLERS)
def test_the_json_object_opens_after_a_run_before_it(impl, filler):
    for before in range(34):
        pad = " \n"[before % 2] * before  # JSON whitespace: the text's kind is the filler's, in the value
        value = f'"]}} [ {filler * 3}</tool_call>"'
        text = f'<tool_call>[ \n {pad}{{"name": "f", "arguments": {{"a": {value}}}}}]</tool_call>'  # Granite's array
        parsed = parse(text)
        want = ("", [("f", {"a": json.loads(value)})])
        assert (parsed.content, [(c.name, json.loads(c.arguments)) for c in parsed.calls]) == want, text
        whole = (parsed.content, parsed.reasoning, [(c.name, c.arguments) for c in parsed.calls])
        for cuts in ([len(text) // 2], range(5, len(text), 11)):
            assert feed_in_pieces(impl, text, cuts)[:3] == whole, (before, text, cuts)


# --- the grammars: arguments as written, equal as JSON to reading and writing them again --------------


@SETTINGS
@given(texts())
def test_as_written_is_the_same_call_as_make_call(text):
    for impl in [_scan_py] if _scan_c is None else [_scan_py, _scan_c]:
        from textcalls import _scan

        saved = _scan.use(impl)
        try:
            kept = as_written("f", text)
        finally:
            _scan.use(saved)
        if kept is None:
            continue
        made = make_call("f", decode(text))
        assert made is not None
        assert kept.name == made.name
        assert json.loads(kept.arguments) == json.loads(made.arguments)
        assert kept.arguments == strict_surrogates(text.strip(" \t\r\n"))  # as written, a lone surrogate U+FFFD


def test_hermes_arguments_are_the_slice_the_model_wrote(impl):
    body = '\n{"name": "get_weather", "arguments": {"city":"Paris" ,\n "days": 3}}\n'
    assert call_from_block(HERMES, body) == ToolCall("get_weather", '{"city":"Paris" ,\n "days": 3}')


@pytest.mark.parametrize(
    ("body", "arguments"),
    [
        ('{"name": "f", "arguments": {"x": 1e3}}', '{"x": 1000.0}'),  # an exponent: written again
        ('{"name": "f", "arguments": "{\\"x\\":1}"}', '{"x": 1}'),  # JSON text in a string: read, written
        ('{"name": "f", "arguments": null}', "{}"),
        ('{"n\\u0061me": "f", "arguments": {"x":1}}', '{"x": 1}'),  # an escaped key: read as JSON
        ('{name: "f", arguments: {x:1},}', '{"x": 1}'),  # repaired: bare keys, a trailing comma
    ],
)
def test_hermes_arguments_that_are_read_and_written_again(impl, body, arguments):
    assert call_from_block(HERMES, body) == ToolCall("f", arguments)


def test_hermes_duplicate_keys_take_the_last_as_json_does(impl):
    body = '{"name": "a", "arguments": {"x":1}, "name": "b", "parameters": {"y":2}, "arguments": {"z":3}}'
    assert call_from_block(HERMES, body) == ToolCall("b", '{"z":3}')


def test_hermes_name_with_escapes(impl):
    assert call_from_block(HERMES, '{"name": " get\\u005fweather ", "arguments": {}}') == ToolCall("get_weather", "{}")


def test_deepseek_arguments_as_written(impl, tc):
    fenced = f'function{DEEPSEEK_SEP}get_weather\n```json\n{{"city":  "Paris"}}\n```'
    glued = f'get_weather{DEEPSEEK_SEP}{{"city":"Paris"}}'
    for body, args in [(fenced, '{"city":  "Paris"}'), (glued, '{"city":"Paris"}')]:
        text = f"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>{body}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
        assert [(c.name, c.arguments) for c in tc.parse(text).calls] == [("get_weather", args)]


# --- the Hermes call object in one pass: hermes_call (the Cython scanner's shortcut past the grammar) ---

HERMES_CALLS = [
    # (body, (name, arguments) or None: the grammar reads it), each decided by the rules of hermes_call
    ('{"name": "f", "arguments": {"x": 1}}', ("f", '{"x": 1}')),
    ('\u3000\n{"name": "f", "arguments": {"x": 1}}\x1c ', ("f", '{"x": 1}')),  # str.strip's whitespace
    ('{"name": "f", "parameters": {"a":1}, "args": {"b":2}}', ("f", '{"a":1}')),  # the first key by rank
    ('{"input": {"i":1}, "name": "f", "arguments": {"x":1}}', ("f", '{"x":1}')),
    ('{"name": "f", "arguments": {}, "arguments": {"y": 2}}', ("f", '{"y": 2}')),  # the last of duplicates
    ('{"name": "f", "argumentsX": {}, "arguments": {"a": 1}}', ("f", '{"a": 1}')),
    ('{"name": " get\\u005fweather ", "arguments": {}}', ("get_weather", "{}")),  # the name decoded, stripped
    ('{"name": "天気", "arguments": {"都市": "東京"}}', ("天気", '{"都市": "東京"}')),  # 2-byte text
    ('{"name": "f\U0001f600", "arguments": {"e": "\U0001f600"}}', ("f\U0001f600", '{"e": "\U0001f600"}')),
    ('{"name": "f", "arguments": {"x": 1}, "n\\u0061me": "g"}', None),  # an escaped key may be "name"
    ('{"name": 3, "arguments": {}}', None),
    ('{"name": "  ", "arguments": {}}', None),
    ('{"name": "f", "arguments": []}', None),
    ('{"name": "f", "arguments": "{}"}', None),  # JSON text in a string: the grammar reads it
    ('{"name": "f", "arguments": {"x": 1e3}}', None),  # not plain: read and written again
    ('{"name": "f", "argument": {"x": 1}}', None),
    ('{"nam": "f", "arguments": {}}', None),
    ('{"name": "f", "arguments": {}} x', None),
    ('x {"name": "f", "arguments": {}}', None),
    ("", None),
    ("  ", None),
]


@pytest.mark.parametrize(("body", "expected"), HERMES_CALLS)
def test_hermes_call(kernels, body, expected):
    call = kernels.hermes_call(body, "longcat")
    assert (None if call is None else (call.name, call.arguments, call.dialect)) == (
        None if expected is None else (*expected, "longcat")
    )
    if expected is not None:  # the grammar's call, read in one pass
        assert (call.name, call.arguments) == (lambda c: (c.name, c.arguments))(call_from_block(HERMES, body))


KEYS = ["name", "arguments", "parameters", "args", "input", "n\\u0061me", "argumentsX", "x"]
VALUES = [
    '"f"',
    '" g "',
    '"  "',
    '"h\\u0069"',
    "3",
    '{"a": 1}',
    "[]",
    "{}",
    '"{}"',
    "null",
    "1e3",
    '{"b": [1, {"c": "}"}]}',
]


@st.composite
def call_objects(draw):
    """Call objects of drawn members (keys that count, escaped keys, near misses; values of every shape)."""
    members = draw(st.lists(st.tuples(st.sampled_from(KEYS), st.sampled_from(VALUES)), max_size=5))
    ws = st.sampled_from(["", " ", "\n", "\u3000", "\x1c"])
    inner = ", ".join(f'"{key}":{draw(st.sampled_from(["", " "]))}{value}' for key, value in members)
    return draw(ws) + "{" + inner + "}" + draw(ws) + draw(st.sampled_from(["", "", "x", "}"]))


def check_one_pass_reader(reader: str, family: str, body: str) -> None:
    """The one-pass reader (``hermes_call``/``deepseek_call``) gives the same on both implementations, and
    where it gives a call, it is the grammar's (``call_from_block(family, body)``)."""
    py = getattr(_scan_py.KERNELS, reader)(body, family)
    got = None if py is None else (py.name, py.arguments, py.dialect)
    if _scan_c is not None:
        c = getattr(_scan_c.KERNELS, reader)(body, family)
        assert (None if c is None else (c.name, c.arguments, c.dialect)) == got
    if py is not None:
        grammar = call_from_block(family, body)
        assert grammar is not None and (grammar.name, grammar.arguments, family) == got


@SETTINGS
@given(call_objects())
def test_hermes_call_is_the_grammars_call_on_both_implementations(body):
    check_one_pass_reader("hermes_call", HERMES, body)


@st.composite
def call_arrays(draw, near_misses=True):
    """JSON arrays of drawn call objects, mostly ones ``hermes_call`` reads, and near misses (names, keys
    and arguments it declines, stray text, a trailing comma, ``;``, other elements, other whitespace)."""
    ws = st.sampled_from(["", " ", "\n", "\t", "", " ", "\u3000"])
    json_ws = st.sampled_from(["", " ", "\n ", "\t"])
    good = st.builds(
        lambda w, n, k, a: "{" + w + f'"name":{w}{n},{w}"{k}": {a}' + w + "}",
        json_ws,
        st.sampled_from(['"f"', '" g "', '"h\\u0069"']),
        st.sampled_from(["arguments", "parameters", "args", "input"]),
        st.sampled_from(['{"a": 1}', "{}", '{"b": [1, {"c": "}"}]}', '{"s": "\\ud83d\\ude00"}']),
    )
    near = st.builds(
        lambda n, k, a: "{" + f'"name": {n}, "{k}": {a}' + "}",
        st.sampled_from(['"f"', '""', "3"]),
        st.sampled_from(["arguments", "tool_name", "x"]),
        st.sampled_from(['"{}"', "[]", "{}", "1e3"]),
    )
    if not near_misses:  # arrays hermes_call reads every element of
        items = draw(st.lists(good, max_size=5))
        separators = [draw(json_ws) + "," + draw(json_ws) for _ in items[1:]]
        inner = items[0] + "".join(sep + item for sep, item in zip(separators, items[1:], strict=True)) if items else ""
        return draw(json_ws) + "[" + draw(json_ws) + inner + draw(json_ws) + "]" + draw(json_ws)
    items = draw(st.lists(st.one_of(good, near, call_objects(), st.sampled_from(["1", "null"])), max_size=4))
    separator = st.sampled_from([",", ",", ", ", ";"])
    separators = [draw(json_ws) + draw(separator) + draw(ws) for _ in items[1:]]
    inner = items[0] + "".join(sep + item for sep, item in zip(separators, items[1:], strict=True)) if items else ""
    end = draw(st.sampled_from(["]", "]", ",]", "] x", ""]))
    return draw(ws) + "[" + draw(json_ws) + inner + draw(json_ws) + end + draw(ws)


@SETTINGS
@given(st.one_of(call_arrays(), call_arrays(near_misses=False)))
def test_array_calls_are_each_elements_call_on_both_implementations(text):
    py = _scan_py.KERNELS.array_calls(text, HERMES)
    got = None if py is None else [(call.name, call.arguments, call.dialect) for call in py]
    if _scan_c is not None:
        c = _scan_c.KERNELS.array_calls(text, HERMES)
        assert (None if c is None else [(call.name, call.arguments, call.dialect) for call in c]) == got
    if py is not None:
        # each element read as a call object (json.loads, then the Hermes rules): the same calls, the
        # arguments equal as JSON, here kept as written
        elements = json.loads(text)
        assert [(call.name, json.loads(call.arguments)) for call in py] == [
            (call.name, json.loads(call.arguments)) for call in _all_calls(elements, text)
        ]
        assert all(call.arguments in text for call in py)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[]", []),
        (" [ \n ] ", []),
        ('[{"name": "f", "arguments": {"a":1}} ,\n{"name":"g","parameters":{}}]', [("f", '{"a":1}'), ("g", "{}")]),
        ('[{"name": "f", "arguments": {}},]', None),  # a trailing comma: not JSON (the repairs read it)
        ('[{"name": "f", "arguments": {}}] x', None),
        ('[{"name": "f", "arguments": {}}, 1]', None),
        ('[{"name": "f", "arguments": {}}; {"name": "g", "arguments": {}}]', None),  # only commas separate
        ('[{"name": "f", "arguments": {}} {"name": "g", "arguments": {}}]', None),
        ('[{"name": "f", "arguments": "{}"}]', None),  # arguments as JSON text: read by the grammar
        ('[{"tool_name": "f", "parameters": {}}]', None),  # Command R's key: read by the grammar
        ('{"name": "f", "arguments": {}}', None),  # not an array
        ("[\u3000]", None),  # not JSON whitespace
    ],
)
def test_array_calls(kernels, text, expected):
    calls = kernels.array_calls(text, "granite3")
    assert (None if calls is None else [(call.name, call.arguments) for call in calls]) == expected
    assert calls is None or all(call.dialect == "granite3" for call in calls)


def test_hermes_call_ids_come_from_the_process_count(kernels):
    calls = [kernels.hermes_call('{"name": "f", "arguments": {}}', "hermes") for _ in range(3)]
    ids = [call.id for call in calls] + [new_call_id()]
    prefix = new_call_id()[:17]
    assert all(len(i) == 27 and i.startswith(prefix) for i in ids)
    numbers = [int(i[17:], 16) for i in ids]
    assert numbers == list(range(numbers[0], numbers[0] + 4))  # one count: consecutive, never repeated


TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]


@pytest.mark.parametrize(
    ("text", "keywords", "expected", "malformed", "content"),
    [
        # (what the Cython scanner's shortcut must leave to the grammar, and the grammar's answer)
        ('<tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call>', {}, [("f", '{"x": 1}', "hermes")], 0, ""),
        ('<longcat_tool_call>{"name": "f", "arguments": {}}</longcat_tool_call>', {}, [("f", "{}", "longcat")], 0, ""),
        # a name in the opener: the body must name the same tool (or be the arguments)
        ('<tool_call name="g">{"name": "f", "arguments": {"x": 1}}</tool_call>', {}, [], 1, ""),
        (
            '<tool_call name="f">{"name": "f", "arguments": {"x":1}}</tool_call>',
            {},
            [("f", '{"x": 1}', "hermes")],
            0,
            "",
        ),
        # a tool not offered: kept as text, dropped, or accepted
        (
            'a <tool_call>{"name": "zz", "arguments": {}}</tool_call>',
            {"tools": TOOLS},
            [],
            0,
            'a <tool_call>{"name": "zz", "arguments": {}}</tool_call>',
        ),
        (
            'a <tool_call>{"name": "zz", "arguments": {}}</tool_call>',
            {"tools": TOOLS, "unknown_tools": "drop"},
            [],
            1,
            "a",
        ),  # removed without giving a call: counted malformed (Parsed's docstring)
        (
            'a <tool_call>{"name": "zz", "arguments": {}}</tool_call>',
            {"tools": TOOLS, "unknown_tools": "accept"},
            [("zz", "{}", "hermes")],
            0,
            "a",
        ),
        ('<tool_call>{"name": "f", "arguments": {}}</tool_call>', {"tools": TOOLS}, [("f", "{}", "hermes")], 0, ""),
    ],
)
def test_hermes_blocks_read_alike_with_the_shortcut_and_without(impl, tc, text, keywords, expected, malformed, content):
    parsed = tc.parse(text, **keywords)
    assert [(c.name, c.arguments, c.dialect) for c in parsed.calls] == expected
    assert (parsed.malformed, parsed.content) == (malformed, content)


# --- DeepSeek bodies in one pass: deepseek_call -------------------------------------------------------

SEP = DEEPSEEK_SEP
ASCII_SEP = DEEPSEEK_SEP.replace("\uff5c", "|")
DEEPSEEK_CALLS = [
    # (body, (name, arguments) or None: the grammar reads it), each decided by the rules of deepseek_call
    (f'get_weather{SEP}{{"city": "Paris"}}', ("get_weather", '{"city": "Paris"}')),  # V3.1
    (f' f {SEP} {{"a":1}}\n', ("f", '{"a":1}')),  # the name stripped, JSON whitespace around the object
    (f'function{SEP}get_weather\n```json\n{{"a": 1}}\n```', ("get_weather", '{"a": 1}')),  # V3, fenced
    (f'function{SEP}f\n```JSON \n{{"a":1}}\n```\n', ("f", '{"a":1}')),
    (f'function{SEP}f\n{{"a":1}}  ', ("f", '{"a":1}')),  # V3, no fence
    (f'天気{SEP}{{"都市": "東京"}}', ("天気", '{"都市": "東京"}')),
    (f'function{SEP}f\n```\n{{"a":1}}\n```', ("f", '{"a":1}')),  # a fence without info
    (f'function{SEP}f\n```  \n{{"a":1}}\n```', ("f", '{"a":1}')),  # info of spaces: stripped, empty
    (f'function{SEP}f\n``` jSoN\n{{"a":1}}```', ("f", '{"a":1}')),  # info compared lowered
    (f'f<{SEP}{{"a":1}}', ("f<", '{"a":1}')),  # the separator right after a "<" that is not one
    (f'function{SEP}f\n```py\n{{"a":1}}\n```', None),  # not a JSON fence: the grammar reads it
    (f'function{SEP}f\n```jsonl\n{{"a":1}}\n```', None),
    (f'f{SEP}\u3000{{"a":1}}', None),  # not JSON whitespace before the object: read and written again
    (f'f{SEP}```json\n{{"a":1}}\n```', None),  # a fence right after the separator: read and written again
    (f'f{SEP}```\n{{"a":1}}', None),  # the same, never closed: "```" is not the name
    (f'f{SEP}{{"a": 1e3}}', None),
    (f'  {SEP}{{"a":1}}', None),  # no name
    (f"function{SEP}f", None),  # no arguments: the grammar gives {}
    (f"function{SEP}f\n   ", None),
    (f'f{ASCII_SEP}{{"a":1}}', None),  # the grammar reads ASCII separators (after an ASCII opener)
    ('{"name": "f", "arguments": {}}', None),  # no separator: a Hermes body
]


@pytest.mark.parametrize(("body", "expected"), DEEPSEEK_CALLS)
def test_deepseek_call(kernels, body, expected):
    call = kernels.deepseek_call(body, "deepseek")
    assert (None if call is None else (call.name, call.arguments, call.dialect)) == (
        None if expected is None else (*expected, "deepseek")
    )
    if expected is not None:
        assert (call.name, call.arguments) == (lambda c: (c.name, c.arguments))(call_from_block(DEEPSEEK, body))


@st.composite
def deepseek_bodies(draw):
    """DeepSeek bodies of drawn parts: V3.1 and V3 heads, separators, fences, objects, whitespace."""
    ws = st.sampled_from(["", " ", "\n", "\u3000"])
    head = draw(st.sampled_from(["f", " f ", "", "function", "天気"])) + draw(
        st.sampled_from([SEP, SEP, ASCII_SEP, ""])
    )
    if draw(st.booleans()):
        head += draw(st.sampled_from(["g", " g", ""])) + draw(st.sampled_from(["\n", "\n", "", " "]))
    fence = draw(st.sampled_from(["", "", "```json\n", "```\n", "``` JSON\n", "```py\n"]))
    value = draw(st.sampled_from(VALUES))
    close = draw(st.sampled_from(["", "\n```", "```"])) if fence else ""
    return head + draw(ws) + fence + value + close + draw(ws)


@SETTINGS
@given(deepseek_bodies())
def test_deepseek_call_is_the_grammars_call_on_both_implementations(body):
    check_one_pass_reader("deepseek_call", DEEPSEEK, body)


BEGIN, END = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>", "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"


@pytest.mark.parametrize(
    ("text", "expected", "malformed"),
    [
        (f'{BEGIN}f{SEP}{{"a":1}}{END}', [("f", '{"a":1}', "deepseek")], 0),
        # ASCII markers: the grammar reads the ASCII separator
        (
            f'{BEGIN.replace(chr(0xFF5C), "|")}f{ASCII_SEP}{{"a":1}}{END.replace(chr(0xFF5C), "|")}',
            [("f", '{"a":1}', "deepseek")],
            0,
        ),
        # an ASCII opener: the grammar makes every separator full-width first, so the call's name is all
        # that follows the first one (and no arguments follow a line break)
        (
            f"{BEGIN.replace(chr(0xFF5C), '|')}f{ASCII_SEP}g{SEP}{{a:1}}{END.replace(chr(0xFF5C), '|')}",
            [(f"g{SEP}{{a:1}}", "{}", "deepseek")],
            0,
        ),
        # a full-width opener with an ASCII separator: no separator to the grammar, so no call
        (f'{BEGIN}f{ASCII_SEP}{{"a":1}}{END}', [], 1),
    ],
)
def test_deepseek_blocks_read_alike_with_the_shortcut_and_without(impl, tc, text, expected, malformed):
    parsed = tc.parse(text)
    assert [(c.name, c.arguments, c.dialect) for c in parsed.calls] == expected
    assert (parsed.malformed, parsed.content) == (malformed, "")


# --- a block's plain object, read once: the Cython lexer reads it as plain_object does and tells the grammar -


def blocks_of(opener: str, closer: str, bodies):
    """Texts with the drawn bodies in blocks, and text or literals (the closer, an opener) around them."""
    around = st.sampled_from(["", "a ", "\n", closer, "<tool_call>", "x" * 3])
    return st.tuples(around, st.lists(bodies, min_size=1, max_size=2), around).map(
        lambda t: t[0] + "".join(opener + body + closer for body in t[1]) + t[2]
    )


def agree_whole_and_split(text, cuts):
    """``parse`` gives the same on both implementations, and every cut of the text gives what it gives."""
    want = _scan_py.scan_whole(text, DEFAULT)
    wanted = (want.content, want.reasoning, [(c.name, c.arguments) for c in want.calls], want.removed)
    for impl in [m for m in (_scan_c, _scan_py) if m is not None]:
        got = impl.scan_whole(text, DEFAULT)
        assert (got.content, got.reasoning, [(c.name, c.arguments) for c in got.calls], got.removed) == wanted
        content, reasoning, calls, removed = feed_in_pieces(impl, text, cuts)
        assert (content.strip(), reasoning.strip(), calls, removed) == wanted


# values whose strings hold literals the lexer must not take for markup, and objects that are not plain
LITERAL_VALUES = [
    '"</tool_call>"',
    '"<tool_call>"',
    f'"{DEEPSEEK_CLOSE}"',
    '"[TOOL_CALLS]"',
    '"a\\"</tool_call>"',
    '"\\\\"',
    "1e3",
    "'x'",
    '{"b": [1, {"c": "}"}]}',
]


@st.composite
def literal_objects(draw):
    members = draw(st.lists(st.tuples(st.sampled_from(KEYS), st.sampled_from(VALUES + LITERAL_VALUES)), max_size=4))
    return "{" + ", ".join(f'"{key}": {value}' for key, value in members) + "}"


@SETTINGS
@given(blocks_of("<tool_call>", "</tool_call>", literal_objects() | call_objects()), st.data())
def test_hermes_blocks_read_alike_whole_and_split_on_both_implementations(text, data):
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=4)))
    agree_whole_and_split(text, cuts)


@SETTINGS
@given(
    blocks_of(
        DEEPSEEK_OPEN,
        DEEPSEEK_CLOSE,
        st.tuples(deepseek_bodies(), literal_objects()).map(lambda t: t[0] if "{" in t[0] else t[0] + t[1]),
    ),
    st.data(),
)
def test_deepseek_blocks_read_alike_whole_and_split_on_both_implementations(text, data):
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=4)))
    agree_whole_and_split(text, cuts)


@pytest.mark.parametrize(
    ("text", "expected", "content"),
    [
        # the closer, an opener and a marker inside the arguments' strings are text of the arguments
        (
            '<tool_call>{"name": "f", "arguments": {"s": "</tool_call><tool_call>[TOOL_CALLS]"}}</tool_call>x',
            [("f", '{"s": "</tool_call><tool_call>[TOOL_CALLS]"}')],
            "x",
        ),
        (
            f'{BEGIN}function{SEP}f\n```json\n{{"s": "{DEEPSEEK_CLOSE}"}}\n```{END}x',
            [("f", f'{{"s": "{DEEPSEEK_CLOSE}"}}')],
            "x",
        ),
        # not plain (an exponent): the lexer reads it character by character, the grammar reads it again
        ('<tool_call>{"name": "f", "arguments": {"n": 1e3}}</tool_call>', [("f", '{"n": 1000.0}')], ""),
        # plain, then text before the closer: the grammar's answer (no call: json.loads and the repairs
        # decline the text after the object), the block removed
        ('<tool_call>{"name": "f", "arguments": {}} x</tool_call>', [], ""),
    ],
)
def test_a_plain_object_read_once_gives_the_grammars_call(impl, tc, text, expected, content):
    parsed = tc.parse(text)
    assert [(c.name, c.arguments) for c in parsed.calls] == expected
    assert parsed.content == content


@pytest.mark.parametrize(
    ("opener", "closer", "family", "body"),
    [
        # the object the lexer read holds the separator: the arguments the grammar looks at start inside it
        (DEEPSEEK_OPEN, DEEPSEEK_CLOSE, DEEPSEEK, f'{{"k": "{SEP}{{"}}'),
        # the object the lexer read is the name
        (DEEPSEEK_OPEN, DEEPSEEK_CLOSE, DEEPSEEK, f'{{"k": 1}}{SEP}{{"a": 1}}'),
        # the object the lexer read is not all the body
        ("<tool_call>", "</tool_call>", HERMES, '{"name": "f", "arguments": {}} {"name": "g", "arguments": {}}'),
    ],
)
def test_the_object_the_lexer_read_is_taken_only_where_the_grammar_reads_it(impl, tc, opener, closer, family, body):
    grammar = call_from_block(family, body)
    parsed = tc.parse("x " + opener + body + closer)
    assert [(c.name, c.arguments) for c in parsed.calls] == (
        [] if grammar is None or placeholder(grammar) else [(grammar.name, grammar.arguments)]
    )  # (a name no function can have, such as '{"k": 1}', makes a format's description: text)


def lexer_stops(text):
    """The indexes of a plain object at which a block body's lexer looks for literals: outside its strings,
    and each string's opening quote."""
    stops, in_string, escaped = [], False, False
    for i, c in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        else:
            stops.append(i)
            in_string = c == '"'
    return stops


@SETTINGS
@given(texts())
def test_what_json_proof_rests_on_holds_in_every_plain_object(text):
    if _scan_py.KERNELS.plain_object(text) is None:
        return
    start, end, _ = _scan_py.KERNELS.plain_object(text)
    obj = text[start:end]
    for i in lexer_stops(obj):
        assert obj[i] in JSON_OUTSIDE
        if obj[i] != '"' and i < len(obj) - 1:
            assert obj[i + 1] in JSON_OUTSIDE


@pytest.mark.parametrize(
    ("literal", "proof"),
    [
        ("<tool_call>", True),
        ("[TOOL_CALLS]", True),  # '[' is there, never followed by 'T'
        ("ab", True),  # 'a' is there (false), never followed by 'b'
        (",<x>", True),
        ("functools", False),  # 'f' is never followed by 'u' there, but both are characters found there
        ("[{", False),
        ("true", False),
        ('"name', False),  # a quote opens a string: anything may follow it
        ("}</x>", False),  # the object's last character: the text after it may follow
    ],
)
def test_json_proof(literal, proof):
    assert json_proof(literal) is proof


def test_every_shipped_block_with_a_closer_and_json_strings_has_its_plain_object_read_once():
    # (the Cython lexer reads such a block's plain object in one pass when all the literals it looks for
    # there are json_proof; otherwise it lexes it character by character, as before)
    strong = [b.opener for b in BLOCKS if b.anchor is None and b.strong]
    assert all(json_proof(lit) for lit in strong)
    assert all(json_proof(b.opener) and json_proof(b.closer) for b in BLOCKS if b.closer and b.json_strings)


# --- arguments written as JSON: make_call's encoder, its strings by json_string ------------------------------

STRING_CASES = [
    "",
    'a"b\\c',
    "".join(map(chr, range(0x20))) + "\x7f",  # every control character: short escapes and lowercase \u00XX
    "x" * 7 + "\n" + "y" * 8 + '"' + "z" * 9,  # escapes either side of an 8-byte word
    "é" * 17 + "\t",  # Latin-1
    "中" * 9 + "\\" + "中" * 4 + "\x00",  # 2-byte, words of 4 characters
    "😀" * 5 + '"' + "\ud800",  # 4-byte, and a lone surrogate (kept)
    ("def f(x):\n    return x  # 'q' \"q\"\n" * 300),  # long: runs between escapes
]


@pytest.mark.parametrize("text", STRING_CASES)
def test_json_string_writes_what_json_writes(kernels, text):
    assert kernels.json_string(text) == json.encoder.encode_basestring(text) == json.dumps(text, ensure_ascii=False)


def test_json_string_of_a_non_string_is_a_type_error(kernels):
    with pytest.raises(TypeError):
        kernels.json_string(b"x")


@SETTINGS
@given(st.text(st.characters(exclude_categories=()), max_size=80))  # surrogates too
def test_json_string_writes_what_json_writes_for_any_text(text):
    want = json.encoder.encode_basestring(text)
    assert _scan_py.KERNELS.json_string(text) == want
    if _scan_c is not None:
        assert _scan_c.KERNELS.json_string(text) == want


@SETTINGS
@given(st.dictionaries(st.text(max_size=12), values, max_size=5))
def test_make_calls_arguments_are_json_dumps_on_both_implementations(args):
    from textcalls import _scan

    want = json.dumps(args, ensure_ascii=False, allow_nan=False)
    for impl in [m for m in (_scan_c, _scan_py) if m is not None]:
        before = _scan.use(impl)
        try:
            assert make_call("f", args).arguments == want
        finally:
            _scan.use(before)


def test_make_call_declines_what_json_cannot_write(impl):
    assert make_call("f", {"x": float("nan")}) is None
    # a lone surrogate is U+FFFD (issue 28: strict parsers refuse it; UTF-8 cannot carry it)
    assert make_call("f", {"x": "\ud800 kept", "y": [1.5, None, True]}).arguments == (
        '{"x": "\ufffd kept", "y": [1.5, null, true]}'
    )


@pytest.mark.parametrize("made", ["none", "otherwise"])
def test_make_call_writes_json_without_the_c_encoder_or_with_another(impl, monkeypatch, made):
    # json without its C encoder, or one made with other arguments: the encoder's own path, the same text
    from textcalls import _calls

    def other(*args):
        raise TypeError("make_encoder() takes other arguments")

    monkeypatch.setattr(_calls, "c_make_encoder", None if made == "none" else other)
    args = {"path": "a.py", "content": 'x = "\\n"\n' * 3, "n": [1, 2.5, None]}
    assert make_call("f", args).arguments == json.dumps(args, ensure_ascii=False)


@pytest.mark.parametrize("later", ["1", '"x"', "{}", "[[]]"])
def test_a_duplicate_key_does_not_hide_a_value_nested_past_the_cap(impl, kernels, later):
    # issue 28: the twin checked the depth of the value json.loads made, where a later duplicate key had
    # replaced the deep one; the text nests past the cap, so neither keeps it as written
    deep = "[" * (PLAIN_DEPTH_MAX + 50) + "]" * (PLAIN_DEPTH_MAX + 50)
    args = '{"a":' + deep + ',"a":' + later + "}"
    body = '{"name":"f","arguments":' + args + "}"
    assert kernels.plain_object(args) is None
    assert kernels.plain_object(body) is None
    assert kernels.hermes_call(body, "hermes") is None
    parsed = parse("<tool_call>" + body + "</tool_call>")  # the grammar: json.loads, the last duplicate wins
    assert [c.arguments for c in parsed.calls] == [json.dumps({"a": json.loads(later)}, ensure_ascii=False)]
    at_cap = "[" * (PLAIN_DEPTH_MAX - 1) + "]" * (PLAIN_DEPTH_MAX - 1)  # with the object: PLAIN_DEPTH_MAX levels
    assert kernels.plain_object('{"a":' + at_cap + ',"a":' + later + "}") is not None
