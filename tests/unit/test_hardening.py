"""Regression tests for the defects a red-team pass found in the layers around the scanner, and for the
limits added with them (both implementations). Proxy faults are in ``test_proxy_faults.py``."""

from __future__ import annotations

import gc
import itertools
import json
import threading
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from textcalls import DIALECTS, hold_from, may_contain_markup, parse
from textcalls._table import table_for
from textcalls.screens import screen_for
from textcalls.sse import SSERecovery
from textcalls.stream import MAX_CHOICES, ChunkRecovery, recover_stream

from ..gateway_support.sse_client import assemble, chunk, masked, recover, seen, stream
from ..waiting import HANG_GUARD

CALL = '<tool_call>{"name": "lookup", "arguments": {}}</tool_call>'
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def chunks_of(deltas, index=0):
    return [
        chunk("", role="assistant", index=index),
        *(chunk(d, index=index) for d in deltas),
        chunk(finish="stop", index=index),
    ]


def through_chunks(deltas, **options):
    """(content, [(name, arguments)], finish reasons) a client of ``recover_stream`` gets."""
    out = list(recover_stream(chunks_of(deltas), native=False, has_tools=True, **options))
    content, calls, finishes = assemble(out)
    return content, [(name, args) for _, name, args in calls], finishes


def through_sse(deltas, cuts=(), **options):
    raw = stream(chunks_of(deltas))
    content, calls, finishes = assemble(seen(recover(raw, cuts, native=False, **options)))
    return content, [(name, args) for _, name, args in calls], finishes


# -- code fences reach every screen ------------------------------------------------------------------

FENCE_CASES = [
    # (deltas, calls a reader expects: markup inside a ``` fence is quoted text, not a call)
    (["```\n", CALL + "\n```"], 0),  # the fence opens in a delta of its own
    (["```\n<b>x</b>\n", "```\n", CALL], 1),  # the fence closes in a delta of its own
    (["abc", "```\n", CALL], 1),  # backticks in mid-line (the line began earlier): no fence
    (["x\n", "   ", "```\n", CALL, "\n```"], 0),  # three spaces before the backticks: a fence
    (["x\n", "    ", "```\n", CALL], 1),  # four spaces: no fence
    (["Hello", "\n", "abc", "```\n", CALL], 1),  # "abc" is skipped by the SSE screen once it knows the shape
    (["Hello", " there", "\n", "```\n", CALL, "\n", "```", "\n", "bye"], 0),
]


@pytest.mark.parametrize(("deltas", "n_calls"), FENCE_CASES)
def test_code_fences_are_seen_by_chunk_and_sse_screens(impl, deltas, n_calls):
    expected = parse("".join(deltas))
    assert len(expected.calls) == n_calls  # the rule itself, as parse applies it
    want = (expected.content, [(c.name, c.arguments) for c in expected.calls], ["tool_calls" if n_calls else "stop"])
    content, calls, finishes = through_chunks(deltas)
    assert (content.strip(), calls, finishes) == want
    raw_len = len(stream(chunks_of(deltas)))
    for cuts in ((), range(1, raw_len), range(7, raw_len, 7)):
        content, calls, finishes = through_sse(deltas, cuts)
        assert (content.strip(), calls, finishes) == want


def test_with_code_fences_off_a_fenced_call_is_recovered_everywhere(impl):
    deltas = ["```\n", CALL + "\n```"]
    assert len(parse("".join(deltas), code_fences=False).calls) == 1
    assert through_chunks(deltas, code_fences=False)[1] == [("lookup", "{}")]
    assert through_sse(deltas, code_fences=False)[1] == [("lookup", "{}")]


def test_the_screens_are_derived_from_the_table_and_the_fence_setting(impl):
    for formats in (None, ["hermes"], ["mistral", "gemma4"], ["harmony"]):
        table = table_for(formats)
        firsts = {lit[0] for lit in table.literals}
        assert set(screen_for(table, False).starts) == firsts
        assert set(screen_for(table, True).starts) == firsts | {"`"}
        assert ChunkRecovery(native=True, has_tools=True, formats=formats).starts == screen_for(table, True).starts
        assert ChunkRecovery(native=True, has_tools=True, formats=formats, code_fences=False).starts == (
            screen_for(table, False).starts
        )
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    bare = screen_for(table_for(None), False, True)  # tools given: a message may start with a bare JSON call
    assert set(bare.starts) == {lit[0] for lit in table_for(None).literals} | set("`{[") and bare.fences
    assert ChunkRecovery(native=True, has_tools=True, tools=tools, code_fences=False, schema_guided=False).starts == (
        bare.starts
    )
    # with the schema-guided stage (the default with tools) a line break is a start too
    guided = screen_for(table_for(None), False, True, True)
    assert set(guided.starts) == set(bare.starts) | {"\n"} and guided.fences
    assert ChunkRecovery(native=True, has_tools=True, tools=tools, code_fences=False).starts == guided.starts
    untouched = screen_for(table_for(None), True).untouched
    assert not untouched(b'data: {"choices":[{"delta":{"content":"x"}}]}')  # content moves the line state
    assert untouched(b'data: {"choices":[{"delta":{"reasoning_content":"x"}}]}')
    assert not untouched(b'data: {"choices":[{"delta":{"reasoning_content":"\\u0060"}}]}')  # an escaped backtick


