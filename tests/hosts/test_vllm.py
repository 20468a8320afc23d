"""textcalls.vllm, the vLLM tool parser, driven through vLLM's own code.

The parser is looked up by name in vLLM's ``ToolParserManager`` and composed by its ``ParserManager`` into the
parser its serving layer uses; outputs go through that parser's ``parse`` (non-streamed, as chat completions,
Responses and Anthropic messages use it) and through ``ChatStreamProcessor`` / ``parse_delta`` (streamed, as
their streaming paths use it), with vLLM's own request objects. No model runs and no GPU is needed.

vLLM is installed with ``pip install --no-deps`` and the few packages its parser and protocol modules import
(``.ci/run`` lists them). Where torch is not installed, ``tests/hosts/torch_stub.py`` stands in for it: vLLM's
modules import torch at module level, and nothing exercised here uses it.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.abc
import importlib.metadata
import importlib.util
import itertools
import sys
import types

import pytest

from . import torch_stub

if importlib.util.find_spec("vllm") is not None:
    torch_stub.install()
pytest.importorskip("vllm", reason="textcalls.vllm needs vLLM: pip install 'textcalls[vllm]'")

from hypothesis import given
from hypothesis import strategies as st
from vllm.entrypoints.anthropic.protocol import AnthropicMessagesRequest
from vllm.entrypoints.anthropic.serving import AnthropicServingMessages
from vllm.entrypoints.common.cli_args import init_parser_plugin, validate_api_server_args
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
from vllm.entrypoints.openai.chat_completion.stream_processor import ChatStreamProcessor
from vllm.entrypoints.openai.responses.protocol import ResponsesRequest
from vllm.parser import ParserManager
from vllm.parser.abstract_parser import DelegatingParser
from vllm.plugins import DEFAULT_PLUGINS_GROUP, load_plugins_by_group
from vllm.tool_parsers import ToolParser, ToolParserManager

import textcalls
import textcalls.vllm as tv
from textcalls.vllm import FORMATS, TESTED_WITH, TextcallsToolParser, register

from ..unit.test_stream_chunks import PROPERTY

#: the entry point line pyproject.toml declares under [project.entry-points."vllm.general_plugins"]
ENTRY_POINT = ("textcalls", "textcalls.vllm:register")

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            },
        },
    },
    {
        "type": "function",
        "function": {"name": "search", "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}},
    },
]
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
PROMPT_IDS = [0]  # vLLM enters its tool phase only once it has seen the prompt's ids

B, S = "\uff5c", "\u2581"  # DeepSeek's full-width bar and its ▁
WEATHER = ("get_weather", '{"city": "Paris"}')
#: name -> (model output, expected content, expected calls as (name, arguments))
CASES = {
    "hermes": (
        'Let me check.<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>',
        "Let me check.",
        [WEATHER],
    ),
    "hermes_two": (
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>\n'
        '<tool_call>{"name": "search", "arguments": {"query": "a < b"}}</tool_call>',
        "",
        [WEATHER, ("search", '{"query": "a < b"}')],
    ),
    "deepseek_v31": (
        f"Sure.<{B}tool{S}calls{S}begin{B}><{B}tool{S}call{S}begin{B}>get_weather<{B}tool{S}sep{B}>"
        f'{{"city": "Paris"}}<{B}tool{S}call{S}end{B}><{B}tool{S}calls{S}end{B}>',
        "Sure.",
        [WEATHER],
    ),
    "deepseek_v3": (
        f"<{B}tool{S}calls{S}begin{B}><{B}tool{S}call{S}begin{B}>function<{B}tool{S}sep{B}>get_weather\n"
        f'```json\n{{"city": "Paris"}}\n```<{B}tool{S}call{S}end{B}><{B}tool{S}calls{S}end{B}>',
        "",
        [WEATHER],
    ),
    "qwen3_coder": (  # "days" typed by the request's schema
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
        "",
        [("get_weather", '{"city": "Paris", "days": 3}')],
    ),
    "mistral_v11": (
        '[TOOL_CALLS]get_weather{"city": "Paris", "days": 2}',
        "",
        [("get_weather", '{"city": "Paris", "days": 2}')],
    ),
    "mistral_v7": (
        '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "search", "arguments": {"query": "x"}}]',
        "",
        [WEATHER, ("search", '{"query": "x"}')],
    ),
    "kimi_k2": (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
        '{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>',
        "",
        [WEATHER],
    ),
    "glm": (
        "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>"
        "<arg_key>days</arg_key><arg_value>3</arg_value></tool_call>",
        "",
        [("get_weather", '{"city": "Paris", "days": 3}')],
    ),
    "minimax_m2": (
        '<minimax:tool_call><invoke name="get_weather"><parameter name="city">Paris</parameter></invoke></minimax:tool_call>',
        "",
        [WEATHER],
    ),
    "think_is_content": (  # no --reasoning-parser: <think> is the model's text, as vLLM leaves it
        '<think>plan</think>Sure.<tool_call>{"name": "search", "arguments": {"query": "q"}}</tool_call>',
        "<think>plan</think>Sure.",
        [("search", '{"query": "q"}')],
    ),
    "tool_not_offered": (
        'Hm <tool_call>{"name": "delete_all", "arguments": {}}</tool_call>',
        'Hm <tool_call>{"name": "delete_all", "arguments": {}}</tool_call>',
        [],
    ),
    "prose": ("if a < b and x<tool then <b>bold</b>", "if a < b and x<tool then <b>bold</b>", []),
}


def chat_request(**kwargs):
    return ChatCompletionRequest(model="m", messages=MESSAGES, **{"tools": TOOLS, **kwargs})


def parser_class(name=tv.NAME, reasoning=None, tokenizer=None):
    """The parser class vLLM's serving layer composes for ``--tool-call-parser name``."""
    return ParserManager.get_parser(
        tool_parser_name=name, reasoning_parser_name=reasoning, enable_auto_tools=True, tokenizer=tokenizer
    )


