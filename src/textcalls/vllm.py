"""A vLLM tool parser that recovers every dialect at once::

    vllm serve MODEL --enable-auto-tool-choice --tool-parser-plugin textcalls.vllm --tool-call-parser textcalls

Importing this module registers ``TextcallsToolParser`` as ``"textcalls"`` with vLLM's ``ToolParserManager``;
the ``vllm.general_plugins`` entry point ``textcalls`` (``register``) does the same in every vLLM process, so
with textcalls installed ``--tool-parser-plugin`` may be left out. vLLM composes the tool parser named on its
command line into the one parser that serves ``/v1/chat/completions``, ``/v1/responses`` and ``/v1/messages``,
streamed or not, so this one class covers all three.

A request is recovered when it offers function tools and its ``tool_choice`` is not ``"none"``: the tools go
to ``tools=`` (XML-style values typed by their schemas; a call of a tool not offered stays text), with every
default dialect on but ``reasoning`` and ``harmony`` (``FORMATS``): ``<think>`` belongs to vLLM's
``--reasoning-parser``, and vLLM serves gpt-oss with its own Harmony parser only. Other requests pass as
the model wrote them. ``"required"`` and named ``tool_choice`` are vLLM's (guided JSON), as for its own parsers.

Tested with vLLM 0.33.0 (``TESTED_WITH``); on a vLLM whose interface it does not know, importing raises
RuntimeError naming that vLLM's version. Needs ``pip install 'textcalls[vllm]'``.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any, ClassVar

from . import _hosts, _scan
from .options import Options
from .parse import parse

__all__ = ["FORMATS", "NAME", "TESTED_WITH", "TextcallsToolParser", "register"]

#: The vLLM release this module was tested with.
TESTED_WITH = "0.33.0"
#: The name ``--tool-call-parser`` takes.
NAME = "textcalls"
#: The dialects on by default: every default one but reasoning (vLLM's ``--reasoning-parser`` does that; its
#: non-streamed result has no reasoning field) and Harmony (vLLM serves gpt-oss with its own parser only).
FORMATS = _hosts.FORMATS


def _unknown_api(what: str) -> RuntimeError:
    return _hosts.unknown_api("vllm", "vLLM", _hosts.host_version("vllm"), TESTED_WITH, what, RuntimeError)


try:
    from openai.types.responses.function_tool import (  # type: ignore[import-not-found,unused-ignore]
        FunctionTool,  # the Responses API's (openai: vLLM's dependency)
    )
    from vllm.entrypoints.generate.base.protocol import (  # type: ignore[import-not-found,unused-ignore]
        DeltaFunctionCall,
        DeltaMessage,
        DeltaToolCall,
        ExtractedToolCallInformation,
        FunctionCall,
        ToolCall,
    )
    from vllm.entrypoints.openai.chat_completion.protocol import (  # type: ignore[import-not-found,unused-ignore]
        ChatCompletionToolsParam,
    )
    from vllm.parser.abstract_parser import DelegatingParser, Parser  # type: ignore[import-not-found,unused-ignore]
    from vllm.tool_parsers.abstract_tool_parser import (  # type: ignore[import-not-found,unused-ignore]
        ToolParser,
        ToolParserManager,
    )
except ImportError as e:
    _hosts.import_failed(e, "vllm", "vLLM", _unknown_api)

#: The methods vLLM calls on a tool parser, with their parameters after ``self``.
_METHODS = {
    "__init__": ("tokenizer", "tools"),
    "extract_tool_calls": ("model_output", "request"),
    "extract_tool_calls_streaming": (
        "previous_text",
        "current_text",
        "delta_text",
        "previous_token_ids",
        "current_token_ids",
        "delta_token_ids",
        "request",
    ),
}
#: The fields this module fills, per type.
_FIELDS: dict[Any, tuple[str, ...]] = {
    DeltaMessage: ("content", "reasoning", "tool_calls"),
    DeltaToolCall: ("id", "type", "index", "function"),
    DeltaFunctionCall: ("name", "arguments"),
    ExtractedToolCallInformation: ("tools_called", "tool_calls", "content"),
    ToolCall: ("id", "type", "function"),
    FunctionCall: ("name", "arguments"),
    ChatCompletionToolsParam: ("type", "function"),
}


def _check_api() -> None:
    """RuntimeError unless vLLM's interface is the one this module was written for: the tool parser's
    methods and fields, the types it fills, and the end-of-stream hook (``finish_streaming``, which
    vLLM calls on tool parsers declaring ``engine_based_streaming`` when a stream finishes)."""
    for name, params in _METHODS.items():
        got = tuple(inspect.signature(getattr(ToolParser, name)).parameters)[1:]
        if got != params:
            raise _unknown_api(f"ToolParser.{name} takes ({', '.join(got)}), expected ({', '.join(params)})")
    for cls, fields in _FIELDS.items():
        missing = [f for f in fields if f not in cls.model_fields]
        if missing:
            raise _unknown_api(f"{cls.__name__} has no field {', '.join(missing)}")
    if not isinstance(getattr(ToolParser, "engine_based_streaming", None), bool):
        raise _unknown_api("ToolParser has no engine_based_streaming flag")
    if not callable(getattr(DelegatingParser, "_flush_engine_parsers", None)):
        raise _unknown_api("DelegatingParser has no _flush_engine_parsers (the end-of-stream hook)")
    if "finished" not in inspect.signature(Parser.parse_delta).parameters:
        raise _unknown_api("Parser.parse_delta takes no finished flag")


_check_api()


def _functions(tools: Sequence[Any] | None) -> list[dict]:
    """A request's function tools as OpenAI chat tools (chat's ``ChatCompletionToolsParam``, the Responses
    API's ``FunctionTool``); other kinds (``custom``, ``web_search`` …) are left out."""
    out = []
    for tool in tools or ():
        if isinstance(tool, ChatCompletionToolsParam):
            name, parameters = tool.function.name, tool.function.parameters
        elif isinstance(tool, FunctionTool):
            name, parameters = tool.name, tool.parameters
        else:
            continue
        out.append({"type": "function", "function": {"name": name, "parameters": parameters}})
    return out


