"""The proxy's operability: ``/metrics`` (Prometheus text format), ``/healthz`` and JSON log lines.

A real proxy per test (fresh counters) in front of the stub upstream (``gateway_support/upstream.py``),
driven with real HTTP on fresh connections; the counters are read back from ``/metrics`` and checked
against what the requests were and what the client received. Tests whose requests reach the scanner
take ``impl``.
"""

from __future__ import annotations

import collections
import contextlib
import http.client
import io
import itertools
import json
import logging
import math
import os
import re
import socket
import subprocess
import sys
import threading
from types import SimpleNamespace

import pytest

pytest.importorskip("aiohttp", reason="the proxy and the stub upstream run on aiohttp")

from textcalls import metrics, proxy
from textcalls.cli import main
from textcalls.markers import DIALECTS

from ..gateway_support.upstream import LoopThread, Upstream
from ..waiting import HANG_GUARD, wait_until

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},
    {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}},
]
CHAT = "/v1/chat/completions"
SAMPLE = re.compile(r"([a-z_]+)(?:\{(.*)\})? (\S+)")


@pytest.fixture(scope="module")
def stub():
    loop = LoopThread()
    upstream = Upstream()
    runner, url = loop.serve(upstream.app)
    yield SimpleNamespace(loop=loop, upstream=upstream, url=url)
    loop.close(runner)


@contextlib.contextmanager
def serving(stub, upstream_url=None, **options):
    """A proxy of its own (fresh counters) on a free port; yields the port."""
    runner = stub.loop.run(proxy.start(upstream_url or stub.url, host="127.0.0.1", port=0, **options))
    try:
        yield runner.addresses[0][1]
    finally:
        stub.loop.run(runner.cleanup())


@contextlib.contextmanager
def json_log():
    """The proxy's log lines, formatted by ``JsonFormatter``, in a StringIO."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(proxy.JsonFormatter())
    logger = logging.getLogger("textcalls.proxy")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield out
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def call(port, method, path, body=None):
    """One request on a fresh connection: (status, headers, the body received, whether it was complete)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        headers = {} if body is None else {"Content-Type": "application/json"}
        conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
        response = conn.getresponse()
        try:
            data, complete = response.read(), True
        except http.client.IncompleteRead as e:
            data, complete = e.partial, False
        return response.status, response.headers, data, complete
    finally:
        conn.close()


def chat(port, model, *, stream, tools=TOOLS, **extra):
    body = {"model": model, "messages": [], "stream": stream, "seed": 5, **extra}
    if tools:
        body["tools"] = tools
    return call(port, "POST", CHAT, body)


def scrape(port) -> dict:
    """``/metrics`` as {(name, ((label, value), …)): value}."""
    status, headers, data, _ = call(port, "GET", "/metrics")
    assert status == 200 and headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    samples = {}
    for line in data.decode().splitlines():
        if not line.startswith("#"):
            name, labels, value = SAMPLE.fullmatch(line).groups()
            samples[name, tuple(sorted(re.findall(r'(\w+)="([^"]*)"', labels or "")))] = float(value)
    return samples


def requests_by(samples) -> dict:
    """The non-zero ``textcalls_requests_total`` series as {(path, outcome): count}."""
    out = {}
    for (name, labels), value in samples.items():
        if name == "textcalls_requests_total" and value:
            out[dict(labels)["path"], dict(labels)["outcome"]] = value
    return out


def histogram(samples, path) -> tuple:
    """(cumulative bucket counts by bound, sum, count) of the first-byte histogram for ``path``."""
    buckets = {
        dict(labels)["le"]: value
        for (name, labels), value in samples.items()
        if name == "textcalls_first_byte_seconds_bucket" and dict(labels)["path"] == path
    }
    label = (("path", path),)
    return (
        buckets,
        samples["textcalls_first_byte_seconds_sum", label],
        samples["textcalls_first_byte_seconds_count", label],
    )


def log_lines(out, n):
    """The first ``n`` JSON lines logged (the proxy logs just after it has sent an answer: wait a little)."""
    wait_until(lambda: out.getvalue().count("\n") >= n, f"{n} log lines")
    return [json.loads(line) for line in out.getvalue().splitlines()]


# --- the counters after known requests -------------------------------------------------------------


