"""Body grammars of the XML-style dialects: calls written as tags, one tag per parameter.

Each grammar is ``grammar(opener, body, ctx) -> list[ToolCall]``: the calls written in ``body`` (the
text between the block's opener and closer), or ``[]`` when the body is markup but malformed. None of
these dialects leaves a block's text standing, so no grammar here returns ``None``; none raises for
any text.

Shared rules:

* Parameters keep their order; a repeated parameter keeps its first place and its last value.
* A value loses the layout around it and keeps its inner text (``trim_value``):

  1. one leading line break, with any spaces or tabs before it (``<parameter=p>\\n``);
  2. one trailing line break and the spaces or tabs after it, which are the closing tag's
     indentation (``\\n    </parameter>``); a value that is only whitespace with one line break is ``""``;
  3. when that indentation is not empty and every non-blank line of the value starts with it
     (the tags were pretty-printed), the indentation common to the non-blank lines is removed
     from every line that starts with it (a blank line, only spaces and tabs, that does not is
     kept as it is), so the lines keep their indentation relative to each other; otherwise no
     line is touched;
  4. on a side with no line break, exactly one space next to a non-space character (a
     whitespace-collapsed paste, ``<parameter=p> VALUE </parameter>``, or ``<parameter=p> VALUE``);
     two or more spaces are the value's own and stay.

  Nothing else changes (``\\n\\n  x\\n\\n`` -> ``\\n  x\\n``, ``  x  `` stays). The value is then typed by
  the request's schema (``Context.value``); without a schema it stays a string. Only DSML carries
  types itself (``string="false"``: JSON; ``string="true"``: the text verbatim, not trimmed).
* A parameter's closing tag ends its value when whitespace and then the next parameter, the end of
  the call, or the end of the body follows. A closing tag followed by anything else is text of the
  value if such a real closing tag comes later (code that mentions ``</parameter>``); if none does,
  it ends the value and the text after it is stray. A value without any closing tag ends at the next
  parameter tag (for the plain-text tags of Qwen3, MiniMax and Step-3 only one that starts a line),
  at the call's closing tag or at the end of the body; a call's missing closing tag is tolerated
  likewise.
* Non-whitespace text between parameters, or outside the calls, makes the body malformed.

All tags are found by one linear regex pass per body (no pattern can rescan past a ``<``), and the
walk over them visits each tag a bounded number of times, so a megabyte-long body parses in
linear time.
"""

from __future__ import annotations

import html
import os
import re
from typing import NamedTuple

from .._calls import make_call
from ..relaxed_json import NO_VALUE, decode
from ..toolcall import ToolCall
from .context import Context

__all__ = [
    "DSML_MARKUP",
    "GRAMMARS",
    "MINIMAX_MARKUP",
    "QWEN_MARKUP",
    "STEP3_MARKUP",
    "STEP3_SEP",
    "attribute_name",
    "dsml",
    "ends_in_value",
    "glm",
    "kimi_k3",
    "minimax_m2",
    "param_name",
    "qwen3_xml",
    "step3",
    "tag_attributes",
    "tag_name",
    "trim_value",
    "typed_value",
]

# Tag kinds.
_CALL, _END_CALL, _PARAM, _END_PARAM = "call", "end_call", "param", "end_param"
_BAD_NAME_CHARS = frozenset("<>{}\"'")
_ATTRIBUTE = re.compile(r"""(?<![\w:.-])([\w:.-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""")
_NO_MATCH = r"(?!)"


class _Tag(NamedTuple):
    kind: str
    start: int
    end: int
    head: str  # what an opening tag carries after its tag name: "=NAME", attributes, a GLM key


_NEW_TAG = tuple.__new__


class _Param(NamedTuple):
    head: str
    body: str  # the raw text between the parameter's tags is body[start:end] (cut out only when it is read)
    start: int
    end: int

    @property
    def value(self) -> str:
        return self.body[self.start : self.end]

    def trimmed(self) -> str:
        return trim_value(self.body, self.start, self.end)


