"""The pure-Python twin of the string kernels (``_kernels_c``): same functions, same answers.

A leaf: it imports the standard library and the package's leaves only (``markers``, ``toolcall``,
``_json_rules``). The rest of the package calls these functions through ``_kernels.impl``; the scanner's
twin (``_scan_py``) calls them here, as ``_scan_c`` calls ``_kernels_c``'s.
"""

from __future__ import annotations

import codecs
import json
import re
import warnings
from json.decoder import scanstring  # type: ignore[attr-defined]  # json's C scanner, not in typeshed
from json.encoder import encode_basestring
from typing import Any

from ._json_rules import (
    MAX_DEPTH,
    PLAIN_DEPTH_MAX,
    PLAIN_NUMBER_MAX,
    REPAIR_TOKENS,
    single_to_double,
    strict_surrogates,
    strip_fence,
)
from .markers import ARGUMENT_KEYS, DEEPSEEK_SEP
from .toolcall import EncodedString, ToolCall

__all__ = [
    "array_calls",
    "deepseek_call",
    "hermes_call",
    "json_string",
    "plain_object",
    "repair",
    "simple_literal_json",
    "strict_json",
    "string_object",
    "too_many_python_nodes",
]


_MAY_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]|[\ud800-\udfff]")


def strict_json(text: str) -> str:
    """``text`` (arguments: JSON text) with every lone surrogate replaced by U+FFFD
    (``_json_rules.strict_surrogates``); ``text`` itself when it has none."""
    if not isinstance(text, str):
        raise TypeError(f"strict_json() expects str, not {type(text).__name__}")
    if (text.isascii() and "\\u" not in text) or _MAY_SURROGATE.search(text) is None:
        return text
    return strict_surrogates(text)


def json_string(s: str) -> str:
    """``json.encoder.encode_basestring(s)``: ``s`` written as a JSON string, in quotes, with ``"``, ``\\``
    and the control characters escaped as json escapes them (``\\n``, ``\\u001f``); every other character as
    it is (lone surrogates too)."""
    if not isinstance(s, str):
        raise TypeError(f"json_string() expects str, not {type(s).__name__}")
    return encode_basestring(s)


def string_object(args: object) -> str | None:
    """``json.dumps(args, ensure_ascii=False)`` when ``args`` is a ``dict`` whose keys and values are all
    ``str`` (not a subclass), written at once; else ``None``. A value may also be an ``EncodedString``: its
    JSON text is written as it is."""
    if type(args) is not dict or not all(
        type(k) is str and (type(v) is str or type(v) is EncodedString) for k, v in args.items()
    ):
        return None
    items = (
        f"{encode_basestring(k)}: {v.json if type(v) is EncodedString else encode_basestring(v)}"
        for k, v in args.items()
    )
    return "{" + ", ".join(items) + "}"


def _simple_literal(quote: str) -> re.Pattern[str]:
    """A simple Python string literal in ``quote`` (``simple_literal_json``), its body a group: plain characters
    (not the quote, a backslash, NUL, LF or CR) and a backslash before any ASCII character but ``x u U N 0-7``,
    NUL, LF and CR."""
    plain = rf"[^{quote}\\\x00\n\r]"
    escape = r"\\[^\x00\n\rxuUN0-7\x80-\U0010ffff]"
    return re.compile(rf"{quote}({plain}*(?:{escape}{plain}*)*){quote}")


_SIMPLE_LITERAL = {quote: _simple_literal(quote) for quote in "'\""}
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def simple_literal_json(text: str, start: int, json_from: int) -> tuple[int, str | None] | None:
    """``(end, json)`` of the Python string literal whose quote (``'`` or ``"``) is at ``start``, when it is
    simple: it ends on its line, has no NUL, CR or lone surrogate, and its only backslashes are the escapes
    ``\\ \\' \\" \\a \\b \\f \\n \\r \\t \\v`` or ones Python keeps (before another ASCII character, not
    one of ``x u U N 0-7``). ``end`` is the index after its closing quote; ``json`` the string Python's parser
    makes of it written as JSON (``json_string``), when its body is ``json_from`` characters or more, else
    ``None``. ``None`` for any other literal (its reader is the caller's). (Here the value is decoded and
    written by ``encode_basestring``; the extension writes the JSON from the literal.)"""
    if not isinstance(text, str):
        raise TypeError(f"simple_literal_json() expects str, not {type(text).__name__}")
    if not 0 <= start < len(text) or text[start] not in "'\"":
        raise ValueError(f"simple_literal_json() expects the index of a quote in the text, not {start}")
    literal = _SIMPLE_LITERAL[text[start]].match(text, start)
    if literal is None:
        return None
    body = literal[1]
    if not body.isascii() and _SURROGATE.search(body):  # the parser cannot read the text
        return None
    if len(body) < json_from:
        return literal.end(), None
    if "\\" not in body:
        return literal.end(), encode_basestring(body)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # a kept backslash ("\\d") is an invalid escape
        if body.isascii():  # the bytes decoder reads these escapes as the str one does, faster
            value = codecs.escape_decode(body)[0].decode("latin-1")
        else:
            value = body.encode("ascii", "backslashreplace").decode("unicode_escape")
    return literal.end(), encode_basestring(value)


