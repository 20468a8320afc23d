"""Every default dialect end to end: whole text, negatives, and any split of a stream, on both implementations."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from textcalls import _scan_py

from ..conftest import IMPLS
from ..streams import feed_in_pieces

P = "Paris"
WEATHER = {"city": P}
# (dialect, text, expected content, expected calls)
CASES = [
    (
        "hermes-array",
        '<tool_call>[{"name":"a","arguments":{"x":1}},{"name":"b","arguments":{}}]</tool_call>',
        "",
        [("a", {"x": 1}), ("b", {})],
    ),
    (
        "qwen3-coder",
        "Let me check.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
        "Let me check.",
        [("get_weather", {"city": P, "days": "3"})],
    ),
    (
        "seed-oss",
        "<seed:tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n"
        "</seed:tool_call>",
        "",
        [("get_weather", WEATHER)],
    ),
    (
        "glm-4.5",
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>",
        "",
        [("get_weather", WEATHER)],
    ),
    (
        "glm-4.7",
        "ok<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>",
        "ok",
        [("get_weather", WEATHER)],
    ),
    (
        "deepseek-ascii",
        "<|tool▁calls▁begin|><|tool▁call▁begin|>function<|tool▁sep|>get_weather\n```json\n"
        '{"city": "Paris"}\n```<|tool▁call▁end|><|tool▁calls▁end|>',
        "",
        [("get_weather", WEATHER)],
    ),
    (
        "deepseek-r1-distill",
        '<｜tool▁calls｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜>',
        "",
        [("get_weather", WEATHER)],
    ),
    (
        "dsml-v3.2",
        '<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n<｜DSML｜parameter name="city" '
        'string="true">Paris</｜DSML｜parameter>\n<｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>\n</｜DSML｜function_calls>",
        "",
        [("get_weather", {"city": P, "days": 3})],
    ),
    (
        "dsml-v4",
        '<｜DSML｜tool_calls><｜DSML｜invoke name="get_weather">{"city": "Paris"}</｜DSML｜invoke>'
        "</｜DSML｜tool_calls>",
        "",
        [("get_weather", WEATHER)],
    ),
    (
        # DeepSeek V4.1, as its chat template renders a call (CanIToolCall's deepseek/v41-single-call): a space
        # after the bar, and <｜DSML｜ calls>
        "dsml-v4.1",
        '\n\n<｜DSML｜ calls>\n<｜DSML｜ invoke name="get_weather">\n<｜DSML｜ parameter name="city" string="true">'
        'Paris</｜DSML｜ parameter>\n<｜DSML｜ parameter name="unit" string="true">c</｜DSML｜ parameter>\n'
        "</｜DSML｜ invoke>\n</｜DSML｜ calls>",
        "",
        [("get_weather", {"city": "Paris", "unit": "c"})],
    ),
    (
        "kimi-k2",
        "Sure.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
        '<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>',
        "Sure.",
        [("get_weather", WEATHER)],
    ),
    (
        "minimax-m2",
        '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n'
        "</invoke>\n</minimax:tool_call>",
        "",
        [("get_weather", WEATHER)],
    ),
    (
        "minimax-m1",
        '<tool_calls>\n{"name": "a", "arguments": {"x": 1}}\n{"name": "b", "arguments": {}}\n</tool_calls>',
        "",
        [("a", {"x": 1}), ("b", {})],
    ),
    (
        "mistral-v7",
        '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]',
        "",
        [("get_weather", WEATHER)],
    ),
    ("mistral-v11", '[TOOL_CALLS]get_weather{"city": "Paris"} done', "done", [("get_weather", WEATHER)]),
    ("mistral-v13", '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}', "", [("get_weather", WEATHER)]),
    (
        "gemma4",
        '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>',
        "",
        [("get_weather", {"city": P, "days": 3})],
    ),
    (
        "function-gemma",
        "<start_function_call>call:get_weather{city:<escape>Paris<escape>}<end_function_call>",
        "",
        [("get_weather", WEATHER)],
    ),
    ("lfm2", "<|tool_call_start|>[get_weather(city='Paris')]<|tool_call_end|>", "", [("get_weather", WEATHER)]),
    (
        "olmo3",
        '<function_calls>get_weather(city="Paris")\nget_time(tz="CET")</function_calls>',
        "",
        [("get_weather", WEATHER), ("get_time", {"tz": "CET"})],
    ),
    ("llama4", '<|python_start|>[get_weather(city="Paris")]<|python_end|>', "", [("get_weather", WEATHER)]),
    (
        "llama3",
        '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}<|eom_id|>',
        "",
        [("get_weather", WEATHER)],
    ),
    (
        "granite3",
        '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
        "",
        [("get_weather", WEATHER)],
    ),
    (
        "internlm",
        '<|action_start|><|plugin|>\n{"name": "get_weather", "parameters": {"city": "Paris"}}<|action_end|>',
        "",
        [("get_weather", WEATHER)],
    ),
    (
        "command-r",
        '<|START_ACTION|>[{"tool_name": "get_weather", "parameters": {"city": "Paris"}}]<|END_ACTION|>',
        "",
        [("get_weather", WEATHER)],
    ),
    (
        "nemotron",
        '<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</TOOLCALL>',
        "",
        [("get_weather", WEATHER)],
    ),
    (
        "step3",
        '<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="get_weather">'
        '<steptml:parameter name="city">Paris</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>',
        "",
        [("get_weather", WEATHER)],
    ),
    ("functionary", '<function=get_weather>{"city": "Paris"}</function>', "", [("get_weather", WEATHER)]),
    ("function-name-attr", '<function name="get_weather">{"city": "Paris"}</function>', "", [("get_weather", WEATHER)]),
    (
        "qwen-without-wrapper",
        "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>",
        "",
        [("get_weather", WEATHER)],
    ),
    (
        "longcat",
        '<longcat_tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</longcat_tool_call>',
        "",
        [("get_weather", WEATHER)],
    ),
    ("apertus", '<|tools_prefix|>[{"get_weather": {"city": "Paris"}}]<|tools_suffix|>', "", [("get_weather", WEATHER)]),
    (
        "wrapper-tools",
        'x <tools>{"name": "get_weather", "arguments": {"city": "Paris"}}</tools>',
        "x",
        [("get_weather", WEATHER)],
    ),
    (
        "lmstudio",
        '[TOOL_REQUEST]{"name": "get_weather", "arguments": {"city": "Paris"}}[END_TOOL_REQUEST]',
        "",
        [("get_weather", WEATHER)],
    ),
    (
        "bracket-tool-call",
        '[TOOL_CALL]\n{tool => "get_weather", args => {\n  --city "Paris"\n}}\n[/TOOL_CALL]',
        "",
        [("get_weather", WEATHER)],
    ),
    (
        "invoke-xml",
        '<function_calls>\n<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n'
        "</invoke>\n</function_calls>",
        "",
        [("get_weather", WEATHER)],
    ),
    (
        "nemotron-lowercase",
        '<toolcall>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</toolcall>',
        "",
        [("get_weather", WEATHER)],
    ),
    (
        "hermes-name-attribute",
        '<tool_call id="call_0" name="get_weather">{"city": "Paris"}</tool_call>',
        "",
        [("get_weather", WEATHER)],
    ),
    (
        "llama3-builtin",
        '<|python_tag|>brave_search.call(query="Paris")<|eom_id|>',
        "",
        [("brave_search", {"query": P})],
    ),
]
NEGATIVE = [
    "I list <tool_calls> and </tool_calls> in the docs.",
    '<json>{"a": 1}</json> is a JSON tag',
    "<response>hello</response>",
    "a [TOOL_CALLS] marker mentioned in prose",
    "markdown [link](http://x) and [1, 2]",
    "<function> and </function> in HTML-ish prose",
    "[TOOL_CALL] and [TOOL_REQUEST] are mentioned, not used",
    "<toolcall>not json</toolcall>",
]


def calls(parsed):
    return [(c.name, json.loads(c.arguments)) for c in parsed.calls]


@pytest.mark.parametrize(("dialect", "text", "content", "expected"), CASES, ids=[c[0] for c in CASES])
def test_dialect_whole_text(impl, tc, dialect, text, content, expected):
    parsed = tc.parse(text)
    assert parsed.content == content
    assert calls(parsed) == expected


def test_kimi_keeps_its_call_id(impl, tc):
    text = {c[0]: c[1] for c in CASES}["kimi-k2"]
    assert [c.id for c in tc.parse(text).calls] == ["functions.get_weather:0"]


@pytest.mark.parametrize("text", NEGATIVE)
def test_prose_that_looks_like_markup_is_kept(impl, tc, text):
    parsed = tc.parse(text)
    assert calls(parsed) == []
    assert parsed.content == text and parsed.removed == 0


def test_a_tag_word_alone_is_not_a_glm_call(impl, tc):
    assert tc.parse("<tool_call>oops</tool_call>").calls == []
    assert calls(tc.parse("<tool_call>get_time\n</tool_call>")) == [("get_time", {})]


# whitespace str.strip() removes, as the <tool_call> body's shape is read (a run longer than 64: read by pieces)
PADS = ["", " ", "\n", " \t\n ", "\u2003", "\x1c", "\x85", "\u3000\n", " " * 100]


@pytest.mark.parametrize("before", PADS)
@pytest.mark.parametrize("after", PADS)
def test_a_tool_call_bodys_shape_is_read_past_any_whitespace(impl, tc, before, after):
    """The ``<tool_call>`` body's shape is that of its text without the whitespace around it: JSON, Qwen3-Coder
    XML, GLM, or GLM's bare name, which needs a line break right after it."""

    def body_calls(body):
        return calls(tc.parse("<tool_call>" + before + body + after + "</tool_call>"))

    assert body_calls('{"name": "f", "arguments": {"a": 1}}') == [("f", {"a": 1})]
    assert body_calls('[{"name": "f", "arguments": {}}]') == [("f", {})]
    assert body_calls("<function=f>\n<parameter=a>\nx\n</parameter>\n</function>") == [("f", {"a": "x"})]
    assert body_calls("f\n<arg_key>a</arg_key>\n<arg_value>x</arg_value>") == [("f", {"a": "x"})]
    assert body_calls("f") == ([("f", {})] if after.startswith("\n") else [])