def whole(text, request, cls=None, tokenizer=None):
    """``(reasoning, content, [(name, arguments, id)])`` of a non-streamed output, as vLLM's parser gives it."""
    cls = cls or parser_class()
    reasoning, content, calls = cls(tokenizer, request.tools).parse(text, request, enable_auto_tools=True)
    return reasoning, content, [(c.name, c.arguments, c.id) for c in calls or ()]


def streamed(pieces, request, cls=None, tokenizer=None, ids=None):
    """``(reasoning, content, [DeltaToolCall], finish_reason)`` of a stream of ``pieces``, through vLLM's
    ``ChatStreamProcessor`` (the last piece carries ``finish_reason="stop"``); ``ids``: each piece's token ids."""
    cls = cls or parser_class()
    processor = ChatStreamProcessor(request, cls(tokenizer, request.tools), enable_auto_tools=True, parser_cls=cls)
    reasoning, content, calls, finish = [], [], [], None
    for k, piece in enumerate(pieces):
        last = k == len(pieces) - 1
        step = processor.step(piece, ids[k] if ids else [0], "stop" if last else None, PROMPT_IDS)
        if step.delta is not None:
            reasoning.append(step.delta.reasoning or "")
            content.append(step.delta.content or "")
            calls.extend(step.delta.tool_calls)
        finish = step.finish_reason
    return "".join(reasoning), "".join(content), calls, finish


def pairs(calls):
    return [(c[0], c[1]) for c in calls]


def delta_pairs(deltas):
    return [(d.function.name, d.function.arguments) for d in deltas]


# -- registration -------------------------------------------------------------------------------------


def test_registered_by_name_and_composed_by_vllm():
    assert ToolParserManager.get_tool_parser("textcalls") is TextcallsToolParser
    assert "textcalls" in ToolParserManager.list_registered()
    cls = parser_class()
    assert issubclass(cls, DelegatingParser)
    assert cls.tool_parser_cls is TextcallsToolParser


def test_tool_parser_plugin_option_imports_and_registers(monkeypatch):
    """``--tool-parser-plugin textcalls.vllm``: vLLM's own option handling imports the module, which registers
    the parser, and ``--tool-call-parser textcalls`` then passes vLLM's validation."""
    monkeypatch.delitem(sys.modules, "textcalls.vllm")
    monkeypatch.delattr(textcalls, "vllm")
    monkeypatch.setattr(ToolParserManager, "tool_parsers", dict(ToolParserManager.tool_parsers))
    del ToolParserManager.tool_parsers["textcalls"]
    args = argparse.Namespace(
        tool_parser_plugin="textcalls.vllm",
        reasoning_parser_plugin="",
        enable_auto_tool_choice=True,
        tool_call_parser="textcalls",
        structured_outputs_config=types.SimpleNamespace(reasoning_parser=None),
    )
    with pytest.raises(KeyError, match="invalid tool call parser: textcalls"):
        validate_api_server_args(args)
    init_parser_plugin(args)
    validate_api_server_args(args)
    fresh = ToolParserManager.get_tool_parser("textcalls")
    assert fresh is not TextcallsToolParser  # the module was imported again
    assert fresh is sys.modules["textcalls.vllm"].TextcallsToolParser


