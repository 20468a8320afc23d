"""``Options``: the recovery keywords checked once, shared by every scrubber of a request or stream, and
taken by every entry point in place of the keywords (both implementations)."""

import json

import pytest

from textcalls import DIALECTS, Options, parse
from textcalls.chat_bytes import recover_response_bytes
from textcalls.options import DEFAULT

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"days": {"type": "integer"}}},
        },
    }
]
XML = "<tool_call>\n<function=get_weather>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"

BAD = [
    ({"max_block": 0}, ValueError, "max_block must be >= 1, not 0"),
    ({"max_block": True}, TypeError, "max_block must be an int, not bool"),
    ({"unknown_tools": "nope"}, ValueError, "unknown_tools must be one of"),
    ({"calls_in_reasoning": "sometimes"}, ValueError, "calls_in_reasoning must be one of"),
    ({"code_fences": 1}, TypeError, "code_fences must be a bool, not int"),
    ({"reasoning_started": "yes"}, TypeError, "reasoning_started must be a bool, not str"),
    ({"trim_blanks": 1}, TypeError, "trim_blanks must be a bool, not int"),
    ({"prompt_tail": 1}, TypeError, "prompt_tail must be a str, not int"),
    ({"prompt_tail": "x" * 257}, ValueError, "prompt_tail must be at most 256 characters, not 257"),
    ({"formats": "hermes"}, TypeError, "formats must be an iterable of dialect names"),
    ({"formats": ["klingon"]}, ValueError, "unknown dialect(s) ['klingon']"),
    ({"tools": {"name": "x"}}, TypeError, "tools must be a list"),
    ({"tools": [{"name": "x"}]}, ValueError, "tools[0] is not an OpenAI function tool"),
]


@pytest.mark.parametrize(("keywords", "error", "message"), BAD)
def test_each_bad_keyword_is_named_by_every_entry_point(impl, keywords, error, message):
    for build in (
        lambda: Options(**keywords),
        lambda: impl.StreamScrubber(**keywords),
        lambda: parse("x", **keywords),
        lambda: recover_response_bytes(b"{}", native=True, has_tools=True, **keywords),
    ):
        with pytest.raises(error) as info:
            build()
        assert message in str(info.value)


def test_the_same_options_give_the_same_answers(impl):
    options = Options(tools=TOOLS, code_fences=False)
    text = "a\n```\n" + XML + "\n```\nb"
    assert parse(text, options=options) == parse(text, tools=TOOLS, code_fences=False)
    assert parse(text, options=options).calls[0].arguments == '{"days": 3}'  # typed by the schema
    assert parse(text).calls == []  # the default: inside a fence it is text
    one, two = impl.StreamScrubber(options=options), impl.StreamScrubber(options=options)
    assert one.feed(text) + one.flush() == two.feed(text) + two.flush() == "a\n```\n\n```\nb"
    assert [c.arguments for c in one.calls] == [c.arguments for c in two.calls] == ['{"days": 3}']


def test_options_take_the_place_of_the_keywords(impl):
    with pytest.raises(TypeError, match="give one or the other"):
        impl.StreamScrubber(options=Options(), max_block=10)
    with pytest.raises(TypeError, match="give one or the other"):
        parse("x", options=Options(), tools=TOOLS)
    with pytest.raises(TypeError, match=r"options must be a textcalls\.Options, not dict"):
        impl.StreamScrubber(options={"max_block": 10})
    with pytest.raises(TypeError, match=r"options must be a textcalls\.Options, not dict"):
        parse("x", options={"max_block": 10})


def test_defaults_are_shared_and_described():
    assert Options().table is DEFAULT.table and DEFAULT.tools is None and DEFAULT.max_block == 1 << 20
    assert repr(DEFAULT) == "Options()"
    assert repr(Options(code_fences=False, formats=["hermes"])) == "Options(formats=['hermes'], code_fences=False)"
    assert [b.dialect for b in Options(formats=["hermes"]).table.blocks] == ["hermes"] * len(
        Options(formats=["hermes"]).table.blocks
    )
    assert set(DIALECTS) >= {"hermes", "deepseek"}


def test_recover_response_checks_its_options_even_without_choices(impl, tc):
    with pytest.raises(ValueError, match="max_block must be >= 1"):
        tc.recover_response({"choices": []}, native=True, has_tools=True, max_block=0)
    with pytest.raises(TypeError, match="native must be a bool"):
        tc.recover_response({"choices": []}, native=1, has_tools=True)
    response = {"choices": [{"index": 0, "message": {"role": "assistant", "content": XML}, "finish_reason": "stop"}]}
    out = tc.recover_response(response, native=True, has_tools=True, options=Options(tools=TOOLS))
    assert json.loads(out["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]) == {"days": 3}


def test_gateway_helpers_share_one_options(impl, tc):
    machine = tc.ChunkRecovery(native=True, has_tools=True, tools=TOOLS)
    assert isinstance(machine.options, Options) and machine.options.tools is TOOLS
    given = Options(tools=TOOLS)
    assert tc.ChunkRecovery(native=True, has_tools=True, options=given).options is given
    assert tc.SSERecovery(native=True, has_tools=True, options=given).chunks.options is given


def test_options_pickle_and_copy_as_their_keywords_after_use(impl):
    import copy
    import pickle

    options = Options(tools=TOOLS, code_fences=False, max_block=500, formats=["hermes"], stream_arguments=True)
    text = "a\n```\n" + XML + "\n```\nb"
    first = parse(text, options=options)  # the options now hold what the scanners built from them
    for again in (pickle.loads(pickle.dumps(options)), copy.deepcopy(options), copy.copy(options)):
        assert again is not options and repr(again) == repr(options)
        assert (again.max_block, again.formats, again.tools, again.code_fences, again.stream_arguments) == (
            500,
            ["hermes"],
            TOOLS,
            False,
            True,
        )
        assert parse(text, options=again) == first
        assert [c.arguments for c in parse(text, options=again).calls] == ['{"days": 3}']


def test_options_are_read_only(impl):
    # what they imply (the table, the tools' schemas, the quiet characters, the scanners' settings) is built
    # once, so a changed keyword would be half applied: changing one raises instead
    options = Options(code_fences=False)
    parse("a <tool_call>", options=options)
    for name, value in [("code_fences", True), ("max_block", 10), ("tools", TOOLS), ("derived", {})]:
        with pytest.raises(AttributeError, match=f"build another to change '{name}'"):
            setattr(options, name, value)
    with pytest.raises(AttributeError, match="cannot delete 'formats'"):
        del options.formats
    assert options.code_fences is False and options.max_block == DEFAULT.max_block
    text = "```\n" + XML + "\n```"
    assert [c.name for c in parse(text, options=options).calls] == ["get_weather"]  # code_fences=False still