_PYTHON_NODE_CHARS = "(,=[{"
_QUOTE = re.compile("['\"]")
#: From after a quote: the longest run a one-line literal in that quote can read (not the quote, a backslash or
#: LF; a backslash and any character); it closes if the quote follows.
_LINE_RUN = {q: re.compile(rf"[^{q}\\\n]*(?:\\.[^{q}\\\n]*)*", re.S) for q in "'\""}
#: From after three quotes: the longest run a triple-quoted literal can read (a quote not followed by two more,
#: a backslash and any character, any other character); it closes if three quotes follow.
_TRIPLE_RUN = {q: re.compile(rf"[^{q}\\]*(?:(?:\\.|{q}(?!{q}{q}))[^{q}\\]*)*", re.S) for q in "'\""}


def too_many_python_nodes(text: str, cap: int) -> bool:
    """More than ``cap`` of ``( , = [ {`` in ``text`` outside its Python string literals (``pythonic.NODES_MAX``),
    read from left to right: at a quote, a triple-quoted literal if three quotes open one that closes, else a
    one-line literal if one closes before a line feed, else the quote is a character like the others; in
    either, a backslash and the character after it are read together. In linear time: when a literal does
    not close, every later one of its kind (triple; one-line, opened before where that one failed) fails
    too, and is not read again."""
    if not isinstance(text, str):
        raise TypeError(f"too_many_python_nodes() expects str, not {type(text).__name__}")
    if cap < 0:
        raise ValueError(f"too_many_python_nodes() expects a cap of 0 or more, not {cap}")
    if sum(map(text.count, _PYTHON_NODE_CHARS)) <= cap:  # an upper bound, strings included
        return False
    n = len(text)
    nodes = i = 0
    triple_fails: set[str] = set()
    line_fails = {"'": -1, '"': -1}  # a one-line literal opened before this index fails
    while (quote := _QUOTE.search(text, i)) is not None:
        j = quote.start()
        nodes += sum(text.count(c, i, j) for c in _PYTHON_NODE_CHARS)
        if nodes > cap:
            return True
        q = text[j]
        i = j + 1  # the quote is a character like the others, unless a literal opens here
        if q not in triple_fails and text.startswith(q * 3, j):
            run = _TRIPLE_RUN[q].match(text, j + 3)
            assert run is not None  # (it matches anywhere, if only the empty string; so does _LINE_RUN)
            if text.startswith(q * 3, run.end()):
                i = run.end() + 3
                continue
            triple_fails.add(q)
        if j >= line_fails[q]:
            run = _LINE_RUN[q].match(text, j + 1)
            assert run is not None
            if run.end() < n and text[run.end()] == q:
                i = run.end() + 1
            else:
                line_fails[q] = run.end()
    return nodes + sum(text.count(c, i) for c in _PYTHON_NODE_CHARS) > cap


def _decline(text: str) -> object:
    raise ValueError(f"not read as written: {text[:20]}")


def _plain_int(text: str) -> int:
    if len(text) > PLAIN_NUMBER_MAX:
        _decline(text)
    return 0  # the value is not used: only its text is kept


def _plain_float(text: str) -> float:
    if len(text) > PLAIN_NUMBER_MAX or "e" in text or "E" in text:
        _decline(text)
    return 0.0


def _values(pairs: list[tuple[str, object]]) -> list[object]:
    """An object as the list of all its values, duplicates kept: its nesting as written (a ``dict`` would
    keep the last of duplicate keys, and a deep value a later one replaces would escape the depth check)."""
    return [value for _, value in pairs]


#: json's own scanner, declining what ``plain_object`` does not keep as written; only the values' nesting and
#: end are used, so an object is read as the list of its values (``_values``)
_PLAIN_DECODER: Any = json.JSONDecoder(
    parse_int=_plain_int, parse_float=_plain_float, parse_constant=_decline, object_pairs_hook=_values
)
_PLAIN_SCAN = _PLAIN_DECODER.scan_once  # (value, end) of the value at an index; StopIteration if none
_JSON_WS = re.compile(r"[ \t\n\r]*")