def test_entry_point_is_declared():
    """The installed textcalls declares the ``vllm.general_plugins`` entry point (pyproject.toml)."""
    found = [
        (ep.name, ep.value)
        for ep in importlib.metadata.entry_points(group=DEFAULT_PLUGINS_GROUP)
        if ep.dist is not None and ep.dist.name == "textcalls"
    ]
    assert found == [ENTRY_POINT]


def test_vllm_loads_the_entry_point(tmp_path, monkeypatch):
    """vLLM's plugin loader finds the entry point and calls it: the parser is registered again."""
    info = tmp_path / "textcalls_vllm_entry_point-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: textcalls-vllm-entry-point\nVersion: 0\n")
    (info / "entry_points.txt").write_text(f"[{DEFAULT_PLUGINS_GROUP}]\n{ENTRY_POINT[0]} = {ENTRY_POINT[1]}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("VLLM_PLUGINS", raising=False)
    monkeypatch.setattr(ToolParserManager, "tool_parsers", dict(ToolParserManager.tool_parsers))
    del ToolParserManager.tool_parsers["textcalls"]
    plugins = load_plugins_by_group(DEFAULT_PLUGINS_GROUP)
    assert plugins["textcalls"] is register
    plugins["textcalls"]()  # what vllm.plugins.load_general_plugins does with each
    assert ToolParserManager.get_tool_parser("textcalls") is TextcallsToolParser


def test_register_with_options(monkeypatch, impl):
    monkeypatch.setattr(ToolParserManager, "tool_parsers", dict(ToolParserManager.tool_parsers))
    cls = register("textcalls_accept", unknown_tools="accept")
    assert ToolParserManager.get_tool_parser("textcalls_accept") is cls
    assert issubclass(cls, TextcallsToolParser) and cls is not TextcallsToolParser
    text = CASES["tool_not_offered"][0]
    _, content, calls = whole(text, chat_request(), parser_class("textcalls_accept"))
    assert (content, pairs(calls)) == ("Hm", [("delete_all", "{}")])
    assert register() is TextcallsToolParser  # the defaults: the class itself


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        ((3,), {}, TypeError, "name must be a str"),
        (("",), {}, ValueError, "name must not be empty"),
        (("x",), {"tools": TOOLS}, TypeError, "tools come from each request"),
        (("x",), {"unknown_tools": "bogus"}, ValueError, "unknown_tools"),
        (("x",), {"formats": ["nonesuch"]}, ValueError, "unknown dialect"),
    ],
)
def test_register_rejects_bad_input(monkeypatch, args, kwargs, error, match):
    monkeypatch.setattr(ToolParserManager, "tool_parsers", dict(ToolParserManager.tool_parsers))
    with pytest.raises(error, match=match):
        register(*args, **kwargs)
    assert "x" not in ToolParserManager.tool_parsers


def test_unknown_api_names_the_vllm_version(monkeypatch):
    version = importlib.metadata.version("vllm")
    assert version == TESTED_WITH  # the release these tests ran on; a new one: run them, then update

    def streaming(self, delta_text, request):  # an interface this module does not know
        return None

    monkeypatch.setattr(ToolParser, "extract_tool_calls_streaming", streaming)
    with pytest.raises(RuntimeError, match=rf"vLLM {version}: ToolParser.extract_tool_calls_streaming takes"):
        tv._check_api()
    monkeypatch.undo()
    monkeypatch.delattr(DelegatingParser, "_flush_engine_parsers")
    with pytest.raises(RuntimeError, match=rf"vLLM {version}: .*end-of-stream hook.*tested with vLLM {TESTED_WITH}"):
        tv._check_api()


