"""What the textcalls fuzz harnesses share: decoding the fuzzer's bytes into a case, and the checks.

Not a test module (pytest collects ``test_*.py``); the harnesses import it from their own directory.

Layout of a fuzz input, read with ``atheris.FuzzedDataProvider``: its ``ConsumeIntInRange`` takes
bytes from the END of the data (most significant byte first), ``ConsumeBytes`` from the front. So every
option and cut position is an integer read off a trailer of fixed meaning, and what is left at the
front is the text (or the SSE bytes). A plain text file is therefore a usable input too (its last
bytes become options), and ``trailer()`` builds the exact trailer for a chosen case (``make_seeds.py``).
"""

from __future__ import annotations

import codecs
import json
import re

import textcalls
from textcalls import _scan, _scan_py
from textcalls.markers import DIALECTS

try:
    from textcalls import _scan_c
except ImportError as exc:  # the whole point is the extension: never fuzz the twin alone by accident
    raise SystemExit(f"textcalls._scan_c is not built ({exc}); build it (see tests/fuzz/README.md)") from None

IMPLS = (("c", _scan_c), ("py", _scan_py))
NAMES = tuple(DIALECTS)  # every dialect, opt-in ones included, in table order
DEFAULT_ON = tuple(n for n, on in DIALECTS.items() if on)
OPT_IN = tuple(n for n, on in DIALECTS.items() if not on)
MAX_BLOCKS = (1 << 20, 1, 2, 3, 5, 8, 13, 32, 64, 256)
TOOLS = (
    None,
    [],
    [  # typed parameters: XML-style values are converted by these schemas
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "city": {"type": "string"},
                        "days": {"type": "integer"},
                        "metric": {"type": "boolean"},
                        "temp": {"type": "number"},
                        "extra": {"type": ["null", "object"]},
                        "tags": {"type": "array"},
                    },
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": "lookup",
                "parameters": {"type": "object", "properties": {"q": {"type": ["integer", "string"]}}},
            },
        },
        {"type": "function", "function": {"name": "f"}},
    ],
    [
        {"type": "function", "function": {"name": "f", "parameters": {"properties": {"a": {"type": "integer"}}}}},
        {"type": "function", "function": {"name": "g", "parameters": "not a schema"}},
    ],
)
UNKNOWN_TOOLS = ("keep_text", "drop", "accept")
#: (calls_in_reasoning, reasoning_started)
REASONING = tuple((policy, started) for policy in ("auto", "ignore", "extract") for started in (False, True))
CALL_ID = re.compile(r"call_[0-9a-f]{22}")
CALL_ID_BYTES = re.compile(rb"call_[0-9a-f]{22}")


class Finding(AssertionError):
    """An invariant broke: libFuzzer reports the uncaught exception and saves the input."""


def check(ok: bool, what: str, *details) -> None:
    if not ok:
        raise Finding(what + "".join(f"\n  {d!r}" for d in details))


# -- decoding -------------------------------------------------------------------------------------


def _lenient(exc: UnicodeDecodeError):
    """UTF-8 with lone surrogates: an encoded surrogate (ED A0..BF xx) decodes to it, as with
    ``surrogatepass``; any other invalid byte b to U+DC00+b, as with ``surrogateescape``."""
    b, i = exc.object, exc.start
    if b[i] == 0xED and i + 2 < len(b) and 0xA0 <= b[i + 1] <= 0xBF and 0x80 <= b[i + 2] <= 0xBF:
        return chr(0xD000 | (b[i + 1] & 0x3F) << 6 | (b[i + 2] & 0x3F)), i + 3
    return chr(0xDC00 + b[i]), i + 1


codecs.register_error("textcalls-fuzz", _lenient)


def decode(raw: bytes) -> str:
    return raw.decode("utf-8", "textcalls-fuzz")


def encode(text: str) -> bytes:
    """The inverse of ``decode`` for texts it produces (lone surrogates as ED xx xx)."""
    return text.encode("utf-8", "surrogatepass")


def int_in(fdp, lo: int, hi: int) -> int:
    return fdp.ConsumeIntInRange(lo, hi)


def pick(fdp, values):
    return values[fdp.ConsumeIntInRange(0, len(values) - 1)]


