"""The relaxed-JSON rules both kernels (``_kernels_c``, ``_kernels_py``) and ``relaxed_json`` share: the caps
on what is kept as written and on what the repairs read, one markdown fence, and how a single-quoted key
is written again. A leaf: it imports nothing of the package."""

from __future__ import annotations

import re

__all__ = ["MAX_DEPTH", "PLAIN_DEPTH_MAX", "PLAIN_NUMBER_MAX", "REPAIR_TOKENS", "single_to_double", "strip_fence"]

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
