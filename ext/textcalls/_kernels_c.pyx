# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: freethreading_compatible = True
"""The string kernels in Cython: ``_kernels_py`` again, over the str's own buffer (PEP 393 kinds).

A leaf: it imports the standard library and the package's leaves only (``markers``, ``toolcall``,
``_json_rules``). The scanner (``_scan_c``) calls what ``_kernels_c.pxd`` declares at C level; the rest of
the package calls the functions in ``__all__`` through ``_kernels.impl``. Same functions, same answers
as the twin; the rules are stated once, in docs/scanning.md.
"""

from json import loads as json_loads
from types import MemberDescriptorType
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.object cimport PyObject, PyTypeObject
from cpython.dict cimport PyDict_Next
from cpython.unicode cimport PyUnicode_New
from libc.stdint cimport uint32_t
from libc.string cimport memcpy

from textcalls._text cimport *
from textcalls._json_rules import MAX_DEPTH, PLAIN_DEPTH_MAX, PLAIN_NUMBER_MAX, REPAIR_TOKENS, single_to_double
from textcalls._json_rules import strict_surrogates
from textcalls.markers import ARGUMENT_KEYS as _ARGUMENT_KEYS
from textcalls.markers import DEEPSEEK_SEP
from textcalls.toolcall import EncodedString, ToolCall, new_call_id
from textcalls import toolcall as _toolcall

__all__ = [
    "array_calls", "deepseek_call", "hermes_call", "json_string", "plain_object", "repair", "simple_literal_json",
    "strict_json", "string_object", "too_many_python_nodes",
]


_STOP_RUN_BYTES = STOP_RUN_BYTES  # the build's block: 16 (SSE2) or 8 (checked by .ci/run on a build without SSE2)


cdef enum:
    MAX_DEPTH_ARRAY = 1002  # relaxed_json.MAX_DEPTH + 2: the repairs' bracket stack


cdef void _lit(Lit* lit, str text) except *:
    if len(text) > LIT_MAX:
        raise ValueError("marker literal too long: %r" % text)
    lit.n = len(text)
    lit.n1 = -1
    for k in range(lit.n):
        c = ord(text[k])
        if c > 0xFFFF:
            raise ValueError("a marker literal's characters must be in the BMP: %r" % text)
        lit.ch[k] = c
        lit.u2[k] = c
        if c > 0xFF and lit.n1 < 0:
            lit.n1 = k
        lit.u1[k] = c if lit.n1 < 0 else 0
    lit.n1 = lit.n if lit.n1 < 0 else lit.n1


cdef Lit SEP_LIT
_lit(&SEP_LIT, DEEPSEEK_SEP)


cdef enum:
    SLICE_WIDE_MIN = 64  # a shorter slice of wide text is made by Cython's slicing (the setup would cost more)


cdef str _slice(str s, Py_ssize_t lo, Py_ssize_t hi):
    """``s[lo:hi]`` for ``0 <= lo <= hi <= len(s)``. Out of wide text (2- and 4-byte kinds) the slice's
    narrowest kind is found by OR-ing its characters (a loop the compiler vectorises; the OR is below 128,
    256 or 65536 exactly when every character is), where ``str``'s slicing takes a branch a character. Out
    of ASCII text it is copied (Cython's slicing searches a 1-byte slice for its largest character)."""
    cdef int kind = PyUnicode_KIND(s)
    cdef Py_ssize_t n = hi - lo, k
    cdef str out
    if hi - lo < SLICE_WIDE_MIN:
        return s[lo:hi]
    if kind == PyUnicode_1BYTE_KIND:
        if not PyUnicode_IS_ASCII(s):
            return s[lo:hi]
        out = PyUnicode_New(n, 127)  # ASCII; filled here before anything else sees it
        memcpy(<void*>PyUnicode_DATA(out), <const char*>PyUnicode_DATA(s) + lo, n)
        return out
    cdef const Py_UCS2* p2 = <const Py_UCS2*>PyUnicode_DATA(s) + lo
    cdef const uint32_t* p4 = <const uint32_t*>PyUnicode_DATA(s) + lo  # not Py_UCS4: Cython reads that as a character
    cdef Py_UCS2 top2 = 0
    cdef uint32_t top = 0
    if kind == 2:
        for k in range(n):
            top2 |= p2[k]
        top = top2
    else:
        for k in range(n):
            top |= p4[k]
        if top > 0xFFFF:  # (an OR of code points may pass the last one, 0x10FFFF)
            top = 0x10FFFF
    out = PyUnicode_New(n, top)  # of the kind ``top`` names; filled here before anything else sees it
    cdef int out_kind = PyUnicode_KIND(out)
    cdef Py_UCS1* o1 = <Py_UCS1*>PyUnicode_DATA(out)
    cdef Py_UCS2* o2 = <Py_UCS2*>PyUnicode_DATA(out)
    if out_kind == kind:
        memcpy(o1, <const char*>PyUnicode_DATA(s) + lo * kind, n * kind)
    elif out_kind == 1 and kind == 2:
        for k in range(n):
            o1[k] = <Py_UCS1>p2[k]
    elif out_kind == 1:
        for k in range(n):
            o1[k] = <Py_UCS1>p4[k]
    else:
        for k in range(n):
            o2[k] = <Py_UCS2>p4[k]
    return out


# -- plain JSON objects, read where they are written ------------------------------------------------

cdef enum:
    DEPTH_ARRAY = 128   # the bracket stack of plain_object: PLAIN_DEPTH_MAX must fit

if PLAIN_DEPTH_MAX >= DEPTH_ARRAY:
    raise ImportError("textcalls._scan_c: relaxed_json.PLAIN_DEPTH_MAX does not fit its bracket stack")
cdef Py_ssize_t C_DEPTH_MAX = PLAIN_DEPTH_MAX
cdef Py_ssize_t C_NUMBER_MAX = PLAIN_NUMBER_MAX

cdef enum Expect:
    X_KEY_OR_CLOSE   # after "{"
    X_KEY            # after "," in an object
    X_VALUE          # after ":", or after "," in an array
    X_VALUE_OR_CLOSE  # after "["
    X_AFTER          # after a value


ctypedef fused uchar:  # a str's code unit, by kind: the JSON reader below is compiled once for each
    Py_UCS1
    Py_UCS2
    uint32_t  # (not Py_UCS4: Cython reads that as a character)


cdef inline Py_ssize_t _ws_k(const uchar* d, Py_ssize_t n, Py_ssize_t i) noexcept nogil:
    """The first index from ``i`` that is not JSON whitespace (space, tab, LF, CR)."""
    while i < n and d[i] <= 0x20 and (d[i] == 0x20 or d[i] == 0x0A or d[i] == 0x0D or d[i] == 0x09):
        i += 1
    return i


cdef inline Py_ssize_t _json_ws(int kind, const void* d, Py_ssize_t n, Py_ssize_t i) noexcept nogil:
    """``_ws_k`` for text of ``kind``."""
    if kind == 1:
        return _ws_k(<const Py_UCS1*>d, n, i)
    if kind == 2:
        return _ws_k(<const Py_UCS2*>d, n, i)
    return _ws_k(<const uint32_t*>d, n, i)


cdef inline bint _hex(Py_UCS4 c) noexcept nogil:
    return 0x30 <= c <= 0x39 or 0x41 <= c <= 0x46 or 0x61 <= c <= 0x66


cdef inline bint _digit_k(const uchar* d, Py_ssize_t n, Py_ssize_t i) noexcept nogil:
    return i < n and 0x30 <= d[i] <= 0x39


