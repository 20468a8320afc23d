"""A stub OpenAI-compatible upstream (aiohttp, loopback only) and a background event loop to run servers.

``POST /v1/chat/completions`` replays the script named by the request's ``model`` (``SCRIPTS``), streamed
as ``chat.completion.chunk`` events or as one ``chat.completion``. With a ``seed`` the text is cut into
random deltas and the bytes are written in random splits; the exact bytes sent are recorded, with each
request's headers and body. ``GET /v1/models`` answers gzip-compressed when asked; anything else is a 404.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading

from aiohttp import web
from multidict import CIMultiDict

HERMES = (
    'I will check the weather.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": '
    '"celsius"}}\n</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": {"tz": "Europe/Paris"}}\n</tool_call>'
)
DEEPSEEK = (
    "Let me look that up.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"
    '{"city": "Oslo"}\n```<｜tool▁call▁end｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{"tz": "Europe/Oslo"}'
    "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
)
PLAIN = "Paris is sunny today, 24 degrees. Nothing to call <b>here</b>."
#: A Hermes block whose body is cut short: malformed, so it is removed and no call comes of it.
MALFORMED = 'Here it is.<tool_call>{"name": "get_weather", "arguments": {"city": </tool_call> Done.'
#: A Hermes call with long arguments (about 2 K characters): streamed in pieces with stream_arguments.
LONG = (
    "Writing it.\n<tool_call>\n"
    + json.dumps({"name": "write_file", "arguments": {"path": "notes.txt", "content": 'line \\ "q" é\n' * 150}})
    + "\n</tool_call>"
)
#: Outputs cut by max_tokens (finish_reason "length") inside a call's value: `rm -rf /tmp/build` cut after `rm -rf /`.
TRUNCATED = 'Running it.<tool_call>{"name": "run", "arguments": {"command": "rm -rf /'
TRUNCATED_XML = "Running it.\n<tool_call>\n<function=run>\n<parameter=command>\nrm -rf /"
#: Kimi K2 calls whose written ids repeat (issue 28): the second "functions.get_weather:0" gets a fresh id.
KIMI_IDS = (
    "Checking both.<|tool_calls_section_begin|>"
    '<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|>'
    '<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Oslo"}<|tool_call_end|>'
    "<|tool_calls_section_end|>"
)
#: A Hermes call whose value holds a lone surrogate's escape (issue 28): strict parsers refuse it as written.
LONE_SURROGATE = 'Looking.<tool_call>{"name": "get_weather", "arguments": {"city": "Paris \\ud83d"}}</tool_call>'
#: model name -> the assistant text it writes
SCRIPTS = {
    "lone_surrogate": LONE_SURROGATE,
    "kimi_ids": KIMI_IDS,
    "hermes": HERMES,
    "deepseek": DEEPSEEK,
    "plain": PLAIN,
    "malformed": MALFORMED,
    "long": LONG,
    "truncated": TRUNCATED,
    "truncated_xml": TRUNCATED_XML,
}
#: A structured call the "native" model sends, while its text also carries a Hermes block.
NATIVE_CALL = {
    "index": 0,
    "id": "call_native0",
    "type": "function",
    "function": {"name": "lookup", "arguments": '{"q": "native"}'},
}


def _chunk(model, delta, finish=None):
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": model,
        "system_fingerprint": "fp_stub",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def cut(text, rng):
    """``text`` in deltas of 1 to 12 characters (one delta without a seed)."""
    if rng is None:
        return [text]
    out, i = [], 0
    while i < len(text):
        n = rng.randint(1, 12)
        out.append(text[i : i + n])
        i += n
    return out


def _finish(model, structured):
    if model.startswith("truncated"):
        return "length"
    return "tool_calls" if structured else "stop"


def stream_bytes(model, text, rng, *, usage=False, structured=None):
    """The SSE body for ``text``: role chunk, content deltas, finish chunk, usage chunk, [DONE]."""
    chunks = [_chunk(model, {"role": "assistant", "content": ""})]
    if structured is not None:
        chunks.append(_chunk(model, {"tool_calls": [structured]}))
    chunks += [_chunk(model, {"content": piece}) for piece in cut(text, rng)]
    chunks.append(_chunk(model, {}, _finish(model, structured)))
    if usage:
        chunks.append(
            {
                **_chunk(model, {}),
                "choices": [],
                "usage": {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30},
            }
        )
    events = [b"data: " + json.dumps(c, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n" for c in chunks]
    return b"".join(events) + b"data: [DONE]\n\n"


def completion_bytes(model, text, *, structured=None):
    message = {"role": "assistant", "content": text}
    if structured is not None:
        message["tool_calls"] = [{k: v for k, v in structured.items() if k != "index"}]
    body = {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": _finish(model, structured)}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30},
    }
    return json.dumps(body, ensure_ascii=False).encode()


def split_points(data, rng):
    """``data`` in pieces of 1 to 97 bytes (whole without a seed)."""
    if rng is None:
        return [data]
    out, i = [], 0
    while i < len(data):
        n = rng.randint(1, 97)
        out.append(data[i : i + n])
        i += n
    return out


class Upstream:
    """The stub's app and what it saw. Models besides ``SCRIPTS``: ``native`` (a structured call plus a
    Hermes block in its text), ``error`` (400 with a JSON body), ``slow`` (an endless stream, one event
    every 20 ms, at most 500), ``broken`` (cuts the connection after a few events), ``paced``
    (``x_events`` plain events ``x_delay`` seconds apart, not recorded)."""

    def __init__(self):
        self.requests: list = []  # (method, path_qs, headers (case-insensitive), body)
        self.sent: list = []  # the bytes of every chat completion body sent, in order
        self.slow_ended = threading.Event()  # set when a slow stream stopped before its end
        self.app = web.Application()
        self.app.router.add_post("/v1/chat/completions", self.chat)
        self.app.router.add_get("/v1/models", self.models)
        self.app.router.add_route("*", "/{tail:.*}", self.other)

    async def chat(self, request):
        body = await request.read()
        self.requests.append((request.method, request.path_qs, CIMultiDict(request.headers), body))
        req = json.loads(body)
        model = req.get("model")
        rng = random.Random(req["seed"]) if "seed" in req else None
        if model == "error":
            error = {
                "message": "model 'error' is unavailable",
                "type": "invalid_request_error",
                "param": "model",
                "code": None,
            }
            return web.json_response({"error": error}, status=400, headers={"X-Upstream-Trace": "t-400"})
        if model == "slow":
            return await self._slow(request)
        if model == "paced":
            return await self._paced(request, req.get("x_events", 40), req.get("x_delay", 0.0))
        native = model == "native"
        text = HERMES if model in ("native", "broken") else SCRIPTS[model]
        structured = NATIVE_CALL if native else None
        if not req.get("stream"):
            data = completion_bytes(model, text, structured=structured)
            self.sent.append(data)
            return web.Response(body=data, content_type="application/json", headers={"X-Upstream-Trace": "t-json"})
        usage = bool((req.get("stream_options") or {}).get("include_usage"))
        data = stream_bytes(model, text, rng, usage=usage, structured=structured)
        self.sent.append(data)
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Upstream-Trace": "t-sse"}
        )
        await response.prepare(request)
        pieces = split_points(data, rng)
        if model == "broken":
            pieces = pieces[:3]
        for piece in pieces:
            await response.write(piece)
        if model == "broken":
            request.transport.abort()
            return response
        await response.write_eof()
        return response

    async def _slow(self, request):
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        try:
            for i in range(500):
                event = _chunk("slow", {"content": f"word{i} "})
                await response.write(b"data: " + json.dumps(event).encode() + b"\n\n")
                await asyncio.sleep(0.02)
        except (asyncio.CancelledError, ConnectionError):
            self.slow_ended.set()
            raise
        await response.write_eof()
        return response

    async def _paced(self, request, events, delay):
        """``events`` plain content chunks, one write each, ``delay`` seconds apart (the benchmarks)."""
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for i in range(events):
            event = _chunk("paced", {"content": f" word{i}"})
            await response.write(b"data: " + json.dumps(event, separators=(",", ":")).encode() + b"\n\n")
            if delay:
                await asyncio.sleep(delay)
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def models(self, request):
        self.requests.append((request.method, request.path_qs, CIMultiDict(request.headers), b""))
        response = web.json_response(
            {"object": "list", "data": [{"id": "hermes", "object": "model", "created": 0, "owned_by": "stub"}]},
            headers={
                "X-Upstream-Trace": "t-models",
                "Connection": "keep-alive, X-Hop",
                "X-Hop": "upstream's own",
                "Keep-Alive": "timeout=30",
            },
        )
        if "gzip" in request.headers.get("Accept-Encoding", ""):
            response.enable_compression(web.ContentCoding.gzip)
        return response

    async def other(self, request):
        body = await request.read()
        self.requests.append((request.method, request.path_qs, CIMultiDict(request.headers), body))
        return web.json_response({"error": {"message": f"no route {request.path}"}}, status=404)


class LoopThread:
    """An asyncio loop in a daemon thread: ``run(coro)`` waits for a result (bounded), ``close()`` stops it."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="gateway-loop", daemon=True)
        self.thread.start()

    def run(self, coro, timeout=30):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def serve(self, app, *, handler_cancellation=True):
        """Start ``app`` on 127.0.0.1 at a free port; return (runner, base URL)."""

        async def start():
            runner = web.AppRunner(app, handler_cancellation=handler_cancellation, access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            return runner

        runner = self.run(start())
        host, port = runner.addresses[0][:2]
        return runner, f"http://{host}:{port}"

    def close(self, *runners):
        for runner in runners:
            self.run(runner.cleanup())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


async def _serve_forever():
    runner = web.AppRunner(Upstream().app, handler_cancellation=True, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    print(f"http://{host}:{port}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":  # python -m tests.gateway_support.upstream: serve on a free loopback port, print its URL
    asyncio.run(_serve_forever())
