"""Body grammars of the pythonic dialects: calls written as Python, ``[f(a='x', b=2), g()]``.

The text is only parsed, with ``ast.parse``, never evaluated (a long plain string is decoded apart, by the
parser's rules, and ``ast.parse`` reads a placeholder: ``_Strings.cut``). A call is a name (``f``, or
dotted as written: ``functions.f``) applied to keyword arguments whose values are literals:
strings, numbers (with a sign), ``True``/``False``/``None`` and JSON's ``true``/``false``/``null``
(Olmo 3 writes those), and lists, tuples and string-keyed dicts of literals. A positional
argument, ``**kwargs``, a repeated keyword or any other expression makes the block malformed.

Grammars return one or more calls; ``[]`` when the block is markup but malformed; ``None`` when
the body is not call-shaped at all (it does not start with ``[`` or ``NAME(``), so the block's
text is kept. No grammar raises for a ``str``.

``pythonic_message`` is an opt-in whole-message format (a message that is only a call list).
"""

from __future__ import annotations

import ast
import dataclasses
import io
import itertools
import json
import keyword
import re
import tokenize
import warnings
from typing import Any

from .. import _kernels
from .._calls import make_call
from ..toolcall import EncodedString, ToolCall
from .context import Context
from .jsonlike import json_calls

__all__ = ["GRAMMARS", "builtin_call", "keyword_arguments", "pythonic_lines", "pythonic_list", "pythonic_message"]

#: Starts like a call list or a call: ``[`` or a (dotted) identifier and ``(``.
_CALL_SHAPED = re.compile(r"\[|[^\W\d]\w*(?:\s*\.\s*[^\W\d]\w*)*\s*\(")
_JSON_NAMES = {"true": True, "false": False, "null": None}
#: JSON call objects where a call list is expected (LFM2, Llama 4 with a Llama 3 habit): ``{`` or ``[{``.
_JSON_SHAPED = re.compile(r"\{|\[\s*\{")
_PARSE_ERRORS = (SyntaxError, ValueError, RecursionError, MemoryError)


_KW_PREFIX = "_textcalls_kw_"  # a keyword argument named like a Python keyword (Olmo: ``from="SFO"``)


#: Reversed, a ``=`` (not the second of ``==``, checked at the match) with a Python keyword right before it
#: in the text (only blanks or a line continuation between, as between two adjacent tokens; perhaps at the end
#: of a longer word, checked at the match): without one, no keyword is an argument name. Reversed, the
#: pattern starts with a literal, which the regex engine finds with a fast scan.
_KEYWORD_ARG_REVERSED = re.compile(
    r"=(?:[ \t\f]|\n\r?\\|\r\\)*(?P<keyword>" + "|".join(re.escape(k[::-1]) for k in keyword.kwlist) + ")"
)
#: Reversed, the ASCII letters, digits and underscores before such a keyword, and the character before them.
_WORD_REVERSED = re.compile(r"([A-Za-z0-9_]*)(.?)", re.S)


def _may_name_keyword(text: str) -> bool:
    reverse = text[::-1]
    for m in _KEYWORD_ARG_REVERSED.finditer(reverse):
        if m.start() > 0 and reverse[m.start() - 1] == "=":
            continue  # "=="
        before = _WORD_REVERSED.match(reverse, m.end())
        assert before is not None  # (it matches anywhere)
        # One name token when the word starts with an ASCII letter or "_" after a character that no name or
        # number goes on through (ASCII, not a letter, a digit or "."); then it must be a keyword itself: "elif",
        # not "model" or "min". Else tokens may touch ("1if", "1.jif", "éif"): the keyword may stand alone.
        first, edge = before[1][-1:], before[2]
        if not (first.isalpha() or first == "_") or edge.isalnum() or edge == "." or not edge.isascii():
            return True
        if keyword.iskeyword(reverse[m.start("keyword") : before.end(1)][::-1]):
            return True
    return False


def _escape_keywords(text: str) -> str:
    """``text`` with every Python keyword used as an argument name (``from=``) renamed so that
    ``ast`` accepts it; strings are left alone (tokens, not characters, are read). Text where no
    keyword stands before a ``=`` at all is returned at once (the pure-Python tokenizer costs
    microseconds per token)."""
    return _escape_by_tokens(text) if _may_escape(text) else text


