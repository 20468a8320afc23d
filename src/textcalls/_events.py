"""Call events (``stream_arguments=True``): a call's arguments (JSON or XML bodies), streamed as the body arrives.

Shared by both scanners, which hand it each block's body in the pieces they lex (``open``, ``body``,
``close``, ``drop``); everything here runs only with the option on. The events, in stream order:

- ``("started", index, id, name)``: a call began. ``index`` is the position the call takes in the
  scrubber's ``calls`` if it ends; ``id`` the id it will carry there; ``name`` its name, complete.
- ``("arguments", index, piece)``: the next piece of its arguments text (non-empty). The arguments
  object's closing ``}`` is held back until the block's end settles the call (it comes just before
  ``ended``), so the pieces of a call that is then abandoned never join into JSON.
- ``("ended", index)``: the block ended as this call: ``calls[index]`` has this ``name`` and ``id``, and
  its ``arguments`` are exactly the pieces joined.
- ``("abandoned", index)``: the block ended otherwise (malformed, read as something else, not a call, or
  read with arguments other than the pieces). No call in ``calls`` is this one: whatever the block gives
  without the option (a call, delivered whole; no call; or its text, in the content) it gives all the same.

A JSON-bodied call starts only outside reasoning (as every call: and not after a block that never closed), in
a block scanned with JSON-string awareness, of a dialect whose grammar keeps plain arguments as written
(``jsonlike.STREAM_HEADS``), once the name is complete and names an offered tool (or
``unknown_tools="accept"``) and the arguments object has begun. Its pieces are slices of the body from that
object's ``{`` to its closing ``}``; held back are only what the scanner holds (a possible closer or opener),
an unfinished escape in a string, and the body text of a started call not read yet: it is read in runs of at
least ``PIECE_MIN`` characters (the block's end settles the rest), so that a delta costs a string
concatenation, not a read and an event.

Qwen3-Coder XML bodies of those blocks (``<function=NAME><parameter=KEY>VALUE</parameter>…</function>`` in
a ``<tool_call>``, or ``<parameter=…>`` tags in a ``<function=NAME>`` block; ``dialects.xml.qwen3_xml``)
stream too (``_XmlCall``), and so do the blocks that hold only XML calls: Seed-OSS (Qwen3-Coder's tags),
MiniMax-M2 (``<invoke name="NAME"><parameter name="KEY">``), Step-3 (``steptml:`` tags, after
``function<｜tool_sep｜>``) and DSML (``<｜DSML｜invoke name="NAME">``, a ``|`` for the bar read alike), each
with the tags its grammar finds (``_Tags``). Their arguments are ``json.dumps`` of the parameters, written
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
</arg_value>…``, ``dialects.xml.glm``) stream alike (``_GlmCall``), from their first key; their ``}``
comes with the block's end.

Every other call (arrays of calls, pythonic and Gemma calls, other shapes) has no events: it is in
``calls`` as before.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from json.encoder import encode_basestring
from typing import ClassVar

from .dialects import xml
from .dialects.jsonlike import STREAM_HEADS, Head, call_object_head
from .markers import Block
from .relaxed_json import NO_VALUE, decode
from .toolcall import ARGUMENTS_ENCODER, ToolCall, new_call_id

#: The message of the error that ends a stream whose streamed call was abandoned (chat chunks: an
#: ``{"error": …}`` chunk; Messages: an ``error`` event): the client's SDK raises it, so no client is left
#: holding a call the model did not finish.
ABANDONED = (
    "textcalls: a tool call streamed with stream_arguments was abandoned before it ended (its markup was cut "
    "or malformed); the answer is withdrawn rather than left holding an unfinished call"
)

__all__ = ["HEAD_MAX", "NEVER", "PIECE_MIN", "CallEvents"]

#: How much of a body may come before its arguments object: past that, the call is not streamed.
HEAD_MAX = 512
#: A started call's body is read, and its pieces sent, in runs of at least this many characters (or at
#: the block's end): the scanners gather them, so a delta costs no call here, no read and no event.
PIECE_MIN = 32
NEVER = sys.maxsize  # what ``_wants`` asks for when the body is not read
_STRUCTURE = re.compile(r'["{}\[\]]')  # in the arguments, outside strings
#: a JSON string's text up to its closing quote, or to a backslash that starts no complete escape
_STRING_RUN = re.compile(r'(?:[^"\\]+|\\u[0-9a-fA-F]{4}|\\[^u])*')
#: grammars whose bodies may be Qwen3-Coder XML (a body whose first character is ``<``)
_QWEN_GRAMMARS = frozenset(("hermes", "function"))
#: the longest text a tag that may be forming is held for (past it, the call stops streaming)
TAG_MAX = 64
_QWEN_OPENER = re.compile(r"<function=(?P<call>[^<>\n]*)>")
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


_QWEN_TAGS = _Tags(xml.QWEN_MARKUP, _literals("function", "parameter", "="), attributes=False)
#: grammar -> the tags of its bodies, for the XML dialects whose blocks are only XML calls
_XML_BODIES = {
    "qwen3_xml": _QWEN_TAGS,  # Seed-OSS
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
#: a string value's held text that spaces or tabs after it leave all held (``_XmlCall._text``): blanks,
#: after at most a line break
_HELD_BLANKS = re.compile(r"(?:\r?\n)?[ \t]*")
_PROBES = ("0", "true", "null", "{}", "[]")  # one text each schema type converts

# states of the open block
_OFF, _HEAD, _XML_HEAD, _ARGS, _XML, _DONE = range(6)
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


class _GlmTags:
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


class _XmlCall:
    """Reads one XML body (Qwen3-Coder, Seed-OSS, MiniMax-M2, Step-3, DSML; ``tags`` says which) as it arrives
    and sends its first call's arguments through ``owner`` (module docstring)."""

    #: the tags that may follow a value's closing tag for it to end there (xml._AFTER_VALUE, _AFTER_CALL)
    _after: ClassVar[dict[str, tuple[str, ...]]] = _AFTER
    #: values are as written, no layout trimmed (GLM-4.7's compact bodies: ``_GlmCall``)
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

    def __init__(self, owner: CallEvents, ctx, tags, name: str | None) -> None:
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
        owner._state = _DONE if owner._state == _XML else _OFF
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
        if name is None or not (owner._accept or self._ctx.known(name)):
            return self._stop()
        self._name = name
        owner._start(name, None, _XML)
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
            if owner._state == _XML:
                owner._send_end("}" if self._keys else "{}")
            return self._stop()
        key, attributes = self._tags.param(tag)
        if key is None or key in self._keys:
            return self._stop()
        if owner._state != _XML:  # a ``<function=NAME>`` block: the call starts at its first parameter
            if not (owner._accept or self._ctx.known(self._name)):
                return self._stop()
            owner._start(self._name, None, _XML)
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
        owner._send(("{" if not self._keys else ", ") + json.dumps(key, ensure_ascii=False) + ": " + opening)
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
        self._owner._send(piece)

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
        self._owner._send(full[len(sent) :])
        self._raw = []
        self._step = self._between
        return True