class _Call(NamedTuple):
    head: str
    params: list[_Param]
    inner: str  # the text inside a call that has no parameter tags ("" otherwise)


#: How many tags (calls, parameters and their ends) a body may have: each is read in Python, so a body
#: of tens of thousands of tags is malformed rather than a CPU sink. No call has thousands of parameters.
TAGS_MAX = 4096
#: From how many tags read ``_Markup.tags`` counts them all at once (``subn``): real calls have far fewer.
_COUNT_TAGS_FROM = 256
#: How long a tag's attributes (MiniMax, Step-3, DSML: ``name="…" string="…"``) may be: they are read by a
#: Python regex at a few MB/s, so a longer head has none (no name: malformed). Real heads are tens of characters.
ATTRIBUTES_MAX = 4096


class _Markup:
    """The four tags of one dialect, found together by one regex.

    ``call`` and ``param`` are patterns with one group named ``head``; ``newline_params``: an
    unclosed value ends only at a parameter tag that starts a line (tags that are plain text).
    """

    __slots__ = ("pattern", "newline_params", "starts")

    def __init__(
        self, call: str, end_call: str, param: str, end_param: str, newline_params: bool, starts: tuple[str, ...]
    ) -> None:
        # every tag starts with "<": factored out, it is a literal prefix that the regex engine finds with
        # a fast scan, instead of trying four alternatives at every character of a big value
        parts = [p if p.startswith("<") else "<" + p for p in (call, end_call, param, end_param)]
        call, end_call, param, end_param = (p[1:] for p in parts)
        self.pattern = re.compile(
            f"<(?:(?P<{_CALL}>{call.replace('(?P<head>', '(?P<call_head>')})"
            f"|(?P<{_END_CALL}>{end_call})"
            f"|(?P<{_PARAM}>{param.replace('(?P<head>', '(?P<param_head>')})"
            f"|(?P<{_END_PARAM}>{end_param}))"
        )
        self.newline_params = newline_params
        self.starts = starts  # literals one of which begins every match of ``pattern`` (tests/unit/test_dialect_xml.py)

    def tags(self, body: str) -> list[_Tag] | None:
        """The tags of ``body`` in order, or ``None`` past ``TAGS_MAX`` of them (malformed): the matches of
        ``pattern`` as ``finditer`` gives them.

        The pattern is tried only where one of ``starts`` begins (``str.find`` of each, at memchr speed): a value
        dense in ``<`` (code, HTML) costs no regex attempt at every ``<``. The next index of each literal is kept
        and found again only once passed, so each literal's occurrences are searched once: linear."""
        tags: list[_Tag] = []
        match, find, add, pos = self.pattern.match, body.find, tags.append, 0
        starts = self.starts
        nexts = [find(lit) for lit in starts]  # the next index of each literal from pos on (-1: none)
        while True:
            start = min((n for n in nexts if n >= 0), default=-1)
            if start < 0:
                return tags
            m = match(body, start)
            pos = start + 1 if m is None else m.end()
            for k, n in enumerate(nexts):
                if 0 <= n < pos:
                    nexts[k] = find(starts[k], pos)
            if m is None:
                continue
            # a body this rich in tags has them counted by ``subn`` (the same matches, in C, up to one past the
            # cap) once, so that one past the cap is malformed before thousands are made; most bodies never get here
            if len(tags) == _COUNT_TAGS_FROM and self.pattern.subn("", body, TAGS_MAX + 1)[1] > TAGS_MAX:
                return None
            call_head, param_head = m.group("call_head", "param_head")
            # every alternative of the pattern is a named group, so ``lastgroup`` is never None; a tag is made by
            # ``tuple.__new__``, without the Python frame of a named tuple's own ``__new__``
            add(_NEW_TAG(_Tag, (m.lastgroup, start, pos, call_head or param_head or "")))


