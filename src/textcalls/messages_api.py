"""Recover text tool calls in Anthropic Messages API answers (``POST /v1/messages``): a whole ``message``
(``recover_message``, ``recover_message_bytes``), its stream of events as dicts (``MessagesRecovery``) or as
raw SSE bytes (``MessagesSSERecovery``).

Each ``text`` content block is scrubbed by its own scrubber; the calls recovered from every block are
appended, in order, as ``tool_use`` blocks after the message's last block, when ``should_recover(native,
has_tools, tool_use blocks in the message)`` allows, and ``stop_reason`` becomes ``"tool_use"``. The text is
scrubbed whatever the gate says: a stream cannot take back text it has sent, and a whole message is scrubbed
alike so that both give the same result. ``tools`` is the request's ``tools`` in the Messages shape
(``{"name", "description", "input_schema"}``); its client tools are the ones offered (``messages_tools``),
server tools (a ``type`` such as ``web_search_20250305``) left out.

With ``stream_arguments=True`` a stream sends each call in its place instead, its input in pieces as the
model writes it (``MessagesRecovery``); a whole message takes the option and is recovered as without it.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import TypeGuard

from ._apis import (
    ApiSpec,
    EventMachine,
    EventRecovery,
    TextPart,
    adrive_sse,
    answer_entries,
    chat_tool,
    check_tools,
    drive_sse,
    fresh_id,
    json_type,
    recover_bytes,
    scrub_parts,
)
from ._events import ABANDONED
from .openai import should_recover
from .sse import MAX_EVENT
from .toolcall import ToolCall

__all__ = [
    "MessagesRecovery",
    "MessagesSSERecovery",
    "arecover_messages_sse",
    "messages_tools",
    "recover_message",
    "recover_message_bytes",
    "recover_messages_sse",
    "tool_use_block",
]

#: The ``type`` of a client tool (besides none at all); any other string names a server tool.
CLIENT_TOOL = "custom"


def convert_tools(tools) -> tuple:
    """``(chat-shaped function tools, None)`` for a Messages ``tools`` list, or ``(None, why)``.

    A client tool is ``{"name": non-empty str, "input_schema": object or absent, "description": …}`` with
    no ``type`` (or ``null``, or ``"custom"``); another object whose ``type`` is a string is a server tool,
    left out, so a call naming it stays text."""
    if not isinstance(tools, list):
        return None, f"tools is {json_type(tools)}, not an array"
    functions = []
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            return None, f"tools[{i}] is {json_type(tool)}, not a tool"
        kind = tool.get("type")
        if kind is not None and kind != CLIENT_TOOL:
            if not isinstance(kind, str):
                return None, f"tools[{i}].type is {json_type(kind)}, not a string"
            continue
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            return None, f"tools[{i}] is a client tool without a name"
        schema = tool.get("input_schema")
        if schema is not None and not isinstance(schema, dict):
            return None, f"tools[{i}].input_schema is {json_type(schema)}, not an object"
        functions.append(chat_tool(name, schema, tool.get("description")))
    return functions, None


def messages_tools(tools) -> list:
    """The client tools of a Messages ``tools`` list as chat ``tools`` (what ``tools=`` of the other
    helpers takes); TypeError (not a list) or ValueError (a malformed entry) naming what is wrong."""
    return check_tools(tools, convert_tools)


def tool_use_block(call: ToolCall) -> dict:
    """The ``tool_use`` content block of a recovered call, with a fresh ``toolu_…`` id."""
    return {"type": "tool_use", "id": fresh_id("toolu_"), "name": call.name, "input": json.loads(call.arguments)}


def abandoned_error() -> dict:
    """The event that ends a Messages stream whose streamed call was abandoned (``MessagesRecovery``): a new
    dict each time."""
    return {
        "type": "error",
        "error": {
            "type": "api_error",
            "message": ABANDONED,
        },
    }


def _max_tokens(event: dict) -> bool:
    """Whether ``event`` is a ``message_delta`` saying the output was cut (``stop_reason: "max_tokens"``)."""
    delta = event.get("delta")
    return event.get("type") == "message_delta" and isinstance(delta, dict) and delta.get("stop_reason") == "max_tokens"


def _tool_use_may_replace(delta) -> TypeGuard[dict]:
    """Whether a ``message_delta``'s ``delta`` may have its ``stop_reason`` made ``"tool_use"``: a dict whose
    stop was not ``max_tokens`` (a cut output says so, whatever it holds)."""
    return isinstance(delta, dict) and delta.get("stop_reason") != "max_tokens"


def recover_message(message: dict, *, native: bool, has_tools: bool, **options) -> dict:
    """Recover text tool calls in a Messages API ``message`` (see the module doc).

    Every ``text`` block's ``text`` becomes what a stream of it shows (``MessagesRecovery``: markup removed,
    the whitespace around it kept); recovered calls are appended to ``content`` as ``tool_use`` blocks and
    ``stop_reason`` becomes ``"tool_use"``. ``usage`` and every other field stay. The input is never
    mutated; the very same object comes back when nothing changes (always with ``has_tools=False``).
    ``options`` are ``parse``'s, ``tools`` in the Messages shape (or ``options=`` an ``Options``);
    ``stream_arguments`` changes nothing here.
    """
    content, opts = answer_entries(message, SPEC, native, has_tools, options)
    if content is None:
        return message
    calls: list[ToolCall] = []
    cut = message.get("stop_reason") == "max_tokens"  # the output was cut: its last block never ended
    new_content = scrub_parts(content, SPEC.text, opts, calls, cut)
    structured = sum(1 for block in content if block.get("type") in SPEC.calls)
    if not should_recover(native, True, structured):
        calls = []
    if new_content is None and not calls:
        return message
    new = {**message, "content": (new_content or list(content)) + [tool_use_block(call) for call in calls]}
    if calls and not cut:
        new["stop_reason"] = "tool_use"
    return new


def recover_message_bytes(body, *, native: bool, has_tools: bool, **options):
    """``recover_message`` on a raw JSON body: ``body`` itself (the very same object) when nothing changes,
    when it is not a message (an error body …) or, without ``tools``, when ``may_contain_markup`` says no;
    otherwise compact UTF-8 JSON bytes."""
    return recover_bytes(body, SPEC, native, has_tools, options)


def _recover_answer(message: dict, **keywords) -> dict:
    """``recover_message``, but an error body (``"type": "error"``) is left as it is."""
    return message if message.get("type") == "error" else recover_message(message, **keywords)


class MessagesRecovery(EventMachine):
    """Push the events of a streamed Messages answer (dicts) one at a time; get back the events to send.

    - ``content_block_start`` of a ``text`` block opens its scrubber (text it carries is scrubbed);
      ``content_block_delta`` ``text_delta``: the text is scrubbed, and a delta left empty is dropped.
    - ``content_block_stop`` of a text block: its held tail goes first, as one more ``text_delta``.
    - ``message_delta`` (or ``message_stop`` without one before it): if the gate allows, each recovered
      call goes first as a ``tool_use`` block, its ``index`` continuing after the message's last block:
      ``content_block_start`` (``input`` ``{}``), one ``content_block_delta`` ``input_json_delta`` whose
      ``partial_json`` is the whole arguments, ``content_block_stop``; then ``stop_reason`` is
      ``"tool_use"``. ``usage`` passes as sent.

    With ``stream_arguments=True`` each call goes out in its place instead, as the model writes it. When a
    call starts (and the gate allows, with the structured calls seen so far), the text block it is written in
    is stopped as it stands and the call follows as a ``tool_use`` block of its own (a fresh ``toolu_`` id,
    ``input`` ``{}``): an ``input_json_delta`` per piece, then ``content_block_stop``. A call without events
    comes whole in its place. Text after it goes on in a new ``text`` block, which the upstream's
    ``content_block_stop`` for the block stops; every later upstream block ``index`` is moved past the
    blocks inserted. Pieces go out while the input sent stays a prefix of one strict JSON object (what the
    anthropic SDK reads at every delta, ``_JsonPrefix``); from a character that would break that, the rest
    is held and goes out when the call ends (its arguments then are exactly the deltas joined). A call
    abandoned after its start (``StreamScrubber.take_events``: cut by another opener, by the end of the output,
    a dedented value, arguments other than the pieces) ends the stream with an ``error`` event
    (``abandoned_error()``, an ``api_error``: the anthropic SDK raises it) and nothing after it goes out: the SDK
    reads a ``tool_use`` block's input at every delta, keeping the values complete so far (a cut number too),
    so no input sent could be taken back and a stopped block would hold a call the model never finished;
    ``abandoned`` counts them. ``stop_reason`` becomes ``"tool_use"`` when a call went out whole or ended,
    never over ``max_tokens``.

    Every other event, and every event that needs no change, comes back as the very same object
    (``[event]``); with ``has_tools=False`` all do. ``close()`` ends a stream that stopped before its
    ``message_delta``: held tails, then the calls. Inputs are never mutated.
    """

    def __init__(self, *, native: bool, has_tools: bool, **options) -> None:
        super().__init__(native, has_tools, options, SPEC)  # its indexes: content block indexes
        self._failed = False  # a streamed call was abandoned: an error event went out, nothing more does
        self._blocks: dict[int, TextPart] = {}  # text blocks by index
        # stream_arguments: upstream block index -> the one sent; a text block's open block as sent (None while a
        # call or nothing came last); how many blocks were inserted; the call streaming (index, reader, sent)
        self._moves: dict[int, int] | None = {} if self.options.stream_arguments else None
        self._open: dict[int, int | None] = {}
        self._inserted = 0
        self._tool: tuple[int, _JsonPrefix, list[str]] | None = None
        self._max_tokens = False  # the message_delta said max_tokens

    def push(self, event: dict) -> list:
        """Take the next event; return the events to send in its place (maybe none)."""
        if not isinstance(event, dict):
            raise TypeError(f"an event must be a dict, not {type(event).__name__}")
        if self._failed:  # a streamed call was abandoned: the stream ended with an error event
            return []
        return self._cut(self._push(event))  # (a call abandoned: nothing after the error goes out)

    def _push(self, event: dict) -> list:
        if not self.has_tools or self._ended:
            return [event]
        kind = event.get("type")
        index = event.get("index")
        if self._moves is not None:
            return self._streamed(event, kind, index)
        if kind in ("message_delta", "message_stop"):
            if _max_tokens(event):
                self._cut_last()
            before = self._end()
            if not before and not self.recovered:
                return [event]
            delta = event.get("delta")
            if kind == "message_delta" and self.recovered and _tool_use_may_replace(delta):
                event = {**event, "delta": {**delta, "stop_reason": "tool_use"}}
            return [*before, event]
        if type(index) is not int:
            return [event]
        if kind == "content_block_start":
            block = event.get("content_block")
            if not isinstance(block, dict):
                return [event]
            self._last = max(self._last, index)
            if block.get("type") == "tool_use":
                self._structured.add(index)
            elif block.get("type") == "text" and isinstance(block.get("text"), str) and index not in self._blocks:
                part = self._blocks[index] = TextPart(self.options)
                if block["text"]:
                    shown = part.feed(block["text"])
                    if shown != block["text"]:
                        return [{**event, "content_block": {**block, "text": shown}}]
            return [event]
        found = self._blocks.get(index)
        if found is None or found.done:
            return [event]
        part = found
        if kind == "content_block_delta":
            delta = event.get("delta")
            if isinstance(delta, dict) and delta.get("type") == "text_delta" and isinstance(delta.get("text"), str):
                shown = part.feed(delta["text"])
                if shown != delta["text"]:
                    return [{**event, "delta": {**delta, "text": shown}}] if shown else []
        elif kind == "content_block_stop":
            tail = part.flush()
            if tail:
                return [_text_delta(index, tail), event]
        return [event]

    # -- the screen (EventRecovery): text deltas not decoded ------------------------------------------

    def text_delta(self, event: dict) -> tuple | None:
        """``(index, text, None)`` of a ``content_block_delta`` ``text_delta`` event, else None."""
        if event.get("type") != "content_block_delta":
            return None
        index, delta = event.get("index"), event.get("delta")
        if type(index) is not int or not isinstance(delta, dict) or delta.get("type") != "text_delta":
            return None
        text = delta.get("text")
        return (index, text, None) if isinstance(text, str) else None

    def with_text(self, event: dict, text: str, seq: int | None) -> dict:
        return {**event, "delta": {**event["delta"], "text": text}}

    def screened(self, slot: int, text: str, seq: int | None):
        """``push`` of a ``text_delta`` of block ``slot`` (see ``Machine.screened``)."""
        if self._failed or self._ended or not self.has_tools:
            return None
        part = self._blocks.get(slot)
        if part is None or part.done:
            return None
        if self._moves is None:
            shown = part.feed(text)
            return True if shown == text else shown
        steps = self._steps(part, text)  # stream_arguments: as _streamed
        if self._open[slot] == slot and steps == [("text", text)]:
            return True
        return steps

    def unscreened(self, event: dict, state) -> list:
        if self._moves is None:
            return [self.with_text(event, state, None)] if state else []
        index = event["index"]
        at = self._open[index]
        if at is not None and state == [("text", event["delta"]["text"])]:
            return [event if at == index else {**event, "index": at}]
        out: list[dict] = []
        self._send(index, state, out)
        return self._cut(out)

    @property
    def failed(self) -> bool:
        """A streamed call was abandoned: the stream ended with ``abandoned_error()`` and nothing more goes out."""
        return self._failed

    def close(self) -> list:
        """End a stream that stopped before its ``message_delta``: the held tails, then the calls."""
        if not self.has_tools or self._ended or self._failed:
            return []
        if self._moves is not None:
            self._ended = True
            return self._cut(self._flush_streamed())
        return self._end()

    def _cut(self, out: list) -> list:
        """``out`` up to the error event, if the events made by the call that gave it abandoned a streamed call."""
        if not self._failed:
            return out
        return out[: next(i for i, e in enumerate(out) if e.get("type") == "error") + 1]

    def _cut_last(self) -> None:
        """The output was cut by ``max_tokens``: the last block, if it is text and was flushed at its
        ``content_block_stop`` (not knowing the cut), keeps none of the calls its end gave (``TextPart.cut``); one
        not stopped yet is flushed as cut by ``_end``."""
        part = self._blocks.get(self._last)
        if part is not None and part.done:
            part.cut()
        self._max_tokens = True

    def _end(self) -> list:
        """The held tails of open text blocks, then the recovered calls' blocks."""
        self._ended = True
        out = []
        for index, part in sorted(self._blocks.items()):
            if not part.done:
                tail = part.flush(self._max_tokens and index == self._last)
                if tail:
                    out.append(_text_delta(index, tail))
        for call in self._gated_calls(self._blocks):
            self._last += 1
            block = tool_use_block(call)
            out += [
                {"type": "content_block_start", "index": self._last, "content_block": {**block, "input": {}}},
                {
                    "type": "content_block_delta",
                    "index": self._last,
                    "delta": {"type": "input_json_delta", "partial_json": call.arguments},
                },
                {"type": "content_block_stop", "index": self._last},
            ]
        return out

    # -- stream_arguments -----------------------------------------------------------------------------

    def _streamed(self, event: dict, kind, index) -> list:
        """``push`` with ``stream_arguments``: calls go out in their place (see the class doc)."""
        assert self._moves is not None
        if kind in ("message_delta", "message_stop"):
            self._ended = True
            if _max_tokens(event):
                part = self._blocks.get(max(self._moves)) if self._moves else None
                if part is not None and part.done and part.cut() and self.recovered:
                    # its end (content_block_stop, before the cut was known) sent calls whole or ended: they
                    # cannot be taken back, so the answer is withdrawn as for an abandoned call
                    self.abandoned += 1
                    self._failed = True
                    return [abandoned_error()]
                self._max_tokens = True
            tails = self._flush_streamed()
            delta = event.get("delta")
            # a call only abandoned (started, never ended) does not make the stop a tool_use
            if kind == "message_delta" and self.recovered and _tool_use_may_replace(delta):
                event = {**event, "delta": {**delta, "stop_reason": "tool_use"}}
            return [*tails, event]
        if type(index) is not int:
            return [event]
        if kind == "content_block_start":
            moved = self._moves[index] = index + self._inserted
            self._last = max(self._last, moved)
            block = event.get("content_block")
            new = event if moved == index else {**event, "index": moved}
            if not isinstance(block, dict):
                return [new]
            if block.get("type") == "tool_use":
                self._structured.add(index)
            elif block.get("type") == "text" and isinstance(block.get("text"), str) and index not in self._blocks:
                created = self._blocks[index] = TextPart(self.options)
                self._open[index] = moved
                if block["text"]:  # its text goes out as deltas, calls in their place
                    started = [{**new, "content_block": {**block, "text": ""}}]
                    self._send(index, self._steps(created, block["text"]), started)
                    return started
            return [new]
        part = self._blocks.get(index)
        if part is None:  # another block's event
            moved = self._moves.get(index, index + self._inserted)
            return [event if moved == index else {**event, "index": moved}]
        out: list[dict] = []
        if kind == "content_block_stop":
            if not part.done:
                self._send(index, self._steps(part, None), out)
            at = self._open[index]
            if at is not None:
                out.append(event if at == index else {**event, "index": at})
            return out
        delta = event.get("delta")
        if (
            kind == "content_block_delta"
            and not part.done
            and isinstance(delta, dict)
            and delta.get("type") == "text_delta"
            and isinstance(delta.get("text"), str)
        ):
            steps = self._steps(part, delta["text"])
            at = self._open[index]
            if at is not None and steps == [("text", delta["text"])]:
                return [event if at == index else {**event, "index": at}]
            self._send(index, steps, out)
            return out
        at = self._open[index]
        if at is None:  # other content (citations …) after a call: in a text block of its own
            at = self._reopen(index, out)
        out.append(event if at == index else {**event, "index": at})
        return out

    def _send(self, index: int, steps: list, out: list) -> None:
        """The events of ``steps`` (``EventMachine._steps``) of text block ``index``: text in its open block (a
        new one after a call), a call after the block, which is stopped first. A streamed call's pieces go out
        while they keep its input a prefix of strict JSON (``_JsonPrefix``); the rest, if it ends, when it ends."""
        for step in steps:
            kind = step[0]
            if kind == "text":
                at = self._open[index]
                if at is None:
                    at = self._reopen(index, out)
                out.append(_text_delta(at, step[1]))
            elif kind == "piece":
                assert self._tool is not None
                at, reader, sent = self._tool
                good = step[1][: reader.take(step[1])]
                if good:
                    sent.append(good)
                    out.append(_json_delta(at, good))
            elif kind == "abandon":
                # the anthropic SDK reads the input of a tool_use block at every delta, partially (a cut value
                # dropped, a cut number kept): no input sent can be taken back, so the stream fails here
                self._tool = None
                self._failed = True
                out.append(abandoned_error())
                return
            elif kind == "end":
                assert self._tool is not None
                at, reader, sent = self._tool
                self._tool = None
                rest = step[1].arguments[len("".join(sent)) :]
                if rest:
                    out.append(_json_delta(at, rest))
                out.append({"type": "content_block_stop", "index": at})
            else:  # a call starts, or comes whole: the text block so far is stopped
                at = self._open[index]
                if at is not None:
                    out.append({"type": "content_block_stop", "index": at})
                    self._open[index] = None
                self._last += 1
                self._inserted += 1
                if kind == "call":
                    block = tool_use_block(step[1])
                    out += [
                        {"type": "content_block_start", "index": self._last, "content_block": {**block, "input": {}}},
                        _json_delta(self._last, step[1].arguments),
                        {"type": "content_block_stop", "index": self._last},
                    ]
                else:
                    block = {"type": "tool_use", "id": fresh_id("toolu_"), "name": step[2], "input": {}}
                    self._tool = (self._last, _JsonPrefix(), [])
                    out.append({"type": "content_block_start", "index": self._last, "content_block": block})

    def _reopen(self, index: int, out: list) -> int:
        """A new text block for what text block ``index`` says after a call, after the last block sent; its index."""
        self._last += 1
        self._inserted += 1
        self._open[index] = self._last
        out.append({"type": "content_block_start", "index": self._last, "content_block": {"type": "text", "text": ""}})
        return self._last

    def _flush_streamed(self) -> list:
        """The end of the message: every text block not stopped yet is flushed (its tail, its calls; the last
        block as cut when the message said ``max_tokens``)."""
        out: list[dict] = []
        last = max(self._moves) if self._moves else None
        for index, part in sorted(self._blocks.items()):
            if not part.done:
                self._send(index, self._steps(part, None, self._max_tokens and index == last), out)
        return out