class _NotInstalled(importlib.abc.MetaPathFinder):
    """Finds ``vllm`` nowhere: ``import vllm`` fails as it does where vLLM is not installed."""

    def find_spec(self, fullname, path, target=None):
        if fullname == "vllm":
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def test_import_without_vllm_says_how_to_install(monkeypatch):
    for name in [m for m in sys.modules if m == "vllm" or m.startswith(("vllm.", "textcalls.vllm"))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delattr(textcalls, "vllm")
    monkeypatch.setattr(sys, "meta_path", [_NotInstalled(), *sys.meta_path])
    with pytest.raises(ImportError, match=r"needs vLLM: pip install 'textcalls\[vllm\]'"):
        importlib.import_module("textcalls.vllm")


# -- whole outputs (chat completions, Responses, Anthropic messages) -----------------------------------


@pytest.mark.parametrize("name", CASES)
def test_whole_output(impl, name):
    text, content, calls = CASES[name]
    reasoning, got_content, got_calls = whole(text, chat_request())
    assert reasoning is None
    assert got_content == (content or None)
    assert pairs(got_calls) == calls
    expected = textcalls.parse(text, tools=TOOLS, formats=FORMATS)
    assert (got_content or "", pairs(got_calls)) == (
        expected.content if expected.removed else text,
        [(c.name, c.arguments) for c in expected.calls],
    )
    assert all(c[2] for c in got_calls) and len({c[2] for c in got_calls}) == len(got_calls)


def test_ids_written_by_the_model_are_kept(impl):
    _, _, calls = whole(CASES["kimi_k2"][0], chat_request())
    assert calls == [(*WEATHER, "functions.get_weather:0")]
    _, _, calls = whole(CASES["hermes"][0], chat_request())
    assert calls[0][2].startswith("call_")


@pytest.mark.parametrize("request_kwargs", [{"tool_choice": "none"}, {"tools": None}])
def test_requests_without_tool_calls_pass_verbatim(impl, request_kwargs):
    """``tool_choice="none"``, or no tools: the text as the model wrote it, streamed or not."""
    text = CASES["hermes"][0] + " x<tool"
    request = chat_request(**request_kwargs)
    assert whole(text, request) == (None, text, [])
    _, content, calls, _ = streamed([text[i : i + 5] for i in range(0, len(text), 5)], request)
    assert (content, calls) == (text, [])


def test_responses_api(impl):
    """``/v1/responses``: its function tools (``FunctionTool``) type the values; other kinds are left out."""
    tools = [
        {"type": "function", "name": "get_weather", "parameters": TOOLS[0]["function"]["parameters"]},
        {"type": "web_search"},
    ]
    request = ResponsesRequest(model="m", input="weather?", tools=tools)
    text = "Checking.\n" + CASES["qwen3_coder"][0]
    expected = ("Checking.", [("get_weather", '{"city": "Paris", "days": 3}')])
    _, content, calls = whole(text, request)
    assert (content, pairs(calls)) == expected
    parser = parser_class()(None, request.tools)  # the Responses stream calls parse_delta itself
    out = [
        parser.parse_delta(text[i : i + 4], [0], request, PROMPT_IDS, finished=i + 4 >= len(text))
        for i in range(0, len(text), 4)
    ]
    deltas = [d for d in out if d is not None]
    assert "".join(d.content or "" for d in deltas).strip() == expected[0]
    assert delta_pairs(itertools.chain.from_iterable(d.tool_calls for d in deltas)) == expected[1]
    only_other_tools = ResponsesRequest(model="m", input="weather?", tools=tools[1:])
    assert whole(text, only_other_tools) == (None, text, [])


def test_anthropic_messages(impl):
    """``/v1/messages`` is served as the chat completion vLLM converts it to: the same parser."""
    anthropic = AnthropicMessagesRequest(
        model="m",
        max_tokens=64,
        messages=MESSAGES,
        tools=[{"name": "get_weather", "input_schema": TOOLS[0]["function"]["parameters"]}],
    )
    request = AnthropicServingMessages.to_chat_completion_request(anthropic)
    _, content, calls = whole(CASES["glm"][0], request)
    assert (content, pairs(calls)) == (None, CASES["glm"][2])


# -- streams ------------------------------------------------------------------------------------------

PIECES = st.sampled_from(
    [text for text, _, _ in CASES.values()]
    + ["hi ", "a < b ", "<", "<tool", "_call>", "</tool_call>", "[TOOL_CALLS]", "\n", "`", "```\n", f"<{B}tool"]
)


@st.composite
def split_text(draw):
    text = "".join(draw(st.lists(st.one_of(PIECES, st.text(max_size=4)), min_size=1, max_size=6)))
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=12)))
    bounds = [0, *cuts, len(text)]
    return text, [text[a:b] for a, b in itertools.pairwise(bounds) if b > a] or [""]


@PROPERTY
@given(split_text())
def test_any_split_matches_parse_of_the_whole(impl, case):
    """Streamed in any deltas through vLLM's stream processor: the content and calls equal ``parse``'s of
    the whole text (and vLLM's non-streamed result); each call is one delta entry with its index, counting
    from 0, an id, its name and whole arguments; the finish reason is ``tool_calls`` when calls came."""
    text, pieces = case
    request = chat_request(stream=True)
    reasoning, content, deltas, finish = streamed(pieces, request)
    expected = textcalls.parse(text, tools=TOOLS, formats=FORMATS)
    assert content.strip() == expected.content
    if not expected.removed:
        assert content == text
    assert delta_pairs(deltas) == [(c.name, c.arguments) for c in expected.calls]
    assert [d.index for d in deltas] == list(range(len(deltas)))
    assert all(d.id and d.type == "function" for d in deltas)
    made = [d.id for d in deltas if d.id.startswith("call_")]  # the others are ids the model wrote (Kimi's)
    assert len(set(made)) == len(made)
    assert finish == ("tool_calls" if deltas else "stop")
    assert reasoning == expected.reasoning == ""
    _, whole_content, whole_calls = whole(text, request)
    assert ((whole_content or "").strip(), pairs(whole_calls)) == (content.strip(), delta_pairs(deltas))


