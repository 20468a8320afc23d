"""StreamScrubber: emission, hold-back, calls and limits, on both implementations."""

import itertools
import json

import pytest

DS_OPEN, DS_CLOSE = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>"
DS_SEC_OPEN, DS_SEC_CLOSE, DS_SEP = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁sep｜>"


def run(impl, deltas, **kw):
    s = impl.StreamScrubber(**kw)
    outs = [s.feed(d) for d in deltas]
    outs.append(s.flush())
    return outs, s


@pytest.mark.parametrize(
    ("deltas", "expected"),
    [
        (["answer: ", "<tool_", 'call>{"name":"x",', '"arguments":{}}</tool', "_call> end"], "answer:  end"),
        (["r ", "<｜tool▁call▁be", 'gin｜>{"name":"x","arguments":{}}<｜tool▁call▁end｜>', " s"], "r  s"),
        (["see <tool_calls> below"], "see <tool_calls> below"),
    ],
)
def test_reference_fragments(impl, deltas, expected):
    outs, _s = run(impl, deltas)
    assert "".join(outs) == expected


def test_reference_hold_then_release(impl):
    s = impl.StreamScrubber()
    assert s.feed("value <tool") == "value "
    assert s.feed('_call>{"name":"x","arguments":{}}</tool_call>!') == "!"
    assert s.flush() == ""
    assert [c.name for c in s.calls] == ["x"]


def test_reference_unterminated_opener_is_released_at_flush(impl):
    s = impl.StreamScrubber()
    assert s.feed("  a <tool_call ") == "  a "
    assert s.flush() == "<tool_call "
    assert s.calls == []


def test_text_without_markup_is_returned_as_is(impl):
    s = impl.StreamScrubber()
    delta = "plain prose, no angle brackets"
    assert s.feed(delta) is delta
    assert s.feed("") == ""
    assert s.flush() == ""


def test_call_is_available_as_soon_as_its_block_closes(impl):
    s = impl.StreamScrubber()
    s.feed('<tool_call>{"name":"a"}')
    assert s.calls == []
    assert s.feed("</tool_call> and more") == " and more"
    assert [(c.name, c.arguments) for c in s.calls] == [("a", "{}")]
    assert s.removed == 1


def test_text_before_an_open_block_is_emitted_at_once(impl):
    s = impl.StreamScrubber()
    assert s.feed('Hello <tool_call>{"name":"a", "arguments": {"long":') == "Hello "
    assert s.feed(' "value"}}') == ""
    assert s.feed("</tool_call>") == ""


def test_partial_markers_are_held_at_every_boundary(impl):
    for marker in ("<tool_call>", DS_OPEN, DS_SEC_OPEN):
        for k in range(1, len(marker)):
            s = impl.StreamScrubber()
            assert s.feed("x" + marker[:k]) == "x"


@pytest.mark.parametrize("literal", ["<|return|>", "<|channel|>final<|message|>"])
def test_a_marker_fed_in_pieces_is_removed_by_the_delta_that_ends_it(impl, literal):
    # markup wherever it stands (always): held while the deltas go on with it, removed once it is whole
    for cuts in itertools.combinations(range(1, len(literal)), 2):
        pieces = [literal[a:b] for a, b in zip((0, *cuts), (*cuts, len(literal)), strict=True)]
        s = impl.StreamScrubber()
        assert s.feed("a " + pieces[0]) == "a "
        assert s.feed(pieces[1]) == ""
        assert (s.feed(pieces[2]), s.removed) == ("", 1)
        assert (s.feed(" b"), s.flush()) == (" b", "")
    for cut in range(1, len(literal) - 1):  # all but its last character: released at the end
        s = impl.StreamScrubber()
        assert [s.feed("a " + literal[:cut]), s.feed(literal[cut:-1]), s.flush()] == ["a ", "", literal[:-1]]
        assert s.removed == 0


def test_a_lone_angle_bracket_is_released_once_decided(impl):
    s = impl.StreamScrubber()
    assert s.feed("a <") == "a "
    assert s.feed("b") == "<b"
    assert s.feed("if x < y") == "if x < y"


def test_deepseek_section_in_deltas(impl):
    deltas = [
        "Sure.",
        "<｜tool▁calls",
        "▁begin｜>",
        "<｜tool▁call▁begin｜>get",
        DS_SEP,
        '{"city":',
        '"Paris"}',
        DS_CLOSE,
        "<｜tool▁calls▁e",
        "nd｜>",
        " Bye.",
    ]
    outs, s = run(impl, deltas)
    assert "".join(outs) == "Sure. Bye."
    assert [(c.name, json.loads(c.arguments)) for c in s.calls] == [("get", {"city": "Paris"})]
    assert s.removed == 3


SECTION = DS_SEC_OPEN + DS_OPEN + "get" + DS_SEP + '{"city": "Paris"}' + DS_CLOSE + DS_SEC_CLOSE


