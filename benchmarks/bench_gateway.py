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
from functools import partial

import pytest

from textcalls import _kernels, _scan, _scan_c, _scan_py, _wire, sse
from textcalls.sse import SSERecovery
from textcalls.stream import ChunkRecovery, recover_stream

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
    monkeypatch.setattr(_kernels, "impl", IMPLS[impl].KERNELS)
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


# --- Responses and Messages streams: text deltas without markup ------------------------------------


def _api_event(event):
    return (
        b"event: " + event["type"].encode() + b"\ndata: " + json.dumps(event, separators=(",", ":")).encode() + b"\n\n"
    )


def _responses_events(pieces):
    """A streamed Responses answer as the API writes it (``sequence_number`` on every event)."""
    ref = {"item_id": "msg_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654", "output_index": 0, "content_index": 0}
    response = {
        "id": "resp_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654",
        "object": "response",
        "status": "in_progress",
    }
    item = {"id": ref["item_id"], "type": "message", "status": "in_progress", "role": "assistant", "content": []}
    part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
    text = "".join(pieces)
    events = [
        {"type": "response.created", "response": response},
        {"type": "response.in_progress", "response": response},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.content_part.added", **ref, "part": part},
        *({"type": "response.output_text.delta", **ref, "delta": p, "logprobs": []} for p in pieces),
        {"type": "response.output_text.done", **ref, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **ref, "part": {**part, "text": text}},
        {"type": "response.output_item.done", "output_index": 0, "item": {**item, "content": [{**part, "text": text}]}},
        {"type": "response.completed", "response": {**response, "status": "completed"}},
    ]
    return [{"type": e["type"], "sequence_number": n, **e} for n, e in enumerate(events)]


def _messages_events(pieces):
    """A streamed Messages answer as the API writes it."""
    message = {"id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant", "content": []}
    return [
        {"type": "message_start", "message": {**message, "model": "claude-sonnet-4-5", "stop_reason": None}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "ping"},
        *({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}} for p in pieces),
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": N},
        },
        {"type": "message_stop"},
    ]


API_PIECES = [" " + WORDS[i % len(WORDS)] for i in range(N)]
API_EVENTS = {
    "responses": [_api_event(e) for e in _responses_events(API_PIECES)],
    "messages": [_api_event(e) for e in _messages_events(API_PIECES)],
}
API_PAYLOADS = {api: [e.split(b"\ndata: ", 1)[1][:-2] for e in events] for api, events in API_EVENTS.items()}
for _api in API_EVENTS:
    for _how, _feeds in (("events", "1 event per feed"), ("reads", "4 KiB reads"), ("streamed", "stream_arguments")):
        ratio(
            f"{_api.capitalize()} SSE per event without markup, {_feeds} / json.loads",
            f"{_api}-sse-{_how}",
            f"json-loads-{_api}",
            "target <= 1.5",
        )


def _api_sse(cls, pieces, **options):
    feed = cls(native=True, has_tools=True, **options).feed
    for piece in pieces:
        feed(piece)


@pytest.mark.parametrize("api", API_EVENTS)
def test_api_json_loads_baseline(bench, api):
    bench(f"json-loads-{api}", _loads, API_PAYLOADS[api])


@pytest.mark.parametrize("how", ["events", "reads", "streamed"])
@pytest.mark.parametrize("api", API_EVENTS)
def test_api_sse_without_markup(bench, api, how):
    """One event per feed (``streamed``: with ``stream_arguments=True``), or the stream in 4 KiB reads."""
    from textcalls.messages_api import MessagesSSERecovery
    from textcalls.responses_api import ResponsesSSERecovery

    cls = ResponsesSSERecovery if api == "responses" else MessagesSSERecovery
    events = API_EVENTS[api]
    if how == "reads":
        stream = b"".join(events)
        events = [stream[i : i + 4096] for i in range(0, len(stream), 4096)]
    bench(f"{api}-sse-{how}", partial(_api_sse, stream_arguments=how == "streamed"), cls, events)


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


# --- stream_arguments: a 17.5 K-character call, streamed in pieces or sent whole -----------------------

