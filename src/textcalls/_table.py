"""The enabled part of the marker table, as both scanners use it, and what happens when a block ends."""

from __future__ import annotations

import functools

from .dialects import GRAMMARS, WHOLE_MESSAGE, Context
from .markers import BLOCKS, DIALECTS, MARKERS, Block, Marker

__all__ = [
    "Table", "table_for", "read_block", "read_unterminated", "read_whole", "word_tail", "CALLS_IN_REASONING",
    "UNKNOWN_TOOLS", "STRIPPED_CLOSERS",
]

UNKNOWN_TOOLS = ("keep_text", "drop", "accept")
CALLS_IN_REASONING = ("auto", "ignore", "extract")


class Table:
    """The blocks and markers of the enabled dialects, in table order."""

    __slots__ = ("blocks", "markers", "grammars", "literals", "anchored", "whole", "whole_starts", "derived")

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
        #: what is built from this table (the scanners' specs, the screens), by name: it lives and dies with
        #: the table, so memory stays bounded by the table cache however many format sets are used
        self.derived: dict = {}


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


#: Dialects whose closer is a special token that servers strip (``skip_special_tokens``) and whose opener
#: cannot be prose: a block of theirs that the message ends inside may be a call even without ``tools``.
#: DeepSeek is not among them: the seed's rule (an unterminated opener stays verbatim) stands for it
#: without tools; with tools, it follows the general rule.
STRIPPED_CLOSERS = frozenset({"harmony", "kimi_k2"})
#: What may be missing at the end of a block that the message ends inside: nothing (only the closer), one
#: final bracket, or the closing tags / fence of the body's own grammar. Nothing else is ever added.
_ENDINGS = ("", "}", "]", "\n```", "</parameter>\n</function>", "</function>", "</parameter></invoke>", "</invoke>")


def read_unterminated(table: Table, k: int, opener: str, body: str, ctx: Context):
    """The calls of a block of kind ``k`` that the message ended inside (at the end of the stream), or
    ``None`` when its text stays: its body must be a complete call but for its closer (and at most one
    final bracket or the grammar's own closing tags), and either the request's tools name every call,
    or there are no tools and the dialect's closer is a special token servers strip
    (``STRIPPED_CLOSERS``). Without tools, ``text <tool_call>{"name": "x"}`` stays text."""
    if not ctx.has_tools and table.blocks[k].dialect not in STRIPPED_CLOSERS:
        return None
    grammar = table.grammars[k]
    for ending in _ENDINGS:
        calls = grammar(opener, body + ending, ctx)
        if calls:
            return calls if all(ctx.known(c.name) for c in calls) else None
    return None
