# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: freethreading_compatible = True
"""The hot path in Cython: ``_scan_py`` again, over the str's own buffer (PEP 393 kinds).

Same functions, same answers as the twin; the scanning rules are stated once, in the README.
Python objects are made only at the edges: the slices that are emitted or held, and the calls.
"""

cimport cython
from libc.string cimport memchr

from textcalls.bodies import call_from_block
from textcalls.markers import (
    ATTR_MAX, DEEPSEEK, DEEPSEEK_CLOSE, DEEPSEEK_OPEN, DEEPSEEK_SECTION_CLOSE, DEEPSEEK_SECTION_OPEN,
    HERMES, HERMES_CLOSE, HERMES_DELIMITERS, HERMES_OPEN, HOLD_LITERALS, MAX_BLOCK, SECTION_GAP_MAX,
    WHITESPACE,
)

cdef extern from "Python.h":
    int PyUnicode_KIND(object) noexcept
    const void* PyUnicode_DATA(object) noexcept
    Py_ssize_t PyUnicode_GET_LENGTH(object) noexcept
    Py_UCS4 PyUnicode_READ(int kind, const void* data, Py_ssize_t index) noexcept nogil
    int PyUnicode_1BYTE_KIND


# -- the marker table, as C arrays ----------------------------------------------------------------

DEF LIT_MAX = 32

ctypedef struct Lit:
    Py_UCS4 ch[LIT_MAX]
    Py_ssize_t n

cdef Lit L_HOPEN, L_HCLOSE, L_DOPEN, L_DCLOSE, L_SOPEN, L_SCLOSE
cdef Lit L_HOLD[4]
cdef Py_ssize_t N_HOLD = 0
cdef bint IS_DELIM[128]
cdef bint IS_WS[128]
cdef Py_ssize_t C_ATTR_MAX = ATTR_MAX
cdef Py_ssize_t C_GAP_MAX = SECTION_GAP_MAX
cdef Py_ssize_t NEVER = (<Py_ssize_t>1) << 62


cdef void _lit(Lit* lit, str text) except *:
    if len(text) > LIT_MAX:
        raise ValueError("marker literal too long: %r" % text)
    lit.n = len(text)
    for k in range(lit.n):
        lit.ch[k] = ord(text[k])


_lit(&L_HOPEN, HERMES_OPEN)
_lit(&L_HCLOSE, HERMES_CLOSE)
_lit(&L_DOPEN, DEEPSEEK_OPEN)
_lit(&L_DCLOSE, DEEPSEEK_CLOSE)
_lit(&L_SOPEN, DEEPSEEK_SECTION_OPEN)
_lit(&L_SCLOSE, DEEPSEEK_SECTION_CLOSE)
if len(HOLD_LITERALS) > 4:
    raise ValueError("HOLD_LITERALS: at most 4")
for _t in HOLD_LITERALS:
    _lit(&L_HOLD[N_HOLD], _t)
    N_HOLD += 1
for _c in range(128):
    IS_DELIM[_c] = chr(_c) in HERMES_DELIMITERS
    IS_WS[_c] = chr(_c) in WHITESPACE

# the stems may_contain_markup looks for, raw (str and UTF-8) and JSON-escaped
cdef Lit S_TOOL, S_HCALL, S_CALL, S_LT, S_LT_ESC, S_BAR, S_BAR_ESC, S_LOW, S_LOW_ESC, S_BAR8, S_LOW8
_lit(&S_TOOL, "tool")
_lit(&S_HCALL, "_call")
_lit(&S_CALL, "call")
_lit(&S_LT, "<")
_lit(&S_LT_ESC, "\\u003c")
_lit(&S_BAR, "\uff5c")
_lit(&S_BAR_ESC, "\\uff5c")
_lit(&S_LOW, "\u2581")
_lit(&S_LOW_ESC, "\\u2581")
_lit(&S_BAR8, "\uff5c".encode("utf-8").decode("latin-1"))
_lit(&S_LOW8, "\u2581".encode("utf-8").decode("latin-1"))


# -- character helpers ----------------------------------------------------------------------------

cdef inline bint _delim(Py_UCS4 c) noexcept nogil:
    return c < 128 and IS_DELIM[c]


cdef inline bint _ws(Py_UCS4 c) noexcept nogil:
    return c < 128 and IS_WS[c]


