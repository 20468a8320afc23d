"""The proxy under load: requests/s and latency at 1, 50 and 200 concurrent streams, direct to the stub upstream
and through ``textcalls proxy`` with 1 and 2 workers, all measured in one run.

    python -m benchmarks.proxy_load [SECONDS_PER_CELL]

Each request is a streamed chat completion whose text carries two Hermes calls (the proxy recovers both).
The stub upstream is one Python process, so at high concurrency it may be what limits every row; compare
the proxy rows with the direct row of the same concurrency.
"""

from __future__ import annotations

import asyncio
import json
import socket
import statistics
import sys
import tempfile
import time

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


async def _load(url: str, concurrency: int, seconds: float) -> tuple[float, float, float]:
    """(requests/s, median latency ms, p99 latency ms) of ``concurrency`` clients for ``seconds``."""
    latencies: list[float] = []
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one() -> None:
            start = time.perf_counter()
            async with session.post(
                url + "/v1/chat/completions", data=BODY, headers={"Content-Type": "application/json"}
            ) as response:
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
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    return len(latencies) / elapsed, statistics.median(latencies) * 1000, p99 * 1000


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def main(seconds: float = 3.0) -> None:
    with (
        tempfile.NamedTemporaryFile("w+") as up_log,
        tempfile.NamedTemporaryFile("w+") as log1,
        tempfile.NamedTemporaryFile("w+") as log2,
    ):
        upstream, up_url = _spawn(["-m", "tests.gateway_support.upstream"], up_log)
        procs = [upstream]
        try:
            targets = {"direct": up_url}
            for workers, log in ((1, log1), (2, log2)):
                proc, url = _spawn(
                    [
                        "-m",
                        "textcalls",
                        "proxy",
                        "--upstream",
                        up_url,
                        "--prompt-guided",
                        "--listen",
                        f"127.0.0.1:{_free_port()}",
                        "--workers",
                        str(workers),
                    ],
                    log,
                )
                procs.append(proc)
                targets[f"proxy, {workers} worker{'s' if workers > 1 else ''}"] = url
            print(f"{'target':<18} {'streams':>7} {'req/s':>8} {'median ms':>10} {'p99 ms':>8}")
            for concurrency in (1, 50, 200):
                for name, url in targets.items():
                    rate, median, p99 = asyncio.run(_load(url, concurrency, seconds))
                    print(f"{name:<18} {concurrency:>7} {rate:>8.0f} {median:>10.2f} {p99:>8.2f}", flush=True)
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait(10)


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 3.0)
