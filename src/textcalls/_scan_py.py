"""The pure-Python twin of the hot path (``_scan_c``): same functions, same answers.

The scanning rules are stated once, in the README's "Scanning rules"; this module and
``ext/textcalls/_scan_c.pyx`` both implement them and the tests cross-check the two.
"""

from __future__ import annotations

import re

from .bodies import call_from_block
from .markers import (
    ATTR_MAX,
    DEEPSEEK,
    DEEPSEEK_CLOSE,
    DEEPSEEK_OPEN,
    DEEPSEEK_SECTION_CLOSE,
    DEEPSEEK_SECTION_OPEN,
    HERMES,
    HERMES_CLOSE,
    HERMES_DELIMITERS,
    HERMES_OPEN,
    HOLD_LITERALS,
    MAX_BLOCK,
    SECTION_GAP_MAX,
    WHITESPACE,
)

__all__ = ["StreamScrubber", "hold_from", "may_contain_markup"]

# An opener's stem, raw or JSON-escaped (``\u003c`` for ``<``, ``\uff5c``/``\u2581`` for ``｜``/``▁``).
_MAYBE_STR = re.compile("(?:<|\\\\u003[cC])tool_call|(?:\uff5c|\\\\u[fF][fF]5[cC])tool(?:\u2581|\\\\u2581)call")
_MAYBE_BYTES = re.compile(_MAYBE_STR.pattern.encode("utf-8"))
_HOLD_MAX = max(map(len, HOLD_LITERALS))
_HERMES_LEN = len(HERMES_OPEN)
_RAW_STOP = re.compile(r"[<{]")
_JSON_STOP = re.compile(r'[<"]')
_STRING_STOP = re.compile(r'["\\]')
_NEVER = 1 << 62  # "poisoned until the end of the stream"


def may_contain_markup(data) -> bool:
    """False only when no opener can be in ``data`` (str or bytes-like), JSON-escaped forms included."""
    if isinstance(data, str):
        return _MAYBE_STR.search(data) is not None
    if isinstance(data, (bytes, bytearray)):
        return _MAYBE_BYTES.search(data) is not None
    if isinstance(data, memoryview):
        return _MAYBE_BYTES.search(data.cast("B")) is not None
    raise TypeError(f"may_contain_markup() expects str, bytes, bytearray or memoryview, not {type(data).__name__}")


def hold_from(text: str) -> int:
    """Index from which ``text`` must be held back because it may begin an opener; ``len(text)`` if none.

    (1) the first ``<tool_call`` followed by end of text, ``>``, ``|`` or whitespace with no ``>``
    after it and fewer than ATTR_MAX characters after it; else (2) the start of the longest suffix
    that is a proper prefix of a marker in HOLD_LITERALS; else (3) ``len(text)``.
    """
    if not isinstance(text, str):
        raise TypeError(f"hold_from() expects str, not {type(text).__name__}")
    n = len(text)
    last_gt = text.rfind(">")
    i = text.find(HERMES_OPEN, max(last_gt - _HERMES_LEN + 1, n - ATTR_MAX - _HERMES_LEN, 0))
    while i >= 0:
        j = i + _HERMES_LEN
        if j > last_gt and n - j < ATTR_MAX and (j == n or text[j] in HERMES_DELIMITERS):
            return i
        i = text.find(HERMES_OPEN, i + 1)
    for k in range(max(0, n - _HOLD_MAX + 1), n):
        if text[k] == "<":
            tail = text[k:]
            if any(len(tail) < len(lit) and lit.startswith(tail) for lit in HOLD_LITERALS):
                return k
    return n


def _match(s: str, i: int, lit: str) -> int:
    """1 if ``lit`` starts at ``s[i]``; -1 if ``s`` ends inside a prefix of it; else 0."""
    if s.startswith(lit, i):
        return 1
    if len(s) - i < len(lit) and lit.startswith(s[i:]):
        return -1
    return 0


def _opener_at(s: str, i: int, final: bool) -> int:
    """1 if a call opener (Hermes with its delimiter, or DeepSeek) starts at ``s[i]``; -1 undecided; else 0."""
    r = _match(s, i, HERMES_OPEN)
    if r == 1:
        j = i + _HERMES_LEN
        if j == len(s):
            return 0 if final else -1
        return 1 if s[j] in HERMES_DELIMITERS else 0
    if r == 0:
        r = _match(s, i, DEEPSEEK_OPEN)
    return 0 if (r == -1 and final) else r


def _all_ws(text: str) -> bool:
    return not text.strip(WHITESPACE)