QWEN_MARKUP: _Markup = _Markup(
    call=r"<function=(?P<head>[^<>\n]*)>",
    end_call=r"</function\s*>",
    param=r"<parameter=(?P<head>[^<>\n]*)>",
    end_param=r"</parameter\s*>",
    newline_params=True,
    starts=("<function=", "</function", "<parameter=", "</parameter"),
)
MINIMAX_MARKUP: _Markup = _Markup(
    call=r"<invoke(?P<head>\s[^<>]*)?>",
    end_call=r"</invoke\s*>",
    param=r"<parameter(?P<head>\s[^<>]*)?>",
    end_param=r"</parameter\s*>",
    newline_params=True,
    starts=("<invoke", "</invoke", "<parameter", "</parameter"),
)
#: MiniCPM's ``<function name="F"><param name="P">V</param></function>`` (a Functionary opener, XML values)
PARAM_MARKUP: _Markup = _Markup(
    call=r"<function(?P<head>\s[^<>]*)?>",
    end_call=r"</function\s*>",
    param=r"<param(?P<head>\s[^<>]*)?>",
    end_param=r"</param\s*>",
    newline_params=True,
    starts=("<function", "</function", "<param", "</param"),
)
STEP3_MARKUP: _Markup = _Markup(
    call=r"<steptml:invoke(?P<head>\s[^<>]*)?>",
    end_call=r"</steptml:invoke\s*>",
    param=r"<steptml:parameter(?P<head>\s[^<>]*)?>",
    end_param=r"</steptml:parameter\s*>",
    newline_params=True,
    starts=("<steptml:", "</steptml:"),
)
_BAR = "[｜|]"  # DeepSeek writes U+FF5C; an ASCII bar is accepted too
DSML_MARKUP: _Markup = _Markup(  # (V4.1 writes a space after the bar: ``<｜DSML｜ invoke name="F">``)
    call=rf"<{_BAR}DSML{_BAR} ?invoke(?P<head>\s[^<>]*)?>",
    end_call=rf"</{_BAR}DSML{_BAR} ?invoke\s*>",
    param=rf"<{_BAR}DSML{_BAR} ?parameter(?P<head>\s[^<>]*)?>",
    end_param=rf"</{_BAR}DSML{_BAR} ?parameter\s*>",
    newline_params=False,
    starts=("<｜DSML", "<|DSML", "</｜DSML", "</|DSML"),
)
_GLM = _Markup(  # no call tags: the whole body is one call
    call=_NO_MATCH + r"(?P<head>)",
    end_call=_NO_MATCH,
    # GLM-4.7 sometimes writes a literal backslash-n between key and value; a value whose
    # <arg_value> was left out (plain text, then </arg_value>) starts right after its key.
    param=r"<arg_key>(?P<head>[^<>]*)</arg_key>(?:(?:\s|\\n)*<arg_value>|(?=[^<]*</arg_value>))",
    end_param=r"</arg_value\s*>",
    newline_params=False,
    starts=("<arg_key>", "</arg_value"),
)
_K3 = _Markup(  # Kimi K3 XTML, in <|open|>tools<|sep|> … <|close|>tools<|sep|>
    call=r"<\|open\|>call(?P<head>\s[^<>]*)?<\|sep\|>",
    end_call=r"<\|close\|>call<\|sep\|>",
    param=r"<\|open\|>argument(?P<head>\s[^<>]*)?<\|sep\|>",
    end_param=r"<\|close\|>argument<\|sep\|>",
    newline_params=False,
    starts=("<|open|>", "<|close|>"),
)
_AFTER_VALUE = (_PARAM, _END_CALL, _CALL)  # what may follow a value's real closing tag
_AFTER_CALL = (_CALL,)
STEP3_SEP = "<｜tool_sep｜>"
_STEP3_INVOKE = "<steptml:invoke"