def test_a_json_call_whose_arguments_mention_glm_tags_is_a_json_call(impl, tc):
    # a coding agent writing about GLM's format: the body is JSON, whatever its strings hold
    text = '<tool_call>{"name": "f", "arguments": {"x": "<arg_key>a</arg_key>"}}</tool_call>'
    parsed = tc.parse(text)
    assert [(c.name, c.arguments) for c in parsed.calls] == [("f", '{"x": "<arg_key>a</arg_key>"}')]
    assert parsed.content == ""


def test_formats_restricts_the_dialects(impl, tc):
    text = {c[0]: c[1] for c in CASES}["mistral-v11"]
    assert tc.parse(text, formats=["hermes"]).calls == []
    assert tc.parse(text, formats=["hermes"]).content == text
    assert calls(tc.parse(text, formats=["mistral"])) == [("get_weather", WEATHER)]
    with pytest.raises(ValueError, match="unknown dialect"):
        tc.parse(text, formats=["nope"])
    with pytest.raises(TypeError, match="formats"):
        tc.parse(text, formats="mistral")


def test_dialects_lists_the_defaults(tc):
    assert tc.DIALECTS["hermes"] is True and tc.DIALECTS["mistral"] is True
    assert set(tc.DIALECTS) >= {"kimi_k2", "minimax_m2", "deepseek_dsml", "gemma4", "olmo3", "lfm2", "step3"}


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}},
        },
    }
]


