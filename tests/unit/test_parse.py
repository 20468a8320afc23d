"""parse(): the reference cases and the rules beyond them, on both implementations."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

DS_OPEN, DS_CLOSE = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>"
DS_SEC_OPEN, DS_SEC_CLOSE, DS_SEP = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁sep｜>"


def calls(parsed):
    return [(c.name, json.loads(c.arguments)) for c in parsed.calls]


REFERENCE = [
    (
        'Let me read it.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n</tool_call>',
        "Let me read it.",
        [("read_file", {"path": "a.txt"})],
    ),
    (
        'a<tool_call>{"name":"one","arguments":{}}</tool_call>b<tool_call>{"name":"two","arguments":{"x":1}}</tool_call>c',
        "abc",
        [("one", {}), ("two", {"x": 1})],
    ),
    ('<tool_call>{"name":"noargs"}</tool_call>', "", [("noargs", {})]),
    ("<tool_call>not json</tool_call>done", "done", []),
    ('text <tool_call>{"name":"x"}', 'text <tool_call>{"name":"x"}', []),
    ("just a normal answer", "just a normal answer", []),
    ('<tool_call id="call_0">{"name":"foo","arguments":{"a":1}}</tool_call>', "", [("foo", {"a": 1})]),
    ('<tool_call|>{"name":"foo","arguments":{}}</tool_call>', "", [("foo", {})]),
    ('<tool_call\n>{"name":"foo","arguments":{}}</tool_call>', "", [("foo", {})]),
    (DS_OPEN + '{"name":"foo","arguments":{}}' + DS_CLOSE, "", [("foo", {})]),
    ('prefix <tool_call id="call_0">\n{}\n</tool_call> suffix', "prefix  suffix", []),
    ("see the <tool_calls> list", "see the <tool_calls> list", []),
    (
        'You can emit a <tool_call id="1"> block to call a tool.',
        'You can emit a <tool_call id="1"> block to call a tool.',
        [],
    ),
    ("<tool_callable>x</tool_call>", "<tool_callable>x</tool_call>", []),
    ("ends with <tool_call", "ends with <tool_call", []),
]


@pytest.mark.parametrize(("text", "content", "expected"), REFERENCE)
def test_reference_cases(impl, tc, text, content, expected):
    parsed = tc.parse(text)
    assert parsed.content == content
    assert calls(parsed) == expected


def test_call_shape(impl, tc):
    (call,) = tc.parse('<tool_call>{"name": "lookup", "arguments": {"q": 1}}</tool_call>').calls
    assert call.to_openai() == {
        "id": call.id,
        "type": "function",
        "function": {"name": "lookup", "arguments": '{"q": 1}'},
    }
    assert call.id.startswith("call_")


def test_ids_are_unique(impl, tc):
    text = '<tool_call>{"name":"a"}</tool_call>' * 50
    ids = [c.id for _ in range(4) for c in tc.parse(text).calls]
    assert len(ids) == 200 and len(set(ids)) == 200


def test_removed_counts_blocks_and_markers(impl, tc):
    assert tc.parse("plain").removed == 0
    assert tc.parse("<tool_call>oops</tool_call>").removed == 1
    text = DS_SEC_OPEN + DS_OPEN + "f" + DS_SEP + '{"a":1}' + DS_CLOSE + DS_SEC_CLOSE
    assert tc.parse(text).removed == 3


def test_attribute_window_is_256_characters(impl, tc):
    body = '{"name":"f"}</tool_call>'
    # the '>' may be the 256th character after '<tool_call' (attribute text of 255), not the 257th
    assert calls(tc.parse("<tool_call" + " " * 255 + ">" + body)) == [("f", {})]
    text = "<tool_call" + " " * 256 + ">" + body
    assert tc.parse(text).content == text and tc.parse(text).calls == []


class TestDeepSeek:
    def test_v31_with_section_wrappers(self, impl, tc):
        text = (
            "Checking."
            + DS_SEC_OPEN
            + DS_OPEN
            + "get_weather"
            + DS_SEP
            + '{"city":"Paris"}'
            + DS_CLOSE
            + DS_OPEN
            + "get_time"
            + DS_SEP
            + '{"tz":"CET"}'
            + DS_CLOSE
            + DS_SEC_CLOSE
            + " Done."
        )
        parsed = tc.parse(text)
        assert parsed.content == "Checking. Done."
        assert calls(parsed) == [("get_weather", {"city": "Paris"}), ("get_time", {"tz": "CET"})]

    def test_v3_typed_body_with_fence(self, impl, tc):
        text = (
            DS_SEC_OPEN
            + "\n"
            + DS_OPEN
            + "function"
            + DS_SEP
            + 'get_weather\n```json\n{"city": "Oslo"}\n```'
            + DS_CLOSE
            + "\n"
            + DS_SEC_CLOSE
        )
        parsed = tc.parse(text)
        assert parsed.content == ""
        assert calls(parsed) == [("get_weather", {"city": "Oslo"})]

    def test_v3_typed_body_without_fence(self, impl, tc):
        parsed = tc.parse(DS_OPEN + "function" + DS_SEP + 'f\n{"a": 2}' + DS_CLOSE)
        assert calls(parsed) == [("f", {"a": 2})]

    def test_section_markers_elsewhere_are_prose(self, impl, tc):
        text = "The marker " + DS_SEC_OPEN + " opens a section and " + DS_SEC_CLOSE + " closes it."
        assert tc.parse(text).content == text

    def test_section_close_only_right_after_a_deepseek_call(self, impl, tc):
        text = DS_OPEN + "f" + DS_SEP + "{}" + DS_CLOSE + " and then " + DS_SEC_CLOSE
        assert tc.parse(text).content == "and then " + DS_SEC_CLOSE
        text = '<tool_call>{"name":"f"}</tool_call>' + DS_SEC_CLOSE
        assert tc.parse(text).content == DS_SEC_CLOSE

    def test_section_opener_whitespace_stays(self, impl, tc):
        text = "a " + DS_SEC_OPEN + "\n" + DS_OPEN + "f" + DS_SEP + "{}" + DS_CLOSE + "\n" + DS_SEC_CLOSE + " b"
        assert tc.parse(text).content == "a \n\n b"

    def test_unterminated_deepseek_call_stays_verbatim(self, impl, tc):
        text = "x " + DS_OPEN + "f" + DS_SEP + '{"a":1}'
        assert tc.parse(text).content == text and tc.parse(text).calls == []


class TestBlockRules:
    def test_close_inside_a_json_string_does_not_end_the_block(self, impl, tc):
        text = '<tool_call>{"name":"echo","arguments":{"s":"</tool_call> is the closer"}}</tool_call>tail'
        parsed = tc.parse(text)
        assert parsed.content == "tail"
        assert calls(parsed) == [("echo", {"s": "</tool_call> is the closer"})]

    def test_escaped_quote_keeps_the_string_open(self, impl, tc):
        text = r'<tool_call>{"name":"q","arguments":{"s":"say \"</tool_call>\" now"}}</tool_call>'
        assert calls(tc.parse(text)) == [("q", {"s": 'say "</tool_call>" now'})]

    def test_stray_quote_falls_back_to_the_first_raw_close(self, impl, tc):
        text = '<tool_call>{"name":"a","arguments":{"q":"it"s"}}</tool_call> then <tool_call>{"name":"b"}</tool_call>'
        parsed = tc.parse(text)
        assert parsed.content == "then"  # the malformed block goes, the rest is not swallowed
        assert calls(parsed) == [("b", {})]

    def test_opener_met_again_makes_the_first_one_prose(self, impl, tc):
        text = "a " + DS_OPEN + '{…} b <tool_call>{"name":"c"}</tool_call>'
        parsed = tc.parse(text)
        assert parsed.content == "a " + DS_OPEN + "{…} b"
        assert calls(parsed) == [("c", {})]

    def test_opener_inside_attribute_text_makes_the_first_one_prose(self, impl, tc):
        text = '<tool_call x <tool_call>{"name":"c"}</tool_call>'
        parsed = tc.parse(text)
        assert parsed.content == "<tool_call x"
        assert calls(parsed) == [("c", {})]

    def test_opener_inside_a_json_string_does_not_interrupt(self, impl, tc):
        text = '<tool_call>{"name":"doc","arguments":{"t":"write <tool_call> to call"}}</tool_call>'
        assert calls(tc.parse(text)) == [("doc", {"t": "write <tool_call> to call"})]

    def test_deepseek_close_does_not_end_a_hermes_block(self, impl, tc):
        text = '<tool_call>{"name":"f","arguments":{"x":"' + DS_CLOSE + '"}}</tool_call>'
        assert calls(tc.parse(text)) == [("f", {"x": DS_CLOSE})]

    def test_nameless_and_non_object_blocks_are_removed(self, impl, tc):
        text = (
            'a<tool_call>{"arguments":{}}</tool_call>b<tool_call>{"name":"  "}</tool_call>'
            'c<tool_call>{"name":"f","arguments":[1]}</tool_call>d<tool_call>[1,2]</tool_call>e'
        )
        parsed = tc.parse(text)
        assert parsed.content == "abcde" and parsed.calls == [] and parsed.removed == 4

    def test_relaxed_json_in_a_block(self, impl, tc):
        text = "<tool_call>{name: 'x', arguments: {toolkits: [\"discord\"],},}</tool_call>"
        text = text.replace("'x'", '"x"')
        assert calls(tc.parse(text)) == [("x", {"toolkits": ["discord"]})]

    def test_never_invents_arguments(self, impl, tc):
        parsed = tc.parse('<tool_call>{name:"x",arguments:{tags:[hi,bye]}}</tool_call>')
        assert parsed.calls == [] and parsed.content == ""


class TestMaxBlock:
    def test_block_over_the_cap_is_text(self, impl, tc):
        body = '{"name":"f","arguments":{"s":"' + "x" * 100 + '"}}'
        text = "<tool_call>" + body + "</tool_call>"
        assert tc.parse(text, max_block=len(body)).calls != []
        over = tc.parse(text, max_block=len(body) - 1)
        assert over.calls == [] and over.content == text and over.removed == 0

    def test_scanning_resumes_after_an_oversized_block(self, impl, tc):
        big = '<tool_call>{"s": "' + "y" * 50 + '"}'
        text = big + ' <tool_call>{"name":"ok"}</tool_call>'
        parsed = tc.parse(text, max_block=20)
        assert calls(parsed) == [("ok", {})]
        assert parsed.content == big

    @pytest.mark.parametrize("bad", [0, -1])
    def test_max_block_must_be_positive(self, impl, tc, bad):
        with pytest.raises(ValueError, match="max_block"):
            tc.parse("x", max_block=bad)

    @pytest.mark.parametrize("bad", ["10", 1.5, True, None])
    def test_max_block_must_be_an_int(self, impl, tc, bad):
        with pytest.raises(TypeError, match="max_block"):
            tc.parse("x", max_block=bad)


@pytest.mark.parametrize("bad", [None, b"<tool_call>", 3, ["a"]])
@pytest.mark.parametrize("keywords", [{}, {"formats": ["hermes"]}, {"options": "not options"}])
def test_parse_rejects_non_str(impl, tc, bad, keywords):
    # the text is checked first, whatever the other arguments
    with pytest.raises(TypeError, match=rf"^parse\(\) expects str, not {type(bad).__name__}$"):
        tc.parse(bad, **keywords)


@pytest.mark.parametrize("text", ['hi <tool_call>{"name":"f"}</tool_call>', " hi "])
def test_str_subclass_is_accepted(impl, tc, text):
    class S(str):
        pass

    parsed = tc.parse(S(text))
    assert parsed.content == "hi" and type(parsed.content) is str
    assert calls(parsed) == ([("f", {})] if "<" in text else [])


def test_parse_gives_a_parsed_like_one_made_by_hand(impl, tc):
    call = tc.ToolCall("f", "{}")
    assert tc.parse(" \n hi \u3000") == tc.Parsed("hi", [], 0, "", 0)  # no markup: the text, stripped
    parsed = tc.parse(' a <tool_call>{"name": "f", "arguments": {}}</tool_call>\u3000')
    assert type(parsed) is tc.Parsed and parsed == tc.Parsed("a", [call], 1, "", 0)
    assert repr(parsed).startswith("Parsed(content='a', calls=[ToolCall(name='f', arguments='{}', id=")
    parsed.content = "changed"  # a dataclass like any other (slots, not frozen)
    assert parsed.content == "changed" and not hasattr(parsed, "__dict__")


def test_non_ascii_text_of_every_width(impl, tc):
    for prefix in ("café ", "Ω≈ ", "emoji 😀 "):
        parsed = tc.parse(prefix + '<tool_call>{"name":"f","arguments":{"v":"' + prefix + '"}}</tool_call>')
        assert parsed.content == prefix.strip()
        assert calls(parsed) == [("f", {"v": prefix})]


# --- the quiet screen: a text without any character that can begin markup is returned at once -----------

QUIET_OPTIONS = [
    {},
    {"code_fences": False},
    {"tools": [{"type": "function", "function": {"name": "get_weather"}}], "schema_guided": False},
    {"tools": [{"type": "function", "function": {"name": "get_weather"}}]},
    {"formats": ["hermes"]},
    {"formats": ["harmony", "harmony_text"]},
]


@pytest.mark.parametrize(
    ("options", "quiet"),
    [
        ({}, ("<", "[")),  # a code fence only keeps markup as text: without markup, it changes nothing
        ({"code_fences": False}, ("<", "[")),
        ({"tools": [{"type": "function", "function": {"name": "f"}}], "schema_guided": False}, ("<", "[", "{")),
        # schema-guided: a call's arguments open with "{", "(" or "<", whatever its markup
        ({"tools": [{"type": "function", "function": {"name": "f"}}]}, ("(", "<", "[", "{")),
        ({"formats": ["hermes"], "code_fences": False}, ("<",)),
        ({"formats": ["harmony_text"], "code_fences": False}, ("<", "f")),  # "to=" found at its "f"
        ({"formats": ["hermes", "json_message"]}, None),  # a whole-message format reads every text
        ({"reasoning_started": True}, None),  # every text is reasoning until </think>
    ],
)
def test_what_a_quiet_text_lacks(tc, options, quiet):
    assert tc.Options(**options).quiet == quiet


@pytest.mark.parametrize("options", QUIET_OPTIONS)
@given(text=st.text(alphabet=" \t\n\r\u3000{}]|｜▁>=/\"'abf:xto.()\\\u2028`", max_size=40))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_quiet_text_is_what_the_scrubber_gives(impl, tc, options, text):
    parsed = tc.parse(text, **options)
    opts = tc.Options(**options)
    if any(char in text for char in opts.quiet):
        return  # not quiet: the scrubber reads it (the other tests)
    scrubber = tc.StreamScrubber(**options)
    content = scrubber.feed(text) + scrubber.flush()
    assert (parsed.content, parsed.calls, parsed.removed, parsed.reasoning) == (
        content.strip(),
        scrubber.calls,
        scrubber.removed,
        scrubber.take_reasoning().strip(),
    )
    assert parsed.content == text.strip()


@pytest.mark.parametrize("wide", ["\u013c", "\u3c3c", "\u3c00", "\U0001f03c", "\U0003c3c3", "｜"])
def test_wide_text_with_characters_sharing_a_byte_with_an_opener(impl, tc, wide):
    # wide text is searched by memchr for one byte of '<' (0x3C): characters holding that byte are not '<'
    call = '<tool_call>{"name": "f", "arguments": {"x": "' + wide + '"}}</tool_call>'
    text = f"{wide * 5} a{wide}b {call}{wide}[{wide}`x`{wide * 3}"
    parsed = tc.parse(text)
    assert [(c.name, json.loads(c.arguments)) for c in parsed.calls] == [("f", {"x": wide})]
    assert parsed.content == f"{wide * 5} a{wide}b {wide}[{wide}`x`{wide * 3}"
    scrubber = tc.StreamScrubber()
    assert scrubber.feed(text) + scrubber.flush() == parsed.content


WEATHER_TOOLS = [{"type": "function", "function": {"name": "get_weather"}}]


@pytest.mark.parametrize(
    ("text", "options", "dialects"),
    [
        ('<tool_call>{"name": "get_weather", "arguments": {}}</tool_call>', {}, ["hermes"]),
        (f'{DS_SEC_OPEN}{DS_OPEN}get_weather{DS_SEP}{{"city": "Oslo"}}{DS_CLOSE}{DS_SEC_CLOSE}', {}, ["deepseek"]),
        ('[TOOL_CALLS]get_weather{"city": "Oslo"}', {}, ["mistral"]),
        ("<tool_call>\n<function=get_weather>\n</function>\n</tool_call>", {}, ["hermes"]),  # Qwen3-Coder in it
        ('{"name": "get_weather", "arguments": {}}', {"tools": WEATHER_TOOLS}, ["bare_json"]),
        ('{"name": "get_weather", "arguments": {}}', {"formats": ["json_message"]}, ["json_message"]),
        # a call that ends a never-closed reasoning span is taken at the end: it keeps its dialect
        ('<think>so <tool_call>{"name": "get_weather", "arguments": {}}</tool_call>', {}, ["hermes"]),
        ('<tool_call>{"name": "get_weather", "arguments": {}}', {"tools": WEATHER_TOOLS}, ["hermes"]),  # unterminated
    ],
)
def test_each_call_says_the_dialect_it_was_read_from(impl, tc, text, options, dialects):
    assert [c.dialect for c in tc.parse(text, **options).calls] == dialects
    scrubber = impl.StreamScrubber(stream_arguments=True, **options)
    for ch in text:
        scrubber.feed(ch)
    scrubber.flush()
    assert [c.dialect for c in scrubber.calls] == dialects  # streamed calls (call events) too


def test_the_dialect_is_not_part_of_a_calls_identity(tc):
    assert tc.ToolCall("f", "{}", dialect="hermes") == tc.ToolCall("f", "{}")


@pytest.mark.parametrize(
    ("text", "options", "malformed"),
    [
        ("<tool_call>not json</tool_call>done", {}, 1),
        ('<tool_call>{"name": "f", "arguments": {</tool_call> and <tool_call>{"name": "g"}</tool_call>', {}, 1),
        ('<tool_call>{"name": "g"}</tool_call>', {}, 0),
        ("<think><tool_call>not json</tool_call></think>ok", {}, 0),  # in reasoning: not the content's
        ('<tool_call>{"name": "other"}</tool_call>', {"tools": WEATHER_TOOLS, "unknown_tools": "drop"}, 1),
        ('<tool_call>{"name": "other"}</tool_call>', {"tools": WEATHER_TOOLS}, 0),  # kept as text
    ],
)
def test_malformed_counts_the_content_blocks_removed_without_a_call(impl, text, options, malformed):
    scrubber = impl.StreamScrubber(**options)
    for ch in text:
        scrubber.feed(ch)
    scrubber.flush()
    assert scrubber.malformed == malformed


def test_an_xml_body_in_tool_call_closes_at_its_closer_whatever_its_quotes(impl):
    # code in a Qwen3-Coder value: a '{' then quotes must not hide </tool_call> as a JSON string would
    text = (
        '<tool_call>\n<function=write_file>\n<parameter=content>\nprint(f"{x}")\n'
        '</parameter>\n</function>\n</tool_call> after <tool_call>{"name": "g", "arguments": {}}</tool_call> end'
    )
    scrubber = impl.StreamScrubber()
    shown = ""
    for k in range(0, len(text), 5):
        shown += scrubber.feed(text[k : k + 5])
        if text[: k + 5].endswith("end"):
            break
    # both calls are taken, and the text after them shown, before the stream ends
    assert [c.name for c in scrubber.calls] == ["write_file", "g"]
    assert shown.startswith(" after ") and "<" not in shown
    assert shown + scrubber.flush() == " after  end"


def test_a_tool_call_is_made_with_a_fresh_id_unless_given_and_stays_frozen():
    import copy
    import dataclasses
    import pickle

    from textcalls.toolcall import ToolCall

    made = [ToolCall("f", "{}"), ToolCall("f", "{}", None), ToolCall(name="f", arguments="{}", id=None)]
    ids = [c.id for c in made]
    assert len(set(ids)) == 3 and all(i.startswith("call_") and len(i) == 27 for i in ids)
    given = ToolCall("f", '{"a": 1}', "functions.f:0", "kimi_k2")
    assert (given.name, given.arguments, given.id, given.dialect) == ("f", '{"a": 1}', "functions.f:0", "kimi_k2")
    with pytest.raises(dataclasses.FrozenInstanceError):
        given.name = "g"  # type: ignore[misc]
    renamed = dataclasses.replace(given, name="g")
    assert (renamed.name, renamed.id, renamed.dialect, given.name) == ("g", "functions.f:0", "kimi_k2", "f")
    for twin in (pickle.loads(pickle.dumps(given)), copy.deepcopy(given)):
        assert (twin.name, twin.arguments, twin.id, twin.dialect) == (given.name, given.arguments, given.id, "kimi_k2")


@pytest.mark.parametrize(
    ("prose", "value"),
    [
        ("a" * 70, "b" * 70),  # ASCII out of 2-byte text (the markers' full-width bars make it so)
        ("é" * 70, "ÿ" * 70),  # Latin-1 out of 2-byte text
        ("中" * 70, "é中" * 35),  # 2-byte out of 2-byte text
        ("😀" + "a" * 70, "b" * 70),  # 4-byte content; ASCII arguments out of 4-byte text
        ("😀" + "a" * 70, "é" * 70),  # Latin-1 out of 4-byte text
        ("😀" + "a" * 70, "中" * 70),  # 2-byte out of 4-byte text
        ("a" * 70, "😀" * 40),  # ASCII content out of 4-byte text
        ("a" * 70, "\U00100000\U00010000" * 40),  # 4-byte whose code points OR past U+10FFFF
    ],
)
def test_content_and_arguments_cut_out_of_wide_text_are_the_strings_written(impl, tc, prose, value):
    # (strings of different kinds never compare equal: a slice left in a wider kind than its characters need
    # would fail these comparisons; isascii reads the string's ASCII flag)
    arguments = json.dumps({"v": value}, ensure_ascii=False)
    text = f"{prose}{DS_SEC_OPEN}{DS_OPEN}function{DS_SEP}f\n```json\n{arguments}\n```{DS_CLOSE}{DS_SEC_CLOSE}"
    parsed = tc.parse(text)
    assert parsed.content == prose
    assert [(c.name, c.arguments) for c in parsed.calls] == [("f", arguments)]
    assert (parsed.content.isascii(), parsed.calls[0].arguments.isascii()) == (prose.isascii(), arguments.isascii())
    for tail in ("\u3000", " "):  # 2-byte text; the text's own kind (ASCII and Latin-1 ones cut from 1-byte text)
        hermes = tc.parse(f'{prose} <tool_call>{{"name": "f", "arguments": {arguments}}}</tool_call>{tail}')
        assert (hermes.content, [c.arguments for c in hermes.calls]) == (prose, [arguments])
        assert (hermes.content.isascii(), hermes.calls[0].arguments.isascii()) == (prose.isascii(), arguments.isascii())


def test_parse_is_one_function_whatever_path_a_call_takes(monkeypatch, tc):
    # With the extension, textcalls.parse makes its default path (no keyword) in C and hands every other
    # call to the Python function it wraps; both read the implementation in use at call time.
    import inspect

    from textcalls import _kernels, _scan, _scan_py

    python = getattr(tc.parse, "__wrapped__", tc.parse)
    assert inspect.signature(tc.parse) == inspect.signature(python)
    assert tc.parse.__doc__ == python.__doc__
    seen = []

    def scan_whole(text, options, truncated=False):
        seen.append((options, truncated))
        return real(text, options, truncated)

    real = _scan_py.scan_whole
    monkeypatch.setattr(_scan, "impl", _scan_py)
    monkeypatch.setattr(_kernels, "impl", _scan_py.KERNELS)
    monkeypatch.setattr(_scan_py, "scan_whole", scan_whole)
    text = 'a <tool_call>{"name": "f", "arguments": {}}</tool_call>'
    default = tc.parse(text)
    assert seen == [(tc.options.DEFAULT, False)]  # the twin, with the default options, not truncated
    for keywords in ({"options": tc.options.DEFAULT}, {"formats": None}, {"max_block": 10**6}, {"code_fences": True}):
        assert tc.parse(text, **keywords) == default
    assert len(seen) == 5
    hermes = tc.Options(formats=["hermes"])
    assert tc.parse(text, options=hermes) == default and seen[-1][0] is hermes
    assert tc.parse(text, truncated=True) == default and seen[-1] == (tc.options.DEFAULT, True)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "  prose  ",
        'a <tool_call>{"name": "f", "arguments": {}}</tool_call> b',
        f'{DS_SEC_OPEN}{DS_OPEN}function{DS_SEP}f\n```json\n{{"x": 1}}\n```{DS_CLOSE}{DS_SEC_CLOSE}',
    ],
)
def test_the_default_path_gives_what_the_keywords_path_gives(impl, tc, text):
    default = tc.parse(text)
    assert tc.parse(text, options=tc.Options()) == default == tc.parse(text, unknown_tools="keep_text")
    # options= an Options, or keywords: one answer (here, the DeepSeek text is text to Hermes alone)
    hermes = tc.parse(text, options=tc.Options(formats=["hermes"]))
    assert hermes == tc.parse(text, formats=["hermes"])
    assert hermes == (default if "tool_call>" in text or "｜" not in text else tc.Parsed(text.strip(), [], 0))
    with pytest.raises(TypeError, match="give one or the other"):
        tc.parse(text, options=tc.Options(), formats=["hermes"])
