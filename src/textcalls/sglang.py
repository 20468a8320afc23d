"""An SGLang tool-call parser that recovers every dialect at once::

    sglang serve --model-path MODEL --tool-call-parser textcalls

Importing this module registers ``TextcallsDetector`` as ``"textcalls"`` in SGLang's
``FunctionCallParser.ToolCallParserEnum``; the ``sglang.srt.plugins`` entry point ``textcalls``
(``register``) does the same in every SGLang process that loads plugins (``sglang serve``,
``python -m sglang.launch_server``, ``sglang.Engine``, before the command line is read), so with textcalls
installed the flag above is all it takes. With ``SGLANG_PLUGINS`` set, it must name ``textcalls``. Untested
with ``--tokenizer-worker-num`` above 1: SGLang 0.5.23 starts those HTTP workers without loading plugins.

SGLang builds one ``FunctionCallParser`` per choice for ``/v1/chat/completions`` and ``/v1/responses``,
streamed or not, and calls it only for requests offering tools, ``tool_choice`` not ``"none"``. The tools go
to ``tools=`` (XML-style values typed by their schemas; a call of a tool not offered stays text, or is taken
when ``SGLANG_FORWARD_UNKNOWN_TOOLS`` is on), with every default dialect on but ``reasoning`` and
``harmony`` (``FORMATS``): ``<think>`` belongs to SGLang's ``--reasoning-parser``, and gpt-oss to its own
parser. Reasoning another dialect moves out of the content (Gemma 4's thought channel) is dropped, since
SGLang's tool-call results have no field for it: use ``--reasoning-parser gemma4`` to keep it. There is no
structural tag for a set of dialects, so ``"required"`` and named ``tool_choice`` are SGLang's (its JSON
array constraint), and no ``strict`` tool constrains the output.

Tested with SGLang 0.5.23 (``TESTED_WITH``); on an SGLang whose interface it does not know, importing raises
RuntimeError naming that SGLang's version. Needs ``pip install 'textcalls[sglang]'``.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence
from typing import Any, ClassVar

from . import _hosts, _scan
from .options import Options
from .parse import parse

__all__ = ["FORMATS", "NAME", "TESTED_WITH", "TextcallsDetector", "register"]

#: The SGLang release this module was tested with.
TESTED_WITH = "0.5.23"
#: The name ``--tool-call-parser`` takes.
NAME = "textcalls"
#: The dialects on by default: every default one but reasoning (SGLang's ``--reasoning-parser`` does that)
#: and Harmony (SGLang serves gpt-oss with its own parser).
FORMATS = _hosts.FORMATS


def _sglang_version() -> str:
    return _hosts.host_version("sglang")


def _unknown_api(what: str) -> RuntimeError:
    return _hosts.unknown_api("sglang", "SGLang", _sglang_version(), TESTED_WITH, what, RuntimeError)


try:
    from sglang.srt.entrypoints.openai.protocol import Function, Tool  # type: ignore[import-not-found,unused-ignore]
    from sglang.srt.environ import envs  # type: ignore[import-not-found,unused-ignore]
    from sglang.srt.function_call.base_format_detector import (  # type: ignore[import-not-found,unused-ignore]
        BaseFormatDetector,
    )
    from sglang.srt.function_call.core_types import (  # type: ignore[import-not-found,unused-ignore]
        StreamingParseResult,
        ToolCallItem,
    )
    from sglang.srt.function_call.function_call_parser import (  # type: ignore[import-not-found,unused-ignore]
        FunctionCallParser,
    )
except ImportError as e:
    _hosts.import_failed(e, "sglang", "SGLang", _unknown_api)

#: The methods SGLang calls on a detector, with their parameters after ``self``.
_METHODS = {
    "has_tool_call": ("text",),
    "detect_and_parse": ("text", "tools"),
    "parse_streaming_increment": ("new_text", "tools"),
    "finish": ("tools",),
    "supports_structural_tag": (),
}
#: The abstract methods of ``BaseFormatDetector``: those a detector must define.
_ABSTRACT = frozenset({"has_tool_call", "detect_and_parse", "structure_info"})
#: The fields this module reads or fills, per type.
_FIELDS = {
    ToolCallItem: ("tool_index", "name", "parameters"),
    StreamingParseResult: ("normal_text", "calls"),
    Tool: ("function",),
    Function: ("name", "parameters"),
}


def _check_api() -> None:
    """RuntimeError unless SGLang's interface is the one this module was written for: the detector's
    methods, the registry, the types it reads and fills, and the end-of-stream hook (``finish``, which
    ``FunctionCallParser.parse_stream_end`` calls when a stream ends)."""
    if not isinstance(getattr(FunctionCallParser, "ToolCallParserEnum", None), dict):
        raise _unknown_api("FunctionCallParser has no ToolCallParserEnum dict")
    for name, params in _METHODS.items():
        method = getattr(BaseFormatDetector, name, None)
        got = tuple(inspect.signature(method).parameters)[1:] if callable(method) else None
        if got != params:
            shown = "nothing" if got is None else f"({', '.join(got)})"
            raise _unknown_api(f"BaseFormatDetector.{name} takes {shown}, expected ({', '.join(params)})")
    if BaseFormatDetector.__abstractmethods__ != _ABSTRACT:
        raise _unknown_api(
            f"BaseFormatDetector's abstract methods are {sorted(BaseFormatDetector.__abstractmethods__)}"
        )
    for cls, fields in _FIELDS.items():
        missing = [f for f in fields if f not in cls.model_fields]
        if missing:
            raise _unknown_api(f"{cls.__name__} has no field {', '.join(missing)}")
    for name in ("parse_non_stream", "parse_stream_chunk", "parse_stream_end"):
        if not callable(getattr(FunctionCallParser, name, None)):
            raise _unknown_api(f"FunctionCallParser has no {name}")
    if not hasattr(envs, "SGLANG_FORWARD_UNKNOWN_TOOLS"):
        raise _unknown_api("no SGLANG_FORWARD_UNKNOWN_TOOLS setting")


_check_api()

#: Where a bare JSON call may start (``textcalls.screens.may_hold_bare_call``'s rule, on text): the text's
#: first character after blanks is ``{``, ``[`` or a backtick, or a line starts (after up to 3 spaces) with
#: ``{`` or ``[``. With tools, only such a text or one holding markup can hold a call.
_BARE = re.compile(r"\A[ \t\r\n]*[{\[`]|\n {0,3}[{\[]")


#: A schema-guided call's arguments (``textcalls._guided``) begin with one of these: a JSON object, keyword
#: arguments, or key/value markup.
_GUIDED_ARGUMENTS = "{(<"


class TextcallsDetector(BaseFormatDetector):
    """SGLang's ``BaseFormatDetector`` over ``parse`` (whole outputs) and a ``StreamScrubber`` (streams).

    ``has_tool_call``: whether the text may hold a call (markup of an enabled dialect, a bare JSON
    call's start, or, with schema-guided recovery, a ``{``, ``(`` or ``<`` its arguments could open with).
    ``detect_and_parse``: the content with every block removed (the text itself when nothing was removed)
    and the calls, each one ``ToolCallItem`` whose ``tool_index`` is the tool's position in ``tools`` (-1 for
    a tool not offered), as SGLang's own detectors give it.
    ``parse_streaming_increment``: the content decided so far (markup that may still be a call is
    held) and each call as one ``ToolCallItem`` (name and arguments whole; ``tool_index`` counting
    calls from 0 over the stream, as SGLang streams them) as soon as its block completes. ``finish``,
    which SGLang calls when a stream ends, releases the held tail and the calls it completes. One
    instance per choice, as SGLang makes them.
    """

    #: ``parse``'s keywords but ``tools`` (each request's), as ``register`` was given them
    recovery: ClassVar[dict[str, Any]] = {"formats": FORMATS}

    def __init__(self) -> None:
        super().__init__()
        self._scrubber: Any = None  # the stream's StreamScrubber, made at its first delta
        self._sent = 0  # calls emitted so far: the next one's tool_index

    def _options(self, tools: Sequence[Any]) -> Options:
        """The options for a request's tools (SGLang's ``Tool`` objects)."""
        recovery = self.recovery
        if "unknown_tools" not in recovery and envs.SGLANG_FORWARD_UNKNOWN_TOOLS.get():
            recovery = {**recovery, "unknown_tools": "accept"}
        functions = [
            {"type": "function", "function": {"name": t.function.name, "parameters": t.function.parameters}}
            for t in tools
        ]
        return Options(tools=functions, **recovery)

    def has_tool_call(self, text: str) -> bool:
        formats = self.recovery["formats"]
        if _scan.impl.may_contain_markup(text, formats=formats) or _BARE.search(text) is not None:
            return True
        # schema-guided recovery (on unless the recovery says otherwise): its calls' arguments open with one of these
        return self.recovery.get("schema_guided", True) and any(c in text for c in _GUIDED_ARGUMENTS)

    def detect_and_parse(self, text: str, tools: list) -> StreamingParseResult:
        parsed = parse(text, options=self._options(tools))
        positions = {tool.function.name: i for i, tool in enumerate(tools)}  # as SGLang's own detectors
        calls = [
            ToolCallItem(tool_index=positions.get(c.name, -1), name=c.name, parameters=c.arguments)
            for c in parsed.calls
        ]
        return StreamingParseResult(normal_text=parsed.content if parsed.removed else text, calls=calls)

    def parse_streaming_increment(self, new_text: str, tools: list) -> StreamingParseResult:
        if self._scrubber is None:
            self._scrubber = _scan.impl.StreamScrubber(options=self._options(tools))
        return self._result(self._scrubber.feed(new_text))

    def finish(self, tools: list) -> StreamingParseResult:
        """The held tail and the calls the end of the stream completes (SGLang calls this once, last)."""
        if self._scrubber is None:
            return StreamingParseResult()
        return self._result(self._scrubber.flush())

    def _result(self, text: str) -> StreamingParseResult:
        scrubber = self._scrubber
        scrubber.take_reasoning()  # no field for it (see the module's docstring)
        calls = scrubber.calls[self._sent :]
        items = [
            ToolCallItem(tool_index=self._sent + i, name=c.name, parameters=c.arguments) for i, c in enumerate(calls)
        ]
        self._sent += len(calls)
        return StreamingParseResult(normal_text=text, calls=items)

    def supports_structural_tag(self) -> bool:
        return False  # no one format to constrain the output to

    def structure_info(self) -> Any:
        """Never called (``supports_structural_tag`` is False): there is no one begin/end per tool."""
        raise NotImplementedError("textcalls reads every dialect: it has no structural tag")


def register(name: str = NAME, **options: Any) -> type[TextcallsDetector]:
    """Register a textcalls detector with SGLang as ``name`` and return its class.

    ``options`` are ``parse``'s keywords but ``tools`` (each request's), checked here (``TypeError`` /
    ``ValueError`` naming the bad one); ``formats`` defaults to ``FORMATS``. E.g. in a plugin of your own:
    ``register("textcalls_drop", unknown_tools="drop")``. Registering a name again replaces it. The
    ``sglang.srt.plugins`` entry point calls ``register()``.
    """
    cls = _hosts.register_class(TextcallsDetector, name, options)
    FunctionCallParser.ToolCallParserEnum[name] = cls
    return cls


register()
