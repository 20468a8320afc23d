"""gpt-oss Harmony written as text: calls, the analysis channel as reasoning, the final channel as content."""

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from textcalls.dialects import harmony

from ..conftest import IMPLS
from ..streams import feed_in_pieces

ANALYSIS = "<|channel|>analysis<|message|>The user wants the weather; call the tool.<|end|>"
CALL = (
    "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
    '{"location": "Paris"}<|call|>'
)
FINAL = "<|start|>assistant<|channel|>final<|message|>It is sunny in Paris.<|return|>"


def calls(parsed):
    return [(c.name, json.loads(c.arguments)) for c in parsed.calls]


@pytest.mark.parametrize(
    ("text", "content", "reasoning", "expected"),
    [
        (ANALYSIS + CALL, "", "The user wants the weather; call the tool.", [("get_weather", {"location": "Paris"})]),
        (ANALYSIS + FINAL, "It is sunny in Paris.", "The user wants the weather; call the tool.", []),
        (
            '<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"location": "Oslo"}<|call|>',
            "",
            "",
            [("get_weather", {"location": "Oslo"})],
        ),
        ('<|channel|>commentary to=functions.lookup<|message|>{"q": 1}<|call|>', "", "", [("lookup", {"q": 1})]),
        (
            "<|channel|>commentary<|message|>Let me check.<|end|>" + CALL,
            "Let me check.",
            "",
            [("get_weather", {"location": "Paris"})],
        ),
        ("Use <|channel|>commentary to send a preamble.", "Use <|channel|>commentary to send a preamble.", "", []),
        ("<|channel|>commentary to=functions.f <|constrain|>json<|message|>[1]<|call|>", "", "", []),  # not an object
    ],
)
def test_harmony(impl, tc, text, content, reasoning, expected):
    parsed = tc.parse(text)
    assert parsed.content == content
    assert parsed.reasoning == reasoning
    assert calls(parsed) == expected


def test_harmony_can_be_turned_off(impl, tc):
    formats = [n for n, on in tc.DIALECTS.items() if on and n != "harmony"]
    assert tc.parse(ANALYSIS + CALL, formats=formats).calls == []


PIECES = st.sampled_from(
    [
        ANALYSIS,
        CALL,
        FINAL,
        "<|end|>",
        "<|start|>assistant",
        " text ",
        "<|channel|>",
        "<|message|>",
        "<|call|>",
        "to=functions.f ",
    ]
)


@pytest.mark.parametrize("mod", IMPLS)
@settings(max_examples=150, deadline=None)
@given(data=st.data(), text=st.lists(PIECES, max_size=6).map("".join))
def test_any_split_of_harmony_text_equals_the_whole(mod, data, text):
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=12).map(sorted))
    assert feed_in_pieces(mod, text, cuts) == feed_in_pieces(mod, text, [])


# --- special tokens stripped or mangled (issue 8, class 2) -------------------------------------------------

TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
    for n in ("get_weather", "Web Search", "shell")
]


@pytest.mark.parametrize(
    ("text", "tools", "expected"),
    [
        # a tool name with spaces, delimited by the next special token
        (
            '<|start|>assistant<|channel|>commentary to=functions.Web Search <|constrain|>json<|message|>{"q": "x"}<|call|>',
            None,
            [("Web Search", {"q": "x"})],
        ),
        (
            '<|start|>assistant<|channel|>commentary to=functions.Web Search <|constrain|>json<|message|>{"q": "x"}<|call|>',
            TOOLS,
            [("Web Search", {"q": "x"})],
        ),
        (
            '<|start|>assistant to=functions.Web Search<|channel|>commentary json<|message|>{"q": "x"}<|call|>',
            None,
            [("Web Search", {"q": "x"})],
        ),
        # the content type written after the name, before <|message|> (llama.cpp's form)
        (
            '<|channel|>commentary to=functions.get_weather json<|message|>{"city": "Paris"}<|call|>',
            None,
            [("get_weather", {"city": "Paris"})],
        ),
        # "json" glued to the name: read off only when the request's tools say so
        (
            '<|channel|>commentary to=functions.shelljson<|message|>{"cmd": "ls"}<|call|>',
            TOOLS,
            [("shell", {"cmd": "ls"})],
        ),
        (
            '<|channel|>commentary to=functions.shelljson<|message|>{"cmd": "ls"}<|call|>',
            None,
            [("shelljson", {"cmd": "ls"})],
        ),
        # <|message|> stripped: the arguments are the object from the first brace
        (
            '<|channel|>commentary to=functions.get_weather <|constrain|>json{"city": "Paris"}<|call|>',
            None,
            [("get_weather", {"city": "Paris"})],
        ),
        # a <|start|>assistant prefix before the channel
        (
            '<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Oslo"}'
            "<|call|>",
            None,
            [("get_weather", {"city": "Oslo"})],
        ),
    ],
)
def test_harmony_mangled_headers(impl, tc, text, tools, expected):
    parsed = tc.parse(text, tools=tools)
    assert calls(parsed) == expected and parsed.content == ""


