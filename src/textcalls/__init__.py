"""Recover and scrub tool calls that LLMs write as text markup, at gateway speed.

>>> import textcalls
>>> p = textcalls.parse('Sure.<tool_call>{"name": "lookup", "arguments": {"q": 1}}</tool_call>')
>>> p.content, p.calls[0].name, p.calls[0].arguments
('Sure.', 'lookup', '{"q": 1}')
"""

from typing import TYPE_CHECKING

from . import _scan
from ._scan import IMPLEMENTATION
from .chat_bytes import recover_response_bytes
from .markers import DIALECTS, MAX_BLOCK
from .openai import recover_response, should_recover
from .options import Options
from .parse import Parsed, parse
from .sse import MAX_EVENT, SSERecovery, arecover_sse, recover_sse
from .stream import ChunkRecovery, arecover_stream, recover_stream
from .toolcall import ToolCall

if TYPE_CHECKING:
    # typed as the extension (_scan_c.pyi), the stricter of the two (feed's argument positional-only, the
    # counters read-only): code that type-checks runs on either implementation
    from ._scan_c import StreamScrubber, hold_from, may_contain_markup
else:
    StreamScrubber = _scan.impl.StreamScrubber
    hold_from = _scan.impl.hold_from
    may_contain_markup = _scan.impl.may_contain_markup

__all__ = [
    "DIALECTS",
    "IMPLEMENTATION",
    "MAX_BLOCK",
    "MAX_EVENT",
    "ChunkRecovery",
    "Options",
    "Parsed",
    "SSERecovery",
    "StreamScrubber",
    "ToolCall",
    "arecover_sse",
    "arecover_stream",
    "hold_from",
    "may_contain_markup",
    "parse",
    "recover_response",
    "recover_response_bytes",
    "recover_sse",
    "recover_stream",
    "should_recover",
]
__version__ = "0.1.0"
