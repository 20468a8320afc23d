"""Conservative repair of almost-JSON written by LLMs: fix known slips, never invent content.

Repairs, all made by one tokenizer pass that respects strings, followed by a strict
``json.loads``: one surrounding markdown fence; the leaked quote tokens ``<|"|>`` and
``<|">`` used as quotes; bare and single-quoted object keys; trailing commas; and one pair
of redundant outer braces around an object. Anything else (bare values, missing or
mismatched brackets, stray text) raises ``ValueError``. Linear time.

``decode`` is how the grammars read JSON: strictly first, then with these repairs; ``NO_VALUE`` when
neither reads the text.
"""

from __future__ import annotations

import json
import re
from typing import Final

from . import _scan

__all__ = ["NO_VALUE", "PLAIN_DEPTH_MAX", "PLAIN_NUMBER_MAX", "decode", "loads", "strip_fence"]

#: What ``decode`` returns for text that is not JSON, even after the repairs: the grammars' one
#: "no value" sentinel (``dialects.context`` returns it for a value that does not fit a schema type).
NO_VALUE: Final = object()

_QUOTE = r'(?:"|<\|"\|?>)'
_TOKEN = re.compile(
    r"(?P<space>\s+)"
    # Unrolled loop: every repetition starts with an escape or a "<", so no backtracking blowup; each run
    # of plain characters is atomic ("(?=(?P<r>…))(?P=r)"), so a string that never closes is read once.
    rf'|(?P<string>{_QUOTE}(?P<text>(?=(?P<r1>[^"\\<]*))(?P=r1)(?:(?:\\.|<(?!\|"\|?>))(?=(?P<r2>[^"\\<]*))(?P=r2))*){_QUOTE})'
    r"|(?P<single>'[^'\\]*(?:\\.[^'\\]*)*')"
    r"|(?P<name>[A-Za-z_$][A-Za-z0-9_$-]*)"
    r"|(?P<punct>[{}\[\],:])"
    rf'|(?P<other>[^\s"\'<{{}}\[\],:A-Za-z_$]+|<(?!\|"\|?>))'
    r"|(?P<unterminated>.)",  # a quote that no string pattern above could close
    re.DOTALL,
)
_COLON = re.compile(r"\s*:")
#: Arguments are kept as the model wrote them (``_scan.impl.plain_object``, both implementations) only when
#: their object nests at most this deep and has no number longer than ``PLAIN_NUMBER_MAX`` characters (or in
#: exponent form); any other JSON is read and written again (``json.loads``, ``json.dumps``).
PLAIN_DEPTH_MAX = 100
PLAIN_NUMBER_MAX = 300
#: How deep a repaired value may nest: ``json.loads`` fails deeper than the recursion limit (1000 by
#: default) anyway, so the repair gives up there instead of reading the rest of the text.
MAX_DEPTH = 1000
#: How many tokens (strings, names, numbers, punctuation, runs of space) a text may have for the repairs
#: to be tried (``loads``); one with more must be strict JSON. A token costs about half a microsecond,
#: so this bounds the repairs to a few tens of milliseconds per text, whatever its length (one long
#: string is one token).
REPAIR_TOKENS = 1 << 16
_SINGLE_ESCAPE = re.compile(r"\\(.)|\"", re.DOTALL)
_CLOSERS = {"}": "{", "]": "["}
_NOT_VALUES = ("{", "[", ",", ":")  # a comma after these is not trailing a value


def strip_fence(text: str) -> str:
    """Return the inside of one markdown fence (```` ```json ```` or ```` ``` ````) around ``text``.

    Text that is not entirely one fenced block is returned unchanged.
    """
    stripped = text.strip()
    newline = stripped.find("\n")
    if newline < 0 or not (stripped.startswith("```") and stripped.endswith("```")):
        return text
    if stripped[3:newline].strip().lower() not in ("", "json"):
        return text
    return stripped[newline + 1 : -3]


def decode(text: str) -> object:
    """The JSON value of ``text``: strict ``json.loads``, then ``loads`` (the repairs); ``NO_VALUE`` if
    neither reads it. Never raises for a ``str``."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    try:
        return loads(text)
    except ValueError:
        return NO_VALUE


def loads(text: str) -> object:
    """Parse ``text`` as JSON after the conservative repairs; raise ``ValueError`` if that fails (or the
    text has more than ``REPAIR_TOKENS`` tokens: the repairs read token by token)."""
    body = strip_fence(text).strip()
    try:
        return _loads_repaired(body)
    except ValueError:
        inner = body[1:-1]
        if not (body.startswith("{") and body.endswith("}") and inner.lstrip().startswith("{")):
            raise
    value = _loads_repaired(inner)
    if not isinstance(value, dict):
        raise ValueError("redundant braces around a non-object")
    return value


def _loads_repaired(text: str) -> object:
    """``json.loads`` of the repaired text; ``ValueError`` for every failure."""
    try:
        return json.loads(_scan.impl.repair(text))  # the Cython scanner's, or ``repair`` here
    except RecursionError:
        raise ValueError("nested too deeply") from None


def single_to_double(token: str) -> str:
    """``'k"\\'ey'`` -> ``"k\\"'ey"``: unescape ``\\'``, escape ``"``, keep other escapes."""

    def fix(m: re.Match[str]) -> str:
        if m.group(0) == '"':
            return '\\"'
        return "'" if m.group(1) == "'" else m.group(0)

    return '"' + _SINGLE_ESCAPE.sub(fix, token[1:-1]) + '"'


def repair(text: str) -> str:
    """Rewrite quotes, keys and trailing commas token by token (the Cython scanner has a twin of it,
    ``_scan_c.repair``, that gives the same text or error).

    Raise ``ValueError`` for an unterminated string, a single-quoted value, a mismatched bracket, nesting
    deeper than ``MAX_DEPTH`` or more than ``REPAIR_TOKENS`` tokens.
    """
    out: list[str] = []
    stack: list[str] = []  # open brackets
    expect_key = False  # right after "{" or "," inside an object
    last = before_last = -1  # output indices of the last two significant tokens
    for count, m in enumerate(_TOKEN.finditer(text)):
        if count == REPAIR_TOKENS:
            raise ValueError(f"more than {REPAIR_TOKENS} tokens: only strict JSON is read")
        kind, token = m.lastgroup, m.group()
        if kind == "space":
            out.append(token)
            continue
        if kind == "unterminated":
            raise ValueError(f"unterminated string at {m.start()}")
        if kind == "string":
            token = '"' + m.group("text") + '"'
        elif kind == "single":
            if not expect_key:
                raise ValueError(f"single-quoted value at {m.start()}")
            token = single_to_double(token)
        elif kind == "name" and expect_key and _COLON.match(text, m.end()):
            token = f'"{token}"'
        elif kind == "punct" and token in "{[":
            stack.append(token)
            if len(stack) > MAX_DEPTH:  # json.loads could not read it either: stop before the rest
                raise ValueError(f"nested deeper than {MAX_DEPTH} at {m.start()}")
        elif kind == "punct" and token in "}]":
            if not stack or stack.pop() != _CLOSERS[token]:
                raise ValueError(f"mismatched {token!r} at {m.start()}")
            if out[last] == "," and out[before_last] not in _NOT_VALUES:  # an opener precedes the comma
                out[last] = ""  # trailing comma
        expect_key = kind == "punct" and (token == "{" or (token == "," and stack[-1:] == ["{"]))
        out.append(token)
        last, before_last = len(out) - 1, last
    return "".join(out)
