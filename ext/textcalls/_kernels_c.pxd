# cython: language_level=3
"""What the scanner (``_scan_c``) calls of the kernels (``_kernels_c``), at C level."""

from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF

from textcalls._text cimport Lit


ctypedef struct Picked:  # what _plain_walk saw of a call object's members (see hermes_call)
    Py_ssize_t name_start, name_end, args_start, args_end
    int rank              # of the arguments key taken so far (ARGUMENT_KEYS: the first present wins)
    bint escaped_key      # a member's key written with an escape: maybe one of these keys


ctypedef struct Walked:  # a plain object _lex read in a block's body: where it is, its members
    Py_ssize_t lo, hi
    Picked picked


cdef inline void _unpicked(Picked* picked) noexcept:
    """Nothing picked yet."""
    picked.name_start = picked.name_end = picked.args_start = picked.args_end = -1
    picked.rank = 4
    picked.escaped_key = False


cdef inline void _fill(object made, Py_ssize_t slot, object value) noexcept:
    """Set an empty slot of an object nothing else has seen yet (what its descriptor's setter does)."""
    Py_INCREF(value)
    (<PyObject**>(<char*><PyObject*>made + slot))[0] = <PyObject*>value


cdef void _lit(Lit* lit, str text) except *
cdef str _slice(str s, Py_ssize_t lo, Py_ssize_t hi)
cdef Py_ssize_t _skip_space(int kind, const void* d, Py_ssize_t i, Py_ssize_t n) noexcept
cdef Py_ssize_t _back_space(int kind, const void* d, Py_ssize_t lo, Py_ssize_t i) noexcept
cdef Py_ssize_t _plain_walk(str text, Py_ssize_t i, Py_ssize_t n, list members, Picked* picked) except -2
cdef Py_ssize_t _slot(type cls, str field) except -1
cdef object _new_call(str name, str arguments, str dialect)
cdef object _hermes_call(str text, Py_ssize_t lo, Py_ssize_t hi, str dialect, const Walked* walked)
cdef object _deepseek_call(str text, Py_ssize_t start, Py_ssize_t n, str dialect, const Walked* walked)