def _text_delta(index: int, text: str) -> dict:
    return {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}


def _json_delta(index: int, partial_json: str) -> dict:
    return {
        "type": "content_block_delta",
        "index": index,
        "delta": {"type": "input_json_delta", "partial_json": partial_json},
    }


_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_STRING_STOP = re.compile(r'["\\\x00-\x1f]')  # where a string's plain run of characters stops
_LITERALS = {"t": "rue", "f": "alse", "n": "ull"}
_HEX = frozenset("0123456789abcdefABCDEF")


class _JsonPrefix:
    """Reads a text in pieces: how much of each keeps all read a prefix of one strict JSON object (RFC 8259: no
    ``NaN``, trailing comma or single quote; a surrogate escape paired), what a client's partial JSON reader
    (the anthropic SDK's, at every ``input_json_delta``) takes. After a character that is not, nothing is."""

    __slots__ = ("stack", "state", "token", "key", "high")

    def __init__(self) -> None:
        self.stack: list[str] = []  # the open containers' closers
        self.state = "start"
        self.token = ""  # a number or the rest of a literal; a \\u escape's hex digits
        self.key = False  # the string read is a key
        self.high = False  # a high surrogate escape was read: its low one must follow

    def take(self, piece: str) -> int:
        """Read ``piece``: the length of its prefix that keeps all read a prefix of a JSON object."""
        i = 0
        while i < len(piece):
            if self.state == "string" and not self.high:
                stop = _STRING_STOP.search(piece, i)
                if stop is None:
                    break
                i = stop.start()
            if not self._char(piece[i]):
                self.state = "broken"
                return i
            i += 1
        return len(piece)

    def _char(self, c: str) -> bool:
        state = self.state
        if state == "string":
            if self.high:
                if c != "\\":
                    return False
            elif c == '"':
                self.state = "colon" if self.key else "after"
                return True
            self.state = "escape" if c == "\\" else "string"
            return c == "\\"  # (any other character of a string was read by take)
        if state == "escape":
            if c == "u":
                self.state, self.token = "hex", ""
                return True
            self.state = "string"
            return not self.high and c in '"\\/bfnrt'
        if state == "hex":
            if c not in _HEX:
                return False
            self.token += c
            if len(self.token) == 4:
                code = int(self.token, 16)
                low = 0xDC00 <= code <= 0xDFFF
                if low != self.high:
                    return False
                self.high = 0xD800 <= code <= 0xDBFF
                self.state = "string"
            return True
        if state == "number":
            if c in "0123456789+-.eE":
                self.token += c
                return bool(_NUMBER.fullmatch(self.token) or _NUMBER.fullmatch(self.token + "0"))
            if not _NUMBER.fullmatch(self.token):
                return False
            self.state = "after"
            return self._char(c)
        if state == "literal":
            if c != self.token[0]:
                return False
            self.token = self.token[1:]
            if not self.token:
                self.state = "after"
            return True
        if c in " \t\n\r":
            return state != "broken"
        if state == "start":
            return self._open(c) if c == "{" else False
        if state in ("value", "first_value"):
            if c == "]" and state == "first_value":
                return self._close(c)
            return self._value(c)
        if state in ("key", "first_key"):
            if c == "}" and state == "first_key":
                return self._close(c)
            if c != '"':
                return False
            self.state, self.key = "string", True
            return True
        if state == "colon":
            if c != ":":
                return False
            self.state = "value"
            return True
        if state == "after":
            if c == ",":
                self.state = "key" if self.stack[-1] == "}" else "value"
                return True
            return self._close(c)
        return False  # the object has ended, or the text broke earlier

    def _value(self, c: str) -> bool:
        if c == '"':
            self.state, self.key = "string", False
        elif c in "{[":
            return self._open(c)
        elif c == "-" or "0" <= c <= "9":
            self.state, self.token = "number", c
        elif c in _LITERALS:
            self.state, self.token = "literal", _LITERALS[c]
        else:
            return False
        return True

    def _open(self, c: str) -> bool:
        self.stack.append("}" if c == "{" else "]")
        self.state = "first_key" if c == "{" else "first_value"
        return True

    def _close(self, c: str) -> bool:
        if not self.stack or c != self.stack[-1]:
            return False
        self.stack.pop()
        self.state = "after" if self.stack else "end"
        return True