def _may_escape(text: str) -> bool:
    """Whether ``_escape_keywords`` reads the tokens of ``text`` (else it returns it as it is)."""
    return "=" in text and _may_name_keyword(text)


def _escape_by_tokens(text: str) -> str:
    spots = []  # (row, column) of each keyword before a "=", in the text's order
    before = None
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.ERRORTOKEN and tok.string in ("'", '"'):
                # a string that does not close on its line: the text does not parse, escaped or not; and the
                # pure-Python tokenizer (before 3.12) would read from each later quote to the line's end
                return text
            if tok.type == tokenize.OP and tok.string == "=" and before is not None:
                spots.append(before.start)
            before = tok if tok.type == tokenize.NAME and keyword.iskeyword(tok.string) else None
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return text
    if not spots:
        return text
    lines = io.StringIO(text).readlines()  # the tokenizer's rows (only "\n" ends one; str.splitlines has more)
    for row, at in itertools.groupby(spots, key=lambda spot: spot[0]):  # each line rebuilt once
        line = lines[row - 1]
        cuts = [0, *(col for _, col in at), len(line)]
        lines[row - 1] = _KW_PREFIX.join(line[a:b] for a, b in itertools.pairwise(cuts))
    return "".join(lines)


class _NotACall(Exception):
    """The syntax tree is not a call with literal keyword arguments."""


def pythonic_list(opener: str, body: str, ctx: Context) -> list[ToolCall] | None:
    """``[f(a='x', b=2), g()]`` — LFM2 ``<|tool_call_start|>``, Llama 4 ``<|python_start|>``.

    A list of calls, or one call without the brackets. A body that is JSON call objects instead
    (``{"name", "arguments"|"parameters"}`` or an array of them, as LFM2 and Llama 4 also write) is
    read as ``jsonlike.json_calls`` reads it. ``None`` if the body is not call-shaped;
    ``[]`` if it does not parse, is not calls (an empty list included) or has a malformed call.
    """
    text = body.strip()
    if _JSON_SHAPED.match(text):
        return json_calls(opener, body, ctx)
    if not _CALL_SHAPED.match(text):
        return None
    calls = _parse_calls(text)
    return [] if calls is None else calls


def pythonic_lines(opener: str, body: str, ctx: Context) -> list[ToolCall] | None:
    """Olmo 3 ``<function_calls>f(a=1)\\ng(b="x")</function_calls>``: one call per line.

    Calls are newline- (or ``;``-) separated statements, a call may span lines; a single
    ``[…]`` list as in ``pythonic_list`` is accepted too. ``None`` if the body is not
    call-shaped (``<function_calls>`` also wraps other dialects' XML); otherwise ``[]`` unless
    every statement is a well-formed call.
    """
    text = body.strip()
    if not _CALL_SHAPED.match(text):
        return None
    calls = _parse_calls(text) if text.startswith("[") else _parse_statements(text)
    return [] if calls is None else calls


def pythonic_message(text: str, ctx: Context) -> list[ToolCall] | None:
    """Opt-in: a whole message that is only a pythonic call list ``[f(…), …]``.

    After stripping whitespace the message must be one non-empty list of well-formed calls,
    each naming an offered tool; the calls are returned, anything else is ``None`` (there is no
    markup to remove, so never ``[]``).
    """
    stripped = text.strip()
    if not (stripped.startswith("[") and stripped.endswith("]")):
        return None
    calls = _parse_calls(stripped)
    if not calls or not all(ctx.known(call.name) for call in calls):
        return None
    return calls


def builtin_call(opener: str, body: str, ctx: Context) -> list[ToolCall] | None:
    """Llama 3.1 built-in tools: ``<|python_tag|>brave_search.call(query="…")<|eom_id|>`` (also
    ``wolfram_alpha``). The opener ends with ``NAME.call(``; the body is the keyword arguments and the
    closing parenthesis. The call is ``NAME`` (without ``.call``); ``[]`` unless it is exactly one
    well-formed call."""
    head = opener[opener.rfind("|>") + 2 :]
    calls = _parse_calls(head + body.strip())
    if calls is None or len(calls) != 1 or not calls[0].name.endswith(".call"):
        return []
    return [dataclasses.replace(calls[0], name=calls[0].name[: -len(".call")])]