FENCE_PIECES = ["```", "````", "`", "\n", "\r\n", " ", "   ", "abc", CALL, "<b>", "<tool_call>", "é"]


@PROPERTY
@given(st.lists(st.sampled_from(FENCE_PIECES), max_size=14), st.data())
def test_any_deltas_around_fences_give_what_parse_gives(impl, pieces, data):
    text = "".join(pieces)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8)))
    deltas = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=False) if b > a]
    expected = parse(text)
    want = (expected.content, [(c.name, c.arguments) for c in expected.calls])
    content, calls, _ = through_chunks(deltas)
    assert (content.strip(), calls) == want
    raw_len = len(stream(chunks_of(deltas)))
    byte_cuts = sorted(data.draw(st.lists(st.integers(0, raw_len), max_size=8)))
    content, calls, _ = through_sse(deltas, byte_cuts)
    assert (content.strip(), calls) == want


def test_may_contain_markup_gates_nothing_that_recovery_would_change(impl):
    # A body with no literal is unchanged by recovery, fences or not: the screen needs no backtick.
    text = "```\nno markup at all\n```"
    assert not may_contain_markup(text)
    assert parse(text).removed == 0 and parse(text, code_fences=False).removed == 0


# -- compiled specs are bounded --------------------------------------------------------------------------


@pytest.mark.slow
def test_memory_stays_flat_however_many_format_sets_are_used(impl):
    sets = itertools.islice(itertools.combinations(sorted(DIALECTS), 3), 400)

    def use(formats):
        impl.StreamScrubber(formats=formats).feed("a < b <tool_call>")
        hold_from("x <tool_", formats=formats)
        may_contain_markup(b"<tool_call>", formats=formats)

    tracemalloc.start()  # before the first use: what is freed later was traced when it was made
    try:
        for formats in itertools.islice(sets, 150):  # past the table cache's 64: evictions happen from here on
            use(formats)
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for formats in sets:  # 250 format sets never used before
            use(formats)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 1 << 20  # flat: the specs live with the 64 cached tables (it was 87 KiB more per set)


# -- SSE events over the cap: one rule for any read sizes ------------------------------------------------


def _big_event_stream(size, nl):
    text = "x" * size + CALL
    body = stream([chunk("", role="assistant"), chunk("Hi "), chunk(text), chunk(" bye"), chunk(finish="stop")])
    return body.replace(b"\n", nl) if nl != b"\n" else body


@pytest.mark.parametrize("nl", [b"\n", b"\r\n", b"\r"])
def test_an_event_over_max_event_passes_verbatim_whatever_the_read_sizes(impl, nl):
    raw = _big_event_stream(300, nl)
    big = next(e for e in raw.split(nl + nl) if b"xxx" in e) + nl + nl
    for max_event in (100, len(big) - 2 * len(nl) - 1):  # the event's bytes before its blank line: one over
        outs = {
            masked(recover(raw, cuts, max_event=max_event))
            for cuts in ((), range(1, len(raw)), range(4, len(raw), 4), range(97, len(raw), 97))
        }
        assert len(outs) == 1
        out = outs.pop()
        assert big in out  # verbatim, markup and all: an oversized event is neither decoded nor scrubbed
        assert assemble(seen(out))[1] == []
    exact = len(big) - 2 * len(nl)  # at the cap exactly: decoded and recovered, whatever the reads
    outs = {masked(recover(raw, cuts, max_event=exact)) for cuts in ((), range(1, len(raw)), range(5, len(raw), 5))}
    assert len(outs) == 1
    assert [name for _, name, _ in assemble(seen(outs.pop()))[1]] == ["lookup"]


@PROPERTY
@given(
    st.lists(st.tuples(st.integers(0, 60), st.booleans()), min_size=1, max_size=6),
    st.sampled_from([b"\n", b"\r\n", b"\r"]),
    st.integers(20, 90),
    st.data(),
)
def test_events_near_the_cap_give_the_same_bytes_for_any_split(impl, sizes, nl, max_event, data):
    pieces = [("y" * n) + (CALL if markup else "") for n, markup in sizes]
    raw = stream([chunk(p) for p in pieces] + [chunk(finish="stop")]).replace(b"\n", nl)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=10)))
    assert masked(recover(raw, cuts, max_event=max_event)) == masked(recover(raw, max_event=max_event))


# -- bounded state per stream ------------------------------------------------------------------------------


