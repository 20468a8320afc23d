"""recover_stream / arecover_stream / ChunkRecovery over chat.completion.chunk dicts (both implementations)."""

from __future__ import annotations

import asyncio
import copy
import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from textcalls.markers import MAX_BLOCK
from textcalls.parse import parse
from textcalls.stream import ChunkRecovery, arecover_stream, recover_stream

from ..streams import ch

DS_OPEN, DS_SEP, DS_CLOSE = "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>"
DS_SECTION_OPEN, DS_SECTION_CLOSE = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
BLOCK_F = '<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'
BLOCK_G = '<tool_call>{"name": "g", "arguments": {}}</tool_call>'


def run(chunks, *, native=True, has_tools=True, **kw):
    return list(recover_stream(chunks, native=native, has_tools=has_tools, **kw))


def deltas(chunks, index=0):
    """The deltas of choice ``index`` over the output, in order."""
    return [c["delta"] for chunk in chunks for c in chunk["choices"] if c["index"] == index]


def content(chunks, index=0):
    return "".join(d.get("content") or "" for d in deltas(chunks, index))


def calls(chunks, index=0):
    """(index, name, arguments) of every tool_calls entry of choice ``index``."""
    return [
        (t["index"], t["function"].get("name"), t["function"]["arguments"])
        for d in deltas(chunks, index)
        for t in d.get("tool_calls") or []
    ]


def finishes(chunks, index=0):
    return [
        c["finish_reason"]
        for chunk in chunks
        for c in chunk["choices"]
        if c["index"] == index and c["finish_reason"] is not None
    ]


# --- recovering as blocks complete ---------------------------------------------------------------


def test_call_is_emitted_on_the_chunk_that_completes_the_block(impl):
    m = ChunkRecovery(native=True, has_tools=True)
    role = ch("", role="assistant")
    assert m.push(role) == [role] and m.push(role)[0] is role
    out = m.push(ch("Sure. <tool_"))
    assert [c["choices"][0]["delta"] for c in out] == [{"content": "Sure. "}]
    out = m.push(ch('call>{"name": "f", "arguments": {"a": 1}}</tool_call>'))
    assert len(out) == 1  # the emptied content chunk is dropped, the call follows at once
    (entry,) = out[0]["choices"][0]["delta"]["tool_calls"]
    assert entry["id"].startswith("call_")
    assert entry == {
        "index": 0,
        "id": entry["id"],
        "type": "function",
        "function": {"name": "f", "arguments": '{"a": 1}'},
    }
    assert out[0]["choices"][0]["finish_reason"] is None
    assert {k: out[0][k] for k in ("id", "object", "created", "model")} == {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
    }
    out = m.push(ch(finish="stop"))
    assert [c["choices"][0]["finish_reason"] for c in out] == ["tool_calls"]
    assert out[0]["choices"][0]["delta"] == {}
    assert m.close() == []


def test_text_around_a_block_in_one_delta(impl):
    out = run([ch("a " + BLOCK_F + " b"), ch(finish="stop")])
    assert content(out) == "a  b"
    assert calls(out) == [(0, "f", '{"a": 1}')]
    # the text chunk comes first, the call right after it, then the finish
    assert [list(d) for d in deltas(out)] == [["content"], ["tool_calls"], []]
    assert finishes(out) == ["tool_calls"]


def test_indexes_count_up_within_a_choice(impl):
    out = run([ch(BLOCK_F), ch(" then "), ch(BLOCK_G), ch(finish="stop")])
    assert calls(out) == [(0, "f", '{"a": 1}'), (1, "g", "{}")]
    ids = [t["id"] for d in deltas(out) for t in d.get("tool_calls") or []]
    assert len(set(ids)) == 2


def test_deepseek_blocks_and_section_markers(impl):
    text = f'Look.{DS_SECTION_OPEN}{DS_OPEN}get_time{DS_SEP}{{"tz": "UTC"}}{DS_CLOSE}{DS_SECTION_CLOSE}'
    out = run([ch(text[i : i + 5]) for i in range(0, len(text), 5)] + [ch(finish="stop")])
    assert content(out) == "Look."
    assert calls(out) == [(0, "get_time", '{"tz": "UTC"}')]
    assert finishes(out) == ["tool_calls"]


