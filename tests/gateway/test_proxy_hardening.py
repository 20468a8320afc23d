"""The proxy against hostile clients and lost processes (issue 28): slow request heads and piles of
connections, huge bodies, paths the router cannot match, who may read ``/metrics``, and ``--workers``
under supervision.

Through the real aiohttp app (``proxy.start`` on a loop thread, a raw stub upstream, raw client sockets) or
the real command (``python -m textcalls proxy``) with small timeouts; every wait is bounded only as a guard
against a hang (``waiting.py``), and the tests assert what happened, never how fast.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

import pytest

pytest.importorskip("aiohttp", reason="the proxy runs on aiohttp")

from textcalls import proxy
from textcalls.cli import main

from ..waiting import HANG_GUARD, wait_until
from .test_proxy_faults import TOOLS, answer, chat, error_of, http, read_reply, script_of, send


class Command:
    """A running ``textcalls proxy`` (``cli.main`` in a subprocess) and its stderr lines, read as they come."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def line(self, predicate, what: str) -> str:
        """The first line that ``predicate`` accepts, once it comes (failing the test as hung past the guard)."""
        return wait_until(lambda: next((line for line in list(self.lines) if predicate(line)), None), what)

    @property
    def port(self) -> int:
        banner = self.line(lambda line: "textcalls proxy on http://" in line, "the banner")
        return int(re.search(r"textcalls proxy on http://[^ ]+:(\d+) ", banner).group(1))

    def stop(self) -> list[str]:
        """SIGTERM, then every line it wrote."""
        self.proc.terminate()
        assert self.proc.wait(HANG_GUARD) == 0
        self.reader.join(HANG_GUARD)
        return self.lines


@contextlib.contextmanager
def command(*args: str, env: dict | None = None, patch: dict | None = None, prelude: str = "", preexec_fn=None):
    """``textcalls proxy ARGS`` through ``cli.main`` in a subprocess, as a ``Command``; ``env``: more environment;
    ``patch``: constants of ``textcalls.proxy`` (``p``) set first (``LOG_INTERVAL``); ``prelude``: code run then.
    Both run in the command's workers too (``multiprocessing`` imports its script again, as ``__mp_main__``).
    Killed if still running at the end."""
    setting = "".join(f"p.{name} = {value!r}\n" for name, value in (patch or {}).items())
    script = (
        f"import sys\nimport textcalls.proxy as p\n{setting}{textwrap.dedent(prelude)}\n"
        "if __name__ == '__main__':\n    from textcalls.cli import main\n\n    sys.exit(main(sys.argv[1:]))\n"
    )
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "proxy_command.py")
        with open(path, "w") as f:
            f.write(script)
        proc = subprocess.Popen(
            [sys.executable, path, "proxy", *args],
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
            preexec_fn=preexec_fn,
        )
        try:
            yield Command(proc)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(HANG_GUARD)
            proc.stderr.close()


def metric(port: int, path: str, outcome: str, token: str | None = None) -> float:
    """``textcalls_requests_total`` for ``path`` and ``outcome``, read from the proxy's ``/metrics``."""
    reply = send(port, http("GET", "/metrics", headers={"Authorization": f"Bearer {token}"} if token else None))
    assert reply.status == 200
    found = re.search(
        rf'^textcalls_requests_total{{path="{re.escape(path)}",outcome="{outcome}"}} (\S+)$',
        reply.body.decode(),
        re.MULTILINE,
    )
    assert found, reply.body[:300]
    return float(found.group(1))


# --- paths the router cannot match -----------------------------------------------------------------


@pytest.mark.parametrize(
    "target", ["/v1/models%0A", "/v1/x%0Ay?q=%0A", "/metrics%0A", "/v1/chat/completions%0D%0A", "/%0A"]
)
def test_a_path_with_an_encoded_line_break_is_relayed_counted_and_logged(net, logs, target):
    stub = net.upstream(script_of([b'{"seen": true}'], framing="length", content_type="application/json"))
    port = net.proxy(stub.url)
    reply = send(port, http("GET", target))
    assert (reply.status, reply.body) == (200, b'{"seen": true}')  # the upstream's answer, not a 404 of aiohttp's
    assert stub.requests[-1][:2] == ("GET", target)  # relayed as written: still percent-encoded
    line = wait_until(lambda: [m for m in logs() if m.startswith(f"GET {target} 200 relayed ")])
    assert len(line) == 1 and "\n" not in line[0]
    assert metric(port, "other", "relayed") == 1