cdef inline Py_ssize_t _run_k(const uchar* d, Py_ssize_t n, Py_ssize_t i) noexcept nogil:
    """The first index from ``i`` of a quote, a backslash or a control character (``n`` if none): whole
    blocks by ``_stop_run``, then one code unit at a time."""
    i = _stop_run(sizeof(uchar), d, i, n, 0x22)
    while i < n and d[i] >= 0x20 and d[i] != 0x22 and d[i] != 0x5C:
        i += 1
    return i


cdef inline Py_ssize_t _string_run(int kind, const void* d, Py_ssize_t n, Py_ssize_t i) noexcept nogil:
    """``_run_k`` for text of ``kind``."""
    if kind == 1:
        return _run_k(<const Py_UCS1*>d, n, i)
    if kind == 2:
        return _run_k(<const Py_UCS2*>d, n, i)
    return _run_k(<const uint32_t*>d, n, i)


cdef Py_ssize_t _string_k(const uchar* d, Py_ssize_t n, Py_ssize_t i, bint* escaped) noexcept nogil:
    """The index after the JSON string whose quote is at ``i`` (strict: no control character), or -1;
    ``escaped`` is set when it has a backslash."""
    cdef Py_ssize_t k
    i += 1
    while True:
        i = _run_k(d, n, i)
        if i >= n:
            return -1
        if d[i] == 0x22:
            return i + 1
        if d[i] != 0x5C or i + 1 >= n:  # a control character, or the text ends
            return -1
        escaped[0] = True
        if d[i + 1] == 0x75:  # \\uXXXX
            if i + 5 >= n:
                return -1
            for k in range(i + 2, i + 6):
                if not _hex(d[k]):
                    return -1
            i += 6
        elif (d[i + 1] == 0x22 or d[i + 1] == 0x5C or d[i + 1] == 0x2F or d[i + 1] == 0x62 or d[i + 1] == 0x66
              or d[i + 1] == 0x6E or d[i + 1] == 0x72 or d[i + 1] == 0x74):
            i += 2
        else:
            return -1


cdef Py_ssize_t _number_k(const uchar* d, Py_ssize_t n, Py_ssize_t i) noexcept nogil:
    """The index after the number at ``i``, or -1: not a JSON number, or one ``plain_object`` declines
    (an exponent, or longer than PLAIN_NUMBER_MAX)."""
    cdef Py_ssize_t start = i
    if i < n and d[i] == 0x2D:
        i += 1
    if not _digit_k(d, n, i):
        return -1
    if d[i] == 0x30:
        i += 1
    else:
        while _digit_k(d, n, i):
            i += 1
    if i < n and d[i] == 0x2E:
        i += 1
        if not _digit_k(d, n, i):
            return -1
        while _digit_k(d, n, i):
            i += 1
    if i < n and (d[i] == 0x65 or d[i] == 0x45):  # e, E
        return -1
    return -1 if i - start > C_NUMBER_MAX else i


cdef inline Py_ssize_t _word_k(const uchar* d, Py_ssize_t n, Py_ssize_t i, const char* word) noexcept nogil:
    """The index after ``word`` (true, false, null) at ``i``, or -1."""
    cdef Py_ssize_t k = 0
    while word[k]:
        if i + k >= n or d[i + k] != <unsigned char>word[k]:
            return -1
        k += 1
    return i + k


cdef tuple ARGUMENT_KEYS = _ARGUMENT_KEYS
if len(ARGUMENT_KEYS) != 4:
    raise ImportError("textcalls._scan_c reads four arguments keys: markers.ARGUMENT_KEYS has changed")


cdef bint _key_is(int kind, const void* d, Py_ssize_t a, Py_ssize_t b, str word) noexcept:
    """``text[a:b] == word`` for an ASCII ``word``."""
    cdef Py_ssize_t k
    if b - a != PyUnicode_GET_LENGTH(word):
        return False
    for k in range(b - a):
        if PyUnicode_READ(kind, d, a + k) != PyUnicode_READ(PyUnicode_1BYTE_KIND, PyUnicode_DATA(word), k):
            return False
    return True


cdef void _pick(Picked* picked, int kind, const void* d, Py_ssize_t key_start, Py_ssize_t key_end, bint escaped,
                Py_ssize_t value_start, Py_ssize_t value_end) noexcept:
    """Note a top-level member of a call object: ``name``, or the arguments under the best key so far;
    the last of duplicates, as ``json.loads``."""
    cdef int r
    if escaped:
        picked.escaped_key = True
    elif _key_is(kind, d, key_start + 1, key_end - 1, "name"):
        picked.name_start, picked.name_end = value_start, value_end
    else:
        for r in range(min(picked.rank + 1, 4)):
            if _key_is(kind, d, key_start + 1, key_end - 1, <str>ARGUMENT_KEYS[r]):
                picked.rank, picked.args_start, picked.args_end = r, value_start, value_end
                break


cdef Py_ssize_t _plain_walk(str text, Py_ssize_t i, Py_ssize_t n, list members, Picked* picked) except -2:
    """Read the object that starts at ``text[i]`` (``{``) as written (see ``plain_object``) within ``[i, n)``;
    return where it ends, or -1. Its top-level members go to ``members`` (unless ``None``) and ``picked``
    (unless ``NULL``)."""
    cdef int kind = PyUnicode_KIND(text)
    if kind == 1:
        return _walk_k(<const Py_UCS1*>PyUnicode_DATA(text), text, i, n, members, picked)
    if kind == 2:
        return _walk_k(<const Py_UCS2*>PyUnicode_DATA(text), text, i, n, members, picked)
    return _walk_k(<const uint32_t*>PyUnicode_DATA(text), text, i, n, members, picked)


cdef Py_ssize_t _walk_k(const uchar* d, str text, Py_ssize_t i, Py_ssize_t n, list members, Picked* picked) except -2:
    """``_plain_walk`` over ``text``'s code units ``d``."""
    cdef int kind = PyUnicode_KIND(text)
    cdef Py_ssize_t depth = 1, start, key_start = 0, key_end = 0, value_start = 0
    cdef char stack[DEPTH_ARRAY]
    cdef Expect expect = X_KEY_OR_CLOSE
    cdef bint escaped = False, key_escaped = False
    cdef Py_UCS4 c
    stack[1] = 0x7B
    i += 1
    while True:
        i = _ws_k(d, n, i)
        if i >= n:
            return -1
        c = d[i]
        if expect == X_KEY_OR_CLOSE or expect == X_KEY:
            if c == 0x7D and expect == X_KEY_OR_CLOSE:
                depth -= 1
                i += 1
            elif c == 0x22:
                escaped = False
                start = i
                i = _string_k(d, n, i, &escaped)
                if i < 0:
                    return -1
                if depth == 1:  # a member of the object itself: its key and where its value starts
                    key_start, key_end, key_escaped = start, i, escaped
                i = _ws_k(d, n, i)
                if i >= n or d[i] != 0x3A:
                    return -1
                i = _ws_k(d, n, i + 1)
                if depth == 1:
                    value_start = i
                expect = X_VALUE
                continue
            else:
                return -1
        elif expect == X_VALUE or expect == X_VALUE_OR_CLOSE:
            if c == 0x5D and expect == X_VALUE_OR_CLOSE:
                depth -= 1
                i += 1
            elif c == 0x7B or c == 0x5B:
                depth += 1
                if depth > C_DEPTH_MAX:
                    return -1
                stack[depth] = <char>c
                expect = X_KEY_OR_CLOSE if c == 0x7B else X_VALUE_OR_CLOSE
                i += 1
                continue
            elif c == 0x22:
                i = _string_k(d, n, i, &escaped)
            elif c == 0x2D or 0x30 <= c <= 0x39:
                i = _number_k(d, n, i)
            elif c == 0x74:
                i = _word_k(d, n, i, b"true")
            elif c == 0x66:
                i = _word_k(d, n, i, b"false")
            elif c == 0x6E:
                i = _word_k(d, n, i, b"null")
            else:
                return -1
            if i < 0:
                return -1
        else:  # X_AFTER
            if c == 0x2C:
                expect = X_KEY if stack[depth] == 0x7B else X_VALUE
                i += 1
                continue
            if c != (0x7D if stack[depth] == 0x7B else 0x5D):
                return -1
            depth -= 1
            i += 1
        # a value ended at i: a scalar, or a container closed
        if depth == 0:  # the object itself
            return i
        if depth == 1:
            if members is not None:
                members.append((None if key_escaped else text[key_start + 1 : key_end - 1], value_start, i))
            if picked != NULL:
                _pick(picked, kind, <const void*>d, key_start, key_end, key_escaped, value_start, i)
        expect = X_AFTER


