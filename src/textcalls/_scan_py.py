"""The pure-Python twin of the scanner (``_scan_c``): same functions, same answers.

The scanning rules are stated once, in docs/scanning.md; this module and
``ext/textcalls/_scan_c.pyx`` both implement them over the same table (``markers.py``) and the
tests cross-check the two.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from typing import Any

from . import _kernels_py
from ._calls import unique_ids
from ._events import CallEvents
from ._guided import Guided
from ._reasoning import Reasoning
from ._table import (
    BareLead,
    read_bare,
    read_block,
    read_unterminated,
    read_whole,
    table_for,
    word_tail,
)
from .markers import ATTR_MAX, SECTION_GAP_MAX, WHITESPACE
from .options import DEFAULT, Options, options_of
from .screens import may_contain_markup
from .toolcall import Parsed, ToolCall

__all__ = ["StreamScrubber", "hold_from", "may_contain_markup", "scan_whole"]

# what the scrubber holds at a message's start or end (``_holding``), as in the Cython scanner's Holding
#: the kernels this scanner stands with (``_scan.use``): the grammars it calls read them through ``_kernels.impl``
KERNELS = _kernels_py

NOT_HOLDING = 0  # nothing: the scanner reads every delta
WHOLE_BLANK = 1  # a whole-message format is enabled and the message has been only whitespace so far
WHOLE_HELD = 2  # holding a message that may be one whole-message call (json_message …)
BARE_LEAD = 3  # with tools: holding the message's start, a possible bare JSON call (_table.BareLead)
BARE_TAIL = 4  # with tools: holding a possible bare JSON call from a line start to the end

_STRING_STOP = re.compile(r'["\\]')
_NEVER = 1 << 62  # "poisoned until the end of the stream"


def hold_from(text: str, *, formats: Iterable[str] | None = None) -> int:
    """Index from which ``text`` must be held back because it may begin an opener; ``len(text)`` if none.

    (1) the first tag opener (``<tool_call``) followed by end of text or one of its delimiters with no
    ``>`` after it and fewer than ATTR_MAX characters after it; else (2) the start of the longest
    suffix that is a proper prefix of an opener or marker literal; else (3) ``len(text)``.
    """
    if not isinstance(text, str):
        raise TypeError(f"hold_from() expects str, not {type(text).__name__}")
    spec = _spec(table_for(formats))
    n = len(text)
    last_gt = text.rfind(">")
    first = n
    for lit, delims in spec.tags:
        i = text.find(lit, max(last_gt - len(lit) + 1, n - ATTR_MAX - len(lit), 0))
        while 0 <= i < first:
            j = i + len(lit)
            if j > last_gt and n - j < ATTR_MAX and (j == n or text[j] in delims):
                first = i
                break
            i = text.find(lit, i + 1)
    if first < n:
        return first
    first = word_tail(spec.table, text, 0)
    for k in range(max(0, n - spec.longest + 1), first):
        if text[k] in spec.by_first:
            tail = text[k:]
            if any(len(tail) < len(lit) and lit.startswith(tail) for lit in spec.literals):
                return k
    return first


def scan_whole(text: str, options: Options, truncated: bool = False) -> Parsed:
    """``parse``'s pass: the ``Parsed`` of ``text`` fed to a ``StreamScrubber(options=options)`` whole and
    flushed (``flush(truncated)``); a text with none of ``options.quiet`` is all content, without a scrubber.
    ``TypeError`` for a ``text`` not a ``str``."""
    if not isinstance(text, str):
        raise TypeError(f"parse() expects str, not {type(text).__name__}")
    if options.quiet is not None and not any(char in text for char in options.quiet):
        return Parsed(text if options.trim_blanks else text.strip(), [], 0, "", 0)
    scrubber = StreamScrubber(options=options)
    content = scrubber.feed(text) + scrubber.flush(truncated)
    reasoning = scrubber.take_reasoning()
    if not options.trim_blanks:  # (with it, the scrubber dropped the blanks that were markup's)
        content, reasoning = content.strip(), reasoning.strip()
    return Parsed(content, scrubber.calls, scrubber.removed, reasoning, scrubber.malformed)


class _Spec:
    """A table, arranged for scanning: literals by first character, longest first."""

    def __init__(self, table) -> None:
        self.table = table
        self.literals = table.literals
        self.longest = max(map(len, self.literals), default=1)
        entries = [(b.opener, "block", k) for k, b in enumerate(table.blocks) if b.anchor is None]
        entries += [(m.literal, "marker", k) for k, m in enumerate(table.markers)]
        self.by_first: dict = {}
        for entry in sorted(entries, key=lambda e: -len(e[0])):
            self.by_first.setdefault(entry[0][0], []).append(entry)
        # the same by first two characters (those of one character in each list of theirs, in order; a pair
        # that begins no literal of two or more has only those, in by_one): the literals that can match at an
        # index with two characters of text from it, those of ``by_first`` that do not being skipped unread
        self.by_one: dict = {c: [e for e in es if len(e[0]) == 1] for c, es in self.by_first.items()}
        self.by_two: dict = {}
        for es in self.by_first.values():
            for pair in {e[0][:2] for e in es if len(e[0]) > 1}:
                self.by_two[pair] = [e for e in es if e[0].startswith(pair) or len(e[0]) == 1]
        self.strong: dict = {}
        for b in sorted((b for b in table.blocks if b.strong), key=lambda b: -len(b.opener)):
            self.strong.setdefault(b.opener[0], []).append((b.opener, b.delimiters))
        self.tags = [(b.opener, b.delimiters) for b in table.blocks if b.delimiters is not None]
        self.anchors: dict = {}  # anchor character -> [(word, block kind)]
        for word, anchor, k in table.anchored:
            self.anchors.setdefault(anchor, []).append((word, k))
        self.first_chars = tuple(sorted(set(self.by_first) | set(self.anchors)))
        self.strong_first = re.compile("[" + re.escape("".join(self.strong)) + "]" if self.strong else "(?!)")
        self.openers_of: dict[str, list[str]] = {}
        for b in table.blocks:
            self.openers_of.setdefault(b.dialect, []).append(b.opener)
        # inside a value tag _lex stops at "<" (every value tag's and closer's first character) and the strong
        # openers' first characters; outside, in a reasoning span, at the span closers' (a block there ends
        # at one: it is prose)
        self.value_stop = re.compile("[" + re.escape("".join(sorted({"<", *self.strong}))) + "]")
        self.span_closers: dict = {}
        for m in sorted((m for m in table.markers if m.reasoning < 0), key=lambda m: -len(m.literal)):
            self.span_closers.setdefault(m.literal[0], []).append(m.literal)


def _spec(table) -> _Spec:
    spec = table.derived.get("py_spec")
    if spec is None:
        spec = table.derived["py_spec"] = _Spec(table)
    return spec


def _find_first(chars, s: str, start: int, end: int) -> int:
    """Index of the first of ``chars`` in ``s[start:end]``, or -1."""
    best = -1
    for c in chars:
        i = s.find(c, start, end if best < 0 else best)
        if i >= 0:
            best = i
    return best


def _search(pattern, s: str, p: int, end: int) -> int:
    m = pattern.search(s, p, end)
    return -1 if m is None else m.start()


def _match(s: str, i: int, lit: str) -> int:
    """1 if ``lit`` starts at ``s[i]``; -1 if ``s`` ends inside a prefix of it; else 0."""
    if s.startswith(lit, i):
        return 1
    if len(s) - i < len(lit) and lit.startswith(s[i:]):
        return -1
    return 0


def _opener_at(spec: _Spec, s: str, i: int, final: bool, own=None) -> int:
    """1 if a strong opener, or ``own`` (the open block's opener), starts at ``s[i]`` (a tag one with
    its delimiter); -1 undecided; else 0."""
    undecided = False
    candidates = spec.strong.get(s[i], ())
    if own is not None and own[0][0] == s[i]:
        candidates = (*candidates, own)
    for lit, delims in candidates:
        r = _match(s, i, lit)
        if r == -1:
            undecided = True
        elif r == 1:
            j = i + len(lit)
            if delims is None or (j < len(s) and s[j] in delims):
                return 1
            if j == len(s):
                undecided = True
    return -1 if undecided and not final else 0


def _value_tag(s: str, i: int, opening: str, head_end: str, final: bool) -> int:
    """Where the value starts when a value tag (``opening``, its head up to ``head_end``: ``Block.values``)
    starts at ``s[i]``; -1 when none does; -2 undecided (``s`` ends first)."""
    r = _match(s, i, opening)
    if r == -1:
        return -1 if final else -2
    if r == 0:
        return -1
    j = i + len(opening)
    if opening[-1] == ">":
        return j
    m = _HEAD_STOP.search(s, j, min(len(s), j + ATTR_MAX))
    if m is None:
        return -2 if len(s) < j + ATTR_MAX and not final else -1
    k = m.start()
    if head_end == ">":
        return k + 1 if s[k] == ">" else -1
    r = _match(s, k, head_end) if s[k] == "<" else 0
    if r == -1:
        return -1 if final else -2
    return k + len(head_end) if r == 1 else -1


_HEAD_STOP = re.compile("[<>]")


#: A closing marker cut at the stream's end is markup only when it is at least this long (``_cut_closer``)
CUT_CLOSER_MIN = 8


def _line_after(line: int, text: str, start: int = 0, end: int = -1) -> int:
    """The line state after ``text[start:end]`` (``end`` -1: its end), from ``line`` before it: how many
    spaces (0-3) the current line has had and nothing else, or -1. Only the end of it is read."""
    spaces = 0
    for k in range((len(text) if end < 0 else end) - 1, start - 1, -1):
        c = text[k]
        if c == "\n":
            return spaces
        if c != " " or spaces == 3:
            return -1
        spaces += 1
    return line + spaces if line >= 0 and line + spaces <= 3 else -1


def _all_ws(text: str) -> bool:
    return not text.strip(WHITESPACE)


class StreamScrubber:
    """Remove tool-call blocks from a text arriving in deltas; collect the calls they hold.

    ``feed(delta)`` returns the text that is safe to show now; ``flush()`` ends the stream and
    returns the rest. Whatever the splitting, ``(feeds + flush).strip() == parse(text).content``
    and ``calls`` equal ``parse(text).calls``. With ``trim_blanks=True``, ``feeds + flush ==
    parse(text).content`` exactly: blanks (``WHITESPACE``) that touch a removed block or marker at the
    content's edges are the markup's (the templates write them around it): a run of them is held from
    the last visible character shown and dropped when a removal came before the content's first visible
    character, or after its last; else it is shown with the next visible character (or at the end). A
    run longer than ``max_block`` is shown. In a reasoning span, the blanks at its start and before its
    closer are dropped the same way. ``removed`` counts blocks and markers removed;
    ``malformed`` the blocks removed from the content that gave no call (malformed, or every call dropped).
    The keywords are ``parse``'s (``max_block``, ``formats``, ``tools``, ``unknown_tools``,
    ``calls_in_reasoning``, ``code_fences``, ``reasoning_started``), or ``options=`` an ``Options``
    holding them, checked once and shared between scrubbers. With ``stream_arguments=True``,
    ``take_events()`` gives the calls' events as their bodies arrive (``_events``); ``abandoned``
    counts the calls that started and were abandoned.
    """

    __slots__ = (
        "calls",
        "_ids",
        "_guided",
        "_in_code",
        "removed",
        "malformed",
        "max_block",
        "_spec",
        "_ctx",
        "_unknown",
        "_held",
        "_closed",
        "_truncated",
        "_pos",
        "_after_block",
        "_poison_until",
        "_opener",
        "_kind",
        "_closer",
        "_json_end",
        "_parts",
        "_body_len",
        "_opened_at",
        "_before_json",
        "_poisoned",
        "_in_str",
        "_esc",
        "_value",
        "_raw_at",
        "_raw_close",
        "_depth",
        "_at_start",
        "_holding",
        "_whole_parts",
        "_whole_len",
        "_bare",
        "_reasoning",
        "_reasoning_out",
        "_thought",
        "_fences",
        "_fence",
        "_line",
        "_busy",
        "_trail",
        "_lines",
        "_firsts",
        "_bare_stop",
        "_follow",
        "_follow_from",
        "_follow_len",
        "_follow_wants",
        "_trim",
        "_blank",
        "_blank_len",
        "_loose",
        "_seen",
        "_snap",
        "_rblank",
        "_rblank_len",
        "_rloose",
        "_rseen",
        "_mute",
    )

    def __init__(self, *, options: Options | None = None, **keywords: Any) -> None:
        if options is None:
            options = Options(**keywords) if keywords else DEFAULT
        elif keywords or not isinstance(options, Options):
            options = options_of({"options": options, **keywords})  # raises the error
        self._spec = _spec(options.table)
        self._ctx = options.ctx
        self._unknown = options.unknown_tools
        max_block = options.max_block
        reasoning_started = options.reasoning_started
        calls_in_reasoning = options.calls_in_reasoning
        code_fences = options.code_fences
        self.calls: list[ToolCall] = []
        self._ids: set[str] = set()  # the ids of calls, each once (unique_ids)
        self.removed = 0
        self.malformed = 0  # blocks removed from the content that gave no call
        self.max_block = max_block
        self._held = ""  # unresolved text: a candidate opener, or a block body's undecided tail
        self._closed = False
        self._truncated = False  # flush(truncated=True): the output was cut
        self._busy = threading.Lock()  # held while a call runs: a second one at the same time raises (_enter)
        self._pos = 0  # stream offset of _held[0]
        self._after_block = None  # dialect of the block that ended with only whitespace since
        self._poison_until = 0  # blocks opening before this offset are scanned without JSON-string awareness
        self._opener: str | None = None  # inside a block: the opener's text; None outside
        self._kind = 0  # inside a block: its kind (index in the table's blocks)
        self._closer = ""  # inside a block: its closer ("" for one that ends with its JSON value)
        self._json_end = False  # inside a block: it ends where its JSON value ends
        self._parts: list = []  # inside a block: its body so far
        self._body_len = 0
        self._opened_at = 0  # inside a block: the stream offset of its opener
        self._before_json = True  # inside a block: its JSON value (the first `{`, or a leading `[`) has not begun
        self._poisoned = False  # inside a block: scanned without JSON-string awareness (see _poison_until)
        self._in_str = False  # inside a block's JSON: in a string
        self._esc = False  # ... right after a backslash in one
        self._value = -1  # inside a block's value tag (Block.values): the pair's index; -1 outside one
        self._raw_at = -1  # ... the body offset of the first closer or opener inside it (-1: none yet)
        self._raw_close = False  # ... and whether that is the closer (else an opener)
        self._depth = 0  # inside a block that ends with its JSON value: the bracket depth
        self._at_start = True  # inside a block: no non-blank character of its body seen yet
        # what is held at a message's start or end (NOT_HOLDING, WHOLE_BLANK, WHOLE_HELD, BARE_LEAD, BARE_TAIL)
        self._holding = WHOLE_BLANK if self._spec.table.whole else NOT_HOLDING
        self._whole_parts: list = []
        self._whole_len = 0
        # with tools, a message that starts with a bare JSON call of an offered tool (_table.BareLead)
        self._bare: BareLead | None = None
        if self._ctx.has_tools and not self._holding and not reasoning_started and not options.prompt_tail:
            self._bare = BareLead(self._ctx, max_block)
            self._holding = BARE_LEAD
        # with tools, content that ends with bare JSON calls from a line start: 4 = holding such a candidate
        self._trail = self._ctx.has_tools
        # with _trail, "{" and "[" too (each searched once: "[" may begin a literal already)
        extra = tuple(c for c in "{[" if c not in self._spec.first_chars) if self._trail else ()
        self._firsts = self._spec.first_chars + extra
        self._bare_stop = 0  # no bare-call candidate starts before this offset (an earlier one read there)
        self._reasoning = reasoning_started  # inside a reasoning span
        # the reasoning text not yet taken, and the blocks of spans until decided (shared code)
        self._thought = Reasoning(calls_in_reasoning, max_block)
        self._reasoning_out = self._thought.out  # the same list, for the hot path
        self._fences = code_fences  # markup inside a markdown code fence (in content) is text
        self._fence = False  # inside a fence
        self._in_code = False  # inside an inline code span (`…`) in content, on its line
        self._line = 0  # the current content line's leading spaces (0-3) if it has had nothing else, else -1
        self._lines = code_fences or self._trail  # _line is followed
        # with stream_arguments, the call events of JSON-bodied blocks (shared code)
        self._follow = CallEvents(self.calls, self._ids, self._ctx, self._unknown) if options.stream_arguments else None
        # the body the call events have not seen: from this index of _parts on, this long; seen once this long
        self._follow_from = self._follow_len = self._follow_wants = 0
        # content blanks held since the last visible character shown (_show), how long; shown at once (too long)
        self._trim = options.trim_blanks  # blanks that touch markup at the edges are its (_show, _think)
        self._blank: list[str] = []
        self._blank_len = 0
        self._loose = False
        self._seen = False  # a visible content character was shown
        self._snap = 0  # removed, when the last one was
        self._rblank: list[str] = []  # the same in a reasoning span (_think)
        self._rblank_len = 0
        self._rloose = False
        self._rseen = False
        self._mute = 0  # characters of the prompt tail still held: not shown if its markup turns out text
        if options.prompt_tail:
            self._prime(options.prompt_tail)
        # with tools: the schema-guided stage over the content (shared code; None once a dialect rule found a call)
        self._guided: Guided | None = Guided(self._ctx, max_block, code_fences) if options.guided else None

    def _prime(self, tail: str) -> None:
        """Read ``prompt_tail`` as the text before the output, then forget all it gave: nothing of it is shown.
        ValueError unless it is markup of the enabled dialects read whole (none of it would be shown)."""
        if self._feed(tail) or (self._held and self._held not in self._spec.table.literals):
            raise ValueError(f"prompt_tail must be markup of the enabled dialects, none of it text: {tail!r}")
        self._reasoning_out.clear()
        self.calls.clear()
        self.removed = self.malformed = self._snap = 0
        self._blank.clear()
        self._blank_len, self._loose, self._seen = 0, False, False
        if self._follow is not None:
            self._follow.take()
        self._mute = len(self._held) + (0 if self._opener is None else len(self._opener) + self._body_len)

    def _muted(self, text: str) -> str:
        """Content ``text`` without what is left of the prompt tail (a block it opened that was no call); once
        something was removed, the tail was markup: nothing to take out."""
        if self.removed:
            self._mute = 0
            return text
        k = min(self._mute, len(text))
        self._mute -= k
        return text[k:]

    def _enter(self) -> None:
        """Mark a call as running; RuntimeError if one already is (the scrubber is shared between threads).
        TypeError if ``__init__`` was not run (``StreamScrubber.__new__``)."""
        try:
            busy = self._busy
        except AttributeError:
            raise TypeError("StreamScrubber.__init__ was not run: the scrubber has no settings") from None
        if not busy.acquire(False):
            raise RuntimeError(
                "a StreamScrubber was called from two threads at once: use one scrubber "
                "per stream, from one thread at a time"
            )

    def take_reasoning(self) -> str:
        """The reasoning text (``<think>`` spans, markers removed) produced since the last call."""
        self._enter()
        out = self._reasoning_out  # _thought.out: taken here, inline (once per delta)
        text = "".join(out)
        out.clear()
        self._busy.release()
        return text

    def take_events(self) -> list[tuple]:
        """The call events since the last call (``_events``: ``started``, ``arguments``, ``ended``,
        ``abandoned``); always ``[]`` without ``stream_arguments``."""
        self._enter()
        events = [] if self._follow is None else self._follow.take()
        self._busy.release()
        return events

    @property
    def abandoned(self) -> int:
        """Calls whose events started and that were then abandoned (0 without ``stream_arguments``)."""
        return 0 if self._follow is None else self._follow.abandoned

    @property
    def guided_quiet(self) -> bool:
        """True when a delta without a line break would go through the schema-guided stage unchanged (the
        stage off, or inside a line whose head is decided, nothing held): what gateway screens test."""
        return self._guided is None or self._guided.quiet

    def feed(self, delta: str) -> str:
        """Take the next delta; return the text that can be shown now."""
        self._enter()
        try:
            text = self._feed(delta)
            return text if self._guided is None else self._guided_text(text)
        finally:
            self._busy.release()

    def flush(self, truncated: bool = False) -> str:
        """End the stream: return everything still held, blocks removed (no trimming). ``truncated``: the
        output was cut (``max_tokens``): a block the stream ended inside is no call (see ``read_unterminated``)."""
        if not isinstance(truncated, bool):
            raise TypeError(f"truncated must be a bool, not {type(truncated).__name__}")
        self._enter()
        try:
            self._truncated = truncated
            text = self._flush()
            if self._trim:
                text += self._edges_end()
            return text if self._guided is None else self._guided_end(text, truncated)
        finally:
            self._busy.release()

    def _guided_text(self, text: str) -> str:
        """The content ``text`` through the schema-guided stage: off (all it held shown) once a call was taken."""
        guided = self._guided
        assert guided is not None
        if self.calls:
            self._guided = None
            return guided.release() + text
        if guided.quiet and "\n" not in text:
            return text  # what the stage would give (quiet: inside a line, nothing held)
        return guided.text(text)

    def _guided_end(self, text: str, truncated: bool) -> str:
        guided = self._guided
        assert guided is not None
        self._guided = None
        if self.calls:
            return guided.release() + text
        text, calls = guided.end(text, truncated)
        if calls:
            self.calls.extend(unique_ids(calls, self._ids))
            self.removed += len(calls)
        return text

    def _feed(self, delta: str) -> str:
        if not isinstance(delta, str):
            raise TypeError(f"feed() expects str, not {type(delta).__name__}")
        if self._closed:
            raise ValueError("feed() after flush(): the stream has ended")
        if self._holding:
            return self._feed_held(delta)
        if (
            not self._held
            and self._opener is None
            and not self._reasoning
            and not any(c in delta for c in self._firsts)
            and not (self._fences and ("`" in delta or self._in_code))
            and not (self._spec.table.anchored and word_tail(self._spec.table, delta, 0) < len(delta))
        ):
            if self._after_block is not None and not _all_ws(delta):
                self._after_block = None
            if self._lines:
                self._line = _line_after(self._line, delta)
            self._pos += len(delta)
            if self._trim and (
                self._blank or self._loose or not self._seen or self._snap != self.removed or delta[-1:] in WHITESPACE
            ):
                out: list = []
                self._show(out, delta)
                return "".join(out)
            return delta
        return self._run(self._held + delta, False)

    def _flush(self) -> str:
        if self._closed:
            return ""
        if self._holding in (BARE_LEAD, BARE_TAIL):  # a held bare call's candidate: calls, or text
            assert self._bare is not None  # BARE_LEAD and BARE_TAIL hold one
            return self._bare_done(self._bare.finish()) + self._flush()
        if self._holding:
            text, holding = "".join(self._whole_parts), self._holding == WHOLE_HELD
            self._holding, self._whole_parts = NOT_HOLDING, []
            calls = read_whole(self._spec.table, text, self._ctx) if holding else None
            if calls:
                self.calls.extend(unique_ids(calls, self._ids))
                self.removed += 1
                self._closed = True
                return ""
            if holding and self._ctx.has_tools:  # a bare call of an offered tool, maybe followed by content
                return self._bare_done(read_bare(text, self._ctx, self.max_block)) + self._flush()
            return self._feed(text) + self._flush()
        self._closed = True
        out = "" if self._opener is None and not self._held else self._run(self._held, True)
        if self._rblank:  # blanks that end a span never closed are its text
            self._reason("".join(self._rblank))
            self._span(False)
        # a span never closed, or blocks that ended one and no call after: they were meant
        self._take(self._thought.end())
        return out

    def _feed_held(self, delta: str) -> str:
        """Hold a message that may be only a call (whole-message formats) — at most ``max_block``
        characters; anything else goes on to the scanner."""
        if self._holding == BARE_TAIL:  # a candidate bare call at a line start
            assert self._bare is not None
            r = self._bare.read(delta, 0)
            if r < 0:
                return ""
            text = self._bare.held() + delta
            self._holding, self._bare = NOT_HOLDING, None
            self._bare_stop = self._pos + r
            return self._run(text, False)
        if self._holding == BARE_LEAD:
            assert self._bare is not None
            blank = self._bare.lead(delta)
            shown = ""
            if blank:  # blanks before the message's first character are shown at once, never held
                self._holding = NOT_HOLDING
                shown = self._feed(delta[:blank])
                self._holding = BARE_LEAD
                delta = delta[blank:]
                if not delta:
                    return shown
            decided = self._bare.feed(delta)
            return shown if decided is None else shown + self._bare_done(decided)
        self._whole_parts.append(delta)
        self._whole_len += len(delta)
        if self._holding == WHOLE_BLANK:
            start = delta.lstrip(WHITESPACE)
            if not start:
                return ""
            self._holding = WHOLE_HELD if start[0] in self._spec.table.whole_starts else NOT_HOLDING
        if self._holding == WHOLE_HELD and self._whole_len <= self.max_block:
            return ""
        text = "".join(self._whole_parts)
        self._holding, self._whole_parts = NOT_HOLDING, []
        return self._feed(text)

    def _bare_done(self, decided) -> str:
        """A bare call's candidate decided: its calls taken, the text after it (or all, if not a call) scanned."""
        calls, text, consumed = decided
        self._holding, self._bare = NOT_HOLDING, None
        if calls:
            self._take_bare(calls)
            self._pos += consumed
        else:
            self._bare_stop = self._pos + consumed
        return self._feed(text)

    def _take_bare(self, calls: list) -> None:
        self._thought.settle(False)  # the content calls a tool: the calls that ended a span were rehearsals
        self.calls.extend(unique_ids(calls, self._ids))
        self.removed += 1

    def _tail_at(self, s: str, i: int, base: int, final: bool) -> int:
        """``s[i]``, a ``{`` or ``[`` at a content line's start (tools given), may begin bare calls that
        end the message: -1 when it holds the rest of ``s`` (or, at the end, took it as calls); else it
        is not one, and no candidate starts before ``base + i`` + the returned length."""
        reader = BareLead(self._ctx, self.max_block, True)
        r = reader.read(s, i)
        if r < 0:
            if not final:
                self._bare, self._holding = reader, BARE_TAIL
                self._held, self._pos = "", base + i
                return -1
            calls, _, r = reader.finish()
            if calls:
                self._take_bare(calls)
                self._held, self._pos = "", base + len(s)
                return -1
        self._bare_stop = base + i + r
        return r

    # -- the state machine --------------------------------------------------------------------

    def _emit(self, out: list, text: str) -> None:
        if self._mute and not self._reasoning:
            text = self._muted(text)
        if text:
            if not self._reasoning:
                if self._trim and (
                    self._blank or self._loose or not self._seen or self._snap != self.removed or text[-1] in WHITESPACE
                ):
                    self._show(out, text)
                else:
                    out.append(text)
                if self._lines:
                    self._line = _line_after(self._line, text)
            elif self._trim:
                self._think(text)
            else:
                self._reason(text)
            if self._after_block is not None and not _all_ws(text):
                self._after_block = None

    def _show(self, out: list, text: str) -> None:
        """Content text out, its blanks at the edges held (the rule in the class doc)."""
        end = len(text.rstrip(WHITESPACE))
        if self._loose:  # a run too long to hold: shown as it comes
            if not end:
                out.append(text)
                return
            self._loose = False
            start = 0
        else:
            start = len(text) - len(text.lstrip(WHITESPACE)) if end else len(text)
            if self._blank_len + start > self.max_block:  # too long to hold
                out.extend(self._blank)
                out.append(text[:start])
                self._blank.clear()
                self._blank_len, self._loose = 0, not end
                if not end:
                    return
                text, end, start = text[start:], end - start, 0
            elif not end:
                self._blank.append(text)
                self._blank_len += start
                return
        if self._blank or start:
            if self._seen or self._snap == self.removed:  # text before, or nothing removed since the start
                out.extend(self._blank)
                out.append(text[:end])
            else:
                out.append(text[start:end])
            self._blank.clear()
        else:
            out.append(text if end == len(text) else text[:end])
        self._seen, self._snap = True, self.removed
        self._blank_len = len(text) - end
        if self._blank_len > self.max_block:  # too long to hold
            out.append(text[end:])
            self._blank_len, self._loose = 0, True
        elif self._blank_len:
            self._blank.append(text[end:])

    def _edges_end(self) -> str:
        """At the end: the held content blanks, unless a removal came after the last visible character; the
        held blanks of a span never closed are its reasoning."""
        text = "" if self._snap != self.removed else "".join(self._blank)
        self._blank.clear()
        self._blank_len = 0
        return text

    def _think(self, text: str) -> None:
        """Reasoning text out: the blanks at the span's start dropped, those after its last visible character
        held (dropped at its closer; longer than ``max_block``: shown)."""
        end = len(text.rstrip(WHITESPACE))
        if not end:
            if self._rloose:
                self._reason(text)
            elif self._rseen:
                self._rblank.append(text)
                self._rblank_len += len(text)
                if self._rblank_len > self.max_block:
                    self._reason("".join(self._rblank))
                    self._rblank.clear()
                    self._rblank_len, self._rloose = 0, True
            return
        if self._rloose or (self._rseen and not self._rblank):
            head = text[:end]
        elif self._rseen:
            self._rblank.append(text[:end])
            head = "".join(self._rblank)
            self._rblank.clear()
        else:
            head = text[:end].lstrip(WHITESPACE)
        self._rseen, self._rloose = True, False
        self._rblank_len = len(text) - end
        if self._rblank_len > self.max_block:  # too long to hold
            head += text[end:]
            self._rblank_len, self._rloose = 0, True
        elif self._rblank_len:
            self._rblank.append(text[end:])
        self._reason(head)

    def _span(self, opens: bool) -> None:
        """A reasoning span opens or closes: the blanks held before it are dropped."""
        self._rblank.clear()
        self._rblank_len, self._rloose = 0, False
        if opens:
            self._rseen = False

    def _reason(self, text: str) -> None:
        if self._thought.deferred is None:
            self._reasoning_out.append(text)
        else:
            self._thought.text(text)

    def _take(self, blocks: list[list[ToolCall]]) -> None:
        """Take the call lists of blocks the reasoning decided were meant."""
        for calls in blocks:
            self.calls.extend(unique_ids(calls, self._ids))
            self.removed += 1

    def _run(self, s: str, final: bool) -> str:
        out: list = []
        base = self._pos  # stream offset of s[0]
        p = 0
        while True:
            if self._opener is not None:
                kind, q = self._lex(s, p, final)
                if kind == "more":
                    piece = s[p:q]
                    self._parts.append(piece)
                    if self._follow is not None:
                        self._follow_len += q - p
                        # (not past a closer or opener inside a value that may never close: see "raw")
                        if self._follow_len >= self._follow_wants and self._raw_at < 0:
                            self._follow_wants = self._follow.body("".join(self._parts[self._follow_from :]))
                            self._follow_from, self._follow_len = len(self._parts), 0
                    self._body_len += q - p
                    self._held = s[q:]
                    self._pos = base + q
                    return "".join(out)
                if kind == "close":
                    end = q + len(self._closer)
                    if self._follow is not None and self._follow_len + q - p >= self._follow_wants:
                        self._follow.body("".join(self._parts[self._follow_from :]) + s[p:q])
                    self._finish("".join(self._parts) + s[p:q], out, s[q:end])
                    p = end
                    continue
                if kind == "prose":  # another opener, or a first character the block cannot start with
                    self._emit(out, self._opener + "".join(self._parts) + s[p:q])
                    self._opener = None
                    if self._follow is not None:
                        self._follow.drop()
                    p = q
                    continue
                if kind == "raw":  # a value that never closed: the first closer or opener inside it decides
                    r = self._raw_at
                    at = p + r - self._body_len  # its index in s: scanning goes on in s, nothing of it copied
                    if at < p:  # met in an earlier delta: the body's text from it goes back in front of s (a delta)
                        held = "".join(self._parts)
                        head, s, base, at = held[:r], held[r:] + s[p:], self._opened_at + len(self._opener) + r, 0
                    else:
                        head = "".join(self._parts) + s[p:at]
                    if self._raw_close:
                        self._finish(head, out, self._closer)
                        p = at + len(self._closer)
                    else:
                        self._emit(out, self._opener + head)
                        self._opener = None
                        if self._follow is not None:
                            self._follow.drop()
                        p = at
                    continue
                body = "".join(self._parts) + s[p:]
                gbody = self._opened_at + len(self._opener)
                # No closer outside a JSON string (or a value) within the cap: the first raw closer ends the block.
                # At the end of the text, only one inside a string that never closed: every other is data.
                self._poison_until = max(self._poison_until, _NEVER if kind == "end" else gbody + self.max_block + 1)
                closer = self._closer
                data = self._json_end or (kind == "end" and not self._in_str)
                c = -1 if data else body.find(closer, 0, self.max_block + len(closer))
                calls = None
                if c < 0 and kind == "end":  # the message ended inside the block: a call if complete
                    calls = read_unterminated(
                        self._spec.table, self._kind, self._opener, body, self._ctx, self._truncated
                    )
                if c >= 0:
                    self._finish(body[:c], out, closer)
                    s, base = body[c + len(closer) :], gbody + c + len(closer)
                elif calls is not None:
                    self._finish(body, out, "", calls)
                    s, base = "", gbody + len(body)
                else:
                    self._emit(out, self._opener[0])
                    s, base = self._opener[1:] + body, self._opened_at + 1
                    self._opener = None
                    if self._follow is not None:
                        self._follow.drop()
                p = 0
                continue
            p = self._outside(s, p, base, final, out)
            if p < 0:
                return "".join(out)

    def _outside(self, s: str, p: int, base: int, final: bool, out: list) -> int:
        """Scan prose from ``p``. Returns the body start of a block it opened, or -1 when done."""
        n = len(s)
        search = p
        while True:
            fences = self._fences and not self._reasoning
            if fences and self._fence:  # inside a code fence only its end matters
                i = s.find("`", search)
            elif fences and self._in_code:  # inside an inline code span: its end, or the line's
                i = _find_first(self._firsts + ("`", "\n"), s, search, n)
                if i >= 0 and s[i] == "\n":
                    self._in_code = False
                    search = i + 1
                    continue
            else:
                i = _find_first(self._firsts + ("`",) if fences else self._firsts, s, search, n)
            if i >= 0 and s[i] == "`":
                j = i
                while j < n and s[j] == "`":
                    j += 1
                if j == n and not final:
                    self._emit(out, s[p:i])  # a run that may still grow (a fence, or a span's delimiter)
                    self._held, self._pos = s[i:], base + i
                    return -1
                if j - i >= 3 and _line_after(self._line, s, p, i) >= 0:
                    self._fence = not self._fence  # a fence opens or closes; the backticks stay
                    self._in_code = False
                elif j - i < 3 and not self._fence:  # an inline code span opens or closes: markup in it is text
                    self._in_code = not self._in_code
                search = j
                continue
            if i < 0:
                t = n if final else word_tail(self._spec.table, s, p)  # a word opener's start is held
                self._emit(out, s[p:t])
                self._held, self._pos = s[t:], base + t
                return -1
            if s[i] in "{[" and self._trail:  # bare calls that end the message, from a line start
                if not self._reasoning and base + i >= self._bare_stop and _line_after(self._line, s, p, i) >= 0:
                    self._emit(out, s[p:i])
                    p = i
                    if self._tail_at(s, i, base, final) < 0:
                        return -1
                if s[i] not in self._spec.first_chars:  # not a call, nor the start of a literal
                    search = i + 1
                    continue
            kind, a, b = self._candidate(s, i, p, final)
            if kind == "hold":
                self._emit(out, s[p:i])
                self._held, self._pos = s[i:], base + i
                return -1
            if kind == "prose":
                search = a
                continue
            if fences and self._in_code:  # a literal inside an inline code span: text
                search = i + 1
                continue
            if kind == "marker":
                self._emit(out, s[p:i])
                self.removed += 1
                self._after_block = None
                self._line = -1
                switch = self._spec.table.markers[a].reasoning
                if switch < 0 and self._reasoning:
                    self._thought.close_span()
                    self._reasoning = False
                    self._span(False)
                elif switch > 0:
                    self._take(self._thought.settle(True))  # reasoning again, no call in between: they were meant
                    self._reasoning = True
                    self._span(True)
                p = search = b
                continue
            # a block of kind a, body from b; one opening where a failed block was scanned is prose
            if self._spec.table.blocks[a].closer is None and base + i < self._poison_until:
                search = i + 1
                continue
            if self._spec.table.blocks[a].anchor is not None:  # a word opener: it ends where we are
                i -= len(self._spec.table.blocks[a].opener)
            self._emit(out, s[p:i])
            self._open_block(a, s[i:b], base + i)
            return b

    def _candidate(self, s: str, i: int, p: int, final: bool):
        """Classify ``s[i]``: ('hold',..); ('prose', next search, _); ('marker', its index in the table's
        markers, end); ('block', its kind, the index in the table's blocks, body start).

        A literal the text ends inside, or a test that needs more text, holds (at the end of the stream:
        that reading fails and the next one is tried)."""
        n = len(s)
        spec = self._spec
        hold = ("hold", 0, 0)
        for word, k in spec.anchors.get(s[i], ()):
            if i - len(word) >= p and s.startswith(word, i - len(word)):
                return ("block", k, i)  # a word opener ends here: the body starts at its anchor
        matches = []
        # (a literal that does not begin with the two characters here cannot match)
        two = spec.by_two.get(s[i : i + 2]) or spec.by_one.get(s[i], ()) if i + 1 < n else spec.by_first.get(s[i], ())
        for entry in two:
            r = _match(s, i, entry[0])
            if r == -1 and not final:
                return hold
            if r == 1:
                matches.append(entry)
            elif r == -1 and self._cut_closer(s, i, p, entry):
                return ("marker", entry[2], n)  # the message ends inside its block's closing marker: it goes
        for lit, what, k in matches:
            j = i + len(lit)
            if what == "block":
                delims = spec.table.blocks[k].delimiters
                if delims is None:
                    return ("block", k, j)
                if j == n:
                    if final:
                        continue
                    return hold
                if s[j] not in delims:
                    continue
                wend = min(n, j + ATTR_MAX)
                gt = s.find(">", j, wend)
                stop = gt if gt >= 0 else wend
                q = _search(spec.strong_first, s, j, stop)
                while q >= 0:
                    o = _opener_at(spec, s, q, final)
                    if o == 1:
                        return ("prose", q, 0)  # an opener inside the attribute text: this one is prose
                    if o == -1:
                        return hold
                    q = _search(spec.strong_first, s, q + 1, stop)
                if gt >= 0:
                    return ("block", k, gt + 1)
                if wend < j + ATTR_MAX and not final:
                    return hold
                continue
            marker = spec.table.markers[k]
            if marker.reasoning:
                if (marker.reasoning > 0) != self._reasoning or marker.always:
                    return ("marker", k, j)
                continue
            if marker.always:
                return ("marker", k, j)
            if marker.before:
                m = j
                while m < n and m - j < SECTION_GAP_MAX and s[m] in WHITESPACE:
                    m += 1
                if m - j >= SECTION_GAP_MAX:
                    continue
                if m == n:
                    if final:
                        continue
                    return hold
                found = [_match(s, m, o) for o in spec.openers_of[marker.dialect]]
                if 1 in found:
                    return ("marker", k, j)
                if -1 in found and not final:
                    return hold
            elif self._after_block == marker.dialect and _all_ws(s[p:i]):
                return ("marker", k, j)
        return ("prose", i + 1, 0)

    def _cut_closer(self, s: str, i: int, p: int, entry) -> bool:
        """At the end of the stream, ``s[i:]`` is the closing marker of the block just taken (only blanks
        between), but for its last character (``<|tool_calls_section_end|``): the model stopped inside it."""
        lit, what, k = entry
        if what != "marker" or len(s) - i != len(lit) - 1 or len(lit) < CUT_CLOSER_MIN:
            return False
        marker = self._spec.table.markers[k]
        if marker.before or marker.reasoning:
            return False
        return self._after_block == marker.dialect and _all_ws(s[p:i])

    def _open_block(self, k: int, opener: str, gopen: int) -> None:
        block = self._spec.table.blocks[k]
        self._opener = opener
        self._kind = k
        self._closer = block.closer or ""
        self._json_end = block.closer is None
        self._parts = []
        self._body_len = 0
        self._opened_at = gopen
        self._poisoned = gopen < self._poison_until or not block.json_strings
        self._before_json = True
        self._in_str = False
        self._esc = False
        self._value = self._raw_at = -1
        self._depth = 0
        self._at_start = True
        if self._follow is not None:
            self._follow_wants = self._follow.open(block, opener, not self._reasoning and gopen >= self._poison_until)
            self._follow_from = self._follow_len = 0

    def _finish(self, body: str, out: list, closer: str, calls=None) -> None:
        """End the open block: its calls (``calls`` when already read), or its text when it is not a call."""
        assert self._opener is not None  # a block is open
        block = self._spec.table.blocks[self._kind]
        if calls is None:
            calls = read_block(self._spec.table, self._kind, self._opener, body, self._ctx, self._unknown)
        taken = None
        if calls is None:  # not a call: the block's text stays
            self._emit(out, self._opener + body + closer)
        elif self._reasoning and not self._thought.extract:  # a rehearsal, unless the span never closes
            lead = "".join(self._rblank)  # the blanks before it: its text's, or dropped with it (trim_blanks)
            self._span(False)
            self._rseen = True
            self._thought.block(self._opener + body + closer, calls, lead)
            self._after_block = block.dialect
        else:
            taken = calls
            self._thought.settle(False)  # the content calls a tool: the calls that ended a span were rehearsals
            self.calls.extend(unique_ids(calls, self._ids))
            self.removed += 1
            if not calls:
                self.malformed += 1
            self._after_block = block.dialect
            self._line = -1
        self._opener = None
        if self._follow is not None:
            self._follow.close(taken)

    def _lex(self, s: str, p: int, final: bool):
        """Lex a block body in ``s`` from ``p``: ('close'|'prose'|'more'|'cap'|'end', index)."""
        n = len(s)
        limit = p + (self.max_block - self._body_len) + 1  # a closer or opener may start before limit
        end = min(n, limit)
        closer = self._closer
        spec = self._spec
        block = spec.table.blocks[self._kind]
        own = (block.opener, block.delimiters)  # meeting its own opener again ends a block too
        at = self._body_len - p  # + an index in s: its offset in the body
        if self._esc and p < end:
            p += 1
            self._esc = False
        while p < end:
            if self._value >= 0:  # inside a value: only its closing tag ends it (closer and openers are data)
                q = _search(spec.value_stop, s, p, end)
                if q < 0:
                    p = end
                    break
                p = q
                c = s[p]
                opening, closing = block.values[self._value]
                r = _match(s, p, closing)
                if r == 1:
                    self._value = self._raw_at = -1
                    p += len(closing)
                    continue
                if r == -1 and not final:
                    return ("more", p)
                if (
                    self._raw_at < 0
                ):  # the first closer or opener inside: where the block ends if the value never closes
                    if c == closer[:1]:
                        r = _match(s, p, closer)
                        if r == 1:
                            self._raw_at, self._raw_close = at + p, True
                        elif r == -1 and not final:
                            return ("more", p)
                    if self._raw_at < 0 and (c in spec.strong or c == own[0][0]):
                        o = _opener_at(spec, s, p, final, own)
                        if o == 1:
                            self._raw_at, self._raw_close = at + p, False
                        elif o == -1:
                            return ("more", p)
                r = _value_tag(s, p, opening, block.value_head_end, final)
                if r >= 0:  # another value opens: this one never closed
                    if self._raw_at >= 0:
                        return ("raw", p)
                    self._value = -1
                    continue
                if r == -2:
                    return ("more", p)
                p += 1
                continue
            if self._in_str:
                q = _search(_STRING_STOP, s, p, end)
                if q < 0:
                    p = end
                    break
                if s[q] == '"':
                    self._in_str = False
                    p = q + 1
                elif q + 1 < n:
                    p = q + 2
                else:
                    self._esc = True
                    p = n
                continue
            c = s[p]
            # the closer first (it may look like an opener), then openers, then the JSON state
            if c == closer[:1]:
                r = _match(s, p, closer)
                if r == 1:
                    return ("close", p)
                if r == -1 and not final:
                    return ("more", p)
                if c == "<" and self._before_json and not self._poisoned and not self._json_end:
                    # an XML tag (``<`` then a letter or ``/``) before the body's JSON began: a tag body (GLM's
                    # ``NAME<arg_key>…``), whose values are text: a quote in one opens no string (checked here,
                    # where the closer's ``<`` is: no cost for other characters)
                    if p + 1 < n:
                        if s[p + 1] == "/" or "A" <= s[p + 1] <= "Z" or "a" <= s[p + 1] <= "z":
                            self._poisoned = True
                    elif not final:
                        return ("more", p)
            if c in spec.strong or c == own[0][0]:
                o = _opener_at(spec, s, p, final, own)
                if o == 1:
                    return ("prose", p)
                if o == -1:
                    return ("more", p)
            if self._reasoning and c in spec.span_closers:  # a block inside a reasoning span ends with it
                for lit in spec.span_closers[c]:
                    r = _match(s, p, lit)
                    if r == 1:
                        return ("prose", p)
                    if r == -1 and not final:
                        return ("more", p)
            lead = self._at_start and c not in WHITESPACE  # the body's first non-blank character
            if lead:
                self._at_start = False
                if block.starts is not None and c not in block.starts:
                    return ("prose", p)
                if c == "<" and not self._json_end:  # a tag body (Qwen3-Coder XML in <tool_call>) is no JSON
                    self._poisoned = True
            if c == "<" and block.values and self._poisoned and not self._json_end:  # a value tag opens?
                for v, (opening, _) in enumerate(block.values):
                    r = _value_tag(s, p, opening, block.value_head_end, final)
                    if r == -2:
                        return ("more", p)
                    if r >= 0:
                        self._value, self._raw_at = v, -1
                        p = r
                        break
                if self._value >= 0:
                    continue
            if self._json_end:
                if self._before_json:
                    if c == "{" or (c == "[" and lead):
                        self._before_json = False
                        self._depth = 1
                elif c in "{[":
                    self._depth += 1
                elif c in "}]":
                    self._depth -= 1
                    if self._depth == 0:
                        return ("close", p + 1)
                elif c == '"':
                    self._in_str = True
            elif c == "{" and self._before_json and not self._poisoned:
                self._before_json = False
            elif c == '"' and not self._before_json:
                self._in_str = True
            p += 1
        if self._value >= 0 and self._raw_at >= 0 and (final or p >= limit):
            return ("raw", min(p, n))  # the value never closed: the first closer or opener inside it decides
        if p >= limit:
            # Past the cap: decide once the text a raw closer could span is all here.
            if final or n >= limit + len(closer) - 1:
                return ("cap", p)
            return ("more", min(p, n))
        return ("end", n) if final else ("more", p)
