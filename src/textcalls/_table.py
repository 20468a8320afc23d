"""The enabled part of the marker table, as both scanners use it, and what happens when a block ends."""

from __future__ import annotations

import functools
import re
from contextvars import ContextVar
from typing import NamedTuple

from ._calls import placeholder, read_from
from .dialects import GRAMMARS, WHOLE_MESSAGE, Context
from .dialects.jsonlike import BARE_CALL_KEYS
from .dialects.xml import ends_in_value, finished_calls
from .markers import BLOCKS, DIALECTS, MARKERS, Block, Marker

__all__ = [
    "BARE_JSON",
    "CALLS_IN_REASONING",
    "JSON_OUTSIDE",
    "STRIPPED_CLOSERS",
    "UNKNOWN_TOOLS",
    "BareLead",
    "Note",
    "Table",
    "explaining",
    "json_proof",
    "read_bare",
    "read_block",
    "read_unterminated",
    "read_whole",
    "table_for",
    "word_tail",
]

UNKNOWN_TOOLS = ("keep_text", "drop", "accept")


class Note(NamedTuple):
    """What became of one piece of markup (``explaining``): its ``dialect``, the ``opener`` as written (its
    first 60 characters), the ``calls`` it gave and ``why``, in words."""

    dialect: str
    opener: str
    calls: list
    why: str


#: while ``explaining``: the notes of the blocks read in this context, else None (one lookup per block)
_NOTES: ContextVar[list | None] = ContextVar("textcalls_notes", default=None)


class explaining:  # (lower case: used as ``with explaining() as notes``)
    """``with explaining() as notes``: each block the shared readers decide in this context (thread, task)
    appends a ``Note`` to ``notes``. Both scanners call these readers, but the Cython scanner reads plain call
    objects in one pass without them: explain with the twin's ``scan_whole`` (``textcalls recover --explain``)."""

    def __enter__(self) -> list:
        self._notes: list = []
        self._token = _NOTES.set(self._notes)
        return self._notes

    def __exit__(self, *exc) -> None:
        _NOTES.reset(self._token)


def _note(dialect: str, opener: str, calls, why: str) -> None:
    notes = _NOTES.get()
    if notes is not None:
        notes.append(Note(dialect, opener[:60], list(calls or ()), why))


#: the ``dialect`` of a bare JSON call (``ToolCall.dialect``)
BARE_JSON = "bare_json"
CALLS_IN_REASONING = ("auto", "ignore", "extract")


class Table:
    """The blocks and markers of the enabled dialects, in table order."""

    __slots__ = (
        "blocks",
        "markers",
        "grammars",
        "literals",
        "anchored",
        "whole",
        "whole_dialects",
        "whole_starts",
        "derived",
    )

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
        self.whole_dialects = tuple(d for d in dialects if d in WHOLE_MESSAGE)
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


#: the characters a plain object (``_kernels.impl.plain_object``) has outside its strings, and the quote
#: that opens one: JSON whitespace, punctuation, the characters of numbers without exponents, and of
#: ``true``, ``false`` and ``null``
JSON_OUTSIDE = frozenset(' \t\n\r{}[],:"-.0123456789' + "truefalsn")


def json_proof(literal: str) -> bool:
    """``literal`` begins at no index of a plain object where a block body's lexer looks for literals
    (outside its strings, and at the quote that opens one): its first character is never there, or its
    second never follows the first there. Every character there is one of ``JSON_OUTSIDE`` and, but for
    the quote and the closing brace (the object's last character), is followed by one."""
    return literal[0] not in JSON_OUTSIDE or (
        literal[0] not in '"}' and len(literal) > 1 and literal[1] not in JSON_OUTSIDE
    )


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
    for grammar, dialect in zip(table.whole, table.whole_dialects, strict=True):
        calls = grammar(text, ctx)
        if calls:
            _note(dialect, text, calls, "the whole message read as calls")
            return read_from(calls, dialect)
    _note(",".join(table.whole_dialects), text, None, "the message is no whole-message call: it stays text")
    return None


