"""The helpers' JSON decoder (``textcalls._wire``): ``json.loads`` exactly, by the standard library alone or
by msgspec with the standard library where msgspec refuses; and ``SSERecovery`` writing the same bytes
whichever decodes its events (both JSON backends in one process; the msgspec half is skipped when msgspec
is not installed).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from textcalls import _wire, sse

from ..gateway_support.sse_client import chunk, masked, recover

LOADERS = [
    pytest.param(_wire.loads_stdlib, id="stdlib"),
    pytest.param(
        _wire.loads_msgspec,
        id="msgspec",
        marks=pytest.mark.skipif(_wire.loads_msgspec is None, reason="msgspec is not installed, or not used"),
    ),
]


def outcome(loads, data):
    """What ``loads(data)`` gives, comparably: the value's repr (types, key order, -0.0, lone surrogates),
    or the error's type and message."""
    try:
        return "value", repr(loads(data))
    except (ValueError, RecursionError) as e:
        return type(e), str(e)


# --- the decoder against json.loads ------------------------------------------------------------

EDGES = [
    b'{"a": 1}',
    b'{"s": "\\ud800"}',  # a lone surrogate, escaped: msgspec refuses it
    b'{"s": "\\udc00\\ud800"}',
    b'{"s": "\xed\xa0\x80"}',  # a lone surrogate as UTF-8 bytes: json.loads decodes with surrogatepass
    b'{"\\ud800": 1}',
    b'{"s": "\\ud83d\\ude00 \\u00e9 \xc3\xa9 \\/ \\" \\\\ \\u0000"}',
    b'{"i": 18446744073709551615, "j": 18446744073709551616, "k": -9223372036854775809}',
    b'{"i": 123456789012345678901234567890123456789}',
    b'{"i": ' + b"7" * 4301 + b"}",  # past the int digits limit: json.loads raises
    b'{"f": NaN, "g": Infinity, "h": -Infinity}',
    b'{"f": 1e400, "g": -1e400, "h": 1e-400}',
    b'{"f": 1e16, "g": 1E+16, "h": 1.0e16, "i": 10000000000000000.0, "j": -0.0, "k": -0, "l": 5e-324}',
    b'{"f": 0.1000000000000000055511151231257827021181583404541015625, "g": 2.2250738585072011e-308}',
    b'{"a": 1, "b": 2, "a": 3}',  # duplicate keys: the last value, at the first key's place
    b'\xef\xbb\xbf{"a": 1}',  # a UTF-8 byte order mark
    '{"a": "é"}'.encode("utf-16-le"),
    '{"a": "é"}'.encode("utf-16"),
    '{"a": "é"}'.encode("utf-32-be"),
    b' \t\r\n{"a": [1, 2, {}]} \t\r\n',
    b'{"a": 1} x',
    b'{"a": 1}\x0c',
    b'{"a": }',
    b'{"a": [1,]}',
    b'{"a": "\x01"}',
    b'{"a": "\xff"}',
    b"{",
    b"",
    b"  ",
    b"[DONE]",
    b"[1, 2]",
    b'"text"',
    b"12",
    b"-",
    b'{"a": 01}',
    b'{"a":' + b"[" * 200 + b"]" * 200 + b"}",
]


@pytest.mark.parametrize("loads", LOADERS)
@pytest.mark.parametrize("data", EDGES)
def test_the_edges_decode_as_json_loads_decodes_them(loads, data):
    assert outcome(loads, data) == outcome(json.loads, data)


def test_the_backend_is_chosen_at_import():
    def chosen(env):
        script = "from textcalls import _wire; print(_wire.BACKEND, _wire.loads is _wire.loads_stdlib)"
        return subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True).stdout.split()

    installed = importlib.util.find_spec("msgspec") is not None
    assert chosen({}) == (["msgspec", "False"] if installed else ["stdlib", "True"])
    assert chosen({"TEXTCALLS_JSON": "stdlib"}) == ["stdlib", "True"]
    assert _wire.loads is (_wire.loads_stdlib if _wire.loads_msgspec is None else _wire.loads_msgspec)


CHARACTERS = st.characters() | st.sampled_from('/\\"\x00\u2028é<｜')
SURROGATES = st.integers(0xD800, 0xDFFF).map(chr)
TEXT = st.text(CHARACTERS, max_size=8) | st.text(CHARACTERS | SURROGATES, max_size=8)  # half may hold lone ones
INTS = st.one_of(
    st.integers(),
    st.integers(2**63 - 2, 2**64 + 2),
    st.integers(-(2**64) - 2, -(2**63) + 2),
    st.integers(10**25, 10**40),
)
SCALARS = st.one_of(st.none(), st.booleans(), INTS, st.floats(), TEXT)
VALUES = st.recursive(
    SCALARS, lambda kids: st.one_of(st.lists(kids, max_size=3), st.dictionaries(TEXT, kids, max_size=3)), max_leaves=8
)
# number literals as a server may write them: exponents with and without sign, leading zeros, long digits
NUMBERS = st.from_regex(r"-?(0|[1-9][0-9]{0,30})(\.[0-9]{1,25})?([eE][+-]?[0-9]{1,3})?", fullmatch=True)