def test_other_dialects_of_the_table_mistral(impl):
    out = run(
        [ch("Sure ["), ch("TOOL_CALLS"), ch('][{"name": "f", "arguments": {"a": 1}}]'), ch(" ok"), ch(finish="stop")]
    )
    assert content(out) == "Sure  ok"
    assert calls(out) == [(0, "f", '{"a": 1}')]
    plain = [ch("a [1, 2] b"), ch(finish="stop")]
    assert all(x is y for x, y in zip(run(plain), plain, strict=False))


def test_scrubber_options_are_passed_on(impl):
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    text = BLOCK_F + " " + BLOCK_G
    assert calls(run([ch(text)], tools=tools)) == [(0, "f", '{"a": 1}')]  # g was not offered: it stays text
    assert content(run([ch(text)], tools=tools)) == " " + BLOCK_G
    assert content(run([ch(text)], tools=tools, unknown_tools="drop")) == " "
    mistral = '[TOOL_CALLS][{"name": "f", "arguments": {}}]'
    assert content(run([ch(mistral)], formats=["hermes"])) == mistral  # not a format asked for
    assert calls(run([ch(mistral)], formats=["mistral"])) == [(0, "f", "{}")]


def test_whole_message_formats_read_every_chunk(impl):
    call = '{"name": "f", "arguments": {"a": 1}}'
    out = run([ch("", role="assistant"), ch(call[:9]), ch(call[9:]), ch(finish="stop")], formats=["json_message"])
    assert content(out) == "" and calls(out) == [(0, "f", '{"a": 1}')] and finishes(out) == ["tool_calls"]
    text = "Sure: " + call
    out = run([ch(text[:4]), ch(text[4:]), ch(finish="stop")], formats=["json_message"])
    assert content(out) == text and calls(out) == [] and finishes(out) == ["stop"]
    m = ChunkRecovery(native=True, has_tools=True, formats=["json_message"])
    assert m.active == 1
    m.close()
    assert m.active == 1


# --- the finish chunk ----------------------------------------------------------------------------