# --- who may read the metrics --------------------------------------------------------------------------

TOKEN = "Zm9vYmFy-metrics.token_~+/="
NOT_THE_TOKEN = [
    {},
    {"Authorization": ""},
    {"Authorization": "Bearer"},
    {"Authorization": "Bearer wrong"},
    {"Authorization": f"Basic {TOKEN}"},
    {"Authorization": f"Bearer {TOKEN}x"},
    {"Authorization": f"Bearer {TOKEN[:-1]}"},
    {"Authorization": f"Bearer {TOKEN.upper()}"},
]


def test_with_a_token_the_metrics_answer_only_its_bearer(net, logs):
    stub = net.upstream(script_of([b"{}"], framing="length", content_type="application/json"))
    port = net.proxy(stub.url, metrics_token=TOKEN)
    for headers in NOT_THE_TOKEN:
        reply = send(port, http("GET", "/metrics", headers=headers))
        assert "needs the metrics token" in error_of(reply, 401, "authentication_error")
        assert reply.headers["www-authenticate"] == 'Bearer realm="textcalls metrics"'
        assert b"textcalls_" not in reply.body
    assert send(port, http("HEAD", "/metrics")).status == 401
    for scheme in ("Bearer", "bearer", "BEARER"):
        reply = send(port, http("GET", "/metrics", headers={"Authorization": f"{scheme}  {TOKEN} "}))
        assert reply.status == 200 and reply.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert send(port, http("GET", "/healthz")).body == b"ok\n"  # the health answer stays open
    # the refusals are counted and logged (path "other", outcome "error"); the answers are neither
    assert metric(port, "other", "error", TOKEN) == len(NOT_THE_TOKEN) + 1
    refusals = [m for m in logs() if "/metrics" in m or "/healthz" in m]
    assert len(refusals) == len(NOT_THE_TOKEN) + 1
    assert all(re.match(r"(GET|HEAD) /metrics 401 unauthorized ", m) for m in refusals)
    assert all(TOKEN not in m for m in logs())
    assert stub.requests == []  # never relayed


def test_the_command_reads_the_metrics_token_from_its_flag_or_environment():
    unreachable = "http://127.0.0.1:9"  # the metrics never ask the upstream
    with command("--upstream", unreachable, "--listen", "127.0.0.1:0", env={proxy.METRICS_TOKEN_ENV: TOKEN}) as run:
        port = run.port
        assert send(port, http("GET", "/metrics")).status == 401
        assert metric(port, "other", "error", TOKEN) == 1
    args = ("--upstream", unreachable, "--listen", "127.0.0.1:0", "--metrics-token", "from-the-flag")
    with command(*args, env={proxy.METRICS_TOKEN_ENV: TOKEN}) as run:  # the flag wins
        port = run.port
        reply = send(port, http("GET", "/metrics", headers={"Authorization": f"Bearer {TOKEN}"}))
        assert reply.status == 401
        assert metric(port, "other", "error", "from-the-flag") == 1


@pytest.mark.parametrize(
    ("args", "env", "name"),
    [
        (["--metrics-token", ""], {}, "--metrics-token"),
        (["--metrics-token", "two words"], {}, "--metrics-token"),
        (["--metrics-token", "tab\there"], {proxy.METRICS_TOKEN_ENV: "fine"}, "--metrics-token"),
        ([], {proxy.METRICS_TOKEN_ENV: ""}, proxy.METRICS_TOKEN_ENV),
        ([], {proxy.METRICS_TOKEN_ENV: "s3cret token"}, proxy.METRICS_TOKEN_ENV),
        ([], {proxy.METRICS_TOKEN_ENV: "s3cr\u00e9t"}, proxy.METRICS_TOKEN_ENV),
    ],
)
def test_a_bad_metrics_token_is_refused_without_being_repeated(capsys, monkeypatch, args, env, name):
    monkeypatch.setattr(proxy, "run", lambda *a, **k: pytest.fail("run() despite a bad token"))
    monkeypatch.delenv(proxy.METRICS_TOKEN_ENV, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(SystemExit) as exc:
        main(["proxy", "--upstream", "http://127.0.0.1:1", *args])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    message = "must be one or more visible ASCII characters: no space, no control character"
    assert err == f"textcalls proxy: error: {name} {message}\n"


def test_create_app_checks_its_metrics_token():
    with pytest.raises(TypeError, match="metrics_token must be a str or None, not bytes"):
        proxy.create_app("http://127.0.0.1:1", metrics_token=b"token")
    with pytest.raises(ValueError, match="metrics_token must be one or more visible ASCII characters"):
        proxy.create_app("http://127.0.0.1:1", metrics_token="")


# --- huge bodies -------------------------------------------------------------------------------------

CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'


def completion(text: str) -> bytes:
    message = {"role": "assistant", "content": text}
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}
    return json.dumps(
        {"id": "c", "object": "chat.completion", "created": 0, "model": "raw", "choices": [choice]}
    ).encode()