cdef inline Py_ssize_t _find(int kind, const void* d, Py_ssize_t start, Py_ssize_t end, Py_UCS4 ch) noexcept nogil:
    """Index of ``ch`` in [start, end), or -1."""
    cdef const char* hit
    cdef Py_ssize_t i
    if start >= end:
        return -1
    if kind == 1:
        if ch > 255:
            return -1
        hit = <const char*>memchr(<const char*>d + start, <int>ch, end - start)
        return -1 if hit == NULL else hit - <const char*>d
    for i in range(start, end):
        if PyUnicode_READ(kind, d, i) == ch:
            return i
    return -1


cdef inline int _match(int kind, const void* d, Py_ssize_t n, Py_ssize_t i, const Lit* lit) noexcept nogil:
    """1 if ``lit`` starts at ``i``; -1 if the text ends inside a prefix of it; else 0."""
    cdef Py_ssize_t k
    for k in range(lit.n):
        if i + k >= n:
            return -1
        if PyUnicode_READ(kind, d, i + k) != lit.ch[k]:
            return 0
    return 1


cdef inline int _opener_at(int kind, const void* d, Py_ssize_t n, Py_ssize_t i, bint final) noexcept nogil:
    """1 if a call opener (Hermes with its delimiter, or DeepSeek) starts at ``i``; -1 undecided; else 0."""
    cdef int r = _match(kind, d, n, i, &L_HOPEN)
    cdef Py_ssize_t j
    if r == 1:
        j = i + L_HOPEN.n
        if j == n:
            return 0 if final else -1
        return 1 if _delim(PyUnicode_READ(kind, d, j)) else 0
    if r == 0:
        r = _match(kind, d, n, i, &L_DOPEN)
    return 0 if (r == -1 and final) else r


cdef bint _all_ws(str text):
    cdef int kind = PyUnicode_KIND(text)
    cdef const void* d = PyUnicode_DATA(text)
    cdef Py_ssize_t i
    for i in range(PyUnicode_GET_LENGTH(text)):
        if not _ws(PyUnicode_READ(kind, d, i)):
            return False
    return True


# -- may_contain_markup ---------------------------------------------------------------------------

cdef inline bint _stem_at(int kind, const void* d, Py_ssize_t n, Py_ssize_t i, const Lit* lit, bint hexfold) noexcept nogil:
    """Whether ``lit`` stands at ``i`` (kind 0: a UTF-8 byte buffer); hexfold: a-f also match A-F."""
    cdef Py_ssize_t k
    cdef unsigned int c
    if i < 0 or i + lit.n > n:
        return False
    for k in range(lit.n):
        c = (<const unsigned char*>d)[i + k] if kind == 0 else PyUnicode_READ(kind, d, i + k)
        if hexfold and 0x41 <= c <= 0x46:
            c |= 0x20
        if c != <unsigned int>lit.ch[k]:
            return False
    return True


cdef bint _markup_in(int kind, const void* d, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i = 0
    cdef const Lit* bar = &S_BAR8 if kind == 0 else &S_BAR
    cdef const Lit* low = &S_LOW8 if kind == 0 else &S_LOW
    cdef const char* hit
    while i + 4 <= n:
        if kind == 0:
            hit = <const char*>memchr(<const char*>d + i, 0x74, n - i)  # 't'
            if hit == NULL:
                return False
            i = hit - <const char*>d
        if not _stem_at(kind, d, n, i, &S_TOOL, False):
            i += 1
            continue
        if _stem_at(kind, d, n, i + 4, &S_HCALL, False) and (
                _stem_at(kind, d, n, i - 1, &S_LT, False) or _stem_at(kind, d, n, i - 6, &S_LT_ESC, True)):
            return True
        if ((_stem_at(kind, d, n, i + 4, low, False) and _stem_at(kind, d, n, i + 4 + low.n, &S_CALL, False))
                or (_stem_at(kind, d, n, i + 4, &S_LOW_ESC, False) and _stem_at(kind, d, n, i + 10, &S_CALL, False))) and (
                _stem_at(kind, d, n, i - bar.n, bar, False) or _stem_at(kind, d, n, i - 6, &S_BAR_ESC, True)):
            return True
        i += 1
    return False


def may_contain_markup(data):
    """False only when no opener can be in ``data`` (str or bytes-like), JSON-escaped forms included."""
    cdef const unsigned char[::1] view
    if isinstance(data, str):
        return _markup_in(PyUnicode_KIND(data), PyUnicode_DATA(data), PyUnicode_GET_LENGTH(data))
    if isinstance(data, memoryview):
        data = data.cast("B")
    elif not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"may_contain_markup() expects str, bytes, bytearray or memoryview, not {type(data).__name__}")
    view = data
    if view.shape[0] == 0:
        return False
    return _markup_in(0, &view[0], view.shape[0])