def test_held_tail_goes_out_before_the_finish_chunk(impl):
    out = run([ch(BLOCK_F), ch("Bye <tool"), ch(finish="stop")])
    assert list(deltas(out)) == [
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": out[0]["choices"][0]["delta"]["tool_calls"][0]["id"],
                    "type": "function",
                    "function": {"name": "f", "arguments": '{"a": 1}'},
                }
            ]
        },
        {"content": "Bye "},
        {"content": "<tool"},
        {},
    ]
    assert finishes(out) == ["tool_calls"]
    assert out[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_finish_chunk_with_its_own_text_and_a_block(impl):
    out = run([ch("x " + BLOCK_G + " y", finish="stop")])
    assert next(iter(deltas(out))) == {"content": "x  y"}
    assert calls(out) == [(0, "g", "{}")]
    assert deltas(out)[-1] == {} and finishes(out) == ["tool_calls"]
    assert len(out) == 3


def test_finish_reason_kept_when_nothing_was_recovered(impl):
    out = run([ch("a <tool_c"), ch(finish="length")])
    assert content(out) == "a <tool_c"
    assert [list(d) for d in deltas(out)] == [["content"], ["content"], []]
    assert finishes(out) == ["length"]


def test_malformed_block_is_removed_without_a_call(impl):
    out = run([ch("a <tool_call>{not json}</tool_call> b"), ch(finish="stop")])
    assert content(out) == "a  b" and calls(out) == [] and finishes(out) == ["stop"]


def test_stream_without_finish_chunk_still_flushes(impl):
    out = run([ch("hello <tool"), ch("_call")])
    assert content(out) == "hello <tool_call"
    assert finishes(out) == []
    out = run([ch("hi " + BLOCK_F[:-3]), ch(BLOCK_F[-3:])])  # completes in the last chunk, no finish
    assert calls(out) == [(0, "f", '{"a": 1}')] and content(out) == "hi "


def test_choice_starts_afresh_after_its_finish(impl):
    m = ChunkRecovery(native=True, has_tools=True)
    first = m.push(ch(BLOCK_F)) + m.push(ch(finish="stop"))
    second = m.push(ch(BLOCK_G)) + m.push(ch(finish="stop"))
    assert calls(first) == [(0, "f", '{"a": 1}')]
    assert calls(second) == [(0, "g", "{}")]  # indexes start over
    assert finishes(second) == ["tool_calls"]


# --- what passes through -------------------------------------------------------------------------


def test_plain_stream_is_the_very_same_objects(impl):
    chunks = [
        ch("", role="assistant"),
        ch("a < b and c > d"),
        ch(" <b>bold</b>"),
        ch(finish="stop"),
        {"id": "chatcmpl-1", "choices": [], "usage": {"total_tokens": 3}},
    ]
    out = run(chunks)
    assert len(out) == len(chunks) and all(a is b for a, b in zip(out, chunks, strict=False))


def test_an_active_choice_still_passes_unchanged_chunks_as_they_are(impl):
    m = ChunkRecovery(native=True, has_tools=True)
    m.push(ch(BLOCK_F))
    assert m.active == 1
    for chunk in (ch("x <b> y"), ch("plain"), ch(reasoning_content="r")):
        assert m.push(chunk)[0] is chunk


def test_without_tools_every_chunk_passes_untouched(impl):
    chunks = [ch(BLOCK_F), ch("x"), ch(finish="stop")]
    out = run(chunks, has_tools=False)
    assert len(out) == 3 and all(a is b for a, b in zip(out, chunks, strict=False))
    assert run(["not even a chunk"], has_tools=False) == ["not even a chunk"]


def test_reasoning_logprobs_and_unknown_fields_pass(impl):
    reasoning = ch(reasoning_content="think <tool_call> maybe")
    reasoning2 = ch(reasoning="more")
    lp = ch("<tool_call>")
    lp["choices"][0]["logprobs"] = {"content": [{"token": "<tool_call>", "logprob": -0.1}]}
    extra = ch(BLOCK_G)
    extra["x_provider"] = {"region": "eu"}
    extra["choices"][0]["stop_reason"] = None
    out = run([reasoning, reasoning2, lp, ch('{"name": "f", "arguments": {}}</tool_call>'), extra, ch(finish="stop")])
    assert out[0] is reasoning and out[1] is reasoning2
    # the logprobs chunk keeps its logprobs even though its text was all markup
    assert out[2]["choices"][0] == {
        "index": 0,
        "delta": {"content": ""},
        "logprobs": lp["choices"][0]["logprobs"],
        "finish_reason": None,
    }
    synthesized = [c for c in out if c.get("x_provider")]
    assert synthesized and all(c["x_provider"] == {"region": "eu"} for c in synthesized)
    assert calls(out) == [(0, "f", "{}"), (1, "g", "{}")]


def test_usage_chunks_pass_and_synthetic_chunks_carry_no_usage(impl):
    c1 = ch(BLOCK_F)
    c1["usage"] = None
    done = ch(finish="stop")
    done["usage"] = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
    usage_only = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "choices": [],
        "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
    }
    out = run([c1, done, usage_only])
    assert out[-1] is usage_only
    assert [c["usage"] for c in out[:-1]] == [None, done["usage"]]


def test_chunk_left_with_nothing_is_dropped_but_one_with_usage_is_kept(impl):
    m = ChunkRecovery(native=True, has_tools=True)
    assert m.push(ch("<tool_call>")) == []
    with_usage = ch('{"name": "f", "arguments": {}}')
    with_usage["usage"] = {"total_tokens": 5}
    out = m.push(with_usage)
    assert out == [{**with_usage, "choices": []}]


def test_inputs_are_never_mutated(impl):
    chunks = [ch("", role="assistant"), ch("a " + BLOCK_F), ch("b", finish="stop")]
    before = copy.deepcopy(chunks)
    run(chunks)
    assert chunks == before


# --- n > 1 ---------------------------------------------------------------------------------------


def test_each_choice_has_its_own_scrubber_and_indexes(impl):
    a = "A says <tool_call>" + '{"name": "f", "arguments": {"a": 1}}</tool_call>'
    b = "B only talks <b>."
    chunks = []
    for i in range(0, max(len(a), len(b)), 4):
        if a[i : i + 4]:
            chunks.append(ch(a[i : i + 4], index=0))
        if b[i : i + 4]:
            chunks.append(ch(b[i : i + 4], index=1))
    two = ch(finish="stop", index=0)
    two["choices"].append({"index": 1, "delta": {}, "logprobs": None, "finish_reason": "stop"})
    out = run(chunks + [two])
    assert content(out, 0) == "A says " and calls(out, 0) == [(0, "f", '{"a": 1}')]
    assert content(out, 1) == b and calls(out, 1) == []
    assert finishes(out, 0) == ["tool_calls"] and finishes(out, 1) == ["stop"]


