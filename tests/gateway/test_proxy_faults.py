"""The proxy under faults, with raw sockets on both sides (loopback only).

A raw stub upstream (``gateway_support/raw_upstream.py``) writes exactly the bytes, framing and ending
each test scripts; a raw client writes the request bytes itself and reads the proxy's answer, noting
whether it was complete (last chunk, full Content-Length) and whether the proxy closed the connection.
Timeouts are small and every wait is bounded. Tests whose requests reach the scanner take ``impl``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import sys
import threading
import time
from typing import NamedTuple

import pytest

pytest.importorskip("aiohttp", reason="the proxy runs on aiohttp")

from textcalls import proxy
from textcalls.cli import main

from ..gateway_support.raw_upstream import RawUpstream, answer, content, event, head
from ..gateway_support.upstream import LoopThread
from ..waiting import HANG_GUARD, wait_until

WEATHER = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}
TOOLS = [WEATHER, TIME]
ROLE = event({"role": "assistant", "content": ""})
DONE = b"data: [DONE]\n\n"
FINISH = event({}, "stop")
#: Events before a break: plain text, then the start of a possible tag that the scrubber holds.
BEFORE = [ROLE, content("Hello "), content("world. "), content("<tool_")]
#: An event cut in its middle: what an upstream reset leaves.
HALF = content('call>{"name": "get_weather", "arguments": {}}</tool_call>')[:45]
CALL = [content('<tool_call>{"name": "get_weather", '), content('"arguments": {"city": "Paris"}}</tool_call>')]


# --- the raw client --------------------------------------------------------------------------------


class Reply(NamedTuple):
    status: int | None
    headers: dict
    body: bytes  # de-chunked
    complete: bool  # the last chunk or the whole Content-Length arrived
    closed: bool  # the proxy closed the connection


def _parse(buf: bytes, bodiless: bool = False):
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    lines = buf[:end].decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    rest = buf[end + 4 :]
    if bodiless:
        return status, headers, rest, True
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body, pos = [], 0
        while True:
            nl = rest.find(b"\r\n", pos)
            if nl < 0:
                return status, headers, b"".join(body), False
            size = int(rest[pos:nl].split(b";")[0], 16)
            if len(rest) < nl + 2 + size + 2:
                return status, headers, b"".join(body), False
            if size == 0:
                return status, headers, b"".join(body), rest[nl + 2 : nl + 4] == b"\r\n"
            body.append(rest[nl + 2 : nl + 2 + size])
            pos = nl + 2 + size + 2
    if "content-length" in headers:
        n = int(headers["content-length"])
        return status, headers, rest[:n], len(rest) >= n
    return status, headers, rest, False


def read_reply(sock: socket.socket, timeout: float = HANG_GUARD, bodiless: bool = False) -> Reply:
    """Read one answer until it is complete or the proxy closes the connection (failing the test as hung past
    ``timeout`` s); ``bodiless``: the answer to a HEAD."""
    deadline = time.monotonic() + timeout
    buf = b""
    while True:
        parsed = _parse(buf, bodiless)
        if parsed is not None and parsed[3]:
            return Reply(*parsed, closed=False)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            pytest.fail(f"hung: no complete answer and no close in {timeout} s: {buf[:300]!r}")
        sock.settimeout(remaining)
        try:
            data = sock.recv(65536)
        except TimeoutError:
            continue
        except ConnectionResetError:
            data = b""
        if not data:
            break
        buf += data
    parsed = _parse(buf, bodiless)
    if parsed is None:
        return Reply(None, {}, buf, False, True)
    return Reply(*parsed, closed=True)


def send(port: int, data: bytes, timeout: float = HANG_GUARD) -> Reply:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        return read_reply(sock, timeout, bodiless=data.startswith(b"HEAD "))


def http(method: str, target: str, body: bytes | None = None, headers: dict | None = None) -> bytes:
    lines = [f"{method} {target} HTTP/1.1", "Host: proxy.test"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b"")


def chat(tools=TOOLS, stream=True, **extra) -> bytes:
    body = {"model": "raw", "messages": [{"role": "user", "content": "hi"}], "stream": stream, **extra}
    if tools is not None:
        body["tools"] = tools
    return http("POST", "/v1/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"})


def sse(body: bytes):
    """(content, [(name, arguments)], finish_reason) from the complete ``data:`` events of ``body``;
    events that are not chat chunks (or not UTF-8, or not JSON) are skipped."""
    text, calls, finish = "", {}, None
    for raw in body.replace(b"\r\n", b"\n").split(b"\n\n")[:-1]:
        data = b"\n".join(line[5:].lstrip(b" ") for line in raw.split(b"\n") if line.startswith(b"data:"))
        try:
            chunk = json.loads(data)
        except ValueError:
            continue
        if not isinstance(chunk, dict):
            continue
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            text += delta.get("content") or ""
            for tc in delta.get("tool_calls") or []:
                entry = calls.setdefault(tc["index"], ["", ""])
                entry[0] += tc.get("function", {}).get("name") or ""
                entry[1] += tc.get("function", {}).get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    return text, [(n, json.loads(a)) for n, a in (calls[k] for k in sorted(calls))], finish


def error_of(reply: Reply, status: int, kind: str) -> str:
    """Check that ``reply`` is the proxy's JSON error; return its message."""
    assert reply.status == status, reply
    assert reply.headers["content-type"].startswith("application/json")
    error = json.loads(reply.body)["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert (error["type"], error["param"], error["code"]) == (kind, None, status)
    assert isinstance(error["message"], str) and error["message"]
    return error["message"]


def closed_by_peer(sock: socket.socket) -> bool:
    """Whether the proxy's next move on ``sock`` is to close it (``True``), not to send more (``False``); waits
    for that move however long it takes, failing the test as hung only past ``HANG_GUARD``."""
    sock.settimeout(HANG_GUARD)
    try:
        return not sock.recv(65536)
    except ConnectionResetError:
        return True
    except TimeoutError:
        pytest.fail(f"hung: the proxy neither closed the connection nor sent more in {HANG_GUARD} s")


# --- fixtures --------------------------------------------------------------------------------------


class Net:
    """Stub upstreams and proxies on the module's loop; torn down stubs first (a proxy waiting on a
    stub that stalls is then released at once)."""

    def __init__(self, loop):
        self.loop = loop
        self.stubs, self.runners = [], []

    def upstream(self, script) -> RawUpstream:
        stub = self.loop.run(RawUpstream(script).start())
        self.stubs.append(stub)
        return stub

    def proxy(self, upstream_url: str, **options) -> int:
        runner = self.loop.run(proxy.start(upstream_url, host="127.0.0.1", port=0, **options))
        self.runners.append(runner)
        return runner.addresses[0][1]

    def close(self):
        for stub in self.stubs:
            self.loop.run(stub.stop())
        for runner in self.runners:
            self.loop.run(runner.cleanup())


def script_of(pieces, **kw):
    """A stub script answering every request with ``answer(writer, pieces, **kw)``."""

    async def script(request, reader, writer):
        return await answer(writer, pieces, **kw)

    return script


async def never_answer(request, reader, writer):
    await asyncio.sleep(10)  # the stub's teardown cancels it
    return False


# --- request targets -------------------------------------------------------------------------------

BAD_TARGETS = [
    ("GET", "munity://x/v1/models"),  # appended to a port-less upstream: another host
    ("GET", "http://x/"),  # appended to one with a port: a bad port
    ("GET", "http://127.0.0.1:{port}/v1/models"),  # absolute form naming the upstream itself
    ("HEAD", "HTTP://X/v1/models"),
    ("POST", "http://x/v1/chat/completions"),
    ("GET", "//x/v1/models"),
    ("GET", "//127.0.0.1:{port}/v1/models"),
    ("OPTIONS", "*"),
    ("CONNECT", "x:443"),
    ("CONNECT", "127.0.0.1:{port}"),
]


@pytest.mark.parametrize("upstream_kind", ["with a port", "without a port"])
@pytest.mark.parametrize(("method", "target"), BAD_TARGETS)
def test_a_target_that_is_not_a_path_is_a_400_and_never_reaches_the_upstream(net, logs, method, target, upstream_kind):
    stub = net.upstream(script_of([b"{}"], framing="length", content_type="application/json"))
    stub_port = int(stub.url.rsplit(":", 1)[1])
    # Without a port: http://localhost (port 80). Contacting it would be a 502 (or whatever answers
    # there), never this 400; with a port: the stub, which must see no connection at all.
    port = net.proxy(stub.url if upstream_kind == "with a port" else "http://localhost")
    target = target.format(port=stub_port)
    body = json.dumps({"model": "raw", "messages": [], "tools": TOOLS}).encode() if method == "POST" else None
    reply = send(port, http(method, target, body, {"Authorization": "Bearer sk-secret"}))
    if method == "HEAD":
        assert reply.status == 400 and reply.body == b""
    else:
        message = error_of(reply, 400, "invalid_request_error")
        assert "origin form" in message
    assert stub.connections == 0 and stub.requests == []
    assert wait_until(lambda: any(f"{method} {target} 400 bad request target" in m for m in logs()))


@pytest.mark.parametrize(
    ("upstream_kind", "target"), [("without a port", "munity://x/v1/models"), ("with a port", "http://x/v1/models")]
)
def test_without_the_target_rule_the_origin_check_alone_keeps_the_upstream(
    net, logs, monkeypatch, upstream_kind, target
):
    # Defence in depth: with the origin-form rule switched off, the URL built from the target is
    # still refused when its scheme, host or port is not the upstream's.
    monkeypatch.setattr(proxy, "_origin_form", lambda target: True)
    stub = net.upstream(script_of([b"{}"], framing="length", content_type="application/json"))
    port = net.proxy(stub.url if upstream_kind == "with a port" else "http://localhost")
    error_of(send(port, http("GET", target)), 400, "invalid_request_error")
    assert stub.connections == 0
    assert wait_until(lambda: any("the target would change the upstream's origin" in m for m in logs(logging.WARNING)))


def test_paths_are_relayed_to_the_upstream_and_only_there(net):
    stub = net.upstream(script_of([b'{"ok": true}'], framing="length", content_type="application/json"))
    port = net.proxy(stub.url)
    for target in ("/v1/models?next=//x.example/y", "/v1//models", "/v1/models?u=http://x/"):
        reply = send(port, http("GET", target))
        assert (reply.status, reply.body, reply.complete) == (200, b'{"ok": true}', True)
        method, seen, headers, _ = stub.requests[-1]
        assert (method, seen) == ("GET", target)
        assert headers["host"] == stub.url.removeprefix("http://")


# --- the upstream breaking off ---------------------------------------------------------------------


@pytest.mark.parametrize("end", ["close", "reset"])
@pytest.mark.parametrize("framing", ["chunked", "length", "close"])
def test_an_upstream_cut_mid_event_is_a_broken_answer_without_the_held_markup(impl, net, logs, framing, end):
    stub = net.upstream(script_of([*BEFORE, HALF], framing=framing, cut=True, end=end, pause=0.01))
    port = net.proxy(stub.url)
    reply = send(port, chat())
    assert reply.status == 200 and reply.headers["transfer-encoding"] == "chunked"
    assert not reply.complete and reply.closed  # no last chunk: the client sees a broken answer
    assert b"tool_" not in reply.body  # neither the held "<tool_" nor the half event
    assert sse(reply.body) == ("Hello world. ", [], None)  # what came before the break did arrive
    assert wait_until(lambda: any("upstream broke off" in m for m in logs(logging.WARNING)))


@pytest.mark.parametrize("framing", ["chunked", "length", "close"])
def test_complete_answers_in_every_framing_are_recovered(impl, net, framing):
    end = "close" if framing == "close" else "keep"
    stub = net.upstream(script_of([ROLE, content("Hi "), *CALL, FINISH, DONE], framing=framing, end=end))
    port = net.proxy(stub.url)
    reply = send(port, chat())
    assert reply.status == 200 and reply.complete
    assert sse(reply.body) == ("Hi ", [("get_weather", {"city": "Paris"})], "tool_calls")
    assert b"tool_call>" not in reply.body


def test_a_close_delimited_body_ending_between_events_is_a_complete_answer(impl, net):
    # The control case for the break above: ended at an event boundary, the held text is text.
    stub = net.upstream(script_of(BEFORE, framing="close", end="close"))
    port = net.proxy(stub.url)
    reply = send(port, chat())
    assert reply.status == 200 and reply.complete
    assert sse(reply.body) == ("Hello world. <tool_", [], None)


@pytest.mark.parametrize("cut", [True, False])
def test_a_relayed_close_delimited_event_stream_cut_mid_event_is_a_broken_answer(net, logs, cut):
    # No tools: the stream is relayed byte for byte, unrecovered; its end is still judged by the events.
    pieces = [ROLE, content("Hello "), *([HALF] if cut else [FINISH, DONE])]
    stub = net.upstream(script_of(pieces, framing="close", cut=cut, end="close"))
    port = net.proxy(stub.url)
    reply = send(port, chat(tools=None))
    assert reply.status == 200 and reply.body == b"".join(pieces)  # every byte relayed as it came
    assert reply.complete is not cut and reply.closed is cut
    if cut:
        assert wait_until(lambda: any("ended inside an event" in m for m in logs(logging.WARNING)))


# --- timeouts --------------------------------------------------------------------------------------


def test_a_hung_upstream_is_a_504_after_the_read_timeout_and_frees_its_connection(net, logs):
    async def script(request, reader, writer):
        if request[1] == "/v1/models":
            return await answer(writer, [b"{}"], framing="length", content_type="application/json")
        return await never_answer(request, reader, writer)

    stub = net.upstream(script)
    port = net.proxy(stub.url, read_timeout=0.4, max_connections=1)
    for request in (chat(), http("GET", "/v1/hang")):  # answered (send waits a bounded time), not left hanging
        assert "did not answer within 0.4 s" in error_of(send(port, request), 504, "gateway_timeout")
    # the one upstream connection allowed was given back each time
    assert send(port, http("GET", "/v1/models")).status == 200
    assert sum("504 gateway timeout" in m for m in logs()) == 2


def test_an_upstream_silent_mid_answer_is_cut_off_after_the_read_timeout(impl, net, logs):
    async def script(request, reader, writer):
        writer.write(head(200, {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"}))
        for piece in BEFORE:
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        await writer.drain()
        return await never_answer(request, reader, writer)

    stub = net.upstream(script)
    port = net.proxy(stub.url, read_timeout=0.4)
    reply = send(port, chat())
    assert reply.status == 200 and not reply.complete and reply.closed
    assert sse(reply.body) == ("Hello world. ", [], None) and b"tool_" not in reply.body
    assert wait_until(lambda: any("upstream broke off" in m for m in logs(logging.WARNING)))


def test_an_upstream_that_cannot_be_connected_to_in_time_is_a_502():
    # A listening socket whose accept queue is full: the kernel drops further SYNs.
    with socket.socket() as listener, socket.socket() as filler, socket.socket() as probe:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        filler.connect(listener.getsockname())
        probe.settimeout(0.2)
        try:
            probe.connect(listener.getsockname())
        except OSError:
            pass
        else:
            pytest.skip("this OS accepts connections beyond a full backlog")
        loop = LoopThread()
        try:
            net = Net(loop)
            port = net.proxy("http://{}:{}".format(*listener.getsockname()), connect_timeout=0.3)
            reply = send(port, http("GET", "/v1/models"))
            assert error_of(reply, 502, "bad_gateway").startswith("upstream unreachable: ")
            net.close()
        finally:
            loop.close()


def test_stalled_chat_bodies_get_a_408_and_are_closed_without_reaching_the_upstream(net, logs):
    stub = net.upstream(never_answer)
    port = net.proxy(stub.url, body_timeout=0.5)
    request = (
        http("POST", "/v1/chat/completions", None, {"Content-Type": "application/json", "Content-Length": "100"})
        + b'{"model": '
    )
    sockets = []
    try:
        for _ in range(300):
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            sockets.append(sock)
            sock.sendall(request)
        replies = []
        for sock in sockets:  # every one answered and closed (no lingering over the unread body)
            replies.append(read_reply(sock))
            assert replies[-1].closed or closed_by_peer(sock)
    finally:
        for sock in sockets:
            sock.close()
    for reply in replies:
        assert "not received within 0.5 s" in error_of(reply, 408, "request_timeout")
        assert reply.headers["connection"].lower() == "close"
    assert stub.connections == 0 and stub.requests == []
    assert sum("408 request body timeout" in m for m in logs()) == 300


def test_a_stalled_relayed_body_gets_a_408_and_the_upstream_no_complete_request(net, logs):
    stub = net.upstream(script_of([b"{}"], framing="length", content_type="application/json"))
    port = net.proxy(stub.url, body_timeout=0.5)
    stalled = http("POST", "/v1/files", None, {"Content-Length": "100"}) + b"0123456789"
    sockets = []
    try:
        for _ in range(20):
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            sockets.append(sock)
            sock.sendall(stalled)
        replies = []
        for sock in sockets:
            replies.append(read_reply(sock))
            assert replies[-1].closed or closed_by_peer(sock)
    finally:
        for sock in sockets:
            sock.close()
    for reply in replies:
        error_of(reply, 408, "request_timeout")
    assert stub.requests == []  # the bodies were streamed, never completed
    assert wait_until(lambda: stub.open == 0)  # and the upstream connections were given up
    # a body sent slowly but within the timeout is relayed whole
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(http("POST", "/v1/files", None, {"Content-Length": "30"}))
        for piece in (b"0123456789", b"abcdefghij", b"ABCDEFGHIJ"):
            time.sleep(0.1)
            sock.sendall(piece)
        reply = read_reply(sock)
    assert (reply.status, reply.body) == (200, b"{}")
    method, target, _, body = stub.requests[-1]
    assert (method, target, body) == ("POST", "/v1/files", b"0123456789abcdefghijABCDEFGHIJ")


def test_upstream_connections_are_capped_and_each_request_waits_its_turn(net):
    async def script(request, reader, writer):
        await asyncio.sleep(0.3)
        return await answer(writer, [request[1].encode()], framing="length", content_type="text/plain")

    stub = net.upstream(script)
    port = net.proxy(stub.url, max_connections=3, connect_timeout=5)
    sockets = []
    try:
        for i in range(9):
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            sockets.append(sock)
            sock.sendall(http("GET", f"/v1/r{i}"))
        replies = [read_reply(sock) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()
    assert [(r.status, r.body) for r in replies] == [(200, f"/v1/r{i}".encode()) for i in range(9)]
    assert stub.max_busy == 3  # the cap was reached, never passed
    assert stub.max_open <= 3 and stub.connections <= 3  # connections were reused, not piled up


def test_a_request_finding_every_connection_busy_gets_a_503_after_the_connect_timeout(net, logs):
    async def script(request, reader, writer):
        if request[1] == "/v1/slow":
            await asyncio.sleep(1.0)
        return await answer(writer, [request[1].encode()], framing="length", content_type="text/plain")

    stub = net.upstream(script)
    port = net.proxy(stub.url, max_connections=1, connect_timeout=0.3)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as slow:
        slow.sendall(http("GET", "/v1/slow"))
        assert wait_until(lambda: stub.busy == 1)
        reply = send(port, http("GET", "/v1/fast"))
        assert stub.busy == 1  # the 503 came while the slow request still held the connection
        assert "busy" in error_of(reply, 503, "service_unavailable")
        assert [r[1] for r in stub.requests] == ["/v1/slow"]
        assert read_reply(slow).body == b"/v1/slow"
    assert send(port, http("GET", "/v1/fast")).body == b"/v1/fast"  # the slot was given back
    assert any("503 no free upstream connection" in m for m in logs())


# --- the client leaving ----------------------------------------------------------------------------


def test_a_client_leaving_mid_stream_cancels_the_upstream_request(impl, net, logs):
    stopped = threading.Event()
    sent = []

    async def script(request, reader, writer):
        writer.write(head(200, {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"}))
        try:
            for i in range(250):  # 5 s at most
                if reader.at_eof():
                    break
                piece = content(f"word{i} ")
                writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                await writer.drain()
                sent.append(i)
                await asyncio.sleep(0.02)
        except ConnectionError:
            pass
        stopped.set()
        return False

    stub = net.upstream(script)
    port = net.proxy(stub.url)
    with socket.create_connection(("127.0.0.1", port), timeout=HANG_GUARD) as sock:
        sock.sendall(chat())
        got = b""
        while b"word0 " not in got and (data := sock.recv(65536)):  # (a hang: TimeoutError past HANG_GUARD)
            got += data
        assert b"word0 " in got
    assert stopped.wait(HANG_GUARD)
    assert len(sent) < 200
    assert wait_until(lambda: any(" 200 client gone " in m for m in logs()))


# --- what the events hold --------------------------------------------------------------------------


def test_an_event_over_max_event_is_relayed_byte_for_byte_and_the_rest_recovered(impl, net):
    big = content("x" * 8000)
    stub = net.upstream(script_of([ROLE, content("Hi "), big, *CALL, FINISH, DONE], framing="chunked", pause=0.005))
    port = net.proxy(stub.url, max_event=1024)
    reply = send(port, chat())
    assert reply.status == 200 and reply.complete
    assert big in reply.body
    assert sse(reply.body) == ("Hi " + "x" * 8000, [("get_weather", {"city": "Paris"})], "tool_calls")
    assert b"tool_call>" not in reply.body and reply.body.endswith(DONE)


def test_a_stream_cut_inside_an_oversized_event_is_a_broken_answer(impl, net):
    big = content("y" * 8000)
    stub = net.upstream(
        script_of([ROLE, content("Hi "), big[:3000], big[3000:5000]], framing="close", end="close", pause=0.01)
    )
    port = net.proxy(stub.url, max_event=1024)
    reply = send(port, chat())
    assert reply.status == 200 and not reply.complete and reply.closed
    assert sse(reply.body) == ("Hi ", [], None)


ODD = [
    b"data: {not json\n\n",
    b"data: \xff\xfe not UTF-8\n\n",
    b'data: {"choices":[{"index":0,"delta":{"content":"\xff"}}]}\n\n',  # JSON, but not UTF-8
    b": a comment\n\n",
    b"event: ping\ndata: 1\n\n",
    b"data: [1, 2]\n\n",
]


def test_invalid_json_and_non_utf8_events_are_relayed_byte_for_byte(impl, net):
    pieces = [
        ROLE,
        content("A "),
        ODD[0],
        ODD[1],
        content('<tool_call>{"name": "get_weather", '),
        ODD[2],
        content('"arguments": {"city": "Oslo"}}</tool_call> B'),
        *ODD[3:],
        FINISH,
        DONE,
    ]
    stub = net.upstream(script_of(pieces, framing="chunked", pause=0.005))
    port = net.proxy(stub.url)
    reply = send(port, chat())
    assert reply.status == 200 and reply.complete
    for odd in ODD:
        assert odd in reply.body
    assert sse(reply.body) == ("A  B", [("get_weather", {"city": "Oslo"})], "tool_calls")
    assert b"tool_call>" not in reply.body


# --- the request's tools ---------------------------------------------------------------------------

ANSWER = [
    ROLE,
    content("Checking."),
    content('<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}</tool_call>'),
    content('<tool_call>{"name": "grammar", "arguments": {}}</tool_call>'),
    FINISH,
    DONE,
]


@pytest.mark.parametrize(
    ("tools", "why"),
    [
        ([1, 2], "tools[0] is a number, not a tool"),
        ([WEATHER, "get_time"], "tools[1] is a string, not a tool"),
        (
            [WEATHER, {"type": "function", "function": {"description": "no name"}}],
            "tools[1] is a function tool without a function name",
        ),
        (
            [WEATHER, {"type": "function", "function": {"name": ""}}],
            "tools[1] is a function tool without a function name",
        ),
        ([WEATHER, {"type": "function"}], "tools[1] is a function tool without a function name"),
        ([{"function": {"name": "get_weather"}}], "tools[0] is an object without a string type, not a tool"),
        ([WEATHER, {"type": 7, "function": {"name": "x"}}], "tools[1] is an object without a string type, not a tool"),
        (
            [{"type": "function", "function": {"name": "get_weather", "parameters": "city"}}],
            "tools[0].function.parameters is a string, not an object",
        ),
        ({"get_weather": WEATHER}, "tools is an object, not an array"),
        ("get_weather", "tools is a string, not an array"),
    ],
    ids=[
        "numbers",
        "a-string-entry",
        "nameless",
        "empty-name",
        "no-function",
        "no-type",
        "bad-type",
        "bad-parameters",
        "object",
        "string",
    ],
)
def test_malformed_tools_are_relayed_unrecovered_with_a_warning(impl, net, logs, tools, why):
    stub = net.upstream(script_of(ANSWER, framing="chunked"))
    port = net.proxy(stub.url)
    request = chat(tools=tools)
    reply = send(port, request)
    assert reply.status == 200 and reply.complete
    assert reply.body == b"".join(ANSWER)  # not recovered: the upstream's bytes
    assert stub.requests[0][3] == request.split(b"\r\n\r\n", 1)[1]  # the request itself relayed as it is
    assert wait_until(
        lambda: f"POST /v1/chat/completions: not recovered, relayed as it is: {why}" in logs(logging.WARNING)
    )


@pytest.mark.parametrize(
    ("tools", "names"),
    [
        ([WEATHER, {"type": "custom", "custom": {"name": "grammar"}}, {"type": "web_search"}], ["get_weather"]),
        ([{"type": "custom", "custom": {"name": "grammar"}}], []),
    ],
    ids=["function-and-others", "no-function"],
)
def test_well_formed_non_function_tools_are_ignored_and_the_filter_kept(impl, net, logs, tools, names):
    stub = net.upstream(script_of(ANSWER, framing="chunked"))
    port = net.proxy(stub.url)
    reply = send(port, chat(tools=tools))
    assert reply.status == 200 and reply.complete
    text, calls, finish = sse(reply.body)
    assert [name for name, _ in calls] == names  # grammar is not a function tool: its call stays text
    assert '<tool_call>{"name": "grammar", "arguments": {}}</tool_call>' in text
    assert ('<tool_call>{"name": "get_weather"' in text) == (not names)
    assert finish == ("tool_calls" if names else "stop")
    assert logs(logging.WARNING) == []


# --- settings --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--connect-timeout", "0"], "--connect-timeout must be a number of seconds > 0, not '0'"),
        (["--connect-timeout", "-1"], "--connect-timeout must be a number of seconds > 0, not '-1'"),
        (["--read-timeout", "abc"], "--read-timeout must be a number of seconds > 0, not 'abc'"),
        (["--read-timeout", "nan"], "--read-timeout must be a number of seconds > 0, not 'nan'"),
        (["--body-timeout", "inf"], "--body-timeout must be a number of seconds > 0, not 'inf'"),
        (["--body-timeout", ""], "--body-timeout must be a number of seconds > 0, not ''"),
        (["--max-connections", "0"], "--max-connections must be an integer >= 1, not '0'"),
        (["--max-connections", "1.5"], "--max-connections must be an integer >= 1, not '1.5'"),
        (["--max-connections", "-3"], "--max-connections must be an integer >= 1, not '-3'"),
        (["--max-body", "0"], "--max-body must be an integer >= 1, not '0'"),
        (["--max-body", "-1"], "--max-body must be an integer >= 1, not '-1'"),
        (["--max-body", "0.5"], "--max-body must be an integer >= 1, not '0.5'"),
        (["--head-timeout", "-1"], "--head-timeout must be a number of seconds > 0, not '-1'"),
        (["--head-timeout", "0"], "--head-timeout must be a number of seconds > 0, not '0'"),
        (["--idle-timeout", "-0.5"], "--idle-timeout must be a number of seconds > 0, not '-0.5'"),
        (["--idle-timeout", "never"], "--idle-timeout must be a number of seconds > 0, not 'never'"),
        (["--max-clients", "0"], "--max-clients must be an integer >= 1, not '0'"),
        (["--max-clients", "-5"], "--max-clients must be an integer >= 1, not '-5'"),
    ],
)
def test_bad_timeout_and_connection_flags_are_one_line_and_exit_2(capsys, monkeypatch, args, message):
    monkeypatch.setattr(proxy, "run", lambda *a, **k: pytest.fail("run() despite a bad flag"))
    with pytest.raises(SystemExit) as exc:
        main(["proxy", "--upstream", "http://127.0.0.1:1", *args])
    assert exc.value.code == 2
    assert capsys.readouterr().err == f"textcalls proxy: error: {message}\n"


def test_the_flags_reach_the_proxy_with_their_defaults(monkeypatch):
    calls = []
    monkeypatch.setattr(proxy, "run", lambda upstream, **kw: calls.append((upstream, kw)))
    assert main(["proxy", "--upstream", "http://127.0.0.1:1"]) == 0
    assert (
        main(
            [
                "proxy",
                "--upstream",
                "http://127.0.0.1:1",
                "--connect-timeout",
                "2.5",
                "--read-timeout",
                "30",
                "--body-timeout",
                "0.25",
                "--max-connections",
                "7",
                "--max-body",
                "5",
                "--head-timeout",
                "0.5",
                "--idle-timeout",
                "7",
                "--max-clients",
                "12",
                "--workers",
                "3",
            ]
        )
        == 0
    )
    common = {
        "host": "127.0.0.1",
        "port": 8787,
        "native": True,
        "log_format": "text",
        "loop": "asyncio",
        "metrics_path": "/metrics",
        "health_path": "/healthz",
    }
    assert calls == [
        (
            "http://127.0.0.1:1",
            {
                **common,
                "workers": 1,
                "connect_timeout": 10.0,
                "read_timeout": 600.0,
                "body_timeout": 60.0,
                "head_timeout": 10.0,
                "idle_timeout": 60.0,
                "max_clients": None,
                "max_connections": 100,
                "max_body": 32 << 20,
            },
        ),
        (
            "http://127.0.0.1:1",
            {
                **common,
                "workers": 3,
                "connect_timeout": 2.5,
                "read_timeout": 30.0,
                "body_timeout": 0.25,
                "head_timeout": 0.5,
                "idle_timeout": 7.0,
                "max_clients": 12,
                "max_connections": 7,
                "max_body": 5 << 20,
            },
        ),
    ]


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_a_bad_workers_count_is_refused(value, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["proxy", "--upstream", "http://127.0.0.1:1", "--workers", value])
    assert exc.value.code == 2
    assert f"--workers must be an integer >= 1, not '{value}'" in capsys.readouterr().err


def test_run_checks_its_workers():
    with pytest.raises(ValueError, match="workers must be >= 1, not 0"):
        proxy.run("http://127.0.0.1:1", workers=0)
    with pytest.raises(TypeError, match="workers must be an int, not str"):
        proxy.run("http://127.0.0.1:1", workers="2")
    with pytest.raises(ValueError, match="workers > 1 needs a fixed port"):
        proxy.run("http://127.0.0.1:1", port=0, workers=2)


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"connect_timeout": 0}, ValueError, "connect_timeout must be a number of seconds > 0, not 0"),
        ({"read_timeout": float("inf")}, ValueError, "read_timeout must be a number of seconds > 0, not inf"),
        ({"body_timeout": "5"}, TypeError, "body_timeout must be a number of seconds, not str"),
        ({"body_timeout": True}, TypeError, "body_timeout must be a number of seconds, not bool"),
        ({"max_connections": 0}, ValueError, "max_connections must be >= 1, not 0"),
        ({"max_connections": 2.0}, TypeError, "max_connections must be an int, not float"),
        ({"max_event": 0}, ValueError, "max_event must be >= 1, not 0"),
        ({"max_body": 0}, ValueError, "max_body must be >= 1, not 0"),
        ({"max_body": 1.5}, TypeError, "max_body must be an int, not float"),
    ],
)
def test_create_app_checks_its_settings(options, error, message):
    with pytest.raises(error) as exc:
        proxy.create_app("http://127.0.0.1:1", **options)
    assert str(exc.value) == message


# --- what the upstream session carries between clients; when a held answer's head goes out ----------------------


def test_a_cookie_the_upstream_sets_never_goes_out_with_other_requests(net):
    # The proxy's upstream session is every client's: a cookie jar there would hand one client's cookie to all.
    async def script(request, reader, writer):
        writer.write(head(200, {"Content-Length": "2", "Set-Cookie": "session=alice-only; Path=/"}) + b"{}")
        return True

    stub = net.upstream(script)
    port = net.proxy(stub.url.replace("127.0.0.1", "localhost"))  # a host name: cookies by IP are never kept
    for _ in range(2):
        reply = send(port, http("GET", "/v1/models"))
        assert reply.status == 200 and reply.headers["set-cookie"] == "session=alice-only; Path=/"
    send(port, http("GET", "/v1/models", headers={"Cookie": "mine=1"}))
    assert [r[2].get("cookie") for r in stub.requests] == [None, None, "mine=1"]  # a client's own is relayed


def test_an_answer_whose_first_bytes_are_all_held_still_sends_its_head_at_once(impl, net):
    # The client learns that the answer started as soon as the upstream's did, even when recovery holds back every
    # byte of it so far (the start of a tag): the head does not wait for the first bytes released.
    release = asyncio.Event()

    async def script(request, reader, writer):
        first = content("<tool_")
        framing = {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"}
        writer.write(head(200, framing) + b"%x\r\n%s\r\n" % (len(first), first))
        await writer.drain()
        await release.wait()
        for piece in [content('call>{"name": "get_time", "arguments": {}}</tool_call>'), FINISH, DONE]:
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True

    stub = net.upstream(script)
    port = net.proxy(stub.url)
    with socket.create_connection(("127.0.0.1", port), timeout=HANG_GUARD) as sock:
        sock.sendall(chat())
        sock.settimeout(HANG_GUARD)
        seen = b""
        while b"\r\n\r\n" not in seen:
            data = sock.recv(65536)
            assert data, "the proxy closed the connection"
            seen += data
        assert seen.startswith(b"HTTP/1.1 200 ") and not release.is_set()
        net.loop.loop.call_soon_threadsafe(release.set)
        while not ((parsed := _parse(seen)) and parsed[3]):
            data = sock.recv(65536)
            assert data, "the proxy closed the connection"
            seen += data
    assert sse(parsed[2]) == ("", [("get_time", {})], "tool_calls")


# --- the event loop (--loop) -----------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["trio", "UVLOOP", ""])
def test_a_bad_loop_is_refused(value, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["proxy", "--upstream", "http://127.0.0.1:1", "--loop", value])
    assert exc.value.code == 2
    assert "argument --loop: invalid choice" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["auto", "asyncio", "uvloop"])
def test_the_loop_flag_reaches_the_proxy(value, monkeypatch):
    calls = []
    monkeypatch.setattr(proxy, "run", lambda upstream, **kw: calls.append(kw["loop"]))
    assert main(["proxy", "--upstream", "http://127.0.0.1:1", "--loop", value]) == 0
    assert calls == [value]


def test_run_checks_its_loop():
    with pytest.raises(ValueError, match="loop must be 'auto', 'asyncio' or 'uvloop', not 'trio'"):
        proxy.run("http://127.0.0.1:1", loop="trio")
    with pytest.raises(TypeError, match="loop must be a str, not NoneType"):
        proxy.run("http://127.0.0.1:1", loop=None)


def test_uvloop_asked_for_and_missing_is_a_clear_error_before_anything_starts(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "uvloop", None)  # what an environment without it gives: ImportError
    monkeypatch.setattr(proxy, "_serve", lambda *a, **k: pytest.fail("served without the loop asked for"))
    with pytest.raises(ImportError, match=r"--loop uvloop needs uvloop: pip install 'textcalls\[uvloop\]'"):
        proxy.run("http://127.0.0.1:1", loop="uvloop")
    with pytest.raises(SystemExit) as exc:
        main(["proxy", "--upstream", "http://127.0.0.1:1", "--loop", "uvloop"])
    assert exc.value.code == 1
    assert capsys.readouterr().err == (
        "textcalls proxy: error: --loop uvloop needs uvloop: pip install 'textcalls[uvloop]' (not on Windows)\n"
    )


def test_auto_takes_uvloop_where_installed_else_asyncio(monkeypatch):
    seen = []

    async def record():
        seen.append(proxy._running_loop_name())

    with monkeypatch.context() as without:
        without.setitem(sys.modules, "uvloop", None)
        assert proxy._loop_factory("auto") is None
    assert proxy._loop_factory("asyncio") is None
    proxy._run_on(None, record())
    uvloop = pytest.importorskip("uvloop")
    assert proxy._loop_factory("auto") is proxy._loop_factory("uvloop") is uvloop.new_event_loop
    proxy._run_on(uvloop.new_event_loop, record())
    assert seen == ["asyncio", "uvloop"]