def read_block(table: Table, k: int, opener: str, body: str, ctx: Context, unknown_tools: str):
    """The calls of a finished block of kind ``k``, or ``None`` when its text stays (not a call, or a
    call of a tool that was not offered while ``unknown_tools`` is ``"keep_text"``)."""
    calls = table.grammars[k](opener, body, ctx)
    dialect = table.blocks[k].dialect
    if calls:
        read_from(calls, dialect)
        if any(map(placeholder, calls)):
            _note(dialect, opener, None, "a format's description (a placeholder name or values): it stays text")
            return None
    if calls is None or not ctx.has_tools or unknown_tools == "accept":
        _note(dialect, opener, calls, _block_why(calls))
        return calls
    if all(ctx.known(c.name) for c in calls):
        _note(dialect, opener, calls, _block_why(calls))
        return calls
    unknown = sorted({c.name for c in calls if not ctx.known(c.name)})
    if unknown_tools == "keep_text":
        _note(dialect, opener, None, f"names a tool not offered ({', '.join(unknown)}): it stays text (unknown_tools)")
        return None
    _note(dialect, opener, None, f"calls of tools not offered dropped ({', '.join(unknown)}; unknown_tools)")
    return [c for c in calls if ctx.known(c.name)]


def _block_why(calls) -> str:
    if calls is None:
        return "its body is no call the dialect's grammar reads: the block stays text"
    return "read as calls" if calls else "malformed (a call's markup, no call in it): removed, no call"


#: Dialects whose closer is a special token that servers strip (``markers.Block.stripped_closer``): a block
#: of theirs that the message ends inside may be a call even without ``tools``.
STRIPPED_CLOSERS = frozenset(b.dialect for b in BLOCKS if b.stripped_closer)
#: What may be missing at the end of a block that the message ends inside: nothing (only the closer), one
#: final bracket, or the closing tags / fence of the body's own grammar after its last value closed (a value
#: is never closed: ``xml.ends_in_value``). Nothing else is ever added.
_ENDINGS = ("", "}", "]", "\n```", "</function>", "</invoke>")
_NONBLANK = re.compile(r"\S")


def read_unterminated(table: Table, k: int, opener: str, body: str, ctx: Context, truncated: bool = False):
    """The calls of a block of kind ``k`` that the message ended inside (at the end of the stream), or
    ``None`` when its text stays: its body must be a complete call but for its closer (and at most one
    final bracket or the grammar's own closing tags), and either the request's tools name every call,
    or there are no tools and the dialect's closer is a special token servers strip
    (``STRIPPED_CLOSERS``). Without tools, ``text <tool_call>{"name": "x"}`` stays text. A body that
    ends inside an XML-style value (``xml.ends_in_value``) is never a call: a cut value cannot be told
    from a complete one.

    ``truncated``: the output was cut (``max_tokens``), so the block's end was never written: it is
    removed without a call (``[]``), tools or not (its opener is markup that a finished block would have
    been read as; what it held cannot be trusted), unless the block has no closer (the message's end is
    its end), tools name its calls and its body is a call as written, with nothing added. In a block of
    several XML calls (DSML, MiniMax-M2, Step-3, Seed-OSS: ``xml.finished_calls``), the calls that ended with
    their own closing tag before the cut are kept (of offered tools, when tools are given)."""
    block = table.blocks[k]
    cut: list | None = [] if truncated else None  # what a body that is no call gives
    gone = "removed, no call (the output was cut)" if truncated else "it stays text"
    if truncated and block.closer is not None:
        # the calls of a block of several calls that ended with their own closing tags before the cut
        head = finished_calls(block.grammar, body)
        calls = None if head is None else table.grammars[k](opener, head, ctx)
        if calls and all(ctx.known(c.name) for c in calls):
            _note(block.dialect, opener, calls, "cut before its closer: the calls that ended before the cut")
            return read_from(calls, block.dialect)
        _note(block.dialect, opener, None, "cut before its closer (the output was cut): removed, no call")
        return cut
    if not ctx.has_tools and not block.stripped_closer:
        _note(block.dialect, opener, None, f"no closer before the end, and no tools to check the call: {gone}")
        return cut
    first = _NONBLANK.search(body)
    if first is not None and body[first.start()] not in "{[" and ends_in_value(body):
        _note(block.dialect, opener, None, f"the message ended inside a value, which may be cut: {gone}")
        return cut
    grammar = table.grammars[k]
    for ending in ("",) if truncated else _ENDINGS:
        calls = grammar(opener, body + ending, ctx)
        if calls:
            if any(map(placeholder, calls)):
                _note(block.dialect, opener, None, f"a format's description (a placeholder name or values): {gone}")
                return cut
            if all(ctx.known(c.name) for c in calls):
                _note(block.dialect, opener, calls, "no closer before the end: read as calls (a complete body)")
                return read_from(calls, block.dialect)
            _note(block.dialect, opener, None, f"no closer before the end, and it names a tool not offered: {gone}")
            return cut
    _note(block.dialect, opener, None, f"no closer before the end, and its body is no complete call: {gone}")
    return cut


