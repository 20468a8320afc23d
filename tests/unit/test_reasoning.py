"""<think> spans: reasoning apart from content, and calls written while reasoning, on both implementations."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ..conftest import IMPLS
from ..streams import feed_in_pieces

CALL = '<tool_call>{"name": "lookup", "arguments": {"q": 1}}</tool_call>'


def names(parsed):
    return [c.name for c in parsed.calls]


def test_reasoning_is_not_content(impl, tc):
    parsed = tc.parse("<think>Let me think.</think>\nThe answer is 4.")
    assert parsed.content == "The answer is 4."
    assert parsed.reasoning == "Let me think."
    assert parsed.calls == [] and parsed.removed == 2


def test_a_call_in_a_closed_span_is_a_rehearsal(impl, tc):
    parsed = tc.parse(f"<think>I could call {CALL} but no.</think>Done.")
    assert parsed.calls == []
    assert parsed.reasoning == f"I could call {CALL} but no."
    assert parsed.content == "Done."


def test_a_call_in_a_span_never_closed_is_extracted(impl, tc):
    parsed = tc.parse(f"<think>I will look it up. {CALL} more")
    assert names(parsed) == ["lookup"]
    assert parsed.reasoning == "I will look it up.  more"
    assert parsed.content == ""


def test_extract_takes_calls_from_closed_spans_too(impl, tc):
    parsed = tc.parse(f"<think>x {CALL}</think>y", calls_in_reasoning="extract")
    assert names(parsed) == ["lookup"] and parsed.reasoning == "x" and parsed.content == "y"


def test_a_call_after_the_span_is_a_call(impl, tc):
    parsed = tc.parse(f"<think>plan</think>{CALL}")
    assert names(parsed) == ["lookup"] and parsed.reasoning == "plan" and parsed.content == ""


def test_markers_only_switch(impl, tc):
    # a closer in content and an opener inside reasoning are text
    parsed = tc.parse("a </think> b <think>c <think> d</think> e")
    assert parsed.content == "a </think> b  e"
    assert parsed.reasoning == "c <think> d"


def test_reasoning_off_keeps_the_text(impl, tc):
    formats = [n for n, on in tc.DIALECTS.items() if on and n != "reasoning"]
    parsed = tc.parse("<think>x</think>y", formats=formats)
    assert parsed.content == "<think>x</think>y" and parsed.reasoning == ""


def test_stream_reasoning_is_taken_as_it_comes(impl):
    s = impl.StreamScrubber()
    assert s.feed("<think>step one") == ""
    assert s.take_reasoning() == "step one"
    assert s.take_reasoning() == ""
    assert s.feed(", two</think>Answer") == "Answer"
    assert s.take_reasoning() == ", two"


def test_stream_holds_reasoning_after_a_rehearsed_call(impl):
    s = impl.StreamScrubber()
    s.feed(f"<think>maybe {CALL}")
    assert s.take_reasoning() == "maybe "  # the block and what follows wait for the span's end
    s.feed(" then")
    assert s.take_reasoning() == ""
    assert s.feed("</think>ok") == "ok"
    assert s.take_reasoning() == f"{CALL} then" and s.calls == []


def test_deferred_reasoning_is_capped_by_max_block(impl, tc):
    text = "<think>" + CALL + "x" * 200
    assert names(tc.parse(text)) == ["lookup"]
    parsed = tc.parse(text, max_block=100)  # past the cap the call is taken as a rehearsal
    assert parsed.calls == [] and parsed.reasoning == CALL + "x" * 200


def test_calls_in_reasoning_must_be_a_policy(impl, tc):
    with pytest.raises(ValueError, match="calls_in_reasoning"):
        tc.parse("x", calls_in_reasoning="sometimes")


TEXTS = st.lists(
    st.sampled_from(["<think>", "</think>", "plan ", CALL, " answer ", "<thi", "nk>", "</th", '{"x": 1}', "\n"]),
    max_size=10,
).map("".join)


@pytest.mark.parametrize("mod", IMPLS)
@pytest.mark.parametrize("policy", ["auto", "ignore", "extract"])
@settings(max_examples=150, deadline=None)
@given(data=st.data(), text=TEXTS, max_block=st.sampled_from([30, 1 << 20]), started=st.booleans())
def test_any_split_gives_the_same_reasoning_content_and_calls(mod, policy, data, text, max_block, started):
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=10).map(sorted))
    options = {"calls_in_reasoning": policy, "max_block": max_block, "reasoning_started": started}
    assert feed_in_pieces(mod, text, cuts, **options) == feed_in_pieces(mod, text, [], **options)


# -- "auto" (the default): the calls that end a span were meant, unless the content then calls a tool --

OTHER = '<tool_call>{"name": "other", "arguments": {}}</tool_call>'


@pytest.mark.parametrize(
    ("text", "calls", "reasoning", "content"),
    [
        (f"<think>I will look it up. {CALL}</think>", ["lookup"], "I will look it up.", ""),
        (f"<think>plan {CALL} \n </think>Done.", ["lookup"], "plan", "Done."),
        (f"<think>plan {CALL}{CALL}</think>", ["lookup", "lookup"], "plan", ""),  # both end the span
        (f"<think>plan {CALL}</think>Now: {OTHER}", ["other"], f"plan {CALL}", "Now:"),  # the content called: rehearsal
        (f"<think>{CALL} then more</think>ok", [], f"{CALL} then more", "ok"),  # more reasoning after it: rehearsal
        (f"<think>a {CALL}</think>b<think>c</think>d", ["lookup"], "a c", "bd"),  # reasoning again: it was meant
        (
            "<think>x <|tool_calls_section_begin|><|tool_call_begin|>functions.lookup:0<|tool_call_argument_begin|>"
            '{"q": 1}<|tool_call_end|><|tool_calls_section_end|></think>',
            ["lookup"],
            "x",
            "",
        ),  # Kimi-K2-thinking
    ],
)
def test_auto_takes_the_calls_that_end_a_span(impl, tc, text, calls, reasoning, content):
    parsed = tc.parse(text)
    assert (names(parsed), parsed.reasoning, parsed.content) == (calls, reasoning, content)


def test_ignore_keeps_even_the_calls_that_end_a_span_as_reasoning(impl, tc):
    parsed = tc.parse(f"<think>plan {CALL}</think>", calls_in_reasoning="ignore")
    assert (parsed.calls, parsed.reasoning, parsed.content) == ([], f"plan {CALL}", "")


def test_a_stream_that_starts_inside_reasoning(impl, tc):
    parsed = tc.parse(f"I should look it up. {CALL}</think>", reasoning_started=True)
    assert (names(parsed), parsed.reasoning, parsed.content) == (["lookup"], "I should look it up.", "")
    parsed = tc.parse("plan</think>Answer", reasoning_started=True)
    assert (parsed.reasoning, parsed.content) == ("plan", "Answer")
    assert tc.parse("plan</think>Answer").content == "plan</think>Answer"  # without it, a lone closer is text
    with pytest.raises(TypeError, match="reasoning_started"):
        tc.parse("x", reasoning_started=1)


def test_the_gateway_helpers_take_reasoning_started(impl, tc):
    chunks = [
        {"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
        for piece in ("plan", "</thi", "nk>Answer")
    ]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    out = list(tc.recover_stream(chunks, native=True, has_tools=True, reasoning_started=True))
    deltas = [c["choices"][0]["delta"] for c in out if c.get("choices")]
    assert "".join(d.get("content") or "" for d in deltas) == "Answer"
    assert "".join(d.get("reasoning_content") or "" for d in deltas) == "plan"


def test_in_a_stream_the_call_that_ended_the_span_comes_with_the_flush(impl):
    s = impl.StreamScrubber()
    assert s.feed(f"<think>plan {CALL}</think>") == ""
    assert s.calls == [] and s.take_reasoning() == "plan "
    assert s.feed(" Done.") == " Done." and s.calls == []  # still undecided: the content may call a tool
    assert s.flush() == "" and names(s) == ["lookup"] and s.take_reasoning() == ""


def test_gemma4_thought_channel_is_reasoning(impl, tc):
    text = (
        "<|channel>thought\nThe user wants the weather.<channel|>"
        '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>'
    )
    parsed = tc.parse(text)
    assert parsed.reasoning == "The user wants the weather."
    assert [c.name for c in parsed.calls] == ["get_weather"] and parsed.content == ""
    empty = tc.parse("<|channel>thought\n<channel|>Hello")
    assert empty.content == "Hello" and empty.reasoning == ""


# Mistral's [THINK] … [/THINK] (Magistral, Ministral 3, v13 templates), as CanIToolCall's template renderings
# write it (mistral/v13think-content-before-call): reasoning, not content, like <think>
MISTRAL = (
    "[THINK]The user wants the weather in Paris. I should call get_weather.[/THINK]Let me check that for you."
    '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}'
)


def test_mistral_think_is_reasoning(impl, tc):
    p = tc.parse(MISTRAL)
    assert (p.content, p.reasoning) == (
        "Let me check that for you.",
        "The user wants the weather in Paris. I should call get_weather.",
    )
    assert [(c.name, c.arguments) for c in p.calls] == [("get_weather", '{"city": "Paris"}')]
    # a stream whose prompt opened [THINK] (reasoning_started): a lone [/THINK] ends the span
    started = tc.parse("plan[/THINK]Hi", reasoning_started=True)
    assert (started.content, started.reasoning) == ("Hi", "plan")
    # as markers go, only where it switches: a lone [/THINK] in content stays text
    assert tc.parse("a [/THINK] b").content == "a [/THINK] b"


@pytest.mark.parametrize("mod", IMPLS)
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_mistral_think_in_any_split(mod, data):
    cuts = sorted(data.draw(st.lists(st.integers(0, len(MISTRAL)), max_size=10)))
    assert feed_in_pieces(mod, MISTRAL, cuts) == feed_in_pieces(mod, MISTRAL, [])


def test_an_empty_kimi_section_leaves_no_markup(impl, tc):
    # Kimi K2's section tokens are special tokens: markup wherever they stand (vLLM's
    # kimi_k2 tests: an empty section after the reasoning)
    text = "Reasoning. <|tool_calls_section_begin|><|tool_calls_section_end|>"
    assert (tc.parse(text).content, tc.parse(text).calls) == ("Reasoning.", [])
    assert tc.parse("a <|tool_call_section_end|> b").content == "a  b"