class MessagesSSERecovery(EventRecovery):
    """A streamed Messages answer's raw SSE bytes, in any splits: ``feed(bytes) -> bytes``, ``close()``,
    ``incomplete``, ``recovered``, ``abandoned`` (as ``SSERecovery``). Each complete event goes through a
    ``MessagesRecovery``; those it leaves alone go out byte for byte; new and rewritten events are
    ``event: TYPE`` + one compact ``data:`` line. ``max_event`` as ``SSERecovery``'s."""

    def __init__(self, *, native: bool, has_tools: bool, max_event: int = MAX_EVENT, **options) -> None:
        self.events = MessagesRecovery(native=native, has_tools=has_tools, **options)
        super().__init__(self.events, max_event=max_event)


def recover_messages_sse(
    chunks: Iterable, *, native: bool, has_tools: bool, max_event: int = MAX_EVENT, **options
) -> Iterator[bytes]:
    """The recovered bytes of an iterable of upstream byte chunks (empty results skipped)."""
    return drive_sse(MessagesSSERecovery(native=native, has_tools=has_tools, max_event=max_event, **options), chunks)


def arecover_messages_sse(
    chunks: AsyncIterable, *, native: bool, has_tools: bool, max_event: int = MAX_EVENT, **options
) -> AsyncIterator[bytes]:
    """``recover_messages_sse`` over an async iterable."""
    return adrive_sse(MessagesSSERecovery(native=native, has_tools=has_tools, max_event=max_event, **options), chunks)


#: the Messages API as ``_apis`` and the proxy know it (a raw body's error answer is left as it is)
SPEC = ApiSpec(
    answer="message",
    entries="content",
    text="text",
    calls=frozenset({"tool_use"}),
    convert_tools=convert_tools,
    recover=_recover_answer,
    recover_bytes=recover_message_bytes,
    sse=MessagesSSERecovery,
)