def test_tools_type_xml_values(impl, tc):
    text = {c[0]: c[1] for c in CASES}["qwen3-coder"]
    assert calls(tc.parse(text, tools=TOOLS)) == [("get_weather", {"city": P, "days": 3})]


@pytest.mark.parametrize(
    ("policy", "content", "names"),
    [
        ("keep_text", '<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call> ok', []),
        ("drop", "ok", []),
        ("accept", "ok", ["rm_rf"]),
    ],
)
def test_unknown_tools_policy(impl, tc, policy, content, names):
    text = '<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call> ok'
    parsed = tc.parse(text, tools=TOOLS, unknown_tools=policy)
    assert parsed.content == content and [c.name for c in parsed.calls] == names


def test_unknown_tools_must_be_a_policy(impl, tc):
    with pytest.raises(ValueError, match="unknown_tools"):
        tc.parse("x", unknown_tools="maybe")
    with pytest.raises(TypeError, match="tools"):
        tc.parse("x", tools={"type": "function"})


ALL_TEXT = st.lists(st.sampled_from([c[1] for c in CASES] + NEGATIVE + [" and ", "\n"]), min_size=1, max_size=4).map(
    "".join
)


@pytest.mark.parametrize("mod", IMPLS)
@settings(max_examples=200, deadline=None)
@given(data=st.data(), text=ALL_TEXT)
def test_any_split_of_dialect_text_equals_the_whole(mod, data, text):
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=20).map(sorted))
    assert feed_in_pieces(mod, text, cuts) == feed_in_pieces(mod, text, [])


