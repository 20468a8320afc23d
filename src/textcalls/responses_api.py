"""Recover text tool calls in OpenAI Responses API answers (``POST /v1/responses``): a whole ``response``
object (``recover_responses``, ``recover_responses_bytes``), its stream of events as dicts
(``ResponsesRecovery``) or as raw SSE bytes (``ResponsesSSERecovery``).

Each ``output_text`` part of a ``message`` item is scrubbed by its own scrubber; the calls recovered from
every part are appended, in order, as ``function_call`` items after the response's last output item, when
``should_recover(native, has_tools, function calls in the response)`` allows (structured calls are its
``function_call`` and ``custom_tool_call`` items). The text is scrubbed whatever the gate says: a stream
cannot take back text it has sent, and a whole response is scrubbed alike so that both give the same result.
``tools`` is the request's ``tools`` in the Responses shape (``{"type": "function", "name", "parameters"}``);
its function tools are the ones offered (``responses_tools``), the other kinds left out.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import TypeGuard

from ._apis import (
    EventMachine,
    EventRecovery,
    TextPart,
    adrive_sse,
    answer_entries,
    check_tools,
    drive_sse,
    fresh_id,
    function_tools,
    recover_bytes,
    scrub_parts,
)
from .openai import should_recover
from .sse import MAX_EVENT
from .toolcall import ToolCall

__all__ = [
    "ResponsesRecovery",
    "ResponsesSSERecovery",
    "arecover_responses_sse",
    "function_call_item",
    "recover_responses",
    "recover_responses_bytes",
    "recover_responses_sse",
    "responses_tools",
]

#: Output items that are structured calls, for the gate.
CALL_ITEMS = frozenset({"function_call", "custom_tool_call"})
#: The events that end a response, carrying the whole ``response``.
_FINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})


def convert_tools(tools) -> tuple:
    """``(chat-shaped function tools, None)`` for a Responses ``tools`` list, or ``(None, why)``.

    A function tool is ``{"type": "function", "name": non-empty str, "parameters": object or absent}``;
    another well-formed tool (an object whose string ``type`` is not ``"function"``: ``web_search``,
    ``custom``, ``mcp`` …) is left out, so a call naming it stays text."""
    return function_tools(tools, nested=False)


def responses_tools(tools) -> list:
    """The function tools of a Responses ``tools`` list as chat ``tools`` (what ``tools=`` of the other
    helpers takes); TypeError (not a list) or ValueError (a malformed entry) naming what is wrong."""
    return check_tools(tools, convert_tools)


def function_call_item(call: ToolCall, *, status: str = "completed") -> dict:
    """The ``function_call`` output item of a recovered call: a fresh ``fc_…`` id, ``call_id`` the call's id."""
    return {
        "id": fresh_id("fc_"),
        "type": "function_call",
        "status": status,
        "arguments": call.arguments,
        "call_id": call.id,
        "name": call.name,
    }


def recover_responses(response: dict, *, native: bool, has_tools: bool, **options) -> dict:
    """Recover text tool calls in a Responses API ``response`` object (see the module doc).

    Every ``output_text`` part's ``text`` becomes what a stream of it shows (``ResponsesRecovery``: markup
    removed, the whitespace around it kept); recovered calls are appended to ``output`` as completed
    ``function_call`` items. ``usage``, ``status`` and every other field stay. The input is never mutated;
    the very same object comes back when nothing changes (always with ``has_tools=False``). ``options`` are
    ``parse``'s, ``tools`` in the Responses shape (or ``options=`` an ``Options``, its tools chat-shaped).
    """
    output, opts = answer_entries(response, "response", "output", native, has_tools, options, convert_tools)
    if output is None:
        return response
    new_output = None
    calls: list[ToolCall] = []
    structured = 0
    for i, item in enumerate(output):
        kind = item.get("type")
        if kind in CALL_ITEMS:
            structured += 1
        content = item.get("content")
        if kind != "message" or not isinstance(content, list):
            continue
        new_content = scrub_parts(content, "output_text", opts, calls)
        if new_content is not None:
            if new_output is None:
                new_output = list(output)
            new_output[i] = {**item, "content": new_content}
    if not should_recover(native, True, structured):
        calls = []
    if new_output is None and not calls:
        return response
    return {**response, "output": (new_output or list(output)) + [function_call_item(call) for call in calls]}


def recover_responses_bytes(body, *, native: bool, has_tools: bool, **options):
    """``recover_responses`` on a raw JSON body: ``body`` itself (the very same object) when nothing changes,
    when it is not a response object (an error body …) or, without ``tools``, when ``may_contain_markup``
    says no; otherwise compact UTF-8 JSON bytes."""
    return recover_bytes(body, native, has_tools, options, convert_tools, recover_responses)