# -- bare JSON calls when the request's tools are known (issue 8, class 3) ----------------------------

_WS = " \t\n\r\x0b\x0c"
#: what may come before a bare call (spaces and line breaks: what the gateway screens' line state reads as blank)
_BLANK = " \n\r"
_JSON_STOP = re.compile(r'["{}\[\],:]')
#: a key that no call object may have (``dialects.jsonlike.bare_calls``) makes a candidate text at once
_ENVELOPE = "tool_calls"  # OpenAI's message key around a list of calls, written as text (bare_calls)
_CALL_KEY_MAX = max(len(_ENVELOPE), *map(len, BARE_CALL_KEYS))
_STRING_STOP = re.compile(r'["\\]')
_FENCE_INFO = frozenset({"", "json", "JSON", "json5"})
_FENCE_INFO_MAX = 16
#: phases of ``BareLead``
_START, _TICKS, _INFO, _VALUE, _JSON, _AFTER, _FENCE_END, _CLOSE, _TAIL = range(9)


class BareLead:
    """Reads, incrementally, a bare JSON call of an offered tool (used by both scanners when ``tools`` are
    given; cold code: only while such a candidate is held). Two places may hold one:

    - the message's start (``tail=False``): after leading blanks, one of: a JSON value that is a call, an
      array of calls or an envelope ``{"tool_calls": [...]}`` of them (``dialects.jsonlike.bare_calls``:
      offered tools only), or several such values
      separated by ``;`` (Llama 3) or by spaces, then only spaces or tabs up to a line break or the end of the message
      (the rest, from that line break, is content); or a single markdown fence (```` ``` ```` or
      ```` ```json ````) holding such a value that is the whole message;
    - the message's end (``tail=True``): from a ``{`` or ``[`` at the start of a content line, such
      values (separated by ``;`` or line breaks) with only whitespace after them to the end.

    ``feed(delta)`` (the start) returns ``None`` while the start may still be a call, else ``(calls,
    text, consumed)``: the calls (``None``: it is not one), the text the scanner reads from here
    (everything held when not a call; the rest after the call otherwise) and how many characters the
    calls took (not a call: ``stop``). ``read(s, start)`` (the end) returns -1 while undecided, else the
    candidate is not a call. ``finish()`` decides at the end of the message. When a candidate is not a call, ``stop`` is
    how far from its first character it was read: the scanners start no other candidate before there,
    so each character is read by one candidate at most (linear). At most ``max_block`` characters are
    held: past that it is text.
    """

    __slots__ = (
        "ctx",
        "tail",
        "room",
        "phase",
        "parts",
        "seen",
        "value",
        "depth",
        "in_str",
        "esc",
        "ticks",
        "fence",
        "info",
        "calls",
        "broke",
        "stop",
        "level",
        "expect",
        "key",
    )

    def __init__(self, ctx: Context, max_block: int, tail: bool = False) -> None:
        self.ctx = ctx
        self.tail = tail
        self.room = max_block  # characters that may still be held
        self.phase = _VALUE if tail else _START
        self.parts: list = []  # everything held
        self.seen = 0  # characters held so far
        self.value: list = []  # the current JSON value's text
        self.depth = 0
        self.in_str = self.esc = False
        self.ticks = self.fence = 0
        self.info = ""
        self.calls: list = []
        self.broke = False  # tail: a line break since the last value
        self.level = 1  # the depth of a call object's keys: 1 in {...}, 2 in [{...}, ...]
        self.expect = False  # a string at that depth is a key
        self.key: list | None = None  # the text of the key being read (None: not in a key, or escaped)
        self.stop = 0  # not a call: how far from the first character it was read

    def lead(self, delta: str) -> int:
        """How many characters at the start of ``delta`` are blank before the message's first character
        (spaces and line breaks): the scanner shows them at once, they are never held. 0 once started."""
        if self.phase != _START:
            return 0
        return len(delta) - len(delta.lstrip(_BLANK))

    def feed(self, delta: str):
        self.parts.append(delta)
        n = len(delta)
        stop = min(n, self.room)
        i = self._scan(delta, 0, stop)
        if i < -1:  # not a call
            self.stop = self.seen + (-2 - i)
            return None, "".join(self.parts), self.stop
        if i == -1:  # undecided over the whole of what it may look at
            self.room -= stop
            self.seen += stop
            if stop < n:  # past max_block
                self.stop = self.seen
                return None, "".join(self.parts), self.stop
            return None
        return self.calls, delta[i:], self.seen + i

    def read(self, s: str, start: int) -> int:
        """The end (``tail``): read ``s[start:]``; -1 while undecided (``held()`` then includes it), else it
        is not a call (``stop`` says how far it was read). Nothing is copied unless it is held."""
        n = len(s)
        stop = min(n, start + self.room)
        i = self._scan(s, start, stop)
        if i < -1:
            self.stop = self.seen + (-2 - i) - start
            return self.stop
        if stop < n:  # past max_block
            self.stop = self.seen + stop - start
            return self.stop
        self.parts.append(s[start:] if start else s)
        self.room -= n - start
        self.seen += n - start
        return -1

    def held(self) -> str:
        return "".join(self.parts)

    def finish(self):
        if self.phase == _AFTER or (
            not self.tail and (self.phase == _TAIL or (self.phase == _CLOSE and self.ticks >= self.fence))
        ):
            return self.calls, "", self.seen
        self.stop = self.seen
        return None, "".join(self.parts), self.stop

    def _scan(self, s: str, i: int, end: int):
        """Read ``s[i:end]``: -1 undecided, ``-2 - k`` not a call (decided at ``s[k]``), else the index where
        the content starts (the message's start only)."""
        while i < end:
            phase = self.phase
            if phase == _JSON:
                if self.in_str:
                    if self.esc:
                        self.esc = False
                        self.value.append(s[i])
                        i += 1
                        continue
                    if self.key is None:
                        m = _STRING_STOP.search(s, i, end)
                        j = end if m is None else m.start()
                    else:  # a key of a call object: only a few are allowed, none longer than _CALL_KEY_MAX
                        had = sum(map(len, self.key))
                        stop = min(end, i + _CALL_KEY_MAX - had + 1)
                        m = _STRING_STOP.search(s, i, stop)
                        j = stop if m is None else m.start()
                        if had + j - i > _CALL_KEY_MAX:  # too long: text from its first extra character
                            return -2 - (i + _CALL_KEY_MAX - had)
                        self.key.append(s[i:j])
                        if m is not None:
                            if s[j] == '"':
                                key = "".join(self.key)
                                if key == _ENVELOPE and self.level == 1:
                                    self.level = 3  # {"tool_calls": [call, …]}: the calls' keys are checked
                                elif key not in BARE_CALL_KEYS:
                                    return -2 - j
                            self.key = None  # allowed, or escaped (bare_calls decides)
                    if m is None:
                        self.value.append(s[i:end])
                        return -1
                    if s[j] == "\\":
                        self.esc = True
                    else:
                        self.in_str = False
                    self.value.append(s[i : j + 1])
                    i = j + 1
                    continue
                m = _JSON_STOP.search(s, i, end)
                if m is None:
                    self.value.append(s[i:end])
                    return -1
                j = m.start()
                c = s[j]
                self.value.append(s[i : j + 1])
                i = j + 1
                if c == '"':
                    self.in_str = True
                    if self.expect and self.depth == self.level:
                        self.key, self.expect = [], False
                elif c == ",":
                    self.expect = self.depth == self.level
                elif c == ":":
                    self.expect = False
                elif c in "{[":
                    self.depth += 1
                    self.expect = c == "{" and self.depth == self.level
                else:
                    self.depth -= 1
                    if self.depth == 0:
                        calls = _bare_value("".join(self.value), self.ctx)
                        if calls is None:
                            return -2 - i
                        self.calls += calls
                        self.value = []
                        self.phase = _FENCE_END if self.fence else _AFTER
                continue
            c = s[i]
            if phase in (_START, _VALUE):
                if c in (_BLANK if phase == _START else _WS):
                    i += 1
                    continue
                if c in "{[":
                    self.phase, self.depth, self.value = _JSON, 1, [c]
                    self.level, self.expect = (1, True) if c == "{" else (2, False)
                    i += 1
                    continue
                if c == "`" and phase == _START:
                    self.phase, self.ticks = _TICKS, 1
                    i += 1
                    continue
                return -2 - i
            if phase == _TICKS:
                if c == "`":
                    self.ticks += 1
                    i += 1
                    continue
                if self.ticks < 3:
                    return -2 - i
                self.fence, self.phase = self.ticks, _INFO
                continue
            if phase == _INFO:
                if c == "\n":
                    if self.info.strip(_WS) not in _FENCE_INFO:
                        return -2 - i
                    self.phase = _VALUE
                elif len(self.info) >= _FENCE_INFO_MAX or c == "`":
                    return -2 - i
                else:
                    self.info += c
                i += 1
                continue
            if phase == _AFTER:
                if c in " \t":
                    i += 1
                    continue
                if self.tail:  # to the end: whitespace, or more values after ";" or a line break
                    if c in _WS:
                        self.broke = self.broke or c in "\r\n"
                    elif c == ";":
                        self.phase, self.broke = _VALUE, False
                    elif self.broke and c in "{[":
                        self.phase, self.broke = _VALUE, False
                        continue  # read again as the next value's first character
                    else:
                        return -2 - i
                    i += 1
                    continue
                if c == ";":
                    self.phase = _VALUE
                    i += 1
                    continue
                if c in "{[":  # the next value, after spaces (two calls written side by side)
                    self.phase = _VALUE
                    continue
                if c in "\r\n":
                    return i
                return -2 - i
            if phase == _FENCE_END:
                if c in _WS:
                    i += 1
                    continue
                if c == "`":
                    self.phase, self.ticks = _CLOSE, 1
                    i += 1
                    continue
                return -2 - i
            if phase == _CLOSE:
                if c == "`":
                    self.ticks += 1
                    i += 1
                    continue
                if self.ticks < self.fence:
                    return -2 - i
                self.phase = _TAIL
                continue
            # _TAIL: the fence was the whole message; only whitespace may follow
            if c in _WS:
                i += 1
                continue
            return -2 - i
        return -1


def _bare_value(text: str, ctx: Context):
    from .dialects.jsonlike import bare_calls

    calls = bare_calls(text, ctx)
    if calls is not None:
        _note(BARE_JSON, text, calls, "bare JSON calls of offered tools, alone on their lines")
    return None if calls is None else read_from(calls, BARE_JSON)


def read_bare(text: str, ctx: Context, max_block: int):
    """``BareLead`` over a whole text at once: ``(calls, rest, consumed)``, ``calls`` ``None`` when it is not
    one (``consumed`` is then its ``stop``)."""
    lead = BareLead(ctx, max_block)
    decided = lead.feed(text)
    return lead.finish() if decided is None else decided