@pytest.mark.skipif(IMPLS[0].id != "c", reason="the Cython extension is disabled")
@settings(max_examples=200, deadline=None)
@given(data=st.data(), text=ALL_TEXT)
def test_twin_agrees_on_dialect_text(data, text):
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=20).map(sorted))
    assert feed_in_pieces(IMPLS[0].values[0], text, cuts) == feed_in_pieces(_scan_py, text, cuts)


WITH_WHOLE = [name for name, on in __import__("textcalls").DIALECTS.items() if on] + [
    "json_message",
    "pythonic_message",
]


@pytest.mark.parametrize(
    ("text", "content", "expected"),
    [
        (' {"name": "get_weather", "arguments": {"city": "Paris"}}\n', "", [("get_weather", WEATHER)]),
        ('[{"name": "a", "arguments": {}}, {"name": "b", "parameters": {"x": 2}}]', "", [("a", {}), ("b", {"x": 2})]),
        ("[get_weather(city='Paris')]", "", [("get_weather", WEATHER)]),
        ('{"name": "a", "arguments": {}} and more', '{"name": "a", "arguments": {}} and more', []),
        ('{"note": "not a call"}', '{"note": "not a call"}', []),
        ("[1, 2, 3]", "[1, 2, 3]", []),
        ('[TOOL_CALLS]f{"a": 1}', "", [("f", {"a": 1})]),  # not a whole message: the dialects still apply
        ('Sure. <tool_call>{"name": "f"}</tool_call>', "Sure.", [("f", {})]),
    ],
)
def test_whole_message_formats_are_opt_in(impl, tc, text, content, expected):
    parsed = tc.parse(text, formats=WITH_WHOLE)
    assert parsed.content == content and calls(parsed) == expected
    if expected and text.strip()[0] in "{[" and not text.startswith("[TOOL"):
        assert tc.parse(text).calls == []  # off by default


def test_whole_message_hold_is_capped_by_max_block(impl, tc):
    text = '{"name": "get_weather", "arguments": {"city": "' + "P" * 100 + '"}}'
    assert tc.parse(text, formats=WITH_WHOLE, max_block=len(text)).calls != []
    assert tc.parse(text, formats=WITH_WHOLE, max_block=len(text) - 1).calls == []


WHOLE_TEXT = st.sampled_from(
    [
        ' {"name": "get_weather", "arguments": {"city": "Paris"}}\n',
        "[get_weather(city='Paris')]",
        "  [1, 2]",
        '{"a": 1} <tool_call>{"name": "f"}</tool_call>',
        "\n\n plain",
        '[TOOL_CALLS]f{"a": 1}',
    ]
)


@pytest.mark.parametrize("mod", IMPLS)
@settings(max_examples=100, deadline=None)
@given(data=st.data(), text=WHOLE_TEXT, max_block=st.sampled_from([5, 40, 1 << 20]))
def test_any_split_with_whole_message_formats(mod, data, text, max_block):
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=10).map(sorted))
    options = {"formats": WITH_WHOLE, "max_block": max_block}
    assert feed_in_pieces(mod, text, cuts, **options) == feed_in_pieces(mod, text, [], **options)


WITH_PHI4 = [name for name, on in __import__("textcalls").DIALECTS.items() if on] + ["phi4_mini"]
PHI4 = 'functools[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "now", "arguments": {}}]'