class ResponsesRecovery(EventMachine):
    """Push the events of a streamed Responses answer (dicts) one at a time; get back the events to send.

    - ``response.output_text.delta``: the delta is scrubbed by its part's scrubber (one per
      ``output_index``, ``content_index``); a delta left empty is dropped. A ``response.content_part.added``
      whose part carries text has it scrubbed too.
    - ``response.output_text.done``: the part's held tail goes first, as one more delta; the event's
      ``text``, and then that part's text in ``response.content_part.done`` and ``response.output_item.done``,
      are the text sent (the deltas joined). A part that ends without its ``done`` events is flushed at the
      ``output_item.done`` of its item or at the end of the response.
    - ``response.completed`` (or ``incomplete``, ``failed``): if the gate allows, each recovered call
      goes first as a ``function_call`` item: ``response.output_item.added`` (``status`` ``in_progress``,
      ``arguments`` ``""``), one ``response.function_call_arguments.delta`` with the whole arguments,
      ``response.function_call_arguments.done``, ``response.output_item.done``; ``output_index`` continues
      after the last one of the response. The final ``response.output`` holds the sent texts and, after
      the upstream items, the recovered ones (``usage`` as sent).
    - ``sequence_number``: every event sent after an inserted or dropped one is renumbered, so the numbers
      stay consecutive as the upstream's were.

    Every other event, and every event that needs no change, comes back as the very same object
    (``[event]``); with ``has_tools=False`` all do. ``close()`` ends a stream that stopped before its
    final event: held tails, then the calls. Inputs are never mutated.
    """

    def __init__(self, *, native: bool, has_tools: bool, **options) -> None:
        super().__init__(native, has_tools, options, convert_tools)  # its indexes: output_index
        self._parts: dict[tuple[int, int], TextPart] = {}
        self._shift = 0  # added to the upstream's sequence numbers
        self._seq: int | None = None  # the last sequence number sent

    def push(self, event: dict) -> list:
        """Take the next event; return the events to send in its place (maybe none)."""
        if not isinstance(event, dict):
            raise TypeError(f"an event must be a dict, not {type(event).__name__}")
        if not self.has_tools:
            return [event]
        kind = event.get("type")
        before: list[dict] = []
        new: dict | None = event
        if self._ended:
            pass
        elif kind == "response.output_text.delta":
            part = self._part(event, create=True)
            delta = event.get("delta")
            if part is not None and not part.done and isinstance(delta, str):
                shown = part.feed(delta)
                if shown != delta:
                    new = {**event, "delta": shown} if shown else None
        elif kind == "response.output_text.done":
            part = self._part(event)
            if part is not None:
                self._flush(event.get("output_index"), event.get("content_index"), part, before)
                if event.get("text") != part.text:
                    new = {**event, "text": part.text}
        elif kind in ("response.content_part.added", "response.content_part.done"):
            new = self._content_part(event, kind == "response.content_part.added", before)
        elif kind in ("response.output_item.added", "response.output_item.done"):
            new = self._item_event(event, kind == "response.output_item.done", before)
        elif kind in _FINAL:
            new = self._final(event, before)
        return self._number(event, before, new)

    def close(self) -> list:
        """End a stream that stopped before its final event: the held tails, then the recovered calls."""
        out: list[dict] = []
        if self.has_tools and not self._ended:
            self._flush_all(out)
            for item in self._call_items():
                out += self._call_events(item)
            self._ended = True
        for event in out:
            if self._seq is not None:
                self._seq += 1
                event["sequence_number"] = self._seq
        return out

    # -- events -------------------------------------------------------------------------------------

    def _part(self, event: dict, create: bool = False) -> TextPart | None:
        """The scrubber of the text part an event names (None when it names none)."""
        at, ci = event.get("output_index"), event.get("content_index")
        if not (_is_index(at) and _is_index(ci)):
            return None
        part = self._parts.get((at, ci))
        if part is None and create:
            part = self._parts[at, ci] = TextPart(self.options, event.get("item_id"))
            self._last = max(self._last, at)
        return part

    def _content_part(self, event: dict, added: bool, before: list) -> dict | None:
        body = event.get("part")
        if not isinstance(body, dict) or body.get("type") != "output_text" or not isinstance(body.get("text"), str):
            return event
        part = self._part(event, create=added)
        if part is None:
            return event
        if added:
            if part.done or not body["text"]:
                return event
            shown = part.feed(body["text"])
        else:
            self._flush(event["output_index"], event["content_index"], part, before)
            shown = part.text
        return event if shown == body["text"] else {**event, "part": {**body, "text": shown}}

    def _item_event(self, event: dict, done: bool, before: list) -> dict:
        index = event.get("output_index")
        item = event.get("item")
        if not _is_index(index) or not isinstance(item, dict):
            return event
        self._last = max(self._last, index)
        if item.get("type") in CALL_ITEMS:
            self._structured.add(index)
        if not done or item.get("type") != "message":
            return event
        for (at, ci), part in sorted(self._parts.items()):
            if at == index:
                self._flush(at, ci, part, before)
        new_item = self._texts(item, index)
        return event if new_item is item else {**event, "item": new_item}

    def _final(self, event: dict, before: list) -> dict:
        self._ended = True
        self._flush_all(before)
        response = event.get("response")
        output = response.get("output") if isinstance(response, dict) else None
        if isinstance(output, list):
            for i, item in enumerate(output):
                if isinstance(item, dict) and item.get("type") in CALL_ITEMS:
                    self._structured.add(i)
            self._last = max(self._last, len(output) - 1)
        items = self._call_items()
        for item in items:
            before += self._call_events(item)
        if not isinstance(output, list):
            return event
        new_output = [self._texts(item, i) if isinstance(item, dict) else item for i, item in enumerate(output)]
        if items or any(a is not b for a, b in zip(new_output, output, strict=True)):
            done = [{**item, "status": "completed"} for item in items]
            assert isinstance(response, dict)
            return {**event, "response": {**response, "output": new_output + done}}
        return event

    # -- helpers ------------------------------------------------------------------------------------

    def _flush(self, output_index, content_index, part: TextPart, before: list) -> None:
        """End a part: its held tail goes out as one more delta."""
        if part.done:
            return
        tail = part.flush()
        if tail:
            before.append(
                {
                    "type": "response.output_text.delta",
                    "item_id": part.item_id,
                    "output_index": output_index,
                    "content_index": content_index,
                    "delta": tail,
                    "logprobs": [],
                }
            )

    def _flush_all(self, before: list) -> None:
        for (at, ci), part in sorted(self._parts.items()):
            self._flush(at, ci, part, before)

    def _texts(self, item: dict, index: int) -> dict:
        """A message item with the sent text of each of its scrubbed parts (the same object if none differs)."""
        content = item.get("content")
        if item.get("type") != "message" or not isinstance(content, list):
            return item
        new = None
        for ci, body in enumerate(content):
            part = self._parts.get((index, ci))
            if part is not None and isinstance(body, dict) and body.get("text") != part.text:
                if new is None:
                    new = list(content)
                new[ci] = {**body, "text": part.text}
        return item if new is None else {**item, "content": new}

    def _call_items(self) -> list:
        """The in-progress ``function_call`` items of the recovered calls the gate lets through."""
        return [function_call_item(call, status="in_progress") for call in self._gated_calls(self._parts)]

    def _call_events(self, item: dict) -> list:
        self._last += 1
        index = self._last
        arguments = item["arguments"]
        ref = {"item_id": item["id"], "output_index": index}
        return [
            {"type": "response.output_item.added", "output_index": index, "item": {**item, "arguments": ""}},
            {"type": "response.function_call_arguments.delta", **ref, "delta": arguments},
            {"type": "response.function_call_arguments.done", **ref, "arguments": arguments},
            {"type": "response.output_item.done", "output_index": index, "item": {**item, "status": "completed"}},
        ]

    def _number(self, event: dict, before: list, new: dict | None) -> list:
        """``before`` and ``new`` (None: dropped) with their sequence numbers; ``[event]`` if nothing changed."""
        seq = event.get("sequence_number")
        if not _is_index(seq):
            seq = None
        if not before and new is event and not self._shift:
            if seq is not None:
                self._seq = seq
            return [event]
        at = seq + self._shift if seq is not None else None if self._seq is None else self._seq + 1
        for inserted in before:
            if at is not None:
                inserted["sequence_number"] = self._seq = at
                at += 1
                if seq is not None:
                    self._shift += 1
        if seq is not None:
            if new is None:
                self._shift -= 1
            else:
                if self._shift:
                    new = {**new, "sequence_number": seq + self._shift}
                self._seq = seq + self._shift
        return before if new is None else [*before, new]


