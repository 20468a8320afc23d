"""The XML dialects' argument-stream readers (``stream_arguments=True``): Qwen3-Coder, Seed-OSS, MiniMax-M2,
Step-3, DSML (``XmlCall``) and GLM (``GlmCall``) bodies read as they arrive, their first call's arguments sent
through a ``Sink`` (``_events.CallEvents``, whose module doc states the rules they keep).

The readers know the tags (``xml``'s patterns: ``XML_BODIES``, ``QWEN_TAGS``, ``GlmTags``) and the values'
layout and typing (``xml.trim_value``, ``xml.typed_value``); the sink knows the call events.

Qwen3-Coder XML bodies of JSON-headed blocks (``xml_body``:
``<function=NAME><parameter=KEY>VALUE</parameter>…</function>`` in a ``<tool_call>``, or ``<parameter=…>``
tags in a ``<function=NAME>`` block; ``dialects.xml.qwen3_xml``)
stream (``XmlCall``), and so do the blocks that hold only XML calls: Seed-OSS (Qwen3-Coder's tags),
MiniMax-M2 (``<invoke name="NAME"><parameter name="KEY">``), Step-3 (``steptml:`` tags, after
``function<｜tool_sep｜>``) and DSML (``<｜DSML｜invoke name="NAME">``, a ``|`` for the bar read alike), each
with the tags its grammar finds (``XML_BODIES``). Their arguments are ``json.dumps`` of the parameters, written
as the values arrive. The call starts at its call tag (in a ``<function=NAME>`` block: at its first
parameter). A string value (one the schema types nothing else) is sent as it comes, escaped, but for what
its layout trim (``xml.trim_value``) may still remove: a leading line break not yet known to be one, and its
end while that may be the closing tag's layout (a last line of only spaces or tabs, with the line break
before it; or a last space or carriage return). DSML's ``string="true"`` values are sent as written (no
trim); its ``string="false"`` values (JSON) and values the schema types are sent whole once they end. A
tag that may be forming is held until known, at most ``TAG_MAX`` characters (past that the call stops
streaming). The call stops streaming, and the block's end settles it, on anything else: another call in
the block (the first call streamed is the block's first: it ends if the block's first call is it, and the
others are in ``calls``, whole), a repeated key, text between tags, or a value the trim changes otherwise
(a closing tag indented: dedent). GLM bodies of a ``<tool_call>`` (``NAME<arg_key>K</arg_key><arg_value>V
</arg_value>…``, ``dialects.xml.glm``) stream alike (``GlmCall``), from their first key; their ``}``
comes with the block's end.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from json.encoder import encode_basestring
from typing import ClassVar, Protocol

from .._calls import ARGUMENTS_ENCODER
from ..markers import HEAD_MAX
from ..relaxed_json import NO_VALUE, decode
from . import xml

__all__ = [
    "QWEN_GRAMMARS",
    "QWEN_OPENER",
    "QWEN_TAGS",
    "TAG_MAX",
    "XML_BODIES",
    "GlmCall",
    "GlmTags",
    "Sink",
    "XmlCall",
    "body_reader",
    "xml_body",
]


class Sink(Protocol):
    """What a reader sends its call through (``_events.CallEvents``)."""

    #: a call of a tool not offered may start (``unknown_tools="accept"``)
    accept: bool

    @property
    def xml_started(self) -> bool:
        """An XML call has started (and not stopped)."""
        ...

    def start_xml(self, name: str) -> None:
        """The call ``name`` starts: its arguments follow."""

    def stop_xml(self) -> None:
        """Stream no more: the block's end settles the call (or no call started)."""

    def send(self, piece: str) -> None:
        """The next piece of the arguments."""

    def send_end(self, piece: str) -> None:
        """The arguments' last piece (their closing ``}``), at the block's end."""


#: grammars whose bodies may be Qwen3-Coder XML (a body whose first character is ``<``)
QWEN_GRAMMARS = frozenset(("hermes", "function"))
#: the longest text a tag that may be forming is held for (past it, the call stops streaming)
TAG_MAX = 64
QWEN_OPENER = re.compile(r"<function=(?P<call>[^<>\n]*)>")
_MORE = "more"  # a tag may be forming