@pytest.mark.parametrize("code_fences", [True, False])
def test_at_most_max_choices_are_open_at_once(impl, code_fences):
    r = ChunkRecovery(native=False, has_tools=True, code_fences=code_fences)
    for i in range(MAX_CHOICES):
        assert r.push(chunk("a < b", index=i))[0]["choices"][0]["delta"]["content"] == "a < b"
    too_many = chunk("x < y", index=MAX_CHOICES)
    with pytest.raises(ValueError, match=f"at most {MAX_CHOICES} choices"):
        r.push(too_many)
    with pytest.raises(ValueError, match=f"at most {MAX_CHOICES} choices"):  # a chunk of two: nothing changes
        r.push({**chunk(CALL, index=3), "choices": [chunk(CALL, index=3)["choices"][0], too_many["choices"][0]]})
    finished = r.push(chunk(finish="stop", index=0))  # a finished choice frees its place
    assert finished[-1]["choices"][0]["finish_reason"] == "stop"
    assert r.push(too_many) == [too_many]
    out = r.push(chunk(CALL, index=3))  # choice 3 was untouched by the refused chunk
    assert [c["choices"][0]["delta"].get("tool_calls", [{}])[0].get("function", {}).get("name") for c in out] == [
        "lookup"
    ]


def test_over_max_choices_an_sse_event_is_relayed_unrecovered(impl):
    raw = b"".join(b"data: " + json.dumps(chunk("a < b", index=i)).encode() + b"\n\n" for i in range(MAX_CHOICES))
    extra = b"data: " + json.dumps(chunk(CALL, index=MAX_CHOICES)).encode() + b"\n\n"
    r = SSERecovery(native=False, has_tools=True)
    r.feed(raw)
    assert r.feed(extra) == extra


# -- one scrubber, one thread at a time --------------------------------------------------------------------


def test_a_scrubber_called_from_two_threads_at_once_raises(impl, monkeypatch):
    entered, release = threading.Event(), threading.Event()
    real = impl.read_block

    def slow(*args, **kwargs):  # the first call is inside the scrubber while the second one comes
        entered.set()
        release.wait(HANG_GUARD)
        return real(*args, **kwargs)

    monkeypatch.setattr(impl, "read_block", slow)
    s = impl.StreamScrubber()
    got = {}
    # arguments written as JSON text: read by the grammar (read_block), not the Cython scanner's shortcut
    call = '<tool_call>{"name": "lookup", "arguments": "{}"}</tool_call>'
    first = threading.Thread(target=lambda: got.setdefault("out", s.feed("Hi " + call)))
    first.start()
    try:
        assert entered.wait(HANG_GUARD)
        for call in (lambda: s.feed("x"), s.flush, s.take_reasoning):
            with pytest.raises(RuntimeError, match="two threads at once"):
                call()
    finally:
        release.set()
        first.join(HANG_GUARD)
    assert got["out"] == "Hi "  # the first call was not disturbed
    assert [(c.name, c.arguments) for c in s.calls] == [("lookup", "{}")]
    assert s.feed(" bye") == " bye" and s.flush() == ""  # usable again once that call returned


# -- bounded grammars at every layer ----------------------------------------------------------------


def _bounded_cases():
    from textcalls.dialects.jsonlike import NOTATION_NODES_MAX
    from textcalls.dialects.pythonic import NODES_MAX
    from textcalls.dialects.xml import TAGS_MAX
    from textcalls.relaxed_json import MAX_DEPTH, REPAIR_TOKENS

    args = "".join(f"a{k}=1," for k in range(NODES_MAX))
    return {
        "pythonic": "ok <|tool_call_start|>[f(" + args + ")]<|tool_call_end|> end",
        "gemma": "ok <|tool_call>call:f{"
        + ",".join(f"a{k}:1" for k in range(NOTATION_NODES_MAX))
        + "}<tool_call|> end",
        "xml": "ok <tool_call>\n<function=f>\n"
        + "<parameter=p>v</parameter>\n" * TAGS_MAX
        + "</function>\n</tool_call> end",
        "deep": "ok <tool_call>" + "[" * (MAX_DEPTH + 1) + "</tool_call> end",
        "dense": 'ok <tool_call>{"name": "f", "arguments": {' + "a: 1, " * REPAIR_TOKENS + "}}</tool_call> end",
    }


@pytest.mark.parametrize("name", ["pythonic", "gemma", "xml", "deep", "dense"])
def test_a_body_past_a_grammar_bound_is_malformed_at_every_layer(impl, name):
    """The bounds live in the grammars, below the scanners: any split, the chunk stream and SSE give what
    ``parse`` gives (the block removed, no call, the prose kept)."""
    text = _bounded_cases()[name]
    parsed = parse(text)
    assert (parsed.content, parsed.calls, parsed.removed) == ("ok  end", [], 1)
    deltas = [text[k : k + 997] for k in range(0, len(text), 997)]
    assert through_chunks(deltas) == ("ok  end", [], ["stop"])
    assert through_sse(deltas, cuts=(5, 4096)) == ("ok  end", [], ["stop"])
