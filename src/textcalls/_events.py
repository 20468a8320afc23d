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

XML bodies (Qwen3-Coder, Seed-OSS, MiniMax-M2, Step-3, DSML, GLM) stream through the readers of
``dialects.xml_stream`` (``XML_BODIES``; ``xml_body`` and ``body_reader`` for the blocks that may hold JSON or
XML), which send their events through this module's sink methods; that module's doc states their rules.

Every other call (arrays of calls, pythonic and Gemma calls, other shapes) has no events: it is in
``calls`` as before.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable

from .dialects.jsonlike import STREAM_HEADS, Head, call_object_head
from .dialects.xml_stream import XML_BODIES, XmlCall, body_reader, xml_body
from .markers import HEAD_MAX, Block
from .toolcall import ToolCall, new_call_id

#: The message of the error that ends a stream whose streamed call was abandoned (chat chunks: an
#: ``{"error": …}`` chunk; Messages: an ``error`` event): the client's SDK raises it, so no client is left
#: holding a call the model did not finish.
ABANDONED = (
    "textcalls: a tool call streamed with stream_arguments was abandoned before it ended (its markup was cut "
    "or malformed); the answer is withdrawn rather than left holding an unfinished call"
)

__all__ = ["HEAD_MAX", "NEVER", "PIECE_MIN", "CallEvents"]

#: A started call's body is read, and its pieces sent, in runs of at least this many characters (or at
#: the block's end): the scanners gather them, so a delta costs no call here, no read and no event.
PIECE_MIN = 32
NEVER = sys.maxsize  # what ``_wants`` asks for when the body is not read
_STRUCTURE = re.compile(r'["{}\[\]]')  # in the arguments, outside strings
#: a JSON string's text up to its closing quote, to a backslash that starts no complete escape, or to a
#: surrogate (its escape, or the character): what follows goes whole at the block's end (``_STOPPED``)
_STRING_RUN = re.compile(
    r'(?:[^"\\\ud800-\udfff]+|\\u(?![dD][89a-fA-F])[0-9a-fA-F]{4}'
    r"|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\[^u])*"  # (a pair escaped: as written)
)
_SURROGATE = re.compile("[\ud800-\udfff]")
# states of the open block (_STOPPED: a started call whose pieces stopped; its block's end sends the rest)
_OFF, _HEAD, _XML_HEAD, _ARGS, _XML, _DONE, _STOPPED = range(7)


class CallEvents:
    """The events of one scrubber (module docstring) and the state of its open block's call."""

    __slots__ = (
        "events",
        "abandoned",
        "_calls",
        "_ids",
        "_ctx",
        "accept",
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
        "_xml_name",
        "_xml",
    )

    def __init__(self, calls: list[ToolCall], ids: set[str], ctx, unknown_tools: str) -> None:
        self.events: list[tuple] = []
        self.abandoned = 0  #: calls that started and were abandoned
        self._calls = calls  # the scrubber's own list
        self._ids = ids  # the ids of its calls (_calls.unique_ids): a written id already taken is not used again
        self._ctx = ctx
        self.accept = unknown_tools == "accept"
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
        self._xml_name: str | None = None  # a block that may hold an XML body: the name its opener gives, or ""
        self._xml: XmlCall | None = None  # the XML body being read

    def take(self) -> list[tuple]:
        events, self.events = self.events, []
        return events

    def open(self, block: Block, opener: str, plain: bool) -> int:
        """A block opened; ``plain``: outside reasoning, and not after a block that never closed (the text
        is then scanned without JSON-string awareness). Returns how much body to gather for ``body``."""
        head = STREAM_HEADS.get(block.grammar) if plain and block.json_strings else None
        tags = XML_BODIES.get(block.grammar) if plain else None
        self._state = _HEAD if head is not None else _XML_HEAD if tags is not None else _OFF
        if head is not None:
            self._braces, self._read = head
            self._opener = opener
            self._head = ""
        self._xml = None if tags is None else XmlCall(self, self._ctx, tags, None)
        self._xml_name = xml_body(block.grammar, opener) if head is not None else None
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
            if self._xml_name is not None and first and not self._head.strip():
                self._xml = body_reader(self, self._ctx, self._xml_name, first)
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
                if not name or not (self.accept or self._ctx.known(name)):
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

    # -- the sink the XML readers send through (dialects.xml_stream.Sink) --

    @property
    def xml_started(self) -> bool:
        return self._state == _XML

    def start_xml(self, name: str) -> None:
        self._start(name, None, _XML)

    def stop_xml(self) -> None:
        self._state = _DONE if self._state == _XML else _OFF

    def _start(self, name: str, call_id: str | None, state: int = _ARGS) -> None:
        self._state = state
        self._head = ""
        self._index = len(self._calls)
        self._id = new_call_id() if call_id is None or call_id in self._ids else call_id
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
                if text[p] != "\\":  # a surrogate written raw: the arguments change there (strict_json)
                    end = p
                    self._state = _STOPPED
                    break
                if p + 6 > n:  # a backslash whose escape is not complete: hold it back
                    end = p
                    break
                if text[p + 1] == "u" and text[p + 2] in "dD" and text[p + 3] in "89abcdefABCDEF":
                    end = p  # a surrogate's escape the run did not take as a pair's
                    if p + 12 > n and text[p + 3] in "89abAB":  # a high one: its low one may follow
                        break
                    self._state = _STOPPED  # a lone one (U+FFFD's escape at the end): the rest goes whole
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
            self.send_end(text[:end])
        else:
            self._pending = text[end:]
            self.send(text[:end])

    def send(self, piece: str) -> None:
        if piece:
            if not piece.isascii() and _SURROGATE.search(piece):  # an XML value's: as strict_json writes it
                piece = _SURROGATE.sub("\ufffd", piece)
            self._sent.append(piece)
            self.events.append(("arguments", self._index, piece))

    def send_end(self, piece: str) -> None:
        """Send ``piece``, which ends the arguments object, but for its last character (the object's ``}``):
        that one waits for the block's end (``close`` sends the arguments past the pieces once the block ended
        as this call). So the pieces of a call that is then abandoned never join into JSON."""
        self.send(piece[:-1])

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
        self.send(call.arguments[len(sent) :])  # (the held "}" among them)
        if call.id != self._id:
            self._calls[self._index] = ToolCall(call.name, call.arguments, id=self._id, dialect=call.dialect)
            self._ids.add(self._id)
        self.events.append(("ended", self._index))

    def drop(self) -> None:
        """The open block turned out to be text (another opener, or no closer)."""
        state, self._state = self._state, _OFF
        if state >= _ARGS:
            self._abandon()

    def _abandon(self) -> None:
        self.abandoned += 1
        self.events.append(("abandoned", self._index))