def _ast(text: str, mode: str) -> Any:
    """``ast.parse`` of ``text`` (keywords escaped), whatever the warning filters: an invalid escape such
    as ``"\\d"`` warns (SyntaxWarning, DeprecationWarning before 3.12) and, under ``-W error``, would
    raise — so the answer would depend on the host's settings. Only text with a backslash can warn."""
    source = _escape_keywords(text)
    if "\\" not in source:
        return ast.parse(source, mode=mode)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        return ast.parse(source, mode=mode)


#: How many of ``( , = [ {`` a body may have outside its string literals (``_scan``'s
#: ``too_many_python_nodes``, in linear time): CPython's parser costs microseconds per node, so a body of
#: many small nodes (tens of thousands of calls or arguments) is malformed rather than a CPU sink. One long
#: string, however long, is no node.
NODES_MAX = 4096


def _too_many_nodes(text: str) -> bool:
    return _kernels.impl.too_many_python_nodes(text, NODES_MAX)


def keyword_arguments(text: str) -> dict | None:
    """The arguments of ``text``, one call expression ``f(k=v, …)``, read as this dialect reads them; ``None``
    if it is not one."""
    calls = _parse_calls(text)
    return json.loads(calls[0].arguments) if calls and len(calls) == 1 else None


def _parse_calls(text: str, cut: bool = True) -> list[ToolCall] | None:
    """The calls of a list expression (or of one call expression), or ``None``. ``cut``: long strings are
    decoded apart (``_Strings.cut``); the answer is the same without."""
    strings = _Strings.cut(text) if cut else _Strings(text, text)
    if _too_many_nodes(strings.text):
        return None
    try:
        tree = _ast(strings.text, "eval").body
    except _PARSE_ERRORS:
        return None
    nodes = tree.elts if isinstance(tree, ast.List) else [tree]
    calls = _calls(nodes, strings)
    return _parse_calls(text, cut=False) if strings.misread(calls) else calls


def _parse_statements(text: str, cut: bool = True) -> list[ToolCall] | None:
    """The calls of newline-separated call statements, or ``None``.

    A module first (calls may span lines); if that does not parse (say, indented lines), each
    non-blank line as one call expression. ``cut`` as in ``_parse_calls``.
    """
    strings = _Strings.cut(text) if cut else _Strings(text, text)
    if _too_many_nodes(strings.text):
        return None
    try:
        statements = _ast(strings.text, "exec").body
    except _PARSE_ERRORS:
        if strings.values:  # the lines are read from the text as written
            return _parse_statements(text, cut=False)
        try:
            nodes = [_ast(line.strip(), "eval").body for line in text.splitlines() if line.strip()]
        except _PARSE_ERRORS:
            return None
        return _calls(nodes, strings)
    if not all(isinstance(statement, ast.Expr) for statement in statements):
        return None
    calls = _calls([statement.value for statement in statements], strings)
    return _parse_statements(text, cut=False) if strings.misread(calls) else calls


#: A plain string literal in single quotes whose body is at least this long is cut out of the text before
#: ``ast.parse`` (whose tokenizer reads a string at several nanoseconds a character) and decoded apart.
_LONG_STRING = 2048
#: How many string literals ``_Strings.cut`` walks (in Python) before it leaves the text whole.
_WALK_MAX = 32
#: A long string's stand-in: ``'_textcalls_string_0'``, ``'_textcalls_string_1'``, …
_PLACEHOLDER = "_textcalls_string_"
#: A quote not right after a lone backslash: after none, or after a run of two or more (whose length decides
#: whether it is escaped).
_AFTER_NO_LONE_BACKSLASH = {quote: re.compile(quote + r"(?<!(?<!\\)\\" + quote + ")") for quote in "'\""}
_BACKSLASH_NON_ASCII = re.compile(r"\\[^\x00-\x7f]")