def test_the_analysis_channel_stays_reasoning_before_a_mangled_call(impl, tc):
    text = (
        ANALYSIS
        + "<|start|>assistant<|channel|>commentary to=functions.Web Search <|constrain|>json<|message|>{}<|call|>"
    )
    parsed = tc.parse(text)
    assert parsed.reasoning == "The user wants the weather; call the tool." and calls(parsed) == [("Web Search", {})]


@pytest.mark.parametrize(
    ("opener", "body", "expected"),
    [
        # a body that ends at the end of its JSON (generation stopped before <|call|>)
        (
            "<|channel|>commentary to=functions.Web Search <|constrain|>",
            'json<|message|>{ "query": "x", "n": 10 }',
            [("Web Search", {"query": "x", "n": 10})],
        ),
        ("<|channel|>commentary to=functions.f <|constrain|>", "json<|message|>{}\n", [("f", {})]),
        ("<|start|>assistant to=functions.f<|channel|>", "commentary json<|message|>", [("f", {})]),
        ("<|channel|>commentary to=functions.f <|constrain|>", 'json<|message|>{"a": ', []),  # cut mid-value
        ("<|channel|>commentary to=functions.f <|constrain|>", 'json<|message|>{"a": 1} more', []),
        ("<|channel|>commentary<|message|>", "Let me check.", []),  # no recipient
    ],
)
def test_the_grammar_reads_a_body_without_its_closer(opener, body, expected):
    from textcalls.dialects import GRAMMARS, Context

    result = GRAMMARS["harmony"](opener, body, Context())
    assert [(c.name, json.loads(c.arguments)) for c in result] == expected


# --- harmony_text: the special tokens all stripped (opt-in phrase openers) ---------------------------------

WITH_TEXT = [name for name, on in __import__("textcalls").DIALECTS.items() if on] + ["harmony_text"]


@pytest.mark.parametrize(
    ("text", "tools", "content", "expected"),
    [
        ('commentary to=functions.get_weather json{"city": "Paris"}', None, "", [("get_weather", {"city": "Paris"})]),
        (
            'Checking. commentary to=functions.get_weather json{"city": "Paris"} Done.',
            None,
            "Checking.  Done.",
            [("get_weather", {"city": "Paris"})],
        ),
        (
            'to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}<|call|>',
            None,
            "",
            [("get_weather", {"city": "Paris"})],
        ),
        (
            'commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}',
            None,
            "",
            [("get_weather", {"city": "Paris"})],
        ),
        # recipient first, <|channel|> stripped between the name and "commentary"
        (
            'assistant to=functions.get_weathercommentary json{"city": "Paris"}',
            None,
            "assistant",
            [("get_weather", {"city": "Paris"})],
        ),
        ('to=functions.Web Search json{"q": 1}', TOOLS, "", [("Web Search", {"q": 1})]),
        ('to=functions.Web Search <|constrain|>json<|message|>{"q": 1}', None, "", [("Web Search", {"q": 1})]),
        # prose
        ('to=functions.Web Search json{"q": 1}', None, 'to=functions.Web Search json{"q": 1}', []),
        ('send to=functions team and {"a": 1} ok', None, 'send to=functions team and {"a": 1} ok', []),
        ('path_to=foo {"a": 1}', None, 'path_to=foo {"a": 1}', []),
        ('x to=functions.f then {"a": 1}', None, 'x to=functions.f then {"a": 1}', []),
        ("to=functions.f json[1]", None, "to=functions.f json[1]", []),
        ("redirect to=functions.f", None, "redirect to=functions.f", []),
    ],
)
def test_harmony_text_is_opt_in(impl, tc, text, tools, content, expected):
    parsed = tc.parse(text, formats=WITH_TEXT, tools=tools)
    assert calls(parsed) == expected and parsed.content == content
    assert tc.parse(text, tools=tools).calls == [] or text.startswith("<")  # off by default


def test_harmony_text_holds_a_tail_that_could_start_its_phrase(impl):
    s = impl.StreamScrubber(formats=WITH_TEXT)
    assert s.feed("go to") == "go "
    assert s.feed("=functions.f json") == ""
    assert s.feed('{"a": 1}<|call|> ok') == " ok"
    assert s.flush() == ""
    assert [(c.name, json.loads(c.arguments)) for c in s.calls] == [("f", {"a": 1})]
    assert impl.hold_from("x commentary to=", formats=WITH_TEXT) == 2