@pytest.mark.parametrize(
    ("text", "content", "expected"),
    [
        (PHI4, "", [("get_weather", WEATHER), ("now", {})]),
        ("Sure. " + PHI4 + " done", "Sure.  done", [("get_weather", WEATHER), ("now", {})]),
        ("see functools.partial and functools [x]", "see functools.partial and functools [x]", []),
        ("functools[1, 2]", "", []),  # markup, but not calls: removed without a call
    ],
)
def test_phi4_mini_is_opt_in(impl, tc, text, content, expected):
    parsed = tc.parse(text, formats=WITH_PHI4)
    assert parsed.content == content and calls(parsed) == expected
    assert tc.parse(text).calls == []  # off by default


def test_phi4_mini_holds_a_tail_that_could_start_the_word(impl):
    s = impl.StreamScrubber(formats=WITH_PHI4)
    assert s.feed("use fun") == "use "
    assert s.feed("ctools") == ""
    assert s.feed(PHI4[len("functools") :]) == ""
    assert s.feed(" of") == " o"
    assert s.flush() == "f"
    assert [c.name for c in s.calls] == ["get_weather", "now"]
    assert impl.hold_from("x functo", formats=WITH_PHI4) == 2


@pytest.mark.parametrize("mod", IMPLS)
@settings(max_examples=150, deadline=None)
@given(
    data=st.data(),
    text=st.lists(st.sampled_from([PHI4, "functools", "[", " fun", "ctools", "f", " x ", "]"]), max_size=6).map(
        "".join
    ),
)
def test_any_split_with_phi4_mini(mod, data, text):
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=10).map(sorted))
    assert feed_in_pieces(mod, text, cuts, formats=WITH_PHI4) == feed_in_pieces(mod, text, [], formats=WITH_PHI4)


def test_the_cousins_are_default_dialects_and_harmony_text_is_opt_in(tc):
    assert all(tc.DIALECTS[n] is True for n in ("lmstudio", "bracket_tool_call"))
    assert tc.DIALECTS["harmony_text"] is False


def test_the_table_stays_within_the_scanners_limits(impl):
    # openers and markers: an ASCII first character, 2-40 characters; at most 8 distinct first characters
    # (a word opener counts its anchor) with every dialect on at once
    from textcalls.markers import BLOCKS, DIALECTS, MARKERS

    literals = [b.opener for b in BLOCKS] + [m.literal for m in MARKERS]
    assert all(ord(lit[0]) < 128 and 2 <= len(lit) <= 40 for lit in literals)
    assert all(len(b.closer) <= 40 for b in BLOCKS if b.closer)
    firsts = {b.anchor or b.opener[0] for b in BLOCKS} | {m.literal[0] for m in MARKERS}
    assert len(firsts) <= 8, firsts
    # a word opener's first character never comes again, past its first place, in a word opener after it in
    # the table: else the tail a stream holds for the first could hide the start of the later one
    words = [b.opener for b in BLOCKS if b.anchor]
    assert all(a[0] not in b[1:] for k, a in enumerate(words) for b in words[k + 1 :])
    assert impl.StreamScrubber(formats=list(DIALECTS)).feed("x") == "x"  # the scanner takes the whole table


# Kimi K3 XTML, as its chat template renders it (CanIToolCall's kimi/k3-content-before-call and
# kimi/k3-typed-values, kimi/k3-xtml-attr-escaping, kimi/k3-control-marker-text-in-value): the think channel
# is reasoning, the response channel content, the tools channel calls; values typed by their type attribute
K3_CALL = (
    "Live data needed.<|close|>think<|sep|><|open|>response<|sep|>Let me check that for you.<|close|>response<|sep|>"
    '<|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|><|open|>argument key="city" type="string"'
    "<|sep|>Berlin<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>"
)
K3_TYPED = (
    '<|open|>tools<|sep|><|open|>call tool="create_event" index="1"<|sep|><|open|>argument key="title" '
    'type="string"<|sep|>Standup<|close|>argument<|sep|><|open|>argument key="duration_minutes" type="number"<|sep|>'
    '15<|close|>argument<|sep|><|open|>argument key="all_day" type="boolean"<|sep|>false<|close|>argument<|sep|>'
    '<|open|>argument key="reminder_minutes" type="null"<|sep|>null<|close|>argument<|sep|><|close|>call<|sep|>'
    '<|open|>call tool="save_answer" index="2"<|sep|><|open|>argument key="q&amp;a" type="string"<|sep|>fish & chips'
    '<|close|>argument<|sep|><|open|>argument key="say &quot;hi&quot;" type="string"<|sep|>she said "hi"'
    '<|close|>argument<|sep|><|close|>call<|sep|><|open|>call tool="write_file" index="3"<|sep|><|open|>argument '
    'key="content" type="string"<|sep|><|close|>argument<|sep|> is how args end<|close|>argument<|sep|>'
    "<|close|>call<|sep|><|close|>tools<|sep|>"
)


