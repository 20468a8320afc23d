"""Markdown code fences in content: markup inside them is text, on both implementations."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ..conftest import IMPLS
from ..streams import feed_in_pieces

CALL = '<tool_call>{"name": "f", "arguments": {}}</tool_call>'


@pytest.mark.parametrize(
    ("text", "content", "names"),
    [
        (f"Write this:\n```\n{CALL}\n```\nDone.", f"Write this:\n```\n{CALL}\n```\nDone.", []),
        (f"```xml\n{CALL}\n```", f"```xml\n{CALL}\n```", []),
        (f"   ```\n{CALL}\n   ```", f"```\n{CALL}\n   ```", []),  # up to 3 spaces of indent
        (f"    ```\n{CALL}", "```", ["f"]),  # 4 spaces: not a fence
        (f"x ``` {CALL}", "x ```", ["f"]),  # backticks inside a line: not a fence
        (f"``not a fence``\n{CALL}", "``not a fence``", ["f"]),
        (f"```py\nprint(1)\n```\n{CALL}", "```py\nprint(1)\n```", ["f"]),  # after the fence closes
        (f"```\nunclosed\n{CALL}", f"```\nunclosed\n{CALL}", []),  # a fence never closed runs to the end
        (f"{CALL}```\n{CALL}", "```", ["f", "f"]),  # a removed block is not a line start
    ],
)
def test_fenced_markup_is_text(impl, tc, text, content, names):
    parsed = tc.parse(text)
    assert parsed.content == content
    assert [c.name for c in parsed.calls] == names


def test_code_fences_can_be_turned_off(impl, tc):
    text = f"```\n{CALL}\n```"
    assert [c.name for c in tc.parse(text, code_fences=False).calls] == ["f"]
    with pytest.raises(TypeError, match="code_fences"):
        tc.parse(text, code_fences="yes")


def test_fences_do_not_apply_inside_reasoning(impl, tc):
    parsed = tc.parse(f"<think>```\nplan</think>{CALL}")
    assert [c.name for c in parsed.calls] == ["f"] and parsed.reasoning == "```\nplan"


def test_a_backtick_run_at_a_line_start_is_held_until_decided(impl):
    s = impl.StreamScrubber()
    assert s.feed("Code:\n``") == "Code:\n"
    assert s.feed("`\n" + CALL) == "```\n" + CALL
    assert s.calls == []


TEXTS = st.lists(
    st.sampled_from(["```", "`", "``", "\n", "   ", "    ", "x", CALL, "<tool_", "call>", "py\n"]), max_size=12
).map("".join)


@pytest.mark.parametrize("mod", IMPLS)
@settings(max_examples=200, deadline=None)
@given(data=st.data(), text=TEXTS)
def test_any_split_gives_the_same_fenced_result(mod, data, text):
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=10).map(sorted))
    assert feed_in_pieces(mod, text, cuts) == feed_in_pieces(mod, text, [])