class _Tags:
    """One XML dialect's tags as the stream reader meets them: the grammar's own pattern (``xml._Markup``:
    kinds ``call``, ``end_call``, ``param``, ``end_param``, heads ``call_head``, ``param_head``) and the
    literals a tag still forming starts with: ``=`` (``<function=``: a head free of ``<>`` and line breaks
    follows), `` `` (``<invoke``: attributes after whitespace, free of ``<>``) or ``/`` (a closing tag)."""

    __slots__ = ("_pattern", "_literals", "_bars", "newline_params", "_attributes", "prefix")

    def __init__(
        self, markup, literals: tuple[tuple[str, str], ...], *, attributes: bool, bars: bool = False, prefix: str = ""
    ) -> None:
        self._pattern: re.Pattern = markup.pattern
        self._literals = literals
        self._bars = bars  # DeepSeek's tags: a "|" where "｜" is written is read alike
        self.newline_params: bool = markup.newline_params
        self._attributes = attributes  # names in name="…" attributes (else ``<function=NAME>``)
        self.prefix = prefix  # Step-3: ``function<｜tool_sep｜>`` may come before the first call

    def at(self, text: str, i: int) -> re.Match | str | None:
        """The tag at ``text[i]`` (a ``<``), ``_MORE`` when one may still be forming, or ``None``."""
        m = self._pattern.match(text, i)
        if m is not None:
            return m
        rest = text[i : i + TAG_MAX + 1]  # a tag forming longer than that stops the call anyway
        if self._bars:
            rest = rest.replace("|", "\uff5c")
        for literal, kind in self._literals:
            if len(rest) <= len(literal):
                if literal.startswith(rest):
                    return _MORE
            elif rest.startswith(literal):
                tail = rest[len(literal) :]
                if kind == "=":
                    forming = not any(c in "<>\n" for c in tail)
                elif kind == " ":
                    forming = tail[0].isspace() and not any(c in "<>" for c in tail)
                else:
                    forming = not tail.strip()
                if forming:
                    return _MORE
        return None

    def call_name(self, tag: re.Match) -> str | None:
        head = tag.group("call_head") or ""
        return xml.attribute_name(head) if self._attributes else xml.tag_name(head)

    def param(self, tag: re.Match) -> tuple[str | None, dict[str, str]]:
        """A parameter tag's key (``None``: none) and attributes."""
        head = tag.group("param_head") or ""
        if not self._attributes:
            return xml.param_name(head), {}
        attributes = xml.tag_attributes(head)
        return xml.param_name(attributes.get("name")), attributes


def _literals(call: str, param: str, kind: str) -> tuple[tuple[str, str], ...]:
    """The literals of the tags ``<call…>``, ``</call``, ``<param…>``, ``</param`` (``kind``: ``=`` or `` ``)."""
    named = "=" if kind == "=" else ""
    return ((f"<{call}{named}", kind), (f"</{call}", "/"), (f"<{param}{named}", kind), (f"</{param}", "/"))


QWEN_TAGS = _Tags(xml.QWEN_MARKUP, _literals("function", "parameter", "="), attributes=False)
#: grammar -> the tags of its bodies, for the XML dialects whose blocks are only XML calls
XML_BODIES = {
    "qwen3_xml": QWEN_TAGS,  # Seed-OSS
    "minimax_m2": _Tags(xml.MINIMAX_MARKUP, _literals("invoke", "parameter", " "), attributes=True),
    "step3": _Tags(
        xml.STEP3_MARKUP,
        _literals("steptml:invoke", "steptml:parameter", " "),
        attributes=True,
        prefix=xml.STEP3_SEP,
    ),
    "dsml": _Tags(  # V3.2/V4, and V4.1's space after the bar
        xml.DSML_MARKUP,
        _literals("\uff5cDSML\uff5cinvoke", "\uff5cDSML\uff5cparameter", " ")
        + _literals("\uff5cDSML\uff5c invoke", "\uff5cDSML\uff5c parameter", " "),
        attributes=True,
        bars=True,
    ),
}
#: the tags that may follow a value's closing tag for it to end there (xml._AFTER_VALUE, _AFTER_CALL)
_AFTER = {"end_param": ("param", "end_call", "call"), "end_call": ("call",)}
_LEADING_BREAK = re.compile(r"[ \t]*\r?\n")
_MAYBE_LEADING_BREAK = re.compile(r"[ \t]*\r?")
#: a string value's held text that spaces or tabs after it leave all held (``XmlCall._text``): blanks,
#: after at most a line break
_HELD_BLANKS = re.compile(r"(?:\r?\n)?[ \t]*")
_PROBES = ("0", "true", "null", "{}", "[]")  # one text each schema type converts