@pytest.mark.parametrize(
    ("text", "content", "calls"),
    [
        ("Sure." + SECTION + " Bye.", "Sure. Bye.", ["get"]),
        # the section marker waits for its opener, which never comes: both are text
        ("Sure." + DS_SEC_OPEN + " \n" + DS_OPEN[:9] + "x and more", None, []),
        ("Sure." + DS_SEC_OPEN + DS_OPEN[:-1], None, []),  # the stream ends inside the opener
    ],
)
def test_a_section_marker_and_its_opener_cut_anywhere(impl, tc, text, content, calls):
    # every two cuts from the marker's start to just past the opener: what the whole text gives
    content = text if content is None else content
    whole = tc.parse(text)
    assert (whole.content, [c.name for c in whole.calls]) == (content, calls)
    start = text.index(DS_SEC_OPEN)
    for a, b in itertools.combinations(range(start, min(len(text), start + len(DS_SEC_OPEN + DS_OPEN) + 4) + 1), 2):
        outs, s = run(impl, [text[:a], text[a:b], text[b:]])
        assert ("".join(outs).strip(), [c.name for c in s.calls]) == (content, calls), (a, b)


@pytest.mark.parametrize("between", [" x", "x", " ok "])
def test_text_after_a_block_makes_the_sections_end_marker_text(impl, between):
    # an after-marker is removed only right after a block of its dialect (whitespace between at most): text
    # in a delta of its own between them keeps it, however the text arrives
    deltas = [DS_SEC_OPEN + DS_OPEN + "get" + DS_SEP + '{"a": 1}' + DS_CLOSE, between, DS_SEC_CLOSE, " y"]
    outs, s = run(impl, deltas)
    assert "".join(outs) == between + DS_SEC_CLOSE + " y"
    assert [c.name for c in s.calls] == ["get"]
    assert s.removed == 2
    outs, s = run(impl, [deltas[0], " ", DS_SEC_CLOSE, " y"])
    assert "".join(outs) == "  y"
    assert s.removed == 3


@pytest.mark.parametrize("between", [" x", "x", " ok "])
def test_text_after_a_block_and_the_start_of_a_marker_in_one_delta(impl, between):
    # the text shown before the held start of an after-marker ends the block's wait for it, as text in a
    # delta of its own does
    block = DS_SEC_OPEN + DS_OPEN + "get" + DS_SEP + '{"a": 1}' + DS_CLOSE
    for cut in range(1, len(DS_SEC_CLOSE)):
        s = impl.StreamScrubber()
        assert s.feed(block) == ""
        assert s.feed(between + DS_SEC_CLOSE[:cut]) == between
        assert s.feed(DS_SEC_CLOSE[cut:]) + s.feed(" y") + s.flush() == DS_SEC_CLOSE + " y"
        assert s.removed == 2
    s = impl.StreamScrubber()
    assert s.feed(block) + s.feed("  " + DS_SEC_CLOSE[:3]) + s.feed(DS_SEC_CLOSE[3:] + " y") + s.flush() == "   y"
    assert s.removed == 3  # only whitespace between: the marker is the section's end


def test_markup_in_a_code_fence_is_shown_as_it_arrives(impl):
    s = impl.StreamScrubber()
    assert s.feed("```\n") == "```\n"
    assert s.feed("a <tool") == "a <tool"  # in a fence no literal can begin: nothing is held
    assert s.feed('_call>{"name": "x"}</tool_call>\n') == '_call>{"name": "x"}</tool_call>\n'
    assert s.feed("```\nb <tool") == "```\nb "  # the fence closed: held again
    assert s.flush() == "<tool"
    assert s.calls == []


def test_feed_after_flush_is_an_error(impl):
    s = impl.StreamScrubber()
    s.feed("a")
    assert s.flush() == ""
    assert s.flush() == ""  # flushing twice is harmless
    with pytest.raises(ValueError, match="after flush"):
        s.feed("b")


@pytest.mark.parametrize(
    "call", [lambda s: s.feed("a"), lambda s: s.flush(), lambda s: s.take_reasoning(), lambda s: s.take_events()]
)
def test_a_scrubber_whose_init_was_not_run_is_an_error(impl, call):
    s = impl.StreamScrubber.__new__(impl.StreamScrubber)
    with pytest.raises(TypeError, match="__init__ was not run"):
        call(s)


@pytest.mark.parametrize("bad", [None, b"x", 1, ["x"]])
def test_feed_rejects_non_str(impl, bad):
    with pytest.raises(TypeError, match="feed"):
        impl.StreamScrubber().feed(bad)


def test_str_subclass_delta(impl):
    class S(str):
        pass

    s = impl.StreamScrubber()
    assert s.feed(S("a <tool_call>")) == "a "
    assert s.feed(S('{"name":"f"}</tool_call>')) == ""
    assert [c.name for c in s.calls] == ["f"]


def test_outside_a_block_at_most_a_partial_opener_is_held(impl):
    # A candidate opener is held only while its '>' could still come: at most 256 characters later.
    s = impl.StreamScrubber()
    emitted = s.feed("<tool_call ")
    for _ in range(300):
        emitted += s.feed("a")
    assert emitted == "<tool_call " + "a" * 300  # no '>' within 256 characters: prose


