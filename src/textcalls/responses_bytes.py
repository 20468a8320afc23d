"""Recover text tool calls in a non-streamed ``chat.completion`` body held as bytes."""

from __future__ import annotations

import functools
import json
import re
import string

from . import _scan, _table
from .openai import recover_response, should_recover

__all__ = ["recover_response_bytes"]


def recover_response_bytes(body, *, native: bool, has_tools: bool, **options):
    """Return ``body`` itself unless recovery changes it; else the re-serialised response.

    ``body`` is bytes-like; ``options`` are ``recover_response``'s (``formats``, ``tools``,
    ``unknown_tools``, ``max_block``). It comes back as the very same object when tools were
    not offered, when ``may_contain_markup`` says no markup of the enabled formats can be in it
    (no JSON decoding at all; with a whole-message format, which has no markup to look for,
    the body is always decoded), when it is not a JSON object that
    ``recover_response`` accepts (error bodies, other shapes) or when no choice changes.
    Otherwise the result is compact UTF-8 JSON bytes.
    """
    if not isinstance(body, (bytes, bytearray, memoryview)):
        raise TypeError(f"body must be bytes, bytearray or memoryview, not {type(body).__name__}")
    _scan.impl.StreamScrubber(**options)  # checks the options
    # should_recover checks both flags; with no structured call it is False only without tools.
    if not should_recover(native, has_tools, 0):
        return body
    data = bytes(body) if isinstance(body, memoryview) else body
    if not _table.may_contain_markup(data, formats=options.get("formats")):  # no JSON decoding at all
        return body
    try:
        response = json.loads(data)
    except (ValueError, RecursionError):
        return body
    if not isinstance(response, dict):
        return body
    try:
        recovered = recover_response(response, native=native, has_tools=has_tools, **options)
    except TypeError:  # a shape recover_response rejects: not a chat.completion to rewrite
        return body
    if recovered is response:
        return body
    return dumps_compact(recovered)


def dumps_compact(obj) -> bytes:
    """Compact UTF-8 JSON, as gateways send it."""
    try:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: keep them escaped
        return json.dumps(obj, separators=(",", ":")).encode("ascii")


# Characters that JSON chunks carry outside strings anyway: as the first character of a literal,
# one counts only when followed by what could continue the literal, end a string or escape.
_STRUCTURAL = frozenset('{}[]:,"_') | frozenset(string.ascii_letters + string.digits)


@functools.lru_cache(maxsize=16)
def untouched_screen(literals: tuple):
    """``untouched(data)``: nothing in the JSON bytes ``data`` can begin one of ``literals`` (as a
    fresh scrubber reads them) or be a structured ``tool_calls`` entry.

    That needs, for every first character of a literal: the character raw (or, for one JSON carries
    anyway, followed by a possible second character, a closing quote or a backslash), or JSON-escaped
    (``\\u003c``); and the key ``tool_calls``, raw or with an escaped letter.
    """
    needles = [b"tool_calls"]
    patterns = []
    escaped = set("tool_calls")
    for first in sorted({literal[0] for literal in literals}):
        escaped.add(first)
        mine = [literal for literal in literals if literal[0] == first]
        if first in _STRUCTURAL and all(len(literal) > 1 for literal in mine):
            follow = "".join(sorted({literal[1] for literal in mine} | {'"', "\\"}))
            patterns.append(re.compile(f"{re.escape(first)}[{re.escape(follow)}]".encode()).search)
        else:
            needles.append(first.encode())
    escapes = re.compile("|".join(re.escape(f"\\u{ord(c):04x}") for c in sorted(escaped)).encode(), re.IGNORECASE)

    def untouched(data) -> bool:
        for needle in needles:
            if needle in data:
                return False
        for search in patterns:
            if search(data) is not None:
                return False
        return b"\\" not in data or b"\\u" not in data or escapes.search(data) is None  # memchr first

    return untouched
