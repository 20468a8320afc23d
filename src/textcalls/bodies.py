"""Turn the body of one tool-call block into a ``ToolCall``, or reject it as malformed."""

from __future__ import annotations

import json

from . import relaxed_json
from .markers import DEEPSEEK, DEEPSEEK_SEP, HERMES
from .toolcall import ToolCall

__all__ = ["call_from_block"]

#: Keys that may hold a call's arguments, by priority.
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")


def call_from_block(family: str, body: str) -> ToolCall | None:
    """Return the call written in ``body``, or ``None`` if it is malformed or has no name.

    ``family`` is ``markers.HERMES`` (a JSON object with ``name`` and ``arguments``) or
    ``markers.DEEPSEEK`` (``NAME<sep>{args}``, ``TYPE<sep>NAME`` + a fenced JSON object,
    or, without a separator, a Hermes body). Never raises for a ``str`` body; raises
    ``ValueError`` for an unknown family.
    """
    if family == HERMES:
        return _from_json_body(body)
    if family == DEEPSEEK:
        return _from_deepseek_body(body)
    raise ValueError(f"unknown tool-call family: {family!r}")


def _from_json_body(body: str) -> ToolCall | None:
    """``{"name": ..., "arguments": ...}``: arguments under the first key present, maybe as JSON text."""
    call = _parse_object(body.strip())
    if call is None:
        return None
    args = next((call[key] for key in _ARGUMENT_KEYS if key in call), None)
    if args is None or args == "":
        args = {}
    elif isinstance(args, str):
        args = _parse_object(args)
    return _make_call(call.get("name"), args)


def _from_deepseek_body(body: str) -> ToolCall | None:
    """V3.1 ``NAME<sep>{args}``, V3 ``TYPE<sep>NAME\\n```json {args}```; no separator: a JSON body."""
    head, sep, tail = body.partition(DEEPSEEK_SEP)
    if not sep:
        return _from_json_body(body)
    if tail.lstrip().startswith(("{", "```")):
        return _make_call(head, _parse_object(tail))
    name, _, rest = tail.partition("\n")
    rest = relaxed_json.strip_fence(rest)
    return _make_call(name, _parse_object(rest) if rest.strip() else {})


def _parse_object(text: str) -> dict | None:
    """The JSON object in ``text`` (strict, then relaxed), or ``None``."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        try:
            value = relaxed_json.loads(text)
        except ValueError:
            return None
    return value if isinstance(value, dict) else None


def _make_call(name: object, args: object) -> ToolCall | None:
    """A call if ``name`` is a non-blank string and ``args`` a dict, else ``None``."""
    if not isinstance(name, str) or not name.strip() or not isinstance(args, dict):
        return None
    try:
        arguments = json.dumps(args, ensure_ascii=False, allow_nan=False)
    except ValueError:  # NaN or Infinity: the arguments would not be JSON
        return None
    except RecursionError:  # nesting the decoder just accepted can still be too deep here
        return None
    return ToolCall(name.strip(), arguments)
