"""Core benchmarks: streaming feed and parse, Cython vs the twin vs C-level baselines.

python -m pytest benchmarks/bench_core.py --benchmark-only -q
"""

import pytest

from textcalls import _kernels, _scan, _scan_c, _scan_py, parse

from . import corpora
from .conftest import ratio

CORPORA = {name: getattr(corpora, name)() for name in ("prose", "html", "calls", "deepseek")}
DELTAS = {name: corpora.deltas(text) for name, text in CORPORA.items()}
IMPLS = {"c": _scan_c, "py": _scan_py}

ratio("feed per prose delta (Cython) / list.append", "stream-prose-c", "append-prose", "target <= 1.5")
ratio("feed per prose delta (Cython) / `'<' in delta`", "stream-prose-c", "contains-prose")
ratio("feed per prose delta (Cython), code_fences=False / list.append", "nofence-stream-prose-c", "append-prose")
ratio("parse prose (Cython) / str.find('<')", "parse-prose-c", "find-prose", "target <= 3")
for corpus in CORPORA:
    ratio(
        f"stream {corpus}: twin / Cython",
        f"stream-{corpus}-py",
        f"stream-{corpus}-c",
        "target >= 5" if corpus == "html" else "",
    )
    ratio(
        f"parse {corpus}: twin / Cython",
        f"parse-{corpus}-py",
        f"parse-{corpus}-c",
        "target >= 10" if corpus == "html" else "",
    )
for corpus in ("calls", "deepseek", "html"):
    ratio(f"feed per {corpus} delta (Cython) / list.append", f"stream-{corpus}-c", f"append-{corpus}")
ratio("1-char deltas in one block: 1 MiB / 256 KiB (linear = 4)", "block-1m", "block-256k", "target ~ 4")
ratio(
    "feed per DeepSeek V3 delta, peer corpus (a scrubber a message) / the loop with list.append",
    "peer-stream-deepseek_v3",
    "peer-loop-deepseek_v3",
    "target <= 1.5",
)
ratio(
    "the same, Hermes",
    "peer-stream-hermes",
    "peer-loop-hermes",
)
for corpus in CORPORA:
    ratio(
        f"stream {corpus}: all default dialects / Hermes+DeepSeek only (Cython)",
        f"stream-{corpus}-c",
        f"core-stream-{corpus}-c",
        "target <= 1.5",
    )
    ratio(
        f"parse {corpus}: all default dialects / Hermes+DeepSeek only (Cython)",
        f"parse-{corpus}-c",
        f"core-parse-{corpus}-c",
        "target <= 1.5",
    )
CORE = ("hermes", "deepseek")


def _stream(mod, deltas, formats=None, **options):
    feed = mod.StreamScrubber(formats=formats, **options).feed
    for d in deltas:
        feed(d)


def _append(deltas):
    out = []
    append = out.append
    for d in deltas:
        append(d)


def _contains(deltas):
    for d in deltas:
        "<" in d  # noqa: B015 - the cost of the check is what is measured


@pytest.mark.parametrize("corpus", CORPORA)
def test_append_baseline(bench, corpus):
    bench(f"append-{corpus}", _append, DELTAS[corpus])


def test_contains_baseline(bench):
    bench("contains-prose", _contains, DELTAS["prose"])


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("corpus", CORPORA)
def test_stream(bench, impl, corpus):
    bench(f"stream-{corpus}-{impl}", _stream, IMPLS[impl], DELTAS[corpus])


def test_find_baseline(bench):
    bench("find-prose", CORPORA["prose"].find, "<")


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("corpus", CORPORA)
def test_parse(bench, monkeypatch, impl, corpus):
    monkeypatch.setattr(_scan, "impl", IMPLS[impl])
    monkeypatch.setattr(_kernels, "impl", IMPLS[impl].KERNELS)
    bench(f"parse-{corpus}-{impl}", parse, CORPORA[corpus])


def _block_stream(size):
    text = '<tool_call>{"name": "big", "arguments": {"v": "' + "v" * size + '"}}</tool_call>'
    return list(text)


@pytest.mark.parametrize(("name", "size"), [("block-256k", 256 * 1024), ("block-1m", 1024 * 1024)])
def test_one_char_deltas_in_a_block(bench, name, size):
    bench(name, _stream, _scan_c, _block_stream(size))


@pytest.mark.parametrize("corpus", CORPORA)
def test_core_only_stream(bench, corpus):
    bench(f"core-stream-{corpus}-c", _stream, _scan_c, DELTAS[corpus], CORE)


@pytest.mark.parametrize("corpus", CORPORA)
def test_core_only_parse(bench, monkeypatch, corpus):
    monkeypatch.setattr(_scan, "impl", _scan_c)
    monkeypatch.setattr(_kernels, "impl", _scan_c.KERNELS)
    bench(f"core-parse-{corpus}-c", lambda text: parse(text, formats=CORE), CORPORA[corpus])


def test_stream_prose_without_fences(bench):
    bench("nofence-stream-prose-c", lambda deltas: _stream(_scan_c, deltas, code_fences=False), DELTAS["prose"])


# The peer corpus of bench_peers.py (200 messages, a special-token marker one delta of its own), without the peers:
# textcalls against the same loop passing each delta to list.append, a scrubber (a list) a message.
PEER = {
    fmt: [corpora.token_deltas(write(prose, calls), markers) for prose, calls in corpora.peer_messages()]
    for fmt, write, markers in (
        ("hermes", corpora.hermes_message, corpora.HERMES_MARKERS),
        ("deepseek_v3", corpora.deepseek_v3_message, corpora.DEEPSEEK_V3_MARKERS),
    )
}


def _peer_stream(messages):
    for deltas in messages:
        scrubber = _scan_c.StreamScrubber()
        feed = scrubber.feed
        for delta in deltas:
            feed(delta)
        scrubber.flush()


def _peer_loop(messages):
    for deltas in messages:
        append = [].append
        for delta in deltas:
            append(delta)


@pytest.mark.parametrize("fmt", PEER)
def test_peer_loop_baseline(bench, fmt):
    bench(f"peer-loop-{fmt}", _peer_loop, PEER[fmt])


@pytest.mark.parametrize("fmt", PEER)
def test_peer_stream(bench, fmt):
    bench(f"peer-stream-{fmt}", _peer_stream, PEER[fmt])
