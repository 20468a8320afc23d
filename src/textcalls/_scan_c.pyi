"""Types of the Cython extension ``textcalls._scan_c`` (``ext/textcalls/_scan_c.pyx``).

Its public surface is that of the pure-Python twin ``textcalls._scan_py``: keep the two in step.
"""

from collections.abc import Callable, Iterable
from typing import Any

from textcalls.options import Options
from textcalls.screens import may_contain_markup as may_contain_markup
from textcalls.toolcall import Parsed, ToolCall

__all__ = [
    "TABLE_LIMITS",
    "StreamScrubber",
    "array_calls",
    "deepseek_call",
    "hermes_call",
    "hold_from",
    "json_string",
    "may_contain_markup",
    "plain_object",
    "repair",
    "scan_whole",
    "simple_literal_json",
    "string_object",
    "too_many_python_nodes",
]

#: What this build's arrays hold: (longest literal, distinct first characters); import fails unless
#: they are markers.py's (LITERAL_MAX, FIRST_CHARS_MAX).
TABLE_LIMITS: tuple[int, int, int]

def hold_from(text: str, *, formats: Iterable[str] | None = None) -> int: ...
def plain_object(text: str) -> tuple[int, int, list[tuple[str | None, int, int]]] | None: ...
def hermes_call(body: str, dialect: str) -> ToolCall | None: ...
def array_calls(text: str, dialect: str) -> list[ToolCall] | None: ...
def deepseek_call(body: str, dialect: str) -> ToolCall | None: ...
def repair(text: str) -> str: ...
def json_string(s: str) -> str: ...
def string_object(args: object) -> str | None: ...
def simple_literal_json(text: str, start: int, json_from: int) -> tuple[int, str | None] | None: ...
def too_many_python_nodes(text: str, cap: int) -> bool: ...
def scan_whole(text: str, options: Options) -> Parsed: ...

# C only, not in __all__: textcalls.parse's default path made in C (parse.py)
def use_python_parse(python_parse: Callable[..., Parsed]) -> None: ...
def parse(text: str, **keywords: Any) -> Parsed: ...

class StreamScrubber:
    def __init__(
        self,
        *,
        max_block: int = 1048576,  # markers.MAX_BLOCK
        formats: Iterable[str] | None = None,
        tools: list[Any] | None = None,  # the request's OpenAI tools (JSON objects)
        unknown_tools: str = "keep_text",
        calls_in_reasoning: str = "auto",
        code_fences: bool = True,
        reasoning_started: bool = False,
        stream_arguments: bool = False,  # call events (take_events)
        options: Options | None = None,  # these keywords, checked once (then give no other)
    ) -> None: ...
    @property
    def calls(self) -> list[ToolCall]: ...
    @property
    def removed(self) -> int: ...
    @property
    def malformed(self) -> int: ...
    @property
    def max_block(self) -> int: ...
    @property
    def abandoned(self) -> int: ...
    def take_reasoning(self) -> str: ...
    def take_events(self) -> list[tuple[Any, ...]]: ...
    def feed(self, delta: str, /) -> str: ...
    def flush(self, truncated: bool = False) -> str: ...