def called(reply) -> list:
    """The names of the tool calls in a ``chat.completion`` answer."""
    assert reply.status == 200, reply
    message = json.loads(reply.body)["choices"][0]["message"]
    return [call["function"]["name"] for call in message.get("tool_calls") or []]


def padded(size: int, tools=TOOLS, **headers) -> bytes:
    """A non-streamed chat request with ``tools`` whose body is ``size`` bytes (a long user message)."""
    body = {"model": "raw", "messages": [{"role": "user", "content": ""}], "stream": False, "tools": tools}
    pad = size - len(json.dumps(body).encode())
    assert pad >= 0
    body["messages"][0]["content"] = "x" * pad
    data = json.dumps(body).encode()
    assert len(data) == size
    return http("POST", "/v1/chat/completions", data, {"Content-Type": "application/json", **headers})


def chunked(request: bytes) -> bytes:
    """``request`` with its body sent in 1,000-byte chunks, without a Content-Length."""
    head, body = request.split(b"\r\n\r\n", 1)
    head = b"\r\n".join(line for line in head.split(b"\r\n") if not line.lower().startswith(b"content-length:"))
    pieces = [body[i : i + 1000] for i in range(0, len(body), 1000)]
    return (
        head
        + b"\r\nTransfer-Encoding: chunked\r\n\r\n"
        + b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces)
        + b"0\r\n\r\n"
    )


def test_a_body_over_max_body_is_a_413_in_json_and_never_relayed(net, logs):
    stub = net.upstream(script_of([completion(CALL)], framing="length", content_type="application/json"))
    port = net.proxy(stub.url, max_body=5000)
    for request in (padded(5001), chunked(padded(5001)), padded(2_000_000)):  # the client sends it all, then reads
        reply = send(port, request)
        message = error_of(reply, 413, "request_too_large")
        assert message == "the request body is over 5000 bytes, the proxy's cap"
        assert reply.headers["connection"].lower() == "close"
    assert stub.requests == []
    assert len(wait_until(lambda: [m for m in logs() if " 413 request body too large " in m] or None)) == 3
    # at the cap, and on a path whose body is streamed upstream (not read), the body goes through
    assert called(send(port, padded(5000))) == ["get_weather"]
    stub.script = script_of([b"{}"], framing="length", content_type="application/json")
    reply = send(port, http("POST", "/v1/files", b"y" * 20_000))
    assert (reply.status, stub.requests[-1][1], len(stub.requests[-1][3])) == (200, "/v1/files", 20_000)