def test_counters_after_known_requests(impl, stub):
    sent = stub.upstream.sent
    changed, untouched = [], []  # the bodies received
    with serving(stub) as port, json_log() as out:
        for model, stream in [("hermes", False), ("hermes", True), ("deepseek", True)]:
            changed.append(chat(port, model, stream=stream))
        for stream in (False, True):  # a malformed block: removed, no call
            changed.append(chat(port, "malformed", stream=stream))
            assert b"<tool_call>" not in changed[-1][2] and b"Done." in changed[-1][2]
        for stream in (False, True):  # tools offered, no markup
            untouched.append(chat(port, "plain", stream=stream))
            assert untouched[-1][2] == sent[-1]
        untouched.append(chat(port, "hermes", stream=True, tools=None))  # relayed as it is
        assert untouched[-1][2] == sent[-1]
        untouched.append(call(port, "GET", "/v1/models"))
        untouched.append(call(port, "POST", "/v1/nowhere?x=1", {"a": 1}))
        untouched.append(chat(port, "error", stream=False))  # the upstream's 400, relayed as it is
        assert [status for status, *_ in untouched] == [200, 200, 200, 200, 404, 400]
        assert all(complete for *_, complete in changed + untouched)
        lines = log_lines(out, len(changed) + len(untouched))
        samples = scrape(port)
    assert requests_by(samples) == {
        (CHAT, "recovered"): 3,
        (CHAT, "unchanged"): 2,
        (CHAT, "rewritten"): 2,
        (CHAT, "relayed"): 2,
        ("/v1/models", "relayed"): 1,
        ("other", "relayed"): 1,
    }
    # every series is there, zero or not: 7 paths x 7 outcomes
    assert sum(name == "textcalls_requests_total" for name, _ in samples) == 49
    recovered = {labels: n for (name, labels), n in samples.items() if name == "textcalls_calls_recovered_total" and n}
    assert recovered == {  # two Hermes calls non-streamed; two Hermes and two DeepSeek calls streamed
        (("body", "json"), ("dialect", "hermes")): 2,
        (("body", "sse"), ("dialect", "hermes")): 2,
        (("body", "sse"), ("dialect", "deepseek")): 2,
    }
    # every (body, dialect) series is there: 2 bodies x (the dialects, bare_json, other)
    assert sum(name == "textcalls_calls_recovered_total" for name, _ in samples) == 2 * (len(DIALECTS) + 2)
    assert samples["textcalls_blocks_malformed_total", ()] == 2  # the malformed block, streamed and not
    assert samples["textcalls_calls_abandoned_total", ()] == 0
    assert samples["textcalls_response_bytes_total", ()] == sum(len(data) for _, _, data, _ in changed + untouched)
    assert samples["textcalls_untouched_bytes_total", ()] == sum(len(data) for _, _, data, _ in untouched)
    for path, n in [(CHAT, 9), ("/v1/models", 1), ("other", 1), ("/v1/embeddings", 0)]:
        buckets, total, count = histogram(samples, path)
        assert count == n and buckets["+Inf"] == n
        assert list(buckets) == [repr(b) for b in metrics.BUCKETS] + ["+Inf"]
        values = list(buckets.values())
        assert values == sorted(values)  # cumulative
        assert (total > 0) == (n > 0)
    # and the log line of each request tells the same
    assert collections.Counter((line["path"].split("?")[0], line["outcome"]) for line in lines) == {
        (CHAT, "recovered"): 3,
        (CHAT, "unchanged"): 2,
        (CHAT, "rewritten"): 2,
        (CHAT, "relayed"): 2,
        ("/v1/models", "relayed"): 1,
        ("/v1/nowhere", "relayed"): 1,
    }
    assert sum(line["calls"] for line in lines) == 6
    assert sum(line["bytes"] for line in lines) == samples["textcalls_response_bytes_total", ()]


