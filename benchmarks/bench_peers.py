"""Peer comparison: textcalls against vLLM's and SGLang's own tool parsers, Hermes and DeepSeek V3.

Needs vllm==0.33.0 and sglang==0.5.23 installed with ``--no-deps`` beside the ``peers`` extra (see
README, Performance); skipped when either is missing. torch is not needed: ``peers_stub`` stands in
for what their import chains pull in and the parsing never uses.

python -m pytest benchmarks/bench_peers.py --benchmark-only -q -p no:cacheprovider

The corpus is 200 messages (``corpora.peer_messages``: prose, one call, two calls; 200-4,000
characters), the same ones written in each format. Whole messages: textcalls ``parse`` against vLLM's
``extract_tool_calls`` and SGLang's ``detect_and_parse``, one parser per contender. Streams: the
messages in 1-6 character deltas (a marker, a special token, is one delta), a fresh parser per
message: ``StreamScrubber.feed`` then ``flush`` against vLLM's ``extract_tool_calls_streaming`` fed as
its server feeds it (the text and token ids so far, rebuilt each delta; the row "vLLM harness" is that
rebuilding alone) and SGLang's ``parse_streaming_increment``.

The contenders run in rounds that alternate them (in a rotating order), so load on a shared machine
tilts none of them; each keeps its best pass. Before the timing, the calls each contender recovers
are checked against the corpus: textcalls must find every call; a peer's misses are printed with the
figures, not hidden.
"""

from __future__ import annotations

import gc
import importlib.util
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import pytest

from textcalls import Options, StreamScrubber, parse

from . import corpora
from .conftest import BEST, ratio

if importlib.util.find_spec("vllm") is None or importlib.util.find_spec("sglang") is None:
    pytest.skip("vLLM and SGLang are not installed (see the peers extra)", allow_module_level=True)

PARSE_ROUNDS = 20
STREAM_ROUNDS = 5
MIN_ROUND = 0.05  # seconds of passes per contender and round, at least one pass
FORMATS = ("hermes", "deepseek_v3")
TEXTCALLS_DIALECT = {"hermes": "hermes", "deepseek_v3": "deepseek"}
MODES = {"parse": ("whole messages", "us/message"), "stream": ("streams", "ns/delta")}