def test_a_big_body_is_read_and_its_tools_made_ready_off_the_event_loop(impl, net, monkeypatch):
    # A test-held pause in the parse of a big body's JSON, and in making the recovery's Options for its many
    # tools: another client's request is answered meanwhile, so neither holds the event loop.
    stub = net.upstream(script_of([completion(CALL)], framing="length", content_type="application/json"))
    port = net.proxy(stub.url)
    loop_thread = net.loop.thread
    where, held, release = [], threading.Event(), threading.Event()
    offered_tools, options = proxy._offered_tools, proxy.Options

    def hold(what):
        where.append((what, threading.current_thread() is loop_thread))
        if threading.current_thread() is not loop_thread:  # (on the loop, holding would hang everyone)
            held.set()
            assert release.wait(HANG_GUARD)
            release.clear()

    def parse(body, convert=None, yielding=False):
        if len(body) > proxy._OFF_LOOP:
            hold("parse")
        return offered_tools(body, convert, yielding)

    def made(**kw):
        if kw.get("tools") and len(kw["tools"]) > proxy._MANY_TOOLS:
            hold("options")
        return options(**kw)

    monkeypatch.setattr(proxy, "_offered_tools", parse)
    monkeypatch.setattr(proxy, "Options", made)
    many = TOOLS + [{"type": "function", "function": {"name": f"tool_{i}"}} for i in range(proxy._MANY_TOOLS)]
    replies = []
    big = threading.Thread(target=lambda: replies.append(send(port, padded(proxy._OFF_LOOP + 100_000, many))))
    big.start()
    try:
        for _ in ("parse", "options"):
            assert held.wait(HANG_GUARD)
            held.clear()
            assert send(port, http("GET", "/healthz")).body == b"ok\n"  # answered while the big one is held
            release.set()
    finally:
        release.set()
        big.join(HANG_GUARD)
    assert where == [("parse", False), ("options", False)]
    assert called(replies[0]) == ["get_weather"]  # and the big one was recovered with its tools
    assert called(send(port, chat(stream=False))) == ["get_weather"]  # a small one, on the loop as before


def test_the_command_takes_max_body_in_mib(net):
    stub = net.upstream(script_of([completion(CALL)], framing="length", content_type="application/json"))
    with command("--upstream", stub.url, "--listen", "127.0.0.1:0", "--max-body", "1") as run:
        port = run.port
        reply = send(port, padded((1 << 20) + 1))
        assert error_of(reply, 413, "request_too_large") == "the request body is over 1 MiB, the proxy's cap"
        assert called(send(port, padded(1 << 20))) == ["get_weather"]
    assert len(stub.requests) == 1


# --- slow heads and piles of connections -------------------------------------------------------------

HALF_HEAD = b"GET /v1/models HTTP/1.1\r\nHost: proxy.test\r\nX-Slow: "
MODELS = b'{"object": "list", "data": []}'


def models_stub(net):
    return net.upstream(script_of([MODELS], framing="length", content_type="application/json"))


def half_open(port: int, n: int) -> list:
    """``n`` connections to the proxy: every other one sends half a request head, the rest nothing at all."""
    socks = []
    for i in range(n):
        socks.append(socket.create_connection(("127.0.0.1", port), timeout=HANG_GUARD))
        if i % 2 == 0:
            socks[-1].sendall(HALF_HEAD)
    return socks


def closed_unanswered(sock: socket.socket) -> bool:
    """Whether the proxy closes ``sock`` without sending it a byte; waits for its move however long it takes,
    failing the test as hung only past ``HANG_GUARD``."""
    sock.settimeout(HANG_GUARD)
    try:
        return sock.recv(65536) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        pytest.fail(f"hung: the proxy neither closed the connection nor sent anything in {HANG_GUARD} s")


def stop(net) -> None:
    """Stop the stubs and proxies now (the proxies tell the counts of their runs of events as they stop)."""
    net.close()
    net.stubs.clear()
    net.runners.clear()


def told(lines: list, first: str, more: str) -> int:
    """How many events a run of log lines told: its first line (``first``, at most one) and the counts of its
    later lines (``more``, a regex whose group is the count)."""
    firsts = [line for line in lines if line.startswith(first)]
    assert len(firsts) <= 1, firsts
    return len(firsts) + sum(int(m.group(1)) for line in lines if (m := re.match(more, line)))


TIMED_OUT = (
    "closed a client connection that sent no whole request head within",
    r"closed (\d+) more client connections without a whole request head in the last",
)
CLOSED_IDLE = ("client connections: ", r"closed (\d+) more idle client connections in the last")


