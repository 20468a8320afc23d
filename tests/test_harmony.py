"""gpt-oss Harmony written as text: calls, the analysis channel as reasoning, the final channel as content."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .conftest import IMPLS
from .streams import feed_in_pieces

ANALYSIS = "<|channel|>analysis<|message|>The user wants the weather; call the tool.<|end|>"
CALL = ("<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
        '{"location": "Paris"}<|call|>')
FINAL = "<|start|>assistant<|channel|>final<|message|>It is sunny in Paris.<|return|>"


def calls(parsed):
    return [(c.name, json.loads(c.arguments)) for c in parsed.calls]


@pytest.mark.parametrize(("text", "content", "reasoning", "expected"), [
    (ANALYSIS + CALL, "", "The user wants the weather; call the tool.", [("get_weather", {"location": "Paris"})]),
    (ANALYSIS + FINAL, "It is sunny in Paris.", "The user wants the weather; call the tool.", []),
    ('<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"location": "Oslo"}<|call|>',
     "", "", [("get_weather", {"location": "Oslo"})]),
    ('<|channel|>commentary to=functions.lookup<|message|>{"q": 1}<|call|>', "", "", [("lookup", {"q": 1})]),
    ("<|channel|>commentary<|message|>Let me check.<|end|>" + CALL, "Let me check.", "",
     [("get_weather", {"location": "Paris"})]),
    ("Use <|channel|>commentary to send a preamble.", "Use <|channel|>commentary to send a preamble.", "", []),
    ("<|channel|>commentary to=functions.f <|constrain|>json<|message|>[1]<|call|>", "", "", []),  # not an object
])
def test_harmony(impl, tc, text, content, reasoning, expected):
    parsed = tc.parse(text)
    assert parsed.content == content
    assert parsed.reasoning == reasoning
    assert calls(parsed) == expected


def test_harmony_can_be_turned_off(impl, tc):
    formats = [n for n, on in tc.DIALECTS.items() if on and n != "harmony"]
    assert tc.parse(ANALYSIS + CALL, formats=formats).calls == []


PIECES = st.sampled_from([ANALYSIS, CALL, FINAL, "<|end|>", "<|start|>assistant", " text ", "<|channel|>",
                          "<|message|>", "<|call|>", "to=functions.f "])


@pytest.mark.parametrize("mod", IMPLS)
@settings(max_examples=150, deadline=None)
@given(data=st.data(), text=st.lists(PIECES, max_size=6).map("".join))
def test_any_split_of_harmony_text_equals_the_whole(mod, data, text):
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=12).map(sorted))
    assert feed_in_pieces(mod, text, cuts) == feed_in_pieces(mod, text, [])
