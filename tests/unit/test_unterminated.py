"""A block the message ends inside (servers strip special-token closers; generation stops at EOS right
after the arguments): a call when its body is complete but for its closer and the request's tools name
it, or without tools for Harmony and Kimi, whose closers are stripped special tokens. Both
implementations, whole and in any split."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from textcalls import parse
from textcalls.stream import recover_stream

from ..gateway_support.sse_client import assemble, chunk
from ..streams import feed_in_pieces

WEATHER = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
PARIS = [("get_weather", {"city": "Paris"})]

# (text, tools, visible content, calls) — decided by the rule above
CASES = [
    ('Checking. <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}', WEATHER, "Checking.", PARIS),
    ('<tool_call>[{"name": "get_weather", "arguments": {"city": "Paris"}}', WEATHER, "", PARIS),  # one "]" missing
    ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n', WEATHER, "", PARIS),
    ("<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n", WEATHER, "", PARIS),  # Qwen3-Coder
    (
        '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n',
        WEATHER,
        "",
        PARIS,
    ),
    (
        'Hi <tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call> <tool_call>'
        '{"name": "get_weather", "arguments": {"city": "Paris"}}',
        WEATHER,
        "Hi",
        [("get_weather", {"city": "Oslo"}), *PARIS],
    ),
    ('x <｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}', WEATHER, "x", PARIS),
    # without tools: Harmony and Kimi, whose closers are special tokens servers strip
    ('<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}', None, "", PARIS),
    (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
        '{"city": "Paris"}',
        None,
        "",
        PARIS,
    ),
    # stays text: no tools (the seed's rule for <tool_call> and DeepSeek) ...
    (
        'text <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}',
        None,
        'text <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}',
        [],
    ),
    (
        'x <｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}',
        None,
        'x <｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}',
        [],
    ),
    # ... a tool that was not offered ...
    (
        'text <tool_call>{"name": "rm", "arguments": {"path": "/"}}',
        WEATHER,
        'text <tool_call>{"name": "rm", "arguments": {"path": "/"}}',
        [],
    ),
    # ... a body cut in the middle of a value, or missing more than its last bracket: never invented
    (
        'text <tool_call>{"name": "get_weather", "arguments": {"city": "Par',
        WEATHER,
        'text <tool_call>{"name": "get_weather", "arguments": {"city": "Par',
        [],
    ),
    (
        'text <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"',
        WEATHER,
        'text <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"',
        [],
    ),
    (
        '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Pa',
        None,
        '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Pa',
        [],
    ),
    # ... or a text that ends inside an XML value: "Paris" may be the start of "Paris, Texas" (issue 26)
    (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n",
        WEATHER,
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis",  # parse strips the content
        [],
    ),
    (
        '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris',
        WEATHER,
        '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris',
        [],
    ),
]


def _calls(parsed):
    return [(c.name, json.loads(c.arguments)) for c in parsed.calls]


@pytest.mark.parametrize(("text", "tools", "content", "calls"), CASES)
def test_a_block_the_message_ends_inside(impl, text, tools, content, calls):
    parsed = parse(text, tools=tools)
    assert (parsed.content, _calls(parsed)) == (content, calls)


# The same texts cut by max_tokens (parse(..., truncated=True)): the block the text ends inside was never
# finished, so it gives no call and its markup goes, tools or not; finished blocks before it stay calls.
# (text, tools, visible content, calls), decided by reading
CUT = [
    ('Checking. <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}', WEATHER, "Checking.", [], 1),
    ("<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n", WEATHER, "", [], 1),
    ("<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n", WEATHER, "", [], 1),
    (
        'Hi <tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call> <tool_call>'
        '{"name": "get_weather", "arguments": {"city": "Paris"}}',
        WEATHER,
        "Hi",
        [("get_weather", {"city": "Oslo"})],
        1,
    ),
    ('<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}', None, "", [], 1),
    ('text <tool_call>{"name": "get_weather", "arguments": {"city": "Par', WEATHER, "text", [], 1),
    ('text <tool_call>{"name": "get_weather", "arguments": {"city": "Par', None, "text", [], 1),
    ('x <｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}', None, "x", [], 1),
    # a text with no block open is what it is
    (
        'Hi <tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call> and',
        WEATHER,
        "Hi  and",
        [("get_weather", {"city": "Oslo"})],
        0,
    ),
    ("I was about to say", None, "I was about to say", [], 0),
    # a block of several XML calls keeps those that ended with their own closing tag before the cut
    (
        '<｜DSML｜ calls>\n<｜DSML｜ invoke name="get_weather">\n<｜DSML｜ parameter name="city" string="true">Oslo'
        '</｜DSML｜ parameter>\n</｜DSML｜ invoke>\n<｜DSML｜ invoke name="get_weather">\n<｜DSML｜ parameter name="city" '
        'string="true">Zür',
        WEATHER,
        "",
        [("get_weather", {"city": "Oslo"})],
        0,
    ),
    (
        '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Par',
        WEATHER,
        "",
        [],
        1,
    ),
    # Mistral's [TOOL_CALLS] has no closer: the message's end is its end; a call only as written
    ('[TOOL_CALLS]get_weather{"city": "Paris"}', WEATHER, "", PARIS, 0),
    ('[TOOL_CALLS]get_weather{"city": "Paris"', WEATHER, "", [], 1),
]


@pytest.mark.parametrize(("text", "tools", "content", "calls", "malformed"), CUT)
def test_a_block_cut_by_max_tokens_is_no_call(impl, text, tools, content, calls, malformed):
    parsed = parse(text, tools=tools, truncated=True)
    assert (parsed.content, _calls(parsed), parsed.malformed) == (content, calls, malformed)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(CUT), st.data())
def test_any_split_of_a_cut_text_gives_what_parse_gives(impl, case, data):
    text, tools = case[0], case[1]
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8)))
    whole = feed_in_pieces(impl, text, [], tools=tools, truncated=True)
    assert feed_in_pieces(impl, text, cuts, tools=tools, truncated=True) == whole
    parsed = parse(text, tools=tools, truncated=True)
    assert (whole[0].strip(), whole[2]) == (parsed.content, [(c.name, c.arguments) for c in parsed.calls])


def test_truncated_must_be_a_bool(impl):
    with pytest.raises(TypeError, match="truncated must be a bool, not int"):
        parse("x", truncated=1)


def test_a_kimi_call_keeps_its_id_and_an_unclosed_reasoning_span_gives_its_call(impl):
    kimi = parse(CASES[8][0])
    assert [c.id for c in kimi.calls] == ["functions.get_weather:0"]
    thought = parse('<think>plan <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}', tools=WEATHER)
    assert (thought.content, thought.reasoning, _calls(thought)) == ("", "plan", PARIS)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(CASES), st.data())
def test_any_split_gives_what_parse_gives(impl, case, data):
    text, tools = case[0], case[1]
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8)))
    whole = feed_in_pieces(impl, text, [], tools=tools)
    assert feed_in_pieces(impl, text, cuts, tools=tools) == whole
    parsed = parse(text, tools=tools)
    assert (whole[0].strip(), whole[2]) == (parsed.content, [(c.name, c.arguments) for c in parsed.calls])


def test_in_a_chunk_stream_the_call_comes_with_the_finish(impl):
    text = CASES[0][0]
    deltas = [text[i : i + 5] for i in range(0, len(text), 5)]
    chunks = [chunk(d) for d in deltas] + [chunk(finish="stop")]
    out = list(recover_stream(chunks, native=True, has_tools=True, tools=WEATHER))
    content, calls, finishes = assemble(out)
    assert content.strip() == "Checking." and finishes == ["tool_calls"]
    assert [(name, json.loads(args)) for _, name, args in calls] == PARIS