def test_block_over_max_block_is_released_verbatim(impl):
    s = impl.StreamScrubber(max_block=64)
    text = '<tool_call>{"s": "' + "z" * 200 + '"}</tool_call>'
    out = "".join(s.feed(ch) for ch in text) + s.flush()
    assert out == text and s.calls == [] and s.removed == 0


def test_a_block_over_max_block_inside_a_string_is_released_while_streaming(impl):
    # the cap bounds what a stream holds: past it (and the closer's length) the text goes out before the end
    s = impl.StreamScrubber(max_block=64)
    head = '<tool_call>{"name": "f", "arguments": {"a": "'
    out = s.feed(head) + "".join(s.feed("z") for _ in range(300))
    assert len(out) >= len(head) + 300 - 64 - len("</tool_call>")
    assert out + s.flush() == head + "z" * 300 and s.calls == []


def test_a_block_past_its_cap_is_decided_though_a_delta_ends_in_its_closers_start(impl):
    # max_block=1: the body "[]" passes the cap, so the block waits only for the text a raw closer could span
    # (11 characters past the cap), not for the closer that a delta's end may be starting
    s = impl.StreamScrubber(max_block=1)
    assert s.feed("<tool_call>[]</t") == ""
    assert s.feed("ool_call") == "<tool_call>[]"  # released: no closer within the cap and its span
    assert s.feed(">") + s.flush() == "</tool_call>"  # an after-marker with no block before it: text
    assert (s.calls, s.removed) == ([], 0)


def test_an_openers_start_in_a_block_is_not_taken_for_its_closers(impl, tc):
    # in a block, "<tool_c" is held as the start of its own opener; "cal" goes on as the block's closer
    # "</tool_call>" would at that length (and "l>" would then end it), not as the held text does: the split
    # gives what the whole text does
    first = '<tool_call>{"name": "a", "arguments": {}} '
    for deltas in (
        [first + "<tool_c", "cal", "l> more", "</tool_call> x"],
        [first + "<tool_c", "all", '>{"name": "b"}</tool_call>'],
    ):
        outs, s = run(impl, deltas)
        whole = tc.parse("".join(deltas))
        assert ("".join(outs).strip(), [(c.name, c.arguments) for c in s.calls]) == (
            whole.content,
            [(c.name, c.arguments) for c in whole.calls],
        )
    assert "".join(outs) == first  # meeting its own opener again made the first block text
    assert [c.name for c in s.calls] == ["b"]


def test_an_escape_at_the_end_of_a_delta_inside_a_string(impl):
    # "\" ends one delta, the escaped character comes alone, then the quote that closes the string:
    # the block ends at its closer, as the text after it shows at once
    s = impl.StreamScrubber()
    deltas = ['<tool_call>{"name": "f", "arguments": {"a": "x\\', "n", "y", '"}}</tool_call> after']
    assert [s.feed(d) for d in deltas] == ["", "", "", " after"]
    assert [(c.name, c.arguments) for c in s.calls] == [("f", '{"a": "x\\ny"}')]


def test_one_character_deltas_over_a_large_block(impl):
    # 200 kB inside one block, fed a character at a time: must stay linear (the suite would hang otherwise).
    value = "v" * 200_000
    text = 'pre <tool_call>{"name":"big","arguments":{"v":"' + value + '"}}</tool_call> post'
    s = impl.StreamScrubber()
    out = "".join(s.feed(ch) for ch in text) + s.flush()
    assert out == "pre  post"
    assert [c.name for c in s.calls] == ["big"] and json.loads(s.calls[0].arguments) == {"v": value}


def test_adversarial_unclosed_strings_stay_linear(impl):
    # Openers whose bodies open JSON strings that never close, with no closer anywhere.
    text = '<tool_call>{"' + '<tool_call>{\\"' * 20_000
    s = impl.StreamScrubber(max_block=1 << 20)
    out = s.feed(text) + s.flush()
    assert out == text and s.calls == []


def test_adversarial_stray_quotes_with_closers_stay_linear(impl):
    # Each block's string-aware scan would run to the end: after the first fallback, blocks in the
    # region already scanned end at their raw close.
    unit = '<tool_call>{\\"x</tool_call>'
    text = '<tool_call>{"x</tool_call>' + unit * 20_000
    s = impl.StreamScrubber()
    out = s.feed(text) + s.flush()
    assert out == "" and s.removed == 20_001 and s.calls == []


def test_adversarial_blocks_hitting_the_cap_stay_linear(impl):
    unit = '<tool_call>{"' + "w" * 50
    text = unit * 4_000
    s = impl.StreamScrubber(max_block=1_000)
    out = "".join(s.feed(text[i : i + 7]) for i in range(0, len(text), 7)) + s.flush()
    assert out == text and s.calls == []


def test_adversarial_unclosed_weak_openers_stay_linear(impl):
    # Openers that do not interrupt other blocks (<tool_calls>, <json>, <function …>) never closed:
    # meeting its own opener again ends each one, so the text is scanned a bounded number of times.
    text = "<tool_calls> <json> <function=f> <tools> x " * 5_000
    s = impl.StreamScrubber()
    out = "".join(s.feed(text[i : i + 5]) for i in range(0, len(text), 5)) + s.flush()
    assert out == text and s.calls == []
