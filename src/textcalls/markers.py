"""The one table of tool-call markup. Both scanners (Cython and the twin) are built from it.

A dialect is one or more ``Block`` kinds (opener, closer, body grammar) and the ``Marker`` literals
that wrap them. Adding a dialect is adding its entries here and its grammar in ``dialects/``.
U+FF5C is the full-width bar ``｜``; U+2581 is ``▁``.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Characters that may follow a tag opener such as ``<tool_call`` (besides end of text while streaming).
HERMES_DELIMITERS = ">| \t\n\r\f\v"
#: Whitespace, as the scanners understand it (section wrappers, "only whitespace between").
WHITESPACE = " \t\n\r\f\v"
#: How far (characters after a tag opener's literal) the ``>`` ending its attribute text may be.
ATTR_MAX = 256
#: How much whitespace may separate a section opener from the block it wraps.
SECTION_GAP_MAX = 256
#: Default cap on a block's body, in characters (``max_block``).
MAX_BLOCK = 1 << 20


@dataclass(frozen=True)
class Block:
    """A block kind: ``opener`` … ``closer``, its body read by ``grammar`` (a name in ``dialects.GRAMMARS``).

    ``delimiters``: the opener is a tag — one of these characters must follow the literal, and a ``>``
    within ATTR_MAX characters ends it (attributes between are ignored); ``None``: the literal alone.
    ``closer=None``: the block ends where the JSON value that starts the body ends (the first ``{``,
    or a ``[`` that is the body's first non-blank character).
    ``json_strings``: from the body's first ``{``, a closer inside a JSON string does not end it.
    ``strong``: meeting this opener inside another block's body makes that other block prose.
    """

    dialect: str
    opener: str
    closer: str | None
    grammar: str
    delimiters: str | None = None
    json_strings: bool = True
    strong: bool = True


@dataclass(frozen=True)
class Marker:
    """A wrapper literal that is markup only next to a block of ``dialect`` (only whitespace between):
    right before one of its openers (``before=True``) or right after the end of one (``before=False``)."""

    dialect: str
    literal: str
    before: bool


HERMES = "hermes"
DEEPSEEK = "deepseek"

HERMES_OPEN = "<tool_call"
HERMES_CLOSE = "</tool_call>"
DEEPSEEK_OPEN = "<\uff5ctool\u2581call\u2581begin\uff5c>"
DEEPSEEK_CLOSE = "<\uff5ctool\u2581call\u2581end\uff5c>"
DEEPSEEK_SECTION_OPEN = "<\uff5ctool\u2581calls\u2581begin\uff5c>"
DEEPSEEK_SECTION_CLOSE = "<\uff5ctool\u2581calls\u2581end\uff5c>"
DEEPSEEK_SEP = "<\uff5ctool\u2581sep\uff5c>"

#: Dialect names in table order, and whether each is on by default.
DIALECTS: dict[str, bool] = {HERMES: True, DEEPSEEK: True}

BLOCKS: tuple[Block, ...] = (
    Block(HERMES, HERMES_OPEN, HERMES_CLOSE, "hermes", delimiters=HERMES_DELIMITERS),
    Block(DEEPSEEK, DEEPSEEK_OPEN, DEEPSEEK_CLOSE, "deepseek"),
)

MARKERS: tuple[Marker, ...] = (
    Marker(DEEPSEEK, DEEPSEEK_SECTION_OPEN, before=True),
    Marker(DEEPSEEK, DEEPSEEK_SECTION_CLOSE, before=False),
)