def test_heads_not_sent_in_time_are_closed_and_other_clients_served_meanwhile(net, logs, monkeypatch):
    monkeypatch.setattr(proxy, "LOG_INTERVAL", 3600.0)  # a run's first line, then its count when the proxy stops
    stub = models_stub(net)
    port = net.proxy(stub.url, head_timeout=1.0, max_clients=50)
    attack = half_open(port, 300)
    try:
        replies = [send(port, http("GET", "/v1/models")) for _ in range(20)]  # while the 300 hold on
        assert [(r.status, r.body, r.complete) for r in replies] == [(200, MODELS, True)] * 20
        assert all(closed_unanswered(sock) for sock in attack)
    finally:
        for sock in attack:
            sock.close()
    assert [request[1] for request in stub.requests] == ["/v1/models"] * 20  # no half head reached it
    stop(net)
    lines = logs(logging.WARNING)
    assert sum(line.startswith(TIMED_OUT[0] + " 1 s (--head-timeout)") for line in lines) == 1
    assert (
        sum(line.startswith("client connections: 50 open (--max-clients): closing the longest idle") for line in lines)
        == 1
    )
    # each of the 300 closed once: for its head's timeout, or to let a newer connection in
    assert told(lines, *TIMED_OUT) + told(lines, *CLOSED_IDLE) == 300
    assert not any("Traceback" in line for line in lines)


def test_a_kept_alive_connection_stalling_in_its_next_head_is_closed_an_idle_one_kept_until_the_idle_timeout(net, logs):
    stub = models_stub(net)
    port = net.proxy(stub.url, head_timeout=0.5, idle_timeout=2.0)
    with (
        socket.create_connection(("127.0.0.1", port), timeout=HANG_GUARD) as stalled,
        socket.create_connection(("127.0.0.1", port), timeout=HANG_GUARD) as idle,
    ):
        for sock in (stalled, idle):
            sock.sendall(http("GET", "/v1/models"))
            reply = read_reply(sock)
            assert (reply.status, reply.complete, reply.closed) == (200, True, False)
        stalled.sendall(HALF_HEAD)
        assert closed_unanswered(stalled)
        assert wait_until(lambda: [m for m in logs(logging.WARNING) if m.startswith(TIMED_OUT[0] + " 0.5 s")])
        assert closed_unanswered(idle)  # by aiohttp's keep-alive timeout: it never began a head
    assert sum(m.startswith(TIMED_OUT[0]) for m in logs(logging.WARNING)) == 1
    # a head sent in pieces, whole within the timeout, is answered
    port = net.proxy(stub.url, head_timeout=5.0)
    request = http("GET", "/v1/models")
    with socket.create_connection(("127.0.0.1", port), timeout=HANG_GUARD) as sock:
        for piece in (request[:10], request[10:25], request[25:]):
            sock.sendall(piece)
            time.sleep(0.1)
        assert read_reply(sock).body == MODELS


def test_at_the_cap_a_new_connection_closes_the_longest_idle_one(net, logs):
    stub = models_stub(net)
    port = net.proxy(stub.url, max_clients=4, head_timeout=60.0)
    idle = [socket.create_connection(("127.0.0.1", port), timeout=HANG_GUARD) for _ in range(4)]
    try:
        assert send(port, http("GET", "/v1/models")).body == MODELS  # a fifth: the first idle one makes room
        assert closed_unanswered(idle[0])
        for sock in idle[1:]:  # the others are still served
            sock.sendall(http("GET", "/v1/models"))
            assert read_reply(sock).body == MODELS
    finally:
        for sock in idle:
            sock.close()
    assert [m for m in logs(logging.WARNING) if m.startswith("client connections:")] == [
        "client connections: 4 open (--max-clients): closing the longest idle to let new ones in"
    ]


def test_when_every_open_connection_is_busy_one_more_is_refused(net, logs):
    release = threading.Event()

    async def script(request, reader, writer):
        while request[1] == "/v1/wait" and not release.is_set():
            await asyncio.sleep(0.01)
        return await answer(writer, [request[1].encode()], framing="length", content_type="text/plain")

    stub = net.upstream(script)
    port = net.proxy(stub.url, max_clients=3)
    busy = [socket.create_connection(("127.0.0.1", port), timeout=HANG_GUARD) for _ in range(3)]
    try:
        for sock in busy:
            sock.sendall(http("GET", "/v1/wait"))
        assert wait_until(lambda: stub.busy == 3)
        with socket.create_connection(("127.0.0.1", port), timeout=HANG_GUARD) as extra:
            with contextlib.suppress(OSError):  # (it may be closed already)
                extra.sendall(http("GET", "/v1/models"))
            assert closed_unanswered(extra)
        release.set()
        assert [read_reply(sock).body for sock in busy] == [b"/v1/wait"] * 3
    finally:
        release.set()
        for sock in busy:
            sock.close()
    assert send(port, http("GET", "/v1/after")).body == b"/v1/after"  # room again
    assert [request[1] for request in stub.requests] == ["/v1/wait"] * 3 + ["/v1/after"]
    assert [m for m in logs(logging.WARNING) if m.startswith("client connections:")] == [
        "client connections: all 3 open are busy (--max-clients): refusing new ones"
    ]


