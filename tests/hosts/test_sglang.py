"""textcalls.sglang, the SGLang tool-call parser, driven through SGLang's real ``FunctionCallParser``.

SGLang is installed with ``--no-deps`` plus the packages its parser and protocol modules import (``.ci/run``);
torch and triton, which its package imports at module level without using them on this path, are import
stubs (``tests/hosts/sglang_stubs.py``). The parser is built as SGLang's serving layer builds it,
``FunctionCallParser(tools=…, tool_call_parser="textcalls", tokenizer=…)`` with the request's protocol
``Tool`` objects, and driven as that layer drives it: ``has_tool_call`` then ``parse_non_stream`` for a whole
output; ``parse_stream_chunk`` per delta, then ``parse_stream_end`` when the stream finishes. The serving
layer itself is not imported: it reaches ``sglang.kernels``, which builds torch operators at import time.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import pytest

from . import sglang_stubs

# Not importorskip: that would also skip a broken install (a dependency missing), which must fail instead.
if not sglang_stubs.install():
    pytest.skip("textcalls.sglang needs SGLang: pip install 'textcalls[sglang]'", allow_module_level=True)

from hypothesis import given
from hypothesis import strategies as st
from sglang.srt.entrypoints.openai.protocol import Tool
from sglang.srt.function_call.base_format_detector import BaseFormatDetector
from sglang.srt.function_call.core_types import ToolCallItem
from sglang.srt.function_call.function_call_parser import FunctionCallParser
from sglang.srt.plugins import GENERAL_PLUGINS_GROUP, load_plugins_by_group

import textcalls.sglang as ts

from ..gateway_support.upstream import DEEPSEEK, HERMES, PLAIN
from ..unit.test_stream_chunks import PIECES, PROPERTY

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}},
    },
}
TIME = {
    "type": "function",
    "function": {"name": "get_time", "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}}},
}
TOOLS = [WEATHER, TIME]

#: dialect -> (model output, content, [(name, arguments)]), read off each text by hand
CASES = {
    "hermes": (
        HERMES,
        "I will check the weather.",
        [("get_weather", {"city": "Paris", "unit": "celsius"}), ("get_time", {"tz": "Europe/Paris"})],
    ),
    "deepseek_v3": (
        DEEPSEEK,
        "Let me look that up.",
        [("get_weather", {"city": "Oslo"}), ("get_time", {"tz": "Europe/Oslo"})],
    ),
    "deepseek_v31": (
        'Sure.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Rome", "days": 2}'
        "<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        "Sure.",
        [("get_weather", {"city": "Rome", "days": 2})],
    ),
    "qwen3_coder": (  # days typed by its schema: the integer 3
        "Checking.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nLima\n</parameter>\n"
        "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
        "Checking.",
        [("get_weather", {"city": "Lima", "days": 3})],
    ),
    "mistral": ('[TOOL_CALLS][{"name": "get_time", "arguments": {"tz": "UTC"}}]', "", [("get_time", {"tz": "UTC"})]),
    "glm": (
        "On it.<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Kyiv</arg_value>\n"
        "<arg_key>days</arg_key>\n<arg_value>5</arg_value>\n</tool_call>",
        "On it.",
        [("get_weather", {"city": "Kyiv", "days": 5})],
    ),
    "kimi_k2": (
        "Tokyo time:<|tool_calls_section_begin|><|tool_call_begin|>functions.get_time:0"
        '<|tool_call_argument_begin|>{"tz": "Asia/Tokyo"}<|tool_call_end|><|tool_calls_section_end|>',
        "Tokyo time:",
        [("get_time", {"tz": "Asia/Tokyo"})],
    ),
    "minimax_m2": (
        'Let me see.\n<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Oslo</parameter>\n'
        '<parameter name="days">1</parameter>\n</invoke>\n</minimax:tool_call>',
        "Let me see.",
        [("get_weather", {"city": "Oslo", "days": 1})],
    ),
    "bare_json": (
        'Let me check.\n{"name": "get_time", "arguments": {"tz": "UTC"}}',
        "Let me check.",
        [("get_time", {"tz": "UTC"})],
    ),
    "plain": (PLAIN, PLAIN, []),
}
POSITION = {"get_weather": 0, "get_time": 1}


def sglang_tools(tools=TOOLS):
    """The request's tools as SGLang's protocol objects (as its request models validate them)."""
    return [Tool.model_validate(tool) for tool in tools]


def make_parser(tools=TOOLS, name=ts.NAME):
    """A ``FunctionCallParser`` as SGLang's serving layer makes one per choice."""
    return FunctionCallParser(tools=sglang_tools(tools), tool_call_parser=name, tokenizer=None)


