"""Body grammars: the text of one block -> its calls.

A grammar is ``grammar(opener, body, ctx) -> list[ToolCall] | None``: ``opener`` is the opener as
written (a tag opener with its attributes), ``body`` the text between opener and closer, ``ctx`` the
request's tools (``Context``). It returns the calls (``[]``: markup, but malformed — removed without a
call) or ``None``: not a call at all, the block's text stays. Grammars never raise for any text.
"""

from __future__ import annotations

import re

from ..bodies import call_from_block
from ..markers import DEEPSEEK, HERMES
from ..toolcall import ToolCall
from .context import Context

__all__ = ["GRAMMARS", "Context"]


def _single(call: ToolCall | None) -> list[ToolCall]:
    return [] if call is None else [call]


def hermes(opener: str, body: str, ctx: Context) -> list[ToolCall] | None:
    """``<tool_call>`` bodies: a JSON call object."""
    return _single(call_from_block(HERMES, body))


def deepseek(opener: str, body: str, ctx: Context) -> list[ToolCall] | None:
    """DeepSeek V3/V3.1 bodies (``NAME<｜tool▁sep｜>{…}``, ``TYPE<｜tool▁sep｜>NAME`` + fenced JSON) or a JSON object."""
    return _single(call_from_block(DEEPSEEK, body))


GRAMMARS = {"hermes": hermes, "deepseek": deepseek}
