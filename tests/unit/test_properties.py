"""Property tests: the two implementations agree, and any splitting of a stream equals the whole text."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from textcalls import _scan_py
from textcalls.markers import (
    BLOCKS,
    DEEPSEEK_CLOSE,
    DEEPSEEK_OPEN,
    DEEPSEEK_SECTION_CLOSE,
    DEEPSEEK_SECTION_OPEN,
    DEEPSEEK_SEP,
    HERMES_CLOSE,
    HERMES_OPEN,
    MARKERS,
)

from ..conftest import IMPLS

PIECES = [
    HERMES_OPEN,
    HERMES_OPEN + ">",
    HERMES_OPEN + " ",
    HERMES_OPEN + "|",
    HERMES_OPEN + ' id="c">',
    HERMES_CLOSE,
    "<",
    ">",
    "</tool",
    "<tool_",
    "<tool_calls>",
    "<tool_callable>",
    DEEPSEEK_OPEN,
    DEEPSEEK_CLOSE,
    DEEPSEEK_SECTION_OPEN,
    DEEPSEEK_SECTION_CLOSE,
    DEEPSEEK_SEP,
    "<｜tool",
    "<｜tool▁call▁",
    "<｜tool▁calls▁",
    '{"name":"x","arguments":{}}',
    '{"name": "f", "arguments": {"a": "</tool_call>"}}',
    '{"name":"g"',
    '"',
    "\\",
    "{",
    "}",
    "[",
    "]",
    " ",
    "\n",
    "ab",
    "é",
    "€",
    "😀",
    'get<｜tool▁sep｜>{"a":1}',
    'function<｜tool▁sep｜>f\n```json\n{"b":2}\n```',
]
# every literal of the table, and a prefix of each: all dialects take part
for _block in BLOCKS:
    PIECES += [_block.opener, _block.opener[:-1], _block.closer or "", (_block.closer or "")[:-1]]
for _marker in MARKERS:
    PIECES += [_marker.literal, _marker.literal[:-1]]
PIECES += [
    "<function=f>\n<parameter=a>\n1\n</parameter>\n</function>",
    "f\n<arg_key>k</arg_key><arg_value>v</arg_value>",
    '[{"name":"f","arguments":{"a":[1]}}]',
    "[f(a='x'), g()]",
    'functions.f:0<|tool_call_argument_begin|>{"a":1}',
    '<invoke name="f"><parameter name="p">v</parameter></invoke>',
    'call:f{a:<|"|>x<|"|>}',
    # HTML and comparisons: a '<' that starts no literal (the Cython scanner's one-pass screen lets them by)
    '<div class="row">',
    "</p>",
    "<br/>",
    "a<b",
    "x <= y",
    "<code>vec<int></code>",
    "<tox",
    "<｜x",
    "<|x",
]
texts = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=6)), max_size=24).map("".join)
max_blocks = st.sampled_from([1, 3, 8, 20, 64, 1 << 20])
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def cuts_of(text):
    return st.lists(st.integers(0, len(text)), max_size=12).map(sorted)


def run(mod, text, cuts, max_block):
    s = mod.StreamScrubber(max_block=max_block)
    outs, prev = [], 0
    for c in cuts + [len(text)]:
        outs.append(s.feed(text[prev:c]))
        prev = c
    outs.append(s.flush())
    return outs, [(c.name, c.arguments) for c in s.calls], s.removed


C_IMPL = IMPLS[0].values[0] if IMPLS[0].id == "c" else None


@pytest.mark.skipif(C_IMPL is None, reason="the Cython extension is disabled")
@SETTINGS
@given(data=st.data(), text=texts, max_block=max_blocks)
def test_cython_and_twin_agree(data, text, max_block):
    cuts = data.draw(cuts_of(text))
    assert run(C_IMPL, text, cuts, max_block) == run(_scan_py, text, cuts, max_block)
    assert C_IMPL.hold_from(text) == _scan_py.hold_from(text)
    for form in (text, text.encode(), json.dumps(text).encode(), json.dumps(text, ensure_ascii=False)):
        assert C_IMPL.may_contain_markup(form) == _scan_py.may_contain_markup(form)


@pytest.mark.parametrize("mod", IMPLS)
@SETTINGS
@given(data=st.data(), text=texts, max_block=max_blocks)
def test_any_split_equals_the_whole_text(mod, data, text, max_block):
    cuts = data.draw(cuts_of(text))
    whole_outs, whole_calls, whole_removed = run(mod, text, [], max_block)
    outs, got_calls, removed = run(mod, text, cuts, max_block)
    assert "".join(outs) == "".join(whole_outs)  # no byte lost, none leaked that the whole text hides
    assert (got_calls, removed) == (whole_calls, whole_removed)


@pytest.mark.parametrize("mod", IMPLS)
@SETTINGS
@given(text=texts, max_block=max_blocks)
def test_one_character_deltas_equal_parse(mod, text, max_block):
    from textcalls import _scan, parse

    saved = _scan.use(mod)
    try:
        parsed = parse(text, max_block=max_block)
    finally:
        _scan.use(saved)
    outs, got_calls, removed = run(mod, text, list(range(1, len(text))), max_block)
    assert "".join(outs).strip() == parsed.content
    assert got_calls == [(c.name, c.arguments) for c in parsed.calls] and removed == parsed.removed


@pytest.mark.parametrize("mod", IMPLS)
@SETTINGS
@given(data=st.data(), text=st.text(alphabet=st.characters(blacklist_characters="<[`")))
def test_text_without_marker_first_characters_passes_through_unchanged(mod, data, text):
    cuts = data.draw(cuts_of(text))
    outs, got_calls, removed = run(mod, text, cuts, 1 << 20)
    pieces = [text[a:b] for a, b in zip([0] + cuts, cuts + [len(text)], strict=False)]
    assert outs == pieces + [""] and got_calls == [] and removed == 0


@SETTINGS
@given(text=texts)
def test_the_pre_filter_never_misses_markup(text):
    # may_contain_markup is a screen before decoding a body: whenever parsing would change the
    # text, it must say True for the text and for every JSON encoding of it.
    from textcalls import may_contain_markup, parse

    if parse(text).removed == 0:
        return
    encodings = [
        text,
        text.encode(),
        json.dumps(text).encode(),
        json.dumps(text, ensure_ascii=False).encode(),
        json.dumps(text).replace("<", "\\u003c").replace(">", "\\u003e").encode(),  # as Go writes it
        json.dumps(text).replace("/", "\\/").encode(),  # as PHP writes it
    ]
    assert all(may_contain_markup(form) for form in encodings)