class _Reader:
    """Walks the tags of one body, turning them into calls with raw heads and values."""

    __slots__ = ("body", "tags", "newline_params", "too_many")

    def __init__(self, body: str, markup: _Markup) -> None:
        self.body = body
        tags = markup.tags(body)
        self.too_many = tags is None  # more than TAGS_MAX: malformed
        self.tags: list[_Tag] = tags or []
        self.newline_params = markup.newline_params

    def calls(self) -> list[_Call] | None:
        """Every call in the body, or ``None`` if the body is malformed."""
        if self.too_many:
            return None
        calls: list[_Call] = []
        i, pos = 0, 0
        while i < len(self.tags):
            tag = self.tags[i]
            if tag.kind != _CALL or not self._blank(pos, tag.start):
                return None
            call, i, pos = self.call(tag.head, i + 1, tag.end)
            if call is None:
                return None
            calls.append(call)
        return calls if self._blank(pos, len(self.body)) else None

    def call(self, head: str, i: int, pos: int) -> tuple[_Call | None, int, int]:
        """The call whose opening tag ends at ``pos``, ``tags[i]`` being the next tag.

        Returns the call (``None``: malformed) and the tag index and position after it.
        """
        params: list[_Param] = []
        while True:
            tag = self.tags[i] if i < len(self.tags) else None
            if tag is not None and tag.kind == _PARAM:
                if not self._blank(pos, tag.start):
                    return None, i, pos
                start, end, i, pos = self._value(i + 1, tag.end)
                params.append(_Param(tag.head, self.body, start, end))
                continue
            if tag is not None and tag.kind == _END_PARAM:
                return None, i, pos
            # The end of the call: its closing tag, or (tolerated) the next call or the body's end.
            end = len(self.body) if tag is None else tag.start
            rest = self.body[pos:end]
            if params and rest.strip():
                return None, i, pos
            if tag is not None and tag.kind == _END_CALL:
                i, end = i + 1, tag.end
            return _Call(head, params, "" if params else rest), i, end

    def _value(self, i: int, start: int) -> tuple[int, int, int, int]:
        """Where the raw value starting at ``start`` ends (``tags[i]`` the next tag): ``(start, end)``, and the
        tag index and position after it."""
        body, tags = self.body, self.tags
        loose = None  # the first closing tag of this value that is not followed by what ends a value
        stop = len(tags)  # the tag an unclosed value runs up to (none: the end of the body)
        for k in range(i, len(tags)):
            tag = tags[k]
            if tag.kind == _END_PARAM:
                if self._followed_by(k, _AFTER_VALUE):
                    return start, tag.start, k + 1, tag.end
                if loose is None:
                    loose = k
            elif (tag.kind == _PARAM and (not self.newline_params or body[tag.start - 1] == "\n")) or (
                tag.kind == _END_CALL and self._followed_by(k, _AFTER_CALL)
            ):
                stop = k
                break
        if loose is not None:  # no real closing tag came: that one was it, and stray text follows
            return start, tags[loose].start, loose + 1, tags[loose].end
        end = tags[stop].start if stop < len(tags) else len(body)
        return start, end, stop, end

    def _followed_by(self, k: int, kinds: tuple[str, ...]) -> bool:
        """Whether only whitespace separates ``tags[k]`` from the end of the body or a next tag of ``kinds``."""
        end = self.tags[k].end
        if k + 1 == len(self.tags):
            return self._blank(end, len(self.body))
        after = self.tags[k + 1]
        return after.kind in kinds and self._blank(end, after.start)

    def _blank(self, start: int, end: int) -> bool:
        return not self.body[start:end].strip()


#: The tags that open and close a value in every XML-style dialect here (Qwen3-Coder, MiniMax, Step-3, DSML
#: with its spaced V4.1 form, GLM's key and value): ``ends_in_value`` reads the last of them.
_VALUE_TAG = re.compile(
    r"<(?P<open>parameter[=\s>]|steptml:parameter[\s>]|[｜|]DSML[｜|]\s*parameter[\s>]|arg_key>|arg_value>)"
    r"|</(?:parameter|steptml:parameter|[｜|]DSML[｜|]\s*parameter|arg_value)\s*>"
)