class _GlmCall(_XmlCall):
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
            or not (self._owner._accept or self._ctx.known(name))
        ):
            return self._stop()
        self._name = name
        self._verbatim = not buf[cut - 1].isspace()  # GLM-4.7's compact body: whitespace is data (xml.glm)
        self._owner._start(name, None, _XML)
        self._buf = buf[cut:]
        self._step = self._between
        return True


class CallEvents:
    """The events of one scrubber (module docstring) and the state of its open block's call."""

    __slots__ = (
        "events",
        "abandoned",
        "_calls",
        "_ctx",
        "_accept",
        "_state",
        "_opener",
        "_head",
        "_braces",
        "_read",
        "_index",
        "_id",
        "_name",
        "_sent",
        "_pending",
        "_depth",
        "_in_str",
        "_qwen",
        "_xml",
    )

    def __init__(self, calls: list[ToolCall], ctx, unknown_tools: str) -> None:
        self.events: list[tuple] = []
        self.abandoned = 0  #: calls that started and were abandoned
        self._calls = calls  # the scrubber's own list
        self._ctx = ctx
        self._accept = unknown_tools == "accept"
        self._state = _OFF
        self._opener = ""
        self._head = ""  # the body before the arguments object, so far
        self._braces = 0  # how many more "{" may come before the arguments' own
        self._read: Callable[[str, str], Head | None] = call_object_head
        self._index = 0
        self._id = ""
        self._name = ""
        self._sent: list[str] = []  # the pieces sent
        self._pending = ""  # arguments text not sent yet: an escape still incomplete
        self._depth = 0
        self._in_str = False
        self._qwen: str | None = None  # a block that may hold Qwen3-Coder XML: the name its opener gives, or ""
        self._xml: _XmlCall | None = None  # the XML body being read

    def take(self) -> list[tuple]:
        events, self.events = self.events, []
        return events

    def open(self, block: Block, opener: str, plain: bool) -> int:
        """A block opened; ``plain``: outside reasoning, and not after a block that never closed (the text
        is then scanned without JSON-string awareness). Returns how much body to gather for ``body``."""
        head = STREAM_HEADS.get(block.grammar) if plain and block.json_strings else None
        tags = _XML_BODIES.get(block.grammar) if plain else None
        self._state = _HEAD if head is not None else _XML_HEAD if tags is not None else _OFF
        if head is not None:
            self._braces, self._read = head
            self._opener = opener
            self._head = ""
        self._xml = None if tags is None else _XmlCall(self, self._ctx, tags, None)
        self._qwen = None
        if head is not None and block.grammar in _QWEN_GRAMMARS:
            if block.grammar == "hermes":
                self._qwen = ""
            elif (m := _QWEN_OPENER.fullmatch(opener)) is not None and (name := xml.tag_name(m.group("call"))):
                self._qwen = name
        return self._wants()

    def _wants(self) -> int:
        """How many characters of the body the scanner gathers before its next ``body`` call: 1 (every piece)
        while a call's head is read, ``PIECE_MIN`` once the call started (its body is read in runs), and
        ``NEVER`` when nothing is read (the block's end settles it)."""
        state = self._state
        if state in (_HEAD, _XML_HEAD):
            return 1
        return PIECE_MIN if state in (_ARGS, _XML) else NEVER

    def body(self, text: str) -> int:
        """The next text of the open block's body (at least what ``_wants`` asked for, or the block's last
        text); returns how much to gather before the next call."""
        if self._state == _ARGS:
            self._arguments(self._pending + text)
        elif self._state in (_XML_HEAD, _XML):
            assert self._xml is not None  # set with the state
            self._xml.feed(text)
        elif self._state == _HEAD:
            first = text.lstrip()[:1]
            if self._qwen is not None and first and not self._head.strip():
                if first == "<":
                    self._xml = _XmlCall(self, self._ctx, _QWEN_TAGS, self._qwen or None)
                elif not self._qwen and first not in "{[`":  # a <tool_call> body that starts with a name: GLM
                    self._xml = _GlmCall(self, self._ctx, _GlmTags(), None)
                if self._xml is not None:
                    self._state = _XML_HEAD
                    self._xml.feed(self._head + text)
                    return self._wants()
            self._head_of(text)
        return self._wants()

    def _head_of(self, text: str) -> None:
        start = len(self._head)
        head = self._head = self._head + text
        i = head.find("{", start)
        while i >= 0:
            found = self._read(self._opener, head[:i])
            if found is not None:
                name, call_id = found
                name = name.strip()
                if not name or not (self._accept or self._ctx.known(name)):
                    self._state = _OFF
                    return
                self._start(name, call_id)
                self._arguments(head[i:])
                return
            if not self._braces:
                self._state = _OFF
                return
            self._braces -= 1
            i = head.find("{", i + 1)
        if len(head) > HEAD_MAX:
            self._state = _OFF

    def _start(self, name: str, call_id: str | None, state: int = _ARGS) -> None:
        self._state = state
        self._head = ""
        self._index = len(self._calls)
        self._id = new_call_id() if call_id is None else call_id
        self._name = name
        self._sent = []
        self._pending = ""
        self._depth = 0
        self._in_str = False
        self.events.append(("started", self._index, self._id, name))

    def _arguments(self, text: str) -> None:
        """Send ``text`` up to the end of the arguments object, holding back an escape not yet complete."""
        n, p, end = len(text), 0, len(text)
        while p < n:
            if self._in_str:
                p = _STRING_RUN.match(text, p).end()  # type: ignore[union-attr]  # (it always matches)
                if p == n:
                    break
                if text[p] == '"':
                    self._in_str = False
                    p += 1
                    continue
                if p + 6 > n:  # a backslash whose escape is not complete: hold it back
                    end = p
                    break
                p += 2  # "\u" and no four hex digits: not JSON (the end check abandons the call)
                continue
            m = _STRUCTURE.search(text, p)
            if m is None:
                break
            p = m.end()
            c = text[m.start()]
            if c == '"':
                self._in_str = True
            elif c in "{[":
                self._depth += 1
            else:
                self._depth -= 1
                if self._depth == 0:
                    end = p
                    self._state = _DONE
                    break
        if self._state == _DONE:
            self._pending = ""
            self._send_end(text[:end])
        else:
            self._pending = text[end:]
            self._send(text[:end])

    def _send(self, piece: str) -> None:
        if piece:
            self._sent.append(piece)
            self.events.append(("arguments", self._index, piece))

    def _send_end(self, piece: str) -> None:
        """Send ``piece``, which ends the arguments object, but for its last character (the object's ``}``):
        that one waits for the block's end (``close`` sends the arguments past the pieces once the block ended
        as this call). So the pieces of a call that is then abandoned never join into JSON."""
        self._send(piece[:-1])

    def close(self, calls: list[ToolCall] | None) -> None:
        """The open block ended; ``calls`` are the calls taken from it (``None``: none taken)."""
        state, self._state = self._state, _OFF
        if state < _ARGS:
            return
        call = calls[0] if calls else None  # the call streamed is the block's first (the others go whole)
        sent = "".join(self._sent)
        if (
            call is None
            or call.name != self._name
            or not call.arguments.startswith(sent)
            or self._index >= len(self._calls)
            or self._calls[self._index] is not call
        ):
            self._abandon()
            return
        self._send(call.arguments[len(sent) :])  # (the held "}" among them)
        if call.id != self._id:
            self._calls[self._index] = ToolCall(call.name, call.arguments, id=self._id, dialect=call.dialect)
        self.events.append(("ended", self._index))

    def drop(self) -> None:
        """The open block turned out to be text (another opener, or no closer)."""
        state, self._state = self._state, _OFF
        if state >= _ARGS:
            self._abandon()

    def _abandon(self) -> None:
        self.abandoned += 1
        self.events.append(("abandoned", self._index))