# how an XML value is written: a string trimmed of its layout, a string as written (DSML ``string="true"``),
# JSON (DSML ``string="false"``), or text the schema types
_STRING, _VERBATIM, _JSON, _TYPED = range(4)


def _escape(text: str) -> str:
    """``text`` as ``json.dumps(…, ensure_ascii=False)`` writes it inside a string (escaping is per character):
    ``encode_basestring`` is what ``json.dumps`` calls for a ``str``."""
    return encode_basestring(text)[1:-1]


_GLM_TAG = re.compile(
    r"<(?:(?P<param>arg_key>(?P<param_head>[^<>]*)</arg_key>(?:\s|\\n)*<arg_value>)|(?P<end_param>/arg_value\s*>))"
)
_GLM_BETWEEN = re.compile(r"(?:\s|\\n)*\\?")  # between a key and its value: whitespace, "\n" written out


def _glm_tag_at(text: str, i: int) -> re.Match | str | None:
    """The GLM tag at ``text[i]`` (a ``<``), ``_MORE`` when one may still be forming, or ``None``.

    (A key whose ``<arg_value>`` was left out, ``xml._GLM``'s other form, is not read: the call stops.)"""
    m = _GLM_TAG.match(text, i)
    if m is not None:
        return m
    rest = text[i : i + TAG_MAX + 1]
    end = "</arg_value"
    if (len(rest) <= len(end) and end.startswith(rest)) or (rest.startswith(end) and not rest[len(end) :].strip()):
        return _MORE
    key = "<arg_key>"
    if len(rest) <= len(key):
        return _MORE if key.startswith(rest) else None
    if not rest.startswith(key):
        return None
    close = rest.find("<", len(key))
    if ">" in rest[len(key) : None if close < 0 else close]:
        return None
    if close < 0:
        return _MORE
    after = rest[close:]
    if len(after) <= len("</arg_key>"):
        return _MORE if "</arg_key>".startswith(after) else None
    if not after.startswith("</arg_key>"):
        return None
    after = after[len("</arg_key>") :]
    value = _GLM_BETWEEN.sub("", after, count=1)  # what comes after the leading whitespace
    return _MORE if "<arg_value>".startswith(value) else None


class GlmTags:
    """GLM's tags, as ``_Tags`` gives them: ``<arg_key>KEY</arg_key><arg_value>`` and ``</arg_value>``."""

    __slots__ = ()
    newline_params = False
    prefix = ""
    at = staticmethod(_glm_tag_at)

    @staticmethod
    def param(tag: re.Match) -> tuple[str | None, dict[str, str]]:
        return xml.param_name(tag.group("param_head")), {}


def _sendable(tail: str) -> int:
    """How much of a string value's unsent ``tail`` its layout trim can no longer remove."""
    nl = tail.rfind("\n")
    if tail[nl + 1 :].strip(" \t"):  # the last line cannot be the closing tag's indentation
        return len(tail) - (tail[-1] in " \r")  # a last space may be collapsed, a "\r" precede the break
    if nl <= 0:
        return 0
    return nl - (tail[nl - 1] == "\r")


def _stays_string(ctx, tool: str, key: str) -> bool:
    """Whether no text of parameter ``key`` is converted by the schema (``Context.value``)."""
    return all(isinstance(ctx.value(tool, key, probe), str) for probe in _PROBES)