def test_broken_streams_count_as_broken_with_what_was_sent(impl, stub):
    with serving(stub) as port, json_log() as out:
        status, _, held, complete = chat(port, "broken", stream=True, seed=1)  # recovered: no event completes
        assert (status, held, complete) == (200, b"", False)
        status, _, data, complete = chat(port, "broken", stream=True, seed=1, tools=None)  # relayed
        assert status == 200 and not complete
        lines = [entry for entry in log_lines(out, 4) if "method" in entry]  # and two warnings
        samples = scrape(port)
    assert requests_by(samples) == {(CHAT, "broken"): 2}
    assert [(line["outcome"], line["detail"], line["bytes"]) for line in lines] == [
        ("broken", "sse recovered=0, upstream broke off", 0),
        ("broken", "relayed, upstream broke off", len(data)),
    ]
    # what the client got before the cut is the upstream's first bytes as they were: untouched
    assert data and stub.upstream.sent[-1].startswith(data)
    assert samples["textcalls_response_bytes_total", ()] == len(data)
    assert samples["textcalls_untouched_bytes_total", ()] == len(data)
    assert histogram(samples, CHAT)[2] == 2


def test_a_client_leaving_and_the_proxys_own_errors(impl, stub):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"
    with serving(stub, closed) as port, json_log() as out:
        status, _, data, _ = chat(port, "hermes", stream=True)
        assert status == 502 and json.loads(data)["error"]["type"] == "bad_gateway"
        assert call(port, "OPTIONS", "*")[0] == 400
        (unreachable, target) = log_lines(out, 2)
        samples = scrape(port)
    assert requests_by(samples) == {(CHAT, "error"): 1, ("other", "error"): 1}
    assert samples["textcalls_response_bytes_total", ()] == 0  # the proxy's own answers are not the upstream's
    assert (unreachable["status"], unreachable["upstream_status"], unreachable["detail"]) == (502, None, "bad gateway")
    assert (target["path"], target["status"], target["outcome"]) == ("*", 400, "error")
    stub.upstream.slow_ended.clear()
    with serving(stub) as port, json_log() as out:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        body = {"model": "slow", "messages": [], "stream": True, "tools": TOOLS}
        conn.request("POST", CHAT, body=json.dumps(body), headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 200 and response.read1(65536).startswith(b"data: ")
        conn.sock.shutdown(socket.SHUT_RDWR)
        conn.close()
        assert stub.upstream.slow_ended.wait(HANG_GUARD)
        (gone,) = log_lines(out, 1)
        samples = scrape(port)
    assert requests_by(samples) == {(CHAT, "client_gone"): 1}
    assert (gone["status"], gone["outcome"]) == (200, "client_gone") and gone["detail"].endswith("client gone")
    assert histogram(samples, CHAT)[2] == 1


def test_an_exchange_is_timed_at_its_first_body_byte(monkeypatch):
    ticks = iter([10.0, 10.25, 99.0])  # a clock of our own: the request arrives, its first byte goes, then more
    monkeypatch.setattr(proxy, "time", SimpleNamespace(perf_counter=lambda: next(ticks)))
    ex = proxy._Exchange()
    ex.wrote(b"data: 1\n\n")
    ex.wrote(b"data: 2\n\n")  # later writes do not move the first byte's time
    assert (ex.started, ex.first, ex.sent) == (10.0, 10.25, 18)


def test_the_histogram_holds_the_first_bytes_time_not_the_whole_answers(impl, stub, monkeypatch):
    # a clock of the test's own, one second a reading (the exchange's start, its first byte, its end): no wall
    # clock is asserted on
    ticks = itertools.count(1.0)
    monkeypatch.setattr(proxy, "time", SimpleNamespace(perf_counter=lambda: next(ticks)))
    with serving(stub) as port, json_log() as out:
        body = {"model": "paced", "messages": [], "stream": True, "tools": TOOLS, "x_events": 5}
        status, _, data, complete = call(port, "POST", CHAT, body)
        assert status == 200 and complete and data.endswith(b"data: [DONE]\n\n")
        (line,) = log_lines(out, 1)
        samples = scrape(port)
    assert line["outcome"] == "unchanged" and line["first_byte_ms"] < line["duration_ms"]
    assert (line["first_byte_ms"], line["duration_ms"]) == (1000.0, 2000.0)
    buckets, total, count = histogram(samples, CHAT)
    # the one observation is the log line's first byte time (rounded there to 0.1 ms), in its own bucket
    assert count == 1 and total == pytest.approx(line["first_byte_ms"] / 1000, abs=0.001)
    first = total
    assert list(buckets.values()) == [0 if bound != "+Inf" and first > float(bound) else 1 for bound in buckets]


# --- the JSON log line -----------------------------------------------------------------------------


def test_json_log_lines(impl, stub, monkeypatch):
    ticks = itertools.count(1.0)  # the proxy's clock, the test's own: the order of its readings, no wall time
    monkeypatch.setattr(proxy, "time", SimpleNamespace(perf_counter=lambda: next(ticks)))
    with serving(stub) as port, json_log() as out:
        chat(port, "hermes", stream=False)
        data = chat(port, "deepseek", stream=True)[2]
        call(port, "GET", "/v1/models?limit=2")
        lines = log_lines(out, 3)
    assert len(lines) == 3
    for line in lines:
        assert set(line) == {
            "time",
            "level",
            "logger",
            "pid",
            "message",
            "method",
            "path",
            "status",
            "upstream_status",
            "outcome",
            "detail",
            "calls",
            "bytes",
            "duration_ms",
            "first_byte_ms",
        }
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", line["time"])
        assert (line["level"], line["logger"], line["pid"]) == ("INFO", "textcalls.proxy", os.getpid())
        assert 0 <= line["first_byte_ms"] <= line["duration_ms"]
        assert line["message"].startswith(f"{line['method']} {line['path']} {line['status']} {line['detail']} ")
    fields = [
        {k: line[k] for k in ("method", "path", "status", "upstream_status", "outcome", "detail", "calls")}
        for line in lines
    ]
    assert fields == [
        {
            "method": "POST",
            "path": CHAT,
            "status": 200,
            "upstream_status": 200,
            "outcome": "recovered",
            "detail": "json recovered",
            "calls": 2,
        },
        {
            "method": "POST",
            "path": CHAT,
            "status": 200,
            "upstream_status": 200,
            "outcome": "recovered",
            "detail": "sse recovered=2",
            "calls": 2,
        },
        {
            "method": "GET",
            "path": "/v1/models?limit=2",
            "status": 200,
            "upstream_status": 200,
            "outcome": "relayed",
            "detail": "relayed",
            "calls": 0,
        },
    ]
    assert lines[1]["bytes"] == len(data)


def test_json_formatter_keeps_other_lines_and_tracebacks_on_one_line():
    formatter = proxy.JsonFormatter()
    record = logging.LogRecord("textcalls.proxy", logging.WARNING, __file__, 1, "upstream %s\nbroke", ("x",), None)
    assert json.loads(formatter.format(record))["message"] == "upstream x\nbroke"
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        record = logging.LogRecord("t", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    text = formatter.format(record)
    assert "\n" not in text
    line = json.loads(text)
    assert line["level"] == "ERROR" and line["exception"].endswith("RuntimeError: boom")


# --- the proxy's own paths -------------------------------------------------------------------------


def test_metrics_and_health_are_answered_by_the_proxy_never_relayed(stub):
    with serving(stub) as port, json_log() as out:
        seen = len(stub.upstream.requests)
        assert call(port, "GET", "/healthz")[::2] == (200, b"ok\n")
        status, headers, data, _ = call(port, "HEAD", "/metrics")
        assert status == 200 and data == b"" and int(headers["Content-Length"]) > 1000
        assert requests_by(scrape(port)) == {}  # the answers are not counted
        assert out.getvalue() == ""  # nor logged
        for method, path in [("POST", "/metrics"), ("DELETE", "/healthz")]:
            status, headers, data, _ = call(port, method, path)
            assert status == 405 and headers["Allow"] == "GET, HEAD"
            assert json.loads(data)["error"]["type"] == "method_not_allowed"
        refused = log_lines(out, 2)  # the refusals are
        samples = scrape(port)
        assert len(stub.upstream.requests) == seen  # none reached the upstream
    assert [(line["method"], line["path"], line["status"], line["outcome"]) for line in refused] == [
        ("POST", "/metrics", 405, "error"),
        ("DELETE", "/healthz", 405, "error"),
    ]
    assert requests_by(samples) == {("other", "error"): 2}  # and counted


def test_own_paths_can_move_or_be_relayed(stub):
    with serving(stub, metrics_path="/textcalls/metrics", health_path=None) as port:
        for path in ("/metrics", "/healthz"):  # the upstream's own paths now: relayed
            assert call(port, "GET", path)[0] == 404
            assert stub.upstream.requests[-1][:2] == ("GET", path)
        status, _, data, _ = call(port, "GET", "/textcalls/metrics?x=1")
        assert status == 200 and 'textcalls_requests_total{path="other",outcome="relayed"} 2\n' in data.decode()


def test_bad_settings_name_what_is_wrong():
    url = "http://127.0.0.1:1"
    with pytest.raises(TypeError, match="metrics_path must be a str or None, not int"):
        proxy.create_app(url, metrics_path=9)
    for bad in ("metrics", "//metrics", "/metrics?x", "/a b", "/a#b", ""):
        with pytest.raises(
            ValueError,
            match=re.escape(f"health_path must be a path like /metrics (one leading '/', no query), not {bad!r}"),
        ):
            proxy.create_app(url, health_path=bad)
    with pytest.raises(ValueError, match="metrics_path cannot be /v1/chat/completions, the path the proxy recovers"):
        proxy.create_app(url, metrics_path=CHAT)
    with pytest.raises(ValueError, match="metrics_path and health_path must differ, not both '/x'"):
        proxy.create_app(url, metrics_path="/x", health_path="/x")
    with pytest.raises(TypeError, match=r"metrics must be a textcalls\.metrics\.Metrics, not dict"):
        proxy.create_app(url, metrics={})
    with pytest.raises(TypeError, match="log_format must be a str, not NoneType"):
        proxy.run(url, log_format=None)
    with pytest.raises(ValueError, match="log_format must be 'text' or 'json', not 'xml'"):
        proxy.run(url, log_format="xml")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--metrics-path", "metrics"],
            "--metrics-path must be a path like /metrics (one leading '/', no query), not 'metrics'",
        ),
        (["--health-path", CHAT], "--health-path cannot be /v1/chat/completions, the path the proxy recovers"),
        (["--health-path", "/metrics"], "--metrics-path and --health-path must differ, not both '/metrics'"),
        (["--log-format", "xml"], "argument --log-format: invalid choice: 'xml'"),  # then the choices
    ],
)
def test_bad_flags_are_one_line_and_exit_2(capsys, monkeypatch, args, message):
    monkeypatch.setattr(proxy, "run", lambda *a, **k: pytest.fail("run() despite a bad flag"))
    with pytest.raises(SystemExit) as exc:
        main(["proxy", "--upstream", "http://127.0.0.1:1", *args])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"textcalls proxy: error: {message}") and err.count("\n") == 1


