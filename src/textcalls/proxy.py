"""``textcalls proxy``: an OpenAI-compatible reverse proxy that recovers text tool calls.

``POST /v1/chat/completions`` whose request offers ``tools`` is recovered: streamed answers
through ``SSERecovery`` as they arrive, others through ``recover_response_bytes``, with the
request's tools given to the scrubbers (values typed by their schemas; a call of a tool the
request did not offer stays text). Every other request, and every answer that is not a 200
in plain JSON or SSE, is relayed as it is. Needs aiohttp (``pip install 'textcalls[proxy]'``),
imported only when a proxy is built.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import time
from urllib.parse import urlsplit

from . import _scan
from .openai import should_recover
from .responses_bytes import recover_response_bytes
from .sse import SSERecovery

__all__ = ["CHAT_PATH", "MAX_REQUEST", "MAX_RESPONSE", "check_upstream", "create_app", "run", "start"]

log = logging.getLogger("textcalls.proxy")

CHAT_PATH = "/v1/chat/completions"
#: Cap, in bytes, on a request body the proxy reads (chat completions); over it the client gets 413.
MAX_REQUEST = 64 << 20
#: Cap, in bytes, on a non-streamed answer held to recover it; a larger one is relayed as it is.
MAX_RESPONSE = 64 << 20
#: Headers that describe one connection, never forwarded (RFC 9110 7.6.1), plus proxy-connection.
HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection",
     "te", "trailer", "transfer-encoding", "upgrade"}
)
# Not forwarded upstream either: aiohttp writes Host for the upstream; Expect was answered here.
_REQUEST_DROP = HOP_BY_HOP | {"host", "expect"}

# Headers aiohttp would add to the upstream request when the client did not send them.
_NO_AUTO_HEADERS = ("Accept", "Accept-Encoding", "Content-Type", "User-Agent")


def _aiohttp():
    try:
        import aiohttp
        from aiohttp import web
    except ImportError:
        raise ImportError("the textcalls proxy needs aiohttp: pip install 'textcalls[proxy]'") from None
    return aiohttp, web


def check_upstream(url) -> str:
    """The upstream base URL without a trailing slash; ValueError unless ``http(s)://host[:port][/path]``."""
    if not isinstance(url, str):
        raise TypeError(f"upstream must be a str, not {type(url).__name__}")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as e:
        raise ValueError(f"upstream {url!r} is not a valid URL: {e}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ValueError(f"upstream must be an http(s) URL like http://127.0.0.1:8000, not {url!r}")
    return url.rstrip("/")


def _forwarded(headers, drop) -> list:
    """The (name, value) pairs of ``headers`` except ``drop`` and those ``Connection`` names."""
    listed = {token.strip().lower() for value in headers.getall("Connection", ()) for token in value.split(",")}
    return [(k, v) for k, v in headers.items() if k.lower() not in drop and k.lower() not in listed]


def _offered_tools(body: bytes) -> list | None:
    """The non-empty ``tools`` list of a JSON request, else None."""
    try:
        request = json.loads(body)
    except (ValueError, RecursionError):
        return None
    tools = request.get("tools") if isinstance(request, dict) else None
    return tools if isinstance(tools, list) and tools else None


def _options(tools: list) -> dict:
    """Scrubber options for a request offering ``tools``: the tools themselves, so that values are
    typed by their schemas and calls of tools not offered stay text, unless the scrubber cannot
    read them (tools that are not all functions): then none."""
    try:
        _scan.impl.StreamScrubber(tools=tools)
    except (TypeError, ValueError):
        return {}
    return {"tools": tools}


class _Proxy:
    """The handler and the upstream session of one app."""

    def __init__(self, upstream: str, native: bool) -> None:
        self.aiohttp, self.web = _aiohttp()
        self.upstream = upstream
        self.native = native
        self.session = None
        self.sending: dict = {}  # id(request) -> the status its response started with (for the log line)

    async def session_context(self, app):
        aiohttp = self.aiohttp
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30)
        async with aiohttp.ClientSession(auto_decompress=False, timeout=timeout) as self.session:
            yield

    async def handle(self, request):
        """Relay one request, recovering where it applies; log one line about it."""
        started = time.perf_counter()
        status, how = "-", "failed"
        try:
            response, how = await self._handle(request)
            status = response.status
            return response
        except self.web.HTTPException as e:  # e.g. 413 from reading an oversized body
            status, how = e.status, e.reason
            raise
        except asyncio.CancelledError:
            status, how = self.sending.get(id(request), "-"), "client gone"
            raise
        finally:
            self.sending.pop(id(request), None)
            log.info("%s %s %s %s %.1fms", request.method, request.path_qs, status, how,
                     (time.perf_counter() - started) * 1000)

    async def _handle(self, request) -> tuple:
        from multidict import CIMultiDict
        from yarl import URL

        headers = CIMultiDict(_forwarded(request.headers, _REQUEST_DROP))
        tools = None
        if request.method == "POST" and request.path == CHAT_PATH:
            data = await request.read()  # over MAX_REQUEST aiohttp answers 413
            tools = _offered_tools(data)
            if tools is not None:
                headers["Accept-Encoding"] = "identity"  # the answer must be readable to recover it
        else:
            data = request.content if request.body_exists else None
        try:
            async with self.session.request(
                request.method, URL(self.upstream + request.raw_path, encoded=True), headers=headers,
                data=data, allow_redirects=False, skip_auto_headers=_NO_AUTO_HEADERS,
            ) as upstream:
                return await self._relay(request, upstream, tools)
        except (self.aiohttp.ClientError, asyncio.TimeoutError, OSError) as e:
            # Only raised before an answer was started: _pump handles everything after.
            message = f"upstream unreachable: {e or type(e).__name__}"
            body = {"error": {"message": message, "type": "bad_gateway", "param": None, "code": 502}}
            return self.web.json_response(body, status=502), "bad gateway"

    async def _relay(self, request, upstream, tools: list | None) -> tuple:
        """Send the upstream answer on (recovered when ``tools`` were offered); return the response
        and how it went."""
        from multidict import CIMultiDict

        web = self.web
        headers = CIMultiDict(_forwarded(upstream.headers, HOP_BY_HOP))
        content_type = upstream.headers.get("Content-Type", "").lower()
        plain = upstream.headers.get("Content-Encoding", "identity").lower() in ("", "identity")
        recover = tools is not None and plain and upstream.status == 200
        if recover and content_type.startswith("text/event-stream"):
            headers.popall("Content-Length", None)
            recovery = SSERecovery(native=self.native, has_tools=True, **_options(tools))
            response = web.StreamResponse(status=200, headers=headers)
            how = await self._pump(request, response, upstream, [], recovery.feed, recovery.close)
            return response, f"sse recovered={recovery.recovered}{how}"
        if recover and "json" in content_type:
            held, size = [], 0
            while size <= MAX_RESPONSE:
                data = await upstream.content.readany()
                if not data:
                    body = b"".join(held)
                    new = recover_response_bytes(body, native=self.native, has_tools=True, **_options(tools))
                    if new is body:
                        return web.Response(status=200, headers=headers, body=body), "json unchanged"
                    headers.popall("Content-Length", None)
                    return web.Response(status=200, headers=headers, body=new), "json recovered"
                held.append(data)
                size += len(data)
            response = web.StreamResponse(status=200, headers=headers)
            return response, "json too large, relayed" + await self._pump(request, response, upstream, held)
        response = web.StreamResponse(status=upstream.status, reason=upstream.reason, headers=headers)
        return response, "relayed" + await self._pump(request, response, upstream, [])

    async def _pump(self, request, response, upstream, held: list, feed=None, close=None) -> str:
        """Send ``held`` and the rest of the upstream body (through ``feed``/``close``) to the client.

        Returns "" or why it stopped early: the client left, or the upstream broke off (the client
        connection is then closed, so the client sees a truncated answer, not a complete one).
        """
        try:
            self.sending[id(request)] = response.status
            await response.prepare(request)
            for data in held:
                await response.write(data)
            while True:
                try:
                    data = await upstream.content.readany()
                except (self.aiohttp.ClientError, asyncio.TimeoutError) as e:
                    log.warning("%s %s: upstream broke off: %s", request.method, request.path_qs,
                                e or type(e).__name__)
                    if request.transport is not None:
                        request.transport.close()
                    return ", upstream broke off"
                if not data:
                    break
                if feed is not None:
                    data = feed(data)
                if data:
                    await response.write(data)
            if close is not None:
                data = close()
                if data:
                    await response.write(data)
            await response.write_eof()
        except ConnectionResetError:
            return ", client gone"
        return ""