TEXT_PIECES = st.sampled_from(
    [
        'commentary to=functions.get_weather json{"city": "Paris"}',
        "to=functions.f <|constrain|>json<|message|>{}",
        "<|call|>",
        "to=",
        "commentary ",
        "functions.",
        "f json",
        "{}",
        '{"a": "}"}',
        "to=func",
        "functo",
        "functools",
        '[{"name": "g", "arguments": {}}]',
        " to",
        "c",
        "t",
        " ",
        "\n",
        CALL,
        ANALYSIS,
    ]
)


@pytest.mark.parametrize("mod", IMPLS)
@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    text=st.lists(TEXT_PIECES, max_size=6).map("".join),
    formats=st.sampled_from([WITH_TEXT, WITH_TEXT + ["phi4_mini"]]),
)
def test_any_split_with_harmony_text(mod, data, text, formats):
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=12).map(sorted))
    assert feed_in_pieces(mod, text, cuts, formats=formats) == feed_in_pieces(mod, text, [], formats=formats)


@pytest.mark.skipif(IMPLS[0].id != "c", reason="the Cython extension is disabled")
@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    text=st.lists(TEXT_PIECES, max_size=6).map("".join),
    formats=st.sampled_from([WITH_TEXT, WITH_TEXT + ["phi4_mini"]]),
)
def test_twin_agrees_with_harmony_text(data, text, formats):
    from textcalls import _scan_py

    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=12).map(sorted))
    c_impl = IMPLS[0].values[0]
    assert feed_in_pieces(c_impl, text, cuts, formats=formats) == feed_in_pieces(_scan_py, text, cuts, formats=formats)
    assert c_impl.hold_from(text, formats=formats) == _scan_py.hold_from(text, formats=formats)


def test_a_name_before_a_channel_word_is_stripped(impl, tc):
    """Stripped-token Harmony: the name ends at the channel word, without the space before it."""
    text = "commentary to=functions.get commentary<|constrain|>json<|message|>{}"
    assert [(c.name, c.arguments) for c in tc.parse(text, formats=["harmony_text"]).calls] == [("get", "{}")]


#: A content type after the name, as a regex: the definition ``_without_content_type`` is checked against.
CONTENT_TYPE = re.compile(r"\s+(?:json|code)$")


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from([" ", "\t", "\u3000", "\n", "json", "code", "x", "<|"]), max_size=8).map("".join))
def test_the_content_type_is_removed_as_its_regex_says(written):
    written = written.strip()  # (_name strips the header first)
    assert harmony._without_content_type(written) == CONTENT_TYPE.sub("", written)


@pytest.mark.parametrize("closer", ["<|message|>{}<|call|>", "{}"])
def test_a_long_run_of_whitespace_in_a_header_stays_linear(impl, tc, closer):
    # a content type after the name was removed by that regex, tried at every position of the run: quadratic
    # (a run of 16,000 spaces took seconds; this one would hang the suite); the name is the header's first word
    text = "<|channel|>commentary >to=functions.f" + " " * 1_000_000 + "x" + closer
    parsed = tc.parse(text)
    assert (calls(parsed), parsed.content) == ([("f", {})], "")
    scrubber = tc.StreamScrubber()
    out = "".join(scrubber.feed(text[i : i + 4096]) for i in range(0, len(text), 4096)) + scrubber.flush()
    assert (out, [(c.name, c.arguments) for c in scrubber.calls]) == ("", [("f", "{}")])


# Calls as CanIToolCall's gpt-oss fixtures take them from llama.cpp's and vLLM's tests: on the analysis channel
# (llamacpp-recipient-in-channel-analysis), and a call message closed by <|end|> where <|call|> belongs
# (vllm-preamble-call-end-terminated); each whole and in any split
SPECIAL = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
    for n in ("special_function", "get_weather")
]
ANALYSIS_CALL = '<|channel|>analysis to=functions.special_function<|message|>{"arg1": 1}'
END_CLOSED = (
    "<|channel|>commentary<|message|>Let me check the weather.<|end|><|start|>assistant to=functions.get_weather"
    '<|channel|>commentary<|message|>{"location": "SF"}<|end|>'
)


