"""Waiting for what the code under test does in its own time (a log line written after the answer, a socket
closed, a task cancelled): a wait is bounded only to keep a broken build from hanging the suite, and running
past the bound fails the test as hung, never as slow. No test asserts how fast anything is."""

import time

import pytest

#: How long a test waits before it calls the run hung: generous enough that no machine's speed trips it.
HANG_GUARD = 60.0


def wait_until(condition, what="the condition"):
    """Poll ``condition`` until it is true and return its value; fail the test as hung past ``HANG_GUARD``."""
    deadline = time.monotonic() + HANG_GUARD
    while not (value := condition()):
        if time.monotonic() > deadline:
            pytest.fail(f"hung: {what} did not come in {HANG_GUARD} s")
        time.sleep(0.01)
    return value