def ends_in_value(body: str) -> bool:
    """Whether an XML-style ``body`` ends inside a value: its last value tag opens one (a parameter, a GLM
    key or value) that no closing tag ends. A block the message ends inside with such a body is never a
    call, whatever the rest: ``rm -rf /tmp/build`` cut after ``rm -rf /`` reads as a complete value.
    Linear (one pass of the tags)."""
    last = None
    for last in _VALUE_TAG.finditer(body):  # noqa: B007 (the last match is the one read)
        pass
    return last is not None and last.group("open") is not None


#: grammar -> the closing tag of one call, in the XML grammars whose blocks hold several calls
_CALL_CLOSERS = {
    "dsml": re.compile(r"</[｜|]DSML[｜|] ?invoke\s*>"),
    "minimax_m2": re.compile(r"</invoke\s*>"),
    "step3": re.compile(r"</steptml:invoke\s*>"),
    "qwen3_xml": re.compile(r"</function\s*>"),
}


def finished_calls(grammar: str, body: str) -> str | None:
    """The part of an XML ``body`` (of ``grammar``, a block of several calls) up to the closing tag of its last
    call that was finished, or ``None`` (none was, or the grammar writes no such tag). A block cut by
    ``max_tokens`` keeps those calls: each ended with its own closing tag."""
    pattern = _CALL_CLOSERS.get(grammar)
    if pattern is None:
        return None
    last = None
    for last in pattern.finditer(body):  # noqa: B007 (the last match is the one read)
        pass
    return None if last is None else body[: last.end()]


def qwen3_xml(opener: str, body: str, ctx: Context) -> list[ToolCall] | None:
    """Qwen3-Coder / Qwen3.5 / Seed-OSS bodies: ``<function=NAME><parameter=P>VALUE</parameter>…</function>``.

    One call per ``<function=…>``; values lose the layout around them (``trim_value``) and are typed by
    the schema. A missing ``</parameter>`` (before a ``<parameter=`` that starts a line, or before
    ``</function>``) and a missing final ``</function>`` are tolerated. ``[]`` when a name is
    missing or invalid, or text stands outside the tags.
    """
    calls = _Reader(body, QWEN_MARKUP).calls()
    if not calls:
        return []
    out = []
    for call in calls:
        tool = tag_name(call.head)
        if tool is None or call.inner.strip():
            return []
        made = _typed_call(tool, [(p.head, p) for p in call.params], ctx)
        if made is None:
            return []
        out.append(made)
    return out


def glm(opener: str, body: str, ctx: Context) -> list[ToolCall] | None:
    """GLM-4.5/4.6 ``NAME\\n<arg_key>K</arg_key>\\n<arg_value>V</arg_value>…`` and GLM-4.7/5 (no newlines).

    NAME is the text before the first ``<arg_key>`` (the whole body if there is none), stripped; with tools,
    a body whose first ``<arg_key>`` is missing (``NAMEkey</arg_key>…``) has it put back after an offered name;
    it must be non-empty and free of ``<``, ``>``, ``{`` and newlines. Values lose the
    layout around them (``trim_value``), but in GLM-4.7's compact body (``<arg_key>`` right after NAME, no
    whitespace between) where whitespace is data: there they are as written. They are typed by the schema
    (strings without one); no arguments gives ``{}``. ``[]`` when malformed.
    """
    cut = body.find("<arg_key>")
    if cut < 0 and ctx.has_tools and 0 <= body.find("</arg_key>") < body.find("<arg_value>"):
        repaired = _first_key_opened(body, ctx)
        return [] if repaired is None else glm(opener, repaired, ctx)
    name = (body if cut < 0 else body[:cut]).strip()
    if not name or any(c in "<>{\n" for c in name):
        return []
    if cut < 0:
        made = make_call(name, {})
        return [] if made is None else [made]
    reader = _Reader(body, _GLM)
    if reader.too_many:
        return []
    call, _, _ = reader.call(name, 0, cut)
    if call is None or call.inner.strip():
        return []
    made = _typed_call(name, [(p.head, p) for p in call.params], ctx, not body[cut - 1].isspace())
    return [] if made is None else [made]