def plain_object(text):
    """``(start, end, members)`` when ``text`` is one JSON object read as written, else ``None``.

    As written: ``json.loads`` reads it (strict), with no number in exponent form or longer than
    ``PLAIN_NUMBER_MAX`` characters, no ``NaN``/``Infinity``, and at most ``PLAIN_DEPTH_MAX`` levels of
    brackets. ``text[start:end]`` is the object (JSON whitespace around it); ``members`` its top-level
    members as ``(key, value_start, value_end)`` in order, duplicates included, ``key`` ``None`` when
    written with an escape.
    """
    if not isinstance(text, str):
        raise TypeError(f"plain_object() expects str, not {type(text).__name__}")
    cdef int kind = PyUnicode_KIND(text)
    cdef const void* d = PyUnicode_DATA(text)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
    cdef Py_ssize_t start = _json_ws(kind, d, n, 0), end
    if start >= n or PyUnicode_READ(kind, d, start) != 0x7B:
        return None
    members = []
    end = _plain_walk(text, start, n, members, NULL)
    return (start, end, members) if end >= 0 and _json_ws(kind, d, n, end) == n else None


cdef bytes ID_PREFIX = _toolcall.ID_PREFIX.encode("ascii")
cdef object NEXT_ID = _toolcall.NEXT_ID  # the process's id count (toolcall.new_call_id's)
cdef bint IDS_HERE = not _toolcall.ID_LOCKED  # with the GIL, a count's next() is one atomic step


cdef const char* HEX_DIGITS = b"0123456789abcdef"


cdef str _call_id():
    """``new_call_id()``, made here from the same count: the prefix and the number in at least 10 hex digits."""
    cdef unsigned long long number = NEXT_ID()
    cdef char digits[16]
    cdef int k = 0, j
    cdef Py_ssize_t size = len(ID_PREFIX)
    while number or k < 10:
        digits[k] = HEX_DIGITS[number & 15]
        number >>= 4
        k += 1
    cdef str call_id = PyUnicode_New(size + k, 127)  # ASCII, filled here before anything else sees it
    cdef Py_UCS1* out = <Py_UCS1*>PyUnicode_DATA(call_id)
    memcpy(out, <const char*>ID_PREFIX, size)
    for j in range(k):
        out[size + j] = digits[k - 1 - j]
    return call_id


cdef Py_ssize_t _slot(type cls, str field) except -1:
    """The offset of ``cls``'s slot ``field`` (its member descriptor's)."""
    descr = cls.__dict__[field]
    if type(descr) is not MemberDescriptorType:
        raise ImportError(f"textcalls._scan_c needs {cls.__name__}.{field} to be a slot")
    return (<PyMemberDescrObject*><PyObject*>descr).d_member.offset


cdef Py_ssize_t SLOT_NAME = _slot(ToolCall, "name"), SLOT_ARGUMENTS = _slot(ToolCall, "arguments")
cdef Py_ssize_t SLOT_ID = _slot(ToolCall, "id"), SLOT_DIALECT = _slot(ToolCall, "dialect")


cdef inline bint _surrogate_escape(int kind, const void* d, Py_ssize_t n, Py_ssize_t i) noexcept:
    """The backslash at ``i`` begins a surrogate's escape, ``\\uD800`` to ``\\uDFFF`` (its first three letters)."""
    cdef Py_UCS4 c
    if i + 3 >= n or PyUnicode_READ(kind, d, i + 1) != 0x75:
        return False
    c = PyUnicode_READ(kind, d, i + 2)
    if c != 0x64 and c != 0x44:
        return False
    c = PyUnicode_READ(kind, d, i + 3)
    return 0x38 <= c <= 0x39 or 0x61 <= c <= 0x66 or 0x41 <= c <= 0x46


cdef str _strict(str text):
    """``strict_json``: ``text`` itself unless an escape (read left to right, backslash by backslash) is a
    surrogate's or, in wide text, a character is a surrogate; then ``_json_rules.strict_surrogates(text)``."""
    cdef int kind = PyUnicode_KIND(text)
    cdef const void* d = PyUnicode_DATA(text)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text), i
    cdef Py_UCS4 c
    if kind == 1:  # (no surrogate character fits one byte)
        i = _find(kind, d, 0, n, 0x5C)
        while i >= 0:
            if _surrogate_escape(kind, d, n, i):
                return strict_surrogates(text)
            i = _find(kind, d, i + 2, n, 0x5C)
        return text
    i = 0
    while i < n:
        c = PyUnicode_READ(kind, d, i)
        if c == 0x5C:
            if _surrogate_escape(kind, d, n, i):
                return strict_surrogates(text)
            i += 2
        elif 0xD800 <= c <= 0xDFFF:
            return strict_surrogates(text)
        else:
            i += 1
    return text


def strict_json(str text not None):
    """``text`` (arguments: JSON text) with every lone surrogate replaced by U+FFFD
    (``_json_rules.strict_surrogates``); ``text`` itself when it has none."""
    return _strict(text)


cdef object _new_call(str name, str arguments, str dialect):
    """``ToolCall(name, strict_json(arguments), None, dialect)``, made as its ``__init__`` makes it (its four
    slots set), with its id made here as ``new_call_id`` makes it, from the same count."""
    call_id = _call_id() if IDS_HERE else new_call_id()
    call = PyType_GenericAlloc(<PyTypeObject*>ToolCall, 0)  # object.__new__(ToolCall)'s (ToolCall has no __new__)
    _fill(call, SLOT_NAME, name)
    _fill(call, SLOT_ARGUMENTS, _strict(arguments))
    _fill(call, SLOT_ID, call_id)
    _fill(call, SLOT_DIALECT, dialect)
    return call


def hermes_call(str body not None, str dialect not None):
    """The call of a Hermes ``<tool_call>`` body that is a plain call object (``plain_object`` once
    ``str.strip``-ped) with a non-blank ``name`` string and object arguments under the
    first of ``arguments``/``parameters``/``args``/``input`` present (the last of duplicates) and no
    member key written with an escape; its arguments kept as written, read from ``dialect``. ``None``
    for any other body (``dialects.hermes`` reads those): where it gives a call, the grammar gives the
    same one."""
    return _hermes_call(body, 0, PyUnicode_GET_LENGTH(body), dialect, NULL)