BAD_REQUESTS = [
    b"GET /x\xc3\x82 HTTP/1.1\r\nHost: x\r\n\r\n",  # a byte not allowed in a path
    b"GET /v1/models HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n",
    b"GET /v1/models HTTP/1.1\r\nHost: x\r\nContent-Length: x1\r\n\r\n",
    b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + bytes(range(32)) + b"\r\n\r\n",  # TLS to a plain port
    b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",  # a request line too long
]


def test_a_malformed_request_is_one_log_line_without_a_traceback(net, caplog):
    caplog.set_level(logging.DEBUG)
    stub = models_stub(net)
    port = net.proxy(stub.url)
    for data in BAD_REQUESTS:
        assert send(port, data).status == 400
    assert stub.connections == 0
    lines = wait_until(
        lambda: (
            (found := [r for r in caplog.records if r.getMessage().startswith("malformed request")])
            and len(found) == len(BAD_REQUESTS)
            and found
        )
    )
    for record in lines:
        assert (record.name, record.levelno, record.exc_info) == ("textcalls.proxy", logging.INFO, None)
        assert re.fullmatch(r"malformed request( from 127\.0\.0\.1)?: 400 \S.*", record.getMessage())
        assert "\n" not in record.getMessage() and len(record.getMessage()) < 600
    assert [r for r in caplog.records if r.name.startswith("aiohttp")] == []  # no traceback, nothing there


def limit_descriptors(n: int):
    """A ``preexec_fn`` giving the child a descriptor limit of ``n``."""

    def preexec():
        import resource

        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))

    return preexec


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a child's descriptor limit (setrlimit)")
def test_at_a_256_descriptor_limit_300_half_open_connections_keep_no_client_out(net):
    stub = models_stub(net)
    args = ("--upstream", stub.url, "--listen", "127.0.0.1:0", "--head-timeout", "1")
    with command(*args, patch={"LOG_INTERVAL": 3600.0}, preexec_fn=limit_descriptors(256)) as run:
        port = run.port
        attack = half_open(port, 300)
        try:
            replies = [send(port, http("GET", "/v1/models")) for _ in range(20)]
            bad = send(port, BAD_REQUESTS[0])
            assert all(closed_unanswered(sock) for sock in attack)
        finally:
            for sock in attack:
                sock.close()
        assert send(port, http("GET", "/v1/models")).body == MODELS  # after the attack too
        lines = [line.split(" ", 4)[-1] for line in run.stop()]  # the messages, after time, logger and level
    assert [(r.status, r.body) for r in replies] == [(200, MODELS)] * 20
    assert bad.status == 400
    assert "the descriptor limit (ulimit -n) leaves room for 124 client connections at once (--max-clients)" in lines
    assert told(lines, *TIMED_OUT) + told(lines, *CLOSED_IDLE) == 300
    assert sum(line.startswith("malformed request from 127.0.0.1: 400 ") for line in lines) == 1
    assert sum(line.startswith("cannot accept client connections") for line in lines) <= 1  # a burst may pass the cap
    assert not [line for line in lines if "Traceback" in line or "ERROR" in line]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a child's descriptor limit (setrlimit)")
def test_accepts_refused_for_want_of_descriptors_are_one_line_not_one_each(net):
    stub = models_stub(net)
    args = ("--upstream", stub.url, "--listen", "127.0.0.1:0", "--head-timeout", "1", "--max-clients", "1000")
    with command(*args, patch={"LOG_INTERVAL": 3600.0}, preexec_fn=limit_descriptors(64)) as run:
        port = run.port
        attack = half_open(port, 120)  # more than the descriptors: the rest wait in the listening queue
        try:
            run.line(lambda line: "cannot accept client connections for now" in line, "the failed accepts")
            assert all(closed_unanswered(sock) for sock in attack)  # each taken in turn, then timed out
        finally:
            for sock in attack:
                sock.close()
        assert send(port, http("GET", "/v1/models")).body == MODELS
        lines = [line.split(" ", 4)[-1] for line in run.stop()]
    failed = [line for line in lines if "accept" in line]
    assert failed[0] == "cannot accept client connections for now: [Errno 24] Too many open files"
    assert len(failed) <= 2 and all(
        re.match(r"accepting a client connection failed \d+ more times", line) for line in failed[1:]
    )
    assert told(lines, *TIMED_OUT) == 120
    assert not [line for line in lines if "Traceback" in line or "ERROR" in line]