def _json_ws(text: str, i: int) -> int:
    """The first index from ``i`` that is not JSON whitespace (space, tab, LF, CR)."""
    m = _JSON_WS.match(text, i)
    return i if m is None else m.end()


def _deeper_than(value: object, limit: int) -> bool:
    """Whether ``value`` nests containers more than ``limit`` deep (itself one level)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def plain_object(text: str) -> tuple[int, int, list[tuple[str | None, int, int]]] | None:
    """``(start, end, members)`` when ``text`` is one JSON object read as written, else ``None``.

    As written: ``json.loads`` reads it (strict), with no number in exponent form or longer than
    ``PLAIN_NUMBER_MAX`` characters, no ``NaN``/``Infinity``, and at most ``PLAIN_DEPTH_MAX`` levels of
    brackets. ``text[start:end]`` is the object (JSON whitespace around it); ``members`` its top-level
    members as ``(key, value_start, value_end)`` in order, duplicates included, ``key`` ``None`` when
    written with an escape.
    """
    if not isinstance(text, str):
        raise TypeError(f"plain_object() expects str, not {type(text).__name__}")
    start = i = _json_ws(text, 0)
    if not text.startswith("{", i):
        return None
    members: list[tuple[str | None, int, int]] = []
    i = _json_ws(text, i + 1)
    if text.startswith("}", i):
        i += 1
    else:
        while True:
            if not text.startswith('"', i):
                return None
            key_start = i
            try:
                key, key_end = scanstring(text, i + 1)
                colon = _json_ws(text, key_end)
                if not text.startswith(":", colon):
                    return None
                value_start = _json_ws(text, colon + 1)
                value, i = _PLAIN_SCAN(text, value_start)
            except (ValueError, StopIteration, RecursionError):
                return None
            if isinstance(value, (dict, list)) and _deeper_than(value, PLAIN_DEPTH_MAX - 1):
                return None
            members.append((None if text.find("\\", key_start, key_end) >= 0 else key, value_start, i))
            i = _json_ws(text, i)
            if text.startswith("}", i):
                i += 1
                break
            if not text.startswith(",", i):
                return None
            i = _json_ws(text, i + 1)
    return (start, i, members) if _json_ws(text, i) == len(text) else None


_ARGUMENT_RANK = {key: rank for rank, key in enumerate(ARGUMENT_KEYS)}


def hermes_call(body: str, dialect: str) -> ToolCall | None:
    """The call of a Hermes ``<tool_call>`` body that is a plain call object (``plain_object`` once
    ``str.strip``-ped) with a non-blank ``name`` string and object arguments under the
    first of ``arguments``/``parameters``/``args``/``input`` present (the last of duplicates) and no
    member key written with an escape; its arguments kept as written, read from ``dialect``. ``None``
    for any other body (``dialects.hermes`` reads those): where it gives a call, the grammar gives the
    same one."""
    text = body.strip()
    plain = plain_object(text) if text.startswith("{") else None
    if plain is None:
        return None
    name_span = args_span = None
    rank = len(ARGUMENT_KEYS)
    for key, start, end in plain[2]:  # the last of duplicates, as json.loads
        if key is None:  # written with an escape: maybe "name" or an arguments key
            return None
        if key == "name":
            name_span = (start, end)
        elif _ARGUMENT_RANK.get(key, rank + 1) <= rank:
            rank, args_span = _ARGUMENT_RANK[key], (start, end)
    if name_span is None or args_span is None or text[name_span[0]] != '"' or text[args_span[0]] != "{":
        return None
    name = text[name_span[0] + 1 : name_span[1] - 1]
    if "\\" in name:
        name = json.loads(text[name_span[0] : name_span[1]])
    name = name.strip()
    return ToolCall(name, strict_json(text[args_span[0] : args_span[1]]), None, dialect) if name else None


def array_calls(text: str, dialect: str) -> list[ToolCall] | None:
    """The calls of a JSON array (JSON whitespace around it and between its elements) whose every element
    is a call object ``hermes_call`` reads, in order; ``[]`` for an empty array; ``None`` for any other
    text. Where it gives calls, reading each element as a call object gives the same ones."""
    i = _json_ws(text, 0)
    if not text.startswith("[", i):
        return None
    calls: list[ToolCall] = []
    i = _json_ws(text, i + 1)
    if text.startswith("]", i):
        return calls if _json_ws(text, i + 1) == len(text) else None
    while text.startswith("{", i):
        try:
            end = _PLAIN_SCAN(text, i)[1]  # where the element ends (hermes_call reads it again)
        except (ValueError, StopIteration, RecursionError):
            return None
        call = hermes_call(text[i:end], dialect)
        if call is None:
            return None
        calls.append(call)
        i = _json_ws(text, end)
        if text.startswith(",", i):
            i = _json_ws(text, i + 1)
        elif text.startswith("]", i):
            return calls if _json_ws(text, i + 1) == len(text) else None
        else:
            return None
    return None


def deepseek_call(body: str, dialect: str) -> ToolCall | None:
    """The call of a DeepSeek body (``<｜tool▁sep｜>`` written full-width) whose arguments are a plain object
    (``plain_object``) the grammar keeps as written: ``NAME<sep>{args}``, or ``TYPE<sep>NAME`` and a line
    break before the object, maybe in one `` ```json `` fence; read from ``dialect``. ``None`` for any
    other body (``dialects.deepseek`` reads those): where it gives a call, the grammar gives the same one."""
    name, sep, tail = body.partition(DEEPSEEK_SEP)
    if not sep or tail.lstrip().startswith("```"):
        return None
    if not tail.lstrip().startswith("{"):  # TYPE<sep>NAME, then the arguments on the lines after
        name, _, tail = tail.partition("\n")
        tail = strip_fence(tail)
    plain = plain_object(tail)
    if plain is None or not name.strip():
        return None
    return ToolCall(name.strip(), strict_json(tail[plain[0] : plain[1]]), None, dialect)