cdef Py_ssize_t _skip_space(int kind, const void* d, Py_ssize_t i, Py_ssize_t n) noexcept:
    """The first index from ``i`` whose character ``str.strip`` keeps; ``n`` if none."""
    while i < n and Py_UNICODE_ISSPACE(PyUnicode_READ(kind, d, i)):
        i += 1
    return i


cdef Py_ssize_t _back_space(int kind, const void* d, Py_ssize_t lo, Py_ssize_t i) noexcept:
    """The index after the last character before ``i`` (from ``lo``) that ``str.strip`` keeps; ``lo`` if none."""
    while i > lo and Py_UNICODE_ISSPACE(PyUnicode_READ(kind, d, i - 1)):
        i -= 1
    return i


cdef object _hermes_call(str text, Py_ssize_t lo, Py_ssize_t hi, str dialect, const Walked* walked):
    """``hermes_call`` of the body ``text[lo:hi]``; ``walked``: a plain object ``_lex`` read in ``text`` (or
    ``NULL``), not read again."""
    cdef int kind = PyUnicode_KIND(text)
    cdef const void* d = PyUnicode_DATA(text)
    cdef Py_ssize_t end
    lo = _skip_space(kind, d, lo, hi)
    hi = _back_space(kind, d, lo, hi)
    if lo >= hi or PyUnicode_READ(kind, d, lo) != 0x7B:
        return None
    if walked != NULL and walked.lo == lo and walked.hi == hi:  # (the object read from lo ends where it ended)
        return _picked_call(text, &walked.picked, dialect)
    call = _call_object_at(text, lo, hi, dialect, &end)
    return call if end == hi else None


cdef object _call_object_at(str text, Py_ssize_t i, Py_ssize_t n, str dialect, Py_ssize_t* end):
    """``hermes_call`` of the object that starts at ``text[i]`` (``{``) within ``[i, n)``; ``end`` receives
    where it ends (-1: not a plain object)."""
    cdef Picked picked
    _unpicked(&picked)
    end[0] = _plain_walk(text, i, n, None, &picked)
    return None if end[0] < 0 else _picked_call(text, &picked, dialect)


cdef object _picked_call(str text, const Picked* picked, str dialect):
    """The call of a plain object in ``text`` whose members ``picked`` holds: a non-blank name string and
    object arguments, no key written with an escape; else ``None``."""
    cdef int kind = PyUnicode_KIND(text)
    cdef const void* d = PyUnicode_DATA(text)
    if (picked.escaped_key or picked.name_start < 0 or picked.args_start < 0
            or PyUnicode_READ(kind, d, picked.name_start) != 0x22
            or PyUnicode_READ(kind, d, picked.args_start) != 0x7B):
        return None
    name = text[picked.name_start + 1 : picked.name_end - 1]
    if "\\" in name:
        name = json_loads(text[picked.name_start : picked.name_end])
    name = name.strip()
    return _new_call(name, _slice(text, picked.args_start, picked.args_end), dialect) if name else None


def array_calls(str text not None, str dialect not None):
    """The calls of a JSON array (JSON whitespace around it and between its elements) whose every element
    is a call object ``hermes_call`` reads, in order; ``[]`` for an empty array; ``None`` for any other
    text. Where it gives calls, reading each element as a call object gives the same ones."""
    cdef int kind = PyUnicode_KIND(text)
    cdef const void* d = PyUnicode_DATA(text)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text), i = _json_ws(kind, d, n, 0), end
    if i >= n or PyUnicode_READ(kind, d, i) != 0x5B:
        return None
    calls = []
    i = _json_ws(kind, d, n, i + 1)
    if i < n and PyUnicode_READ(kind, d, i) == 0x5D:
        return calls if _json_ws(kind, d, n, i + 1) == n else None
    while i < n and PyUnicode_READ(kind, d, i) == 0x7B:
        call = _call_object_at(text, i, n, dialect, &end)
        if call is None:
            return None
        calls.append(call)
        i = _json_ws(kind, d, n, end)
        if i < n and PyUnicode_READ(kind, d, i) == 0x2C:
            i = _json_ws(kind, d, n, i + 1)
        elif i < n and PyUnicode_READ(kind, d, i) == 0x5D:
            return calls if _json_ws(kind, d, n, i + 1) == n else None
        else:
            return None
    return None


cdef object _written_call(str name, str text, Py_ssize_t lo, Py_ssize_t hi, str dialect, const Walked* walked):
    """``jsonlike.as_written(name, text[lo:hi])`` with ``dialect``: the call when that text is a plain object
    (JSON whitespace around it) and ``name`` is not blank; else ``None``. ``walked``: a plain object
    ``_lex`` read in ``text`` (or ``NULL``), not read again."""
    cdef int kind = PyUnicode_KIND(text)
    cdef const void* d = PyUnicode_DATA(text)
    cdef Py_ssize_t start = _json_ws(kind, d, hi, lo), end
    if start >= hi or PyUnicode_READ(kind, d, start) != 0x7B:
        return None
    if walked != NULL and walked.lo == start and walked.hi <= hi:  # (the object read from start ends there)
        end = walked.hi
    else:
        end = _plain_walk(text, start, hi, None, NULL)
    if end < 0 or _json_ws(kind, d, hi, end) != hi:
        return None
    name = name.strip()
    return _new_call(name, _slice(text, start, end), dialect) if name else None


def deepseek_call(str body not None, str dialect not None):
    """The call of a DeepSeek body (``<｜tool▁sep｜>`` written full-width) whose arguments are a plain object
    (``plain_object``) the grammar keeps as written: ``NAME<sep>{args}``, or ``TYPE<sep>NAME`` and a line
    break before the object, maybe in one `` ```json `` fence; read from ``dialect``. ``None`` for any
    other body (``dialects.deepseek`` reads those): where it gives a call, the grammar gives the same one."""
    return _deepseek_call(body, 0, PyUnicode_GET_LENGTH(body), dialect, NULL)


cdef inline bint _ticks(int kind, const void* d, Py_ssize_t n, Py_ssize_t i) noexcept:
    """Three backticks at ``i`` (``text.startswith("```", i)``)."""
    return 0 <= i and i + 3 <= n and (
        PyUnicode_READ(kind, d, i) == 0x60 and PyUnicode_READ(kind, d, i + 1) == 0x60
        and PyUnicode_READ(kind, d, i + 2) == 0x60)


cdef const char* JSON_INFO = b"json"


cdef inline bint _json_info(int kind, const void* d, Py_ssize_t i, Py_ssize_t j) noexcept:
    """``text[i:j].strip().lower() in ("", "json")`` (no other character lowers to an ASCII letter of it)."""
    cdef Py_ssize_t k
    i = _skip_space(kind, d, i, j)
    j = _back_space(kind, d, i, j)
    if j - i == 0:
        return True
    if j - i != 4:
        return False
    for k in range(4):
        if (<unsigned int>PyUnicode_READ(kind, d, i + k) | 0x20u) != <unsigned char>JSON_INFO[k]:
            return False
    return True


cdef Py_ssize_t _find_sep(int kind, const void* d, Py_ssize_t lo, Py_ssize_t n) noexcept:
    """The first index of DeepSeek's separator in [lo, n), or -1 (``text.find(DEEPSEEK_SEP, lo, n)``)."""
    cdef Py_ssize_t i = _find(kind, d, lo, n, 0x3C)
    while i >= 0:
        if _match(kind, d, n, i, &SEP_LIT) == 1:
            return i
        i = _find(kind, d, i + 1, n, 0x3C)
    return -1