def _first_key_opened(body: str, ctx: Context) -> str | None:
    """A GLM body whose first ``<arg_key>`` is missing (``NAMEkey</arg_key><arg_value>…``): the opener put back
    after the longest offered tool's name that the text before ``</arg_key>`` begins with and goes on past;
    ``None`` when no offered name begins it."""
    close = body.find("</arg_key>")
    head = body[:close]
    start = len(head) - len(head.lstrip())
    for name in sorted(ctx.names(), key=len, reverse=True):
        if head.startswith(name, start) and head[start + len(name) :].strip():
            at = start + len(name)
            return body[:at] + "<arg_key>" + body[at:]
    return None


def function_params(opener: str, body: str, ctx: Context) -> list[ToolCall] | None:
    """A ``<function name="F">`` block whose body is ``<param name="P">V</param>…`` (MiniCPM): read as MiniMax-M2
    invokes are, values typed by the schema. ``[]`` when malformed."""
    return _attribute_calls(_Reader(opener + body + "</function>", PARAM_MARKUP).calls(), ctx)


def minimax_m2(opener: str, body: str, ctx: Context) -> list[ToolCall] | None:
    """MiniMax-M2 bodies: ``<invoke name="F"><parameter name="P">V</parameter>…</invoke>…``.

    One call per invoke; names quoted with ``"``, ``'`` or not at all; whitespace between tags.
    Values lose the layout around them (``trim_value``) and are typed by the schema. ``[]`` when malformed.
    """
    return _attribute_calls(_Reader(body, MINIMAX_MARKUP).calls(), ctx)


def step3(opener: str, body: str, ctx: Context) -> list[ToolCall] | None:
    """Step-3 bodies: ``function<｜tool_sep｜><steptml:invoke name="F">`` then
    ``<steptml:parameter name="P">V</steptml:parameter>…</steptml:invoke>``.

    The ``TYPE<｜tool_sep｜>`` prefix must name ``function`` when present; a body that starts right
    at the invoke is accepted too. Otherwise as :func:`minimax_m2`.
    """
    sep = body.find(STEP3_SEP)
    invoke = body.find(_STEP3_INVOKE)
    if sep >= 0 and (invoke < 0 or sep < invoke):
        if body[:sep].strip() != "function":
            return []
        body = body[sep + len(STEP3_SEP) :]
    return _attribute_calls(_Reader(body, STEP3_MARKUP).calls(), ctx)


def dsml(opener: str, body: str, ctx: Context) -> list[ToolCall] | None:
    """DeepSeek V3.2 / V4 DSML bodies: ``<｜DSML｜invoke name="F">`` then
    ``<｜DSML｜parameter name="P" string="…">V</｜DSML｜parameter>…</｜DSML｜invoke>…``.

    ``string="true"``: V is the string itself, verbatim. ``string="false"``: V is JSON (strict,
    then relaxed; undecodable makes the body malformed). Without the attribute V is treated like
    the other dialects' values (layout trimmed, typed by the schema). An invoke may instead
    hold a JSON object of arguments (V4). ``[]`` when malformed.
    """
    calls = _Reader(body, DSML_MARKUP).calls()
    if not calls:
        return []
    out = []
    for call in calls:
        tool = attribute_name(call.head)
        if tool is None:
            return []
        inner = call.inner.strip()  # V4: a JSON object of arguments instead of parameter tags
        made = make_call(tool, decode(call.inner)) if inner else _dsml_call(tool, call.params, ctx)
        if made is None:
            return []
        out.append(made)
    return out