@dataclasses.dataclass
class _Strings:
    """A body as ``written`` and as given to ``ast.parse`` (``text``): with its long strings replaced by
    placeholder literals, whose ``values`` are read from here; ``read`` lists the placeholders met while reading
    the tree."""

    written: str
    text: str
    values: dict[str, str | EncodedString] = dataclasses.field(default_factory=dict)
    read: list[str] = dataclasses.field(default_factory=list)

    @classmethod
    def cut(cls, text: str) -> _Strings:
        """``text`` with each plain single-quoted string of at least ``_LONG_STRING`` characters replaced, when
        its literals are found exactly where Python's tokenizer finds them and the node count
        (``too_many_python_nodes``) does too: no CR or NUL anywhere; outside literals no comment and no
        backslash; no prefix, triple quote or newline in a literal, no literal after only whitespace from
        another (implicit concatenation); every quote opens a literal that ends; at most ``_WALK_MAX``
        literals. Otherwise, or with no long string, nothing is cut."""
        whole = cls(text, text)
        if len(text) < _LONG_STRING or "\r" in text or "\x00" in text:
            return whole
        pieces: list[str] = []
        values: dict[str, str | EncodedString] = {}
        copied = pos = 0
        single, double = text.find("'"), text.find('"')  # the next of each quote at or after pos
        for walked in range(_WALK_MAX + 1):
            if 0 <= single < pos:
                single = text.find("'", pos)
            if 0 <= double < pos:
                double = text.find('"', pos)
            start = min(single, double) if single >= 0 and double >= 0 else max(single, double)
            code_end = len(text) if start < 0 else start
            if text.find("#", pos, code_end) >= 0 or text.find("\\", pos, code_end) >= 0:
                return whole
            if start < 0:
                break
            quote = text[start]
            if (
                walked == _WALK_MAX
                or (start and (text[start - 1].isalnum() or text[start - 1] == "_"))
                or (walked and not text[pos:start].strip())
                or text.startswith(quote * 3, start)
            ):
                return whole
            literal = _single_quoted(text, start, quote)
            if literal is None:
                return whole
            pos, value = literal
            if value is not None:
                placeholder = f"{_PLACEHOLDER}{len(values)}"
                values[placeholder] = value
                pieces += (text[copied:start], quote, placeholder, quote)
                copied = pos
        if not values:
            return whole
        pieces.append(text[copied:])
        return cls(text, "".join(pieces), values)

    def value(self, text: str) -> str:
        """A string constant's value: what a placeholder stands for, any other as it is."""
        value = self.argument(text)
        return json.loads(value.json) if isinstance(value, EncodedString) else value

    def argument(self, text: str) -> str | EncodedString:
        """``value``, but a long string written as JSON stays so (an argument's value: ``make_call`` takes it)."""
        if text in self.values:
            self.read.append(text)
            return self.values[text]
        return text

    def misread(self, calls: list[ToolCall] | None) -> bool:
        """Whether ``calls`` were read with a string constant that only looks like a placeholder: read
        successfully, a tree yields each of its string constants once, so each placeholder is met once."""
        return calls is not None and sorted(self.read) != sorted(self.values)


def _single_quoted(text: str, start: int, quote: str) -> tuple[int, str | EncodedString | None] | None:
    """``(end, value)`` of the single-quoted literal opened at ``start`` (the text has no CR or NUL): ``value``
    is ``None`` unless its body is at least ``_LONG_STRING`` characters and read here: decoded, or written as
    JSON when its escapes are simple (``simple_literal_json``). ``None`` if it has a newline (a line
    continuation too) or does not end (or not measurably: ``_closing_quote``)."""
    simple = _kernels.impl.simple_literal_json(text, start, _LONG_STRING)  # most literals: a long one written as JSON
    if simple is not None:
        end, written = simple
        return end, None if written is None else EncodedString(written)
    end = _closing_quote(text, start, quote)  # \x, \u, \N or an octal escape; or not simple at all
    if end < 0 or text.find("\n", start + 1, end) >= 0:
        return None
    if end - start - 1 < _LONG_STRING:
        return end + 1, None
    return end + 1, _parsed_string(text[start + 1 : end])


def _closing_quote(text: str, start: int, quote: str) -> int:
    """The index of the quote that ends the single-quoted literal opened at ``start``: the first one after an
    even run of backslashes (none included). ``-1`` if none, or where a run is too long to measure here (64)
    or more than ``_WALK_MAX`` quotes follow odd runs longer than one."""
    pos = start + 1
    for _ in range(_WALK_MAX):
        close = _AFTER_NO_LONE_BACKSLASH[quote].search(text, pos)
        if close is None:
            return -1
        end = close.start()
        before = text[max(start + 1, end - 64) : end]
        backslashes = len(before) - len(before.rstrip("\\"))
        if backslashes == 64:
            return -1
        if backslashes % 2 == 0:
            return end
        pos = end + 1
    return -1


