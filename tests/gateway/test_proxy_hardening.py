"""The proxy against hostile clients and lost processes (issue 28): slow request heads and piles of
connections, huge bodies, paths the router cannot match, who may read ``/metrics``, and ``--workers``
under supervision.

Through the real aiohttp app (``proxy.start`` on a loop thread, a raw stub upstream, raw client sockets) or
the real command (``python -m textcalls proxy``) with small timeouts; every wait is bounded only as a guard
against a hang (``waiting.py``), and the tests assert what happened, never how fast.
"""

from __future__ import annotations

import logging
import re

import pytest

pytest.importorskip("aiohttp", reason="the proxy runs on aiohttp")

from ..gateway_support.upstream import LoopThread
from ..waiting import wait_until
from .test_proxy_faults import Net, http, script_of, send


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


def metric(port: int, path: str, outcome: str) -> float:
    """``textcalls_requests_total`` for ``path`` and ``outcome``, read from the proxy's ``/metrics``."""
    reply = send(port, http("GET", "/metrics"))
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