def formats_of(mode: int, mask: int):
    """0: the default (None); 1: the default-on dialects plus some opt-in ones; 2: any subset of all
    dialects (maybe empty); 3: Hermes and DeepSeek plus some opt-in ones."""
    if mode == 0:
        return None
    opt = [n for i, n in enumerate(OPT_IN) if mask >> (29 + i) & 1]
    if mode == 1:
        return [*DEFAULT_ON, *opt]
    if mode == 2:
        return [n for i, n in enumerate(NAMES) if mask >> i & 1]
    return ["hermes", "deepseek", *opt]


def scrubber_options(fdp) -> dict:
    """The StreamScrubber / parse keywords (9 bytes of trailer, in this order)."""
    mode = int_in(fdp, 0, 3)
    mask = int_in(fdp, 0, 0xFFFFFFFF)
    options = _options(fdp, mode, mask)
    options["calls_in_reasoning"], options["reasoning_started"] = options.pop("reasoning")
    return options


def _options(fdp, mode: int, mask: int) -> dict:
    return {
        "formats": formats_of(mode, mask),
        "max_block": pick(fdp, MAX_BLOCKS),
        "tools": pick(fdp, TOOLS),
        "unknown_tools": pick(fdp, UNKNOWN_TOOLS),
        "reasoning": pick(fdp, REASONING),
        "code_fences": bool(int_in(fdp, 0, 1)),
    }


def cut_spec(fdp) -> tuple:
    """How to split: (mode, step, raw cut positions). Mode 0: at the raw positions (modulo the length);
    1: every character (byte); 2: every ``step``; 3: not at all."""
    mode = int_in(fdp, 0, 3)
    step = int_in(fdp, 1, 16)
    n = int_in(fdp, 0, 15)
    return mode, step, [int_in(fdp, 0, 0xFFFF) for _ in range(n)]


def cuts_for(spec: tuple, length: int, max_pieces: int | None = None) -> list:
    """The cut positions for a sequence of ``length``; modes 1 and 2 make at most ``max_pieces`` pieces
    (a larger step when needed), to bound the time of one input."""
    mode, step, raw = spec
    if mode == 0:
        return sorted(r % (length + 1) for r in raw)
    if mode in (1, 2):
        step = 1 if mode == 1 else step
        if max_pieces is not None:
            step = max(step, -(-length // max_pieces))
        return list(range(step, length, step))
    return []


def pieces(seq, cuts):
    prev = 0
    out = []
    for c in list(cuts) + [len(seq)]:
        out.append(seq[prev:c])
        prev = c
    return out


def trailer(*fields) -> bytes:
    """The trailer that makes the harness read ``fields``: (value, nbytes) pairs in reading order."""
    consumed = []
    for value, nbytes in fields:
        consumed += [(value >> (8 * k)) & 0xFF for k in reversed(range(nbytes))]
    return bytes(reversed(consumed))


def masked(data):
    """Call ids are random per process and counted per call: compare them as ``call_X``."""
    if isinstance(data, bytes):
        return CALL_ID_BYTES.sub(b"call_X", data)
    return CALL_ID.sub("call_X", data)


# -- exceptions ---------------------------------------------------------------------------------


def expect_bad_input(what: str, fn, *args, **kwargs):
    """Bad input must raise TypeError or ValueError with a message; return the exception type."""
    try:
        fn(*args, **kwargs)
    except (TypeError, ValueError) as exc:
        check(bool(str(exc)), f"{what}: {type(exc).__name__} without a message")
        return type(exc)
    raise Finding(f"{what}: accepted bad input {args!r} {kwargs!r}")


def calls_of(scrubber) -> list:
    out = []
    for c in scrubber.calls:
        check(isinstance(c.name, str) and c.name != "", "a call without a name", c)
        args = json.loads(c.arguments)
        check(isinstance(args, dict), "arguments are not the JSON text of an object", c)
        c.to_openai()
        out.append((c.name, c.arguments, masked(c.id)))
    return out


class use_impl:
    """Switch ``textcalls._scan.impl`` (read at call time by parse, ChunkRecovery, SSERecovery)."""

    def __init__(self, mod):
        self.mod = mod

    def __enter__(self):
        self.saved = _scan.use(self.mod)

    def __exit__(self, *exc):
        _scan.use(self.saved)


__all__ = [
    "IMPLS",
    "Finding",
    "_scan_c",
    "_scan_py",
    "calls_of",
    "check",
    "cut_spec",
    "cuts_for",
    "decode",
    "encode",
    "expect_bad_input",
    "int_in",
    "masked",
    "pick",
    "pieces",
    "scrubber_options",
    "textcalls",
    "trailer",
    "use_impl",
]
