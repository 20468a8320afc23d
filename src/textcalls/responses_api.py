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

With ``stream_arguments=True`` a stream sends each call in its place instead, its arguments in pieces as the
model writes them (``ResponsesRecovery``); a whole response takes the option and is recovered as without it.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import TypeGuard

from ._apis import (
    ApiSpec,
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


def _cut(response) -> bool:
    """Whether a Responses ``response`` was cut by ``max_output_tokens`` (``status: "incomplete"``)."""
    details = response.get("incomplete_details") if isinstance(response, dict) else None
    return isinstance(details, dict) and details.get("reason") == "max_output_tokens"


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
    ``parse``'s, ``tools`` in the Responses shape (or ``options=`` an ``Options``, its tools chat-shaped);
    ``stream_arguments`` changes nothing here.
    """
    output, opts = answer_entries(response, SPEC, native, has_tools, options)
    if output is None:
        return response
    new_output = None
    calls: list[ToolCall] = []
    structured = 0
    # the output was cut by max_output_tokens: its last item, if a message, never ended
    last = len(output) - 1 if _cut(response) else -1
    for i, item in enumerate(output):
        kind = item.get("type")
        if kind in CALL_ITEMS:
            structured += 1
        content = item.get("content")
        if kind != "message" or not isinstance(content, list):
            continue
        new_content = scrub_parts(content, SPEC.text, opts, calls, i == last)
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
    return recover_bytes(body, SPEC, native, has_tools, options)


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

    With ``stream_arguments=True`` each call goes out in its place instead, as the model writes it. When a
    call starts (and the gate allows, with the structured calls seen so far: a call written before the
    response's structured call goes out), the message item it is written in is done as it stands (its open
    part's ``output_text.done`` and ``content_part.done``, then ``output_item.done``), and the call follows as
    a ``function_call`` item of its own: added ``in_progress`` with ``arguments`` ``""``, a
    ``response.function_call_arguments.delta`` per piece, ``function_call_arguments.done``, done. A call
    without events (an array of calls, a pythonic or Gemma call) comes whole in its place. Text after it goes on
    in a new message item (a fresh ``msg_`` id, its parts numbered from 0) that the upstream's done events for
    the item close; text an upstream delta brings after a call it also starts is placed as ``_steps`` says.
    Every later upstream ``output_index`` is moved past the items inserted. A call abandoned after its start
    (``StreamScrubber.take_events``) is done with the arguments sent and ``status`` ``"incomplete"``, and
    what its block gives without the option follows (the call whole, nothing, or its text), so the text is
    the option off's; ``abandoned`` counts them. The final ``response.output`` holds the items as they went
    out.

    Every other event, and every event that needs no change, comes back as the very same object
    (``[event]``); with ``has_tools=False`` all do. ``close()`` ends a stream that stopped before its
    final event: held tails, then the calls. Inputs are never mutated.
    """

    def __init__(self, *, native: bool, has_tools: bool, **options) -> None:
        super().__init__(native, has_tools, options, SPEC)  # its indexes: output_index
        self._parts: dict[tuple[int, int], TextPart] = {}
        self._shift = 0  # added to the upstream's sequence numbers
        self._seq: int | None = None  # the last sequence number sent
        # stream_arguments: upstream message items by output_index, the upstream index -> the one sent, and
        # how many items were inserted (calls, the messages that go on after them); _last: the highest sent
        self._messages: dict[int, _Message] | None = {} if self.options.stream_arguments else None
        self._moves: dict[int, int] = {}
        self._inserted = 0
        self._call: tuple[dict, int, list[str]] | None = None  # the call streaming: its item, index, pieces

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
        elif self._messages is not None:
            new = self._streamed(event, kind, before)
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
            if self._messages is not None:
                self._flush_streamed(out)
            else:
                self._flush_all(out)
                for item in self._call_items():
                    self._last += 1
                    out += self._call_events(item, self._last)
            self._ended = True
        for event in out:
            if self._seq is not None:
                self._seq += 1
                event["sequence_number"] = self._seq
        return out

    # -- the screen (EventRecovery): text deltas not decoded ------------------------------------------

    def text_delta(self, event: dict) -> tuple | None:
        """``((output_index, content_index, item_id), delta, sequence_number or None)`` of an ``output_text.delta``
        event (``item_id`` a tuple: empty without one), else None."""
        if event.get("type") != "response.output_text.delta":
            return None
        at, ci, delta = event.get("output_index"), event.get("content_index"), event.get("delta")
        if not (_is_index(at) and _is_index(ci) and isinstance(delta, str)):
            return None
        seq = event.get("sequence_number")
        item = (event["item_id"],) if "item_id" in event else ()
        return (at, ci, item), delta, seq if _is_index(seq) else None

    def with_text(self, event: dict, text: str, seq: int | None) -> dict:
        return {**event, "delta": text} if seq is None else {**event, "delta": text, "sequence_number": seq}

    def screened(self, slot: tuple, text: str, seq: int | None):
        """``push`` of an ``output_text.delta`` of part ``slot`` (see ``Machine.screened``)."""
        if self._ended or not self.has_tools:
            return None
        at, ci, item = slot
        part = self._parts.get((at, ci))
        if part is None or part.done:
            return None
        if self._messages is None:
            shown = part.feed(text)
            if shown == text and not self._shift:  # as _number sends an unchanged event
                if seq is not None:
                    self._seq = seq
                return True
            return shown
        m = self._messages.get(at)  # stream_arguments: as _streamed
        if m is None:
            return None
        steps = self._steps(part, text)
        if m.at is None or steps != [("text", text)]:
            return ("send", steps)
        m.texts[ci] = m.texts.get(ci, "") + text
        # as it came: _moved and _number leave it so
        if m.at == at and not m.base and (not item or item[0] == m.id) and not self._shift:
            if seq is not None:
                self._seq = seq
            return True
        return ("moved",)

    def unscreened(self, event: dict, state) -> list:
        if self._messages is None:
            new = event if state == event["delta"] else {**event, "delta": state} if state else None
            return self._number(event, [], new)
        m = self._messages[event["output_index"]]
        if state[0] == "moved":
            return self._number(event, [], self._moved(m, event))
        before: list[dict] = []
        self._send(m, event["content_index"], state[1], before)
        return self._number(event, before, None)

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
        response = event.get("response")
        key = self._cut_part(response)
        if key is not None:
            # cut: the last text part's end never came. Flushed already (its done events came first, before the
            # cut was known): the calls its end gave are dropped; else it is flushed as cut
            part = self._parts[key]
            if part.done:
                part.cut()
            else:
                self._flush(key[0], key[1], part, before, truncated=True)
        self._flush_all(before)
        output = response.get("output") if isinstance(response, dict) else None
        if isinstance(output, list):
            for i, item in enumerate(output):
                if isinstance(item, dict) and item.get("type") in CALL_ITEMS:
                    self._structured.add(i)
            self._last = max(self._last, len(output) - 1)
        items = self._call_items()
        for item in items:
            self._last += 1
            before += self._call_events(item, self._last)
        if not isinstance(output, list):
            return event
        new_output = [self._texts(item, i) if isinstance(item, dict) else item for i, item in enumerate(output)]
        if items or any(a is not b for a, b in zip(new_output, output, strict=True)):
            done = [{**item, "status": "completed"} for item in items]
            assert isinstance(response, dict)
            return {**event, "response": {**response, "output": new_output + done}}
        return event

    # -- helpers ------------------------------------------------------------------------------------

    def _flush(self, output_index, content_index, part: TextPart, before: list, truncated: bool = False) -> None:
        """End a part (``truncated``: cut by ``max_output_tokens``): its held tail goes out as one more delta."""
        if part.done:
            return
        tail = part.flush(truncated)
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

    @staticmethod
    def _call_events(item: dict, index: int) -> list:
        """A whole call's events: its item (``in_progress``) added at ``index``, its arguments in one delta, done."""
        arguments = item["arguments"]
        ref = {"item_id": item["id"], "output_index": index}
        return [
            {"type": "response.output_item.added", "output_index": index, "item": {**item, "arguments": ""}},
            {"type": "response.function_call_arguments.delta", **ref, "delta": arguments},
            {"type": "response.function_call_arguments.done", **ref, "arguments": arguments},
            {"type": "response.output_item.done", "output_index": index, "item": {**item, "status": "completed"}},
        ]

    # -- stream_arguments -----------------------------------------------------------------------------

    def _streamed(self, event: dict, kind, before: list) -> dict | None:
        """``push`` with ``stream_arguments`` (calls go out in their place: see the class doc): ``before`` gets
        the events to send first; returns the event to send then (``event`` itself when unchanged; None: none)."""
        if kind in _FINAL:
            return self._streamed_final(event, before)
        at = event.get("output_index")
        if not _is_index(at):
            return event
        assert self._messages is not None
        if kind == "response.output_item.added":
            moved = self._moves[at] = at + self._inserted
            self._last = max(self._last, moved)
            item = event.get("item")
            if isinstance(item, dict) and item.get("type") in CALL_ITEMS:
                self._structured.add(at)
            elif isinstance(item, dict) and item.get("type") == "message":
                self._messages[at] = _Message(item, moved)
            return event if moved == at else {**event, "output_index": moved}
        m = self._messages.get(at)
        if m is None and kind == "response.output_text.delta":  # a message never added: read all the same
            moved = self._moves.setdefault(at, at + self._inserted)
            self._last = max(self._last, moved)
            m = self._messages[at] = _Message(_message_item(event.get("item_id")), moved)
        if m is None:  # another item's event
            moved = self._moves.get(at, at + self._inserted)
            return event if moved == at else {**event, "output_index": moved}
        ci = event.get("content_index")
        if kind == "response.output_item.done":
            for (index, c), held in sorted(self._parts.items()):
                if index == at and not held.done:
                    self._send(m, c, self._steps(held, None), before)
            item = event.get("item")
            if m.at is None:
                return None  # a call or nothing came last: its segments are done
            if not m.out:  # never split: its texts, as without the option
                new_item = self._texts(item, at) if isinstance(item, dict) else item
                return self._moved(m, event if new_item is item else {**event, "item": new_item})
            segment = self._segment(m, item if isinstance(item, dict) else m.item)
            m.out.append(segment)
            new = {**event, "output_index": m.at, "item": segment}
            m.at = None
            return new
        if not _is_index(ci):
            return event if m.at is None else self._moved(m, event)
        if kind == "response.output_text.delta":
            part = self._part(event, create=True)
            delta = event.get("delta")
            if part is None or part.done or not isinstance(delta, str):
                return event if m.at is None else self._moved(m, event)
            steps = self._steps(part, delta)
            if m.at is not None and steps == [("text", delta)]:
                m.texts[ci] = m.texts.get(ci, "") + delta
                return self._moved(m, event)
            self._send(m, ci, steps, before)
            return None
        if kind in ("response.output_text.done", "response.content_part.done"):
            part = self._part(event)
            if part is not None and not part.done:
                self._send(m, ci, self._steps(part, None), before)
            if m.at is None or ci < m.base:
                return None  # its segment has ended: its done events went out then
            m.closed.add(ci)
            text = m.texts.get(ci)  # (None: a part never fed, as it came)
            body = event.get("part")
            new = event
            if kind == "response.output_text.done" and text is not None and event.get("text") != text:
                new = {**event, "text": text}
            elif isinstance(body, dict) and body.get("type") == "output_text":
                if text is not None and body.get("text") != text:
                    new = {**event, "part": {**body, "text": text}}
                m.parts[ci] = new["part"]
            return self._moved(m, new)
        if m.at is None:  # content after a call (a part, annotations …): in a message item of its own
            self._reopen(m, ci, before, with_part=False)
        if kind != "response.content_part.added":
            return self._moved(m, event)
        body = event.get("part")
        if not isinstance(body, dict):
            return self._moved(m, event)
        added = body.get("text") if body.get("type") == "output_text" else None
        if not isinstance(added, str) or not added:
            m.parts[ci] = body
            return self._moved(m, event)
        m.parts[ci] = {**body, "text": ""}  # its text goes out as deltas, calls in their place
        before.append(self._moved(m, {**event, "part": m.parts[ci]}))
        part = self._part(event, create=True)
        assert part is not None
        self._send(m, ci, self._steps(part, added), before)
        return None

    @staticmethod
    def _moved(m: _Message, event: dict) -> dict:
        """``event`` of ``m``'s open segment with its output_index, item_id and content_index as sent."""
        assert m.at is not None
        new = event
        if event.get("output_index") != m.at:
            new = {**new, "output_index": m.at}
        if "item_id" in event and event["item_id"] != m.id:
            new = {**new, "item_id": m.id}
        ci = event.get("content_index")
        if m.base and _is_index(ci):
            new = {**new, "content_index": ci - m.base}
        return new

    def _send(self, m: _Message, ci: int, steps: list, out: list) -> None:
        """The events of ``steps`` (``EventMachine._steps``) of ``m``'s part ``ci``: text in its open segment (a
        new one after a call), a call after the segment, which is closed first."""
        for step in steps:
            kind = step[0]
            if kind == "text":
                at = self._reopen(m, ci, out, with_part=True) if m.at is None else m.at
                m.texts[ci] = m.texts.get(ci, "") + step[1]
                out.append(_text_delta(m.id, at, ci - m.base, step[1]))
            elif kind == "piece":
                assert self._call is not None
                item, index, pieces = self._call
                pieces.append(step[1])
                ref = {"item_id": item["id"], "output_index": index}
                out.append({"type": "response.function_call_arguments.delta", **ref, "delta": step[1]})
            elif kind in ("end", "abandon"):
                assert self._call is not None
                item, index, pieces = self._call
                self._call = None
                arguments = "".join(pieces)
                done = {**item, "arguments": arguments, "status": "completed" if kind == "end" else "incomplete"}
                m.out.append(done)
                ref = {"item_id": item["id"], "output_index": index}
                out += [
                    {"type": "response.function_call_arguments.done", **ref, "arguments": arguments},
                    {"type": "response.output_item.done", "output_index": index, "item": done},
                ]
            else:  # a call starts, or comes whole: the segment so far is done
                if m.at is not None:
                    self._close(m, out)
                self._last += 1
                self._inserted += 1
                if kind == "call":
                    events = self._call_events(function_call_item(step[1], status="in_progress"), self._last)
                    m.out.append(events[-1]["item"])
                    out += events
                else:
                    item = {
                        "id": fresh_id("fc_"),
                        "type": "function_call",
                        "status": "in_progress",
                        "arguments": "",
                        "call_id": step[1],
                        "name": step[2],
                    }
                    self._call = (item, self._last, [])
                    out.append({"type": "response.output_item.added", "output_index": self._last, "item": item})

    def _close(self, m: _Message, out: list) -> None:
        """End ``m``'s open segment as it stands: its parts' done events (those not sent yet), its item's."""
        assert m.at is not None
        for ci in sorted(m.parts.keys() | m.texts.keys()):
            if ci < m.base or ci in m.closed:
                continue
            ref = {"item_id": m.id, "output_index": m.at, "content_index": ci - m.base}
            part = m.parts.get(ci, _EMPTY_TEXT)
            if part.get("type") == "output_text":
                text = m.texts.get(ci, "")
                out.append({"type": "response.output_text.done", **ref, "text": text, "logprobs": []})
                part = m.parts[ci] = {**part, "text": text}
            out.append({"type": "response.content_part.done", **ref, "part": part})
        segment = self._segment(m, {**m.item, "status": "completed"})
        m.out.append(segment)
        out.append({"type": "response.output_item.done", "output_index": m.at, "item": segment})
        m.at = None

    def _reopen(self, m: _Message, ci: int, out: list, *, with_part: bool) -> int:
        """Open a new segment of ``m`` from its part ``ci``: a message item added after the last one sent (and a
        first, empty, ``output_text`` part); its output_index."""
        self._last += 1
        self._inserted += 1
        m.at, m.id, m.base = self._last, fresh_id("msg_"), ci
        m.parts, m.texts, m.closed = {}, {}, set()
        item = {**m.item, "id": m.id, "status": "in_progress", "content": []}
        out.append({"type": "response.output_item.added", "output_index": m.at, "item": item})
        if with_part:
            m.parts[ci] = dict(_EMPTY_TEXT)
            ref = {"item_id": m.id, "output_index": m.at, "content_index": 0}
            out.append({"type": "response.content_part.added", **ref, "part": dict(_EMPTY_TEXT)})
        return self._last

    @staticmethod
    def _segment(m: _Message, item: dict) -> dict:
        """``item`` (``m``'s, as done upstream or as added) as ``m``'s open segment: its id and the parts from
        the segment's first, each ``output_text`` with the text the segment sent."""
        content = item.get("content")
        bodies = dict(enumerate(content)) if isinstance(content, list) else {}
        parts = []
        for ci in sorted(bodies.keys() | m.parts.keys() | m.texts.keys()):
            if ci < m.base:
                continue
            body = bodies.get(ci, m.parts.get(ci, _EMPTY_TEXT))
            if isinstance(body, dict) and body.get("type") == "output_text" and ci in m.texts:
                body = {**body, "text": m.texts[ci]}
            parts.append(body)
        return {**item, "id": m.id, "content": parts}

    def _flush_streamed(self, out: list, cut: tuple | None = None) -> None:
        """Flush every part not flushed yet, in order (the end of the response; ``cut``: the part the output
        was cut at the end of, ``_cut_part``)."""
        assert self._messages is not None
        for (at, ci), part in sorted(self._parts.items()):
            if not part.done:
                self._send(self._messages[at], ci, self._steps(part, None, (at, ci) == cut), out)

    def _cut_part(self, response) -> tuple | None:
        """The key of the text part a final ``response`` cut by ``max_output_tokens`` ends with (the last part
        of its last output item, by upstream index), or None (not cut, or its last item is no text of ours)."""
        if not _cut(response) or not self._parts:
            return None
        key = max(self._parts)
        output = response.get("output")
        return key if not isinstance(output, list) or key[0] == len(output) - 1 else None

    def _streamed_final(self, event: dict, before: list) -> dict:
        """``response.completed`` (…) with ``stream_arguments``: held tails and calls first; the ``output`` as
        sent (split messages replaced by the items they became). Cut by ``max_output_tokens``: the last part,
        not flushed yet, is flushed as cut; flushed already (before the cut was known), the calls its end gave
        went out completed and cannot be taken back: in the final ``output`` their items are ``incomplete``,
        the API's own mark of an unfinished item (counted in ``abandoned``)."""
        self._ended = True
        response = event.get("response")
        key = self._cut_part(response)
        late: set = set()
        if key is not None and self._parts[key].done:
            late = {call.id for call in self._parts[key].cut()}
            self.abandoned += len(late)
        self._flush_streamed(before, key)
        output = response.get("output") if isinstance(response, dict) else None
        if not isinstance(output, list):
            return event
        assert self._messages is not None
        new_output: list = []
        for i, item in enumerate(output):
            m = self._messages.get(i)
            if m is not None and m.out:
                new_output += m.out
                if m.at is not None and isinstance(item, dict):
                    new_output.append(self._segment(m, item))
            else:
                new_output.append(self._texts(item, i) if isinstance(item, dict) else item)
        if late:
            new_output = [
                {**item, "status": "incomplete"}
                if isinstance(item, dict) and item.get("type") in CALL_ITEMS and item.get("call_id") in late
                else item
                for item in new_output
            ]
        if len(new_output) == len(output) and all(a is b for a, b in zip(new_output, output, strict=True)):
            return event
        assert isinstance(response, dict)
        return {**event, "response": {**response, "output": new_output}}

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


#: An empty ``output_text`` part, as a message item's part is added.
_EMPTY_TEXT = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}