@pytest.mark.parametrize(
    ("text", "content", "call"),
    [
        (ANALYSIS_CALL, "", ("special_function", {"arg1": 1})),
        (END_CLOSED, "Let me check the weather.", ("get_weather", {"location": "SF"})),
    ],
)
def test_analysis_channel_and_end_closed_calls(impl, tc, text, content, call):
    p = tc.parse(text, tools=SPECIAL)
    assert (p.content, [(c.name, json.loads(c.arguments)) for c in p.calls]) == (content, [call])
    for cut in range(len(text) + 1):
        out, _, calls, _ = feed_in_pieces(impl, text, [cut], tools=SPECIAL)
        assert (out.strip(), [(n, json.loads(a)) for n, a in calls]) == (content, [call])
    # the analysis channel without a recipient is still reasoning
    thought = tc.parse("<|channel|>analysis<|message|>plan<|end|><|start|>assistant<|channel|>final<|message|>Hi")
    assert (thought.reasoning, thought.content, thought.calls) == ("plan", "Hi", [])


# -- prompt_tail: the prompt ended with gpt-oss's open message header ---------------------------------------

TAIL = "<|start|>assistant"
WEATHER = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
# what gpt-oss writes after a prompt that ends with the header's start (the recipient in the role header,
# as the openai-harmony renderer and llama.cpp's tests write it; CanIToolCall's gpt-oss fixtures)
AFTER_TAIL = [
    (' to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>{"city": "Paris"}', "commentary"),
    (' to=functions.get_weather<|channel|>commentary<|constrain|>json<|message|>{"city": "Paris"}', "no space"),
    (' to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris"}', "plain json"),
    (' to=functions.get_weather<|channel|>analysis <|constrain|>json<|message|>{"city": "Paris"}', "analysis"),
]


@pytest.mark.parametrize(("text", "label"), AFTER_TAIL)
def test_an_output_that_goes_on_with_the_prompts_header_is_read_with_prompt_tail(impl, tc, text, label):
    parsed = tc.parse(text, tools=WEATHER, prompt_tail=TAIL)
    assert [(c.name, json.loads(c.arguments)) for c in parsed.calls] == [("get_weather", {"city": "Paris"})]
    assert parsed.content == "" and parsed.reasoning == ""
    # without the knob the header's end is not markup: the text stays as written, no call
    plain = tc.parse(text, tools=WEATHER)
    assert not plain.calls and plain.content == text.strip()
    for cuts in ([], list(range(1, len(text))), [1, 4, 9, 30]):
        got = feed_in_pieces(impl, text, cuts, tools=WEATHER, prompt_tail=TAIL)
        assert got[0] == "" and got[2] == [("get_weather", parsed.calls[0].arguments)], cuts


def test_the_prompt_tail_is_never_shown_and_the_channels_after_it_are_read(impl, tc):
    parsed = tc.parse("<|channel|>analysis<|message|>Think.<|end|>" + FINAL, prompt_tail=TAIL)
    assert (parsed.content, parsed.reasoning) == ("It is sunny in Paris.", "Think.")
    assert tc.parse("<|channel|>final<|message|>Hi", prompt_tail=TAIL).content == "Hi"
    # a tail that is not all markup of the enabled dialects would be shown: refused
    for tail in ("Hello ", "x <", "<"):
        with pytest.raises(ValueError, match="prompt_tail must be markup of the enabled dialects"):
            tc.parse("world", prompt_tail=tail)
    with pytest.raises(ValueError, match="prompt_tail must be markup"):
        impl.StreamScrubber(prompt_tail=TAIL, formats=["hermes"])


def test_prompt_tail_through_a_chunk_stream(impl):
    from textcalls.stream import recover_stream

    from ..streams import ch

    text = AFTER_TAIL[0][0]
    chunks = [ch(role="assistant"), *(ch(text[i : i + 3]) for i in range(0, len(text), 3)), ch(finish="stop")]
    out = list(recover_stream(iter(chunks), native=False, has_tools=True, tools=WEATHER, prompt_tail=TAIL))
    deltas = [c["choices"][0] for c in out if c.get("choices")]
    assert not "".join(d["delta"].get("content") or "" for d in deltas)
    calls = [t for d in deltas for t in d["delta"].get("tool_calls") or ()]
    assert [(t["function"]["name"], json.loads(t["function"]["arguments"])) for t in calls] == [
        ("get_weather", {"city": "Paris"})
    ]
    assert deltas[-1]["finish_reason"] == "tool_calls"


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [(1, TypeError, "prompt_tail must be a str, not int"), ("x" * 257, ValueError, "at most 256 characters")],
)
def test_a_bad_prompt_tail_is_named(impl, tc, value, error, message):
    for build in (lambda: tc.parse("x", prompt_tail=value), lambda: impl.StreamScrubber(prompt_tail=value)):
        with pytest.raises(error, match=message):
            build()