def test_kimi_k3_channels_and_calls(impl, tc):
    p = tc.parse(K3_CALL, reasoning_started=True)  # the template opens the think channel in the prompt
    assert (p.reasoning, p.content) == ("Live data needed.", "Let me check that for you.")
    assert [(c.name, json.loads(c.arguments), c.dialect) for c in p.calls] == [
        ("get_weather", {"city": "Berlin"}, "kimi_k3")
    ]
    typed = tc.parse(K3_TYPED)
    assert [(c.name, json.loads(c.arguments)) for c in typed.calls] == [
        ("create_event", {"title": "Standup", "duration_minutes": 15, "all_day": False, "reminder_minutes": None}),
        ("save_answer", {"q&a": "fish & chips", 'say "hi"': 'she said "hi"'}),
        ("write_file", {"content": "<|close|>argument<|sep|> is how args end"}),
    ]
    assert typed.content == ""
    # the think channel skipped: the response channel ends the reasoning the prompt opened
    skipped = tc.parse("<|open|>response<|sep|>Hello world<|close|>response<|sep|><|close|>message<|sep|>",
                       reasoning_started=True)  # fmt: skip
    assert (skipped.reasoning, skipped.content) == ("", "Hello world")
    # a JSON value that does not decode makes the call malformed: no call, its markup removed
    bad = K3_TYPED.replace(">15<", ">fifteen<")
    assert (tc.parse(bad).calls, tc.parse(bad).malformed) == ([], 1)


@pytest.mark.parametrize("mod", IMPLS)
@settings(max_examples=100, deadline=None)
@given(data=st.data(), text=st.sampled_from([K3_CALL, K3_TYPED]))
def test_kimi_k3_in_any_split(mod, data, text):
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=12).map(sorted))
    assert feed_in_pieces(mod, text, cuts, reasoning_started=True) == feed_in_pieces(
        mod, text, [], reasoning_started=True
    )


GET_TIME = [{"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}]


@pytest.mark.parametrize(
    ("text", "tools", "content", "calls"),
    [
        # GLM-4.7's call without arguments (CanIToolCall glm/glm47-vllm-content-before-no-space): the body is the
        # name alone, a call when it names an offered tool
        ("Checking.<tool_call>get_time</tool_call>", GET_TIME, "Checking.", [("get_time", {})]),
        ("  \n  <tool_call>get_time</tool_call>", GET_TIME, "", [("get_time", {})]),
        # a lone word that names no offered tool, or without tools, is no call (the block is removed, malformed)
        ("Checking.<tool_call>rm</tool_call>", GET_TIME, "Checking.", []),
        ("Checking.<tool_call>get_time</tool_call>", None, "Checking.", []),
    ],
)
def test_a_glm_call_without_arguments_is_its_offered_name(impl, tc, text, tools, content, calls):
    p = tc.parse(text, tools=tools)
    assert (p.content, [(c.name, json.loads(c.arguments)) for c in p.calls]) == (content, calls)
    assert p.malformed == (0 if calls else 1)
    for cut in range(len(text) + 1):
        out, _, streamed, _ = feed_in_pieces(impl, text, [cut], tools=tools)
        assert (out.strip(), [n for n, _ in streamed]) == (content, [n for n, _ in calls])


ANYOF = [
    {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {
                "type": "object",
                "properties": {  # Pydantic's Optional fields, as vLLM's Qwen3-Coder tests write them
                    "n": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": 5},
                    "s": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                    "a": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]},
                    "o": {"oneOf": [{"type": "object"}, {"type": "null"}]},
                    "m": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
                },
            },
        },
    }
]


