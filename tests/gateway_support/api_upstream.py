"""A stub upstream for the Responses API (``POST /v1/responses``) and the Anthropic Messages API
(``POST /v1/messages``), aiohttp on loopback, and the event sequences it sends.

The events follow the shapes of the ``openai`` SDK's ``openai.types.responses`` (``ResponseCreatedEvent`` …
``ResponseCompletedEvent``, each with ``sequence_number``) and the ``anthropic`` SDK's raw stream events
(``message_start``, ``content_block_start``/``delta``/``stop``, ``ping``, ``message_delta``, ``message_stop``),
each written as ``event: TYPE`` then one ``data:`` line. The request's ``model`` names the text (``SCRIPTS``
of ``upstream``; ``native`` adds a structured call after a Hermes text); ``x_seed`` cuts the text into random
deltas and the bytes into random splits. The exact bytes of every answer are recorded in ``sent``.
"""

from __future__ import annotations

import json
import random

from aiohttp import web
from multidict import CIMultiDict

from .upstream import HERMES, SCRIPTS, cut, split_points

#: The structured call the ``native`` model makes after its text.
NATIVE_NAME, NATIVE_ARGUMENTS = "lookup", '{"q": "native"}'
USAGE_RESPONSES = {
    "input_tokens": 10,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 20,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 30,
}


def sse(events: list) -> bytes:
    return b"".join(
        b"event: " + e["type"].encode() + b"\ndata: " + json.dumps(e, ensure_ascii=False).encode() + b"\n\n"
        for e in events
    )


# -- Responses --------------------------------------------------------------------------------------


def _response(model: str, status: str, output: list, usage) -> dict:
    return {
        "id": "resp_stub",
        "object": "response",
        "created_at": 1700000000,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "user": None,
        "metadata": {},
    }


def _output(text: str, native: bool) -> list:
    part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    out = [{"id": "msg_stub", "type": "message", "status": "completed", "role": "assistant", "content": [part]}]
    if native:
        out.append(_native_item("completed", NATIVE_ARGUMENTS))
    return out


def _native_item(status: str, arguments: str) -> dict:
    return {
        "id": "fc_native0",
        "type": "function_call",
        "status": status,
        "arguments": arguments,
        "call_id": "call_native0",
        "name": NATIVE_NAME,
    }


def response_body(model: str, text: str, *, native: bool = False) -> dict:
    """The non-streamed ``response`` object."""
    return _response(model, "completed", _output(text, native), USAGE_RESPONSES)


def response_events(model: str, pieces: list, *, native: bool = False) -> list:
    """The events of a streamed response whose message text comes in ``pieces``."""
    text = "".join(pieces)
    ref = {"item_id": "msg_stub", "output_index": 0, "content_index": 0}
    empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
    events = [
        {"type": "response.created", "response": _response(model, "in_progress", [], None)},
        {"type": "response.in_progress", "response": _response(model, "in_progress", [], None)},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"id": "msg_stub", "type": "message", "status": "in_progress", "role": "assistant", "content": []},
        },
        {"type": "response.content_part.added", **ref, "part": empty},
    ]
    events += [{"type": "response.output_text.delta", **ref, "delta": p, "logprobs": []} for p in pieces]
    events += [
        {"type": "response.output_text.done", **ref, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **ref, "part": {**empty, "text": text}},
        {"type": "response.output_item.done", "output_index": 0, "item": _output(text, False)[0]},
    ]
    if native:
        call = {"item_id": "fc_native0", "output_index": 1}
        events += [
            {"type": "response.output_item.added", "output_index": 1, "item": _native_item("in_progress", "")},
            {"type": "response.function_call_arguments.delta", **call, "delta": NATIVE_ARGUMENTS},
            {"type": "response.function_call_arguments.done", **call, "arguments": NATIVE_ARGUMENTS},
            {
                "type": "response.output_item.done",
                "output_index": 1,
                "item": _native_item("completed", NATIVE_ARGUMENTS),
            },
        ]
    final = _response(model, "completed", _output(text, native), USAGE_RESPONSES)
    events.append({"type": "response.completed", "response": final})
    return [{"type": e["type"], "sequence_number": n, **e} for n, e in enumerate(events)]


# -- Messages ---------------------------------------------------------------------------------------


def message_body(model: str, text: str, *, native: bool = False) -> dict:
    """The non-streamed ``message``."""
    content: list = [{"type": "text", "text": text}]
    if native:
        content.append(
            {"type": "tool_use", "id": "toolu_native0", "name": NATIVE_NAME, "input": json.loads(NATIVE_ARGUMENTS)}
        )
    return {
        "id": "msg_stub",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if native else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 20},
    }


def message_events(model: str, pieces: list, *, native: bool = False) -> list:
    """The events of a streamed message whose text block comes in ``pieces``."""
    start = {**message_body(model, "", native=False), "content": [], "stop_reason": None}
    start["usage"] = {"input_tokens": 10, "output_tokens": 1}
    events = [
        {"type": "message_start", "message": start},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "ping"},
    ]
    events += [{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}} for p in pieces]
    events.append({"type": "content_block_stop", "index": 0})
    if native:
        block = {"type": "tool_use", "id": "toolu_native0", "name": NATIVE_NAME, "input": {}}
        events += [
            {"type": "content_block_start", "index": 1, "content_block": block},
            {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}},
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": NATIVE_ARGUMENTS},
            },
            {"type": "content_block_stop", "index": 1},
        ]
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use" if native else "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 20},
        },
        {"type": "message_stop"},
    ]
    return events


class ApiUpstream:
    """The stub's app and what it saw: ``requests`` (method, path, headers, body), ``sent`` (answer bytes)."""

    def __init__(self):
        self.requests: list = []
        self.sent: list = []
        self.app = web.Application()
        self.app.router.add_post("/v1/responses", self.responses)
        self.app.router.add_post("/v1/messages", self.messages)

    async def _answer(self, request, build_body, build_events):
        body = await request.read()
        self.requests.append((request.method, request.path_qs, CIMultiDict(request.headers), body))
        req = json.loads(body)
        model = req["model"]
        native = model == "native"
        text = HERMES if native else SCRIPTS[model]
        rng = random.Random(req["x_seed"]) if "x_seed" in req else None
        if not req.get("stream"):
            data = json.dumps(build_body(model, text, native=native), ensure_ascii=False).encode()
            self.sent.append(data)
            return web.Response(body=data, content_type="application/json", headers={"X-Upstream-Trace": "t-json"})
        data = sse(build_events(model, cut(text, rng), native=native))
        self.sent.append(data)
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Upstream-Trace": "t-sse"}
        )
        await response.prepare(request)
        for piece in split_points(data, rng):
            await response.write(piece)
        await response.write_eof()
        return response

    async def responses(self, request):
        return await self._answer(request, response_body, response_events)

    async def messages(self, request):
        return await self._answer(request, message_body, message_events)