@st.composite
def payloads(draw):
    """JSON bytes as a server (or a broken one) may send them: any value in an object, with duplicate keys,
    raw number literals, escaped ``/``, spacing; in UTF-8 (lone surrogates as bytes too), UTF-16 or UTF-32,
    maybe with a byte order mark; sometimes cut short or with a stray byte."""
    separators = draw(st.sampled_from([(",", ":"), (", ", ": "), (" ,\t", " :\n")]))
    ascii_only = draw(st.booleans())
    members = [
        json.dumps(key, ensure_ascii=ascii_only) + separators[1] + value
        for key, value in draw(
            st.lists(
                st.tuples(
                    st.sampled_from(["a", "b", "content", "é"]) | TEXT,
                    NUMBERS | VALUES.map(lambda v: json.dumps(v, ensure_ascii=ascii_only, separators=separators)),
                ),
                max_size=4,
            )
        )
    ]
    text = "{" + separators[0].join(members) + "}"
    if draw(st.booleans()):
        text = text.replace("/", "\\/")  # only strings hold a "/"
    text = draw(st.sampled_from(["", " ", "\n"])) + text + draw(st.sampled_from(["", " ", "\r\n"]))
    encoding = draw(st.sampled_from(["utf-8"] * 6 + ["utf-8-sig", "utf-16-le", "utf-16", "utf-32"]))
    data = text.encode(encoding, "surrogatepass")
    damage = draw(st.sampled_from(["none"] * 6 + ["cut", "byte"]))
    if damage == "cut":
        data = data[: draw(st.integers(0, len(data)))]
    elif damage == "byte":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + bytes([draw(st.integers(0, 255))]) + data[at:]
    return data


@pytest.mark.parametrize("loads", LOADERS)
@settings(max_examples=1000, deadline=None)
@given(payloads())
def test_any_payload_decodes_as_json_loads_decodes_it(loads, data):
    assert outcome(loads, data) == outcome(json.loads, data)


# --- SSERecovery over both backends -------------------------------------------------------------

BACKENDS = [pytest.param(json.loads, id="json.loads"), *LOADERS]
WILD = {  # fields a chunk may carry besides its choices, each one a case the fast decoders refuse or mangle
    "big": 2**70,
    "nan": float("nan"),
    "inf": float("-inf"),
    "float": 1e16,
    "alone": "\ud800",
    "slash": "a/b",
    "accents": "é ｜",
}
CONTENT = st.sampled_from(
    ["hi ", "a/b ", "é", "\ud83d", "<", "tool_call>", '{"name": "f", "arguments": {"x": 1}}', "</tool_call>", "\n"]
)


@st.composite
def wild_streams(draw):
    """SSE bytes whose chunk events carry text pieces (a Hermes call among them) with WILD fields,
    serialized in several ways (ASCII or not, escaped ``/``, spaced, a duplicate key), LF or CRLF;
    among them events that are not JSON."""
    out = []
    pieces = draw(st.lists(CONTENT, max_size=10))
    for i, piece in enumerate(pieces + [None]):
        c = chunk(piece, finish="stop" if piece is None else None)
        for key in draw(st.lists(st.sampled_from(sorted(WILD)), unique=True, max_size=3)):
            c[key] = WILD[key]
        text = json.dumps(c, ensure_ascii=draw(st.booleans()), separators=draw(st.sampled_from([None, (",", ":")])))
        if draw(st.booleans()):
            text = text.replace("/", "\\/")
        if draw(st.booleans()):
            text = text[:-1] + ', "id": "dup"}'  # a duplicate key
        nl = draw(st.sampled_from([b"\n", b"\n", b"\r\n"]))
        out.append(b"data: " + text.encode("utf-8", "surrogatepass") + nl + nl)
        if draw(st.integers(0, 9)) == 0:
            out.append(b'data: {"id": ' + str(i).encode() + b", NaN" + nl + nl)  # not JSON
    out.append(b"data: [DONE]\n\n")
    return b"".join(out)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(wild_streams(), st.data())
def test_every_backend_writes_the_same_bytes(impl, raw, data):
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=8)))
    outputs = []
    for param in BACKENDS:
        loads = param.values[0]
        if loads is None:
            continue
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(sse, "loads", loads)
            outputs.append(masked(recover(raw, cuts)))
    assert outputs[1:] == outputs[:-1]


@pytest.mark.parametrize("loads", BACKENDS)
def test_decoded_events_passed_on_untouched_keep_their_bytes(impl, monkeypatch, loads):
    if loads is None:
        pytest.skip("msgspec is not installed, or not used")
    monkeypatch.setattr(sse, "loads", loads)
    call = (
        b'data: {"choices": [{"index": 0, "delta": {"content": "<tool_call>{\\"name\\": \\"f\\"}</tool_call>"}}]}\n\n'
    )
    odd = [  # after the call every event is decoded; these come back unchanged, so they go out as they came
        b'data: {"choices":[{"index":0,"delta":{"content":"a\\/b \\u00e9 \xc3\xa9"}}],"n":1E+16,"m":1e16}\n\n',
        b'data:{"choices": [ {"index": 0, "delta": {"content": " x"}} ], "big": 123456789012345678901234567890}\n\n',
        b'data: {"id": "a", "id": "b", "choices": [{"index": 0, "delta": {"content": "y"}, "x": NaN}]}\n\n',
        b'data: {"choices": [{"index": 0, "delta": {"content": "\\ud800 z"}}], "f": -0.0}\r\n\r\n',
    ]
    out = recover(call + b"".join(odd))
    assert b"tool_calls" in out
    for event in odd:
        assert event in out


def _reference(raw):
    """Every event read by the line reader, the usual one-line shape never taken as read."""
    with pytest.MonkeyPatch.context() as mp:
        event = sse.SSERecovery._event
        mp.setattr(sse.SSERecovery, "_event", lambda self, buf, pos, end, single: event(self, buf, pos, end, False))
        return masked(recover(raw))


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(wild_streams(), st.lists(st.integers(0, 10_000), max_size=8))
def test_the_one_line_reading_gives_what_the_line_reader_gives(impl, raw, cuts):
    cuts = sorted(c % (len(raw) + 1) for c in cuts)
    assert masked(recover(raw, cuts)) == _reference(raw)