def test_xml_values_are_typed_through_anyof_and_oneof(impl, tc):
    text = (
        "<tool_call>\n<function=f>\n<parameter=n>\n5\n</parameter>\n<parameter=s>\nhello\n</parameter>\n"
        '<parameter=a>\n["a", "b"]\n</parameter>\n<parameter=o>\n{"k": "v"}\n</parameter>\n<parameter=m>\n'
        "some text\n</parameter>\n</function>\n</tool_call>"
    )
    (call,) = tc.parse(text, tools=ANYOF).calls
    assert json.loads(call.arguments) == {"n": 5, "s": "hello", "a": ["a", "b"], "o": {"k": "v"}, "m": "some text"}
    # a value no member's type takes stays the string written
    (call,) = tc.parse(text.replace("\n5\n", "\nfive\n"), tools=ANYOF).calls
    assert json.loads(call.arguments)["n"] == "five"


def test_a_gemma_key_with_spaces_is_read(impl, tc):
    # Gemma 4 writes a schema's key as it is (CanIToolCall gemma4/edge-values-key-with-space, from Ollama #18390):
    # the call was dropped whole
    text = (
        '<|tool_call>call:record{flag:false,key with space:1.5e-05,none:null,obj:{a:[1,<|"|>t<|"|>],B:1},'
        's:<|"|>x,y} "q"<|"|>}<tool_call|>'
    )
    (call,) = tc.parse(text).calls
    assert json.loads(call.arguments) == {
        "flag": False,
        "key with space": 1.5e-05,
        "none": None,
        "obj": {"a": [1, "t"], "B": 1},
        "s": 'x,y} "q"',
    }
    # a space before the colon is no part of the key; two words with no colon are malformed
    assert json.loads(tc.parse("<|tool_call>call:f{a b :1}<tool_call|>").calls[0].arguments) == {"a b": 1}
    assert tc.parse("<|tool_call>call:f{a b}<tool_call|>").calls == []


def test_a_functionary_json_body_that_mentions_a_parameter_tag_is_json(impl, tc):
    # the <function=NAME> body's shape decides: JSON (a string may mention <parameter=), or Qwen3-Coder tags
    # (hypothesis found the JSON one read as tags, so no call)
    (call,) = tc.parse('<function=f>{"note": "<parameter=x>"}</function>').calls
    assert (call.name, json.loads(call.arguments)) == ("f", {"note": "<parameter=x>"})
    (call,) = tc.parse("<function=f>\n<parameter=x>\n1\n</parameter>\n</function>").calls
    assert (call.name, json.loads(call.arguments)) == ("f", {"x": "1"})


def test_each_family_owns_its_grammars_and_gathering_refuses_a_name_given_twice():
    """``dialects.GRAMMARS`` is the families' tables gathered: each grammar is defined in the module that
    exports it, every grammar ``markers.BLOCKS`` names is there, and a name two tables give is an error."""
    from textcalls import dialects
    from textcalls.dialects import GRAMMARS, _gathered, harmony, jsonlike, pythonic, xml
    from textcalls.markers import BLOCKS

    for family in (jsonlike, xml, pythonic, harmony):
        assert family.GRAMMARS and all(g.__module__ == family.__name__ for g in family.GRAMMARS.values())
        assert all(GRAMMARS[name] is g for name, g in family.GRAMMARS.items())
    by_shape = {name for name, g in GRAMMARS.items() if g.__module__ == dialects.__name__}
    assert by_shape == {"hermes", "function", "pythonic_lines", "dsml_toolcall"}
    assert {b.grammar for b in BLOCKS} <= set(GRAMMARS)
    with pytest.raises(ValueError, match=r"grammar names given twice: \['deepseek'\]"):
        _gathered(jsonlike.GRAMMARS, {"deepseek": xml.dsml})


@pytest.mark.parametrize("dialect", list(__import__("textcalls").DIALECTS))
def test_each_dialect_s_example_reads_with_that_dialect_alone(impl, tc, dialect):
    """``markers.EXAMPLES`` (what ``textcalls dialects`` and the docs show): one per dialect, read with only that
    dialect enabled as the call of get_weather with {"city": "Paris"} (the reasoning example: a span)."""
    from textcalls.markers import EXAMPLES

    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
    parsed = tc.parse(EXAMPLES[dialect], formats=[dialect], tools=tools)
    if dialect == "reasoning":
        assert (parsed.calls, parsed.reasoning) == ([], "The user wants the weather in Paris.")
        return
    assert [(c.name, json.loads(c.arguments), c.dialect) for c in parsed.calls] == [
        ("get_weather", {"city": "Paris"}, dialect)
    ]
    assert parsed.content == ""


