"""The proxy under load, side by side with what a gateway operator would run instead: requests/s, median and p99
latency, and the CPU each request cost the process serving it, at 1, 50 and 200 concurrent streams, all in one run
against one stub upstream:

- direct to the stub upstream (its CPU column is the stub's own);
- ``textcalls proxy`` with one worker on asyncio's event loop, one on uvloop (where installed), and N workers;
- the LiteLLM proxy (``litellm --config``, one worker and N), relaying the same streams to the same upstream
  (where installed: the ``bench-proxy`` extra pins it).

    pip install ".[bench-proxy]" && python -m benchmarks.proxy_load [--seconds 3] [--rounds 1] [--workers 2]

Each request is a streamed chat completion whose text carries two Hermes calls: ``textcalls proxy
--prompt-guided`` recovers both; LiteLLM, configured with the stub as an ``openai/`` model and nothing else (its
master key set, as the tests run it), relays them as text. The client, the stub upstream and the proxies share the
machine, so compare within a column, and the proxies with the direct row of the same concurrency. The cells of
one concurrency are measured one after another, each target in turn (``--rounds R``: R times over, interleaved);
the summary takes each cell's median over the rounds. The CPU column (Linux: ``/proc``, the process and its
children) is the least noisy figure on a shared machine: it does not count the time a process waited for a core.

One run, 2026-12-07 05:33 UTC, main at bc1f390 with this branch's proxy changes (--loop, no cookie jar), the 2-core
development machine shared with other work, CPython 3.11.7, aiohttp 3.14.5, uvloop 0.23.0, litellm 1.108.7,
``python -m benchmarks.proxy_load --seconds 3`` (req/s, median ms, CPU ms a request; docs/performance.md has the
p99, a repeat, the profile and the A/B of what was tried):

    target                  1 stream            50 streams           200 streams
    direct                  2592  0.34  0.19    4452  10.7  0.11     4322   45.7  0.12
    textcalls, asyncio       769  1.20  0.76    2106  22.3  0.46     1024    189  0.63
    textcalls, uvloop        870  1.10  0.63    2197  21.2  0.45     1091    173  0.58
    textcalls, 2 workers     900  1.07  0.75    2182  21.3  0.52     1130    173  0.63
    litellm                   48  20.0  20.97     59   842  19.74      62   3336  30.14
    litellm, 2 workers        50  18.8  20.00     58   611  21.72      53   3707  39.76

Goals: the proxy adds <= 0.3 ms to the median at one stream (not met: 0.72-0.86 ms, 1.09-1.25 ms in the repeat:
the proxy's own CPU a request, all of it on the path at one stream, is over 0.3 ms) and serves >= 3x LiteLLM's
req/s at 50 streams (met: 35-37x, 35x in the repeat).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from .bench_gateway import _spawn

BODY = json.dumps(
    {
        "model": "hermes",
        "messages": [{"role": "user", "content": "Weather and time in Paris?"}],
        "tools": [{"type": "function", "function": {"name": n}} for n in ("get_weather", "get_time")],
        "stream": True,
    }
)
CONCURRENCY = (1, 50, 200)


async def _load(url: str, concurrency: int, seconds: float, headers: dict | None = None) -> tuple[int, float, list]:
    """(requests done, seconds taken, their latencies in seconds, sorted) of ``concurrency`` clients for ``seconds``."""
    latencies: list[float] = []
    connector = aiohttp.TCPConnector(limit=concurrency)
    sent = {"Content-Type": "application/json", **(headers or {})}
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one() -> None:
            start = time.perf_counter()
            async with session.post(url + "/v1/chat/completions", data=BODY, headers=sent) as response:
                data = await response.read()
                assert response.status == 200 and b"[DONE]" in data, data[:200]
            latencies.append(time.perf_counter() - start)

        async def client(stop: float) -> None:
            while time.perf_counter() < stop:
                await one()

        await asyncio.gather(*(one() for _ in range(concurrency)))  # warm up the connections
        latencies.clear()
        begin = time.perf_counter()
        await asyncio.gather(*(client(begin + seconds) for _ in range(concurrency)))
        elapsed = time.perf_counter() - begin
    latencies.sort()
    return len(latencies), elapsed, latencies


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (Linux)."""
    found = [pid]
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            for child in Path(f"/proc/{pid}/task/{task}/children").read_text().split():
                found += _tree(int(child))
    return found


def _cpu(pid: int | None) -> float | None:
    """Seconds of CPU (user and system) used so far by ``pid`` and its descendants; None where /proc has none."""
    if pid is None or not os.path.exists(f"/proc/{pid}/stat"):
        return None
    total = 0
    for each in _tree(pid):
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime (in clock ticks)
    return total / os.sysconf("SC_CLK_TCK")


def _litellm_pid(port: str) -> int | None:
    """The pid of this process's child ``litellm`` proxy serving ``port``."""
    for child in _tree(os.getpid())[1:]:
        with contextlib.suppress(OSError):
            argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            if b"litellm.proxy.proxy_cli" in argv and port.encode() in argv:
                return child
    return None


class Target:
    def __init__(self, name: str, url: str, pid: int | None, headers: dict | None = None) -> None:
        self.name, self.url, self.pid, self.headers = name, url, pid, headers


