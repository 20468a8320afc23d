"""A block body's deltas held unlexed (the extension's ``StreamScrubber._defer``): what ``feed`` gives for each delta,
the calls and the end of the stream are the twin's (which lexes every delta) for bodies fed in any split, bodies
that change their characters' kind, bodies at and past ``max_block``, bodies the stream ends inside, and bodies
a closer or an opener ends in the middle of a delta."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from textcalls import _scan_py

if os.environ.get("TEXTCALLS_NO_EXTENSIONS"):
    pytest.skip("TEXTCALLS_NO_EXTENSIONS is set: no extension to compare", allow_module_level=True)
from textcalls import _scan_c  # (required otherwise, as in conftest)

BODIES = [
    '<tool_call>{"name": "f", "arguments": {"v": "plain text, no markup", "n": [1, 2], "o": {"k": null}}}</tool_call>',
    '<tool_call>\n{"name": "f", "arguments": {"v": "é and 日本 and 😀"}}\n</tool_call> after',
    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n"
    '{"city": "Oslo", "list": [1, 2]}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>tail',
    '<tool_call>{"name": "f", "arguments": {"v": "a </tool_call> in a string"}}</tool_call>',
    '<tool_call>{"name": "f", "arguments": {"v": "never closed',
    '<tool_call>{"name": "f", "arguments": {"v": 1}} <tool_call>{"name": "g", "arguments": {}}</tool_call>',
    "<tool_call>\n<function=f>\n<parameter=v>\nvalue with </tool_call> inside\n</parameter>\n</function>\n</tool_call>",
    '<tool_call>{"name": "f", "arguments": {"v": "x"}}',
    '<think>reasoning <tool_call>{"name": "f", "arguments": {}}</tool_call> more</think>text',
    '<tool_call>  {"name": "f", "arguments": {"v": "\\" quoted \\\\ \\u003c"}}</tool_call>',
]
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _run(module, pieces, **options):
    scrubber = module.StreamScrubber(**options)
    shown = [scrubber.feed(p) for p in pieces]
    shown.append(scrubber.flush())
    return shown, [(c.name, c.arguments) for c in scrubber.calls], scrubber.removed


@PROPERTY
@given(
    st.sampled_from(BODIES),
    st.lists(st.integers(1, 12), min_size=1, max_size=40),
    st.sampled_from([{}, {"max_block": 20}, {"max_block": 48}, {"max_block": 64}, {"formats": ["hermes"]}]),
)
def test_deferred_bodies_give_what_the_twin_gives(text, sizes, options):
    pieces, i = [], 0
    while i < len(text):
        size = sizes[len(pieces) % len(sizes)]
        pieces.append(text[i : i + size])
        i += size
    assert _run(_scan_c, pieces, **options) == _run(_scan_py, pieces, **options)


@pytest.mark.parametrize("size", [1, 3, 7, 8, 9, 64])
def test_long_bodies_in_even_deltas(size):
    body = '{"name": "f", "arguments": {"v": "' + "abc def, ghi: 12 " * 300 + '"}}'
    for text in (
        "<tool_call>" + body + "</tool_call>",
        "<tool_call>" + body,
        "x <tool_call>" + body + "</tool_call> y",
    ):
        pieces = [text[i : i + size] for i in range(0, len(text), size)]
        for options in ({}, {"max_block": len(body) - 1}, {"max_block": len(body)}, {"max_block": len(body) + 1}):
            assert _run(_scan_c, pieces, **options) == _run(_scan_py, pieces, **options)