def test_start_checks_its_connection_settings(loop):
    for options, error, message in [
        ({"head_timeout": 0}, ValueError, "head_timeout must be a number of seconds > 0, not 0"),
        ({"idle_timeout": -1.0}, ValueError, "idle_timeout must be a number of seconds > 0, not -1.0"),
        ({"idle_timeout": "9"}, TypeError, "idle_timeout must be a number of seconds, not str"),
        ({"max_clients": 0}, ValueError, "max_clients must be >= 1, not 0"),
        ({"max_clients": 2.5}, TypeError, "max_clients must be an int, not float"),
    ]:
        with pytest.raises(error) as exc:
            loop.run(proxy.start("http://127.0.0.1:1", host="127.0.0.1", port=0, **options))
        assert str(exc.value) == message


# --- --workers under supervision ----------------------------------------------------------------------

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SO_REUSEPORT workers; /proc")


def free_port() -> int:
    with socket.socket() as probe:  # --workers needs a fixed port
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def state(pid: int) -> str:
    """A process's state letter (``Z``: a zombie, done but not reaped), or ``gone``."""
    try:
        return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "gone"


def banners(run: Command, n: int) -> list:
    """The pids of the first ``n`` processes that said they serve (JSON log lines)."""
    found = wait_until(
        lambda: (
            len(pids := [entry["pid"] for entry in map(json.loads, list(run.lines)) if "proxy on" in entry["message"]])
            >= n
            and pids
        ),
        f"{n} banners",
    )
    return found[:n]


def messages(run: Command) -> list:
    """The JSON log lines so far, as (pid, message, path or None)."""
    return [(entry["pid"], entry["message"], entry.get("path")) for entry in map(json.loads, list(run.lines))]


def test_restart_delays_grow_while_workers_die_young_and_reset_after_one_served():
    delays, delay = [], 0.0
    for _ in range(9):
        delay = proxy._restart_delay(delay, lived=1.0)
        delays.append(delay)
    assert delays == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]
    assert proxy._restart_delay(30.0, lived=proxy._STABLE) == 0.0  # served long enough: replaced at once
    assert proxy._restart_delay(0.0, lived=0.1) == 0.5


@linux_only
def test_a_killed_worker_is_replaced_by_one_serving_the_port_and_its_counts_kept(net):
    stub = models_stub(net)
    port = free_port()
    args = ("--upstream", stub.url, "--listen", f"127.0.0.1:{port}", "--workers", "3", "--log-format", "json")
    with command(*args) as run:
        pids = banners(run, 3)
        parent = run.proc.pid
        assert parent in pids and len(set(pids)) == 3
        sent = 0
        for _ in range(30):
            assert send(port, http("GET", "/v1/models")).body == MODELS
            sent += 1

        def logged() -> int:
            return sum(path == "/v1/models" for _, _, path in messages(run))

        assert wait_until(lambda: logged() == sent)  # counted and logged (just after each answer) before the kill
        victim = min(pid for pid in pids if pid != parent)
        os.kill(victim, signal.SIGKILL)
        (new,) = [pid for pid in banners(run, 4) if pid not in pids]  # a fourth banner: the replacement
        died = rf"worker [12] \(pid {victim}\) was killed by SIGKILL after [\d.]+ s: starting another( in [\d.]+ s)?"
        assert [pid for pid, message, _ in messages(run) if re.fullmatch(died, message)] == [parent]
        while new not in {pid for pid, _, path in messages(run) if path == "/v1/models"}:  # it serves the port
            assert sent < 1000, "the new worker never served"
            assert send(port, http("GET", "/v1/models")).body == MODELS
            sent += 1
        assert wait_until(lambda: logged() == sent)
        # the counts of the killed worker stay: every request is counted, whoever answered it
        assert metric(port, "/v1/models", "relayed") == sent
        assert state(victim) == "gone"  # reaped by its parent
        run.stop()
    stopping = [pid for pid, message, _ in messages(run) if message == "textcalls proxy stopping (SIGTERM)"]
    assert sorted(stopping) == sorted({*pids, new} - {victim})


