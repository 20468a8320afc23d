"""The relaxed-JSON rules both kernels (``_kernels_c``, ``_kernels_py``) and ``relaxed_json`` share: the caps
on what is kept as written and on what the repairs read, one markdown fence, and how a single-quoted key
is written again. A leaf: it imports nothing of the package."""

from __future__ import annotations

import re

__all__ = [
    "MAX_DEPTH",
    "PLAIN_DEPTH_MAX",
    "PLAIN_NUMBER_MAX",
    "REPAIR_TOKENS",
    "REPLACEMENT",
    "single_to_double",
    "strict_surrogates",
    "strip_fence",
]

#: Arguments are kept as the model wrote them (``_kernels.impl.plain_object``, both implementations) only when
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


def single_to_double(token: str) -> str:
    """``'k"\\'ey'`` -> ``"k\\"'ey"``: unescape ``\\'``, escape ``"``, keep other escapes."""

    def fix(m: re.Match[str]) -> str:
        if m.group(0) == '"':
            return '\\"'
        return "'" if m.group(1) == "'" else m.group(0)

    return '"' + _SINGLE_ESCAPE.sub(fix, token[1:-1]) + '"'


#: What a lone surrogate in arguments becomes (``strict_surrogates``): U+FFFD, the replacement character.
REPLACEMENT = "\ufffd"
#: In JSON text: each escape (a surrogate pair escaped whole, a lone surrogate's escape, any other) and each
#: surrogate code point written raw. Escapes are read left to right, so ``\\u…`` is a backslash, then text.
_ESCAPE_OR_SURROGATE = re.compile(
    r"\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|(?P<lone>u[dD][89a-fA-F][0-9a-fA-F]{2})|.)"
    r"|(?P<raw>[\ud800-\udfff])",
    re.DOTALL,
)


def _replaced(m: re.Match[str]) -> str:
    if m.group("lone") is not None:
        return "\\ufffd"  # the escape of U+FFFD, in place of the lone surrogate's
    return REPLACEMENT if m.group("raw") is not None else m.group(0)


def strict_surrogates(text: str) -> str:
    """``text`` (arguments: JSON text) with every lone surrogate replaced by U+FFFD, so that strict JSON parsers
    (and UTF-8) accept it: an escaped one (``\\ud83d`` not followed by a low surrogate's escape, or a low one
    alone) by ``\\ufffd``, a surrogate code point written raw by the character U+FFFD. An escaped pair stays
    as written. The kernels' ``strict_json`` calls this only for a text that may hold one."""
    return _ESCAPE_OR_SURROGATE.sub(_replaced, text)
