# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: freethreading_compatible = True
"""The scanner in Cython: ``_scan_py`` again, over the str's own buffer (PEP 393 kinds).

Same functions, same answers as the twin, built from the same table (``markers.py``); the scanning
rules are stated once, in docs/scanning.md. Python objects are made only at the edges: the slices that
are emitted or held, and the calls. The string kernels it calls are ``_kernels_c``'s (``_kernels_c.pxd``);
``_text.pxd`` and ``_simd.h`` hold what both read text with.
"""

cimport cython
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.object cimport PyObject, PyTypeObject
from cpython.dict cimport PyDict_GetItem
from cpython.unicode cimport PyUnicode_New
from libc.string cimport memcmp, memcpy

from textcalls._text cimport *
from textcalls._kernels_c cimport (
    Walked, _back_space, _deepseek_call, _fill, _hermes_call, _lit, _plain_walk, _skip_space, _slice, _slot,
    _unpicked,
)
from textcalls._table import BareLead, json_proof, read_bare, read_block, read_unterminated, read_whole, table_for
from textcalls.markers import ARGUMENT_KEYS as _ARGUMENT_KEYS
from textcalls.markers import MAX_BLOCK
from textcalls.markers import ATTR_MAX, FIRST_CHARS_MAX, LITERAL_MAX, SECTION_GAP_MAX, WHITESPACE
from textcalls.markers import VALUES_MAX as MARKERS_VALUES_MAX
from textcalls._calls import placeholder, unique_ids
from textcalls._guided import Guided
from textcalls._events import CallEvents
from textcalls._reasoning import Reasoning
from textcalls.options import DEFAULT, Options, options_of
from textcalls.screens import may_contain_markup
from textcalls.toolcall import Parsed
from textcalls import _kernels_c

__all__ = ["StreamScrubber", "hold_from", "may_contain_markup", "scan_whole", "TABLE_LIMITS"]


cdef enum:
    FIRST_MAX = 8    # markers.FIRST_CHARS_MAX: distinct first characters
    VALUES_MAX = 4   # markers.VALUES_MAX: value tag pairs a block
    PAIR_HASH = 64   # _CSpec.pair_at's row: second characters by their low bits
    SHORT_DELTA = 32  # a delta this long or shorter is screened in one pass, a longer one by memchr per character
    QUIET_MAX = 16   # Options.quiet: literals' first characters (FIRST_MAX), '{' and '['

#: what this build's arrays hold: (longest literal, first characters, value tag pairs a block)
TABLE_LIMITS = (LIT_MAX, FIRST_MAX, VALUES_MAX)
if TABLE_LIMITS != (LITERAL_MAX, FIRST_CHARS_MAX, MARKERS_VALUES_MAX):
    raise ImportError("textcalls._scan_c was built for other table limits than markers.py states")


cdef bint IS_WS[128]
for _c in range(128):
    IS_WS[_c] = chr(_c) in WHITESPACE
cdef Py_ssize_t C_ATTR_MAX = ATTR_MAX
cdef Py_ssize_t C_GAP_MAX = SECTION_GAP_MAX
cdef Py_ssize_t NEVER = (<Py_ssize_t>1) << 62
cdef list NO_REASONING = []  # a scrubber's reasoning text before any span: always empty, never appended to
cdef tuple ARGUMENT_KEYS = _ARGUMENT_KEYS
KERNELS = _kernels_c  # the kernels this scanner calls (_scan.use)


# -- character helpers ----------------------------------------------------------------------------

cdef inline bint _ws(Py_UCS4 c) noexcept nogil:
    return c < 128 and IS_WS[c]


cdef inline bint _goes_on(const Lit* lit, Py_ssize_t m, int kind, const void* d, Py_ssize_t n) noexcept nogil:
    """The literal's first ``m`` characters and the text are a proper prefix of it."""
    cdef Py_ssize_t k
    if m + n >= lit.n:
        return False
    for k in range(n):
        if PyUnicode_READ(kind, d, k) != lit.ch[m + k]:
            return False
    return True


cdef inline bint _starts_with(const Lit* lit, const Lit* start) noexcept nogil:
    """``lit`` starts with ``start``."""
    return start.n <= lit.n and not memcmp(lit.ch, start.ch, start.n * sizeof(Py_UCS4))


_STOP_RUN_BYTES = STOP_RUN_BYTES  # the build's block: 16 (SSE2) or 8 (checked by .ci/run on a build without SSE2)


cdef enum:
    DEFER_KEPT = 1 << 16  # StreamScrubber._defer's room kept after a body's text was lexed, in bytes

cdef enum:
    LEX_IN_JSON = 0      # _CSpec.lex_stop's sets: in a block's JSON (or a body with none)
    LEX_BEFORE_JSON = 1  # before its JSON object opens


cdef inline str _join(list pieces):
    """``"".join(pieces)`` of ``str`` pieces, without the call for none or one (most deltas give one)."""
    cdef Py_ssize_t n = len(pieces)
    return "" if n == 0 else <str>pieces[0] if n == 1 else "".join(pieces)


cdef str _joined(str a, str b):
    """``a + b`` for two exact ``str``: when both have the same kind, one string of the wider largest
    character and two copies (``+`` goes through the number protocol first, then checks more)."""
    cdef int kind = PyUnicode_KIND(a)
    cdef Py_ssize_t na = PyUnicode_GET_LENGTH(a), nb = PyUnicode_GET_LENGTH(b)
    if kind != PyUnicode_KIND(b) or na == 0 or nb == 0:
        return a + b
    cdef str out = PyUnicode_New(na + nb, max(PyUnicode_MAX_CHAR_VALUE(a), PyUnicode_MAX_CHAR_VALUE(b)))
    memcpy(<void*>PyUnicode_DATA(out), PyUnicode_DATA(a), na * kind)  # (filled here before it is seen)
    memcpy(<char*>PyUnicode_DATA(out) + na * kind, PyUnicode_DATA(b), nb * kind)
    return out


cdef enum:
    CUT_CLOSER_MIN = 8  # (_scan_py.CUT_CLOSER_MIN) a closing marker cut at the stream's end is markup from this long


cdef inline Py_ssize_t _line_after(Py_ssize_t line, int kind, const void* d, Py_ssize_t start, Py_ssize_t end) noexcept:
    """The line state after text[start:end], from ``line`` before it: how many spaces (0-3) the current
    line has had and nothing else, or -1. Only the end of the text is read."""
    cdef Py_ssize_t spaces = 0, k
    cdef Py_UCS4 c
    for k in range(end - 1, start - 1, -1):
        c = PyUnicode_READ(kind, d, k)
        if c == 0x0A:
            return spaces
        if c != 0x20 or spaces == 3:
            return -1
        spaces += 1
    return line + spaces if 0 <= line and line + spaces <= 3 else -1


cdef inline int _triple(Py_UCS4 a, Py_UCS4 b, Py_UCS4 c) noexcept nogil:
    """A 12-bit hash of a literal's first three characters."""
    return <int>(((<unsigned int>a * 961u) + (<unsigned int>b * 31u) + <unsigned int>c) & 4095u)


cdef bint _all_ws(str text):
    cdef int kind = PyUnicode_KIND(text)
    cdef const void* d = PyUnicode_DATA(text)
    cdef Py_ssize_t i
    for i in range(PyUnicode_GET_LENGTH(text)):
        if not _ws(PyUnicode_READ(kind, d, i)):
            return False
    return True


# -- the table, as C arrays -----------------------------------------------------------------------

ctypedef struct Entry:
    Lit lit             # an opener (blocks) or a marker literal
    bint block
    int k               # index in the table's blocks or markers
    bint strong         # blocks: meeting this opener inside another block makes that block prose
    bint tag            # blocks: attributes follow, up to '>'
    bint delim[128]     # blocks with tag: the characters that may follow the literal
    bint before         # markers: before an opener of `dialect` (else after the end of one of its blocks)
    int reasoning       # markers: 1 opens a reasoning span, -1 closes one, 0 neither
    bint always         # markers: markup wherever it stands
    Py_UCS4 anchor      # word openers (functools): found at this character after them; 0 for the others
    int dialect
    int pair_end        # one past the last entry that starts with this one's first two characters