class XmlCall:
    """Reads one XML body (Qwen3-Coder, Seed-OSS, MiniMax-M2, Step-3, DSML; ``tags`` says which) as it arrives
    and sends its first call's arguments through ``owner`` (``_events``' module doc states the rules)."""

    #: the tags that may follow a value's closing tag for it to end there (xml._AFTER_VALUE, _AFTER_CALL)
    _after: ClassVar[dict[str, tuple[str, ...]]] = _AFTER
    #: values are as written, no layout trimmed (GLM-4.7's compact bodies: ``GlmCall``)
    _verbatim: bool = False

    __slots__ = (
        "_owner",
        "_ctx",
        "_tags",
        "_buf",
        "_step",
        "_name",
        "_keys",
        "_key",
        "_kind",
        "_raw",
        "_last",
        "_lead",
        "_tail",
        "_blanks",
        "_value_sent",
        "_end",
        "_mark",
    )

    def __init__(self, owner: Sink, ctx, tags, name: str | None) -> None:
        self._owner = owner
        self._ctx = ctx
        self._tags = tags
        self._buf = ""  # body text not read yet
        # ``<function=NAME>`` blocks are past the call tag: their call starts at the first parameter
        self._step: Callable[[], bool] = (
            (self._prefix if tags.prefix else self._call_tag) if name is None else self._between
        )
        self._name = name or ""
        self._keys: set[str] = set()
        self._key = ""
        self._kind = _TYPED  # how the value is written: _STRING (trimmed), _VERBATIM, _JSON or _TYPED
        self._raw: list[str] = []  # the value's text so far, as written
        self._last = ""  # its last character (a parameter tag ends an unclosed value only at a line's start)
        self._lead: bool | None = None  # whether the value starts with a line break (None: not known yet)
        self._tail: list[str] = []  # the string value's text not sent yet, in pieces (joined when it is read)
        self._blanks = True  # it matches ``_HELD_BLANKS``: spaces or tabs after it are held with it, unread
        self._value_sent: list[str] = []
        self._end = ""  # the kind of closing tag held, awaiting what follows it
        self._mark = 0  # the length of that tag in ``_buf``

    def feed(self, text: str) -> None:
        self._buf += text
        while self._step():
            pass

    def _stop(self) -> bool:
        """Stream no more: the block's end settles the call (or no call started)."""
        owner = self._owner
        owner.stop_xml()
        self._step = self._idle
        return False

    def _wait(self, limit: int) -> bool:
        """More text is needed: wait for it, unless ``limit`` characters are held already."""
        if len(self._buf) > limit:
            self._stop()
        return False

    def _idle(self) -> bool:
        self._buf = ""
        return False

    def _next_tag(self) -> re.Match | str | None:
        """The tag after whitespace (``None``: other text; ``_MORE``: wait)."""
        buf = self._buf
        j = len(buf) - len(buf.lstrip())
        if j == len(buf):
            return _MORE
        return self._tags.at(buf, j) if buf[j] == "<" else None

    def _prefix(self) -> bool:
        """Step-3: ``function<｜tool_sep｜>`` before the first call (``xml.step3``), or a call tag at once."""
        buf, sep = self._buf, self._tags.prefix
        text = buf.lstrip()
        if text.startswith("<"):  # the call tag itself (a separator first is not "function" before it)
            self._step = self._call_tag
            return True
        cut = buf.find(sep)
        if cut < 0:  # wait while the text may still become "function", blanks, the separator
            after = text[8:].lstrip() if text.startswith("function") else None
            if "function".startswith(text) or (after is not None and sep.startswith(after)):
                return self._wait(HEAD_MAX)
            return self._stop()
        if buf[:cut].strip() != "function":
            return self._stop()
        self._buf = buf[cut + len(sep) :]
        self._step = self._call_tag
        return True

    def _call_tag(self) -> bool:
        """The call's opening tag (``<function=NAME>``, ``<invoke name="NAME">``); the call starts there."""
        tag = self._next_tag()
        if tag is _MORE:
            return self._wait(HEAD_MAX)
        if not isinstance(tag, re.Match) or tag.lastgroup != "call":
            return self._stop()
        name = self._tags.call_name(tag)
        owner = self._owner
        if name is None or not (owner.accept or self._ctx.known(name)):
            return self._stop()
        self._name = name
        owner.start_xml(name)
        self._buf = self._buf[tag.end() :]
        self._step = self._between
        return True

    def _between(self) -> bool:
        """Between parameters: the next parameter tag, or the call's closing tag."""
        tag = self._next_tag()
        if tag is _MORE:
            return self._wait(TAG_MAX)
        if not isinstance(tag, re.Match) or tag.lastgroup not in ("param", "end_call"):
            return self._stop()
        owner = self._owner
        if tag.lastgroup == "end_call":
            if owner.xml_started:
                owner.send_end("}" if self._keys else "{}")
            return self._stop()
        key, attributes = self._tags.param(tag)
        if key is None or key in self._keys:
            return self._stop()
        if not owner.xml_started:  # a ``<function=NAME>`` block: the call starts at its first parameter
            if not (owner.accept or self._ctx.known(self._name)):
                return self._stop()
            owner.start_xml(self._name)
        written = attributes.get("string", "").strip().lower()  # DSML's own types
        if written == "true":
            self._kind = _VERBATIM
        elif written == "false":
            self._kind = _JSON
        elif _stays_string(self._ctx, self._name, key):
            self._kind = _VERBATIM if self._verbatim else _STRING
        else:
            self._kind = _TYPED
        opening = '"' if self._kind <= _VERBATIM else ""
        owner.send(("{" if not self._keys else ", ") + json.dumps(key, ensure_ascii=False) + ": " + opening)
        self._keys.add(key)
        self._key = key
        self._raw, self._last, self._lead, self._value_sent = [], "", None, [opening]
        self._tail, self._blanks = [], True
        self._buf = self._buf[tag.end() :]
        self._step = self._value
        return True

    def _value(self) -> bool:
        """A value's text, up to a tag that may end it."""
        buf = self._buf
        i = buf.find("<")
        while i >= 0:
            tag = self._tags.at(buf, i)
            if tag is _MORE:
                self._text(buf[:i])
                self._buf = buf[i:]
                return self._wait(TAG_MAX)
            if isinstance(tag, re.Match):
                kind = tag.lastgroup
                if kind in self._after:  # a closing tag: the value ends there if a fitting tag follows it
                    self._text(buf[:i])
                    self._buf, self._end, self._mark = buf[i:], kind, tag.end() - i
                    self._step = self._closed
                    return True
                if kind == "param" and (not self._tags.newline_params or (buf[i - 1] if i else self._last) == "\n"):
                    self._text(buf[:i])  # an unclosed value ends at the next parameter
                    self._buf = buf[i:]
                    return self._value_end()
                i = tag.end() - 1  # any other tag is text of the value
            i = buf.find("<", i + 1)
        self._text(buf)
        self._buf = ""
        return False

    def _closed(self) -> bool:
        """After a closing tag in a value: it ends the value, or (followed by anything else) is its text."""
        buf = self._buf
        after = buf[self._mark :]
        j = self._mark + len(after) - len(after.lstrip())
        if j < len(buf) and buf[j] == "<":
            tag = self._tags.at(buf, j)
            if isinstance(tag, re.Match) and tag.lastgroup in self._after[self._end]:
                self._buf = buf[j:]
                return self._value_end()
        else:
            tag = None if j < len(buf) else _MORE
        if tag is _MORE:
            return self._wait(TAG_MAX)
        self._text(buf[: self._mark])
        self._buf = buf[self._mark :]
        self._step = self._value
        return True

    def _text(self, text: str) -> None:
        """The next text of the value: a string value sends what its trim can no longer remove."""
        if not text:
            return
        self._raw.append(text)
        self._last = text[-1]
        if self._kind == _VERBATIM:
            self._send_value(text)
            return
        if self._kind != _STRING:
            return
        held = self._tail
        held.append(text)
        if self._blanks and not text.strip(" \t"):
            # blanks after held blanks (``_HELD_BLANKS``): the reading below would hold them all (the trim may
            # still remove them: a value of blanks so far, or a last line that may be the closing tag's
            # indentation), so they are held unread: a long run of blanks costs its text, not what it follows
            return
        tail = "".join(held)
        if self._lead is None:  # rule 1: a leading line break, rule 4: one space before a character
            m = _LEADING_BREAK.match(tail)
            if m is not None:
                tail, self._lead = tail[m.end() :], True
            elif _MAYBE_LEADING_BREAK.fullmatch(tail):
                self._hold(tail)
                return
            else:
                self._lead = False
                if tail[0] == " " and not tail[1].isspace():
                    tail = tail[1:]
        n = _sendable(tail)
        if n:
            self._send_value(tail[:n])
            tail = tail[n:]
        self._hold(tail)

    def _hold(self, tail: str) -> None:
        """Hold ``tail``, the string value's text not sent: it is read again with the text after it. What is held
        is only the end of the last text read (from its last line break, or a last space or ``\\r``), or blanks
        that more blanks join unread, or a value's start of blanks and a ``\\r``: each character of a value is
        read a bounded number of times, however long the runs of blanks."""
        self._tail = [tail] if tail else []
        self._blanks = _HELD_BLANKS.fullmatch(tail) is not None

    def _send_value(self, text: str) -> None:
        piece = _escape(text)
        self._value_sent.append(piece)
        self._owner.send(piece)

    def _value_end(self) -> bool:
        """The value ended (``_buf`` starts with the tag after it): send the rest of its JSON, as parse writes it."""
        raw = "".join(self._raw)
        if self._kind == _VERBATIM:
            value: object = raw
        elif self._kind == _JSON:
            value = decode(raw)
            if value is NO_VALUE:
                return self._stop()
        else:
            value = xml.typed_value(self._ctx, self._name, self._key, raw if self._verbatim else xml.trim_value(raw))
        try:
            full = ARGUMENTS_ENCODER.encode(value)
        except (ValueError, RecursionError):
            return self._stop()
        sent = "".join(self._value_sent)
        if not full.startswith(sent):  # the trim took back text sent (a dedent)
            return self._stop()
        self._owner.send(full[len(sent) :])
        self._raw = []
        self._step = self._between
        return True