# -- hold_from ------------------------------------------------------------------------------------

def hold_from(text):
    """Index from which ``text`` must be held back because it may begin an opener; ``len(text)`` if none.

    (1) the first ``<tool_call`` followed by end of text, ``>``, ``|`` or whitespace with no ``>``
    after it and fewer than ATTR_MAX characters after it; else (2) the start of the longest suffix
    that is a proper prefix of a marker in HOLD_LITERALS; else (3) ``len(text)``.
    """
    if not isinstance(text, str):
        raise TypeError(f"hold_from() expects str, not {type(text).__name__}")
    cdef int kind = PyUnicode_KIND(text)
    cdef const void* d = PyUnicode_DATA(text)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
    cdef Py_ssize_t last_gt = -1, i, j, k, start, longest = 0
    for i in range(n - 1, -1, -1):
        if PyUnicode_READ(kind, d, i) == 0x3E:
            last_gt = i
            break
    start = max(last_gt - L_HOPEN.n + 1, n - C_ATTR_MAX - L_HOPEN.n, 0)
    for i in range(start, n):
        if PyUnicode_READ(kind, d, i) != 0x3C or _match(kind, d, n, i, &L_HOPEN) != 1:
            continue
        j = i + L_HOPEN.n
        if j > last_gt and n - j < C_ATTR_MAX and (j == n or _delim(PyUnicode_READ(kind, d, j))):
            return i
    for k in range(N_HOLD):
        longest = max(longest, L_HOLD[k].n)
    for i in range(max(0, n - longest + 1), n):
        if PyUnicode_READ(kind, d, i) == 0x3C:
            for k in range(N_HOLD):
                if n - i < L_HOLD[k].n and _match(kind, d, n, i, &L_HOLD[k]) == -1:
                    return i
    return n


# -- the stream state machine ---------------------------------------------------------------------

cdef enum Lexed:
    LX_CLOSE, LX_OPENER, LX_MORE, LX_CAP, LX_END

cdef enum Cand:
    C_HOLD, C_PROSE, C_MARKER, C_BLOCK