cdef object _deepseek_call(str text, Py_ssize_t start, Py_ssize_t n, str dialect, const Walked* walked):
    """``deepseek_call`` of the body ``text[start:n]``; ``walked``: a plain object ``_lex`` read in ``text``
    (or ``NULL``), not read again."""
    cdef int kind = PyUnicode_KIND(text)
    cdef const void* d = PyUnicode_DATA(text)
    cdef Py_ssize_t i, j, k, nl, lo, hi, a, b
    i = _find_sep(kind, d, start, n)
    if i < 0:
        return None
    j = i + SEP_LIT.n
    k = _skip_space(kind, d, j, n)
    if k < n and PyUnicode_READ(kind, d, k) == 0x7B:  # NAME<sep>{args}
        return _written_call(text[start:i], text, j, n, dialect, walked)
    if _ticks(kind, d, n, k):  # a fence right after the separator: the grammar reads it
        return None
    nl = _find(kind, d, j, n, 0x0A)  # TYPE<sep>NAME, then the arguments on the lines after
    if nl < 0:
        return None
    lo, hi = nl + 1, n
    a, b = _skip_space(kind, d, lo, n), _back_space(kind, d, lo, n)  # relaxed_json.strip_fence
    k = _find(kind, d, a, b, 0x0A)
    # (a newline in [a, b) after three backticks at a puts b - 3 past a)
    if k >= 0 and _ticks(kind, d, n, a) and _ticks(kind, d, n, b - 3) and _json_info(kind, d, a + 3, k):
        lo, hi = k + 1, b - 3
    return _written_call(text[j:nl], text, lo, hi, dialect, walked)


# -- a string written as JSON (json.encoder.encode_basestring) --------------------------------------------

# what follows the backslash that escapes an ASCII character in JSON ("u": \u00XX; 0: written as it is)
cdef unsigned char JSON_ESCAPES[128]
for _c in range(128):
    JSON_ESCAPES[_c] = ord("u") if _c < 0x20 else 0
for _c, _e in zip('"\\\b\f\n\r\t', '"\\bfnrt'):
    JSON_ESCAPES[ord(_c)] = ord(_e)
cdef const char* LOWER_HEX = b"0123456789abcdef"
# how _json_blocks writes a stop: a character c (< 128) at JSON_OUT[8 * c], JSON_OUT_LEN[c] long; a simple
# literal's backslash and the ASCII character e after it at JSON_OUT[8 * (128 + e)] (set with PY_ESCAPE below)
cdef unsigned char JSON_OUT[256 * 8]
cdef unsigned char JSON_OUT_LEN[256]


def _json_text(c):
    e = JSON_ESCAPES[c]
    return chr(c) if not e else f"\\u{c:04x}" if e == ord("u") else "\\" + chr(e)


def _json_out(at, written):
    JSON_OUT_LEN[at] = len(written)
    for _i, _ch in enumerate(written.ljust(8, "\0")):
        JSON_OUT[8 * at + _i] = ord(_ch)


for _c in range(128):
    _json_out(_c, _json_text(_c))


cdef Py_ssize_t _json_size(str s):
    """The length of ``s`` written as a JSON string (``json_string``), quotes included."""
    return _span_json_size(PyUnicode_KIND(s), PyUnicode_DATA(s), PyUnicode_GET_LENGTH(s))


cdef Py_ssize_t _span_json_size(int kind, const void* d, Py_ssize_t n):
    """The length of the ``n`` characters at ``d`` written as a JSON string, quotes included."""
    cdef Py_ssize_t i = 0
    cdef Py_ssize_t size = _escaped_size(kind, d, n, JSON_ESCAPES)
    if size < 0:  # (4-byte text, or no SSE2) each escape adds 1, or 5 for \u00XX
        size = n + 2
        while True:
            i = _string_run(kind, d, n, i)
            if i >= n:
                break
            size += 5 if JSON_ESCAPES[PyUnicode_READ(kind, d, i)] == 0x75 else 1
            i += 1
    return size


cdef Py_ssize_t _json_write(str s, int okind, void* o, Py_ssize_t k, Py_ssize_t room):
    """Write ``s`` as a JSON string (``json_string``) into ``o`` (of ``okind``, no narrower than ``s``'s
    kind, with room for ``_json_size(s)`` characters) from index ``k``; the index after it. ``o`` has
    ``room`` characters, all written after this but for those before ``k``."""
    cdef int kind = PyUnicode_KIND(s)
    cdef const void* d = PyUnicode_DATA(s)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(s), i = 0, j, t
    cdef unsigned int c  # (not Py_UCS4: Cython reads that as a character)
    cdef unsigned char e
    PyUnicode_WRITE(okind, o, k, 0x22)
    k += 1
    if okind == kind:
        i = _json_blocks(kind, d, 0, n, o, &k, room, 0, JSON_OUT, JSON_OUT_LEN)
    while i < n:
        j = _string_run(kind, d, n, i)
        if okind == kind:
            memcpy(<char*>o + k * kind, <const char*>d + i * kind, (j - i) * kind)
        else:  # a narrower string among wider ones (string_object)
            for t in range(j - i):
                PyUnicode_WRITE(okind, o, k + t, PyUnicode_READ(kind, d, i + t))
        k += j - i
        if j >= n:
            break
        c = PyUnicode_READ(kind, d, j)
        e = JSON_ESCAPES[c]
        PyUnicode_WRITE(okind, o, k, 0x5C)
        PyUnicode_WRITE(okind, o, k + 1, e)
        if e == 0x75:  # u00XX
            PyUnicode_WRITE(okind, o, k + 2, 0x30)
            PyUnicode_WRITE(okind, o, k + 3, 0x30)
            PyUnicode_WRITE(okind, o, k + 4, LOWER_HEX[c >> 4])
            PyUnicode_WRITE(okind, o, k + 5, LOWER_HEX[c & 15])
            k += 6
        else:
            k += 2
        i = j + 1
    PyUnicode_WRITE(okind, o, k, 0x22)
    return k + 1


def json_string(str s not None):
    """``json.encoder.encode_basestring(s)``: ``s`` written as a JSON string, in quotes, with ``"``, ``\\``
    and the control characters escaped as json escapes them (``\\n``, ``\\u001f``); every other character as
    it is (lone surrogates too)."""
    cdef str out = PyUnicode_New(_json_size(s), PyUnicode_MAX_CHAR_VALUE(s))  # filled here before it is seen
    _json_write(s, PyUnicode_KIND(s), <void*>PyUnicode_DATA(out), 0, PyUnicode_GET_LENGTH(out))
    return out


cdef inline object _encoded(object value):
    """An ``EncodedString``'s JSON text (a ``str``), or ``None`` for any other value."""
    if type(value) is EncodedString and PyUnicode_CheckExact((<object>value).json):
        return (<object>value).json
    return None


cdef Py_ssize_t _text_write(str s, int okind, void* o, Py_ssize_t k):
    """Write ``s`` as it is into ``o`` (of ``okind``, no narrower) from ``k``; the index after it."""
    cdef int kind = PyUnicode_KIND(s)
    cdef const void* d = PyUnicode_DATA(s)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(s), t
    if okind == kind:
        memcpy(<char*>o + k * kind, d, n * kind)
    else:
        for t in range(n):
            PyUnicode_WRITE(okind, o, k + t, PyUnicode_READ(kind, d, t))
    return k + n