def kimi_k3(opener: str, body: str, ctx: Context) -> list[ToolCall] | None:
    """Kimi K3 XTML bodies: ``<|open|>call tool="F" index="1"<|sep|>`` then ``<|open|>argument key="K"
    type="T"<|sep|>V<|close|>argument<|sep|>…<|close|>call<|sep|>…``.

    Attribute values are XML-escaped (``&amp;``, ``&quot;``). ``type="string"`` (or none): V is the string
    as written; any other type: V is JSON (strict, then relaxed; undecodable makes the body malformed).
    A value's closing tag ends it only where an argument or call tag (or the body's end) follows, so
    the control tokens' text inside a value stays data. ``[]`` when malformed."""
    calls = _Reader(body, _K3).calls()
    if not calls:
        return []
    out = []
    for call in calls:
        tool = tag_name(html.unescape(tag_attributes(call.head).get("tool", "")))
        if tool is None or call.inner.strip():
            return []
        args: dict = {}
        for param in call.params:
            attributes = tag_attributes(param.head)
            key = param_name(html.unescape(attributes.get("key", "")))
            if key is None:
                return []
            if attributes.get("type", "string").strip().lower() == "string":
                args[key] = param.value
            else:
                value = decode(param.value)
                if value is NO_VALUE:
                    return []
                args[key] = value
        made = make_call(tool, args)
        if made is None:
            return []
        out.append(made)
    return out


def _dsml_call(tool: str, params: list[_Param], ctx: Context) -> ToolCall | None:
    args: dict = {}
    for param in params:
        attributes = tag_attributes(param.head)
        name = param_name(attributes.get("name"))
        if name is None:
            return None
        kind = attributes.get("string", "").strip().lower()
        if kind == "true":
            args[name] = param.value
        elif kind == "false":
            value = decode(param.value)
            if value is NO_VALUE:
                return None
            args[name] = value
        else:
            args[name] = typed_value(ctx, tool, name, param.trimmed())
    return make_call(tool, args)


def _attribute_calls(calls: list[_Call] | None, ctx: Context) -> list[ToolCall]:
    """MiniMax and Step-3: names in ``name=`` attributes, values typed by the schema."""
    if not calls:
        return []
    out = []
    for call in calls:
        tool = attribute_name(call.head)
        if tool is None or call.inner.strip():
            return []
        pairs = [(tag_attributes(p.head).get("name", ""), p) for p in call.params]
        made = _typed_call(tool, pairs, ctx)
        if made is None:
            return []
        out.append(made)
    return out


def _typed_call(tool: str, pairs: list[tuple[str, _Param]], ctx: Context, verbatim: bool = False) -> ToolCall | None:
    """A call from (raw name, parameter) pairs: names stripped, values trimmed (``verbatim``: as written) and
    typed."""
    args: dict = {}
    for raw_name, param in pairs:
        name = param_name(raw_name)
        if name is None:
            return None
        args[name] = typed_value(ctx, tool, name, param.value if verbatim else param.trimmed())
    return make_call(tool, args)


def tag_name(text: str) -> str | None:
    """A call name written in a tag (``<function=NAME>``, ``name="NAME"``), or ``None`` if invalid."""
    name = text.strip()
    if not name or any(c.isspace() or c in _BAD_NAME_CHARS for c in name):
        return None
    return name


def attribute_name(head: str) -> str | None:
    name = tag_attributes(head).get("name")
    return None if name is None else tag_name(name)


def param_name(text: str | None) -> str | None:
    name = (text or "").strip()
    return name or None


