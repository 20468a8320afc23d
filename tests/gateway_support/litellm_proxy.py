"""A real ``litellm`` proxy process (``litellm --config …``) on a free loopback port, for the end-to-end test."""

from __future__ import annotations

import contextlib
import http.client
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import yaml

#: Seconds the proxy has to answer its liveness probe (it imports a lot; the CI machine is shared).
START_TIMEOUT = 240


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _alive(port: int) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        connection.request("GET", "/health/liveliness")
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


@contextlib.contextmanager
def litellm_proxy(config: dict, workdir: Path, env: dict | None = None, args: tuple = ()):
    """Run ``litellm --config`` (``python -m litellm.proxy.proxy_cli``) with ``config`` (written as ``config.yaml`` in ``workdir``); yield
    ``(base_url, master_key)`` once it answers; ``args``: more of its flags (``--num_workers 2``). Its output goes to
    ``workdir/proxy.log``, shown in the error when it does not start; it is stopped (terminated, then killed) at the
    end."""
    key = "sk-" + secrets.token_hex(24)
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    port = free_port()
    env = {
        **(os.environ if env is None else env),
        "LITELLM_MASTER_KEY": key,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no download of the cost map
        "PYTHONUNBUFFERED": "1",
    }
    log_path = workdir / "proxy.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            # the `litellm` command of this interpreter's environment
            [
                sys.executable,
                "-m",
                "litellm.proxy.proxy_cli",
                "--config",
                str(path),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                *args,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=workdir,
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _alive(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                state = f"exited with {proc.returncode}" if proc.poll() is not None else "did not answer"
                raise RuntimeError(f"litellm proxy {state}; its output:\n{log_path.read_text()[-4000:]}")
            time.sleep(0.25)
        yield f"http://127.0.0.1:{port}", key
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