def string_object(args):
    """``json.dumps(args, ensure_ascii=False)`` when ``args`` is a ``dict`` whose keys and values are all
    ``str`` (not a subclass), written at once; else ``None``. A value may also be an ``EncodedString``: its
    JSON text is written as it is."""
    cdef Py_ssize_t pos = 0, size = 2, k = 1, items = 0
    cdef PyObject* key
    cdef PyObject* value
    cdef Py_UCS4 widest = 127
    cdef int okind
    cdef void* o
    cdef object text
    if type(args) is not dict:
        return None
    while PyDict_Next(args, &pos, &key, &value):
        if not PyUnicode_CheckExact(<object>key):
            return None
        if PyUnicode_CheckExact(<object>value):
            text = <object>value
            size += _json_size(<str>text)
        else:
            text = _encoded(<object>value)
            if text is None:
                return None
            size += PyUnicode_GET_LENGTH(text)
        size += _json_size(<str>key) + 2  # and ": "
        widest = max(widest, PyUnicode_MAX_CHAR_VALUE(<object>key), PyUnicode_MAX_CHAR_VALUE(text))
        items += 1
    if items > 1:
        size += 2 * (items - 1)  # ", " between
    cdef str out = PyUnicode_New(size, widest)  # filled here before it is seen
    okind = PyUnicode_KIND(out)
    o = <void*>PyUnicode_DATA(out)
    PyUnicode_WRITE(okind, o, 0, 0x7B)
    pos = 0
    while PyDict_Next(args, &pos, &key, &value):
        if k > 1:
            PyUnicode_WRITE(okind, o, k, 0x2C)
            PyUnicode_WRITE(okind, o, k + 1, 0x20)
            k += 2
        k = _json_write(<str>key, okind, o, k, size)
        PyUnicode_WRITE(okind, o, k, 0x3A)
        PyUnicode_WRITE(okind, o, k + 1, 0x20)
        if PyUnicode_CheckExact(<object>value):
            k = _json_write(<str>value, okind, o, k + 2, size)
        else:
            k = _text_write(<str>_encoded(<object>value), okind, o, k + 2)
    PyUnicode_WRITE(okind, o, k, 0x7D)
    return out


# -- a Python string literal read where it is written (the pythonic grammars' long strings) --------------

# a backslash before an ASCII character in a Python str literal: 1, an escape of one character (then
# PY_ESCAPED is what it stands for); 2, an escape simple_literal_json leaves to its caller (\x, \u, \U, \N, octal)
# or no part of a one-line literal (a NUL, LF or CR after it); 0, no escape: the backslash is kept
cdef unsigned char PY_ESCAPE[128]
cdef unsigned char PY_ESCAPED[128]
for _c in range(128):
    PY_ESCAPE[_c] = 0
    PY_ESCAPED[_c] = 0
for _c, _e in zip("\\'\"abfnrtv", "\\'\"\a\b\f\n\r\t\v"):
    PY_ESCAPE[ord(_c)] = 1
    PY_ESCAPED[ord(_c)] = ord(_e)
for _c in "xuUN01234567\x00\n\r":
    PY_ESCAPE[ord(_c)] = 2
for _c in range(128):  # a pair as its value (\\n: \\n, \\a: \\u0007, \\': ') or both (\\d: \\\\d)
    _json_out(128 + _c, _json_text(PY_ESCAPED[_c]) if PY_ESCAPE[_c] == 1 else "\\\\" + _json_text(_c))
del _json_out, _json_text
# what a stop in a simple literal's body adds written as JSON (simple_literal_json): a backslash and the ASCII
# character e after it, PY_PAIR_EXTRA[e] (the length of the value as JSON, less 2); a character c on its own
# (a control character, or a '"' in a '-quoted literal), JSON_EXTRA[c] (its JSON length, less 1)
cdef signed char PY_PAIR_EXTRA[128]
cdef signed char JSON_EXTRA[128]


for _c in range(128):
    JSON_EXTRA[_c] = JSON_OUT_LEN[_c] - 1
    PY_PAIR_EXTRA[_c] = JSON_OUT_LEN[128 + _c] - 2


cdef Py_ssize_t _literal_k(const uchar* d, Py_ssize_t n, Py_ssize_t i, uint32_t quote,
                           Py_ssize_t* json_extra) noexcept nogil:
    """The index of the quote that closes a simple literal whose body starts at ``i`` (``simple_literal_json``),
    or -1; ``json_extra`` receives how much longer the value is written as JSON, quotes aside, than the body.
    Whole blocks are read by ``_literal_blocks``; the rest, and what it leaves to decide, here."""
    cdef Py_ssize_t lo = i, extra = 0, k
    cdef uint32_t c, surrogates = 0
    i = _literal_blocks(sizeof(uchar), d, i, n, quote, &extra, PY_ESCAPE, PY_PAIR_EXTRA, JSON_EXTRA)
    while True:
        if quote == 0x22:  # (without SSE2, runs of 8 bytes; else the blocks were read above)
            i = _stop_run(sizeof(uchar), d, i, n, quote)
        while i < n and d[i] >= 0x20 and d[i] != quote and d[i] != 0x5C and d[i] != 0x22:
            i += 1
        if i >= n:
            return -1
        c = d[i]
        if c == quote:
            break
        if c == 0x5C:
            if i + 1 >= n or d[i + 1] >= 128 or PY_ESCAPE[d[i + 1]] == 2:
                return -1
            extra += PY_PAIR_EXTRA[d[i + 1]]
            i += 2
        elif c == 0 or c == 0x0A or c == 0x0D:
            return -1
        else:  # another control character, or a '"' in a '-quoted literal: written as JSON writes it
            extra += JSON_EXTRA[c]
            i += 1
    if uchar is not Py_UCS1:  # a lone surrogate: the parser cannot read the text
        for k in range(lo, i):
            surrogates |= 0xD800 <= d[k] <= 0xDFFF
        if surrogates:
            return -1
    json_extra[0] = extra
    return i


cdef inline Py_ssize_t _json_char_k(uchar* out, Py_ssize_t k, uint32_t c) noexcept nogil:
    """Write ``c`` as JSON writes it in a string at ``out[k]``; the index after it."""
    cdef unsigned char e = JSON_ESCAPES[c] if c < 128 else 0
    if not e:
        out[k] = c
        return k + 1
    out[k] = 0x5C
    out[k + 1] = e
    if e != 0x75:
        return k + 2
    out[k + 2] = 0x30
    out[k + 3] = 0x30
    out[k + 4] = LOWER_HEX[c >> 4]
    out[k + 5] = LOWER_HEX[c & 15]
    return k + 6


cdef Py_ssize_t _transcode_k(const uchar* d, Py_ssize_t i, Py_ssize_t end, uchar* out, Py_ssize_t k,
                             Py_ssize_t room) noexcept nogil:
    """Write a simple literal's body ``d[i:end]`` (``_literal_k`` read it) as the JSON text of its value, without
    quotes, into ``out`` from ``k`` (``room`` characters, all written after this but for those before ``k``):
    block by block (``_json_blocks``), then run by run. The index after it."""
    cdef Py_ssize_t j
    cdef uint32_t c, e
    if uchar is not uint32_t:
        i = _json_blocks(sizeof(uchar), d, i, end, out, &k, room, 1, JSON_OUT, JSON_OUT_LEN)
    while True:
        j = _run_k(d, end, i)
        memcpy(out + k, d + i, (j - i) * sizeof(uchar))
        k += j - i
        if j >= end:
            return k
        c = d[j]
        i = j + 1
        if c == 0x5C:
            e = d[j + 1]
            i = j + 2
            if PY_ESCAPE[e] == 1:
                c = PY_ESCAPED[e]
            else:
                out[k] = 0x5C
                out[k + 1] = 0x5C
                k += 2
                c = e
        k = _json_char_k(out, k, c)