def whole(text, **kwargs):
    """The serving layer's non-streamed path: ``(content, calls)``, the text itself when there is no call."""
    parser = make_parser(**kwargs)
    if not parser.has_tool_call(text):
        return text, []
    return parser.parse_non_stream(text)


def stream(pieces, **kwargs):
    """The serving layer's streamed path: ``(normal texts, ToolCallItems)``, the last text from the end of stream."""
    parser = make_parser(**kwargs)
    texts, items = [], []
    for piece in pieces:
        text, calls = parser.parse_stream_chunk(piece)
        texts.append(text)
        items += calls
    text, calls = parser.parse_stream_end()
    return [*texts, text], items + calls


def test_registered():
    assert FunctionCallParser.ToolCallParserEnum[ts.NAME] is ts.TextcallsDetector
    assert type(make_parser().detector) is ts.TextcallsDetector


@pytest.mark.parametrize("dialect", CASES)
def test_whole_output(impl, tc, dialect):
    """Each call is one ToolCallItem whose tool_index is the tool's position in the request, as SGLang's own
    detectors give it; the content is parse()'s."""
    text, content, expected = CASES[dialect]
    got_content, items = whole(text)
    assert got_content == content
    assert [(c.tool_index, c.name, json.loads(c.parameters)) for c in items] == [
        (POSITION[name], name, arguments) for name, arguments in expected
    ]
    parsed = tc.parse(text, tools=TOOLS, formats=ts.FORMATS)
    assert got_content == parsed.content
    assert [(c.name, c.parameters) for c in items] == [(c.name, c.arguments) for c in parsed.calls]


@pytest.mark.parametrize("dialect", CASES)
def test_stream_in_deltas(impl, dialect):
    """Three-character deltas: each call is one ToolCallItem, name and arguments whole, tool_index counting the
    stream's calls from 0 (the index SGLang streams it under); the text never shows markup."""
    text, content, expected = CASES[dialect]
    texts, items = stream([text[i : i + 3] for i in range(0, len(text), 3)])
    assert "".join(texts).strip() == content
    assert [(c.tool_index, c.name, json.loads(c.parameters)) for c in items] == [
        (i, name, arguments) for i, (name, arguments) in enumerate(expected)
    ]


def test_held_tail_comes_at_the_end(impl):
    """A possible opener is held, never shown in part, and given back by the end-of-stream hook."""
    texts, items = stream(["Answer: 42 ", "<tool_", "ca"])
    assert texts == ["Answer: 42 ", "", "", "<tool_ca"]
    assert items == []


def test_call_completed_by_the_end_of_stream(impl):
    """Mistral's block ends where its JSON ends: a call that ends the output comes with parse_stream_end."""
    texts, items = stream(['[TOOL_CALLS][{"name": "get_time", ', '"arguments": {"tz": "UTC"}}]'])
    assert texts == ["", "", ""]
    assert items == [ToolCallItem(tool_index=0, name="get_time", parameters='{"tz": "UTC"}')]


SPLIT_TEXTS = [case[0] for case in CASES.values()]


@st.composite
def split_output(draw):
    """A model output mixing the cases' texts and pieces of markup, and a split of it into deltas."""
    parts = draw(st.lists(st.one_of(st.sampled_from(SPLIT_TEXTS), PIECES, st.text(max_size=4)), max_size=6))
    text = "".join(parts)
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=12)))
    bounds = [0, *cuts, len(text)]
    return text, [text[a:b] for a, b in itertools.pairwise(bounds) if b > a]