def _message_item(item_id: object) -> dict:
    """A message item as added, for one whose ``output_item.added`` never came."""
    return {"id": item_id, "type": "message", "status": "in_progress", "role": "assistant", "content": []}


def _text_delta(item_id: object, output_index: int, content_index: int, text: str) -> dict:
    ref = {"item_id": item_id, "output_index": output_index, "content_index": content_index}
    return {"type": "response.output_text.delta", **ref, "delta": text, "logprobs": []}


class _Message:
    """``stream_arguments``: an upstream ``message`` item, which calls sent in its place split into segments,
    each a message item of its own. The open segment: its output_index as sent (None while a call or nothing
    follows the last one), id (the upstream's, then fresh ``msg_`` ones), first part's upstream content_index,
    parts and texts sent by upstream content_index, parts whose done events went out; and the items, done,
    that it became before it (segments, calls), none while it was never split."""

    __slots__ = ("item", "at", "id", "base", "parts", "texts", "closed", "out")

    def __init__(self, item: dict, at: int) -> None:
        self.item = item
        self.at: int | None = at
        self.id = item.get("id")
        self.base = 0
        self.parts: dict[int, dict] = {}
        self.texts: dict[int, str] = {}
        self.closed: set[int] = set()
        self.out: list[dict] = []


class ResponsesSSERecovery(EventRecovery):
    """A streamed Responses answer's raw SSE bytes, in any splits: ``feed(bytes) -> bytes``, ``close()``,
    ``incomplete``, ``recovered``, ``abandoned`` (as ``SSERecovery``). Each complete event goes through a
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


#: the Responses API as ``_apis`` and the proxy know it
SPEC = ApiSpec(
    answer="response",
    entries="output",
    text="output_text",
    calls=CALL_ITEMS,
    convert_tools=convert_tools,
    recover=recover_responses,
    recover_bytes=recover_responses_bytes,
    sse=ResponsesSSERecovery,
)