class TextcallsToolParser(ToolParser):
    """vLLM's ``ToolParser`` over ``parse`` (whole outputs) and a ``StreamScrubber`` (streams).

    ``extract_tool_calls``: the content with every block removed (``None`` if empty; the output
    itself when nothing was removed) and the calls, ids kept. ``extract_tool_calls_streaming``: the
    content decided so far (markup that may still be a call is held) and each call as one
    ``DeltaToolCall`` (name and arguments whole, its ``index`` counting from 0 over the stream) as
    soon as its block completes. ``finish_streaming``, which vLLM calls when the stream finishes
    (``engine_based_streaming``), releases the held tail and the calls it completes. Reasoning a
    dialect moves out of the content (Gemma 4's thought channel) goes out as ``reasoning`` when
    streamed; a non-streamed result has no field for it. One instance per stream, as vLLM makes them.
    """

    engine_based_streaming = True  # without it vLLM never calls finish_streaming: the held tail would be lost
    #: ``parse``'s keywords but ``tools`` (each request's), as ``register`` was given them
    recovery: ClassVar[dict[str, Any]] = {"formats": FORMATS}

    def __init__(self, tokenizer: Any, tools: list | None = None) -> None:
        super().__init__(tokenizer, tools)
        self._scrubber: Any = None  # the stream's StreamScrubber, made at its first delta (None: not recovered)
        self._started = False
        self._sent = 0  # calls emitted so far: the next one's index

    def _options(self, request: Any) -> Options | None:
        """The request's options, or None when it is not recovered (no function tools, or no tool calls)."""
        functions = _functions(request.tools)
        if not functions or request.tool_choice == "none":
            return None
        return Options(tools=functions, **self.recovery)

    def extract_tool_calls(self, model_output: str, request: Any) -> ExtractedToolCallInformation:
        options = self._options(request)
        if options is None:
            return ExtractedToolCallInformation(tools_called=False, tool_calls=[], content=model_output)
        parsed = parse(model_output, options=options)
        calls = [ToolCall(id=c.id, function=FunctionCall(name=c.name, arguments=c.arguments)) for c in parsed.calls]
        content = parsed.content if parsed.removed else model_output
        return ExtractedToolCallInformation(tools_called=bool(calls), tool_calls=calls, content=content or None)

    def extract_tool_calls_streaming(
        self,
        previous_text: str,
        current_text: str,
        delta_text: str,
        previous_token_ids: Sequence[int],
        current_token_ids: Sequence[int],
        delta_token_ids: Sequence[int],
        request: Any,
    ) -> DeltaMessage | None:
        if not self._started:
            self._started = True
            options = self._options(request)
            if options is not None:
                self._scrubber = _scan.impl.StreamScrubber(options=options)
        if self._scrubber is None:
            return DeltaMessage(content=delta_text) if delta_text else None
        return self._delta(self._scrubber.feed(delta_text))

    def finish_streaming(self) -> DeltaMessage | None:
        """The held tail and the calls the end of the stream completes (vLLM calls this once, last)."""
        if self._scrubber is None:
            return None
        return self._delta(self._scrubber.flush())

    def _delta(self, content: str) -> DeltaMessage | None:
        scrubber = self._scrubber
        reasoning = scrubber.take_reasoning()
        calls = scrubber.calls[self._sent :]
        if not content and not reasoning and not calls:
            return None
        deltas = [
            DeltaToolCall(
                index=self._sent + i,
                id=c.id,
                type="function",
                function=DeltaFunctionCall(name=c.name, arguments=c.arguments),
            )
            for i, c in enumerate(calls)
        ]
        self._sent += len(calls)
        return DeltaMessage(content=content or None, reasoning=reasoning or None, tool_calls=deltas)


def register(name: str = NAME, **options: Any) -> type[TextcallsToolParser]:
    """Register a textcalls tool parser with vLLM as ``name`` and return its class.

    ``options`` are ``parse``'s keywords but ``tools`` (each request's), checked here (``TypeError`` /
    ``ValueError`` naming the bad one); ``formats`` defaults to ``FORMATS``. E.g. in a plugin file given to
    ``--tool-parser-plugin``: ``register("textcalls_accept", unknown_tools="accept")``. Registering a name
    again replaces it. The ``vllm.general_plugins`` entry point calls ``register()``.
    """
    cls = _hosts.register_class(TextcallsToolParser, name, options)
    ToolParserManager.register_module(name=name, module=cls)
    return cls


register()
