"""The enabled part of the marker table, as both scanners use it, and what happens when a block ends."""

from __future__ import annotations

import functools
import re

from .dialects import GRAMMARS, WHOLE_MESSAGE, Context
from .markers import BLOCKS, DIALECTS, MARKERS, Block, Marker

__all__ = [
    "Table", "table_for", "read_block", "read_whole", "word_tail", "may_contain_markup", "CALLS_IN_REASONING",
    "UNKNOWN_TOOLS",
]

UNKNOWN_TOOLS = ("keep_text", "drop", "accept")
CALLS_IN_REASONING = ("ignore", "extract")


class Table:
    """The blocks and markers of the enabled dialects, in table order."""

    __slots__ = ("blocks", "markers", "grammars", "literals", "anchored", "whole", "whole_starts")

    def __init__(self, dialects: tuple[str, ...]) -> None:
        self.blocks: tuple[Block, ...] = tuple(b for b in BLOCKS if b.dialect in dialects)
        self.markers: tuple[Marker, ...] = tuple(m for m in MARKERS if m.dialect in dialects)
        self.grammars = tuple(GRAMMARS[b.grammar] for b in self.blocks)
        #: every literal a stream must hold back a proper prefix of: openers, then markers
        self.literals: tuple[str, ...] = tuple(b.opener for b in self.blocks if b.anchor is None) + tuple(
            m.literal for m in self.markers
        )
        #: plain-word openers, found at their anchor character: (word, anchor, block kind)
        self.anchored = tuple((b.opener, b.anchor, k) for k, b in enumerate(self.blocks) if b.anchor is not None)
        #: whole-message grammars, and the first characters (after whitespace) that put a stream on hold for them
        self.whole = tuple(WHOLE_MESSAGE[d][0] for d in dialects if d in WHOLE_MESSAGE)
        self.whole_starts = "".join(sorted({c for d in dialects if d in WHOLE_MESSAGE for c in WHOLE_MESSAGE[d][1]}))


@functools.lru_cache(maxsize=64)
def _table(dialects: tuple[str, ...]) -> Table:
    return Table(dialects)


_DEFAULT = _table(tuple(name for name, on in DIALECTS.items() if on))


def table_for(formats) -> Table:
    """The table for ``formats`` (an iterable of dialect names; ``None``: the default-on dialects)."""
    if formats is None:
        return _DEFAULT
    if isinstance(formats, str) or not hasattr(formats, "__iter__"):
        raise TypeError(f"formats must be an iterable of dialect names, not {type(formats).__name__}")
    names = tuple(formats)
    unknown = [n for n in names if n not in DIALECTS]
    if unknown:
        raise ValueError(f"unknown dialect(s) {unknown!r}; textcalls.DIALECTS lists them")
    return _table(tuple(n for n in DIALECTS if n in names))


def word_tail(table: Table, s: str, start: int) -> int:
    """The index from which ``s[start:]`` ends with a proper prefix of a plain-word opener and its
    anchor (``f`` … ``functools``): it must be held back; ``len(s)`` if none."""
    n = len(s)
    for word, _, _ in table.anchored:
        for k in range(max(start, n - len(word)), n):
            if word.startswith(s[k:]):
                return k
    return n


def read_whole(table: Table, text: str, ctx: Context):
    """The calls of a message that is only a call (an opt-in whole-message format), or ``None``."""
    for grammar in table.whole:
        calls = grammar(text, ctx)
        if calls:
            return calls
    return None


def read_block(table: Table, k: int, opener: str, body: str, ctx: Context, unknown_tools: str):
    """The calls of a finished block of kind ``k``, or ``None`` when its text stays (not a call, or a
    call of a tool that was not offered while ``unknown_tools`` is ``"keep_text"``)."""
    calls = table.grammars[k](opener, body, ctx)
    if calls is None or not ctx.has_tools or unknown_tools == "accept":
        return calls
    if all(ctx.known(c.name) for c in calls):
        return calls
    if unknown_tools == "keep_text":
        return None
    return [c for c in calls if ctx.known(c.name)]


# -- the pre-filter over raw bodies ---------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z0-9_:]+")


def _char_forms(ch: str, as_bytes: bool) -> str:
    """A regex for one literal character as a JSON encoder may write it: raw, ``\\uXXXX`` (``<>&``
    and non-ASCII, hex in either case), ``\\/`` or ``\\"``."""
    forms = [re.escape(ch.encode("utf-8").decode("latin-1") if as_bytes else ch)]
    if ch in "<>&" or ord(ch) > 127:
        forms.append(r"\\u" + "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in f"{ord(ch):04x}"))
    if ch in '/"':
        forms.append(re.escape("\\" + ch))
    return "(?:" + "|".join(forms) + ")"


@functools.lru_cache(maxsize=64)
def _screen(table: Table, as_bytes: bool):
    """(stems, pattern): each literal's longest ASCII word (never JSON-escaped), and every literal in
    every form a JSON encoder may write it."""
    literals = sorted(table.literals + tuple(word + anchor for word, anchor, _ in table.anchored))
    stems = {max(_WORD.findall(lit), key=len) for lit in literals}
    pattern = "|".join("".join(_char_forms(ch, as_bytes) for ch in lit) for lit in literals)
    if as_bytes:
        return tuple(stem.encode() for stem in stems), re.compile(pattern.encode("latin-1"))
    return tuple(stems), re.compile(pattern)


def may_contain_markup(data, *, formats=None) -> bool:
    """False only when no opener or marker of the enabled dialects can be in ``data`` (str or
    bytes-like, e.g. a raw response body), JSON-escaped forms included (``\\u003c``, ``\\uff5c``,
    ``\\/``…). A whole-message format has no markup to find: with one enabled, always True."""
    if isinstance(data, memoryview):
        data = data.cast("B").tobytes()
    if isinstance(data, str):
        as_bytes = False
    elif isinstance(data, (bytes, bytearray)):
        as_bytes = True
    else:
        raise TypeError(f"may_contain_markup() expects str, bytes, bytearray or memoryview, not {type(data).__name__}")
    table = table_for(formats)
    if table.whole:
        return True
    stems, pattern = _screen(table, as_bytes)
    if not any(stem in data for stem in stems):  # a fast substring search first
        return False
    return pattern.search(data) is not None