class GlmCall(XmlCall):
    """GLM bodies (``NAME<arg_key>K</arg_key><arg_value>V</arg_value>…``, ``dialects.xml.glm``): the call
    starts at its first key; its ``}`` comes with the block's end."""

    __slots__ = ("_verbatim",)
    _after: ClassVar[dict[str, tuple[str, ...]]] = {"end_param": ("param",)}

    def _call_tag(self) -> bool:
        """``NAME`` and the first ``<arg_key>…<arg_value>``."""
        buf = self._buf
        cut = buf.find("<")
        if cut < 0:
            return self._wait(HEAD_MAX)
        name = buf[:cut].strip()
        if not name or any(c in "<>{\n" for c in name):
            return self._stop()
        tag = self._tags.at(buf, cut)
        if tag is _MORE:
            return self._wait(HEAD_MAX)
        if (
            not isinstance(tag, re.Match)
            or tag.lastgroup != "param"
            or not (self._owner.accept or self._ctx.known(name))
        ):
            return self._stop()
        self._name = name
        self._verbatim = not buf[cut - 1].isspace()  # GLM-4.7's compact body: whitespace is data (xml.glm)
        self._owner.start_xml(name)
        self._buf = buf[cut:]
        self._step = self._between
        return True


def xml_body(grammar: str, opener: str) -> str | None:
    """Whether a JSON-headed block (``grammar``, opened by ``opener``) may hold an XML body instead: ``""`` for
    a ``<tool_call>`` (Qwen3-Coder XML or GLM), the call's name for a ``<function=NAME>`` block (Qwen3-Coder
    parameters), ``None`` for any other (only JSON)."""
    if grammar not in QWEN_GRAMMARS:
        return None
    if grammar == "hermes":
        return ""
    m = QWEN_OPENER.fullmatch(opener)
    return (xml.tag_name(m.group("call")) or None) if m is not None else None


def body_reader(sink: Sink, ctx, qwen: str, first: str) -> XmlCall | None:
    """The reader of an ``xml_body`` block whose body's first non-blank character is ``first``: Qwen3-Coder XML
    (``<``), GLM (a ``<tool_call>`` body that starts with a name), or ``None`` (JSON: the stream heads read it)."""
    if first == "<":
        return XmlCall(sink, ctx, QWEN_TAGS, qwen or None)
    if not qwen and first not in "{[`":
        return GlmCall(sink, ctx, GlmTags(), None)
    return None