DIE_AS_YOU_START = """
if __name__ == "__mp_main__":  # a worker (multiprocessing imports this script under that name): it dies as it starts
    def _serve(*args, **kwargs):
        raise SystemExit(3)

    p._serve = _serve
"""


@linux_only
def test_a_worker_that_dies_as_it_starts_is_restarted_later_each_time(net):
    stub = models_stub(net)
    port = free_port()
    args = ("--upstream", stub.url, "--listen", f"127.0.0.1:{port}", "--workers", "2", "--log-format", "json")
    # _STABLE out of reach: the delays follow from the doubling rule alone, not from how long a loaded machine
    # takes to start a worker (a lifetime past _STABLE would reset them)
    with command(*args, patch={"_STABLE": 1e9}, prelude=DIE_AS_YOU_START) as run:
        deaths = wait_until(
            lambda: len(found := [m for _, m, _ in messages(run) if " exited with code 3 after " in m]) >= 3 and found,
            "three deaths",
        )
        assert send(port, http("GET", "/v1/models")).body == MODELS  # the parent serves meanwhile
        run.stop()
    pattern = r"worker 1 \(pid (\d+)\) exited with code 3 after [\d.]+ s: starting another in ([\d.]+) s"
    found = [re.fullmatch(pattern, m).groups() for m in deaths[:3]]
    assert [float(delay) for _, delay in found] == [0.5, 1.0, 2.0]  # not a spin: each wait twice the last
    assert len({pid for pid, _ in found}) == 3


NO_PRCTL = """
if __name__ == "__mp_main__":  # a worker without Linux's parent-death signal
    p._die_with_parent = lambda parent: __import__("os").getppid() == parent
"""
NO_PIPE = (
    NO_PRCTL
    + """
    import multiprocessing

    multiprocessing.parent_process = lambda: None  # nor the pipe from its parent: its parent's pid checked alone
"""
)


@linux_only
@pytest.mark.parametrize(
    ("prelude", "why"), [("", None), (NO_PRCTL, "gone"), (NO_PIPE, "gone")], ids=["prctl", "pipe", "getppid"]
)
def test_when_the_parent_is_killed_its_workers_stop_and_free_the_port(net, prelude, why):
    stub = models_stub(net)
    port = free_port()
    args = ("--upstream", stub.url, "--listen", f"127.0.0.1:{port}", "--workers", "3", "--log-format", "json")
    with command(*args, prelude=prelude) as run:
        pids = banners(run, 3)
        parent = run.proc.pid
        workers = [pid for pid in pids if pid != parent]
        for _ in range(10):
            assert send(port, http("GET", "/v1/models")).body == MODELS
        os.kill(parent, signal.SIGKILL)
        assert run.proc.wait(HANG_GUARD) == -signal.SIGKILL

        def refused() -> bool:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=HANG_GUARD).close()
            except ConnectionRefusedError:
                return True
            return False

        assert wait_until(refused, "no process listening on the port")
        assert wait_until(lambda: all(state(pid) in ("gone", "Z") for pid in workers), "the workers' ends")
        run.reader.join(HANG_GUARD)  # stderr's end: every worker closed it
    stopping = {pid: message for pid, message, _ in messages(run) if message.startswith("textcalls proxy stopping")}
    assert sorted(stopping) == sorted(workers)
    if why == "gone":
        assert set(stopping.values()) == {f"textcalls proxy stopping (its parent process {parent} is gone)"}


@linux_only
def test_a_worker_asks_linux_for_a_signal_when_its_parent_dies():
    code = (
        "import ctypes, os\n"
        "from textcalls.proxy import _die_with_parent\n"
        "alive = _die_with_parent(os.getppid())\n"
        "signal = ctypes.c_int(0)\n"
        "ctypes.CDLL(None).prctl(2, ctypes.byref(signal), 0, 0, 0)  # PR_GET_PDEATHSIG\n"
        "print(alive, signal.value, _die_with_parent(os.getppid() + 1))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG_GUARD, check=True)
    assert done.stdout.split() == [
        "True",
        str(int(signal.SIGTERM)),
        "False",
    ]  # (the last: a parent that is not its own)
