"""The proxy against hostile clients and lost processes (issue 28): slow request heads and piles of
connections, huge bodies, paths the router cannot match, who may read ``/metrics``, and ``--workers``
under supervision.

Through the real aiohttp app (``proxy.start`` on a loop thread, a raw stub upstream, raw client sockets) or
the real command (``python -m textcalls proxy``) with small timeouts; every wait is bounded only as a guard
against a hang (``waiting.py``), and the tests assert what happened, never how fast.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import subprocess
import sys
import threading

import pytest

pytest.importorskip("aiohttp", reason="the proxy runs on aiohttp")

from textcalls import proxy
from textcalls.cli import main

from ..gateway_support.upstream import LoopThread
from ..waiting import HANG_GUARD, wait_until
from .test_proxy_faults import Net, error_of, http, script_of, send


@pytest.fixture(scope="module")
def loop():
    thread = LoopThread()
    yield thread
    thread.close()


@pytest.fixture
def net(loop):
    n = Net(loop)
    yield n
    n.close()


@pytest.fixture
def logs(caplog):
    """The messages the proxy logged at ``level`` or above, so far."""
    caplog.set_level(logging.INFO, logger="textcalls.proxy")

    def messages(level=logging.INFO):
        return [r.getMessage() for r in caplog.records if r.name == "textcalls.proxy" and r.levelno >= level]

    return messages


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
def command(*args: str, env: dict | None = None, patch: dict | None = None, preexec_fn=None):
    """``textcalls proxy ARGS`` through ``cli.main`` in a subprocess, as a ``Command``; ``env``: more environment;
    ``patch``: constants of ``textcalls.proxy`` set first (``LOG_INTERVAL``). Killed if still running at the end."""
    setting = "".join(f"p.{name} = {value!r}; " for name, value in (patch or {}).items())
    code = f"import sys, textcalls.proxy as p; {setting}from textcalls.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "proxy", *args],
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