def test_the_flags_reach_run(monkeypatch):
    calls = []
    monkeypatch.setattr(proxy, "run", lambda upstream, **kw: calls.append(kw))
    assert main(["proxy", "--upstream", "http://127.0.0.1:1"]) == 0
    args = ["--metrics-path", "off", "--health-path", "/hz", "--log-format", "json"]
    assert main(["proxy", "--upstream", "http://127.0.0.1:1", *args]) == 0
    pick = ("metrics_path", "health_path", "log_format")
    assert [{k: kw[k] for k in pick} for kw in calls] == [
        {"metrics_path": "/metrics", "health_path": "/healthz", "log_format": "text"},
        {"metrics_path": None, "health_path": "/hz", "log_format": "json"},
    ]


# --- the text format -------------------------------------------------------------------------------


def test_label_values_and_paths():
    assert metrics._escape('a"b\\c\nd') == 'a\\"b\\\\c\\nd'
    assert [metrics.path_label(p) for p in (CHAT, "/v1/models", "/v1/models/x", "/", CHAT + "/")] == [
        CHAT,
        "/v1/models",
        "other",
        "other",
        "other",
    ]


def test_rows_are_summed():
    store = [0.0] * (3 * metrics.SLOTS)
    rows = [metrics.Metrics() for _ in range(3)]
    for row, m in enumerate(rows):
        m.share(store, row)
    rows[0].count(CHAT, "recovered", 0.02, sent=10, untouched=0)
    rows[2].count(CHAT, "recovered", 7.0, sent=5, untouched=5)
    rows[2].recovered("sse", 3, "kimi_k2")
    rows[0].recovered("sse", 1, "kimi_k2")
    rows[0].recovered("json", 2, "not-a-dialect")  # an unknown label counts as "other"
    rows[1].malformed(4)
    rows[2].abandoned(1)
    text = rows[1].render().decode()  # any row renders them all
    assert 'textcalls_requests_total{path="/v1/chat/completions",outcome="recovered"} 2\n' in text
    assert 'textcalls_calls_recovered_total{body="sse",dialect="kimi_k2"} 4\n' in text
    assert 'textcalls_calls_recovered_total{body="json",dialect="other"} 2\n' in text
    assert "\ntextcalls_blocks_malformed_total 4\n" in text and "\ntextcalls_calls_abandoned_total 1\n" in text
    assert "\ntextcalls_response_bytes_total 15\n" in text and "\ntextcalls_untouched_bytes_total 5\n" in text
    assert 'textcalls_first_byte_seconds_bucket{path="/v1/chat/completions",le="0.01"} 0\n' in text
    assert 'textcalls_first_byte_seconds_bucket{path="/v1/chat/completions",le="0.025"} 1\n' in text
    assert 'textcalls_first_byte_seconds_bucket{path="/v1/chat/completions",le="5.0"} 1\n' in text
    assert 'textcalls_first_byte_seconds_bucket{path="/v1/chat/completions",le="10.0"} 2\n' in text
    assert 'textcalls_first_byte_seconds_sum{path="/v1/chat/completions"} 7.02\n' in text
    assert 'textcalls_first_byte_seconds_count{path="/v1/chat/completions"} 2\n' in text