def tag_attributes(head: str) -> dict[str, str]:
    """``name="x" string='true' k=v`` -> ``{"name": "x", …}``; the first of a repeated attribute wins. A head
    longer than ``ATTRIBUTES_MAX`` has none (so no name: the call is malformed)."""
    found: dict[str, str] = {}
    if len(head) > ATTRIBUTES_MAX:
        return found
    for m in _ATTRIBUTE.finditer(head):
        value = next(v for v in m.group(2, 3, 4) if v is not None)
        found.setdefault(m.group(1), value)
    return found


def trim_value(text: str, lo: int = 0, hi: int | None = None) -> str:
    """``text[lo:hi]`` without the layout around it (the rule in the module doc); inner text kept. The value
    is cut out of ``text`` once (a big value is no copy of a copy)."""
    hi = len(text) if hi is None else hi
    # 2. the trailing line break and the closing tag's indentation
    kept = text_end(text, lo, hi, " \t")
    broken_after = kept > lo and text[kept - 1] == "\n"
    indent = ""
    end = hi
    if broken_after:
        indent = text[kept:hi]
        end = kept - 1
        if end > lo and text[end - 1] == "\r":
            end -= 1
    # 1. the leading line break (and the spaces or tabs before it)
    lead = _LEADING_BREAK.match(text, lo, hi)
    start = lead.end() if lead else lo
    if start > end:  # only whitespace, one line break: both sides named the same break
        return ""
    if indent and start < end:  # 3. (a side with a line break is not trimmed by 4, whose other side is not)
        value = _dedent(text[start:end], indent)
        if lead is None and len(value) > 1 and value[0] == " " and not value[1].isspace():
            value = value[1:]
        return value
    # 4. a whitespace-collapsed paste: one space on a side that had no line break
    if lead is None and end - start > 1 and text[start] == " " and not text[start + 1].isspace():
        start += 1
    if not broken_after and end - start > 1 and text[end - 1] == " " and not text[end - 2].isspace():
        end -= 1
    return text[start:end]


def text_end(text: str, lo: int, hi: int, chars: str | None = None) -> int:
    """The index after the last character of ``text[lo:hi]`` not in ``chars`` (whitespace: ``None``), ``lo``
    if none: where ``text[lo:hi].rstrip(chars)`` ends, found from the end 64 characters at a time (no copy of
    a big value)."""
    while hi > lo:
        tail = text[max(lo, hi - 64) : hi]
        kept = tail.rstrip(chars)
        if kept:
            return hi - len(tail) + len(kept)
        hi -= len(tail)
    return lo


_LEADING_BREAK = re.compile(r"[ \t]*\r?\n")


def _dedent(text: str, indent: str) -> str:
    """3. If every non-blank line starts with ``indent``, the indentation they all share removed from
    every line that starts with it (a blank line, only spaces and tabs, that does not is kept).
    C-level passes only, whatever the number of lines."""
    if "\n" not in text:  # one line: its own indentation is the common one
        rest = text.lstrip(" \t")
        return rest if rest.rstrip("\r") and text.startswith(indent) else text
    lines = "\n" + text
    indents = _INDENTATION.findall(lines)
    common = os.path.commonprefix(indents) if indents else ""  # noqa: RUF071 - character-wise on purpose
    if not common or not common.startswith(indent):
        return text
    return lines.replace("\n" + common, "\n")[1:]


_INDENTATION = re.compile(r"\n([ \t]*)(?=[^ \t\r\n])")  # of each non-blank line (after a line break)


def typed_value(ctx: Context, tool: str, param: str, text: str) -> object:
    """``ctx.value``, keeping the string when the schema's JSON decoding hits a nesting limit."""
    try:
        return ctx.value(tool, param, text)
    except RecursionError:
        return text


#: this family's body grammars, by the names ``markers.BLOCKS`` uses (``dialects.GRAMMARS`` gathers them)
GRAMMARS = {
    "qwen3_xml": qwen3_xml,
    "dsml": dsml,
    "kimi_k3": kimi_k3,
    "minimax_m2": minimax_m2,
    "step3": step3,
}