@pytest.mark.parametrize("mod", IMPLS)
def test_a_tool_call_body_may_name_its_tool_in_a_tag_then_give_json(mod):
    # field sample hermes-05: <function>NAME</function> and the arguments object inside <tool_call>
    text = 'Let me check.\n<tool_call>\n<function>terminal</function>\n{"command": "lsof -i :10240"}\n</tool_call>'
    p = mod.scan_whole(text, __import__("textcalls").Options())
    assert [(c.name, json.loads(c.arguments)) for c in p.calls] == [("terminal", {"command": "lsof -i :10240"})]
    assert p.content == "Let me check."
    content, _, calls, _ = feed_in_pieces(mod, text, [20, 33, 40])
    assert content.strip() == p.content and calls == [(c.name, c.arguments) for c in p.calls]


@pytest.mark.parametrize("mod", IMPLS)
@pytest.mark.parametrize(
    ("text", "tools", "calls"),
    [
        # field sample glm-01: GLM's first <arg_key> left out, the name and the key run together; with tools the
        # offered name tells them apart
        (
            "<tool_call>send_command_to_shellcommand</arg_key><arg_value>echo test</arg_value></tool_call>",
            ["send_command_to_shell"],
            [("send_command_to_shell", {"command": "echo test"})],
        ),
        # without tools nothing tells where the name ends: malformed, as before
        ("<tool_call>send_command_to_shellcommand</arg_key><arg_value>echo test</arg_value></tool_call>", None, []),
        # field sample minicpm5-01: a Functionary opener with XML values
        (
            '<function name="get_weather"><param name="location">Rome</param></function>',
            ["get_weather"],
            [("get_weather", {"location": "Rome"})],
        ),
        (
            '<function name="get_weather"><param name="location">Rome</param></function>',
            None,
            [("get_weather", {"location": "Rome"})],
        ),
    ],
)
def test_damaged_cousins_read_with_the_dialects_rules(mod, text, tools, calls):
    options = {"tools": [{"type": "function", "function": {"name": n}} for n in tools]} if tools else {}
    p = mod.scan_whole(text, __import__("textcalls").Options(**options))
    assert [(c.name, json.loads(c.arguments)) for c in p.calls] == calls
    assert p.content == ""  # the markup goes: a call, or a malformed block
    content, _, got, _ = feed_in_pieces(mod, text, [7, 19, 30], **options)
    assert content.strip() == p.content and got == [(c.name, c.arguments) for c in p.calls]


KIMI_BLOCK = "<|tool_calls_section_begin|> <|tool_call_begin|> functions.bash:0 <|tool_call_argument_begin|> {} <|tool_call_end|>"


@pytest.mark.parametrize("mod", IMPLS)
@pytest.mark.parametrize(
    ("text", "content"),
    [
        # field sample kimi_k2-05: the section closer cut by its last character, where the output ends
        ("Checking. " + KIMI_BLOCK + " <|tool_calls_section_end|", "Checking."),
        ("Checking. " + KIMI_BLOCK + "\n<|tool_calls_section_end|", "Checking."),
        # two characters missing, or text between: the text stays
        ("Checking. " + KIMI_BLOCK + " <|tool_calls_section_en", "Checking.   <|tool_calls_section_en"),
        ("Checking. " + KIMI_BLOCK + " ok <|tool_calls_section_end|", "Checking.   ok <|tool_calls_section_end|"),
        # not after a block of its dialect
        ("Checking <|tool_calls_section_end|", "Checking <|tool_calls_section_end|"),
    ],
)
def test_a_closer_cut_at_the_very_end_after_its_block_goes(mod, text, content):
    p = mod.scan_whole(text, __import__("textcalls").Options())
    assert p.content == content
    for cuts in ([len(text) - 3], [len(text) - 20, len(text) - 1], list(range(len(text) - 26, len(text)))):
        got, _, calls, removed = feed_in_pieces(mod, text, cuts)
        assert (got.strip(), calls, removed) == (p.content, [(c.name, c.arguments) for c in p.calls], p.removed)