def _is_index(value) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class ResponsesSSERecovery(EventRecovery):
    """A streamed Responses answer's raw SSE bytes, in any splits: ``feed(bytes) -> bytes``, ``close()``,
    ``incomplete``, ``recovered`` (as ``SSERecovery``). Each complete event goes through a
    ``ResponsesRecovery``; those it leaves alone go out byte for byte; new and rewritten events are
    ``event: TYPE`` + one compact ``data:`` line. ``max_event`` as ``SSERecovery``'s."""

    def __init__(self, *, native: bool, has_tools: bool, max_event: int = MAX_EVENT, **options) -> None:
        self.events = ResponsesRecovery(native=native, has_tools=has_tools, **options)
        super().__init__(self.events, max_event=max_event)


def recover_responses_sse(
    chunks: Iterable, *, native: bool, has_tools: bool, max_event: int = MAX_EVENT, **options
) -> Iterator[bytes]:
    """The recovered bytes of an iterable of upstream byte chunks (empty results skipped)."""
    return drive_sse(ResponsesSSERecovery(native=native, has_tools=has_tools, max_event=max_event, **options), chunks)


def arecover_responses_sse(
    chunks: AsyncIterable, *, native: bool, has_tools: bool, max_event: int = MAX_EVENT, **options
) -> AsyncIterator[bytes]:
    """``recover_responses_sse`` over an async iterable."""
    return adrive_sse(ResponsesSSERecovery(native=native, has_tools=has_tools, max_event=max_event, **options), chunks)