def test_two_choices_in_one_chunk_both_with_calls(impl):
    both = ch(BLOCK_F, index=0)
    both["choices"].append({"index": 1, "delta": {"content": BLOCK_G}, "logprobs": None, "finish_reason": None})
    out = run([both, ch(finish="stop", index=0), ch(finish="stop", index=1)])
    assert calls(out, 0) == [(0, "f", '{"a": 1}')] and calls(out, 1) == [(0, "g", "{}")]
    assert finishes(out, 0) == ["tool_calls"] and finishes(out, 1) == ["tool_calls"]


# --- structured calls and the gate ---------------------------------------------------------------


def structured(index, name=None, args=""):
    entry = {"index": index, "function": {"arguments": args}}
    if name:
        entry.update(id=f"call_s{index}", type="function")
        entry["function"]["name"] = name
    return ch(tool_calls=[entry])


def test_native_structured_calls_kept_and_text_only_scrubbed(impl):
    s1, s2 = structured(0, "lookup"), structured(0, args='{"q": 1}')
    chunks = [s1, s2, ch("note " + BLOCK_F), ch(finish="tool_calls")]
    out = run(chunks, native=True)
    assert out[0] is s1 and out[1] is s2
    assert content(out) == "note "
    assert calls(out) == [(0, "lookup", ""), (0, None, '{"q": 1}')]  # no recovered call added
    assert finishes(out) == ["tool_calls"]


def test_prompt_guided_recovers_after_structured_calls(impl):
    s1 = structured(0, "lookup", "{}")
    out = run([s1, ch(BLOCK_F), ch(finish="stop")], native=False)
    assert out[0] is s1
    assert calls(out) == [(0, "lookup", "{}"), (1, "f", '{"a": 1}')]
    assert finishes(out) == ["tool_calls"]


def test_structured_call_after_a_recovered_one_is_shifted(impl):
    out = run([ch(BLOCK_F), structured(0, "lookup"), structured(0, args="{}"), ch(finish="tool_calls")], native=True)
    assert calls(out) == [(0, "f", '{"a": 1}'), (1, "lookup", ""), (1, None, "{}")]


def test_native_gate_closes_once_a_structured_call_was_seen(impl):
    out = run([structured(0, "lookup", "{}"), ch(BLOCK_F), ch(finish="stop")], native=True)
    assert calls(out) == [(0, "lookup", "{}")]
    assert finishes(out) == ["stop"]


# --- limits and bad input ------------------------------------------------------------------------


def test_block_over_max_block_is_text(impl):
    text = '<tool_call>{"name": "f", "arguments": {"long": "xxxxxxxxxxxxxxxxxxxx"}}</tool_call>'
    out = run([ch(text[:30]), ch(text[30:]), ch(finish="stop")], max_block=16)
    assert calls(out) == []
    # released as text, then its raw closer ends a block: exactly what parse() says
    assert content(out) == parse(text, max_block=16).content


@pytest.mark.parametrize(
    ("chunk", "error", "message"),
    [
        (["x"], TypeError, "a chunk must be a dict, not list"),
        ({"choices": "x"}, TypeError, "chunk['choices'] must be a list, not str"),
        ({"choices": [5]}, TypeError, "chunk['choices'][0] must be a dict, not int"),
        ({"choices": [{"delta": {}}]}, TypeError, "chunk['choices'][0]['index'] must be an int, not NoneType"),
        ({"choices": [{"index": True}]}, TypeError, "chunk['choices'][0]['index'] must be an int, not bool"),
        ({"choices": [{"index": -1}]}, ValueError, "chunk['choices'][0]['index'] must be >= 0, not -1"),
        ({"choices": [{"index": 0, "delta": "x"}]}, TypeError, "chunk['choices'][0]['delta'] must be a dict, not str"),
        (
            {"choices": [{"index": 0, "delta": {"tool_calls": {}}}]},
            TypeError,
            "chunk['choices'][0]['delta']['tool_calls'] must be a list, not dict",
        ),
        (
            {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": "0"}]}}]},
            TypeError,
            "chunk['choices'][0]['delta']['tool_calls'][0]['index'] must be an int, not str",
        ),
        (
            {"choices": [{"index": 0, "delta": {"tool_calls": [5]}}]},
            TypeError,
            "chunk['choices'][0]['delta']['tool_calls'][0] must be a dict, not int",
        ),
        (
            {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": True}]}}]},
            TypeError,
            "chunk['choices'][0]['delta']['tool_calls'][0]['index'] must be an int, not bool",
        ),
        (
            {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0}, {"index": -1}]}}]},
            ValueError,
            "chunk['choices'][0]['delta']['tool_calls'][1]['index'] must be >= 0, not -1",
        ),
        # the second choice named by its position
        ({"choices": [{"index": 0}, 5]}, TypeError, "chunk['choices'][1] must be a dict, not int"),
        ({"choices": [{"index": 0}, {"index": -2}]}, ValueError, "chunk['choices'][1]['index'] must be >= 0, not -2"),
        (
            {"choices": [{"index": 0}, {"index": 1, "delta": {"tool_calls": [{"index": 0}, {}]}}]},
            TypeError,
            "chunk['choices'][1]['delta']['tool_calls'][1]['index'] must be an int, not NoneType",
        ),
    ],
)
def test_malformed_chunks_raise_and_change_nothing(impl, chunk, error, message):
    m = ChunkRecovery(native=True, has_tools=True)
    m.push(ch("held <tool_"))
    with pytest.raises(error) as exc:
        m.push(chunk)
    assert str(exc.value) == message
    out = m.push(ch('call>{"name": "f", "arguments": {}}</tool_call>'))
    assert calls(out) == [(0, "f", "{}")]