def _load_peers():
    """Import the peers' parsers (``peers_stub`` first) and their protocol classes."""
    from . import peers_stub

    peers_stub.install()
    from sglang.srt.entrypoints.openai.protocol import Function, Tool
    from sglang.srt.function_call.deepseekv3_detector import DeepSeekV3Detector
    from sglang.srt.function_call.hermes_detector import HermesDetector
    from sglang.srt.function_call.qwen25_detector import Qwen25Detector
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.tool_parsers.deepseekv3_tool_parser import DeepSeekV3ToolParser
    from vllm.tool_parsers.hermes_tool_parser import Hermes2ProToolParser

    tools = [
        {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
        for name in corpora.PEER_TOOLS
    ]
    request = ChatCompletionRequest(model="bench", messages=[{"role": "user", "content": "go"}], tools=tools)
    sglang_tools = [Tool(type="function", function=Function(**tool["function"])) for tool in tools]
    tokenizer = peers_stub.FakeTokenizer(list(corpora.HERMES_MARKERS + corpora.DEEPSEEK_V3_MARKERS))
    vllm_parsers = {
        "hermes": {"vLLM Hermes2Pro": Hermes2ProToolParser},
        "deepseek_v3": {"vLLM DeepSeekV3": DeepSeekV3ToolParser},
    }
    sglang_detectors = {
        "hermes": {"SGLang Hermes": HermesDetector, "SGLang Qwen25": Qwen25Detector},
        "deepseek_v3": {"SGLang DeepSeekV3": DeepSeekV3Detector},
    }
    return request, sglang_tools, tokenizer, vllm_parsers, sglang_detectors


REQUEST, SGLANG_TOOLS, TOKENIZER, VLLM_PARSERS, SGLANG_DETECTORS = _load_peers()


@dataclass
class Corpus:
    texts: list[str]
    deltas: list[list[str]]
    delta_ids: list[list[list[int]]]  # a token id list per delta, for vLLM
    truth: list[list[tuple[str, dict]]]


def _corpus(fmt: str) -> Corpus:
    messages = corpora.peer_messages()
    write, markers = (
        (corpora.hermes_message, corpora.HERMES_MARKERS)
        if fmt == "hermes"
        else (corpora.deepseek_v3_message, corpora.DEEPSEEK_V3_MARKERS)
    )
    texts = [write(prose, calls) for prose, calls in messages]
    deltas = [corpora.token_deltas(text, markers) for text in texts]
    delta_ids = [[TOKENIZER.ids(d) for d in message] for message in deltas]
    return Corpus(texts, deltas, delta_ids, [calls for _, calls in messages])


CORPORA = {fmt: _corpus(fmt) for fmt in FORMATS}


# --- the timed loops: each contender's entry point, nothing around it but the loop ---


def _parse_each(fn, texts, *args, **keywords):
    for text in texts:
        fn(text, *args, **keywords)


def _parse_vllm(cls, corpus):
    _parse_each(cls(TOKENIZER).extract_tool_calls, corpus.texts, REQUEST)


def _parse_sglang(cls, corpus):
    _parse_each(cls().detect_and_parse, corpus.texts, SGLANG_TOOLS)


def _stream_textcalls(corpus, options):
    for deltas in corpus.deltas:
        scrubber = StreamScrubber(options=options)
        feed = scrubber.feed
        for delta in deltas:
            feed(delta)
        scrubber.flush()


def _stream_vllm(cls, corpus):
    for deltas, ids in zip(corpus.deltas, corpus.delta_ids, strict=True):
        step = cls(TOKENIZER).extract_tool_calls_streaming
        previous_text, previous_ids = "", []
        for delta, delta_ids in zip(deltas, ids, strict=True):
            current_text = previous_text + delta
            current_ids = previous_ids + delta_ids
            step(previous_text, current_text, delta, previous_ids, current_ids, delta_ids, REQUEST)
            previous_text, previous_ids = current_text, current_ids


def _vllm_harness(corpus):
    for deltas, ids in zip(corpus.deltas, corpus.delta_ids, strict=True):
        previous_text, previous_ids = "", []
        for delta, delta_ids in zip(deltas, ids, strict=True):
            current_text = previous_text + delta
            current_ids = previous_ids + delta_ids
            previous_text, previous_ids = current_text, current_ids


def _loop_alone(corpus):
    """``_stream_textcalls``' loop with no parser: each delta passed to one method in C (``list.append``), a new
    list per message. No streaming parser called per delta from Python can cost less."""
    for deltas in corpus.deltas:
        append = [].append
        for delta in deltas:
            append(delta)


def _stream_sglang(cls, corpus):
    for deltas in corpus.deltas:
        step = cls().parse_streaming_increment
        for delta in deltas:
            step(delta, SGLANG_TOOLS)


# --- what each contender recovers, for the check before the timing ---


def _args(text):
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text  # compared as it is: unequal to any argument object


def _unstreamed(prev_tool_call_arr, streamed_args_for_tool):
    """The rest of the last call's arguments that a peer's server sends when the stream ends."""
    if not prev_tool_call_arr or len(prev_tool_call_arr) > len(streamed_args_for_tool):
        return ""
    expected = prev_tool_call_arr[-1].get("arguments", {})
    if not isinstance(expected, str):
        expected = json.dumps(expected, ensure_ascii=False)
    sent = streamed_args_for_tool[len(prev_tool_call_arr) - 1]
    return expected[len(sent) :] if expected.startswith(sent) else ""


class _Assembled:
    """Calls put together from streamed pieces: a name and argument text per index."""

    def __init__(self):
        self.calls: dict[int, list] = {}

    def add(self, index, name, arguments):
        call = self.calls.setdefault(index, [None, ""])
        if name:
            call[0] = name
        call[1] += arguments or ""

    def result(self, tail=""):
        calls = [self.calls[i] for i in sorted(self.calls)]
        if calls:
            calls[-1][1] += tail
        return [(name, _args(arguments)) for name, arguments in calls]


def _textcalls_calls(mode, corpus, options):
    if mode == "parse":
        return [[(c.name, _args(c.arguments)) for c in parse(text, options=options).calls] for text in corpus.texts]
    out = []
    for deltas in corpus.deltas:
        scrubber = StreamScrubber(options=options)
        for delta in deltas:
            scrubber.feed(delta)
        scrubber.flush()
        out.append([(c.name, _args(c.arguments)) for c in scrubber.calls])
    return out


def _vllm_calls(mode, corpus, cls):
    if mode == "parse":
        parser = cls(TOKENIZER)
        return [
            [
                (c.function.name, _args(c.function.arguments))
                for c in parser.extract_tool_calls(text, REQUEST).tool_calls
            ]
            for text in corpus.texts
        ]
    out = []
    for deltas, ids in zip(corpus.deltas, corpus.delta_ids, strict=True):
        parser, calls = cls(TOKENIZER), _Assembled()
        previous_text, previous_ids = "", []
        for delta, delta_ids in zip(deltas, ids, strict=True):
            current_text, current_ids = previous_text + delta, previous_ids + delta_ids
            message = parser.extract_tool_calls_streaming(
                previous_text, current_text, delta, previous_ids, current_ids, delta_ids, REQUEST
            )
            for call in (message.tool_calls if message else None) or ():
                if call.function is not None:
                    calls.add(call.index, call.function.name, call.function.arguments)
            previous_text, previous_ids = current_text, current_ids
        out.append(calls.result(parser.get_remaining_unstreamed_args() if calls.calls else ""))
    return out


def _sglang_calls(mode, corpus, cls):
    if mode == "parse":
        detector = cls()
        return [
            [(c.name, _args(c.parameters)) for c in detector.detect_and_parse(text, SGLANG_TOOLS).calls]
            for text in corpus.texts
        ]
    out = []
    for deltas in corpus.deltas:
        detector, calls = cls(), _Assembled()
        for delta in deltas:
            for call in detector.parse_streaming_increment(delta, SGLANG_TOOLS).calls:
                calls.add(call.tool_index, call.name, call.parameters)
        out.append(calls.result(_unstreamed(detector.prev_tool_call_arr, detector.streamed_args_for_tool)))
    return out


LOOP_ALONE = "the loop alone (each delta to list.append)"


@dataclass
class Contender:
    name: str
    run: Callable[[], None]  # the timed pass over the corpus
    calls: Callable[[], list] | None  # the calls recovered from each message (None: not a parser)
    peer: bool


def _contenders(fmt: str, mode: str) -> list[Contender]:
    corpus = CORPORA[fmt]
    dialect = TEXTCALLS_DIALECT[fmt]
    streamed = mode == "stream"
    out = []
    for label, options in (("textcalls", None), (f"textcalls formats=[{dialect!r}]", Options(formats=[dialect]))):
        run = (
            partial(_stream_textcalls, corpus, options)
            if streamed
            else partial(_parse_each, parse, corpus.texts, options=options)
        )
        out.append(Contender(label, run, partial(_textcalls_calls, mode, corpus, options), False))
    for label, cls in VLLM_PARSERS[fmt].items():
        run = partial(_stream_vllm, cls, corpus) if streamed else partial(_parse_vllm, cls, corpus)
        out.append(Contender(label, run, partial(_vllm_calls, mode, corpus, cls), True))
    for label, cls in SGLANG_DETECTORS[fmt].items():
        run = partial(_stream_sglang, cls, corpus) if streamed else partial(_parse_sglang, cls, corpus)
        out.append(Contender(label, run, partial(_sglang_calls, mode, corpus, cls), True))
    if streamed:
        out.append(
            Contender("vLLM harness (text and ids so far, no parser)", partial(_vllm_harness, corpus), None, False)
        )
        out.append(Contender(LOOP_ALONE, partial(_loop_alone, corpus), None, False))
    return out


def _key(fmt, mode, name):
    return f"peers-{fmt}-{mode}-{name}"


for _fmt in FORMATS:
    for _mode, _target in (("parse", "target >= 5"), ("stream", "target >= 200")):
        _what = "per delta" if _mode == "stream" else "whole messages"
        ratio(
            f"{_fmt} {_what}: fastest peer / textcalls",
            _key(_fmt, _mode, "fastest peer"),
            _key(_fmt, _mode, "textcalls"),
            _target,
        )
        ratio(
            f"{_fmt} {_what}: fastest peer / textcalls {TEXTCALLS_DIALECT[_fmt]} only",
            _key(_fmt, _mode, "fastest peer"),
            _key(_fmt, _mode, f"textcalls formats=[{TEXTCALLS_DIALECT[_fmt]!r}]"),
        )
    ratio(
        f"{_fmt} per delta: fastest peer / the loop alone (the most any parser could reach)",
        _key(_fmt, "stream", "fastest peer"),
        _key(_fmt, "stream", LOOP_ALONE),
    )
    ratio(
        f"{_fmt} per delta: textcalls / the loop alone (list.append)",
        _key(_fmt, "stream", "textcalls"),
        _key(_fmt, "stream", LOOP_ALONE),
        "target <= 1.5" if _fmt == "deepseek_v3" else "",
    )


def _wrong(found, truth):
    """Indexes of the messages whose calls (names, decoded arguments, in order) differ from ``truth``."""
    return [i for i, (got, want) in enumerate(zip(found, truth, strict=True)) if got != [(n, a) for n, a in want]]


def _timed(run):
    gc.disable()
    try:
        start = time.perf_counter()
        run()
        return time.perf_counter() - start
    finally:
        gc.enable()


def _interleave(contenders, rounds):
    """Best time of each contender's pass over the corpus. The passes alternate in ``rounds`` rounds
    (each in a rotated order); in a round a contender runs as many passes as fill ``MIN_ROUND``
    seconds (gauged on a first, untimed pass), so a fast one is timed as often as a slow one."""
    passes = {c.name: max(1, round(MIN_ROUND / _timed(c.run))) for c in contenders}
    best = {c.name: float("inf") for c in contenders}
    for r in range(rounds):
        gc.collect()
        for c in contenders[r % len(contenders) :] + contenders[: r % len(contenders)]:
            for _ in range(passes[c.name]):
                best[c.name] = min(best[c.name], _timed(c.run))
    return best


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_peers(benchmark, capsys, fmt, mode):
    corpus = CORPORA[fmt]
    contenders = _contenders(fmt, mode)
    wrong = {c.name: _wrong(c.calls(), corpus.truth) for c in contenders if c.calls is not None}
    for c in contenders:
        if c.peer is False and c.calls is not None:
            assert wrong[c.name] == [], f"{c.name} missed the calls of messages {wrong[c.name]}"

    rounds = PARSE_ROUNDS if mode == "parse" else STREAM_ROUNDS
    best = benchmark.pedantic(_interleave, args=(contenders, rounds), rounds=1, iterations=1)
    peers = [c.name for c in contenders if c.peer]
    fastest = min(peers, key=best.__getitem__)
    for name, seconds in best.items():
        BEST[_key(fmt, mode, name)] = seconds
    BEST[_key(fmt, mode, "fastest peer")] = best[fastest]

    title, unit = MODES[mode]
    units = len(corpus.texts) if mode == "parse" else sum(map(len, corpus.deltas))
    scale = 1e6 if mode == "parse" else 1e9
    chars = sum(map(len, corpus.texts))
    lines = [
        f"{fmt}, {title}: {len(corpus.texts)} messages, {chars:,} characters, {units:,} "
        f"{'messages' if mode == 'parse' else 'deltas'}; best pass of {rounds} interleaved rounds",
        f"  {'contender':<48} {'best ms':>9} {unit:>11} {'x textcalls':>12}  wrong messages",
    ]
    for name, seconds in best.items():
        bad = wrong.get(name)
        shown = "-" if bad is None else f"{len(bad)}/{len(corpus.texts)}" + (f" e.g. {bad[:5]}" if bad else "")
        lines.append(
            f"  {name:<48} {seconds * 1e3:9.2f} {seconds / units * scale:11.1f} "
            f"{seconds / best['textcalls']:12.2f}  {shown}"
        )
    lines.append(f"  fastest peer: {fastest}")
    benchmark.extra_info.update({"best_seconds": best, "wrong_messages": {k: len(v) for k, v in wrong.items()}})
    with capsys.disabled():
        print("\n" + "\n".join(lines))
