"""``trim_blanks=True``: the blanks that touch removed markup at the content's edges are the markup's, and a
stream gives exactly what ``parse`` gives, whatever the splitting (``docs/options.md``).

The rule, as written in ``parse``'s docstring: a run of blanks (spaces, tabs, line breaks) is dropped when it
lies between the content's start and its first visible character and a removal (a block, a marker, a
reasoning span) came before that character, or between its last visible character and the end and a removal
came after it; every other run stays as the model wrote it (between two visible characters, whatever was
removed between them, and at an edge that no removal touches). In a reasoning span the blanks at its start
and before its closer are dropped. A run longer than ``max_block`` always stays (nothing holds more).
Every expected value below was worked out from that rule by hand.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from textcalls.stream import recover_stream

from ..streams import ch, feed_in_pieces

CALL = '<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'
DSML = (
    '<｜DSML｜function_calls>\n<｜DSML｜invoke name="f">\n'
    '<｜DSML｜parameter name="a" string="false">1</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>'
)
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]

CASES = [
    # (text, keywords, content, reasoning)
    ("Checking.\n\n" + CALL, {}, "Checking.", ""),  # the blanks before the block: after the last visible character
    ("Checking.\n\n" + DSML, {"tools": TOOLS}, "Checking.", ""),
    ("\n\n" + CALL + "\n\nDone.\n", {}, "Done.\n", ""),  # before the first visible one; the end untouched
    ("A\n" + CALL + "\nB", {}, "A\n\nB", ""),  # between two visible characters: as written
    (CALL + "\n" + CALL + "\n", {}, "", ""),  # only blanks between and after blocks
    ("  hi  ", {}, "  hi  ", ""),  # nothing removed: as written
    ("  hi  " + CALL, {}, "  hi", ""),  # the start untouched, the end touched
    ("<think>\n plan \n</think>\n\nHello", {}, "Hello", "plan"),
    ("<think>\n plan \n", {}, "", "plan \n"),  # a span never closed keeps the blanks that end it
    ("<think>\n a \n\n b \n</think>\n", {}, "", "a \n\n b"),  # inside a span: as written
]


@pytest.mark.parametrize(("text", "keywords", "content", "reasoning"), CASES)
def test_the_blanks_that_touch_the_markup_are_its(impl, tc, text, keywords, content, reasoning):
    parsed = tc.parse(text, trim_blanks=True, **keywords)
    assert (parsed.content, parsed.reasoning) == (content, reasoning)
    assert len(parsed.calls) == text.count("<tool_call>") + text.count("function_calls>\n")
    # the content is the default's, its own blanks aside (the default strips both ends)
    assert parsed.content.strip() == tc.parse(text, **keywords).content
    for cuts in ([], list(range(1, len(text))), [3, 7, 8, 20]):
        got = feed_in_pieces(impl, text, [c for c in cuts if c < len(text)], trim_blanks=True, **keywords)
        assert got[:2] == (content, reasoning), cuts


def test_without_the_option_parse_strips_and_a_stream_keeps_every_blank(impl, tc):
    text = "Checking.\n\n" + CALL + "\n"
    assert tc.parse(text).content == "Checking."
    assert feed_in_pieces(impl, text, [10, 11])[0] == "Checking.\n\n\n"


def test_a_blank_at_a_deltas_end_is_held_until_the_next_visible_character(impl):
    s = impl.StreamScrubber(trim_blanks=True)
    assert [s.feed(d) for d in ("Hi", " \n", "there", "\n")] == ["Hi", "", " \nthere", ""]
    assert s.flush() == "\n"  # no removal after it: the model's


def test_a_run_of_blanks_longer_than_max_block_stays(impl, tc):
    marker = "<think>r</think>"  # a span is removed from the content: the run before it touches a removal
    assert tc.parse("Hi" + " " * 5 + marker, max_block=8, trim_blanks=True).content == "Hi"
    assert tc.parse("Hi" + " " * 9 + marker, max_block=8, trim_blanks=True).content == "Hi" + " " * 9
    for cuts in ([], [3], list(range(1, 12))):
        got = feed_in_pieces(impl, "Hi" + " " * 9 + marker, cuts, max_block=8, trim_blanks=True)
        assert got[0] == "Hi" + " " * 9


def test_the_blanks_before_a_call_that_ends_an_unclosed_span_go_with_it(impl, tc):
    """A call ends a span never closed (it is a call): the blank between the reasoning and it is the markup's."""
    text = "Need to look.\n" + CALL
    parsed = tc.parse(text, reasoning_started=True, trim_blanks=True)
    assert (parsed.reasoning, parsed.content, len(parsed.calls)) == ("Need to look.", "", 1)
    # the call ends a span that closes, and the content calls nothing ("auto"): a call, the same
    parsed = tc.parse("Maybe.\n" + CALL + "\n</think>\nNo call.", reasoning_started=True, trim_blanks=True)
    assert (parsed.reasoning, parsed.content, len(parsed.calls)) == ("Maybe.", "No call.", 1)
    # reasoning after it in the span: a rehearsal, whose text (the blank before it too) is the span's
    parsed = tc.parse("Maybe.\n" + CALL + "\nNo.\n</think>\nDone.", reasoning_started=True, trim_blanks=True)
    assert (parsed.reasoning, parsed.content, len(parsed.calls)) == ("Maybe.\n" + CALL + "\nNo.", "Done.", 0)


