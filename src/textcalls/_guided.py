"""Schema-guided recovery (issue 27): a call of an offered tool, whatever its markup, at a message's start or end.

Used by both scanners when the request's ``tools`` are known (``Options.schema_guided``, on by default), on the
content the dialect rules leave, and only in a message in which no dialect rule found a call (reasoning
included): it is the last word, never a second opinion. The rules, in the order they apply:

1. **Heads.** A line (outside a markdown fence) is a candidate's head when, after blanks and *lead markup* (tags
   and special tokens ``<…>``, ``[`` or ``(``, a ``[Word words:`` label, ``word:`` or ``word.`` glued to what
   follows: at the line's start only ``call``, ``default_api``, ``functions``, ``function``, ``tool``, ``tools``
   or ``api``), it names an offered tool in a call-like way: the exact name followed by an argument opener (``{``,
   ``(``, ``>``, ``]``, ``:``, ``=``, ``<``, a line break or the end), a tag that names it (``<NAME>``,
   ``<NAME …>``, ``<function=NAME>``, ``<parameter=NAME>``, ``<invoke name="NAME">``, any tag with
   ``name=``/``tool=``), or a JSON object whose ``"name"`` is it (with markup before or after it on its line:
   a JSON call object alone is the bare-call rules', which read it in their own places). At most ``LOOK``
   characters from the line's start are read to decide; a line whose first word begins no tool's name and no
   such namespace is decided at its first character. A blank line is no head, and never part of a region.
2. **Arguments.** From the head, one reader, chosen by what follows the name: a JSON object (strict, else the
   tolerant notation ``{key: value, …}`` with bare or quoted keys and values quoted by ``"``, ``'`` or Gemma's
   ``<|"|>``, bare words read as text), also inside parentheses, after ``:``/``=`` or on the next line (maybe in a
   ``json`` fence, as DeepSeek writes after its separator); pythonic keyword arguments
   ``(k=v, …)``; or key/value markup, one shape or several: ``<parameter=K>V</parameter>``,
   ``<parameter name="K">V</parameter>`` (any quotes), ``<arg_key>K</arg_key><arg_value>V</arg_value>``,
   ``<K>V</K>``, a value in CDATA. A value must be closed (its closer, or the next key's opener): a call the model
   did not finish is no call. After the arguments only closers and tokens (``</…>``, ``<|…|>``, ``]``, ``)``,
   ``}``) may follow on the line, and on following lines of nothing else: the candidate's markup.
3. **The schema is the guard.** The arguments must validate against the tool's ``parameters``: the required keys
   present, every key among ``properties`` when they are given, each value of a type the schema allows (text read
   from markup is typed by it: ``"42"`` for an integer), an ``enum`` respected. Otherwise the candidate is text.
4. **Position.** A candidate is a call only in the message's leading part (nothing but blanks and other calls
   before it) or its trailing part (nothing but blanks and other calls after it); with ``truncated`` (the output
   was cut) a trailing call is none. Prose around stays, exactly as written.

Streaming: a line's start is held until its head is decided (nothing for a line of prose whose first letter
begins no offered tool's name, else a word at most; up to ``LOOK``
characters or a line break for a line that opens with markup); from a head to the end of the message everything
is held (at most ``HOLD_MAX`` characters: past that, the held text is shown and no candidate starts before the
next line), then read as ``parse`` reads it. Every decision depends on the text only, so any split gives
``parse``'s answer.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ._calls import make_call, placeholder, read_from
from .dialects.context import convert_text, schema_kinds
from .dialects.pythonic import keyword_arguments
from .relaxed_json import NO_VALUE, decode

__all__ = ["HOLD_MAX", "LOOK", "Guided", "fits"]

#: How many characters from a line's start may be read to decide whether it is a head.
LOOK = 256
#: How many characters a candidate may hold, from its head's line to the end of the message.
HOLD_MAX = 32768

_MORE, _NOT = -1, -2
_BLANK = " \t\r\n"
_WORD = re.compile(r"[A-Za-z_][\w-]*")
_NAMED_TAG = re.compile(
    r"<[\w:.-]+\s+(?:[\w:-]+\s*=\s*[\"'“”]?[^\"'“”>]*[\"'“”]?\s+)*?(?:name|tool|tool_name|function)\s*=\s*"
    r"[\"'“”]?(?P<name>[^\"'“”\s>]+)[\"'“”]?[^>]*>"
)
_EQ_TAG = re.compile(r"<(?:function|tool|call|invoke|parameter)\s*=\s*[\"'“”]?(?P<name>[^\"'“”\s>]+)[\"'“”]?\s*>")
_PLAIN_TAG = re.compile(r"<(?P<name>[^\s<>/=\"']+)(?:\s[^<>]*)?>")
_JSON_HEAD = re.compile(r"\{\s*\"(?:name|function|tool_name|tool)\"\s*:\s*\"(?P<name>[^\"\\]{1,128})\"")
_LABEL = re.compile(r"\[[A-Za-z][\w -]{0,30}:[ \t]*")
#: the words a line may open with, glued to a tool's name by ``:`` or ``.`` (later in a head, after markup, any word)
_NAMESPACES = frozenset({"call", "default_api", "functions", "function", "tool", "tools", "api"})
_NAMESPACE_FIRSTS = frozenset(word[0] for word in _NAMESPACES)
_FENCE = re.compile(r"[ ]{0,3}```")  # (backticks only, as the scanners' fences)
_FENCE_START = re.compile(r"[ ]{0,3}`{1,2}")
_INDENTED = re.compile(r"(?: {4}| {0,3}\t)")
_TAIL_TOKEN = re.compile(r"[ \t]*(?:</[^<>\n]{1,64}>|<\|[^|\n]{1,40}\|>|<｜[^｜\n]{1,40}｜>|[\]\)}])")
_LINE_OF_CLOSERS = re.compile(
    r"[ \t]*(?:(?:</[^<>\n]{1,64}>|<\|[^|\n]{1,40}\|>|<｜[^｜\n]{1,40}｜>)+|```)[ \t]*(?:\n|$)"
)
#: a markdown fence's opening line around a JSON object after a tool's name (``NAME\n```json\n{…}\n```\n``)
_JSON_FENCE = re.compile(r"```(?:json)?[ \t]*\n")
_DECODER = json.JSONDecoder()


class _Raw(str):
    """A value read from markup as text: the schema types it (``"42"`` for an integer)."""

    __slots__ = ()


class _Head:
    __slots__ = ("name", "at", "json", "lead")

    def __init__(self, name: str, at: int, json_object: bool = False, lead: bool = False) -> None:
        self.name = name  # the offered tool
        self.at = at  # where its arguments (or, for a JSON head, the object) begin
        self.json = json_object
        self.lead = lead  # (a JSON head) lead markup came before the object


class Guided:
    """The stage over a scrubber's content (see the module doc). ``text(s)`` takes the scanner's next content
    and returns what may be shown; ``release()`` gives back everything held (a dialect rule found a call: this
    stage is then off); ``end(s, truncated)`` ends the message: ``(text, calls)``. ``quiet`` is True when a
    text without a line break would go through ``text`` unchanged (what the scanners' short paths test)."""

    __slots__ = (
        "_ctx",
        "_max",
        "_fences",
        "_names",
        "_skip",
        "_held",
        "_mode",
        "_lead",
        "_fence",
        "_region_len",
        "quiet",
    )

    def __init__(self, ctx: Any, max_block: int, code_fences: bool = True) -> None:
        self._ctx = ctx
        self._max = max_block  # a candidate's markup may be at most this long (as a block's body)
        self._fences = code_fences  # markup inside a markdown fence is text
        memo = ctx.memo.get("guided")
        if memo is None:  # built once per Context (a request's tools), shared by its scrubbers
            names: dict[str, list[str]] = {}
            for name in sorted(ctx.names(), key=len, reverse=True):
                if name:
                    names.setdefault(name[0], []).append(name)
            # a line break before a line whose first non-blank character may begin a head or a fence (a blank
            # line begins neither: it goes out unread, and the search never looks past the next line's start)
            firsts = "".join(sorted(set(names) | _NAMESPACE_FIRSTS | set("<[({`")))
            memo = ctx.memo["guided"] = (names, re.compile(r"\n(?=[ \t\r]*[" + re.escape(firsts) + "])"))
        self._names, self._skip = memo
        self._held = ""  # from a line's start (its head undecided), or from a head's line (a region)
        self._mode = 0  # 0: at a line's start, 1: inside a line (its head decided), 2: in a region
        self._lead = True  # nothing but blanks shown so far
        self._fence = False  # inside a markdown fence
        self._region_len = 0
        self.quiet = False

    # --- streaming ---------------------------------------------------------------------------------------

    def text(self, s: str) -> str:
        out = self._text(s) if s else ""
        self.quiet = self._mode == 1 and not self._lead  # (a text without a line break changes nothing then)
        return out

    def _text(self, s: str) -> str:
        if self._mode == 1:
            i = s.find("\n")
            if i < 0:
                if self._lead and s.strip(_BLANK):
                    self._lead = False
                return s
            out = s[: i + 1]
            if self._lead and out.strip(_BLANK):
                self._lead = False
            self._mode = 0
            return out + self._starts(s[i + 1 :], False)
        if self._mode == 2:
            return self._grow(s)
        return self._starts(self._held + s, False)

    def release(self) -> str:
        out, self._held = self._held, ""
        self._mode = 1
        return out

    def end(self, s: str, truncated: bool) -> tuple[str, list]:
        out = self._text(s) if s else ""
        if self._mode == 0 and self._held:
            out += self._starts(self._held, True)
        if self._mode != 2:
            out += self.release()
            return out, []
        region, self._held = self._held, ""
        self._mode = 1
        kept, calls = read_region(region, self, self._lead, truncated)
        return out + kept, calls

    def _starts(self, s: str, final: bool) -> str:
        """``s`` begins at a line's start: decide its heads, line by line; return what may be shown."""
        out: list[str] = []
        p, n = 0, len(s)
        while p < n or final:
            if p >= n:
                break
            h = self.head(s, p, final)
            if h == _MORE:
                self._held = s[p:]
                self._mode = 0
                return "".join(out)
            if isinstance(h, _Head):
                self._held = ""
                self._mode = 2
                self._region_len = 0
                out.append(self._grow(s[p:]) if p else self._grow(s))
                return "".join(out)
            i = s.find("\n", p)
            if self._fences and _FENCE.match(s, p, n if i < 0 else i):
                self._fence = not self._fence
            if i < 0:
                line = s[p:]
                if self._lead and line.strip(_BLANK):
                    self._lead = False
                out.append(line)
                self._held = ""
                self._mode = 1
                return "".join(out)
            # the lines after it whose first character can begin no head (nor a fence) go out unread
            m = self._skip.search(s, i)
            q = m.start() + 1 if m else s.rfind("\n", i) + 1
            if self._lead and s[p:q].strip(_BLANK):
                self._lead = False
            out.append(s[p:q])
            p = q
        self._held = ""
        self._mode = 0
        return "".join(out)

    def _grow(self, s: str) -> str:
        """Hold ``s`` in the region, up to ``HOLD_MAX`` characters: past that, show the region and go on."""
        room = HOLD_MAX - self._region_len
        if len(s) <= room:
            self._held += s
            self._region_len += len(s)
            return ""
        out = self._held + s[:room]
        self._held = ""
        self._lead = False
        self._mode = 1
        return out + self._text(s[room:])

    # --- heads -------------------------------------------------------------------------------------------

    def head(self, s: str, p: int, final: bool) -> int | _Head:
        """Whether the line starting at ``s[p]`` is a head: a ``_Head``, ``_NOT``, or ``_MORE`` (the text ends
        before it can be told; never with ``final``). Reads at most ``LOOK`` characters from ``p``."""
        end = min(len(s), p + LOOK)
        final = final or len(s) >= p + LOOK
        if _FENCE.match(s, p, end):  # a fence's line
            return _NOT
        if self._fences and not final and _FENCE_START.fullmatch(s, p, end):
            return _MORE  # one or two backticks so far: a fence's line, maybe
        if self._fence or _INDENTED.match(s, p, end):  # inside a fence, or an indented code block's line
            return _NOT
        i, tokens = p, 0
        while True:
            while i < end and s[i] in _BLANK:
                if tokens == 0 and s[i] == "\n":
                    return _NOT  # a blank line: shown, and never part of a region (the next line has its own head)
                i += 1
            if i >= end:
                return _NOT if final else _MORE
            c = s[i]
            if tokens > 8:
                return _NOT
            tokens += 1
            if c == "<":
                j = s.find(">", i + 1, end)
                lt = s.find("<", i + 1, end if j < 0 else j)
                if lt >= 0:  # a tag holds no "<"
                    return _NOT
                if j < 0:
                    return _NOT if final else _MORE
                tag = s[i : j + 1]
                for pattern in (_EQ_TAG, _NAMED_TAG, _PLAIN_TAG):
                    m = pattern.fullmatch(tag)
                    if m and self._offered(m.group("name")):
                        return _Head(m.group("name"), j + 1)
                i = j + 1
                continue
            if c == "[":
                m = _LABEL.match(s, i, end)
                if m:
                    if m.end() >= end and not final:  # (more blanks may follow the label)
                        return _MORE
                    i = m.end()
                    continue
                if not final and end - i < 34 and "]" not in s[i:end] and "\n" not in s[i:end]:
                    return _MORE  # a label may still come
                i += 1
                continue
            if c == "(":
                i += 1
                continue
            if c == "{":
                m = _JSON_HEAD.match(s, i, end)
                if m:
                    return _Head(m.group("name"), i, True, tokens > 1) if self._offered(m.group("name")) else _NOT
                if not final and ('"' not in s[i + 1 : end] or s[i + 1 : end].count('"') < 4):
                    return _MORE
                return _NOT
            if c.isalpha() or c == "_":
                if tokens == 1 and c not in self._names and c not in _NAMESPACE_FIRSTS:
                    return _NOT  # prose: a line's first word that begins no tool name and no namespace
                for name in self._names.get(c, ()):
                    if s.startswith(name, i):
                        k = i + len(name)
                        if k >= end:
                            if not final:
                                return _MORE
                            return _Head(name, k)
                        after = s[k]
                        if after.isalnum() or after in "_-":
                            continue
                        return self._args_open(s, name, k, end, final)
                    if not final and len(name) > end - i and name.startswith(s[i:end]):
                        return _MORE
                m = _WORD.match(s, i, end)
                if m is None:
                    return _NOT
                k = m.end()
                if k >= end:
                    return _NOT if final else _MORE
                if tokens == 1 and m.group() not in _NAMESPACES:
                    return _NOT
                if s[k] in ":." and k + 1 < end and (s[k + 1].isalpha() or s[k + 1] == "_"):
                    i = k + 1
                    continue
                if s[k] in ":." and k + 1 >= end and not final:
                    return _MORE
                return _NOT
            return _NOT

    def _args_open(self, s: str, name: str, k: int, end: int, final: bool) -> int | _Head:
        """After an offered tool's name at ``s[k]``: a head when an argument opener follows."""
        i = k
        while i < end and s[i] in " \t":
            i += 1
        if i >= end:
            return _Head(name, k) if final else _MORE
        if s[i] in "{(>]:=<\n\r\"'”":
            return _Head(name, k)
        return _NOT

    def _offered(self, name: str) -> bool:
        return name in self._names.get(name[:1], ())


# --- a region: the candidates it holds ------------------------------------------------------------------


def read_region(region: str, stage: Guided, lead: bool, truncated: bool) -> tuple[str, list]:
    """The text of ``region`` (from a head's line to the message's end) with its calls taken out: those at its
    start (``lead``: nothing but blanks before it in the message) or its end (see the module doc)."""
    found = []  # (start, end, call)
    p, n = 0, len(region)
    fence = False
    while p < n:
        i = region.find("\n", p)
        line_end = n if i < 0 else i + 1
        if stage._fences and _FENCE.match(region, p, line_end):
            fence = not fence
        elif not fence:
            stage._fence = False
            h = stage.head(region, p, True)
            if isinstance(h, _Head):
                got = _candidate(region, h, stage._ctx)
                if got is _UNCLOSED:  # what follows is inside a value that never ends: no head there
                    break
                if got is not None and got[1] - p > stage._max:  # longer than a block may be
                    got = None
                if got is not None:
                    found.append((p, got[1], got[0]))
                    p = got[1]
                    continue
        p = line_end
    if not found:
        return region, []
    keep = [False] * len(found)
    if lead:  # the leading run
        before = 0
        for k, (start, stop, _) in enumerate(found):
            if region[before:start].strip(_BLANK):
                break
            keep[k] = True
            before = stop
    after = n  # the trailing run
    for k in range(len(found) - 1, -1, -1):
        start, stop, _ = found[k]
        if region[stop:after].strip(_BLANK):
            break
        if truncated:
            keep[k] = False
            after = start
            continue
        keep[k] = True
        after = start
    if truncated and all(keep) and not region[found[-1][1] :].strip(_BLANK):
        keep = [False] * len(found)  # a message of nothing but calls, cut: which one was cut is not known
    out, calls, at = [], [], 0
    for k, (start, stop, call) in enumerate(found):
        if keep[k]:
            out.append(region[at:start])
            calls.append(call)
            at = stop
    out.append(region[at:])
    return "".join(out), read_from(calls, "schema_guided")


def _candidate(s: str, head: _Head, ctx: Any) -> Any:
    """The call the head at ``head.at`` begins and where its markup ends (its line's end), ``None``, or
    ``_UNCLOSED`` when its arguments open a bracket that never closes."""
    j = _opener_at(s, head.at) if not head.json else head.at
    if j < len(s) and s[j] in "{(" and _balanced_end(s, j) < 0:
        return _UNCLOSED
    if head.json:
        try:
            value, end = _DECODER.raw_decode(s, head.at)
        except (ValueError, RecursionError):
            return None
        if not isinstance(value, dict) or value.get("name") != head.name:
            return None
        keys = set(value) - {"name", "id", "type"}
        if len(keys) != 1 or not keys <= {"arguments", "parameters"}:  # no arguments: no call object
            return None
        args: object = value[next(iter(keys))]
        if isinstance(args, str):
            args = decode(args)
        got = (args, end) if isinstance(args, dict) else None
    else:
        got = _arguments(s, head.at)
    if got is None:
        return None
    args, stop = got
    end = _markup_end(s, stop)
    if end < 0 or s.startswith("</", _blank_end(s, end)):  # a closer left over: its structure was misread
        return None
    if head.json and not head.lead and not s[stop:end].strip(_BLANK):
        return None  # a JSON call object and nothing else: the bare-call rules' (docs/scanning.md), not this stage's
    typed = fits(args, ctx.schema(head.name))
    if typed is None:
        return None
    call = make_call(head.name, typed)
    return None if call is None or placeholder(call) else (call, end)


def _blank_end(s: str, i: int) -> int:
    while i < len(s) and s[i] in _BLANK:
        i += 1
    return i


def _markup_end(s: str, i: int) -> int:
    """Past the closers and tokens after a candidate's arguments, to its line's end, and past the lines of
    nothing but closers after it; -1 when anything else follows on its line."""
    n = len(s)
    while True:
        m = _TAIL_TOKEN.match(s, i)
        if not m:
            break
        i = m.end()
    while i < n and s[i] in " \t\r":
        i += 1
    if i < n and s[i] != "\n":
        return -1
    if i < n:
        i += 1
    while i < n:
        m = _LINE_OF_CLOSERS.match(s, i)
        if not m:
            break
        i = m.end()
    return i


# --- argument readers -----------------------------------------------------------------------------------

_KV_SHAPES = (
    # <parameter=K>V</parameter>
    re.compile(r"<parameter\s*=\s*[\"'“”]?(?P<key>[^\"'“”<>\n]+?)[\"'“”]?\s*>"),
    # <parameter name="K">V</parameter>, <param key=“K”>, <arg name='K' string="true">
    re.compile(
        r"<(?P<tag>parameter|param|arg|argument)\s+(?:name|key)\s*=\s*[\"'“”]?(?P<key>[^\"'“”<>\n]+?)[\"'“”]?"
        r"(?:\s+[\w-]+\s*=\s*[\"'“”][^\"'“”<>\n]*[\"'“”])*\s*>"
    ),
    # <arg_key>K</arg_key><arg_value>V</arg_value>
    re.compile(r"<arg_key>(?P<key>[^<>\n]+?)</arg_key>\s*<arg_value>"),
    # <K>V</K>
    re.compile(r"<(?P<key>[A-Za-z_][\w.-]{0,63})>"),
)
_VALUE_CLOSERS = ("</parameter>", None, "</arg_value>", None)  # None: the opening tag's own closer
_STRAY = re.compile(r"</(?:parameter|param|arg_value|arg_key)>|<\|[^|\n<>]{1,40}\|>")
_CDATA = re.compile(r"\s*<!\[CDATA\[(?P<v>.*?)\]\]>\s*", re.S)
_KEYWORDS_END = re.compile(r"</(?:function|invoke|tool_call|tool|call)[^<>\n]{0,32}>")


_UNCLOSED = object()
_GEMMA = '<|"|>'


def _opener_at(s: str, i: int) -> int:
    """Where the arguments begin after a head's name or tag at ``s[i]``: past blanks, quotes and closers of the
    head, then a ``:`` or ``=``."""
    n = len(s)
    j = i
    while j < n and s[j] in " \t\"'”]>":
        j += 1
    if j < n and s[j] in ":=":
        j += 1
        while j < n and s[j] in " \t":
            j += 1
    if s.startswith("\n", j) or s.startswith("\r\n", j):  # the object on the next line, maybe in a fence
        k = _blank_end(s, j)
        fence = _JSON_FENCE.match(s, k)
        if fence:
            k = _blank_end(s, fence.end())
        if s.startswith("{", k):
            return k
    return j


def _balanced_end(s: str, i: int) -> int:
    """The index after the bracket that closes the one at ``s[i]`` (strings in ``"`` or ``'`` skipped), or -1."""
    depth, quote, k, n = 0, "", i, len(s)
    while k < n:
        c = s[k]
        if quote:
            if c == "\\":
                k += 1
            elif c == quote or c == "\n":
                quote = ""
                if s.startswith(_GEMMA, k + 1):  # a stray delimiter after a closed quote (as _Notation reads it)
                    k += len(_GEMMA)
        elif c == "<" and s.startswith(_GEMMA, k):
            k = s.find(_GEMMA, k + len(_GEMMA))
            if k < 0:
                return -1
            k += len(_GEMMA) - 1
        elif c in "\"'":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return k + 1
        k += 1
    return -1


def _arguments(s: str, i: int) -> tuple[dict, int] | None:
    """The arguments written from ``s[i]`` (after a head's name or tag): ``(args, end)`` or ``None``."""
    n = len(s)
    j = _opener_at(s, i)
    if j < n and s[j] == "{":
        return _object(s, j)
    if j < n and s[j] == "(":
        k = j + 1
        while k < n and s[k] in " \t":
            k += 1
        if k < n and s[k] == "{":
            got = _object(s, k)
            if got is None:
                return None
            args, end = got
            while end < n and s[end] in " \t":
                end += 1
            return (args, end + 1) if end < n and s[end] == ")" else None
        return _keywords(s, i, j)
    return _markup(s, j)


def _object(s: str, i: int) -> tuple[dict, int] | None:
    try:
        value, end = _DECODER.raw_decode(s, i)
    except (ValueError, RecursionError):
        return _Notation(s, i).read()
    return (value, end) if isinstance(value, dict) else None


def _keywords(s: str, name_end: int, open_at: int) -> tuple[dict, int] | None:
    """``(k=v, …)``: pythonic keyword arguments, read as the pythonic dialect reads them."""
    depth, quote, k, n = 0, "", open_at, min(len(s), open_at + HOLD_MAX)
    while k < n:
        c = s[k]
        if quote:
            if c == "\\":
                k += 1
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                break
        k += 1
    else:
        return None
    args = keyword_arguments("f" + s[open_at : k + 1])
    return None if args is None else (args, k + 1)


def _markup(s: str, i: int) -> tuple[dict, int] | None:
    """Key/value markup from ``s[i]``: one shape or several, each value closed."""
    args: dict = {}
    n = len(s)
    end = i
    pos = i
    while True:
        while pos < n and s[pos] in _BLANK:
            pos += 1
        stray = _STRAY.match(s, pos)  # a closer or token between pairs (a damaged opener's leftover)
        if stray:
            pos = stray.end()
            continue
        if pos >= n:
            break
        for shape, closer in zip(_KV_SHAPES, _VALUE_CLOSERS, strict=True):  # noqa: B007 (closer: the shape's)
            m = shape.match(s, pos)
            if m:
                break
        else:
            break
        key = m.group("key").strip()
        if closer is None:
            closer = f"</{m.group('tag')}>" if "tag" in m.groupdict() else f"</{key}>"
            if _KEYWORDS_END.fullmatch(closer):
                break
        start = m.end()
        stop = s.find(closer, start)
        if stop < 0 and closer == "</parameter>":  # a parameter closed by the next one, or the call's closer
            nxt = s.find("<parameter", start)
            fin = _KEYWORDS_END.search(s, start)
            cands = [x for x in (nxt, fin.start() if fin else -1) if x >= 0]
            if not cands:
                return None
            stop, after = min(cands), min(cands)
        elif stop < 0:
            return None
        else:
            after = stop + len(closer)
        if key in args:
            return None
        value = s[start:stop]
        cdata = _CDATA.fullmatch(value)
        if cdata:
            value = cdata.group("v")
        else:
            if value.startswith("\n"):
                value = value[1:]
            if value.endswith("\n"):
                value = value[:-1]
        args[key] = _Raw(value)
        pos = end = after
    if not args:
        return None
    return args, end


class _Notation:
    """``{key: value, …}`` read tolerantly: keys bare or quoted, values quoted by ``"``, ``'`` or ``<|"|>``
    (a stray ``<|"|>`` after a closed quote skipped), JSON numbers and literals, nested JSON, or bare words."""

    _GEMMA = '<|"|>'

    def __init__(self, s: str, i: int) -> None:
        self.s = s
        self.i = i

    def read(self) -> tuple[dict, int] | None:
        s = self.s
        n = len(s)
        i = self.i + 1
        out: dict = {}
        while True:
            i = self._space(i)
            if i >= n:
                return None
            if s[i] == "}":
                return out, i + 1
            if s[i] == "," and out:
                i = self._space(i + 1)
                if i < n and s[i] == "}":
                    return out, i + 1
            named = self._key(i)
            if named is None:
                return None
            key, i = named
            i = self._space(i)
            if i >= n or s[i] not in ":=":
                return None
            got = self._value(self._space(i + 1))
            if got is None or key in out:
                return None
            out[key], i = got

    def _space(self, i: int) -> int:
        while i < len(self.s) and self.s[i] in _BLANK:
            i += 1
        return i

    def _key(self, i: int) -> tuple[str, int] | None:
        s = self.s
        if s.startswith(self._GEMMA, i):
            j = s.find(self._GEMMA, i + 5)
            return None if j < 0 else (s[i + 5 : j], j + 5)
        if s[i] in "\"'":
            quoted = self._quoted(i)
            return None if quoted is None else (str(quoted[0]), quoted[1])
        m = re.compile(r"[A-Za-z_$][\w$.-]*").match(s, i)
        return None if m is None else (m.group(), m.end())

    def _quoted(self, i: int) -> tuple[str, int] | None:
        s, q = self.s, self.s[i]
        if q == '"':
            try:
                value, end = _DECODER.raw_decode(s, i)
                return value, end
            except ValueError:
                pass
        j = i + 1
        while j < len(s):
            if s[j] == "\\" and q == '"':
                j += 2
                continue
            if s[j] == q:
                return s[i + 1 : j], j + 1
            if s[j] == "\n":
                return None
            j += 1
        return None

    def _value(self, i: int) -> tuple[object, int] | None:
        s, n = self.s, len(self.s)
        if i >= n:
            return None
        if s.startswith(self._GEMMA, i):
            j = s.find(self._GEMMA, i + 5)
            return None if j < 0 else (s[i + 5 : j], j + 5)
        c = s[i]
        if c in "\"'":
            got = self._quoted(i)
            if got is None:
                return None
            value, j = got
            if s.startswith(self._GEMMA, j):  # a stray delimiter after a closed quote
                j += 5
            return (value if c == '"' else _Raw(value)), j
        if c in "{[":
            try:
                return _DECODER.raw_decode(s, i)
            except (ValueError, RecursionError):
                if c == "{":
                    return _Notation(s, i).read()
                return None
        j = i
        while j < n and s[j] not in ",}\n":
            j += 1
        word = s[i:j].rstrip()
        if not word:
            return None
        literal = {"true": True, "false": False, "null": None}.get(word, NO_VALUE)
        if literal is not NO_VALUE:
            return literal, j
        try:
            number = json.loads(word)
        except ValueError:
            return _Raw(word), j
        return (number, j) if isinstance(number, (int, float)) else (_Raw(word), j)


# --- the schema guard -----------------------------------------------------------------------------------


def fits(args: object, schema: object) -> dict | None:
    """``args`` typed by the tool's ``parameters`` ``schema`` when they validate against it (see the module
    doc), else ``None``. Text read from markup (``_Raw``) is typed by the schema; JSON values must match it."""
    if not isinstance(args, dict):
        return None
    if not isinstance(schema, dict):
        schema = {}
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    required = schema.get("required")
    if isinstance(required, list) and any(isinstance(r, str) and r not in args for r in required):
        return None
    if props and any(key not in props for key in args):
        return None
    out = {}
    for key, value in args.items():
        typed = _typed(value, props.get(key))
        if typed is NO_VALUE:
            return None
        out[key] = typed
    return out


_PY_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "object": dict,
    "array": list,
    "null": type(None),
}


def _typed(value: object, schema: object) -> object:
    kinds = [k for k in schema_kinds(schema) if isinstance(k, str)]
    enum = schema.get("enum") if isinstance(schema, dict) else None
    if isinstance(value, _Raw):
        text = str(value)
        if not kinds:
            typed: object = text
        else:
            for kind in kinds:
                typed = text if kind == "string" else convert_text(kind, text.strip())
                if typed is not NO_VALUE:
                    break
            else:
                return NO_VALUE
    else:
        typed = value
        if kinds and not any(_is(typed, kind) for kind in kinds):
            return NO_VALUE
    if isinstance(enum, list) and typed not in enum:
        return NO_VALUE
    return typed


def _is(value: object, kind: str) -> bool:
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    if kind == "integer" and isinstance(value, float):
        return value.is_integer()
    py = _PY_TYPES.get(kind)
    return py is None or isinstance(value, py)
