"""The screens: cheap answers to "could anything here matter to the scanner?", all derived from the table.

A screen may only skip what the scanner would leave unchanged *and* leave in a state no different from
the one it is assumed to be in. Every screen here is built from the same enabled table (``_table.Table``)
and the same ``code_fences`` setting as the scrubbers it stands in front of, so a screen can never know
fewer openers, markers, word openers or fence characters than the scanner does:

- ``may_contain_markup``: a raw body (str or bytes) cannot hold any literal, raw or JSON-escaped.
- ``Screen.opens``: a content delta holds no character that can begin a literal or a fence run.
- ``Screen.untouched``: the bytes of an SSE event hold nothing a fresh choice could act on.
- ``Screen.every``: with a whole-message format or a plain-word opener, nothing may be skipped.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable

from ._table import Table, table_for

__all__ = ["Screen", "may_contain_markup", "may_hold_bare_call", "may_mark_name", "screen_for"]

FENCE = "`"  # a run of three or more at a line start opens or closes a code fence

_WORD = re.compile(r"[A-Za-z0-9_:]+")


# -- raw bodies ------------------------------------------------------------------------------------


def _char_forms(ch: str, as_bytes: bool) -> str:
    """A regex for one literal character as a JSON encoder may write it: raw, ``\\uXXXX`` (``<>&``
    and non-ASCII, hex in either case), ``\\/`` or ``\\"``."""
    forms = [re.escape(ch.encode("utf-8").decode("latin-1") if as_bytes else ch)]
    if ch in "<>&" or ord(ch) > 127:
        forms.append(r"\\u" + "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in f"{ord(ch):04x}"))
    if ch in '/"':
        forms.append(re.escape("\\" + ch))
    return "(?:" + "|".join(forms) + ")"


def _markup(table: Table, as_bytes: bool):
    """(stems, pattern): each literal's longest ASCII word (never JSON-escaped), and every literal in
    every form a JSON encoder may write it."""
    key = ("markup", as_bytes)
    found = table.derived.get(key)
    if found is None:
        literals = sorted(table.literals + tuple(word + anchor for word, anchor, _ in table.anchored))
        stems = {max(_WORD.findall(lit), key=len) for lit in literals}
        pattern = "|".join("".join(_char_forms(ch, as_bytes) for ch in lit) for lit in literals)
        if as_bytes:
            found = tuple(stem.encode() for stem in stems), re.compile(pattern.encode("latin-1"))
        else:
            found = tuple(stems), re.compile(pattern)
        table.derived[key] = found
    return found


def may_contain_markup(data: str | bytes | bytearray | memoryview, *, formats: Iterable[str] | None = None) -> bool:
    """False only when no opener or marker of the enabled dialects can be in ``data`` (str or
    bytes-like, e.g. a raw response body), JSON-escaped forms included (``\\u003c``, ``\\uff5c``,
    ``\\/``…). A whole-message format has no markup to find: with one enabled, always True.

    Code fences need no character of their own here: without a literal there is no block for a
    fence to keep as text, so such a body is unchanged by recovery whatever its backticks."""
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
    stems, pattern = _markup(table, as_bytes)
    if not any(stem in data for stem in stems):  # a fast substring search first
        return False
    return pattern.search(data) is not None


#: In a response body's JSON: a ``"content"`` string whose text, after whitespace, starts as a bare JSON
#: call (``{``, ``[``) or a fence (a backtick), or any line of which starts (after up to 3 spaces) with
#: ``{`` or ``[``, may, with ``tools``, hold a call; raw or ``\\u``-escaped.
_BARE_START = re.compile(
    rb'"content"\s*:\s*"(?:[ \t]|\\[nrt]|\\u00(?:20|09|0[aAdD]))*(?:[{\[`]|\\u00(?:7[bB]|5[bB]|60))'
)
_BARE_LINE = re.compile(rb"(?:\\n|\\u000[aA])(?: |\\u0020){0,3}(?:[{\[]|\\u00(?:7[bB]|5[bB]))")


def may_mark_name(data: bytes | bytearray) -> bool:
    """False only when no structured call's name in a raw response body can carry markup (which
    ``recover_response`` repairs): the body has no ``tool_calls`` or no ``<``, raw or JSON-escaped."""
    return b"tool_calls" in data and (b"<" in data or b"\\u003c" in data or b"\\u003C" in data)


def may_hold_bare_call(data: bytes | bytearray) -> bool:
    """False only when no ``"content"`` string of a raw response body starts (after whitespace) with
    what a bare JSON call or its fence starts with, and no line in the body starts with ``{`` or ``[``
    (with ``tools``, such a message may be or end with a call)."""
    return b'"content"' in data and (_BARE_START.search(data) is not None or _BARE_LINE.search(data) is not None)


# -- gateway streams ----------------------------------------------------------------------------------

# Characters that JSON chunks carry outside strings anyway: as the first character of a literal,
# one counts only when followed by what could continue the literal, end a string or escape.
_STRUCTURAL = frozenset('{}[]:,"_') | frozenset(string.ascii_letters + string.digits)


class Screen:
    """The gateway screens for one table, ``code_fences`` setting and bare-call reading (see ``screen_for``).

    ``starts``: every character that can begin something a scrubber acts on in content (the first
    character of each literal; the backtick when code fences are on; with ``bare`` — tools given, so
    a message may start with a bare JSON call — the backtick, ``{`` and ``[``; with ``guided`` — the
    schema-guided stage on — the line break, the backtick and fed content too). ``fences``: content
    the screens pass unchanged must still be fed to its scrubber (code fences or ``bare`` on: it
    moves the line state, or shows the message is past its start). ``opens(text)``: a search
    for one of them. ``every``: nothing may be skipped at all (a whole-message format reads every
    message from its start; a plain-word opener such as ``functools`` has no special first
    character). ``untouched(data)``: nothing in the JSON bytes of an SSE event can begin a literal
    or a fence run (raw or ``\\u``-escaped) or is a structured ``tool_calls`` entry — and, with code
    fences on, the event carries no ``"content"`` at all, since content text moves the line state
    that decides whether a later backtick run is a fence (such events are decoded and fed).
    """

    __slots__ = ("starts", "opens", "every", "fences", "untouched")

    def __init__(self, table: Table, fences: bool, bare: bool = False, guided: bool = False) -> None:
        fences = fences or bare or guided
        firsts = {literal[0] for literal in table.literals}
        if fences:
            firsts.add(FENCE)
        if bare:
            firsts.update("{[")
        if guided:  # a line break starts a line whose head the schema-guided stage must read
            firsts.add("\n")
        self.starts = "".join(sorted(firsts))
        self.opens = re.compile(f"[{re.escape(self.starts)}]" if self.starts else "(?!)").search
        self.every = bool(table.whole or table.anchored)
        self.fences = fences
        self.untouched = _untouched(table.literals, fences)


def screen_for(table: Table, fences: bool, bare: bool = False, guided: bool = False) -> Screen:
    """The screens for ``table`` with code fences on or off, bare JSON calls read (``tools`` given) or
    not, and the schema-guided stage on or not (built once per table)."""
    key = ("screen", fences, bare, guided)
    screen = table.derived.get(key)
    if screen is None:
        screen = table.derived[key] = Screen(table, fences, bare, guided)
    return screen


def _untouched(literals: tuple, fences: bool):
    """``untouched(data)`` for ``Screen``: for every first character of a literal, neither the
    character raw (or, for one JSON carries anyway, followed by a possible second character, a
    closing quote or a backslash) nor JSON-escaped (``\\u003c``); no ``tool_calls`` key, raw or with
    an escaped letter; with fences, no backtick and no ``"content"`` key either."""
    needles = [b"tool_calls"]
    keys = "tool_calls"
    if fences:
        needles += [FENCE.encode(), b'"content"']
        keys += FENCE + "content"
    patterns = []
    escaped = set(keys)
    for first in sorted({literal[0] for literal in literals}):
        escaped.add(first)
        mine = [literal for literal in literals if literal[0] == first]
        if first in _STRUCTURAL and all(len(literal) > 1 for literal in mine):
            follow = "".join(sorted({literal[1] for literal in mine} | {'"', "\\"}))
            patterns.append(re.compile(f"{re.escape(first)}[{re.escape(follow)}]".encode()).search)
        else:
            needles.append(first.encode())
    escapes = re.compile("|".join(re.escape(f"\\u{ord(c):04x}") for c in sorted(escaped)).encode(), re.IGNORECASE)

    def untouched(data) -> bool:
        for needle in needles:
            if needle in data:
                return False
        for search in patterns:
            if search(data) is not None:
                return False
        return b"\\" not in data or b"\\u" not in data or escapes.search(data) is None  # memchr first

    return untouched