cdef Py_ssize_t _read_literal(str text, Py_ssize_t start, Py_ssize_t* extra) except -2:
    """``_literal_k`` of the literal whose quote is at ``start`` (ValueError if none is there)."""
    cdef int kind = PyUnicode_KIND(text)
    cdef const void* d = PyUnicode_DATA(text)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
    if not 0 <= start < n or PyUnicode_READ(kind, d, start) not in (0x22, 0x27):
        raise ValueError(f"simple_literal_json() expects the index of a quote in the text, not {start}")
    if kind == 1:
        return _literal_k(<const Py_UCS1*>d, n, start + 1, PyUnicode_READ(kind, d, start), extra)
    if kind == 2:
        return _literal_k(<const Py_UCS2*>d, n, start + 1, PyUnicode_READ(kind, d, start), extra)
    return _literal_k(<const uint32_t*>d, n, start + 1, PyUnicode_READ(kind, d, start), extra)


def simple_literal_json(str text not None, Py_ssize_t start, Py_ssize_t json_from):
    """``(end, json)`` of the Python string literal whose quote (``'`` or ``"``) is at ``start``, when it is
    simple: it ends on its line, has no NUL, CR or lone surrogate, and its only backslashes are the escapes
    ``\\\\ \\' \\" \\a \\b \\f \\n \\r \\t \\v`` or ones Python keeps (before another ASCII character, not
    one of ``x u U N 0-7``). ``end`` is the index after its closing quote; ``json`` the string Python's parser
    makes of it written as JSON (``json_string``), when its body is ``json_from`` characters or more, else
    ``None``. ``None`` for any other literal (its reader is the caller's). No decoded value is made."""
    cdef Py_ssize_t size, extra = 0, k
    cdef Py_ssize_t close = _read_literal(text, start, &extra)
    cdef int kind = PyUnicode_KIND(text)
    cdef const void* d = PyUnicode_DATA(text)
    cdef str out
    cdef void* buffer
    if close < 0:
        return None
    if close - start - 1 < json_from:
        return close + 1, None
    size = close - start + 1 + extra  # the body, its extra and two quotes
    if PyUnicode_IS_ASCII(text):  # written in place
        out = PyUnicode_New(size, 127)  # (new: filled before it is seen)
        buffer = <void*>PyUnicode_DATA(out)
    else:  # in a buffer of the text's kind, made a str of the narrowest kind by CPython
        buffer = PyMem_Malloc(size * kind)
        if buffer == NULL:
            raise MemoryError()
    if kind == 1:
        (<Py_UCS1*>buffer)[0] = 0x22
        k = _transcode_k(<const Py_UCS1*>d, start + 1, close, <Py_UCS1*>buffer, 1, size)
        (<Py_UCS1*>buffer)[k] = 0x22
    elif kind == 2:
        (<Py_UCS2*>buffer)[0] = 0x22
        k = _transcode_k(<const Py_UCS2*>d, start + 1, close, <Py_UCS2*>buffer, 1, size)
        (<Py_UCS2*>buffer)[k] = 0x22
    else:
        (<uint32_t*>buffer)[0] = 0x22
        k = _transcode_k(<const uint32_t*>d, start + 1, close, <uint32_t*>buffer, 1, size)
        (<uint32_t*>buffer)[k] = 0x22
    if PyUnicode_IS_ASCII(text):
        return close + 1, out
    try:
        return close + 1, PyUnicode_FromKindAndData(kind, buffer, size)
    finally:
        PyMem_Free(buffer)


# -- a pythonic body's nodes outside its string literals (pythonic.NODES_MAX) --------------------------------

cdef unsigned char PY_NODE[128]  # 1: a node character, ( , = [ {; 2: a quote; else 0
for _c in "(,=[{":
    PY_NODE[ord(_c)] = 1
PY_NODE[0x22] = PY_NODE[0x27] = 2


cdef Py_ssize_t _triple_end_k(const uchar* d, Py_ssize_t n, Py_ssize_t i, uint32_t q) noexcept nogil:
    """The index after the triple-quoted literal whose body starts at ``i``, or -1 if it does not close."""
    while i < n:
        if d[i] == 0x5C:
            i += 2
        elif d[i] == q and i + 2 < n and d[i + 1] == q and d[i + 2] == q:
            return i + 3
        else:
            i += 1
    return -1


cdef Py_ssize_t _line_end_k(const uchar* d, Py_ssize_t n, Py_ssize_t i, uint32_t q) noexcept nogil:
    """Where the one-line literal whose body starts at ``i`` stops: its closing quote's index if it closes, else
    the line feed's or ``n``."""
    while i < n and d[i] != q and d[i] != 0x0A:
        if d[i] == 0x5C:
            if i + 1 >= n:
                return n
            i += 1
        i += 1
    return i


cdef bint _nodes_over_k(const uchar* d, Py_ssize_t n, Py_ssize_t cap) noexcept nogil:
    """``too_many_python_nodes`` of the text ``d[:n]``."""
    cdef Py_ssize_t i = 0, nodes = 0, end
    cdef Py_ssize_t line_fails[2]  # by quote (0: ', 1: "): a one-line literal opened before this index fails
    cdef bint triple_fails[2]  # by quote: a triple-quoted literal fails
    cdef uint32_t c
    cdef int k
    line_fails[0] = line_fails[1] = -1
    triple_fails[0] = triple_fails[1] = False
    while i < n:
        c = d[i]
        i += 1
        if c >= 128 or PY_NODE[c] == 0:
            continue
        if PY_NODE[c] == 1:
            nodes += 1
            if nodes > cap:
                return True
            continue
        k = c == 0x22
        if not triple_fails[k] and i + 1 < n and d[i] == c and d[i + 1] == c:
            end = _triple_end_k(d, n, i + 2, c)
            if end >= 0:
                i = end
                continue
            triple_fails[k] = True
        if i > line_fails[k]:  # (its quote at i - 1)
            end = _line_end_k(d, n, i, c)
            if end < n and d[end] == c:
                i = end + 1
            else:
                line_fails[k] = end
    return False


def too_many_python_nodes(str text not None, Py_ssize_t cap):
    """More than ``cap`` of ``( , = [ {`` in ``text`` outside its Python string literals (``pythonic.NODES_MAX``),
    read from left to right: at a quote, a triple-quoted literal if three quotes open one that closes, else a
    one-line literal if one closes before a line feed, else the quote is a character like the others; in
    either, a backslash and the character after it are read together. In linear time: when a literal does
    not close, every later one of its kind (triple; one-line, opened before where that one failed) fails
    too, and is not read again."""
    cdef int kind = PyUnicode_KIND(text)
    cdef const void* d = PyUnicode_DATA(text)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
    if cap < 0:
        raise ValueError(f"too_many_python_nodes() expects a cap of 0 or more, not {cap}")
    if kind == 1:
        return _nodes_over_k(<const Py_UCS1*>d, n, cap)
    if kind == 2:
        return _nodes_over_k(<const Py_UCS2*>d, n, cap)
    return _nodes_over_k(<const uint32_t*>d, n, cap)


