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
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator

from ._apis import (
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


def recover_message(message: dict, *, native: bool, has_tools: bool, **options) -> dict:
    """Recover text tool calls in a Messages API ``message`` (see the module doc).

    Every ``text`` block's ``text`` becomes what a stream of it shows (``MessagesRecovery``: markup removed,
    the whitespace around it kept); recovered calls are appended to ``content`` as ``tool_use`` blocks and
    ``stop_reason`` becomes ``"tool_use"``. ``usage`` and every other field stay. The input is never
    mutated; the very same object comes back when nothing changes (always with ``has_tools=False``).
    ``options`` are ``parse``'s, ``tools`` in the Messages shape (or ``options=`` an ``Options``).
    """
    content, opts = answer_entries(message, "message", "content", native, has_tools, options, convert_tools)
    if content is None:
        return message
    calls: list[ToolCall] = []
    new_content = scrub_parts(content, "text", opts, calls)
    structured = sum(1 for block in content if block.get("type") == "tool_use")
    if not should_recover(native, True, structured):
        calls = []
    if new_content is None and not calls:
        return message
    new = {**message, "content": (new_content or list(content)) + [tool_use_block(call) for call in calls]}
    if calls:
        new["stop_reason"] = "tool_use"
    return new


def recover_message_bytes(body, *, native: bool, has_tools: bool, **options):
    """``recover_message`` on a raw JSON body: ``body`` itself (the very same object) when nothing changes,
    when it is not a message (an error body …) or, without ``tools``, when ``may_contain_markup`` says no;
    otherwise compact UTF-8 JSON bytes."""
    return recover_bytes(body, native, has_tools, options, convert_tools, _recover_answer)


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

    Every other event, and every event that needs no change, comes back as the very same object
    (``[event]``); with ``has_tools=False`` all do. ``close()`` ends a stream that stopped before its
    ``message_delta``: held tails, then the calls. Inputs are never mutated.
    """

    def __init__(self, *, native: bool, has_tools: bool, **options) -> None:
        super().__init__(native, has_tools, options, convert_tools)  # its indexes: content block indexes
        self._blocks: dict[int, TextPart] = {}  # text blocks by index

    def push(self, event: dict) -> list:
        """Take the next event; return the events to send in its place (maybe none)."""
        if not isinstance(event, dict):
            raise TypeError(f"an event must be a dict, not {type(event).__name__}")
        if not self.has_tools or self._ended:
            return [event]
        kind = event.get("type")
        index = event.get("index")
        if kind in ("message_delta", "message_stop"):
            before = self._end()
            if not before and not self.recovered:
                return [event]
            delta = event.get("delta")
            if kind == "message_delta" and self.recovered and isinstance(delta, dict):
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

    def close(self) -> list:
        """End a stream that stopped before its ``message_delta``: the held tails, then the calls."""
        if not self.has_tools or self._ended:
            return []
        return self._end()

    def _end(self) -> list:
        """The held tails of open text blocks, then the recovered calls' blocks."""
        self._ended = True
        out = []
        for index, part in sorted(self._blocks.items()):
            if not part.done:
                tail = part.flush()
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


def _text_delta(index: int, text: str) -> dict:
    return {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}


class MessagesSSERecovery(EventRecovery):
    """A streamed Messages answer's raw SSE bytes, in any splits: ``feed(bytes) -> bytes``, ``close()``,
    ``incomplete``, ``recovered`` (as ``SSERecovery``). Each complete event goes through a
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