def test_calls_are_emitted_as_their_blocks_complete(impl):
    text = CASES["hermes_two"][0] + " after"
    cut = text.index("\n") + 1
    request = chat_request(stream=True)
    processor = ChatStreamProcessor(
        request, parser_class()(None, request.tools), enable_auto_tools=True, parser_cls=parser_class()
    )
    first = processor.step(text[:cut], [0], None, PROMPT_IDS).delta
    assert delta_pairs(first.tool_calls) == [WEATHER] and first.tool_calls[0].index == 0
    second = processor.step(text[cut:], [0], None, PROMPT_IDS).delta
    assert delta_pairs(second.tool_calls) == [CASES["hermes_two"][2][1]] and second.tool_calls[0].index == 1
    assert second.content == " after"


TAIL = "a < b and x<tool"


def test_held_tail_is_delivered_when_the_stream_finishes(impl):
    pieces = list(TAIL)
    _, content, deltas, finish = streamed(pieces, chat_request(stream=True))
    assert (content, deltas, finish) == (TAIL, [], "stop")


def test_vllm_flushes_only_parsers_declaring_engine_based_streaming(impl, monkeypatch):
    """Why the parser declares ``engine_based_streaming``: vLLM calls ``finish_streaming`` on no other
    tool parser, so without the flag the held tail of a stream is lost."""

    class Undeclared(TextcallsToolParser):
        engine_based_streaming = False

    monkeypatch.setitem(ToolParserManager.tool_parsers, "textcalls_undeclared", Undeclared)
    _, content, _, _ = streamed(list(TAIL), chat_request(stream=True), parser_class("textcalls_undeclared"))
    assert content == "a < b and x"


# -- with vLLM's reasoning parsers ---------------------------------------------------------------------

SPECIAL = ["<think>", "</think>", "<tool_call>", "</tool_call>"]
THINKING = '<think>plan</think>Sure.<tool_call>{"name": "search", "arguments": {"query": "q"}}</tool_call> a < b x<tool'


def tokens(text):
    """``text`` as tokens: the special ones whole, every other character one token."""
    out, i = [], 0
    while i < len(text):
        special = next((s for s in SPECIAL if text.startswith(s, i)), text[i])
        out.append(special)
        i += len(special)
    return out


@pytest.fixture(scope="module")
def tokenizer():
    """A small real tokenizer (Hugging Face ``tokenizers``, no download) whose vocabulary has the thinking
    tokens vLLM's reasoning parsers look up, and every character of ``THINKING``."""
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    vocab = {"<unk>": 0}
    for token in SPECIAL + sorted(set(THINKING)):
        vocab.setdefault(token, len(vocab))
    model = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<unk>"))
    return transformers.PreTrainedTokenizerFast(tokenizer_object=model, additional_special_tokens=SPECIAL)


@pytest.mark.parametrize("reasoning_parser", ["deepseek_r1", "qwen3"])  # a legacy one, an engine-based one
@pytest.mark.parametrize("group", [1, 3, 7])
def test_reasoning_is_vllms(impl, tokenizer, reasoning_parser, group):
    """With ``--reasoning-parser``, vLLM takes the thinking out first: this parser sees only the content,
    and the held tail still comes out at the end whichever way vLLM drives the stream."""
    cls = parser_class(reasoning=reasoning_parser, tokenizer=tokenizer)
    request = chat_request(stream=True)
    reasoning, content, calls = whole(THINKING, request, cls, tokenizer)
    assert (reasoning, content, pairs(calls)) == ("plan", "Sure. a < b x<tool", [("search", '{"query": "q"}')])
    toks = tokens(THINKING)
    groups = [toks[i : i + group] for i in range(0, len(toks), group)]
    ids = [tokenizer.convert_tokens_to_ids(g) for g in groups]
    reasoning, content, deltas, finish = streamed(["".join(g) for g in groups], request, cls, tokenizer, ids)
    assert "plan" in reasoning and "plan" not in content
    assert content == "Sure. a < b x<tool"
    assert (delta_pairs(deltas), finish) == ([("search", '{"query": "q"}')], "tool_calls")