class StreamScrubber:
    """Remove tool-call blocks from a text arriving in deltas; collect the calls they hold.

    ``feed(delta)`` returns the text that is safe to show now; ``flush()`` ends the stream and
    returns the rest. Whatever the splitting, ``(feeds + flush).strip() == parse(text).content``
    and ``calls`` equal ``parse(text).calls``. ``removed`` counts blocks and markers removed.
    """

    __slots__ = (
        "calls", "removed", "max_block", "_held", "_closed", "_pos", "_after_deepseek", "_poison_until",
        "_opener", "_family", "_close", "_parts", "_body_len", "_gopen", "_raw", "_poisoned", "_in_str", "_esc",
    )

    def __init__(self, *, max_block: int = MAX_BLOCK) -> None:
        if not isinstance(max_block, int) or isinstance(max_block, bool):
            raise TypeError(f"max_block must be an int, not {type(max_block).__name__}")
        if max_block < 1:
            raise ValueError(f"max_block must be >= 1, not {max_block}")
        self.calls: list = []
        self.removed = 0
        self.max_block = max_block
        self._held = ""  # unresolved text: a candidate opener, or a block body's undecided tail
        self._closed = False
        self._pos = 0  # stream offset of _held[0]
        self._after_deepseek = False  # only whitespace since the end of a DeepSeek block
        self._poison_until = 0  # blocks opening before this offset are scanned without JSON-string awareness
        self._opener = None  # inside a block: the opener's text; None outside
        self._family = ""
        self._close = ""
        self._parts: list = []
        self._body_len = 0
        self._gopen = 0
        self._raw = True
        self._poisoned = False
        self._in_str = False
        self._esc = False

    def feed(self, delta: str) -> str:
        """Take the next delta; return the text that can be shown now."""
        if not isinstance(delta, str):
            raise TypeError(f"feed() expects str, not {type(delta).__name__}")
        if self._closed:
            raise ValueError("feed() after flush(): the stream has ended")
        if not self._held and self._opener is None and "<" not in delta:
            if self._after_deepseek and not _all_ws(delta):
                self._after_deepseek = False
            self._pos += len(delta)
            return delta
        return self._run(self._held + delta, False)

    def flush(self) -> str:
        """End the stream: return everything still held, blocks removed (no trimming)."""
        if self._closed:
            return ""
        self._closed = True
        if self._opener is None and not self._held:
            return ""
        return self._run(self._held, True)

    # -- the state machine --------------------------------------------------------------------

    def _emit(self, out: list, text: str) -> None:
        if text:
            out.append(text)
            if self._after_deepseek and not _all_ws(text):
                self._after_deepseek = False

    def _run(self, s: str, final: bool) -> str:
        out: list = []
        base = self._pos  # stream offset of s[0]
        p = 0
        while True:
            if self._opener is not None:
                kind, q = self._lex(s, p, final)
                if kind == "more":
                    self._parts.append(s[p:q])
                    self._body_len += q - p
                    self._held = s[q:]
                    self._pos = base + q
                    return "".join(out)
                body = "".join(self._parts) + s[p:q]
                if kind == "close":
                    p = q + len(self._close)
                    self._finish(body)
                    continue
                if kind == "opener":
                    self._emit(out, self._opener + body)
                    self._opener = None
                    p = q
                    continue
                # No close outside a JSON string within the cap: the first raw close ends the block.
                body = "".join(self._parts) + s[p:]
                gbody = self._gopen + len(self._opener)
                self._poison_until = max(self._poison_until, _NEVER if kind == "end" else gbody + self.max_block + 1)
                c = body.find(self._close, 0, self.max_block + len(self._close))
                if c >= 0:
                    close = self._close
                    self._finish(body[:c])
                    s, base = body[c + len(close):], gbody + c + len(close)
                else:
                    self._emit(out, self._opener[0])
                    s, base = self._opener[1:] + body, self._gopen + 1
                    self._opener = None
                p = 0
                continue
            held = self._outside(s, p, base, final, out)
            if held < 0:
                return "".join(out)
            p = held

    def _outside(self, s: str, p: int, base: int, final: bool, out: list) -> int:
        """Scan prose from ``p``. Returns the body start of a block it opened, or -1 when done."""
        n = len(s)
        search = p
        while True:
            i = s.find("<", search)
            if i < 0:
                self._emit(out, s[p:])
                self._held, self._pos = "", base + n
                return -1
            kind, a, b = self._candidate(s, i, p, final)
            if kind == "hold":
                self._emit(out, s[p:i])
                self._held, self._pos = s[i:], base + i
                return -1
            if kind == "prose":
                search = a
                continue
            self._emit(out, s[p:i])
            if kind == "marker":
                self.removed += 1
                self._after_deepseek = False
                p = search = b
                continue
            # kind == "block": a is the family, b the body start
            self._open_block(s[i:b], a, base + i)
            return b

    def _candidate(self, s: str, i: int, p: int, final: bool):
        """Classify the '<' at ``s[i]``: ('hold',..), ('prose', next search, _), ('marker', _, end), ('block', family, body start)."""
        n = len(s)
        undecided = ("prose", i + 1, 0) if final else ("hold", 0, 0)
        r = _match(s, i, HERMES_OPEN)
        if r == -1:
            return undecided
        if r == 1:
            j = i + _HERMES_LEN
            if j == n:
                return undecided
            if s[j] not in HERMES_DELIMITERS:
                return ("prose", i + 1, 0)
            wend = min(n, j + ATTR_MAX)
            gt = s.find(">", j, wend)
            k = s.find("<", j, gt if gt >= 0 else wend)
            while k >= 0:
                o = _opener_at(s, k, final)
                if o == 1:
                    return ("prose", k, 0)  # an opener inside the attribute text: this one is prose
                if o == -1:
                    return undecided
                k = s.find("<", k + 1, gt if gt >= 0 else wend)
            if gt < 0:
                return ("prose", i + 1, 0) if wend == j + ATTR_MAX else undecided
            return ("block", HERMES, gt + 1)
        r = _match(s, i, DEEPSEEK_OPEN)
        if r == 1:
            return ("block", DEEPSEEK, i + len(DEEPSEEK_OPEN))
        undecided_any = r == -1
        r = _match(s, i, DEEPSEEK_SECTION_OPEN)
        if r == 1:
            q = i + len(DEEPSEEK_SECTION_OPEN)
            m = q
            while m < n and m - q < SECTION_GAP_MAX and s[m] in WHITESPACE:
                m += 1
            if m - q >= SECTION_GAP_MAX:
                return ("prose", i + 1, 0)
            if m == n:
                return undecided
            o = _match(s, m, DEEPSEEK_OPEN)
            if o == 1:
                return ("marker", 0, q)
            return undecided if o == -1 else ("prose", i + 1, 0)
        undecided_any = undecided_any or r == -1
        r = _match(s, i, DEEPSEEK_SECTION_CLOSE)
        if r == 1:
            if self._after_deepseek and _all_ws(s[p:i]):
                return ("marker", 0, i + len(DEEPSEEK_SECTION_CLOSE))
            return ("prose", i + 1, 0)
        if undecided_any or r == -1:
            return undecided
        return ("prose", i + 1, 0)

    def _open_block(self, opener: str, family: str, gopen: int) -> None:
        self._opener = opener
        self._family = family
        self._close = HERMES_CLOSE if family == HERMES else DEEPSEEK_CLOSE
        self._parts = []
        self._body_len = 0
        self._gopen = gopen
        self._poisoned = gopen < self._poison_until
        self._raw = True
        self._in_str = False
        self._esc = False

    def _finish(self, body: str) -> None:
        call = call_from_block(self._family, body)
        if call is not None:
            self.calls.append(call)
        self.removed += 1
        self._after_deepseek = self._family == DEEPSEEK
        self._opener = None

    def _lex(self, s: str, p: int, final: bool):
        """Lex a block body in ``s`` from ``p``: ('close'|'opener'|'more'|'cap'|'end', index)."""
        n = len(s)
        limit = p + (self.max_block - self._body_len) + 1  # a close or opener may start before limit
        end = min(n, limit)
        close = self._close
        if self._esc and p < end:
            p += 1
            self._esc = False
        while p < end:
            if self._in_str:
                m = _STRING_STOP.search(s, p, end)
                if m is None:
                    p = end
                    break
                q = m.start()
                if s[q] == '"':
                    self._in_str = False
                    p = q + 1
                elif q + 1 < n:
                    p = q + 2
                else:
                    self._esc = True
                    p = n
                continue
            if self._raw:
                q = s.find("<", p, end) if self._poisoned else _search(_RAW_STOP, s, p, end)
            else:
                q = _search(_JSON_STOP, s, p, end)
            if q < 0:
                p = end
                break
            c = s[q]
            if c == "{":
                self._raw = False
                p = q + 1
            elif c == '"':
                self._in_str = True
                p = q + 1
            else:
                r = _match(s, q, close)
                if r == 1:
                    return ("close", q)
                if r == -1 and not final:
                    return ("more", q)
                o = _opener_at(s, q, final)
                if o == 1:
                    return ("opener", q)
                if o == -1:
                    return ("more", q)
                p = q + 1
        if p >= limit:
            # Past the cap: decide once the text a raw close could span is all here.
            if final or n >= limit + len(close) - 1:
                return ("cap", p)
            return ("more", min(p, n))
        return ("end", n) if final else ("more", p)


def _search(pattern: re.Pattern, s: str, p: int, end: int) -> int:
    m = pattern.search(s, p, end)
    return -1 if m is None else m.start()
