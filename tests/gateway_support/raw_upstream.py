"""A raw-socket stub upstream (asyncio streams, loopback only) for the proxy fault tests.

It reads each request itself and answers with exactly what the test's ``script`` writes: any framing,
a body cut anywhere, a stall, a close (FIN) or a reset (RST). It records the requests it read in full,
and counts connections (total, open now, most open at once) and requests in progress.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct


def chunk(delta: dict, finish=None) -> dict:
    return {
        "id": "chatcmpl-raw",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "raw",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def event(delta: dict, finish=None) -> bytes:
    """One ``data:`` event of a ``chat.completion.chunk`` (compact JSON, LF line endings)."""
    return b"data: " + json.dumps(chunk(delta, finish), separators=(",", ":")).encode() + b"\n\n"


def content(text: str) -> bytes:
    return event({"content": text})


def head(status: int = 200, headers: dict | None = None) -> bytes:
    lines = [f"HTTP/1.1 {status} {'OK' if status == 200 else 'Status'}"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def reset(writer) -> None:
    """Abort the connection with a TCP RST (SO_LINGER 0), not a FIN."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def answer(
    writer,
    pieces: list,
    *,
    framing: str,
    cut: bool = False,
    end: str = "keep",
    content_type: str = "text/event-stream",
    status: int = 200,
    pause: float = 0.0,
) -> bool:
    """Write a response whose body is ``pieces`` (one write each, ``pause`` seconds apart).

    ``framing``: ``"chunked"``, ``"length"`` (Content-Length) or ``"close"`` (no length: the close ends
    it). ``cut``: the body is incomplete (no last chunk; a Content-Length 100 bytes larger than sent;
    for ``"close"``, whatever ``pieces`` end with). ``end``: ``"keep"`` (the connection stays open for the
    next request; a complete chunked or Content-Length body only), ``"close"`` (FIN) or ``"reset"`` (RST,
    a moment after the bytes, so the proxy has read them). Returns whether the connection stays open.
    """
    body = b"".join(pieces)
    headers = {"Content-Type": content_type}
    if framing == "chunked":
        headers["Transfer-Encoding"] = "chunked"
    elif framing == "length":
        headers["Content-Length"] = str(len(body) + (100 if cut else 0))
    else:
        assert framing == "close" and end != "keep"
        headers["Connection"] = "close"
    writer.write(head(status, headers))
    for piece in pieces:
        writer.write(b"%x\r\n%s\r\n" % (len(piece), piece) if framing == "chunked" else piece)
        await writer.drain()
        if pause:
            await asyncio.sleep(pause)
    if framing == "chunked" and not cut:
        writer.write(b"0\r\n\r\n")
    await writer.drain()
    if end == "keep":
        assert not cut
        return True
    if end == "reset":
        await asyncio.sleep(0.1)
        reset(writer)
    else:
        writer.close()
    return False


async def _read_request(reader):
    """(method, target, headers with lower-case names, body), or None at a clean end of the connection."""
    try:
        data = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    line, *fields = data[:-4].decode("latin-1").split("\r\n")
    method, target, _ = line.split(" ", 2)
    headers = {}
    for field in fields:
        name, _, value = field.partition(":")
        headers[name.strip().lower()] = value.strip()
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        parts = []
        for _ in range(100_000):
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            parts.append(await reader.readexactly(size + 2))
            if size == 0:
                break
        body = b"".join(p[:-2] for p in parts)
    else:
        body = b""
    return method, target, headers, body


class RawUpstream:
    """``await start()`` on the loop; ``url``; ``script`` is ``async (request, reader, writer) -> keep open``."""

    def __init__(self, script=None) -> None:
        self.script = script
        self.requests: list = []  # requests read in full, in order
        self.connections = 0  # connections accepted
        self.open = 0  # connections open now
        self.max_open = 0
        self.busy = 0  # requests being answered now
        self.max_busy = 0
        self.server = None
        self.url = None
        self._tasks: set = set()

    async def start(self) -> RawUpstream:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        host, port = self.server.sockets[0].getsockname()[:2]
        self.url = f"http://{host}:{port}"
        return self

    async def stop(self) -> None:
        self.server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.server.wait_closed()

    async def _serve(self, reader, writer) -> None:
        task = asyncio.current_task()
        self._tasks.add(task)
        self.connections += 1
        self.open += 1
        self.max_open = max(self.max_open, self.open)
        try:
            for _ in range(1000):  # requests on one connection
                request = await _read_request(reader)
                if request is None:
                    break
                self.requests.append(request)
                self.busy += 1
                self.max_busy = max(self.max_busy, self.busy)
                try:
                    keep = await self.script(request, reader, writer)
                finally:
                    self.busy -= 1
                if not keep:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            self.open -= 1
            self._tasks.discard(task)
            if not writer.is_closing():
                writer.close()