_LONG_CONTENT = "".join(f'line {i}: "quoted" \\ tab\t <b> é\n' for i in range(600))[:17500]
_LONG_ARGUMENTS = json.dumps({"path": "src/app.py", "content": _LONG_CONTENT})
_LONG_TEXT = f'I will write it.\n<tool_call>\n{{"name": "write_file", "arguments": {_LONG_ARGUMENTS}}}\n</tool_call>'
_LONG_TOOLS = [{"type": "function", "function": {"name": "write_file", "parameters": {"type": "object"}}}]


def _paced_deltas(text):
    """``text`` in deltas of 3 to 6 characters (a fixed cycle: the model's pace, one delta a tick)."""
    out, i, k = [], 0, 0
    while i < len(text):
        n = 3 + k % 4
        out.append(text[i : i + n])
        i, k = i + n, k + 1
    return out


_LONG_CHUNKS = [_chunk(0, d) for d in _paced_deltas(_LONG_TEXT)] + [
    {**_chunk(0, ""), "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}]}
]


def _gaps(stream_arguments):
    """(longest gap in characters, in deltas) between the model writing a character of the arguments and the
    client getting it: after each delta, the arguments written so far against those received so far."""
    recovery = ChunkRecovery(native=True, has_tools=True, tools=_LONG_TOOLS, stream_arguments=stream_arguments)
    offset = _LONG_TEXT.index(_LONG_ARGUMENTS)
    written = received = fed = 0
    when: list = []  # delta number at which each arguments character was written
    chars = deltas = 0
    for tick, chunk in enumerate(_LONG_CHUNKS):
        fed += len(chunk["choices"][0]["delta"].get("content") or "")
        now = min(max(fed - offset, 0), len(_LONG_ARGUMENTS))
        when += [tick] * (now - written)
        written = now
        for out in recovery.push(chunk):
            for choice in out["choices"]:
                for entry in choice["delta"].get("tool_calls") or []:
                    got = len(entry["function"]["arguments"])
                    if got:
                        deltas = max(deltas, tick - when[received])  # the oldest character in this piece
                        received += got
        chars = max(chars, written - received)
    assert received == len(_LONG_ARGUMENTS)
    return chars, deltas


def test_stream_arguments_gap(benchmark):
    """The longest gap, streamed vs not (recorded as pseudo-timings so the summary prints them)."""
    on, off = benchmark.pedantic(lambda: (_gaps(True), _gaps(False)), rounds=1)
    BEST.update({"gap-on-chars": on[0], "gap-on-deltas": on[1], "gap-off-chars": off[0], "gap-off-deltas": off[1]})
    BEST["one"] = 1
    assert on[0] <= 64 and off[0] == len(_LONG_ARGUMENTS)


def _long(stream_arguments):
    for _ in recover_stream(
        _LONG_CHUNKS, native=True, has_tools=True, tools=_LONG_TOOLS, stream_arguments=stream_arguments
    ):
        pass


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("stream_arguments", [False, True], ids=["off", "on"])
def test_stream_arguments_per_delta(bench, monkeypatch, impl, stream_arguments):
    monkeypatch.setattr(_scan, "impl", IMPLS[impl])
    monkeypatch.setattr(_kernels, "impl", IMPLS[impl].KERNELS)
    bench(f"long-{impl}-{'on' if stream_arguments else 'off'}", _long, stream_arguments)


ratio("17.5 K call in 3-6 char deltas: longest gap, streamed (characters)", "gap-on-chars", "one", "target <= 64")
ratio("  the same, streamed (deltas)", "gap-on-deltas", "one")
ratio("  the same, not streamed (characters)", "gap-off-chars", "one")
ratio("  the same, not streamed (deltas)", "gap-off-deltas", "one")
ratio("17.5 K call, per delta: stream_arguments on / off (Cython)", "long-c-on", "long-c-off", "target <= 1.5")
ratio("17.5 K call, per delta: stream_arguments on / off (twin)", "long-py-on", "long-py-off", "target <= 1.5")