_JSON_QUOTE = r'(?:"|<\|"\|?>)'
_TOKEN = re.compile(
    r"(?P<space>\s+)"
    # Unrolled loop: every repetition starts with an escape or a "<", so no backtracking blowup; each run
    # of plain characters is atomic ("(?=(?P<r>…))(?P=r)"), so a string that never closes is read once.
    rf'|(?P<string>{_JSON_QUOTE}(?P<text>(?=(?P<r1>[^"\\<]*))(?P=r1)(?:(?:\\.|<(?!\|"\|?>))(?=(?P<r2>[^"\\<]*))(?P=r2))*){_JSON_QUOTE})'
    r"|(?P<single>'[^'\\]*(?:\\.[^'\\]*)*')"
    r"|(?P<name>[A-Za-z_$][A-Za-z0-9_$-]*)"
    r"|(?P<punct>[{}\[\],:])"
    rf'|(?P<other>[^\s"\'<{{}}\[\],:A-Za-z_$]+|<(?!\|"\|?>))'
    r"|(?P<unterminated>.)",  # a quote that no string pattern above could close
    re.DOTALL,
)
_COLON = re.compile(r"\s*:")

_CLOSERS = {"}": "{", "]": "["}
_NOT_VALUES = ("{", "[", ",", ":")  # a comma after these is not trailing a value


def repair(text: str) -> str:
    """Rewrite quotes, keys and trailing commas token by token (the Cython scanner has a twin of it,
    ``_scan_c.repair``, that gives the same text or error).

    Raise ``ValueError`` for an unterminated string, a single-quoted value, a mismatched bracket, nesting
    deeper than ``MAX_DEPTH`` or more than ``REPAIR_TOKENS`` tokens.
    """
    out: list[str] = []
    stack: list[str] = []  # open brackets
    expect_key = False  # right after "{" or "," inside an object
    last = before_last = -1  # output indices of the last two significant tokens
    for count, m in enumerate(_TOKEN.finditer(text)):
        if count == REPAIR_TOKENS:
            raise ValueError(f"more than {REPAIR_TOKENS} tokens: only strict JSON is read")
        kind, token = m.lastgroup, m.group()
        if kind == "space":
            out.append(token)
            continue
        if kind == "unterminated":
            raise ValueError(f"unterminated string at {m.start()}")
        if kind == "string":
            token = '"' + m.group("text") + '"'
        elif kind == "single":
            if not expect_key:
                raise ValueError(f"single-quoted value at {m.start()}")
            token = single_to_double(token)
        elif kind == "name" and expect_key and _COLON.match(text, m.end()):
            token = f'"{token}"'
        elif kind == "punct" and token in "{[":
            stack.append(token)
            if len(stack) > MAX_DEPTH:  # json.loads could not read it either: stop before the rest
                raise ValueError(f"nested deeper than {MAX_DEPTH} at {m.start()}")
        elif kind == "punct" and token in "}]":
            if not stack or stack.pop() != _CLOSERS[token]:
                raise ValueError(f"mismatched {token!r} at {m.start()}")
            if out[last] == "," and out[before_last] not in _NOT_VALUES:  # an opener precedes the comma
                out[last] = ""  # trailing comma
        expect_key = kind == "punct" and (token == "{" or (token == "," and stack[-1:] == ["{"]))
        out.append(token)
        last, before_last = len(out) - 1, last
    return "".join(out)