# -- relaxed JSON: the repairs, token by token over the buffer (relaxed_json.repair is the twin) ---------

cdef enum Tok:
    T_SPACE
    T_STRING
    T_SINGLE
    T_NAME
    T_PUNCT
    T_OTHER
    T_UNTERMINATED

cdef Py_ssize_t C_REPAIR_TOKENS = REPAIR_TOKENS
cdef Py_ssize_t C_MAX_DEPTH = MAX_DEPTH


cdef inline Py_ssize_t _quote_token(int kind, const void* d, Py_ssize_t n, Py_ssize_t i) noexcept:
    """The length of a quote at ``i``: ``"`` (1), ``<|"|>`` (5) or ``<|">`` (4); 0 if none."""
    cdef Py_UCS4 c = PyUnicode_READ(kind, d, i)
    if c == 0x22:
        return 1
    if c != 0x3C or i + 3 >= n or PyUnicode_READ(kind, d, i + 1) != 0x7C or PyUnicode_READ(kind, d, i + 2) != 0x22:
        return 0
    if PyUnicode_READ(kind, d, i + 3) == 0x3E:
        return 4
    return 5 if i + 4 < n and PyUnicode_READ(kind, d, i + 3) == 0x7C and PyUnicode_READ(kind, d, i + 4) == 0x3E else 0


cdef inline bint _name_start(Py_UCS4 c) noexcept:
    return (0x41 <= c <= 0x5A) or (0x61 <= c <= 0x7A) or c == 0x5F or c == 0x24


cdef inline bint _name_part(Py_UCS4 c) noexcept:
    return _name_start(c) or (0x30 <= c <= 0x39) or c == 0x2D


cdef inline bint _punct(Py_UCS4 c) noexcept:
    return c == 0x7B or c == 0x7D or c == 0x5B or c == 0x5D or c == 0x2C or c == 0x3A


cdef Tok _token(int kind, const void* d, Py_ssize_t n, Py_ssize_t i, Py_ssize_t* end, Py_ssize_t* inner) noexcept:
    """The token at ``i`` (relaxed_json's ``_TOKEN``, alternative by alternative); ``end`` receives its end
    and, for a string, ``inner`` the end of its text (which starts after its opening quote)."""
    cdef Py_UCS4 c = PyUnicode_READ(kind, d, i)
    cdef Py_ssize_t j, q = _quote_token(kind, d, n, i)
    if Py_UNICODE_ISSPACE(c):
        end[0] = _skip_space(kind, d, i + 1, n)
        return T_SPACE
    if q:  # a string, if a quote closes it: the first quote after, escapes skipped
        j = i + q
        while j < n:
            c = PyUnicode_READ(kind, d, j)
            if c == 0x5C:
                j += 2
                continue
            if c == 0x22 or c == 0x3C:
                q = _quote_token(kind, d, n, j)
                if q:
                    inner[0] = j
                    end[0] = j + q
                    return T_STRING
            j += 1
        c = PyUnicode_READ(kind, d, i)
    if c == 0x27:  # a single-quoted string, if it closes
        j = i + 1
        while j < n:
            c = PyUnicode_READ(kind, d, j)
            if c == 0x5C:
                j += 2
                continue
            if c == 0x27:
                end[0] = j + 1
                return T_SINGLE
            j += 1
        end[0] = i + 1
        return T_UNTERMINATED
    if _name_start(c):
        j = i + 1
        while j < n and _name_part(PyUnicode_READ(kind, d, j)):
            j += 1
        end[0] = j
        return T_NAME
    if _punct(c):
        end[0] = i + 1
        return T_PUNCT
    if c == 0x3C:
        end[0] = i + 1
        return T_UNTERMINATED if _quote_token(kind, d, n, i) else T_OTHER  # an opening quote token never closed
    if c == 0x22:
        end[0] = i + 1
        return T_UNTERMINATED
    j = i + 1  # anything else, up to a character another alternative starts with
    while j < n:
        c = PyUnicode_READ(kind, d, j)
        if Py_UNICODE_ISSPACE(c) or c == 0x22 or c == 0x27 or c == 0x3C or _punct(c) or _name_start(c):
            break
        j += 1
    end[0] = j
    return T_OTHER


def repair(str text not None):
    """``relaxed_json.repair``: the text with quotes, keys and trailing commas rewritten, token by token;
    ``ValueError`` for an unterminated string, a single-quoted value, a mismatched bracket, nesting deeper
    than ``MAX_DEPTH`` or more than ``REPAIR_TOKENS`` tokens."""
    cdef int kind = PyUnicode_KIND(text)
    cdef const void* d = PyUnicode_DATA(text)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text), i = 0, end = 0, inner = 0, count = 0, k, depth = 0
    cdef Py_ssize_t copied = 0  # text[:copied] is in pieces
    cdef Py_ssize_t last_at = -1  # where the last significant token starts (a comma that may be trailing)
    cdef Py_UCS4 last = 0, before_last = 0  # those tokens' characters when punctuation, else 1 (a value)
    cdef Py_UCS4 c
    cdef bint expect_key = False
    cdef Tok tok
    cdef char stack[MAX_DEPTH_ARRAY]
    pieces = []
    while i < n:
        if count == C_REPAIR_TOKENS:
            raise ValueError(f"more than {REPAIR_TOKENS} tokens: only strict JSON is read")
        count += 1
        tok = _token(kind, d, n, i, &end, &inner)
        if tok == T_SPACE:
            i = end
            continue
        if tok == T_UNTERMINATED:
            raise ValueError(f"unterminated string at {i}")
        c = PyUnicode_READ(kind, d, i)
        if tok == T_STRING:
            k = _quote_token(kind, d, n, i)
            if k != 1 or end - inner != 1:  # a quote token: written as '"'
                pieces.append(text[copied:i])
                pieces.append('"' + text[i + k : inner] + '"')
                copied = end
        elif tok == T_SINGLE:
            if not expect_key:
                raise ValueError(f"single-quoted value at {i}")
            pieces.append(text[copied:i])
            pieces.append(single_to_double(text[i:end]))
            copied = end
        elif tok == T_NAME and expect_key:
            k = _skip_space(kind, d, end, n)
            if k < n and PyUnicode_READ(kind, d, k) == 0x3A:  # a bare key (pieces, no concatenated copies)
                pieces.append(text[copied:i])
                pieces.append('"')
                pieces.append(text[i:end])
                pieces.append('"')
                copied = end
        elif tok == T_PUNCT and (c == 0x7B or c == 0x5B):
            depth += 1
            if depth > C_MAX_DEPTH:  # json.loads could not read it either: stop before the rest
                raise ValueError(f"nested deeper than {MAX_DEPTH} at {i}")
            stack[depth] = <char>c
        elif tok == T_PUNCT and (c == 0x7D or c == 0x5D):
            if depth == 0 or stack[depth] != (0x7B if c == 0x7D else 0x5B):
                raise ValueError(f"mismatched {chr(c)!r} at {i}")
            depth -= 1
            if last == 0x2C and before_last != 0x7B and before_last != 0x5B and before_last != 0x2C and (
                    before_last != 0x3A):  # a trailing comma
                pieces.append(text[copied:last_at])
                copied = last_at + 1
        expect_key = tok == T_PUNCT and (c == 0x7B or (c == 0x2C and depth > 0 and stack[depth] == 0x7B))
        before_last, last = last, c if tok == T_PUNCT else 1
        last_at = i
        i = end
    if copied == 0:
        return text
    pieces.append(text[copied:])
    return "".join(pieces)