def _parsed_string(body: str) -> str | None:
    """The value CPython's parser gives the string literal ``'body'`` (no prefix, its quotes and newlines checked
    by the caller), or ``None`` where the parser would fail or this cannot tell.

    The parser reads a body without a backslash as it is; otherwise it writes each non-ASCII character as a
    ``\\U`` escape (a backslash before one as ``\\u005c``) and decodes the result with the ``unicode_escape``
    codec's decoder, as here (where a backslash before a non-ASCII character is left to the parser)."""
    if not body.isascii():
        try:
            body.encode()  # a lone surrogate: the parser cannot read the text
        except UnicodeEncodeError:
            return None
        if _BACKSLASH_NON_ASCII.search(body):
            return None
    if "\\" not in body:
        return body
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # an invalid escape such as "\\d" is kept
        try:
            return body.encode("ascii", "backslashreplace").decode("unicode_escape")
        except UnicodeDecodeError:
            return None


def _calls(nodes: list[ast.expr], strings: _Strings) -> list[ToolCall] | None:
    """One call per node, or ``None`` if there are none or any node is not a well-formed call."""
    calls = []
    for node in nodes:
        try:
            name, args = _call(node, strings)
        except (_NotACall, RecursionError):
            return None
        call = make_call(name, args)
        if call is None:
            return None
        calls.append(call)
    return calls or None


def _call(node: ast.expr, strings: _Strings) -> tuple[str, dict]:
    """``(name, arguments)`` of a call with literal keyword arguments."""
    if not isinstance(node, ast.Call) or node.args:
        raise _NotACall
    name = _name(node.func)
    args: dict = {}
    for kw in node.keywords:
        if kw.arg is None:  # **kwargs
            raise _NotACall
        arg = kw.arg[len(_KW_PREFIX) :] if kw.arg.startswith(_KW_PREFIX) else kw.arg
        if arg in args:  # a repeated keyword
            raise _NotACall
        value = kw.value
        if isinstance(value, ast.Constant) and type(value.value) is str and value.value in strings.values:
            long = strings.argument(value.value)  # a long string, perhaps already written as JSON
            args[arg] = long if isinstance(long, EncodedString) else _string(long)
        else:
            args[arg] = _literal(value, strings)
    return name, args


def _name(node: ast.expr) -> str:
    """``f`` or a dotted ``a.b.f``, as written."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        raise _NotACall
    parts.append(node.id)
    return ".".join(reversed(parts))


def _string(text: str) -> str:
    """A string literal's text as JSON reads the same escapes: a surrogate pair (``"\\ud83d\\ude00"``) is
    one character, as ``json.loads`` makes it; a lone surrogate stays."""
    if text.isascii():  # a C-speed answer for most text
        return text
    try:
        text.encode()  # fails exactly at a surrogate, faster than a search for one
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return text


def _literal(node: ast.expr, strings: _Strings) -> object:
    """The JSON-able value of a literal node."""
    if isinstance(node, ast.Constant) and type(node.value) is str:
        return _string(strings.value(node.value))
    if isinstance(node, ast.Constant) and (node.value is None or type(node.value) in (int, float, bool)):
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, (ast.USub, ast.UAdd))
        and isinstance(node.operand, ast.Constant)
        and (type(node.operand.value) is int or type(node.operand.value) is float)
    ):
        return -node.operand.value if isinstance(node.op, ast.USub) else node.operand.value
    if isinstance(node, ast.Name) and node.id in _JSON_NAMES:
        return _JSON_NAMES[node.id]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(element, strings) for element in node.elts]
    if isinstance(node, ast.Dict):
        result = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):  # None: **mapping
                raise _NotACall
            result[_string(strings.value(key.value))] = _literal(value, strings)
        return result
    raise _NotACall


#: this family's body grammars, by the names ``markers.BLOCKS`` uses (``dialects.GRAMMARS`` gathers them)
GRAMMARS = {
    "pythonic_list": pythonic_list,
    "builtin_call": builtin_call,
}