def test_a_real_prometheus_parser_reads_it(impl, stub):
    parser = pytest.importorskip("prometheus_client.parser", reason="prometheus_client (test venv only)")
    with serving(stub) as port:
        chat(port, "hermes", stream=True)
        call(port, "GET", "/v1/models")
        samples = scrape(port)
        text = call(port, "GET", "/metrics")[2].decode()
    families = {f.name: f for f in parser.text_string_to_metric_families(text)}
    assert {name: f.type for name, f in families.items()} == {
        "textcalls_requests": "counter",
        "textcalls_calls_recovered": "counter",
        "textcalls_blocks_malformed": "counter",
        "textcalls_calls_abandoned": "counter",
        "textcalls_response_bytes": "counter",
        "textcalls_untouched_bytes": "counter",
        "textcalls_first_byte_seconds": "histogram",
    }
    parsed = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families.values() for s in f.samples}
    assert parsed == samples  # le="1.0" and the others as written
    assert parsed["textcalls_requests_total", (("outcome", "recovered"), ("path", CHAT))] == 1
    assert parsed["textcalls_first_byte_seconds_count", (("path", "/v1/models"),)] == 1
    assert all(not math.isnan(v) for v in parsed.values())


# --- workers ---------------------------------------------------------------------------------------


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SO_REUSEPORT workers")
def test_workers_report_the_same_totals_and_log_json(stub):
    with socket.socket() as probe:  # a free port: --workers needs a fixed one
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "textcalls", "proxy", "--upstream", stub.url, "--listen", f"127.0.0.1:{port}"]
        + ["--workers", "2", "--log-format", "json"],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    killer = threading.Timer(60, proc.kill)
    killer.start()
    try:
        banners = [json.loads(proc.stderr.readline()) for _ in range(2)]  # one per worker
        assert all(b["message"].startswith(f"textcalls proxy on http://127.0.0.1:{port} ") for b in banners)
        assert len({b["pid"] for b in banners}) == 2
        for _ in range(16):  # fresh connections: the kernel spreads them between the workers
            status, _, data, _ = chat(port, "hermes", stream=True)
            assert status == 200 and b"<tool_call>" not in data
        lines = [json.loads(proc.stderr.readline()) for _ in range(16)]
        assert {line["outcome"] for line in lines} == {"recovered"}
        assert len({line["pid"] for line in lines}) == 2  # both served
        for _ in range(6):  # whichever worker answers, the totals are everyone's
            samples = scrape(port)
            assert requests_by(samples) == {(CHAT, "recovered"): 16}
            assert samples["textcalls_calls_recovered_total", (("body", "sse"), ("dialect", "hermes"))] == 32
            assert histogram(samples, CHAT)[2] == 16
        proc.terminate()
        assert proc.wait(HANG_GUARD) == 0
        rest = [json.loads(line) for line in proc.stderr.read().splitlines()]  # every line JSON
        assert sum(line["message"] == "textcalls proxy stopping (SIGTERM)" for line in rest) == 2
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        killer.cancel()
        proc.stderr.close()
