"""What schema-guided recovery (``textcalls._guided``) costs where it finds nothing: the core corpora streamed and
parsed with the request's tools known, the stage on (the default) and off (``schema_guided=False``), in one run.

python -m pytest benchmarks/bench_guided.py --benchmark-only -q

The tools are eight of a coding agent's (names that begin prose words' letters: ``read_file``, ``search`` …), so
line starts that begin a tool's name are held a word, as they would be in a gateway.
"""

import pytest

from textcalls import _kernels, _scan, _scan_c, _scan_py, parse
from textcalls.sse import SSERecovery
from textcalls.stream import recover_stream

from . import corpora
from .bench_gateway import CHUNKS, EVENTS
from .conftest import ratio

CORPORA = {name: getattr(corpora, name)() for name in ("prose", "html", "calls")}
DELTAS = {name: corpora.deltas(text) for name, text in CORPORA.items()}
IMPLS = {"c": _scan_c, "py": _scan_py}
TOOLS = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": {"x": {}}}}}
    for name in ("read_file", "write_file", "search", "terminal", "get_weather", "list_dir", "apply_patch", "think")
]

for corpus in CORPORA:
    for impl in IMPLS:
        ratio(
            f"feed per {corpus} delta with tools ({impl}): schema-guided on / off",
            f"guided-stream-{corpus}-{impl}",
            f"plain-stream-{corpus}-{impl}",
            "target <= 1.1",
        )
        ratio(
            f"parse {corpus} with tools ({impl}): schema-guided on / off",
            f"guided-parse-{corpus}-{impl}",
            f"plain-parse-{corpus}-{impl}",
            "target <= 1.1",
        )


ratio("recover_stream per chunk without markup, tools given: schema-guided on / off", "guided-chunks", "plain-chunks")
ratio("SSERecovery per event without markup, tools given: schema-guided on / off", "guided-sse", "plain-sse")


def _chunks(chunks, guided):
    for _ in recover_stream(chunks, native=True, has_tools=True, tools=TOOLS, schema_guided=guided):
        pass


def _sse(events, guided):
    feed = SSERecovery(native=True, has_tools=True, tools=TOOLS, schema_guided=guided).feed
    for event in events:
        feed(event)


@pytest.mark.parametrize("guided", [True, False], ids=["guided", "plain"])
def test_chunks_with_tools(bench, guided):
    bench(f"{'guided' if guided else 'plain'}-chunks", _chunks, CHUNKS, guided)


@pytest.mark.parametrize("guided", [True, False], ids=["guided", "plain"])
def test_sse_with_tools(bench, guided):
    bench(f"{'guided' if guided else 'plain'}-sse", _sse, EVENTS, guided)


def _stream(mod, deltas, guided):
    feed = mod.StreamScrubber(tools=TOOLS, schema_guided=guided).feed
    for d in deltas:
        feed(d)


@pytest.mark.parametrize("guided", [True, False], ids=["guided", "plain"])
@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("corpus", CORPORA)
def test_stream_with_tools(bench, impl, corpus, guided):
    name = f"{'guided' if guided else 'plain'}-stream-{corpus}-{impl}"
    bench(name, _stream, IMPLS[impl], DELTAS[corpus], guided)


@pytest.mark.parametrize("guided", [True, False], ids=["guided", "plain"])
@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("corpus", CORPORA)
def test_parse_with_tools(bench, monkeypatch, impl, corpus, guided):
    monkeypatch.setattr(_scan, "impl", IMPLS[impl])
    monkeypatch.setattr(_kernels, "impl", IMPLS[impl].KERNELS)
    name = f"{'guided' if guided else 'plain'}-parse-{corpus}-{impl}"
    bench(name, lambda text: parse(text, tools=TOOLS, schema_guided=guided), CORPORA[corpus])
