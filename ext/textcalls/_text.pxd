# cython: language_level=3
"""What both compiled modules read text with: the C API of ``str``'s buffer (PEP 393 kinds), a marker
literal as C arrays (``Lit``), the block loops of ``_simd.h``, and the inline searches built on them.

Declarations and inline functions only: no module of its own, nothing imported at run time.
"""

from cpython.object cimport PyTypeObject
from libc.string cimport memchr, memcmp

cdef extern from "Python.h":
    object PyType_GenericAlloc(PyTypeObject* type, Py_ssize_t nitems)
    ctypedef struct PyMemberDef:
        Py_ssize_t offset
    ctypedef struct PyMemberDescrObject:
        PyMemberDef* d_member
    ctypedef unsigned char Py_UCS1
    ctypedef unsigned short Py_UCS2
    int PyUnicode_KIND(object) noexcept
    const void* PyUnicode_DATA(object) noexcept
    Py_ssize_t PyUnicode_GET_LENGTH(object) noexcept
    Py_UCS4 PyUnicode_READ(int kind, const void* data, Py_ssize_t index) noexcept nogil
    void PyUnicode_WRITE(int kind, void* data, Py_ssize_t index, Py_UCS4 value) noexcept nogil
    Py_UCS4 PyUnicode_MAX_CHAR_VALUE(object) noexcept
    bint Py_UNICODE_ISSPACE(Py_UCS4 ch) noexcept nogil
    bint PyUnicode_Check(object) noexcept
    bint PyUnicode_CheckExact(object) noexcept
    bint PyUnicode_IS_ASCII(object) noexcept
    object PyUnicode_FromObject(object)
    object PyUnicode_FromKindAndData(int kind, const void* buffer, Py_ssize_t size)
    int PyUnicode_1BYTE_KIND


cdef enum:
    LIT_MAX = 40     # markers.LITERAL_MAX: the longest literal


ctypedef struct Lit:
    Py_UCS4 ch[LIT_MAX]  # the literal as 4-byte text
    Py_UCS2 u2[LIT_MAX]  # as 2-byte text (literals are in the BMP: markers.check_limits)
    Py_UCS1 u1[LIT_MAX]  # as 1-byte text, up to n1 (its first character above U+00FF, or n)
    Py_ssize_t n, n1


cdef inline int _match(int kind, const void* d, Py_ssize_t n, Py_ssize_t i, const Lit* lit) noexcept nogil:
    """1 if ``lit`` starts at ``i``; -1 if the text ends inside a prefix of it; else 0. The text's
    characters there are compared as bytes with the literal written in the text's kind; where the
    literal has a character the kind cannot hold and the text goes on that far, it is not there."""
    cdef Py_ssize_t m = min(n - i, lit.n)  # the characters both have
    if m <= 0:
        return -1 if lit.n else 1
    if PyUnicode_READ(kind, d, i) != lit.ch[0] or PyUnicode_READ(kind, d, i + m - 1) != lit.ch[m - 1]:
        return 0  # (literals that share a start mostly differ where the text or the shorter ends)
    if kind == 1:
        if m > lit.n1 or memcmp(<const Py_UCS1*>d + i, lit.u1, m):
            return 0
    elif kind == 2:
        if memcmp(<const Py_UCS2*>d + i, lit.u2, 2 * m):
            return 0
    elif memcmp(<const Py_UCS4*>d + i, lit.ch, 4 * m):
        return 0
    return 1 if m == lit.n else -1


cdef inline Py_ssize_t _find(int kind, const void* d, Py_ssize_t start, Py_ssize_t end, Py_UCS4 ch) noexcept nogil:
    """Index of ``ch`` in [start, end), or -1. Wide text (2- and 4-byte kinds) is searched by ``memchr``
    for one byte of ``ch``, each hit checked: linear, at memchr's speed but for such hits."""
    cdef const char* hit
    cdef const char* at
    cdef const char* stop
    cdef Py_ssize_t i
    if start >= end:
        return -1
    if kind == 1:
        if ch > 255:
            return -1
        hit = <const char*>memchr(<const char*>d + start, <int>ch, end - start)
        return -1 if hit == NULL else hit - <const char*>d
    at = <const char*>d + start * kind
    stop = <const char*>d + end * kind
    while at < stop:
        hit = <const char*>memchr(at, <int>(<unsigned int>ch & 0xFFu), stop - at)
        if hit == NULL:
            return -1
        i = (hit - <const char*>d) // kind  # the character holding that byte
        if PyUnicode_READ(kind, d, i) == ch:
            return i
        at = hit + 1
    return -1


cdef extern from "_simd.h":  # the C of the block loops (SSE2, or 8 bytes at a time)
    Py_ssize_t _stop_run(int kind, const void* d, Py_ssize_t i, Py_ssize_t n, unsigned int quote) noexcept nogil
    Py_ssize_t _escaped_size(int kind, const void* d, Py_ssize_t n, const unsigned char* escapes) noexcept nogil
    Py_ssize_t _json_blocks(int kind, const void* d, Py_ssize_t i, Py_ssize_t end, void* o, Py_ssize_t* k,
                            Py_ssize_t room, int pairs, const unsigned char* out,
                            const unsigned char* out_len) noexcept nogil
    Py_ssize_t _past_chars(int kind, const void* d, Py_ssize_t i, Py_ssize_t end,
                           const unsigned char* vecs) noexcept nogil
    Py_ssize_t _literal_blocks(int kind, const void* d, Py_ssize_t i, Py_ssize_t n, unsigned int quote,
                               Py_ssize_t* extra, const unsigned char* escape, const signed char* pair_extra,
                               const signed char* char_extra) noexcept nogil
    int STOP_RUN_BYTES


cdef inline Py_ssize_t _quote_or_backslash(int kind, const void* d, Py_ssize_t i, Py_ssize_t end) noexcept nogil:
    """The first index in [i, end) of a quote or a backslash (``end`` if none)."""
    cdef const Py_UCS1* p1
    cdef const Py_UCS2* p2
    cdef const Py_UCS4* p4
    if kind == 1:
        p1 = <const Py_UCS1*>d
        while i < end and p1[i] != 0x22 and p1[i] != 0x5C:
            i += 1
    elif kind == 2:
        p2 = <const Py_UCS2*>d
        while i < end and p2[i] != 0x22 and p2[i] != 0x5C:
            i += 1
    else:
        p4 = <const Py_UCS4*>d
        while i < end and p4[i] != 0x22 and p4[i] != 0x5C:
            i += 1
    return i


cdef inline Py_ssize_t _past_run(int kind, const void* d, Py_ssize_t i, Py_ssize_t end,
                                 const bint* stop) noexcept nogil:
    """The first index in [i, end) of an ASCII character ``stop`` marks (``end`` if none)."""
    cdef const Py_UCS1* p1
    cdef const Py_UCS2* p2
    cdef const Py_UCS4* p4
    if kind == 1:
        p1 = <const Py_UCS1*>d
        while i < end and (p1[i] >= 128 or not stop[p1[i]]):
            i += 1
    elif kind == 2:
        p2 = <const Py_UCS2*>d
        while i < end and (p2[i] >= 128 or not stop[p2[i]]):
            i += 1
    else:
        p4 = <const Py_UCS4*>d
        while i < end and (p4[i] >= 128 or not stop[p4[i]]):
            i += 1
    return i