@cython.final
cdef class _CSpec:
    """A table arranged for scanning: entries by first character, longest first (first-character dispatch)."""

    cdef object table
    cdef Entry* entries
    cdef int n_entries
    cdef Lit* closers           # per block kind
    cdef bint* json_end         # per block kind: ends where its JSON value ends
    cdef bint* json_strings     # per block kind
    cdef bint* plain_skip       # per block kind: no literal _lex looks for can begin outside a plain object's strings
    cdef int* block_dialect     # per block kind
    cdef int* one_pass          # per block kind: ONE_PASS_HERMES/_DEEPSEEK when read by dialects.hermes/deepseek
    cdef tuple dialect_names    # per block kind
    cdef int* marker_reasoning  # per marker kind (index in the table's markers): its Marker.reasoning
    cdef int* block_entry       # per block kind: the index of its opener in entries
    # the entries of block openers (not word openers), by dialect: those of dialect d are
    # dialect_blocks[dialect_lo[d]:dialect_lo[d + 1]] (a before-marker looks ahead for them)
    cdef int* dialect_blocks
    cdef int* dialect_lo
    cdef bint* has_starts       # per block kind: the body's first character is restricted
    # per block kind: its value tags (Block.values), VALUES_MAX slots each, n_values used; the end of an
    # opening tag's head (value_head: "" for ">")
    cdef Lit* value_open
    cdef Lit* value_close
    cdef Lit* value_head
    cdef int* n_values
    cdef bint value_stop[128]   # what _lex looks at inside a value: "<" and the strong openers' first characters
    cdef bint value_second[128]  # the (ASCII) second characters of what _lex matches inside a value: every
    #                              literal's, every closer's, every value tag's; a stop followed by none is passed
    cdef bint span_first[128]   # the reasoning span closers' first characters (a block in a span ends at one)
    cdef bint* starts           # per block kind, 128 flags: the characters it may start with
    cdef bint first[128]        # first characters of every literal
    cdef bint lex_stop[2][128]  # what _lex must look at outside a JSON string: closers' and literals' first
    #                             characters and the quote and brackets [0], or only "{" [1] before the body's JSON
    #                             object (LEX_BEFORE_JSON; all ASCII: others are skipped)
    cdef unsigned char lex_vecs[2][2][8 * 16]  # each set's characters (repeated to fill 8), when at most 8, as
    #                             _past_chars reads them: 16 bytes each, in 1- and 2-byte text (little-endian)
    cdef bint lex_blocks[2]     # lex_vecs holds the set's: a run is skipped block by block first
    cdef bint strong_first[128]
    # what a block body's text may hold to be deferred, not lexed (StreamScrubber._defer): none of every literal's
    # first character, every closer's, "<" (value tags) and the reasoning span closers' (1-byte text is read
    # through all 256; non-ASCII characters stop it when some such first character is non-ASCII: defer_wide)
    cdef unsigned char defer_stop[256]
    cdef bint defer_wide
    cdef bint anchors[128]      # word openers' anchors (their literal is looked for before it)
    cdef Py_UCS4 first_chars[FIRST_MAX]
    cdef bint pair[128][128]    # some literal starts with these two (ASCII) characters
    cdef bint pair_wide[128]    # some literal starts with this character and a non-ASCII one
    cdef bint triple[4096]      # some literal starts with three characters of this hash (_triple)
    cdef int first_lo[128]      # entries [first_lo, first_hi) start with this character
    cdef int first_slot[128]    # the index of a first character in first_chars
    # by first character's slot and second character's low bits (PAIR_HASH): the first entry that starts
    # with those two characters; -1 none; -2 two second characters meet here (a binary search tells them)
    cdef int pair_at[FIRST_MAX][PAIR_HASH]
    # a scrubber's characters to stop at in content, by 2 * code_fences + (tools given): the literals'
    # first characters, the backtick with code fences, '{' and '[' with tools (bare calls)
    cdef unsigned char stop[4][128]
    # the same, only as some literal's first character (no fence, bare call or word opener's anchor): it
    # starts nothing when no literal starts with it and the next two characters (_candidate's first test)
    cdef unsigned char lit_only[4][128]
    cdef int first_hi[128]
    cdef int n_first
    cdef Py_ssize_t longest
    cdef list dialects
    cdef list texts             # the entries' literals
    cdef list closer_texts      # the blocks' closers ("": none)
    cdef int n_all              # entries [n_entries, n_all): word openers, found at their anchor, not dispatched

    def __cinit__(self, table):
        cdef int nb = len(table.blocks), nm = len(table.markers), e = 0, c, f
        cdef Entry* en
        self.table = table
        self.n_entries = nb + nm
        self.entries = <Entry*>PyMem_Malloc(max(1, self.n_entries) * sizeof(Entry))
        self.closers = <Lit*>PyMem_Malloc(max(1, nb) * sizeof(Lit))
        self.json_end = <bint*>PyMem_Malloc(max(1, nb) * sizeof(bint))
        self.json_strings = <bint*>PyMem_Malloc(max(1, nb) * sizeof(bint))
        self.plain_skip = <bint*>PyMem_Malloc(max(1, nb) * sizeof(bint))
        self.block_dialect = <int*>PyMem_Malloc(max(1, nb) * sizeof(int))
        self.one_pass = <int*>PyMem_Malloc(max(1, nb) * sizeof(int))
        self.marker_reasoning = <int*>PyMem_Malloc(max(1, nm) * sizeof(int))
        self.block_entry = <int*>PyMem_Malloc(max(1, nb) * sizeof(int))
        self.has_starts = <bint*>PyMem_Malloc(max(1, nb) * sizeof(bint))
        self.value_open = <Lit*>PyMem_Malloc(max(1, nb) * VALUES_MAX * sizeof(Lit))
        self.value_close = <Lit*>PyMem_Malloc(max(1, nb) * VALUES_MAX * sizeof(Lit))
        self.value_head = <Lit*>PyMem_Malloc(max(1, nb) * sizeof(Lit))
        self.n_values = <int*>PyMem_Malloc(max(1, nb) * sizeof(int))
        self.starts = <bint*>PyMem_Malloc(max(1, nb) * 128 * sizeof(bint))
        self.dialect_names = tuple(b.dialect for b in table.blocks)
        self.dialects = sorted({b.dialect for b in table.blocks} | {m.dialect for m in table.markers})
        self.dialect_blocks = <int*>PyMem_Malloc(max(1, nb) * sizeof(int))
        self.dialect_lo = <int*>PyMem_Malloc((len(self.dialects) + 1) * sizeof(int))
        if not (self.entries and self.closers and self.json_end and self.json_strings and self.plain_skip
                and self.block_dialect and self.one_pass and self.marker_reasoning and self.block_entry
                and self.has_starts and self.starts and self.dialect_blocks and self.dialect_lo
                and self.value_open and self.value_close and self.value_head and self.n_values):
            raise MemoryError()
        for c in range(128):
            self.lex_stop[LEX_IN_JSON][c] = chr(c) in '"{}[]'
            self.lex_stop[LEX_BEFORE_JSON][c] = c == 0x7B
            self.first[c] = False
            self.strong_first[c] = False
            self.span_first[c] = False
            self.anchors[c] = False
            self.first_lo[c] = 0
            self.first_hi[c] = 0
            self.pair_wide[c] = False
            for e in range(128):
                self.pair[c][e] = False
        for e in range(4096):
            self.triple[e] = False
        e = 0
        self.n_first = 0
        self.longest = 1
        items = [(b.opener, True, k, b) for k, b in enumerate(table.blocks) if b.anchor is None]
        items += [(m.literal, False, k, m) for k, m in enumerate(table.markers)]
        # grouped by their first two characters, longest first within a group; then the word openers
        items.sort(key=lambda it: (it[0][0], it[0][1], -len(it[0])))
        self.n_entries = len(items)
        items += [(b.opener, True, k, b) for k, b in enumerate(table.blocks) if b.anchor is not None]
        self.n_all = len(items)
        self.texts = [it[0] for it in items]
        self.closer_texts = [b.closer or "" for b in table.blocks]
        for text, is_block, k, obj in items:
            if ord(text[0]) >= 128 or len(text) < 2:
                raise ValueError(f"a marker literal must start with an ASCII character and be 2+ long: {text!r}")
            en = &self.entries[e]
            _lit(&en.lit, text)
            en.block = is_block
            en.k = k
            en.strong = is_block and obj.strong
            en.tag = is_block and obj.delimiters is not None
            for c in range(128):
                en.delim[c] = en.tag and chr(c) in obj.delimiters
            en.before = (not is_block) and obj.before
            en.reasoning = 0 if is_block else obj.reasoning
            if not is_block:
                self.marker_reasoning[k] = obj.reasoning
            en.always = (not is_block) and obj.always
            en.dialect = self.dialects.index(obj.dialect)
            en.anchor = ord(obj.anchor) if is_block and obj.anchor is not None else 0
            if is_block:
                self.block_entry[k] = e
            if en.anchor:  # a word opener: only its anchor character is looked for
                if en.anchor >= 128:
                    raise ValueError(f"a word opener's anchor must be ASCII: {obj.anchor!r}")
                self.anchors[en.anchor] = True
                if not self.first[en.anchor]:
                    if self.n_first == FIRST_MAX:
                        raise ValueError(f"at most {FIRST_MAX} distinct first characters")
                    self.first[en.anchor] = True
                    self.first_slot[en.anchor] = self.n_first
                    self.first_chars[self.n_first] = en.anchor
                    self.n_first += 1
                e += 1
                continue
            if not self.first[ord(text[0])]:
                if self.n_first == FIRST_MAX:
                    raise ValueError(f"at most {FIRST_MAX} distinct first characters")
                self.first_lo[ord(text[0])] = e
                self.first[ord(text[0])] = True
                self.first_slot[ord(text[0])] = self.n_first
                self.first_chars[self.n_first] = ord(text[0])
                self.n_first += 1
            if en.strong:
                self.strong_first[ord(text[0])] = True
            if en.reasoning < 0:
                self.span_first[ord(text[0])] = True
            self.triple[_triple(ord(text[0]), ord(text[1]), ord(text[2]) if len(text) > 2 else 0)] = True
            if len(text) == 2:  # a 2-character literal: any third character may follow
                for c in range(4096):
                    self.triple[c] = True
            if ord(text[1]) < 128:
                self.pair[ord(text[0])][ord(text[1])] = True
            else:
                self.pair_wide[ord(text[0])] = True
            self.longest = max(self.longest, len(text))
            e += 1
            self.first_hi[ord(text[0])] = e
        for f in range(FIRST_MAX):
            for c in range(PAIR_HASH):
                self.pair_at[f][c] = -1
        for e in reversed(range(self.n_entries)):  # (sorted by their first two characters: groups)
            en = &self.entries[e]
            if e + 1 < self.n_entries and en.lit.ch[0] == self.entries[e + 1].lit.ch[0] and (
                    en.lit.ch[1] == self.entries[e + 1].lit.ch[1]):
                en.pair_end = self.entries[e + 1].pair_end
            else:
                en.pair_end = e + 1
        for e in range(self.n_entries):
            en = &self.entries[e]
            if e == 0 or en.lit.ch[0] != self.entries[e - 1].lit.ch[0] or en.lit.ch[1] != self.entries[e - 1].lit.ch[1]:
                f = self.first_slot[en.lit.ch[0]]
                c = <int>en.lit.ch[1] & (PAIR_HASH - 1)
                self.pair_at[f][c] = e if self.pair_at[f][c] == -1 else -2
        c = 0
        for f in range(len(self.dialects)):
            self.dialect_lo[f] = c
            for e in range(self.n_entries):
                if self.entries[e].block and self.entries[e].dialect == f:
                    self.dialect_blocks[c] = e
                    c += 1
        self.dialect_lo[len(self.dialects)] = c
        for text in [b.closer for b in table.blocks if b.closer] + [b.opener for b in table.blocks] + [
                m.literal for m in table.markers]:
            if ord(text[0]) >= 128:
                raise ValueError(f"a block or marker literal must start with an ASCII character: {text!r}")
            self.lex_stop[LEX_IN_JSON][ord(text[0])] = True
            self.lex_stop[LEX_BEFORE_JSON][ord(text[0])] = True
        for f in (LEX_IN_JSON, LEX_BEFORE_JSON):
            lex_chars = [c for c in range(128) if self.lex_stop[f][c]]
            self.lex_blocks[f] = len(lex_chars) <= 8
            if self.lex_blocks[f]:
                for c in range(8 * 16):
                    self.lex_vecs[f][0][c] = lex_chars[(c // 16) % len(lex_chars)]  # 16 in a block
                    self.lex_vecs[f][1][c] = lex_chars[(c // 16) % len(lex_chars)] if c % 2 == 0 else 0  # 8 of 2
        cdef int variant
        cdef bint fences, tools, other
        for variant in range(4):
            fences, tools = variant >= 2, variant % 2
            for c in range(128):
                other = (fences and c == 0x60) or (tools and (c == 0x7B or c == 0x5B))
                self.stop[variant][c] = self.first[c] or other
                self.lit_only[variant][c] = self.first[c] and not other and not self.anchors[c]
        strong_proof = all(json_proof(b.opener) for b in table.blocks if b.anchor is None and b.strong)
        for k, b in enumerate(table.blocks):
            _lit(&self.closers[k], b.closer or "")
            self.json_end[k] = b.closer is None
            self.json_strings[k] = b.json_strings
            # _lex skips a plain object where it would look for none of these (_table.json_proof)
            self.plain_skip[k] = strong_proof and bool(b.closer) and json_proof(b.closer) and json_proof(b.opener)
            self.block_dialect[k] = self.dialects.index(b.dialect)
            self.one_pass[k] = ONE_PASS_HERMES if b.grammar == "hermes" else (
                ONE_PASS_DEEPSEEK if b.grammar == "deepseek" else NO_ONE_PASS)
            self.has_starts[k] = b.starts is not None
            for c in range(128):
                self.starts[k * 128 + c] = b.starts is not None and chr(c) in b.starts
            if len(b.values) > VALUES_MAX:
                raise ValueError(f"at most {VALUES_MAX} value tag pairs a block: {b.dialect}")
            self.n_values[k] = len(b.values)
            for f, (opening, closing) in enumerate(b.values):
                _lit(&self.value_open[k * VALUES_MAX + f], opening)
                _lit(&self.value_close[k * VALUES_MAX + f], closing)
            _lit(&self.value_head[k], "" if b.value_head_end == ">" else b.value_head_end)
        for c in range(128):
            self.value_stop[c] = c == 0x3C or self.strong_first[c]
            self.value_second[c] = False
        for e in range(self.n_entries):
            self._second(&self.entries[e].lit)
        for k in range(nb):
            self._second(&self.closers[k])
            for f in range(self.n_values[k]):
                self._second(&self.value_open[k * VALUES_MAX + f])
                self._second(&self.value_close[k * VALUES_MAX + f])
        self.defer_wide = False
        for c in range(256):
            self.defer_stop[c] = c < 128 and (self.first[c] or self.strong_first[c] or self.span_first[c] or c == 0x3C)
        for k in range(2 * nb):
            if k < nb:
                c = self.closers[k].ch[0] if self.closers[k].n else 0x3C
            else:
                c = self.entries[self.block_entry[k - nb]].lit.ch[0]
            if c < 128:
                self.defer_stop[c] = True
            else:
                self.defer_wide = True
        if self.defer_wide:
            for c in range(128, 256):
                self.defer_stop[c] = True

    cdef inline bint defers(self, int kind, const void* d, Py_ssize_t n) noexcept:
        """No character of ``defer_stop`` in the text (of at least one character): a block body may hold it
        unlexed. Over 1-byte text of up to 8 characters, eight reads with no loop (as ``_loud_short``)."""
        cdef const Py_UCS1* p1
        cdef unsigned char any_stop = 0
        cdef Py_ssize_t k, last
        cdef Py_UCS4 c
        if n == 0:
            return False
        if kind == 1:
            p1 = <const Py_UCS1*>d
            if n <= 8:
                last = n - 1
                for k in range(8):
                    any_stop |= self.defer_stop[p1[k if k < last else last]]
            else:
                for k in range(n):
                    any_stop |= self.defer_stop[p1[k]]
            return not any_stop
        for k in range(n):
            c = PyUnicode_READ(kind, d, k)
            if (c < 128 and self.defer_stop[c]) or (c >= 128 and self.defer_wide):
                return False
        return True

    cdef void _second(self, const Lit* lit) noexcept:
        """Note ``lit``'s second character in ``value_second`` (non-ASCII ones are never passed: see ``_lex``)."""
        if lit.n >= 2 and lit.ch[1] < 128:
            self.value_second[lit.ch[1]] = True

    def __dealloc__(self):
        PyMem_Free(self.entries)
        PyMem_Free(self.closers)
        PyMem_Free(self.json_end)
        PyMem_Free(self.json_strings)
        PyMem_Free(self.plain_skip)
        PyMem_Free(self.block_dialect)
        PyMem_Free(self.one_pass)
        PyMem_Free(self.marker_reasoning)
        PyMem_Free(self.block_entry)
        PyMem_Free(self.has_starts)
        PyMem_Free(self.value_open)
        PyMem_Free(self.value_close)
        PyMem_Free(self.value_head)
        PyMem_Free(self.n_values)
        PyMem_Free(self.starts)
        PyMem_Free(self.dialect_blocks)
        PyMem_Free(self.dialect_lo)

    cdef inline bint starts_nothing(self, int kind, const void* d, Py_ssize_t n, Py_ssize_t i, Py_UCS4 c) noexcept:
        """No literal starts with ``d[i]`` (``c``, ASCII) and the two characters after it, or the one there is
        (``i + 1 < n``): ``_candidate``'s first tests."""
        cdef Py_UCS4 c2 = PyUnicode_READ(kind, d, i + 1)
        if i + 2 < n:
            return not self.triple[_triple(c, c2, PyUnicode_READ(kind, d, i + 2))]
        return not (self.pair_wide[c] if c2 >= 128 else self.pair[c][c2])

    cdef int prefix_of(self, int kind, const void* d, Py_ssize_t n) noexcept:
        """The first entry whose literal the text (of at least one character) is a proper prefix of, or -1:
        ``_candidate`` holds such a text whole at its first character (the triple test passes where a
        literal starts so)."""
        cdef Py_UCS4 c = PyUnicode_READ(kind, d, 0), c2
        cdef int lo, hi, e
        if n >= self.longest or c >= 128 or not self.first[c]:
            return -1
        lo, hi = self.first_lo[c], self.first_hi[c]
        if n >= 2:
            c2 = PyUnicode_READ(kind, d, 1)
            if not (self.pair_wide[c] if c2 >= 128 else self.pair[c][c2]):
                return -1
            self.pair_range(c, c2, &lo, &hi)
        for e in range(lo, hi):
            if _match(kind, d, n, 0, &self.entries[e].lit) == -1:
                return e
        return -1

    cdef inline void pair_range(self, Py_UCS4 c, Py_UCS4 c2, int* lo, int* hi) noexcept:
        """[lo, hi): the entries that start with ``c`` (a literal's first character) and ``c2``, given that
        some do (``pair``, ``pair_wide``): second-character dispatch, a look-up (a binary search where two
        second characters share ``pair_at``'s slot)."""
        cdef int at = self.pair_at[self.first_slot[c]][<int>c2 & (PAIR_HASH - 1)]
        if at == -2:  # (entries are sorted by their second character within the first's)
            lo[0] = self.lower_bound(self.first_lo[c], self.first_hi[c], c2)
            hi[0] = self.lower_bound(lo[0], self.first_hi[c], <Py_UCS4>(<int>c2 + 1))
        elif at >= 0 and self.entries[at].lit.ch[1] == c2:
            lo[0], hi[0] = at, self.entries[at].pair_end
        else:  # (pair_wide: another wide second character)
            lo[0] = hi[0] = self.first_lo[c]

    cdef inline int lower_bound(self, int lo, int hi, Py_UCS4 c2) noexcept:
        """The first entry in [lo, hi) (sorted by second character) whose second character is >= c2."""
        cdef int mid
        while lo < hi:
            mid = (lo + hi) // 2
            if self.entries[mid].lit.ch[1] < c2:
                lo = mid + 1
            else:
                hi = mid
        return lo

    cdef Py_ssize_t word_tail(self, int kind, const void* d, Py_ssize_t start, Py_ssize_t n) noexcept:
        """The index from which text[start:n] ends with a proper prefix of a word opener and its anchor
        (``f`` … ``functools``): it must be held back; ``n`` if none."""
        cdef int w, r
        cdef Py_ssize_t k
        for w in range(self.n_entries, self.n_all):
            for k in range(max(start, n - self.entries[w].lit.n), n):
                r = _match(kind, d, n, k, &self.entries[w].lit)
                if r == -1 or (r == 1 and k + self.entries[w].lit.n == n):
                    return k
        return n

    cdef inline Py_ssize_t find_char(self, int kind, const void* d, Py_ssize_t start, Py_ssize_t end, int f) noexcept:
        """Index of first character number ``f`` in [start, end), or -1."""
        return _find(kind, d, start, end, self.first_chars[f])

    cdef inline Py_ssize_t find_first(self, int kind, const void* d, Py_ssize_t start, Py_ssize_t end) noexcept:
        """Index of the next character that can begin a literal, in [start, end), or -1."""
        cdef Py_ssize_t best = -1, i
        cdef int f
        for f in range(self.n_first):  # one memchr each (wide text too: see _find)
            i = _find(kind, d, start, end if best < 0 else best, self.first_chars[f])
            if i >= 0:
                best = i
        return best

    cdef int opener_at(self, int kind, const void* d, Py_ssize_t n, Py_ssize_t i, bint final, int own) noexcept:
        """1 if a strong opener, or entry ``own`` (the open block's opener; -1: none), starts at ``i`` (a tag
        one with its delimiter); -1 undecided; else 0."""
        cdef bint undecided = False
        cdef int e, r, lo = 0, hi = 0
        cdef Py_UCS4 c = PyUnicode_READ(kind, d, i)
        cdef Py_UCS4 c2
        if (c >= 128 or not self.strong_first[c]) and (own < 0 or self.entries[own].lit.ch[0] != c):
            return 0
        if c < 128:  # the entries that start with c, and (second-character dispatch) with what follows it
            lo, hi = self.first_lo[c], self.first_hi[c]
            if i + 1 < n:
                c2 = PyUnicode_READ(kind, d, i + 1)
                if not (self.pair_wide[c] if c2 >= 128 else self.pair[c][c2]):
                    hi = lo
                else:
                    self.pair_range(c, c2, &lo, &hi)
        for e in range(lo, hi):
            if self.entries[e].strong or e == own:
                r = self.tag_at(kind, d, n, i, &self.entries[e])
                if r == 1:
                    return 1
                undecided = undecided or r == -1
        if own >= self.n_entries:  # a word opener: not among the entries dispatched by first character
            r = self.tag_at(kind, d, n, i, &self.entries[own])
            if r == 1:
                return 1
            undecided = undecided or r == -1
        return -1 if undecided and not final else 0

    cdef inline int tag_at(self, int kind, const void* d, Py_ssize_t n, Py_ssize_t i, Entry* en) noexcept:
        """1 if ``en`` (with its delimiter, for a tag) starts at ``i``; -1 if the text ends before that is
        known; else 0."""
        cdef Py_ssize_t j
        cdef Py_UCS4 c
        cdef int r = _match(kind, d, n, i, &en.lit)
        if r != 1:
            return r
        j = i + en.lit.n
        if not en.tag:
            return 1
        if j < n:
            c = PyUnicode_READ(kind, d, j)
            return 1 if c < 128 and en.delim[c] else 0
        return -1


cdef _CSpec _cspec(table):
    spec = table.derived.get("c_spec")
    if spec is None:
        spec = table.derived["c_spec"] = _CSpec(table)
    return <_CSpec>spec


def hold_from(text, *, formats=None):
    """Index from which ``text`` must be held back because it may begin an opener; ``len(text)`` if none.

    (1) the first tag opener (``<tool_call``) followed by end of text or one of its delimiters with no
    ``>`` after it and fewer than ATTR_MAX characters after it; else (2) the start of the longest
    suffix that is a proper prefix of an opener or marker literal; else (3) ``len(text)``.
    """
    if not isinstance(text, str):
        raise TypeError(f"hold_from() expects str, not {type(text).__name__}")
    cdef _CSpec spec = _cspec(table_for(formats))
    cdef int kind = PyUnicode_KIND(text)
    cdef const void* d = PyUnicode_DATA(text)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
    cdef Py_ssize_t last_gt = -1, i, j, start, last
    cdef Py_UCS4 c
    cdef int e
    cdef Entry* en
    for i in range(n - 1, -1, -1):
        if PyUnicode_READ(kind, d, i) == 0x3E:
            last_gt = i
            break
    start = max(last_gt - spec.longest + 1, n - C_ATTR_MAX - spec.longest, 0)
    for i in range(start, n):
        c = PyUnicode_READ(kind, d, i)
        if c >= 128 or not spec.first[c]:
            continue
        for e in range(spec.n_entries):
            en = &spec.entries[e]
            if not en.tag or _match(kind, d, n, i, &en.lit) != 1:
                continue
            j = i + en.lit.n
            if j > last_gt and n - j < C_ATTR_MAX:
                if j == n:
                    return i
                c = PyUnicode_READ(kind, d, j)
                if c < 128 and en.delim[c]:
                    return i
    last = spec.word_tail(kind, d, 0, n)
    for i in range(max(0, n - spec.longest + 1), last):
        c = PyUnicode_READ(kind, d, i)
        if c < 128 and spec.first[c]:
            for e in range(spec.n_entries):
                if n - i < spec.entries[e].lit.n and _match(kind, d, n, i, &spec.entries[e].lit) == -1:
                    return i
    return last


cdef Py_ssize_t SLOT_CONTENT = _slot(Parsed, "content"), SLOT_CALLS = _slot(Parsed, "calls")
cdef Py_ssize_t SLOT_REMOVED = _slot(Parsed, "removed"), SLOT_REASONING = _slot(Parsed, "reasoning")
cdef Py_ssize_t SLOT_MALFORMED = _slot(Parsed, "malformed")


cdef class _Settings:
    """What a scrubber reads of an ``Options``, read once (kept in ``options.derived``)."""
    cdef _CSpec spec
    cdef object ctx
    cdef str unknown_tools, calls_in_reasoning
    cdef Py_ssize_t max_block
    cdef bint whole, has_tools, reasoning_started, code_fences, stream_arguments, trim_blanks, guided
    cdef str prompt_tail
    cdef int n_quiet  # Options.quiet as code points (quiet_chars); -1: None, no text is quiet
    cdef Py_UCS4 quiet_chars[QUIET_MAX]

    def __cinit__(self, options):
        self.spec = _cspec(options.table)
        self.ctx = options.ctx
        self.unknown_tools = options.unknown_tools
        self.calls_in_reasoning = options.calls_in_reasoning
        self.max_block = options.max_block
        self.whole = bool(options.table.whole)
        self.has_tools = options.ctx.has_tools
        self.guided = options.guided
        self.reasoning_started = options.reasoning_started
        self.code_fences = options.code_fences
        self.stream_arguments = options.stream_arguments
        self.trim_blanks = options.trim_blanks
        self.prompt_tail = options.prompt_tail
        self.n_quiet = -1 if options.quiet is None else len(options.quiet)
        if self.n_quiet > QUIET_MAX:
            raise ValueError(f"at most {QUIET_MAX} characters can begin markup, not {self.n_quiet}")
        for k in range(max(self.n_quiet, 0)):
            self.quiet_chars[k] = ord(options.quiet[k])


cdef _Settings _settings(options):
    cdef dict derived = options.derived
    cdef PyObject* got = PyDict_GetItem(derived, "c")  # borrowed
    if got is not NULL:
        return <_Settings>got
    settings = derived["c"] = _Settings(options)
    return settings


cdef str _stripped(str s):
    """``s.strip()``: without the whitespace (``str.isspace``) at both ends; ``s`` itself when there is none."""
    cdef int kind = PyUnicode_KIND(s)
    cdef const void* d = PyUnicode_DATA(s)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(s)
    cdef Py_ssize_t lo = _skip_space(kind, d, 0, n)
    cdef Py_ssize_t hi = _back_space(kind, d, lo, n)
    return s if lo == 0 and hi == n else _slice(s, lo, hi)


cdef object _parsed(str content, list calls, Py_ssize_t removed, str reasoning, Py_ssize_t malformed, bint trim):
    """``Parsed(content.strip(), calls, removed, reasoning.strip(), malformed)`` (``trim``: ``trim_blanks``,
    the scrubber dropped the blanks that were markup's: no ``strip``), made as ``_new_call`` makes a
    ``ToolCall`` (``Parsed`` has no ``__new__`` and its ``__init__`` only sets the five slots)."""
    made = PyType_GenericAlloc(<PyTypeObject*>Parsed, 0)
    _fill(made, SLOT_CONTENT, content if trim else _stripped(content))
    _fill(made, SLOT_CALLS, calls)
    _fill(made, SLOT_REMOVED, removed)
    _fill(made, SLOT_REASONING, reasoning if trim else _stripped(reasoning))
    _fill(made, SLOT_MALFORMED, malformed)
    return made


def scan_whole(text, options, truncated=False):
    """``parse``'s pass: the ``Parsed`` of ``text`` fed to a ``StreamScrubber(options=options)`` whole and
    flushed (``flush(truncated)``); a text with none of ``options.quiet`` is all content, without a scrubber.
    ``TypeError`` for a ``text`` not a ``str``."""
    return _scan_whole(text, options, truncated)


cdef object _scan_whole(text, options, bint truncated=False):
    if not PyUnicode_CheckExact(text):
        if not PyUnicode_Check(text):
            raise TypeError(f"parse() expects str, not {type(text).__name__}")
        text = PyUnicode_FromObject(text)  # a subclass: its characters
    cdef _Settings settings = _settings(options)
    cdef int kind = PyUnicode_KIND(text)
    cdef const void* d = PyUnicode_DATA(text)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
    cdef int k
    if settings.n_quiet >= 0:
        for k in range(settings.n_quiet):
            if _find(kind, d, 0, n, settings.quiet_chars[k]) >= 0:
                break
        else:
            return _parsed(text, [], 0, "", 0, settings.trim_blanks)
    cdef StreamScrubber scrubber = StreamScrubber.__new__(StreamScrubber)
    scrubber._setup(settings)
    if scrubber._settled():  # (feed's screen would search the text for quiet_chars again: it has one)
        content = scrubber._unquiet(text, kind, d, n, scrubber._loud_short(kind, d, n) if n <= SHORT_DELTA else 0)
    else:
        content = scrubber._feed(text)
    scrubber._truncated = truncated
    if not settings.guided:
        content += scrubber._flush()
        if settings.trim_blanks:
            content += scrubber._edges_end()
    else:  # what feed and flush do
        content = scrubber._guided_text(content)
        rest = scrubber._flush()
        if settings.trim_blanks:
            rest += scrubber._edges_end()
        content += rest if scrubber._guided is None else scrubber._guided_end(rest, truncated)
    return _parsed(content, scrubber.calls, scrubber.removed, scrubber._take_reasoning(), scrubber.malformed,
                   settings.trim_blanks)


# (C only, not in __all__: parse and use_python_parse stand in for parse.py's parse; the twin has no such thing)
cdef object _python_parse = None  # parse.py's parse: every path but the default one (see parse below)
cdef object _scan_module = None  # textcalls._scan, for the implementation in use (read at call time)
cdef object _this = None  # this module


def use_python_parse(python_parse):
    """Give ``parse`` the Python ``parse`` it stands for (``textcalls.parse`` calls this once)."""
    global _python_parse, _scan_module, _this
    from textcalls import _scan, _scan_c
    _python_parse, _scan_module, _this = python_parse, _scan, _scan_c


def parse(text, *, max_block=MAX_BLOCK, formats=None, tools=None, unknown_tools="keep_text",
          calls_in_reasoning="auto", code_fences=True, reasoning_started=False, options=None, truncated=False,
          trim_blanks=False, prompt_tail="", schema_guided=True):
    """``textcalls.parse``: its common paths (no keyword, or only ``options`` an ``Options``; this extension
    in use) made here, without a Python frame; every other call goes to the Python ``parse``
    (``use_python_parse``)."""
    if (max_block is MAX_BLOCK and formats is None and tools is None and code_fences is True
            and reasoning_started is False and unknown_tools == "keep_text" and calls_in_reasoning == "auto"
            and truncated is False and trim_blanks is False and prompt_tail == "" and schema_guided is True
            and (options is None or type(options) is Options)
            and _this is not None and _scan_module.impl is _this):
        return _scan_whole(text, DEFAULT if options is None else options)
    return _python_parse(text, max_block=max_block, formats=formats, tools=tools, unknown_tools=unknown_tools,
                         calls_in_reasoning=calls_in_reasoning, code_fences=code_fences,
                         reasoning_started=reasoning_started, options=options, truncated=truncated,
                         trim_blanks=trim_blanks, prompt_tail=prompt_tail, schema_guided=schema_guided)


# -- the stream state machine ---------------------------------------------------------------------

cdef enum:  # the grammars whose plain call objects the scanner reads in one pass (_CSpec.one_pass)
    NO_ONE_PASS
    ONE_PASS_HERMES
    ONE_PASS_DEEPSEEK


cdef enum Holding:
    NOT_HOLDING   # nothing: the scanner reads every delta
    WHOLE_BLANK   # a whole-message format is enabled and the message has been only whitespace so far
    WHOLE_HELD    # holding a message that may be one whole-message call (json_message …)
    BARE_LEAD     # with tools: holding the message's start, a possible bare JSON call (_table.BareLead)
    BARE_TAIL     # with tools: holding a possible bare JSON call from a line start to the end

cdef enum Lexed:
    LX_CLOSE, LX_PROSE, LX_MORE, LX_CAP, LX_END, LX_RAW

cdef enum Cand:
    C_HOLD, C_PROSE, C_MARKER, C_BLOCK


cdef inline Py_ssize_t _value_tag(int kind, const void* d, Py_ssize_t n, Py_ssize_t i, const Lit* opening,
                                  const Lit* head, bint final) noexcept:
    """Where the value starts when a value tag (``opening``, its head up to ``head``, ``>`` when empty:
    ``Block.values``) starts at ``i``; -1 when none does; -2 undecided (the text ends first)."""
    cdef int r = _match(kind, d, n, i, opening)
    cdef Py_ssize_t j, k, stop
    cdef Py_UCS4 c = 0
    if r == -1:
        return -1 if final else -2
    if r == 0:
        return -1
    j = i + opening.n
    if opening.ch[opening.n - 1] == 0x3E:  # '>': the whole tag
        return j
    stop = min(n, j + C_ATTR_MAX)
    k = j
    while k < stop:
        c = PyUnicode_READ(kind, d, k)
        if c == 0x3C or c == 0x3E:
            break
        k += 1
    if k >= stop:
        return -2 if n < j + C_ATTR_MAX and not final else -1
    if head.n == 0:
        return k + 1 if c == 0x3E else -1
    if c != 0x3C:
        return -1
    r = _match(kind, d, n, k, head)
    if r == -1:
        return -1 if final else -2
    return k + head.n if r == 1 else -1


cdef class StreamScrubber:
    """Remove tool-call blocks from a text arriving in deltas; collect the calls they hold.

    ``feed(delta)`` returns the text that is safe to show now; ``flush()`` ends the stream and
    returns the rest. Whatever the splitting, ``(feeds + flush).strip() == parse(text).content``
    and ``calls`` equal ``parse(text).calls``. ``removed`` counts blocks and markers removed;
    ``malformed`` the blocks removed from the content that gave no call (malformed, or every call dropped).
    The keywords are ``parse``'s (``max_block``, ``formats``, ``tools``, ``unknown_tools``,
    ``calls_in_reasoning``, ``code_fences``, ``reasoning_started``), or ``options=`` an ``Options``
    holding them, checked once and shared between scrubbers. With ``stream_arguments=True``,
    ``take_events()`` gives the calls' events as their bodies arrive (``_events``); ``abandoned``
    counts the calls that started and were abandoned.
    """

    cdef readonly list calls
    cdef set _ids  # the ids of calls, each once (unique_ids)
    cdef readonly Py_ssize_t removed
    cdef readonly Py_ssize_t malformed  # blocks removed from the content that gave no call
    cdef readonly Py_ssize_t max_block
    cdef _CSpec _spec
    cdef object _ctx
    cdef str _unknown
    cdef str _held            # unresolved text: a candidate opener, or a block body's undecided tail
    # a held text that ends with a proper prefix of this literal (NULL: none), _held_n long, from _held_at;
    # _held_src is the literal's text: deltas that go on with it only lengthen it (feed), and _held is brought
    # up to it where it is read (_own_held). In content, an opener's or a marker's start (_unquiet), or a
    # section marker's opener after it (_outside); in a block, its closer's start (_run).
    cdef const Lit* _held_lit
    cdef str _held_src
    cdef Py_ssize_t _held_n, _held_at
    cdef bint _closed
    cdef bint _truncated      # flush(truncated=True): the output was cut
    cdef bint _busy           # a call is running: a second one at the same time raises (_enter)
    cdef Py_ssize_t _pos      # stream offset of _held[0]
    cdef int _after_block     # dialect of the block that ended with only whitespace since; -1: none
    cdef Py_ssize_t _poison_until  # blocks opening before this offset are scanned without JSON-string awareness
    cdef str _opener          # inside a block: the opener's text; None outside
    cdef int _kind            # inside a block: its kind (index in the table's blocks)
    cdef bint _json_end
    cdef list _parts
    cdef Py_ssize_t _body_len
    # inside a block (past its first non-blank character, within the cap, no call events): deltas with nothing in
    # them that could end it or change what it is (_CSpec.defers) are held unlexed, as _held would be, and lexed
    # at once where _held is next read (_own_held): the lexer's answer on them was "more" whatever their split
    cdef char* _defer        # its characters (_defer_n of them, of kind _defer_kind; the largest kind's
    cdef Py_ssize_t _defer_n  # largest character _defer_max), in a buffer of _defer_cap bytes
    cdef Py_ssize_t _defer_cap
    cdef int _defer_kind
    cdef Py_UCS4 _defer_max
    cdef Py_ssize_t _opened_at  # inside a block: the stream offset of its opener
    cdef bint _before_json    # inside a block: its JSON value (the first `{`, or a leading `[`) has not begun
    cdef bint _poisoned       # inside a block: scanned without JSON-string awareness (see _poison_until)
    cdef bint _in_str, _esc   # inside a block's JSON: in a string, right after a backslash in one
    # inside a block's value tag (Block.values): the pair's index (-1: outside one); the body offset of the first
    # closer or opener inside it (-1: none yet), and whether that is the closer (else an opener)
    cdef int _value
    cdef Py_ssize_t _raw_at
    cdef bint _raw_close
    cdef bint _at_start       # inside a block: no non-blank character of its body seen yet
    cdef Py_ssize_t _depth
    cdef object _walked_s     # inside a block: the buffer in which _lex read the plain object _walked (None: none)
    cdef Walked _walked
    cdef bint _reasoning      # inside a reasoning span
    # _reasoning.Reasoning: the text not yet taken, the blocks of spans until decided; None until a span
    # opens (nothing to take or decide before)
    cdef object _thought
    cdef list _reasoning_out  # _thought.out, the same list, for the hot path (NO_REASONING before a span)
    cdef str _calls_in_reasoning
    cdef bint _fences         # markup inside a markdown code fence (in content) is text
    cdef bint _fence          # inside a fence
    cdef Py_ssize_t _line     # the current content line's leading spaces (0-3) if it has had nothing else, else -1
    # _holding: what the scrubber holds at a message's start or end (see Holding)
    cdef Holding _holding
    cdef list _whole_parts
    cdef Py_ssize_t _whole_len
    cdef object _bare         # with tools: the _table.BareLead of a held candidate (BARE_LEAD, BARE_TAIL)
    cdef bint _in_code        # inside an inline code span (`…`) in content, on its line
    cdef object _guided       # with tools: the schema-guided stage (_guided.Guided), or None
    cdef bint _gq             # _guided.quiet: a delta without a line break goes through it unchanged
    cdef bint _trail          # with tools: content that ends with bare JSON calls from a line start is read
    cdef bint _lines          # _line is followed (code fences, or _trail)
    cdef Py_ssize_t _bare_stop  # no bare-call candidate starts before this offset (an earlier one read there)
    cdef Py_ssize_t _next_brace[2]  # the same as _next_at for '{' and '[' (with _trail)
    cdef object _memo_s       # the buffer _next_at speaks of
    # per first character: its next index in _memo_s at or after the search (-1: none)
    cdef Py_ssize_t _next_at[FIRST_MAX]
    cdef Py_ssize_t _next_tick  # the same for '`' (code fences)
    # every character that makes a delta leave the fast path: first characters, '`' with code fences, '{' and
    # '[' with tools (read in one pass over a short delta, SHORT_DELTA, instead of one search per character)
    # copies of the spec's stop/lit_only for this scrubber's code_fences and tools: 128 flags each, kept
    # here beside the other fields a delta reads (the spec's arrays sit far into a large struct)
    cdef unsigned char _stop[256]  # 128-255 stay 0 (zeroed at allocation): 1-byte text is read without a range test
    #                                (bit 1; bit 2 marks the line feed, so that the same reads tell _loud_short's
    #                                caller whether a delta can move the line state: _lf)
    cdef unsigned char _lf  # _loud_short's last text had a line feed (bit 2), or may have (not 1-byte text)
    cdef unsigned char _lit_only[128]  # _stop only as some literal's first character (see _loud_short)
    cdef bint _words  # the table has word openers (_CSpec.word_tail must look at a delta's end)
    cdef bint _plain  # _settled() and _edges_plain() after the last call: feed may take its short path
    cdef object _follow       # with stream_arguments: the _events.CallEvents of JSON-bodied blocks; else None
    # the body the call events have not seen: from this index of _parts on, this long; seen once this long
    cdef Py_ssize_t _follow_from, _follow_len, _follow_wants
    # (trim_blanks) content blanks held since the last visible character shown (_show), how long; shown at
    # once (too long); a visible content character was shown; removed, when the last one was
    cdef bint _trim  # blanks that touch markup at the edges are its (_show, _think)
    cdef list _blank
    cdef Py_ssize_t _blank_len
    cdef bint _loose, _seen
    cdef Py_ssize_t _snap
    cdef list _rblank  # the same in a reasoning span (_think)
    cdef Py_ssize_t _rblank_len
    cdef bint _rloose, _rseen
    cdef Py_ssize_t _mute  # characters of the prompt tail still held: not shown if its markup turns out text

    def __init__(self, *, options=None, **keywords):
        if options is None:
            options = Options(**keywords) if keywords else DEFAULT
        elif keywords or not isinstance(options, Options):
            options = options_of({"options": options, **keywords})  # raises the error
        self._setup(_settings(options))

    cdef int _setup(self, _Settings settings) except -1:
        self._spec = settings.spec
        self._ctx = settings.ctx
        self._unknown = settings.unknown_tools
        self.calls = []
        self._ids = set()
        self.removed = 0
        self.malformed = 0
        self.max_block = settings.max_block
        self._held = ""
        self._held_lit = NULL
        self._closed = False
        self._truncated = False
        self._pos = 0
        self._after_block = -1
        self._poison_until = 0
        self._opener = None
        self._value = self._raw_at = -1
        self._parts = []
        self._defer_n, self._defer_max = 0, 0
        self._holding = WHOLE_BLANK if settings.whole else NOT_HOLDING
        self._whole_parts = []
        self._whole_len = 0
        # with tools, a message that starts with a bare JSON call of an offered tool (_table.BareLead)
        self._bare = None
        if settings.has_tools and not self._holding and not settings.reasoning_started and not settings.prompt_tail:
            self._bare = BareLead(self._ctx, self.max_block)
            self._holding = BARE_LEAD
        # with tools, content that ends with bare JSON calls from a line start: 4 = holding such a candidate;
        # the same flag says that tools were given (an unknown tool's call may stay text)
        self._trail = settings.has_tools
        self._bare_stop = 0
        self._reasoning = False
        self._calls_in_reasoning = settings.calls_in_reasoning
        self._thought = None
        self._reasoning_out = NO_REASONING
        self._trim = settings.trim_blanks
        self._blank = []
        self._blank_len = self._snap = 0
        self._loose = self._seen = False
        self._rblank = []
        self._rblank_len = 0
        self._rloose = self._rseen = False
        self._mute = 0
        if settings.reasoning_started:
            self._open_span()
        code_fences = settings.code_fences
        self._fences = code_fences
        self._fence = False
        self._in_code = False
        self._line = 0
        self._lines = code_fences or self._trail
        self._follow = (CallEvents(self.calls, self._ids, self._ctx, self._unknown) if settings.stream_arguments
                        else None)
        cdef int variant = 2 * code_fences + self._trail
        memcpy(self._stop, self._spec.stop[variant], 128)
        self._stop[0x0A] |= 2  # (no literal starts with a line feed: bit 1 stays 0)
        memcpy(self._lit_only, self._spec.lit_only[variant], 128)
        self._words = self._spec.n_all != self._spec.n_entries
        if settings.prompt_tail:
            self._prime(settings.prompt_tail)
        # with tools: the schema-guided stage over the content (None once a dialect rule found a call)
        self._guided = Guided(self._ctx, self.max_block, settings.code_fences) if settings.guided else None
        self._gq = False
        self._plain = self._settled() and self._edges_plain()
        return 0

    cdef int _prime(self, str tail) except -1:
        """Read ``prompt_tail`` as the text before the output, then forget all it gave: nothing of it is shown.
        ValueError unless it is markup of the enabled dialects read whole (none of it would be shown)."""
        shown = self._feed(tail)
        self._own_held()
        if shown or (PyUnicode_GET_LENGTH(self._held) and self._held not in self._spec.table.literals):
            raise ValueError(f"prompt_tail must be markup of the enabled dialects, none of it text: {tail!r}")
        self._reasoning_out.clear()
        self.calls.clear()
        self.removed = self.malformed = self._snap = 0
        self._blank.clear()
        self._blank_len, self._loose, self._seen = 0, False, False
        if self._follow is not None:
            self._follow.take()
        self._mute = PyUnicode_GET_LENGTH(self._held) + (
            0 if self._opener is None else PyUnicode_GET_LENGTH(self._opener) + self._body_len)
        return 0

    cdef str _muted(self, str text):
        """Content ``text`` without what is left of the prompt tail (a block it opened that was no call); once
        something was removed, the tail was markup: nothing to take out."""
        if self.removed:
            self._mute = 0
            return text
        cdef Py_ssize_t k = min(self._mute, PyUnicode_GET_LENGTH(text))
        self._mute -= k
        return _slice(text, k, PyUnicode_GET_LENGTH(text))

    cdef inline int _enter(self) except -1:
        """Mark a call as running; RuntimeError if one already is (the scrubber is shared between
        threads). The check and the mark are one step: under the GIL nothing runs between them, and
        on free-threaded builds the critical section makes them atomic. TypeError if ``__init__`` was
        not run (``StreamScrubber.__new__``): the scrubber has no settings to work with."""
        with cython.critical_section(self):
            if self._spec is None:
                raise TypeError("StreamScrubber.__init__ was not run: the scrubber has no settings")
            if self._busy:
                raise RuntimeError("a StreamScrubber was called from two threads at once: use one scrubber "
                                   "per stream, from one thread at a time")
            self._busy = True
        return 0

    @cython.binding(False)  # a method descriptor, as feed
    def take_reasoning(self):
        """The reasoning text (``<think>`` spans, markers removed) produced since the last call."""
        self._enter()
        text = self._take_reasoning()
        self._busy = False
        return text

    cdef str _take_reasoning(self):
        cdef list out = self._reasoning_out  # _thought.out: taken here, inline (once per delta)
        text = _join(out)
        if len(out):
            out.clear()
        return text

    @cython.binding(False)  # a method descriptor, as feed
    def take_events(self):
        """The call events since the last call (``_events``: ``started``, ``arguments``, ``ended``,
        ``abandoned``); always ``[]`` without ``stream_arguments``."""
        self._enter()
        events = [] if self._follow is None else self._follow.take()
        self._busy = False
        return events

    @property
    def abandoned(self):
        """Calls whose events started and that were then abandoned (0 without ``stream_arguments``)."""
        return 0 if self._follow is None else self._follow.abandoned

    @property
    def guided_quiet(self):
        """True when a delta without a line break would go through the schema-guided stage unchanged (the
        stage off, or inside a line whose head is decided, nothing held): what gateway screens test."""
        return self._guided is None or self._gq

    @cython.binding(False)  # a method descriptor: CPython calls it as it calls list.append (no CyFunction)
    @cython.always_allow_keywords(False)  # METH_O
    def feed(self, delta):
        """Take the next delta; return the text that can be shown now."""
        cdef Py_ssize_t n = 0
        cdef int kind = 0
        cdef const void* data = NULL
        cdef Py_ssize_t k = -1  # where the screen stopped in a short delta of plain content (_feed would _run it)
        with cython.critical_section(self):
            # a short delta of text in plain content, with nothing in it that can begin markup: what _feed gives
            if self._plain and not self._busy and PyUnicode_CheckExact(delta):
                n = PyUnicode_GET_LENGTH(delta)
                if n <= SHORT_DELTA:
                    kind = PyUnicode_KIND(delta)
                    data = PyUnicode_DATA(delta)
                    k = self._loud_short(kind, data, n)
                    if k == n:
                        if self._trim and n and _ws(PyUnicode_READ(kind, data, n - 1)):  # held (_show)
                            k = -1
                        elif self._guided is not None and not (self._gq and _find(kind, data, 0, n, 0x0A) < 0):
                            k = -1  # the schema-guided stage reads it (a line's start, or a held head)
                        else:  # _shown, but a line that has had more than spaces goes on so without a line feed
                            if self._lines and (self._line >= 0 or self._lf):
                                self._line = _line_after(self._line, kind, data, 0, n)
                            self._pos += n
                            return delta
            elif self._held_lit != NULL and not self._busy and not self._holding and PyUnicode_CheckExact(delta):
                n = PyUnicode_GET_LENGTH(delta)
                if _goes_on(self._held_lit, self._held_n, PyUnicode_KIND(delta), PyUnicode_DATA(delta), n):
                    self._held_n += n  # what _feed would do: the held text and the delta, held
                    return ""
            elif self._opener is not None and not self._busy and not self._at_start and self._follow is None and (
                    not self._json_end and not self._closed and PyUnicode_CheckExact(delta)):
                # a block's body: a delta nothing in which can end the block (or change what it is) is held
                # unlexed (_defer): what _run would do is hold it as body ("more"), whatever the split
                n = PyUnicode_GET_LENGTH(delta)
                kind = PyUnicode_KIND(delta)
                if self._body_len + self._defer_n + n <= self.max_block and (
                        (self._defer_n and kind == self._defer_kind) or (
                            not self._defer_n and PyUnicode_GET_LENGTH(self._held) == 0 and self._held_lit == NULL)
                        ) and self._spec.defers(kind, PyUnicode_DATA(delta), n) and (
                        (self._defer_n + n) * kind <= self._defer_cap or self._defer_room((self._defer_n + n) * kind)):
                    memcpy(self._defer + self._defer_n * kind, PyUnicode_DATA(delta), n * kind)
                    self._defer_n += n
                    self._defer_kind = kind
                    if PyUnicode_MAX_CHAR_VALUE(delta) > self._defer_max:
                        self._defer_max = PyUnicode_MAX_CHAR_VALUE(delta)
                    return ""
                n = kind = 0
        return self._feed_entered(delta, kind, data, n, k)

    cdef str _feed_entered(self, delta, int kind, const void* data, Py_ssize_t n, Py_ssize_t k):
        """``feed`` past its short paths, a call running (``_enter``): ``_unquiet`` of a delta the screen stopped
        at ``k``, else (``k`` is -1) ``_feed``. Apart from ``feed`` so that its short paths stay small."""
        self._enter()
        try:
            text = self._unquiet(delta, kind, data, n, k) if k >= 0 else self._feed(delta)
            return text if self._guided is None else self._guided_text(text)
        finally:
            self._plain = self._settled() and self._edges_plain()
            self._busy = False

    @cython.binding(False)  # a method descriptor, as feed
    def flush(self, truncated=False):
        """End the stream: return everything still held, blocks removed (no trimming). ``truncated``: the
        output was cut (``max_tokens``): a block the stream ended inside is no call (see ``read_unterminated``)."""
        if type(truncated) is not bool:
            raise TypeError(f"truncated must be a bool, not {type(truncated).__name__}")
        self._enter()
        try:
            self._truncated = truncated
            text = self._flush()
            if self._trim:
                text += self._edges_end()
            return text if self._guided is None else self._guided_end(text, truncated)
        finally:
            self._plain = self._settled() and self._edges_plain()
            self._busy = False

    cdef str _guided_text(self, str text):
        """The content ``text`` through the schema-guided stage: off (all it held shown) once a call was taken."""
        guided = self._guided
        if len(self.calls):
            self._guided = None
            return guided.release() + text
        if self._gq and _find(PyUnicode_KIND(text), PyUnicode_DATA(text), 0, PyUnicode_GET_LENGTH(text), 0x0A) < 0:
            return text  # what the stage would give (quiet: inside a line, nothing held)
        text = guided.text(text)
        self._gq = guided.quiet
        return text

    cdef str _guided_end(self, str text, bint truncated):
        guided = self._guided
        self._guided = None
        if len(self.calls):
            return guided.release() + text
        text, calls = guided.end(text, truncated)
        if calls:
            self.calls.extend(unique_ids(calls, self._ids))
            self.removed += len(calls)
        return text

    cdef bint _defer_room(self, Py_ssize_t size) noexcept:
        """Room in ``_defer`` for ``size`` bytes (False: no memory, the delta is not deferred)."""
        cdef Py_ssize_t cap = max(256, 2 * size)
        cdef char* grown = <char*>PyMem_Realloc(self._defer, cap)
        if grown == NULL:
            return False
        self._defer, self._defer_cap = grown, cap
        return True

    def __dealloc__(self):
        PyMem_Free(self._defer)

    cdef inline int _own_held(self) except -1:
        """``_held`` as long as ``_held_n`` says (deltas that went on with the literal); the literal forgotten. Text
        a block's body deferred (``_defer``, with nothing held before it) is held."""
        if self._defer_n:
            self._held = PyUnicode_New(self._defer_n, self._defer_max)
            memcpy(<void*>PyUnicode_DATA(self._held), self._defer, self._defer_n * self._defer_kind)
            self._defer_n, self._defer_max = 0, 0
            if self._defer_cap > DEFER_KEPT:  # (a long body's room is not kept for the rest of the stream)
                PyMem_Free(self._defer)
                self._defer, self._defer_cap = NULL, 0
        if self._held_lit != NULL:
            if self._held_at + self._held_n != PyUnicode_GET_LENGTH(self._held):
                self._held = (self._held[:self._held_at] + self._held_src[:self._held_n] if self._held_at
                              else self._held_src[:self._held_n])
            self._held_lit = NULL
        return 0

    cdef str _feed(self, delta):
        cdef Py_ssize_t n, k
        cdef int kind
        cdef const void* data
        self._own_held()
        if not PyUnicode_CheckExact(delta):
            if not isinstance(delta, str):
                raise TypeError(f"feed() expects str, not {type(delta).__name__}")
            delta = PyUnicode_FromObject(delta)  # a subclass: its characters, as a str
        if self._closed:
            raise ValueError("feed() after flush(): the stream has ended")
        if self._holding:
            return self._feed_held(delta)
        if self._opener is not None or self._reasoning:
            if self._opener is not None and self._in_str and not self._esc and self._follow is None and (
                    PyUnicode_GET_LENGTH(self._held) == 0):
                n = PyUnicode_GET_LENGTH(delta)  # inside a JSON string of the block's body
                kind = PyUnicode_KIND(delta)
                data = PyUnicode_DATA(delta)
                if n <= self.max_block - self._body_len and _quote_or_backslash(kind, data, 0, n) == n:
                    # what _run would do: the string goes on, the delta is body
                    self._parts.append(delta)
                    self._body_len += n
                    self._pos += n
                    self._memo_s = None
                    return ""
            return self._run(_joined(self._held, delta) if PyUnicode_GET_LENGTH(self._held) else delta, False)
        if PyUnicode_GET_LENGTH(self._held):  # a held candidate: the text is it and the delta
            if PyUnicode_GET_LENGTH(self._held) + PyUnicode_GET_LENGTH(delta) > SHORT_DELTA:
                return self._run(_joined(self._held, delta), False)
            delta = _joined(self._held, delta)
            self._held = ""
        if self._in_code:  # an inline code span ends at its line's end: _outside reads it
            return self._run(delta, False)
        # what _run would give when nothing in the text can begin markup: the text itself
        n = PyUnicode_GET_LENGTH(delta)
        kind = PyUnicode_KIND(delta)
        data = PyUnicode_DATA(delta)
        k = self._loud_short(kind, data, n) if n <= SHORT_DELTA else n if self._quiet(kind, data, n) else 0
        if k == n and (not self._words or self._spec.word_tail(kind, data, 0, n) == n):
            if self._after_block >= 0 and not _all_ws(delta):
                self._after_block = -1
            self._shown(kind, data, n)
            return self._out(delta, kind, data, n)
        return self._unquiet(delta, kind, data, n, k)

    cdef str _unquiet(self, str s, int kind, const void* data, Py_ssize_t n, Py_ssize_t k):
        """``_run(s, False)`` for a text of content (nothing held, open or pending) that the screen did not
        pass. A short text that ends with the start of a literal (a marker split over deltas) from the first
        character the screen stops at shows what is before it and holds the rest without it: ``_outside``
        passes the characters before as the screen does, and ``_candidate`` holds there (outside a code
        fence; with tools, not at a ``{`` or ``[`` that may begin a bare call; the text shown ends a block's
        wait for its next one as ``_emit`` would, so only with none waiting). The literal is noted
        (``_held_lit``): ``feed`` holds the deltas that go on with it by itself. ``k``: where the screen
        stopped (``_loud_short``; 0 for a text too long for it)."""
        cdef Py_UCS4 c = PyUnicode_READ(kind, data, k) if k < n else 0
        cdef int e
        if k < n and not self._fence and not self._words and not (self._trail and (c == 0x7B or c == 0x5B)) and (
                k == 0 or self._after_block < 0):
            e = self._spec.prefix_of(kind, <const char*>data + k * kind, n - k)
            if e < 0:
                return self._run(s, False)
            self._held_lit, self._held_src, self._held_n = &self._spec.entries[e].lit, self._spec.texts[e], n - k
            self._held_at = 0
            if k == 0:
                self._held = s  # nothing shown, _pos stays
                return ""
            self._held = s[k:]
            self._shown(kind, data, k)
            return self._out(s[:k], kind, data, k)
        return self._run(s, False)

    cdef inline void _shown(self, int kind, const void* data, Py_ssize_t n) noexcept:
        """Content text shown as it came: the line state and the offset move past it."""
        if self._lines:
            self._line = _line_after(self._line, kind, data, 0, n)
        self._pos += n

    cdef inline str _out(self, str text, int kind, const void* data, Py_ssize_t n):
        """``text`` (``data``'s first ``n`` characters), content shown as it came by a short path: itself,
        unless it ends with a blank or the blanks held need a decision (then ``_show``)."""
        if n == 0 or not self._trim or (self._edges_plain() and not _ws(PyUnicode_READ(kind, data, n - 1))):
            return text
        return self._shown_text(text)

    cdef str _shown_text(self, str text):
        """``_show`` of ``text`` alone, joined."""
        cdef list out = []
        self._show(out, text)
        return _join(out)

    cdef inline bint _edges_plain(self) noexcept:
        """No content blanks held or let through, a visible character shown, nothing removed since."""
        return not self._trim or (
            self._blank_len == 0 and not self._loose and self._seen and self._snap == self.removed)

    cdef int _trimmed(self, list out, str text, Py_ssize_t n) except -1:
        """``_emit``'s content ``text`` (``n`` long, not 0) with ``trim_blanks``: as it is when nothing is held
        or to decide and no blank ends it, else through ``_show``."""
        if self._edges_plain() and not _ws(PyUnicode_READ(PyUnicode_KIND(text), PyUnicode_DATA(text), n - 1)):
            out.append(text)
            return 0
        return self._show(out, text)

    cdef int _show(self, list out, str text) except -1:
        """Content text out, its blanks at the edges held (the rule in the class doc)."""
        cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
        cdef int kind = PyUnicode_KIND(text)
        cdef const void* d = PyUnicode_DATA(text)
        cdef Py_ssize_t end = n, start = 0
        while end and _ws(PyUnicode_READ(kind, d, end - 1)):
            end -= 1
        if self._loose:  # a run too long to hold: shown as it comes
            if not end:
                out.append(text)
                return 0
            self._loose = False
        else:
            while start < end and _ws(PyUnicode_READ(kind, d, start)):
                start += 1
            if not end:
                start = n
            if self._blank_len + start > self.max_block:  # too long to hold
                out.extend(self._blank)
                out.append(_slice(text, 0, start))
                self._blank.clear()
                self._blank_len, self._loose = 0, not end
                if not end:
                    return 0
                text, n, end, start = _slice(text, start, n), n - start, end - start, 0
            elif not end:
                self._blank.append(text)
                self._blank_len += start
                return 0
        if len(self._blank) or start:
            if self._seen or self._snap == self.removed:  # text before, or nothing removed since the start
                out.extend(self._blank)
                out.append(_slice(text, 0, end))
            else:
                out.append(_slice(text, start, end))
            self._blank.clear()
        else:
            out.append(text if end == n else _slice(text, 0, end))
        self._seen, self._snap = True, self.removed
        self._blank_len = n - end
        if self._blank_len > self.max_block:  # too long to hold
            out.append(_slice(text, end, n))
            self._blank_len, self._loose = 0, True
        elif self._blank_len:
            self._blank.append(_slice(text, end, n))
        return 0

    cdef str _edges_end(self):
        """At the end: the held content blanks, unless a removal came after the last visible character."""
        text = "" if self._snap != self.removed else _join(self._blank)
        self._blank.clear()
        self._blank_len = 0
        return text

    cdef int _think(self, str text) except -1:
        """Reasoning text out: the blanks at the span's start dropped, those after its last visible character
        held (dropped at its closer; longer than ``max_block``: shown)."""
        cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
        cdef int kind = PyUnicode_KIND(text)
        cdef const void* d = PyUnicode_DATA(text)
        cdef Py_ssize_t end = n, start = 0
        cdef str head
        while end and _ws(PyUnicode_READ(kind, d, end - 1)):
            end -= 1
        if not end:
            if self._rloose:
                self._reason(text)
            elif self._rseen:
                self._rblank.append(text)
                self._rblank_len += n
                if self._rblank_len > self.max_block:
                    self._reason(_join(self._rblank))
                    self._rblank.clear()
                    self._rblank_len, self._rloose = 0, True
            return 0
        if self._rloose or (self._rseen and not len(self._rblank)):
            head = _slice(text, 0, end)
        elif self._rseen:
            self._rblank.append(_slice(text, 0, end))
            head = _join(self._rblank)
            self._rblank.clear()
        else:
            while _ws(PyUnicode_READ(kind, d, start)):
                start += 1
            head = _slice(text, start, end)
        self._rseen, self._rloose = True, False
        self._rblank_len = n - end
        if self._rblank_len > self.max_block:  # too long to hold
            head = head + _slice(text, end, n)
            self._rblank_len, self._rloose = 0, True
        elif self._rblank_len:
            self._rblank.append(_slice(text, end, n))
        self._reason(head)
        return 0

    cdef int _span(self, bint opens) except -1:
        """A reasoning span opens or closes: the blanks held before it are dropped."""
        self._rblank.clear()
        self._rblank_len, self._rloose = 0, False
        if opens:
            self._rseen = False
        return 0

    cdef int _reason(self, str text) except -1:
        if self._thought.deferred is None:
            self._reasoning_out.append(text)
        else:
            self._thought.text(text)
        return 0

    cdef inline bint _settled(self) noexcept:
        """Nothing held, open or pending: the next delta may take feed's short path (``_plain``)."""
        return not self._closed and not self._holding and self._opener is None and not self._reasoning and (
            PyUnicode_GET_LENGTH(self._held) == 0 and self._after_block < 0 and not self._words and not self._in_code)

    cdef inline Py_ssize_t _loud_short(self, int kind, const void* data, Py_ssize_t n) noexcept:
        """The index of the delta's first character of ``_stop`` but for literals' first characters that
        start nothing (no literal starts with it and the one or two characters after it, as ``_candidate``
        tests first: ``<div``, ``a <d``); ``n`` if none (the delta is quiet). Over 1-byte text one OR pass
        first, which most deltas end at: up to 8 characters, eight reads with no loop (a loop's exit, at a
        length that changes from delta to delta, is a branch the CPU mispredicts)."""
        cdef const Py_UCS1* p1
        cdef Py_ssize_t k, last
        cdef unsigned char any_stop = 0
        if kind == 1:
            p1 = <const Py_UCS1*>data
            if 0 < n <= 8:  # eight reads whatever n is (past it, the last character again)
                last = n - 1
                for k in range(8):
                    any_stop |= self._stop[p1[k if k < last else last]]
            else:
                for k in range(n):  # most deltas have none: one branch for them
                    any_stop |= self._stop[p1[k]]
            self._lf = any_stop & 2
            if not (any_stop & 1):
                return n
        else:
            self._lf = 2
        return self._loud_at(kind, data, n)

    cdef Py_ssize_t _loud_at(self, int kind, const void* data, Py_ssize_t n) noexcept:
        """``_loud_short``'s answer, character by character."""
        cdef const Py_UCS1* p1
        cdef Py_UCS4 c
        cdef Py_ssize_t k
        if kind == 1:
            p1 = <const Py_UCS1*>data
            for k in range(n):
                if self._stop[p1[k]] & 1 and not (
                        self._lit_only[p1[k]] and k + 1 < n and self._spec.starts_nothing(kind, data, n, k, p1[k])):
                    return k
            return n
        for k in range(n):
            c = PyUnicode_READ(kind, data, k)
            if c < 128 and self._stop[c] & 1 and not (
                    self._lit_only[c] and k + 1 < n and self._spec.starts_nothing(kind, data, n, k, c)):
                return k
        return n

    cdef bint _quiet(self, int kind, const void* data, Py_ssize_t n) noexcept:
        """No character of ``_stop`` in the delta: one search per character (memchr for long deltas)."""
        return self._spec.find_first(kind, data, 0, n) < 0 and not (
            self._fences and _find(kind, data, 0, n, 0x60) >= 0) and not (
            self._trail and (_find(kind, data, 0, n, 0x7B) >= 0 or (
                not self._spec.first[0x5B] and _find(kind, data, 0, n, 0x5B) >= 0)))

    cdef str _flush(self):
        self._own_held()
        if self._closed:
            return ""
        if self._holding == BARE_LEAD or self._holding == BARE_TAIL:  # a held bare call's candidate: calls, or text
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
        out = "" if self._opener is None and PyUnicode_GET_LENGTH(self._held) == 0 else self._run(self._held, True)
        if len(self._rblank):  # blanks that end a span never closed are its text
            self._reason(_join(self._rblank))
            self._span(False)
        # a span never closed, or blocks that ended one and no call after: they were meant
        if self._thought is not None:
            self._take(self._thought.end())
        return out

    cdef str _feed_held(self, str delta):
        """Hold a message that may be only a call (whole-message formats) — at most ``max_block``
        characters; anything else goes on to the scanner."""
        cdef str start, text
        cdef Py_ssize_t r
        if self._holding == BARE_TAIL:  # a candidate bare call at a line start
            r = self._bare.read(delta, 0)
            if r < 0:
                return ""
            text = self._bare.held() + delta
            self._holding, self._bare = NOT_HOLDING, None
            self._bare_stop = self._pos + r
            return self._run(text, False)
        if self._holding == BARE_LEAD:
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
        self._whole_len += PyUnicode_GET_LENGTH(delta)
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

    cdef str _bare_done(self, decided):
        """A bare call's candidate decided: its calls taken, the text after it (or all, if not a call) scanned."""
        calls, text, consumed = decided
        self._holding, self._bare = NOT_HOLDING, None
        if calls:
            self._take_bare(calls)
            self._pos += consumed
        else:
            self._bare_stop = self._pos + consumed
        return self._feed(text)

    cdef int _take_bare(self, list calls) except -1:
        if self._thought is not None:
            self._thought.settle(False)  # the content calls a tool: the calls that ended a span were rehearsals
        self.calls.extend(unique_ids(calls, self._ids))
        self.removed += 1
        return 0

    cdef Py_ssize_t _tail_at(self, str s, Py_ssize_t i, Py_ssize_t base, bint final) except -2:
        """``s[i]``, a ``{`` or ``[`` at a content line's start (tools given), may begin bare calls that
        end the message: -1 when it holds the rest of ``s`` (or, at the end, took it as calls); else it
        is not one, and no candidate starts before ``base + i`` + the returned length."""
        cdef Py_ssize_t r
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
                self._held, self._pos = "", base + PyUnicode_GET_LENGTH(s)
                return -1
        self._bare_stop = base + i + r
        return r

    cdef inline int _emit(self, list out, str text) except -1:
        if self._mute and not self._reasoning:
            text = self._muted(text)
        cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
        if n:
            if not self._reasoning:
                if not self._trim:
                    out.append(text)
                else:
                    self._trimmed(out, text, n)
                if self._lines:
                    self._line = _line_after(self._line, PyUnicode_KIND(text), PyUnicode_DATA(text), 0, n)
            elif self._trim:
                self._think(text)
            elif self._thought.deferred is None:
                self._reasoning_out.append(text)
            else:
                self._thought.text(text)
            if self._after_block >= 0 and not _all_ws(text):
                self._after_block = -1
        return 0

    cdef int _open_span(self) except -1:
        """A reasoning span opens: blocks that ended the last one and had no call after were meant."""
        if self._thought is None:
            self._thought = Reasoning(self._calls_in_reasoning, self.max_block)
            self._reasoning_out = self._thought.out
        else:
            self._take(self._thought.settle(True))
        self._reasoning = True
        self._span(True)
        return 0

    cdef int _take(self, list blocks) except -1:
        """Take the call lists of blocks the reasoning decided were meant."""
        for calls in blocks:
            self.calls.extend(unique_ids(calls, self._ids))
            self.removed += 1
        return 0

    cdef str _run(self, str s, bint final):
        cdef list out = None  # made when text goes out (a delta inside a block has none)
        cdef Py_ssize_t base = self._pos, p = 0, q, c, gbody, end
        cdef Lexed kind
        cdef str body, closer, piece
        cdef const Lit* closing
        while True:
            if self._opener is not None:
                kind = self._lex(s, p, final, &q)
                if kind == LX_MORE:
                    piece = _slice(s, p, q)
                    self._parts.append(piece)
                    if self._follow is not None:
                        self._follow_len += q - p
                        # (not past a closer or opener inside a value that may never close: see LX_RAW)
                        if self._follow_len >= self._follow_wants and self._raw_at < 0:
                            self._follow_wants = self._follow.body("".join(self._parts[self._follow_from:]))
                            self._follow_from, self._follow_len = len(self._parts), 0
                    self._body_len += q - p
                    self._held = s[q:] if q < PyUnicode_GET_LENGTH(s) else ""
                    closing = &self._spec.closers[self._kind]
                    if self._follow is None and self._body_len <= self.max_block and q < PyUnicode_GET_LENGTH(s) and (
                            _match(PyUnicode_KIND(s), PyUnicode_DATA(s), PyUnicode_GET_LENGTH(s), q, closing) == -1):
                        # the closer's start, within the cap: _lex would stop there again, at the held text's first
                        # character (past the cap it waits for the text a raw closer could span instead)
                        self._held_lit, self._held_src = closing, self._spec.closer_texts[self._kind]
                        self._held_n, self._held_at = PyUnicode_GET_LENGTH(s) - q, 0
                    self._pos = base + q
                    self._memo_s = None
                    return "" if out is None else _join(out)
                if out is None:
                    out = []
                if kind == LX_CLOSE:
                    end = q + self._spec.closers[self._kind].n
                    if self._follow is not None and self._follow_len + q - p >= self._follow_wants:
                        self._follow.body("".join(self._parts[self._follow_from:]) + _slice(s, p, q))
                    if self._walked_s is s and not self._parts and self._walked.lo >= p:  # read by _lex in this s
                        self._finish_in(s, p, q, out, s[q:end])
                    else:
                        self._finish("".join(self._parts) + _slice(s, p, q), out, s[q:end])
                    p = end
                    continue
                if kind == LX_PROSE:  # another opener, or a first character the block cannot start with
                    self._emit(out, self._opener + "".join(self._parts) + _slice(s, p, q))
                    self._opener = None
                    if self._follow is not None:
                        self._follow.drop()
                    p = q
                    continue
                closer = self._spec.table.blocks[self._kind].closer or ""
                if kind == LX_RAW:  # a value that never closed: the first closer or opener inside it decides
                    c = p + self._raw_at - self._body_len  # its index in s: scanning goes on in s, nothing copied
                    if c < p:  # met in an earlier delta: the body's text from it goes back in front of s (a delta)
                        body = "".join(self._parts)
                        piece = body[:self._raw_at]
                        s = body[self._raw_at:] + _slice(s, p, PyUnicode_GET_LENGTH(s))
                        base = self._opened_at + PyUnicode_GET_LENGTH(self._opener) + self._raw_at
                        c = 0
                    else:
                        piece = "".join(self._parts) + _slice(s, p, c)
                    if self._raw_close:
                        self._finish(piece, out, closer)
                        p = c + len(closer)
                    else:
                        self._emit(out, self._opener + piece)
                        self._opener = None
                        if self._follow is not None:
                            self._follow.drop()
                        p = c
                    continue
                body = "".join(self._parts) + _slice(s, p, PyUnicode_GET_LENGTH(s))
                gbody = self._opened_at + PyUnicode_GET_LENGTH(self._opener)
                # No closer outside a JSON string (or a value) within the cap: the first raw closer ends the block.
                # At the end of the text, only one inside a string that never closed: every other is data.
                self._poison_until = max(self._poison_until, NEVER if kind == LX_END else gbody + self.max_block + 1)
                c = -1 if self._json_end or (kind == LX_END and not self._in_str) else (
                    body.find(closer, 0, self.max_block + len(closer)))
                calls = None
                if c < 0 and kind == LX_END:  # the message ended inside the block: a call if complete
                    calls = read_unterminated(self._spec.table, self._kind, self._opener, body, self._ctx,
                                              self._truncated)
                if c >= 0:
                    self._finish(body[:c], out, closer)
                    s, base = body[c + len(closer):], gbody + c + len(closer)
                elif calls is not None:
                    self._finish(body, out, "", calls)
                    s, base = "", gbody + PyUnicode_GET_LENGTH(body)
                else:
                    self._emit(out, self._opener[:1])
                    s, base = self._opener[1:] + body, self._opened_at + 1
                    self._opener = None
                    if self._follow is not None:
                        self._follow.drop()
                p = 0
                continue
            if out is None:
                out = []
            p = self._outside(s, p, base, final, out)
            if p < 0:
                self._memo_s = None
                return _join(out)

    cdef Py_ssize_t _outside(self, str s, Py_ssize_t p, Py_ssize_t base, bint final, list out) except -2:
        """Scan prose from ``p``. Returns the body start of a block it opened, or -1 when done."""
        cdef int kind = PyUnicode_KIND(s)
        cdef const void* d = PyUnicode_DATA(s)
        cdef Py_ssize_t n = PyUnicode_GET_LENGTH(s)
        cdef Py_ssize_t search = p, i, a = 0, b = 0, t
        cdef Py_ssize_t next_nl = -2  # (inside an inline code span) the next line break
        cdef Py_ssize_t* next_at = self._next_at
        cdef int f
        cdef Cand cand
        if s is not self._memo_s:  # the per-character search positions belong to one buffer
            self._memo_s = s
            self._next_tick = -2
            self._next_brace[0] = self._next_brace[1] = -2
            for f in range(self._spec.n_first):
                next_at[f] = -2  # not looked for yet
        cdef bint fences
        cdef Py_ssize_t j
        cdef Py_UCS4 c
        while True:
            fences = self._fences and not self._reasoning
            i = -1
            if not (fences and self._fence):  # inside a code fence only its end matters
                for f in range(self._spec.n_first):  # each character's search only moves forward: linear
                    if next_at[f] == -2 or (next_at[f] >= 0 and next_at[f] < search):
                        next_at[f] = self._spec.find_char(kind, d, search, n, f)
                    if next_at[f] >= 0 and (i < 0 or next_at[f] < i):
                        i = next_at[f]
            if fences:
                if self._next_tick == -2 or (self._next_tick >= 0 and self._next_tick < search):
                    self._next_tick = _find(kind, d, search, n, 0x60)
                if self._next_tick >= 0 and (i < 0 or self._next_tick < i):
                    i = self._next_tick
                if self._in_code and not self._fence:  # inside an inline code span: its end, or the line's
                    if next_nl == -2 or (next_nl >= 0 and next_nl < search):
                        next_nl = _find(kind, d, search, n, 0x0A)
                    if next_nl >= 0 and (i < 0 or next_nl < i):
                        self._in_code = False
                        search = next_nl + 1
                        continue
            if self._trail and not (fences and self._fence):
                for f in range(1 if self._spec.first[0x5B] else 2):  # '[' may be searched already
                    if self._next_brace[f] == -2 or (self._next_brace[f] >= 0 and self._next_brace[f] < search):
                        self._next_brace[f] = _find(kind, d, search, n, 0x7B if f == 0 else 0x5B)
                    if self._next_brace[f] >= 0 and (i < 0 or self._next_brace[f] < i):
                        i = self._next_brace[f]
            if i >= 0 and PyUnicode_READ(kind, d, i) == 0x60:  # '`'
                j = i
                while j < n and PyUnicode_READ(kind, d, j) == 0x60:
                    j += 1
                if j == n and not final:
                    self._emit(out, _slice(s, p, i))  # a run that may still grow (a fence, or a span's delimiter)
                    self._held = s[i:]
                    self._pos = base + i
                    return -1
                if j - i >= 3 and _line_after(self._line, kind, d, p, i) >= 0:  # at a line's start (up to 3 spaces)
                    self._fence = not self._fence  # a fence opens or closes; the backticks stay
                    self._in_code = False
                elif j - i < 3 and not self._fence:  # an inline code span opens or closes: markup in it is text
                    self._in_code = not self._in_code
                search = j
                continue
            if i < 0:
                t = n if final else self._spec.word_tail(kind, d, p, n)  # a word opener's start is held
                self._emit(out, _slice(s, p, t))
                self._held = s[t:]
                self._pos = base + t
                return -1
            c = PyUnicode_READ(kind, d, i)
            if (c == 0x7B or c == 0x5B) and self._trail:  # bare calls that end the message, from a line start
                if not self._reasoning and base + i >= self._bare_stop and _line_after(self._line, kind, d, p, i) >= 0:
                    self._emit(out, _slice(s, p, i))
                    p = i
                    if self._tail_at(s, i, base, final) < 0:
                        return -1
                if not self._spec.first[c]:  # not a call, nor the start of a literal
                    search = i + 1
                    continue
            cand = self._candidate(kind, d, n, s, i, p, final, &a, &b)
            if cand == C_HOLD:
                self._emit(out, _slice(s, p, i))
                self._held = s[i:]
                self._pos = base + i
                if b >= 0 and not (self._trail and (c == 0x7B or c == 0x5B)):
                    # a section marker, then the start of its dialect's opener b from a: the deltas that go on
                    # with that opener hold the text as this did (_candidate)
                    self._held_lit, self._held_src = &self._spec.entries[b].lit, self._spec.texts[b]
                    self._held_at, self._held_n = a - i, n - a
                return -1
            if cand == C_PROSE:
                search = a
                continue
            if fences and self._in_code:  # a literal inside an inline code span: text
                search = i + 1
                continue
            if cand == C_MARKER:
                self._emit(out, _slice(s, p, i))
                self.removed += 1
                self._after_block = -1
                self._line = -1
                if self._spec.marker_reasoning[a] < 0 and self._reasoning:
                    self._thought.close_span()
                    self._reasoning = False
                    self._span(False)
                elif self._spec.marker_reasoning[a] > 0:
                    self._open_span()
                p = search = b
                continue
            # a block of kind a, body from b; one opening where a failed block was scanned is prose
            if self._spec.json_end[a] and base + i < self._poison_until:
                search = i + 1
                continue
            if self._spec.entries[self._spec.block_entry[a]].anchor:  # a word opener: it ends where we are
                i -= self._spec.entries[self._spec.block_entry[a]].lit.n
            self._emit(out, _slice(s, p, i))
            self._open_block(<int>a, s[i:b], base + i)
            return b

    cdef Cand _candidate(self, int kind, const void* d, Py_ssize_t n, str s, Py_ssize_t i, Py_ssize_t p,
                         bint final, Py_ssize_t* a, Py_ssize_t* b) except *:
        """Classify ``s[i]``: hold; prose (a = next search); marker (a = its index in the table's markers,
        b = end); block (a = its kind, the index in the table's blocks; b = body start).

        A literal the text ends inside, or a test that needs more text, holds (at the end of the stream:
        that reading fails and the next one is tried)."""
        cdef _CSpec spec = self._spec
        cdef Py_UCS4 c = PyUnicode_READ(kind, d, i)
        cdef Py_ssize_t j, wend, gt, q, m, stop
        cdef int e, f, r, o, waited
        cdef bint hold_any, found
        cdef Entry* en
        cdef int lo = spec.first_lo[c], hi = spec.first_hi[c]
        cdef Py_UCS4 c2
        a[0] = i + 1
        b[0] = -1  # (on a hold: the entry of an opener a section marker waits for, from a[0]; see _outside)
        for e in range(spec.n_entries, spec.n_all):  # a word opener ends here: the body starts at its anchor
            en = &spec.entries[e]
            if en.anchor == c and i - en.lit.n >= p and _match(kind, d, n, i - en.lit.n, &en.lit) == 1:
                a[0] = en.k
                b[0] = i
                return C_BLOCK
        if i + 2 < n and not spec.triple[_triple(c, PyUnicode_READ(kind, d, i + 1), PyUnicode_READ(kind, d, i + 2))]:
            return C_PROSE  # no literal starts with these three characters (most HTML tags)
        if i + 1 < n:  # second-character dispatch: only the entries that share the first two
            c2 = PyUnicode_READ(kind, d, i + 1)
            if not (spec.pair_wide[c] if c2 >= 128 else spec.pair[c][c2]):
                return C_PROSE
            spec.pair_range(c, c2, &lo, &hi)
        # a literal the text ends inside holds the stream (none can when the longest fits)
        if not final and n - i < spec.longest:
            for e in range(lo, hi):
                if _match(kind, d, n, i, &spec.entries[e].lit) == -1:
                    return C_HOLD
        for e in range(lo, hi):
            en = &spec.entries[e]
            r = _match(kind, d, n, i, &en.lit)
            if r != 1:
                if r == -1 and final and self._cut_closer(s, i, p, en):
                    a[0] = en.k  # the message ends inside its block's closing marker: it goes
                    b[0] = n
                    return C_MARKER
                continue
            j = i + en.lit.n
            if en.block:
                if not en.tag:
                    if spec.has_starts[en.k]:
                        # the lexer's first-character test, made here when it can only say "text"
                        m = j
                        while m < n and _ws(PyUnicode_READ(kind, d, m)):
                            m += 1
                        if m < n and m - j <= self.max_block:  # (where the lexer would get before its cap)
                            f = <int>PyUnicode_READ(kind, d, m)
                            if f < 128 and not spec.first[f] and not spec.starts[en.k * 128 + f]:
                                a[0] = m
                                return C_PROSE
                    a[0] = en.k
                    b[0] = j
                    return C_BLOCK
                if j == n:
                    if final:
                        continue
                    return C_HOLD
                c = PyUnicode_READ(kind, d, j)
                if c >= 128 or not en.delim[c]:
                    c = PyUnicode_READ(kind, d, i)
                    continue
                c = PyUnicode_READ(kind, d, i)
                wend = min(n, j + C_ATTR_MAX)
                gt = _find(kind, d, j, wend, 0x3E)
                stop = gt if gt >= 0 else wend
                for q in range(j, stop):
                    f = <int>PyUnicode_READ(kind, d, q)
                    if f >= 128 or not spec.strong_first[f]:
                        continue
                    o = spec.opener_at(kind, d, n, q, final, -1)
                    if o == 1:
                        a[0] = q  # an opener inside the attribute text: this one is prose
                        return C_PROSE
                    if o == -1:
                        return C_HOLD
                if gt >= 0:
                    a[0] = en.k
                    b[0] = gt + 1
                    return C_BLOCK
                if wend < j + C_ATTR_MAX and not final:
                    return C_HOLD
                continue
            if en.reasoning or en.always:
                if en.always or (en.reasoning > 0) != self._reasoning:
                    a[0] = en.k
                    b[0] = j
                    return C_MARKER
                continue
            if en.before:
                m = j
                while m < n and m - j < C_GAP_MAX and _ws(PyUnicode_READ(kind, d, m)):
                    m += 1
                if m - j >= C_GAP_MAX:
                    continue
                if m == n:
                    if final:
                        continue
                    return C_HOLD
                found = False
                hold_any = False
                waited = -1
                for f in range(spec.dialect_lo[en.dialect], spec.dialect_lo[en.dialect + 1]):
                    r = _match(kind, d, n, m, &spec.entries[spec.dialect_blocks[f]].lit)
                    found = found or r == 1
                    hold_any = hold_any or r == -1
                    if r == -1 and waited < 0:
                        waited = spec.dialect_blocks[f]
                if found:
                    a[0] = en.k
                    b[0] = j
                    return C_MARKER
                if hold_any and not final:
                    # While the text goes on with the opener `waited`, this holds again: no literal was cut off
                    # here, what the entries before this one decided rests on the text already here, and no
                    # other opener of the dialect can be whole inside a proper prefix of it (none is its prefix).
                    for f in range(spec.dialect_lo[en.dialect], spec.dialect_lo[en.dialect + 1]):
                        if spec.dialect_blocks[f] != waited and _starts_with(
                                &spec.entries[waited].lit, &spec.entries[spec.dialect_blocks[f]].lit):
                            break
                    else:
                        a[0] = m
                        b[0] = waited
                    return C_HOLD
            elif self._after_block == en.dialect and _all_ws(s[p:i]):
                a[0] = en.k
                b[0] = j
                return C_MARKER
        return C_PROSE

    cdef bint _cut_closer(self, str s, Py_ssize_t i, Py_ssize_t p, const Entry* en) except -1:
        """At the end of the stream, ``s[i:]`` is the closing marker of the block just taken (only blanks
        between), but for its last character (``<|tool_calls_section_end|``): the model stopped inside it."""
        if en.block or PyUnicode_GET_LENGTH(s) - i != en.lit.n - 1 or en.lit.n < CUT_CLOSER_MIN:
            return False
        if en.before or en.reasoning:
            return False
        return self._after_block == en.dialect and _all_ws(s[p:i])

    cdef int _open_block(self, int k, str opener, Py_ssize_t gopen) except -1:
        self._opener = opener
        self._kind = k
        self._json_end = self._spec.json_end[k]
        self._parts = []
        self._body_len = 0
        self._opened_at = gopen
        self._poisoned = gopen < self._poison_until or not self._spec.json_strings[k]
        self._before_json = True
        self._in_str = False
        self._esc = False
        self._value = self._raw_at = -1
        self._depth = 0
        self._at_start = True
        self._walked_s = None
        if self._follow is not None:
            self._follow_wants = self._follow.open(
                self._spec.table.blocks[k], opener, not self._reasoning and gopen >= self._poison_until)
            self._follow_from = self._follow_len = 0
        return 0

    cdef object _one_pass(self, str text, Py_ssize_t lo, Py_ssize_t hi, const Walked* walked):
        """The call the block's one-pass reader gives the body ``text[lo:hi]``, if the scrubber takes it;
        else ``None`` (``read_block`` reads what that declines). ``walked``: see ``_hermes_call``."""
        cdef int one_pass = self._spec.one_pass[self._kind]
        call = None
        if one_pass == ONE_PASS_HERMES and "name" not in self._opener:  # no name="..." in the opener
            call = _hermes_call(text, lo, hi, self._spec.dialect_names[self._kind], walked)
        elif one_pass == ONE_PASS_DEEPSEEK and "\uff5c" in self._opener:  # a full-width opener: no ASCII separators
            call = _deepseek_call(text, lo, hi, self._spec.dialect_names[self._kind], walked)
        if call is not None and (not self._trail or self._unknown == "accept" or self._ctx.known(call.name)) and (
                not placeholder(call)):
            return call
        return None

    cdef int _finish_in(self, str s, Py_ssize_t p, Py_ssize_t q, list out, str closer) except -1:
        """``_finish`` of the body ``s[p:q]``, in which ``_lex`` read the plain object ``_walked``: its call
        read in ``s`` itself, the body cut out of ``s`` only when the block is not that call, or is reasoning."""
        call = None
        if not (self._reasoning and not self._thought.extract):  # (a rehearsal keeps the block's text)
            call = self._one_pass(s, p, q, &self._walked)
        if call is None:
            return self._finish(_slice(s, p, q), out, closer)
        self._took([call])
        return 0

    cdef int _finish(self, str body, list out, str closer, object calls=None) except -1:
        """End the open block: its calls (``calls`` when already read), or its text when it is not a call."""
        if calls is None:
            call = self._one_pass(body, 0, PyUnicode_GET_LENGTH(body), NULL)
            if call is not None:
                calls = [call]
            else:
                calls = read_block(self._spec.table, self._kind, self._opener, body, self._ctx, self._unknown)
        if calls is None:  # not a call: the block's text stays
            self._emit(out, self._opener + body + closer)
        elif self._reasoning and not self._thought.extract:  # a rehearsal, unless the span never closes
            lead = _join(self._rblank)  # the blanks before it: its text's, or dropped with it (trim_blanks)
            self._span(False)
            self._rseen = True
            self._thought.block(self._opener + body + closer, calls, lead)
            self._after_block = self._spec.block_dialect[self._kind]
        else:
            self._took(calls)
            return 0
        self._opener = None
        self._walked_s = None
        if self._follow is not None:
            self._follow.close(None)
        return 0

    cdef int _took(self, list calls) except -1:
        """End the open block with its calls taken (in the content, or extracted from reasoning)."""
        if self._thought is not None:
            self._thought.settle(False)  # the content calls a tool: the calls that ended a span were rehearsals
        self.calls.extend(unique_ids(calls, self._ids))
        self.removed += 1
        if not calls:
            self.malformed += 1
        self._after_block = self._spec.block_dialect[self._kind]
        self._line = -1
        self._opener = None
        self._walked_s = None
        if self._follow is not None:
            self._follow.close(calls)
        return 0

    cdef Lexed _lex(self, str s, Py_ssize_t p, bint final, Py_ssize_t* out):
        """Lex a block body in ``s`` from ``p``; ``out`` receives the index."""
        cdef int kind = PyUnicode_KIND(s)
        cdef const void* d = PyUnicode_DATA(s)
        cdef Py_ssize_t n = PyUnicode_GET_LENGTH(s)
        cdef Py_ssize_t limit = p + (self.max_block - self._body_len) + 1
        cdef Py_ssize_t end = min(n, limit)
        cdef const Lit* closer = &self._spec.closers[self._kind]
        cdef _CSpec spec = self._spec
        cdef int own = spec.block_entry[self._kind]  # meeting its own opener again ends a block too
        cdef Py_UCS4 c, c2
        cdef int f  # the lex_stop set that holds
        cdef int r, e, v
        cdef bint lead
        cdef Py_ssize_t w
        cdef Py_ssize_t at = self._body_len - p  # + an index in s: its offset in the body
        if self._esc and p < end:
            p += 1
            self._esc = False
        while p < end:
            if self._value >= 0:  # inside a value: only its closing tag ends it (closer and openers are data)
                p = _past_run(kind, d, p, end, spec.value_stop)
                if p >= end:
                    break
                c = PyUnicode_READ(kind, d, p)
                if p + 1 < n:  # (C only) no tag, closer or opener begins with this and the next character:
                    # a "<" in code or HTML ("< 3", "<=", "<b>") is passed without a check
                    c2 = PyUnicode_READ(kind, d, p + 1)
                    if c2 < 128 and not spec.value_second[c2]:
                        p += 1
                        continue
                v = self._kind * VALUES_MAX + self._value
                r = _match(kind, d, n, p, &spec.value_close[v])
                if r == 1:
                    self._value = self._raw_at = -1
                    p += spec.value_close[v].n
                    continue
                if r == -1 and not final:
                    out[0] = p
                    return LX_MORE
                if self._raw_at < 0:  # the first closer or opener inside: the block's end if the value never closes
                    if closer.n and c == closer.ch[0]:
                        r = _match(kind, d, n, p, closer)
                        if r == 1:
                            self._raw_at, self._raw_close = at + p, True
                        elif r == -1 and not final:
                            out[0] = p
                            return LX_MORE
                    if self._raw_at < 0 and ((c < 128 and spec.strong_first[c]) or c == spec.entries[own].lit.ch[0]):
                        r = spec.opener_at(kind, d, n, p, final, own)
                        if r == 1:
                            self._raw_at, self._raw_close = at + p, False
                        elif r == -1:
                            out[0] = p
                            return LX_MORE
                w = _value_tag(kind, d, n, p, &spec.value_open[v], &spec.value_head[self._kind], final)
                if w >= 0:  # another value opens: this one never closed
                    if self._raw_at >= 0:
                        out[0] = p
                        return LX_RAW
                    self._value = -1
                    continue
                if w == -2:
                    out[0] = p
                    return LX_MORE
                p += 1
                continue
            if self._in_str:
                p = _quote_or_backslash(kind, d, p, end)  # the string's plain run, at once
                if p >= end:
                    break
                if PyUnicode_READ(kind, d, p) == 0x22:  # '"'
                    self._in_str = False
                elif p + 1 < n:  # '\\': the escaped character is skipped
                    p += 1
                else:
                    self._esc = True
                p += 1
                continue
            if not self._at_start:  # past the body's first character: a run none of the checks below sees, at once
                # (before the body's JSON object only "{" and the literals matter: "[" only as the first character)
                f = LEX_BEFORE_JSON if self._before_json else LEX_IN_JSON
                if spec.lex_blocks[f] and kind <= 2:
                    p = _past_chars(kind, d, p, end, spec.lex_vecs[f][kind - 1])
                p = _past_run(kind, d, p, end, spec.lex_stop[f])
                if p >= end:
                    break
            c = PyUnicode_READ(kind, d, p)
            # the closer first (it may look like an opener), then openers, then the JSON state
            if closer.n and c == closer.ch[0]:
                r = _match(kind, d, n, p, closer)
                if r == 1:
                    out[0] = p
                    return LX_CLOSE
                if r == -1 and not final:
                    out[0] = p
                    return LX_MORE
                if c == 0x3C and self._before_json and not self._poisoned and not self._json_end:
                    # an XML tag (``<`` then a letter or ``/``) before the body's JSON began: a tag body (GLM's
                    # ``NAME<arg_key>…``), whose values are text: a quote in one opens no string
                    if p + 1 < n:
                        w = PyUnicode_READ(kind, d, p + 1)
                        if w == 0x2F or (0x41 <= w <= 0x5A) or (0x61 <= w <= 0x7A):
                            self._poisoned = True
                    elif not final:
                        out[0] = p
                        return LX_MORE
            if (c < 128 and spec.strong_first[c]) or c == spec.entries[own].lit.ch[0]:
                r = spec.opener_at(kind, d, n, p, final, own)
                if r == 1:
                    out[0] = p
                    return LX_PROSE
                if r == -1:
                    out[0] = p
                    return LX_MORE
            if self._reasoning and c < 128 and spec.span_first[c]:  # a block inside a reasoning span ends with it
                for e in range(spec.first_lo[c], spec.first_hi[c]):
                    if spec.entries[e].reasoning < 0:
                        r = _match(kind, d, n, p, &spec.entries[e].lit)
                        if r == 1:
                            out[0] = p
                            return LX_PROSE
                        if r == -1 and not final:
                            out[0] = p
                            return LX_MORE
            lead = self._at_start and not _ws(c)  # the body's first non-blank character
            if lead:
                self._at_start = False
                if spec.has_starts[self._kind] and not (c < 128 and spec.starts[self._kind * 128 + <int>c]):
                    out[0] = p
                    return LX_PROSE
                if c == 0x3C and not self._json_end:  # a tag body (Qwen3-Coder XML in <tool_call>) is no JSON
                    self._poisoned = True
            if c == 0x3C and spec.n_values[self._kind] and self._poisoned and not self._json_end:  # a value opens?
                for e in range(spec.n_values[self._kind]):
                    w = _value_tag(kind, d, n, p, &spec.value_open[self._kind * VALUES_MAX + e],
                                   &spec.value_head[self._kind], final)
                    if w == -2:
                        out[0] = p
                        return LX_MORE
                    if w >= 0:
                        self._value, self._raw_at = e, -1
                        p = w
                        break
                if self._value >= 0:
                    continue
            if self._json_end:
                if self._before_json:
                    if c == 0x7B or (c == 0x5B and lead):  # '{', or '[' first
                        self._before_json = False
                        self._depth = 1
                elif c == 0x7B or c == 0x5B:
                    self._depth += 1
                elif c == 0x7D or c == 0x5D:
                    self._depth -= 1
                    if self._depth == 0:
                        out[0] = p + 1
                        return LX_CLOSE
                elif c == 0x22:
                    self._in_str = True
            elif c == 0x7B and self._before_json and not self._poisoned:  # '{'
                self._before_json = False
                if spec.plain_skip[self._kind] and not self._parts:
                    # A plain object all in s: no literal begins outside its strings (plain_skip; nor does
                    # one run past s's end from there), and its strings close, so lexing it would end past
                    # it, as here. The grammar is told it is plain. (Tried once a block, and only where the
                    # body began in s, the one case _run hands it on: linear.)
                    _unpicked(&self._walked.picked)  # (its members matter to the Hermes reader only)
                    w = _plain_walk(s, p, end, None,
                                    &self._walked.picked if spec.one_pass[self._kind] == ONE_PASS_HERMES else NULL)
                    if w >= 0:
                        self._walked_s, self._walked.lo, self._walked.hi = s, p, w
                        p = w
                        continue
            elif c == 0x22 and not self._before_json:
                self._in_str = True
            p += 1
        if self._value >= 0 and self._raw_at >= 0 and (final or p >= limit):
            out[0] = min(p, n)  # the value never closed: the first closer or opener inside it decides
            return LX_RAW
        if p >= limit:
            # Past the cap: decide once the text a raw closer could span is all here.
            if final or n >= limit + closer.n - 1:
                out[0] = p
                return LX_CAP
            out[0] = min(p, n)
            return LX_MORE
        out[0] = n if final else p
        return LX_END if final else LX_MORE