@PROPERTY
@given(split_output())
def test_any_split_matches_parse(impl, tc, case):
    """For any split, the normal texts put together are parse()'s content (once trimmed) and the calls are
    parse()'s, indexed 0.. in order, whole; the non-streamed path gives the same content and calls."""
    text, pieces = case
    parsed = tc.parse(text, tools=TOOLS, formats=ts.FORMATS)
    texts, items = stream(pieces)
    assert "".join(texts).strip() == parsed.content
    assert [(c.tool_index, c.name, c.parameters) for c in items] == [
        (i, c.name, c.arguments) for i, c in enumerate(parsed.calls)
    ]
    content, calls = whole(text)
    assert content == (parsed.content if parsed.removed else text)
    assert [(c.name, c.parameters) for c in calls] == [(c.name, c.arguments) for c in parsed.calls]


BARE_CALLS = [
    '{"name": "get_time", "arguments": {"tz": "UTC"}}',
    '[{"name": "get_weather", "arguments": {"city": "Oslo"}}]',
    '```json\n{"name": "get_time", "arguments": {}}\n```',
]


@st.composite
def bare_output(draw):
    """Text, blanks, then a bare JSON call (alone, fenced, or two on a line) and maybe blanks after it."""
    before = "".join(draw(st.lists(st.one_of(PIECES, st.sampled_from(["\n", "   ", "\t"])), max_size=4)))
    after = draw(st.sampled_from(["", "\n", " ", "; " + BARE_CALLS[0]]))
    return before + draw(st.sampled_from(BARE_CALLS)) + after


@PROPERTY
@given(st.one_of(split_output().map(lambda case: case[0]), bare_output()))
def test_has_tool_call_misses_nothing(impl, tc, text):
    """has_tool_call (which has no tools to go by) is true whenever recovery would change the text."""
    if tc.parse(text, tools=TOOLS, formats=ts.FORMATS).removed:
        assert make_parser().has_tool_call(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Paris is sunny today, 24 degrees.", False),  # no character a call's markup or arguments begin with
        (PLAIN, True),  # a "<": a schema-guided call's key/value markup may begin with it (the default)
        ("I know: [1, 2] {x}", True),  # a "{": a schema-guided call's arguments may
        ('<tool_call>{"name": "x"}</tool_call>', True),
        ('  {"name": "get_time"}', True),
        ('Here:\n   [{"name": "get_time"}]', True),
        ("```json\n{}\n```", True),
    ],
)
def test_has_tool_call(text, expected):
    assert make_parser().has_tool_call(text) is expected


def test_has_tool_call_without_schema_guided_recovery(monkeypatch):
    monkeypatch.setattr(ts.TextcallsDetector, "recovery", {**ts.TextcallsDetector.recovery, "schema_guided": False})
    for text in (PLAIN, "<think>Maybe get_time.</think>It is noon.", "I know: [1, 2] {x}"):
        assert make_parser().has_tool_call(text) is False


def test_reasoning_is_left_to_sglang(impl):
    """<think> is SGLang's reasoning parser's: it passes as written, whole and streamed."""
    text = "<think>Maybe get_time.</think>It is noon."
    assert whole(text) == (text, [])
    texts, items = stream([text[:9], text[9:]])
    assert "".join(texts) == text
    assert items == []


def test_tool_not_offered_stays_text(impl, monkeypatch):
    """A call of a tool the request does not offer stays text, unless SGLANG_FORWARD_UNKNOWN_TOOLS is on:
    then it is taken, with tool_index -1 as SGLang's own detectors give it."""
    text = 'Done.<tool_call>{"name": "delete_all", "arguments": {}}</tool_call>'
    assert whole(text) == (text, [])
    texts, items = stream([text[:10], text[10:]])
    assert "".join(texts) == text
    assert items == []
    monkeypatch.setenv("SGLANG_FORWARD_UNKNOWN_TOOLS", "1")
    assert whole(text) == ("Done.", [ToolCallItem(tool_index=-1, name="delete_all", parameters="{}")])


def test_values_typed_by_the_request_schemas(impl):
    """Qwen3-Coder's string values are typed by the schema of the request's tool (SGLang's Tool objects)."""
    text = "<tool_call>\n<function=get_weather>\n<parameter=days>\n4\n</parameter>\n</function>\n</tool_call>"
    untyped = [{"type": "function", "function": {"name": "get_weather"}}]
    assert whole(text)[1][0].parameters == '{"days": 4}'
    assert whole(text, tools=untyped)[1][0].parameters == '{"days": "4"}'


