"""Gateway benchmarks: recover_stream and SSERecovery on untouched chunks, and SSERecovery once every event is
decoded (by the JSON backend in use, and by the standard library's), against json.loads of the same chunks; the
proxy against the stub upstream it fronts (separate processes, loopback).

    python -m pytest benchmarks/bench_gateway.py --benchmark-only -q

Ratios are printed at the end of the run (see conftest). Latency figures are medians.
"""

import http.client
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import pytest

from textcalls import _scan, _scan_c, _scan_py, _wire, sse
from textcalls.sse import SSERecovery
from textcalls.stream import recover_stream

from .conftest import BEST, ratio
from .corpora import WORDS as CORPUS_WORDS

IMPLS = {"c": _scan_c, "py": _scan_py}
ROOT = pathlib.Path(__file__).resolve().parent.parent
WORDS = CORPUS_WORDS[:16]  # "the model answered … in paris and oslo": one word per chunk
N = 2000


def _chunk(i, content):
    return {
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion.chunk",
        "created": 1741570283,
        "model": "gpt-4o-2024-08-06",
        "system_fingerprint": "fp_eb9dce56a8",
        "choices": [{"index": 0, "delta": {"content": content}, "logprobs": None, "finish_reason": None}],
    }


CHUNKS = [_chunk(i, " " + WORDS[i % len(WORDS)]) for i in range(N)]
RAW = [json.dumps(c, separators=(",", ":")).encode() for c in CHUNKS]  # ~250 bytes each
EVENTS = [b"data: " + r + b"\n\n" for r in RAW]
STREAM = b"".join(EVENTS)
READS = [STREAM[i : i + 4096] for i in range(0, len(STREAM), 4096)]
# A call first: from then on the choice is active and every event is decoded.
AFTER_CALL = b"".join(
    [
        b"data: " + json.dumps(_chunk(0, '<tool_call>{"name": "f", "arguments": {}}</tool_call>')).encode() + b"\n\n",
        *EVENTS,
    ]
)

ratio("recover_stream per untouched chunk (Cython) / json.loads", "chunks-c", "json-loads", "target <= 0.3")
ratio("recover_stream per untouched chunk (twin) / json.loads", "chunks-py", "json-loads", "target <= 0.3")
ratio("SSERecovery per untouched event, 1 event per feed / json.loads", "sse-events-c", "json-loads", "target <= 0.3")
ratio("SSERecovery per untouched event, 4 KiB reads / json.loads", "sse-reads-c", "json-loads", "target <= 0.3")
ratio(
    f"SSERecovery per event once a call was seen (decoded; JSON: {_wire.BACKEND}) / json.loads",
    "sse-decoded-c",
    "json-loads",
    "target <= 1.5",
)
ratio(
    "the same, the standard library's JSON (TEXTCALLS_JSON=stdlib)",
    "sse-decoded-c-stdlib",
    "json-loads",
    "target <= 1.5",
)
ratio(
    "SSERecovery, one event fed byte by byte: 256 KiB / 64 KiB (linear = 4)",
    "sse-bytewise-256k",
    "sse-bytewise-64k",
    "target ~ 4",
)
ratio("proxy / direct: streamed, 40 events 2 ms apart (median)", "proxy-paced", "direct-paced", "target <= 1.10")
ratio("proxy / direct: streamed, 4000 events unpaced (median)", "proxy-bulk", "direct-bulk")
ratio("proxy / direct: non-streamed with a call to recover (median)", "proxy-json", "direct-json")
ratio("proxy / direct: non-streamed without tools, relayed (median)", "proxy-relayed", "direct-relayed")


def _loads(raw):
    loads = json.loads
    for r in raw:
        loads(r)


def _chunks(chunks):
    for _ in recover_stream(chunks, native=True, has_tools=True):
        pass


def _sse(pieces):
    feed = SSERecovery(native=True, has_tools=True).feed
    for piece in pieces:
        feed(piece)


def test_json_loads_baseline(bench):
    bench("json-loads", _loads, RAW)


