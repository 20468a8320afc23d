"""Types of the Cython extension ``textcalls._scan_c`` (``ext/textcalls/_scan_c.pyx``).

Its public surface is that of the pure-Python twin ``textcalls._scan_py``: keep the two in step. The
string kernels it calls are ``textcalls._kernels_c``'s (``_kernels_c.pyi``).
"""

from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

from textcalls.options import Options
from textcalls.screens import may_contain_markup as may_contain_markup
from textcalls.toolcall import Parsed, ToolCall

__all__ = ["TABLE_LIMITS", "StreamScrubber", "hold_from", "may_contain_markup", "scan_whole"]

#: What this build's arrays hold: (longest literal, distinct first characters); import fails unless
#: they are markers.py's (LITERAL_MAX, FIRST_CHARS_MAX).
TABLE_LIMITS: tuple[int, int, int]

#: the kernels this scanner calls (``_scan.use``): ``textcalls._kernels_c``
KERNELS: ModuleType

def hold_from(text: str, *, formats: Iterable[str] | None = None) -> int: ...
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
    @property
    def guided_quiet(self) -> bool: ...
    def take_reasoning(self) -> str: ...
    def take_events(self) -> list[tuple[Any, ...]]: ...
    def feed(self, delta: str, /) -> str: ...
    def flush(self, truncated: bool = False) -> str: ...