def test_second_choice_malformed_leaves_the_first_unfed(impl):
    m = ChunkRecovery(native=True, has_tools=True)
    bad = ch("a <tool_call>")
    bad["choices"].append({"index": "1"})
    with pytest.raises(TypeError):
        m.push(bad)
    assert m.active == 0
    assert content(m.push(ch("b")) + m.close()) == "b"


def test_bad_arguments_raise_at_the_call():
    with pytest.raises(TypeError, match="native must be a bool, not int"):
        recover_stream([], native=1, has_tools=True)
    with pytest.raises(TypeError, match="has_tools must be a bool, not NoneType"):
        arecover_stream([], native=True, has_tools=None)
    with pytest.raises(TypeError, match="chunks must be an iterable of dicts, not int"):
        recover_stream(5, native=True, has_tools=True)
    with pytest.raises(TypeError, match="chunks must be an async iterable of dicts, not list"):
        arecover_stream([], native=True, has_tools=True)
    with pytest.raises(ValueError, match="max_block must be >= 1, not 0"):
        ChunkRecovery(native=True, has_tools=True, max_block=0)
    with pytest.raises(TypeError, match="max_blocks"):
        recover_stream([], native=True, has_tools=True, max_blocks=5)
    with pytest.raises(ValueError, match="unknown dialect"):
        recover_stream([], native=True, has_tools=True, formats=["klingon"])


# --- async and closing ---------------------------------------------------------------------------


async def agen(items, log):
    try:
        for item in items:
            yield item
    finally:
        log.append("closed")


def test_async_gives_the_same_chunks(impl):
    chunks = [ch("", role="assistant"), ch("a " + BLOCK_F[:9]), ch(BLOCK_F[9:] + " b"), ch(finish="stop")]

    async def collect():
        return [c async for c in arecover_stream(agen(chunks, []), native=True, has_tools=True)]

    got, want = asyncio.run(collect()), run(chunks)
    strip = json.dumps  # ids differ between runs: compare everything else
    assert [strip(c).split('"id": "call_')[0] for c in got] == [strip(c).split('"id": "call_')[0] for c in want]
    assert calls(got) == calls(want) == [(0, "f", '{"a": 1}')]


def test_closing_the_result_closes_the_source(impl):
    log = []

    def source():
        try:
            yield ch("a")
            yield ch("b")
        finally:
            log.append("closed")

    out = recover_stream(source(), native=True, has_tools=True)
    next(out)
    out.close()
    assert log == ["closed"]

    async def early_exit():
        it = arecover_stream(agen([ch("a"), ch("b")], log), native=True, has_tools=True)
        await it.__anext__()
        await it.aclose()

    asyncio.run(early_exit())
    assert log == ["closed", "closed"]


# --- properties ----------------------------------------------------------------------------------