@pytest.mark.parametrize("impl", IMPLS)
def test_recover_stream_untouched(bench, monkeypatch, impl):
    monkeypatch.setattr(_scan, "impl", IMPLS[impl])
    bench(f"chunks-{impl}", _chunks, CHUNKS)


def test_sse_one_event_per_feed(bench):
    bench("sse-events-c", _sse, EVENTS)


def test_sse_network_reads(bench):
    bench("sse-reads-c", _sse, READS)


@pytest.mark.parametrize("json_backend", ["default", "stdlib"])
def test_sse_every_event_decoded(bench, monkeypatch, json_backend):
    if json_backend == "stdlib":
        monkeypatch.setattr(sse, "loads", _wire.loads_stdlib)
    name = "sse-decoded-c" if json_backend == "default" else "sse-decoded-c-stdlib"
    bench(name, _sse, [AFTER_CALL[i : i + 4096] for i in range(0, len(AFTER_CALL), 4096)])


def _bytewise(size):
    """A plain event (its shape is remembered), then one of ``size`` bytes of text, byte by byte."""
    event = b"data: " + json.dumps(_chunk(0, "x" * size)).encode() + b"\n\n"
    return [EVENTS[0]] + [event[i : i + 1] for i in range(len(event))]


@pytest.mark.parametrize(("name", "size"), [("sse-bytewise-64k", 64 * 1024), ("sse-bytewise-256k", 256 * 1024)])
def test_sse_one_event_byte_by_byte(benchmark, name, size):
    pieces = _bytewise(size)
    benchmark.pedantic(_sse, args=(pieces,), rounds=3)
    BEST[name] = benchmark.stats.stats.min


# --- the proxy, in its own process, against the stub upstream in another ----------------------------


def _spawn(args, log):
    """Start ``python args`` with stdout+stderr to ``log``; return (process, first http:// URL it printed)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, *args], stdout=log, stderr=log, env=env, cwd=ROOT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for word in pathlib.Path(log.name).read_text().split():
            if word.startswith("http://"):
                return proc, word
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"{args} did not start: {pathlib.Path(log.name).read_text()}")


@pytest.fixture(scope="module")
def servers():
    with tempfile.NamedTemporaryFile("w+") as up_log, tempfile.NamedTemporaryFile("w+") as proxy_log:
        upstream, up_url = _spawn(["-m", "tests.gateway_support.upstream"], up_log)
        try:
            proxy, proxy_url = _spawn(
                ["-m", "textcalls", "proxy", "--upstream", up_url, "--listen", "127.0.0.1:0"], proxy_log
            )
            try:
                yield up_url, proxy_url
            finally:
                proxy.terminate()
                proxy.wait(10)
        finally:
            upstream.terminate()
            upstream.wait(10)


TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]


def _body(model, tools=TOOLS, **extra):
    return json.dumps({"model": model, "messages": [{"role": "user", "content": "hi"}], "tools": tools, **extra})


def _client(url):
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)

    def request(body):
        conn.request(
            "POST",
            "/v1/chat/completions",
            body=body,
            headers={"Content-Type": "application/json", "Authorization": "Bearer sk-bench"},
        )
        response = conn.getresponse()
        data = response.read()
        assert response.status == 200, data
        return data

    return request, conn


CASES = {
    "paced": (_body("paced", stream=True, x_events=40, x_delay=0.002), 30),
    "bulk": (_body("paced", stream=True, x_events=4000), 15),
    "json": (_body("hermes"), 200),
    "relayed": (_body("hermes", tools=None), 200),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("via", ["direct", "proxy"])
def test_proxy_against_direct(benchmark, servers, via, case):
    body, rounds = CASES[case]
    request, conn = _client(servers[1] if via == "proxy" else servers[0])
    try:
        data = benchmark.pedantic(request, args=(body,), rounds=rounds, warmup_rounds=2)
    finally:
        conn.close()
    if case == "json":
        assert (b"tool_calls" in data) == (via == "proxy")  # the proxy did recover the call
    BEST[f"{via}-{case}"] = benchmark.stats.stats.median
    benchmark.extra_info["MB/s"] = round(len(data) / benchmark.stats.stats.median / 1e6, 2)