def create_app(upstream: str, *, native: bool = True):
    """An ``aiohttp.web.Application`` proxying to ``upstream`` (see the module docstring).

    Serve it with ``handler_cancellation=True`` (as ``start`` does) so that a client that
    disconnects cancels its upstream request at once.
    """
    upstream = check_upstream(upstream)
    should_recover(native, True, 0)  # type-checks native
    proxy = _Proxy(upstream, native)
    app = proxy.web.Application(client_max_size=MAX_REQUEST)
    app.cleanup_ctx.append(proxy.session_context)
    app.router.add_route("*", "/{tail:.*}", proxy.handle)
    return app


async def start(upstream: str, *, host: str = "127.0.0.1", port: int = 8787, native: bool = True):
    """Start a proxy; return its ``aiohttp.web.AppRunner`` (``addresses``; ``await cleanup()`` stops it)."""
    web = _aiohttp()[1]
    runner = web.AppRunner(create_app(upstream, native=native), handler_cancellation=True, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except BaseException:
        await runner.cleanup()
        raise
    return runner


def run(upstream: str, *, host: str = "127.0.0.1", port: int = 8787, native: bool = True) -> None:
    """Serve until SIGTERM (then return) or Ctrl-C (KeyboardInterrupt propagates)."""
    asyncio.run(_serve(upstream, host, port, native))


async def _serve(upstream: str, host: str, port: int, native: bool) -> None:
    runner = await start(upstream, host=host, port=port, native=native)
    try:
        if urlsplit(upstream).path.endswith("/v1"):
            log.warning("the upstream URL ends with /v1 and request paths (/v1/...) are appended to it: "
                        "give the server's root unless it really serves /v1/v1/...")
        for address in runner.addresses:
            host, port = address[:2]
            shown = f"[{host}]" if ":" in host else host
            log.info("textcalls proxy on http://%s:%d -> %s (%s, %s scanner)", shown, port, upstream,
                     "native" if native else "prompt-guided", _scan.IMPLEMENTATION)
        stop = asyncio.Event()
        with contextlib.suppress(NotImplementedError):  # no signal handlers in Windows event loops
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await stop.wait()
        log.info("textcalls proxy stopping (SIGTERM)")
    finally:
        await runner.cleanup()