# The impl fixture only switches the implementation: nothing in it needs resetting between examples.
PROPERTY = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
PIECES = st.sampled_from(
    [
        "hi ",
        "a < b ",
        "x",
        "\n",
        " ",
        "<",
        ">",
        "tool",
        "_call",
        "<b>",
        '"',
        "\\",
        "{",
        "}",
        "é",
        "😀",
        BLOCK_F,
        BLOCK_G,
        "<tool_call>",
        "</tool_call>",
        '{"name": "h", "arguments": {"k": "v"}}',
        DS_OPEN,
        DS_CLOSE,
        DS_SEP,
        DS_SECTION_OPEN,
        DS_SECTION_CLOSE,
        "get_time",
        '{"tz": "UTC"}',
        f"{DS_OPEN}get_time{DS_SEP}{{}}{DS_CLOSE}",
        "[",
        "TOOL_CALLS",
        "]",
        "[1, 2]",
        '[TOOL_CALLS][{"name": "m", "arguments": {"x": [1]}}]',
        "[f(a=1)]",
        "  ",
    ]
)


@st.composite
def split_text(draw):
    text = "".join(draw(st.lists(st.one_of(PIECES, st.text(max_size=4)), max_size=14)))
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=10)))
    bounds = [0, *cuts, len(text)]
    return text, [text[a:b] for a, b in itertools.pairwise(bounds) if b > a]


FORMATS = st.sampled_from([None, None, ["hermes", "json_message"], ["deepseek", "mistral", "pythonic_message"]])


@PROPERTY
@given(split_text(), st.sampled_from([12, 40, MAX_BLOCK]), FORMATS, st.booleans(), st.booleans())
def test_any_split_matches_parse(impl, case, max_block, formats, finish, native):
    """Concatenated content equals parse()'s, calls equal parse()'s, in order, indexes 0.., with or
    without a finish chunk; this also holds the fast path for settled choices (no scrubber fed) to the rules."""
    text, pieces = case
    chunks = [ch("", role="assistant"), *(ch(p) for p in pieces)] + ([ch(finish="stop")] if finish else [])
    out = run(chunks, native=native, max_block=max_block, formats=formats)
    expected = parse(text, max_block=max_block, formats=formats)
    assert content(out).strip() == expected.content
    assert calls(out) == [(i, c.name, c.arguments) for i, c in enumerate(expected.calls)]
    if finish:
        assert finishes(out) == ["tool_calls" if expected.calls else "stop"]
    if not expected.removed and not expected.calls:
        assert "".join(pieces) == content(out)


# --- reasoning moved out of the content ----------------------------------------------------------


def reasoning(chunks, index=0):
    return "".join(d.get("reasoning_content") or "" for d in deltas(chunks, index))


@pytest.mark.parametrize(
    "pieces",
    [
        ["<think>Let me", " check.</think>", "Sure. ", BLOCK_F],
        ["<thi", "nk>Let me check.</th", "ink>Sure. " + BLOCK_F[:9], BLOCK_F[9:]],
    ],
)
def test_think_text_becomes_reasoning_content(impl, pieces):
    out = run([ch(p) for p in pieces] + [ch(finish="stop")])
    assert reasoning(out) == "Let me check."
    assert content(out) == "Sure. "
    assert [c[1] for c in calls(out)] == ["f"]
    assert finishes(out) == ["tool_calls"]


def test_reasoning_held_after_a_rehearsed_call_comes_out_at_the_end(impl):
    # the span never closes: its call is extracted, the text after it goes out with the finish
    out = run([ch("<think>maybe " + BLOCK_F), ch(" then"), ch(finish="stop")])
    assert reasoning(out) == "maybe  then"
    assert [c[1] for c in calls(out)] == ["f"] and content(out) == ""


def test_reasoning_content_already_in_the_delta_is_kept_first(impl):
    out = run([ch("<think>mine</think>x", reasoning_content="theirs "), ch(finish="stop")])
    assert reasoning(out) == "theirs mine" and content(out) == "x"


def test_a_word_opener_split_across_chunks_is_recovered(impl):
    # phi4_mini's opener is a plain word: with it enabled no chunk may skip the scrubber
    formats = [n for n, on in __import__("textcalls").DIALECTS.items() if on] + ["phi4_mini"]
    pieces = ["Sure. func", "tools", '[{"name": "f", "arguments": {"a": 1}}]', ""]
    out = run([ch(p) for p in pieces] + [ch(finish="stop")], formats=formats)
    assert content(out) == "Sure. "
    assert [c[1] for c in calls(out)] == ["f"] and finishes(out) == ["tool_calls"]