def test_without_tools_sglang_passes_the_text(impl):
    """A request without tools is not recovered: FunctionCallParser passes the text as the model wrote it."""
    text = CASES["hermes"][0]
    assert whole(text, tools=[]) == (text, [])
    assert stream([text], tools=[]) == ([text, ""], [])


def test_no_structural_tag():
    """No grammar stands for every dialect: "auto" is not constrained, even with a strict tool, and "required"
    gets SGLang's JSON array constraint, which SGLang's own JSON parser reads."""
    strict = [{**TIME, "function": {**TIME["function"], "strict": True}}]
    assert make_parser().get_structure_constraint("auto") is None
    assert make_parser(tools=strict).get_structure_constraint("auto") is None
    kind, _ = make_parser().get_structure_constraint("required")
    assert kind == "json_schema"
    assert not make_parser().owns_tool_format()


@pytest.fixture
def registry(monkeypatch):
    """SGLang's registry, restored after the test."""
    monkeypatch.setattr(FunctionCallParser, "ToolCallParserEnum", dict(FunctionCallParser.ToolCallParserEnum))
    return FunctionCallParser.ToolCallParserEnum


def test_register_with_options(impl, registry):
    cls = ts.register("textcalls_drop", unknown_tools="drop")
    assert registry["textcalls_drop"] is cls
    assert issubclass(cls, ts.TextcallsDetector)
    text = 'Done.<tool_call>{"name": "delete_all", "arguments": {}}</tool_call>'
    assert whole(text, name="textcalls_drop") == ("Done.", [])
    assert ts.register("textcalls_again") is ts.TextcallsDetector


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        ((3,), {}, TypeError, "name must be a str"),
        (("",), {}, ValueError, "name must not be empty"),
        ((), {"tools": []}, TypeError, "each request"),
        ((), {"unknown_tools": "maybe"}, ValueError, "unknown_tools"),
        ((), {"max_blok": 3}, TypeError, "max_blok"),
    ],
)
def test_register_rejects_bad_input(registry, args, kwargs, error, match):
    before = dict(registry)
    with pytest.raises(error, match=match):
        ts.register(*args, **kwargs)
    assert registry == before


def test_entry_point():
    """SGLang's plugin loader finds ``register`` under its entry point group (pyproject.toml)."""
    plugins = load_plugins_by_group(GENERAL_PLUGINS_GROUP)
    assert plugins["textcalls"][0] is ts.register


#: Run in a fresh interpreter: SGLang hidden from the import system, as if not installed.
WITHOUT_SGLANG = """
import sys

class Hide:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "sglang":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, Hide())
import textcalls.sglang
"""


def test_import_without_sglang():
    code = WITHOUT_SGLANG
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "ImportError: textcalls.sglang needs SGLang: pip install 'textcalls[sglang]'" in done.stderr


@pytest.mark.parametrize(
    ("target", "value", "match"),
    [
        ("finish", lambda self: None, r"BaseFormatDetector\.finish takes \(\), expected \(tools\)"),
        (
            "parse_streaming_increment",
            lambda self, text, tools: None,
            (r"BaseFormatDetector\.parse_streaming_increment takes \(text, tools\), expected \(new_text, tools\)"),
        ),
        ("has_tool_call", None, r"BaseFormatDetector\.has_tool_call takes nothing"),
    ],
)
def test_unknown_api(monkeypatch, target, value, match):
    """On an SGLang whose interface differs, the check names that SGLang's version and what differs."""
    monkeypatch.setattr(BaseFormatDetector, target, value)
    with pytest.raises(RuntimeError, match=rf"API of SGLang {ts._sglang_version()}: {match}"):
        ts._check_api()


def test_unknown_api_registry(monkeypatch):
    monkeypatch.delattr(FunctionCallParser, "ToolCallParserEnum")
    with pytest.raises(RuntimeError, match=r"FunctionCallParser has no ToolCallParserEnum dict \(tested with SGLang"):
        ts._check_api()