cdef class StreamScrubber:
    """Remove tool-call blocks from a text arriving in deltas; collect the calls they hold.

    ``feed(delta)`` returns the text that is safe to show now; ``flush()`` ends the stream and
    returns the rest. Whatever the splitting, ``(feeds + flush).strip() == parse(text).content``
    and ``calls`` equal ``parse(text).calls``. ``removed`` counts blocks and markers removed.
    """

    cdef readonly list calls
    cdef readonly Py_ssize_t removed
    cdef readonly Py_ssize_t max_block
    cdef str _held            # unresolved text: a candidate opener, or a block body's undecided tail
    cdef bint _closed
    cdef Py_ssize_t _pos      # stream offset of _held[0]
    cdef bint _after_deepseek  # only whitespace since the end of a DeepSeek block
    cdef Py_ssize_t _poison_until  # blocks opening before this offset are scanned without JSON-string awareness
    cdef str _opener          # inside a block: the opener's text; None outside
    cdef bint _deepseek       # the open block's family
    cdef list _parts
    cdef Py_ssize_t _body_len
    cdef Py_ssize_t _gopen
    cdef bint _raw, _poisoned, _in_str, _esc

    def __init__(self, *, max_block=MAX_BLOCK):
        if not isinstance(max_block, int) or isinstance(max_block, bool):
            raise TypeError(f"max_block must be an int, not {type(max_block).__name__}")
        if max_block < 1:
            raise ValueError(f"max_block must be >= 1, not {max_block}")
        self.calls = []
        self.removed = 0
        self.max_block = max_block
        self._held = ""
        self._closed = False
        self._pos = 0
        self._after_deepseek = False
        self._poison_until = 0
        self._opener = None
        self._parts = []

    @cython.always_allow_keywords(False)  # METH_O, the call path of list.append
    def feed(self, delta):
        """Take the next delta; return the text that can be shown now."""
        cdef int kind
        cdef Py_ssize_t n
        if not isinstance(delta, str):
            raise TypeError(f"feed() expects str, not {type(delta).__name__}")
        if self._closed:
            raise ValueError("feed() after flush(): the stream has ended")
        if self._opener is None and PyUnicode_GET_LENGTH(self._held) == 0:
            kind = PyUnicode_KIND(delta)
            n = PyUnicode_GET_LENGTH(delta)
            if _find(kind, PyUnicode_DATA(delta), 0, n, 0x3C) < 0:
                if self._after_deepseek and not _all_ws(delta):
                    self._after_deepseek = False
                self._pos += n
                return delta
        return self._run(self._held + delta, False)

    def flush(self):
        """End the stream: return everything still held, blocks removed (no trimming)."""
        if self._closed:
            return ""
        self._closed = True
        if self._opener is None and PyUnicode_GET_LENGTH(self._held) == 0:
            return ""
        return self._run(self._held, True)

    cdef inline void _emit(self, list out, str text):
        if PyUnicode_GET_LENGTH(text):
            out.append(text)
            if self._after_deepseek and not _all_ws(text):
                self._after_deepseek = False

    cdef str _run(self, str s, bint final):
        cdef list out = []
        cdef Py_ssize_t base = self._pos, p = 0, q, c, gbody, close_n
        cdef Lexed kind
        cdef str body, close
        while True:
            if self._opener is not None:
                kind = self._lex(s, p, final, &q)
                if kind == LX_MORE:
                    self._parts.append(s[p:q])
                    self._body_len += q - p
                    self._held = s[q:]
                    self._pos = base + q
                    return "".join(out)
                if kind == LX_CLOSE:
                    body = "".join(self._parts) + s[p:q]
                    close_n = L_DCLOSE.n if self._deepseek else L_HCLOSE.n
                    self._finish(body)
                    p = q + close_n
                    continue
                if kind == LX_OPENER:
                    self._emit(out, self._opener + "".join(self._parts) + s[p:q])
                    self._opener = None
                    p = q
                    continue
                # No close outside a JSON string within the cap: the first raw close ends the block.
                body = "".join(self._parts) + s[p:]
                close = DEEPSEEK_CLOSE if self._deepseek else HERMES_CLOSE
                gbody = self._gopen + PyUnicode_GET_LENGTH(self._opener)
                self._poison_until = max(self._poison_until, NEVER if kind == LX_END else gbody + self.max_block + 1)
                c = body.find(close, 0, self.max_block + len(close))
                if c >= 0:
                    self._finish(body[:c])
                    s, base = body[c + len(close):], gbody + c + len(close)
                else:
                    self._emit(out, self._opener[:1])
                    s, base = self._opener[1:] + body, self._gopen + 1
                    self._opener = None
                p = 0
                continue
            p = self._outside(s, p, base, final, out)
            if p < 0:
                return "".join(out)

    cdef Py_ssize_t _outside(self, str s, Py_ssize_t p, Py_ssize_t base, bint final, list out) except -2:
        """Scan prose from ``p``. Returns the body start of a block it opened, or -1 when done."""
        cdef int kind = PyUnicode_KIND(s)
        cdef const void* d = PyUnicode_DATA(s)
        cdef Py_ssize_t n = PyUnicode_GET_LENGTH(s)
        cdef Py_ssize_t search = p, i, a = 0, b = 0
        cdef Cand cand
        while True:
            i = _find(kind, d, search, n, 0x3C)
            if i < 0:
                self._emit(out, s[p:])
                self._held = ""
                self._pos = base + n
                return -1
            cand = self._candidate(kind, d, n, s, i, p, final, &a, &b)
            if cand == C_HOLD:
                self._emit(out, s[p:i])
                self._held = s[i:]
                self._pos = base + i
                return -1
            if cand == C_PROSE:
                search = a
                continue
            self._emit(out, s[p:i])
            if cand == C_MARKER:
                self.removed += 1
                self._after_deepseek = False
                p = search = b
                continue
            self._open_block(s[i:b], a == 1, base + i)
            return b

    cdef Cand _candidate(self, int kind, const void* d, Py_ssize_t n, str s, Py_ssize_t i, Py_ssize_t p,
                         bint final, Py_ssize_t* a, Py_ssize_t* b) except *:
        """Classify the '<' at ``i``: hold; prose (a = next search); marker (b = end); block (a = 1 for
        DeepSeek, b = body start)."""
        cdef Cand undecided = C_PROSE if final else C_HOLD
        cdef Py_ssize_t j, wend, gt, k, q, m, stop
        cdef int r, o
        cdef bint undecided_any
        a[0] = i + 1
        r = _match(kind, d, n, i, &L_HOPEN)
        if r == -1:
            return undecided
        if r == 1:
            j = i + L_HOPEN.n
            if j == n:
                return undecided
            if not _delim(PyUnicode_READ(kind, d, j)):
                return C_PROSE
            wend = min(n, j + C_ATTR_MAX)
            gt = _find(kind, d, j, wend, 0x3E)
            stop = gt if gt >= 0 else wend
            k = _find(kind, d, j, stop, 0x3C)
            while k >= 0:
                o = _opener_at(kind, d, n, k, final)
                if o == 1:
                    a[0] = k  # an opener inside the attribute text: this one is prose
                    return C_PROSE
                if o == -1:
                    return undecided
                k = _find(kind, d, k + 1, stop, 0x3C)
            if gt < 0:
                return C_PROSE if wend == j + C_ATTR_MAX else undecided
            a[0] = 0
            b[0] = gt + 1
            return C_BLOCK
        r = _match(kind, d, n, i, &L_DOPEN)
        if r == 1:
            a[0] = 1
            b[0] = i + L_DOPEN.n
            return C_BLOCK
        undecided_any = r == -1
        r = _match(kind, d, n, i, &L_SOPEN)
        if r == 1:
            q = i + L_SOPEN.n
            m = q
            while m < n and m - q < C_GAP_MAX and _ws(PyUnicode_READ(kind, d, m)):
                m += 1
            if m - q >= C_GAP_MAX:
                return C_PROSE
            if m == n:
                return undecided
            o = _match(kind, d, n, m, &L_DOPEN)
            if o == 1:
                b[0] = q
                return C_MARKER
            return undecided if o == -1 else C_PROSE
        undecided_any = undecided_any or r == -1
        r = _match(kind, d, n, i, &L_SCLOSE)
        if r == 1:
            if self._after_deepseek and _all_ws(s[p:i]):
                b[0] = i + L_SCLOSE.n
                return C_MARKER
            return C_PROSE
        if undecided_any or r == -1:
            return undecided
        return C_PROSE

    cdef void _open_block(self, str opener, bint deepseek, Py_ssize_t gopen):
        self._opener = opener
        self._deepseek = deepseek
        self._parts = []
        self._body_len = 0
        self._gopen = gopen
        self._poisoned = gopen < self._poison_until
        self._raw = True
        self._in_str = False
        self._esc = False

    cdef int _finish(self, str body) except -1:
        call = call_from_block(DEEPSEEK if self._deepseek else HERMES, body)
        if call is not None:
            self.calls.append(call)
        self.removed += 1
        self._after_deepseek = self._deepseek
        self._opener = None
        return 0

    cdef Lexed _lex(self, str s, Py_ssize_t p, bint final, Py_ssize_t* out):
        """Lex a block body in ``s`` from ``p``; ``out`` receives the index."""
        cdef int kind = PyUnicode_KIND(s)
        cdef const void* d = PyUnicode_DATA(s)
        cdef Py_ssize_t n = PyUnicode_GET_LENGTH(s)
        cdef Py_ssize_t limit = p + (self.max_block - self._body_len) + 1
        cdef Py_ssize_t end = min(n, limit)
        cdef const Lit* close = &L_DCLOSE if self._deepseek else &L_HCLOSE
        cdef Py_UCS4 c
        cdef int r
        if self._esc and p < end:
            p += 1
            self._esc = False
        while p < end:
            c = PyUnicode_READ(kind, d, p)
            if self._in_str:
                if c == 0x22:  # '"'
                    self._in_str = False
                elif c == 0x5C:  # '\\'
                    if p + 1 < n:
                        p += 1
                    else:
                        self._esc = True
                p += 1
                continue
            if c == 0x7B and self._raw and not self._poisoned:  # '{'
                self._raw = False
            elif c == 0x22 and not self._raw:
                self._in_str = True
            elif c == 0x3C:  # '<'
                r = _match(kind, d, n, p, close)
                if r == 1:
                    out[0] = p
                    return LX_CLOSE
                if r == -1 and not final:
                    out[0] = p
                    return LX_MORE
                r = _opener_at(kind, d, n, p, final)
                if r == 1:
                    out[0] = p
                    return LX_OPENER
                if r == -1:
                    out[0] = p
                    return LX_MORE
            p += 1
        if p >= limit:
            # Past the cap: decide once the text a raw close could span is all here.
            if final or n >= limit + close.n - 1:
                out[0] = p
                return LX_CAP
            out[0] = min(p, n)
            return LX_MORE
        out[0] = n if final else p
        return LX_END if final else LX_MORE