def test_a_chunk_stream_gives_the_same_content_in_every_split(impl, tc):
    text = "Let me check.\n\n" + CALL + "\n\nDone "
    want = tc.parse(text, trim_blanks=True).content
    assert want == "Let me check.\n\n\n\nDone "  # visible characters on both sides: as written
    for size in (1, 2, 3, 7, len(text)):
        pieces = [text[i : i + size] for i in range(0, len(text), size)]
        chunks = [ch(role="assistant"), *(ch(p) for p in pieces), ch(finish="stop")]
        out = list(recover_stream(iter(chunks), native=False, has_tools=True, trim_blanks=True))
        content = "".join(c["choices"][0]["delta"].get("content") or "" for c in out if c.get("choices"))
        calls = [t for c in out if c.get("choices") for t in c["choices"][0]["delta"].get("tool_calls") or ()]
        assert content == want and len(calls) == 1, size
        assert json.loads(calls[0]["function"]["arguments"]) == {"a": 1}


PIECES = [CALL, "<think>", "</think>", "<tool_", " ", "\n", "\n\n", "\t", "a", "b c", "é", "<", "`"]
texts = st.lists(st.sampled_from(PIECES), max_size=16).map("".join)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(data=st.data(), text=texts, max_block=st.sampled_from([4, 40, 1 << 20]), started=st.booleans())
def test_any_split_gives_what_parse_gives(impl, tc, data, text, max_block, started):
    keywords = {"max_block": max_block, "reasoning_started": started, "trim_blanks": True}
    parsed = tc.parse(text, **keywords)
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=10).map(sorted))
    assert feed_in_pieces(impl, text, cuts, **keywords)[:2] == (parsed.content, parsed.reasoning)
    # the option changes blanks only: the same calls, and the content stripped is the default's
    default = tc.parse(text, max_block=max_block, reasoning_started=started)
    assert [(c.name, c.arguments) for c in parsed.calls] == [(c.name, c.arguments) for c in default.calls]
    assert parsed.content.strip() == default.content


def test_a_long_run_that_ends_a_span_stays_and_the_spans_first_blanks_still_go(impl, tc):
    text = "<think>\nt" + " " * 10  # a span never closed: its last run stays anyway; longer than max_block: shown
    assert tc.parse(text, max_block=8, trim_blanks=True).reasoning == "t" + " " * 10
    for cuts in ([], [8], list(range(1, len(text)))):
        assert feed_in_pieces(impl, text, cuts, max_block=8, trim_blanks=True)[1] == "t" + " " * 10


def test_a_whole_response_loses_the_same_blanks_as_its_stream(impl):
    """With ``reasoning_started`` a text of blanks only is the span's first blanks: nothing to show, whole or
    streamed (without the option the response is the very object given: nothing was removed)."""
    from textcalls.openai import recover_response

    response = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "\n"}, "finish_reason": "stop"}]}
    out = recover_response(response, native=False, has_tools=True, reasoning_started=True, trim_blanks=True)
    assert out["choices"][0]["message"]["content"] is None
    assert recover_response(response, native=False, has_tools=True, reasoning_started=True) is response
    chunks = [ch(role="assistant"), ch("\n"), ch(finish="stop")]
    sent = list(recover_stream(iter(chunks), native=False, has_tools=True, reasoning_started=True, trim_blanks=True))
    assert not "".join(c["choices"][0]["delta"].get("content") or "" for c in sent if c.get("choices"))
