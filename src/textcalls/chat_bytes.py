"""Recover text tool calls in a non-streamed ``chat.completion`` body held as bytes."""

from __future__ import annotations

import json
from collections import Counter

from ._wire import dumps_compact
from .openai import check_gate, recover_response
from .options import options_of
from .screens import may_contain_markup, may_hold_bare_call, may_mark_name

__all__ = ["recover_response_bytes"]


def recover_response_bytes(body, *, native: bool, has_tools: bool, tally: Counter | None = None, **options):
    """Return ``body`` itself unless recovery changes it; else the re-serialised response.

    ``body`` is bytes-like; ``options`` are ``recover_response``'s (``formats``, ``tools``,
    ``unknown_tools``, ``max_block``). It comes back as the very same object when tools were
    not offered, when ``may_contain_markup`` says no markup of the enabled formats can be in it
    and no structured call's name can carry any (no JSON decoding at all; with a whole-message
    format, which has no markup to look for, or ``reasoning_started``, the body is always
    decoded; with ``tools``, also when a ``"content"`` starts as a bare JSON call may), when it
    is not a JSON object that ``recover_response`` accepts (error bodies, other shapes) or when no choice changes.
    Otherwise the result is compact UTF-8 JSON bytes. ``tally``: as ``recover_response``'s.
    """
    if not isinstance(body, (bytes, bytearray, memoryview)):
        raise TypeError(f"body must be bytes, bytearray or memoryview, not {type(body).__name__}")
    check_gate(native, has_tools)
    opts = options_of(options)
    if not has_tools:
        return body
    data = bytes(body) if isinstance(body, memoryview) else body
    if not (
        may_contain_markup(data, formats=opts.formats)
        or opts.reasoning_started
        or opts.prompt_tail
        or opts.guided
        or may_mark_name(data)
        or (opts.tools is not None and may_hold_bare_call(data))
    ):
        # no JSON decoding at all
        return body
    try:
        response = json.loads(data)
    except (ValueError, RecursionError):
        return body
    if not isinstance(response, dict):
        return body
    try:
        recovered = recover_response(response, native=native, has_tools=has_tools, tally=tally, options=opts)
    except TypeError:  # a shape recover_response rejects: not a chat.completion to rewrite
        return body
    if recovered is response:
        return body
    return dumps_compact(recovered)