def _textcalls(stack, up_url: str, name: str, *flags: str) -> Target:
    log = stack.enter_context(tempfile.NamedTemporaryFile("w+"))  # noqa: SIM115 - closed by the stack
    args = ["-m", "textcalls", "proxy", "--upstream", up_url, "--prompt-guided"]
    proc, url = _spawn([*args, "--listen", f"127.0.0.1:{_free_port()}", *flags], log)
    stack.callback(_stop, proc)
    return Target(name, url, proc.pid)


def _litellm(stack, up_url: str, name: str, *flags: str) -> Target:
    from tests.gateway_support.litellm_proxy import litellm_proxy

    params = {"model": "openai/hermes", "api_base": f"{up_url}/v1", "api_key": "sk-stub"}
    config = {"model_list": [{"model_name": "hermes", "litellm_params": params}]}
    workdir = Path(stack.enter_context(tempfile.TemporaryDirectory()))
    url, key = stack.enter_context(litellm_proxy(config, workdir, args=flags))
    return Target(name, url, _litellm_pid(url.rsplit(":", 1)[1]), {"Authorization": f"Bearer {key}"})


def _stop(proc) -> None:
    proc.terminate()
    proc.wait(10)


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.proxy_load", description=__doc__.split("\n\n")[0])
    parser.add_argument("seconds_", nargs="?", type=float, help=argparse.SUPPRESS)  # the old positional form
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds of load a cell (default 3)")
    parser.add_argument("--rounds", type=int, default=1, help="measure every cell this many times (default 1)")
    parser.add_argument("--workers", type=int, default=2, help="the N of the N-worker rows (default 2)")
    parser.add_argument("--no-litellm", action="store_true", help="leave the LiteLLM rows out")
    args = parser.parse_args(argv)
    seconds = args.seconds_ or args.seconds
    n = args.workers
    with contextlib.ExitStack() as stack:
        up_log = stack.enter_context(tempfile.NamedTemporaryFile("w+"))
        upstream, up_url = _spawn(["-m", "tests.gateway_support.upstream"], up_log)
        stack.callback(_stop, upstream)
        targets = [Target("direct", up_url, upstream.pid)]
        targets.append(_textcalls(stack, up_url, "textcalls, asyncio", "--loop", "asyncio"))
        if _has("uvloop"):
            targets.append(_textcalls(stack, up_url, "textcalls, uvloop", "--loop", "uvloop"))
        targets.append(_textcalls(stack, up_url, f"textcalls, {n} workers", "--workers", str(n)))
        if args.no_litellm:
            pass
        elif _has("litellm"):
            targets.append(_litellm(stack, up_url, "litellm"))
            targets.append(_litellm(stack, up_url, f"litellm, {n} workers", "--num_workers", str(n)))
        else:
            print("litellm is not installed (pip install '.[bench-proxy]'): its rows are left out", file=sys.stderr)
        cells: dict[tuple[str, int], list[tuple[float, float, float, float | None]]] = {}
        print(f"{'target':<22} {'streams':>7} {'req/s':>8} {'median ms':>10} {'p99 ms':>8} {'CPU ms/req':>11}")
        for concurrency in CONCURRENCY:
            for _ in range(args.rounds):
                for target in targets:
                    before = _cpu(target.pid)
                    done, elapsed, latencies = asyncio.run(_load(target.url, concurrency, seconds, target.headers))
                    after = _cpu(target.pid)
                    rate = done / elapsed
                    median = statistics.median(latencies) * 1000
                    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000
                    cpu = None if before is None or after is None else (after - before) / done * 1000
                    cells.setdefault((target.name, concurrency), []).append((rate, median, p99, cpu))
                    shown = "-" if cpu is None else f"{cpu:.2f}"
                    print(
                        f"{target.name:<22} {concurrency:>7} {rate:>8.0f} {median:>10.2f} {p99:>8.2f} {shown:>11}",
                        flush=True,
                    )
        _summary(cells, targets)


def _summary(cells: dict, targets: list[Target]) -> None:
    """The goals' figures, from each cell's median over the rounds."""

    def median(name: str, concurrency: int, column: int) -> float:
        return statistics.median(cell[column] for cell in cells[name, concurrency])

    names = [t.name for t in targets]
    print()
    for name in names:
        if name.startswith("textcalls"):
            added = median(name, 1, 1) - median("direct", 1, 1)
            print(f"{name}: adds {added:.2f} ms to the median at 1 stream (goal <= 0.3)")
    pairs = [("textcalls, asyncio", "litellm"), ("textcalls, uvloop", "litellm")]
    pairs += [(name, f"litellm, {name.split(', ')[1]}") for name in names if name.startswith("textcalls, ")]
    for mine, theirs in pairs:
        if mine not in names or theirs not in names:
            continue
        for concurrency in CONCURRENCY:
            ratio = median(mine, concurrency, 0) / median(theirs, concurrency, 0)
            goal = " (goal >= 3)" if concurrency == 50 else ""
            cpu = ""
            if cells[mine, concurrency][0][3] is not None and cells[theirs, concurrency][0][3] is not None:
                cpu = f", CPU a request {median(theirs, concurrency, 3) / median(mine, concurrency, 3):.2f}x less"
            print(f"{mine} / {theirs} at {concurrency:>3} streams: req/s {ratio:.2f}x{goal}{cpu}")


if __name__ == "__main__":
    main()
