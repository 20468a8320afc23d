"""gpt-oss Harmony calls written as text: the recipient in the opener, the arguments after ``<|message|>``."""

from __future__ import annotations

import json
import re

from .. import relaxed_json
from ..toolcall import ToolCall
from .context import Context

__all__ = ["harmony"]

_RECIPIENT = re.compile(r"\bto=(?:functions\.)?([^\s<>]+)")
_MESSAGE = "<|message|>"


def harmony(opener: str, body: str, ctx: Context) -> list[ToolCall] | None:
    """``<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{ARGS}`` or, recipient first,
    ``<|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>{ARGS}`` (the opener ends at
    its first ``>``, so opener and body are read as one): one call; ``[]`` without a recipient before the
    message or object arguments after it."""
    head, sep, text = (opener + body).partition(_MESSAGE)
    found = _RECIPIENT.search(head)
    if found is None or not sep:
        return []
    text = text.strip()
    try:
        args = json.loads(text) if text else {}
    except (ValueError, RecursionError):
        try:
            args = relaxed_json.loads(text)
        except ValueError:
            return []
    if not isinstance(args, dict):
        return []
    try:
        return [ToolCall(found.group(1), json.dumps(args, ensure_ascii=False, allow_nan=False))]
    except (ValueError, RecursionError):
        return []
