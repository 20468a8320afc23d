"""Call events (``stream_arguments=True``): a JSON-bodied call's arguments, streamed as the body arrives.

Shared by both scanners, which hand it each block's body in the pieces they lex (``open``, ``body``,
``close``, ``drop``); everything here runs only with the option on. The events, in stream order:

- ``("started", index, id, name)``: a call began. ``index`` is the position the call takes in the
  scrubber's ``calls`` if it ends; ``id`` the id it will carry there; ``name`` its name, complete.
- ``("arguments", index, piece)``: the next piece of its arguments text (non-empty).
- ``("ended", index)``: the block ended as this call: ``calls[index]`` has this ``name`` and ``id``, and
  its ``arguments`` are exactly the pieces joined.
- ``("abandoned", index)``: the block ended otherwise (malformed, read as something else, not a call, or
  read with arguments other than the pieces). No call in ``calls`` is this one: whatever the block gives
  without the option (a call, delivered whole; no call; or its text, in the content) it gives all the same.

A call starts only outside reasoning, in a block scanned with JSON-string awareness, of a dialect whose
grammar keeps plain arguments as written (``_HEADS``), once the name is complete and names an offered tool
(or ``unknown_tools="accept"``) and the arguments object has begun. Its pieces are slices of the body from
that object's ``{`` to its closing ``}``; held back are only what the scanner holds (a possible closer or
opener) and an unfinished escape in a string. Every other call (arrays of calls, XML bodies, other shapes)
has no events: it is in ``calls`` as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .dialects import _NAME_ATTRIBUTE
from .dialects.jsonlike import (
    _FUNCTION_OPENER,
    _KIMI_ID,
    _KIMI_SPACED,
    _MISTRAL_HEAD,
    _NAME_HEAD,
    KIMI_ARGUMENT_BEGIN,
    KIMI_RESERVED_ARGUMENT_BEGIN,
)
from .markers import DEEPSEEK_SEP, Block
from .toolcall import ToolCall, new_call_id

__all__ = ["HEAD_MAX", "CallEvents"]

#: How much of a body may come before its arguments object: past that, the call is not streamed.
HEAD_MAX = 512
_JSON_WS = " \t\n\r"
_ASCII_SEP = DEEPSEEK_SEP.replace("\uff5c", "|")
#: ``{"name": "NAME", "arguments": `` up to the arguments object (the Hermes call object, name first)
_CALL_OBJECT_HEAD = re.compile(
    r'\s*\{[ \t\n\r]*"name"[ \t\n\r]*:[ \t\n\r]*"(?P<name>[^"\\]*)"[ \t\n\r]*,'
    r'[ \t\n\r]*"(?:arguments|parameters|args|input)"[ \t\n\r]*:[ \t\n\r]*'
)
_STRUCTURE = re.compile(r'["{}\[\]]')  # in the arguments, outside strings
_STRING_STOP = re.compile(r'["\\]')

Head = tuple[str, str | None]  # the call's name, and the id written in the body (None: a fresh one)


def _call_object(opener: str, head: str) -> Head | None:
    m = _CALL_OBJECT_HEAD.fullmatch(head)
    return None if m is None else (m.group("name"), None)


def _fenced(text: str) -> bool:
    """``text`` (what comes before the arguments' ``{``) is blank, or opens one markdown fence
    (```` ``` ```` or ```` ```json ````, a line break, JSON whitespace), as ``relaxed_json.strip_fence`` reads."""
    text = text.lstrip()
    if not text:
        return True
    newline = text.find("\n")
    return (
        text.startswith("```")
        and newline >= 0
        and text[3:newline].strip().lower() in ("", "json")
        and not text[newline + 1 :].strip(_JSON_WS)
    )


def _hermes(opener: str, head: str) -> Head | None:
    """``dialects.hermes``: a call object; not when the opener names the tool (its own grammar)."""
    named = _NAME_ATTRIBUTE.search(opener)
    if named and (named.group(1) or named.group(2) or "").strip():
        return None
    return _call_object(opener, head)


def _deepseek(opener: str, head: str) -> Head | None:
    """``jsonlike.deepseek``: ``NAME<sep>{`` (V3.1), ``TYPE<sep>NAME`` and a fence (V3), or a call object."""
    if "\uff5c" not in opener:
        head = head.replace(_ASCII_SEP, DEEPSEEK_SEP)
    name, sep, tail = head.partition(DEEPSEEK_SEP)
    if not sep:
        return _call_object(opener, head)
    if not tail.strip():
        return name, None
    if tail.lstrip().startswith("```"):  # V3.1 with a fence: read as JSON again, not as written
        return None
    name, _, fence = tail.partition("\n")
    return (name, None) if _fenced(fence) else None


def _kimi(opener: str, head: str) -> Head | None:
    """``jsonlike.kimi_k2``: ``functions.NAME:IDX<|tool_call_argument_begin|>{`` (the id is the call's)."""
    call_id, sep, tail = head.partition(KIMI_ARGUMENT_BEGIN)
    if not sep:
        call_id, sep, tail = head.partition(KIMI_RESERVED_ARGUMENT_BEGIN)
    if not sep:
        spaced = _KIMI_SPACED.match(head + "{")
        if spaced is None:
            return None
        call_id, tail = spaced.group("id"), head[spaced.end() :]
    m = _KIMI_ID.fullmatch(call_id.strip())
    if m is None or tail.strip():
        return None
    return m.group("name").removeprefix("functions."), call_id.strip()


def _function(opener: str, head: str) -> Head | None:
    """``dialects.function``: the name in the opener (``<function=NAME>``), the body a (fenced) object."""
    m = _FUNCTION_OPENER.fullmatch(opener.strip())
    return (m.group("n1") or m.group("n2"), None) if m and _fenced(head) else None


def _mistral(opener: str, head: str) -> Head | None:
    """``jsonlike.mistral``: ``NAME{``, ``NAME[ARGS]{``, ``NAME[CALL_ID]ID[ARGS]{`` (the id is the call's)."""
    head = head.strip()
    m = _MISTRAL_HEAD.match(head) if head else None
    return (m.group("name"), m.group("id")) if m and m.end() == len(head) else None


def _name_then_json(opener: str, head: str) -> Head | None:
    """``dialects.dsml_toolcall``'s ``NAME`` then a (fenced) object."""
    m = _NAME_HEAD.match(head)
    return (m.group("name"), None) if m and _fenced(head[m.end() :]) else None


#: grammar name -> (how many ``{`` may come before the arguments' own, the reader of the text before it)
_HEADS: dict[str, tuple[int, Callable[[str, str], Head | None]]] = {
    "hermes": (1, _hermes),
    "deepseek": (1, _deepseek),
    "kimi_k2": (0, _kimi),
    "function": (0, _function),
    "mistral": (0, _mistral),
    "dsml_toolcall": (0, _name_then_json),
}

# states of the open block
_OFF, _HEAD, _ARGS, _DONE = range(4)


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
        self._read: Callable[[str, str], Head | None] = _call_object
        self._index = 0
        self._id = ""
        self._name = ""
        self._sent: list[str] = []  # the pieces sent
        self._pending = ""  # arguments text not sent yet: an escape still incomplete
        self._depth = 0
        self._in_str = False

    def take(self) -> list[tuple]:
        events, self.events = self.events, []
        return events

    def open(self, block: Block, opener: str, plain: bool) -> None:
        """A block opened; ``plain``: outside reasoning, scanned with JSON-string awareness."""
        head = _HEADS.get(block.grammar) if plain else None
        self._state = _OFF if head is None else _HEAD
        if head is not None:
            self._braces, self._read = head
            self._opener = opener
            self._head = ""

    def body(self, text: str) -> None:
        """The next piece of the open block's body."""
        if self._state == _ARGS:
            self._arguments(self._pending + text)
        elif self._state == _HEAD:
            self._head_of(text)

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

    def _start(self, name: str, call_id: str | None) -> None:
        self._state = _ARGS
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
                m = _STRING_STOP.search(text, p)
                if m is None:
                    break
                p = m.end()
                if text[m.start()] == '"':
                    self._in_str = False
                    continue
                size = 6 if text.startswith("u", p) else 2
                if m.start() + size > n or p == n:  # the escape is not complete: hold it back
                    end = m.start()
                    break
                p = m.start() + size
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
        self._pending = text[end:] if self._state == _ARGS else ""
        self._send(text[:end])

    def _send(self, piece: str) -> None:
        if piece:
            self._sent.append(piece)
            self.events.append(("arguments", self._index, piece))

    def close(self, calls: list[ToolCall] | None) -> None:
        """The open block ended; ``calls`` are the calls taken from it (``None``: none taken)."""
        state, self._state = self._state, _OFF
        if state < _ARGS:
            return
        call = calls[0] if calls is not None and len(calls) == 1 else None
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
        self._send(call.arguments[len(sent) :])
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
