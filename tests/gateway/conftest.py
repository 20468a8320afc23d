"""Fixtures of the proxy's fault and hardening tests: one event loop thread per module, the stub network on
it, and the proxy's log."""

from __future__ import annotations

import logging

import pytest

from ..gateway_support.upstream import LoopThread
from .test_proxy_faults import Net


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
