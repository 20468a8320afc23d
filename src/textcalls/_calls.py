"""How a grammar makes a call: ``make_call`` (a name and arguments, serialised once), ``read_from`` (the
dialect of calls just made) and the arguments encoder, whose strings the kernels write."""

from __future__ import annotations

import json
import re
from json.encoder import c_make_encoder  # type: ignore[attr-defined]  # json's C encoder (None without it)

from . import _kernels
from .toolcall import EncodedString, ToolCall, new_call_id

__all__ = ["ARGUMENTS_ENCODER", "make_call", "placeholder", "read_from", "unique_ids"]


class _ArgumentsEncoder(json.JSONEncoder):
    """``json.dumps(…, ensure_ascii=False, allow_nan=False)``, its strings written by the hot path's
    ``json_string`` (json's own text; in C, long strings are written in runs); an ``EncodedString`` as the
    string it reads as."""

    def default(self, o: object) -> object:
        if type(o) is EncodedString:
            return json.loads(o.json)
        return super().default(o)

    def iterencode(self, o: object, _one_shot: bool = False):
        if not _one_shot or c_make_encoder is None:
            return super().iterencode(o, _one_shot)
        try:  # as JSONEncoder.iterencode makes it (3.10-3.13), with json_string for strings
            encode = c_make_encoder(
                {},
                self.default,
                _kernels.impl.json_string,
                None,
                self.key_separator,
                self.item_separator,
                False,
                False,
                False,
            )
        except TypeError:  # a json whose C encoder is made otherwise: its own way
            return super().iterencode(o, _one_shot)
        return encode(o, 0)


#: ``json.dumps(…, ensure_ascii=False, allow_nan=False)``, built once (``json.dumps`` with options builds one a call)
ARGUMENTS_ENCODER = _ArgumentsEncoder(ensure_ascii=False, allow_nan=False)


def make_call(name: object, args: object, call_id: str | None = None) -> ToolCall | None:
    """The call of ``name`` (a non-blank string, stripped) with the arguments ``args`` (a dict), or ``None``.

    The arguments are serialised once, ``json.dumps(args, ensure_ascii=False, allow_nan=False)`` (a value that
    is an ``EncodedString`` as its JSON text); ``None`` too when they cannot be JSON (NaN or Infinity, an int
    too long to convert, nesting too deep).
    ``call_id``: an id the model wrote (a fresh one without it).
    """
    if not isinstance(name, str) or not name.strip() or not isinstance(args, dict):
        return None
    arguments = _kernels.impl.string_object(args)  # string arguments (the most common) written at once
    if arguments is None:
        try:
            arguments = ARGUMENTS_ENCODER.encode(args)
        except (ValueError, RecursionError):
            return None
    arguments = _kernels.impl.strict_json(arguments)  # a lone surrogate as U+FFFD: strict parsers read it
    if call_id is None:
        return ToolCall(name.strip(), arguments)
    return ToolCall(name.strip(), arguments, id=call_id)


def read_from(calls: list[ToolCall], dialect: str) -> list[ToolCall]:
    """``calls``, just made by a grammar and seen by nothing else yet, marked as read from ``dialect``."""
    for call in calls:
        object.__setattr__(call, "dialect", dialect)  # a frozen dataclass: set once, where it is made
    return calls


def unique_ids(calls: list[ToolCall], seen: set[str]) -> list[ToolCall]:
    """``calls``, just taken by a scrubber, their ids unique in its message: a call whose id an earlier call
    has (an id the model wrote twice, Kimi's ``functions.NAME:0`` or Mistral's ``[CALL_ID]``) gets a fresh
    one (``new_call_id``); every id joins ``seen``, the scrubber's set. An id written once is kept."""
    for call in calls:
        if call.id in seen:
            object.__setattr__(call, "id", new_call_id())  # a frozen dataclass: set where it is taken
        seen.add(call.id)
    return calls


#: Names that stand for a tool's name in a format's description (``<tool_call>{"name": "function_name", …}``)
PLACEHOLDER_NAMES = frozenset(
    {"name", "func", "function", "function_name", "func_name", "fn", "fn_name", "tool_name", "tool_call_name"}
    | {"your_function", "my_function", "NAME", "FUNCTION_NAME", "TOOL_NAME", "FUNC_NAME", "functionName", "toolName"}
)
#: Strings that stand for a value in a format's description (``{"key": "value"}``), under a key that stands for a key
PLACEHOLDER_VALUES = frozenset({"value", "value1", "value2", "value3", "val", "<value>", "VALUE", "VALUE1"})
PLACEHOLDER_KEYS = frozenset({"key", "key1", "key2", "arg", "arg1", "arg2", "argument", "param", "param1", "param2"})
#: Strings that stand for an elided value, under any key (``subject='...'``)
ELISIONS = frozenset({"...", "…", "<...>", "<…>", "xxx"})
#: A description's example is short: longer arguments are never read as placeholders (nor searched)
PLACEHOLDER_MAX = 256
_PLACEHOLDER_HINTS = ("value", "VALUE", "...", "…", "val", "xxx")
#: What no function's name holds (a template's expression): quotes, a backslash, a "+" (a blank may: "Web Search")
_NOT_A_NAME = re.compile(r"[\"'`+\\]")


def placeholder(call: ToolCall) -> bool:
    """Whether ``call`` is a format's description rather than a call: a name no function can have (a template
    expression, no letter or digit), a placeholder name (``function_name``) without arguments, or arguments whose
    strings all stand for a value (``{"key": "value"}``; an elision, ``'...'``, under any key). Such a block
    stays text (``_table``)."""
    name = call.name
    if _NOT_A_NAME.search(name) or not any(c.isalnum() for c in name):
        return True
    arguments = call.arguments
    if len(arguments) > PLACEHOLDER_MAX or not any(hint in arguments for hint in _PLACEHOLDER_HINTS):
        return arguments == "{}" and name in PLACEHOLDER_NAMES
    values = json.loads(arguments)
    strings = [(k, v.strip()) for k, v in values.items() if isinstance(v, str)]
    scalars = all(v is None or isinstance(v, (str, int, float, bool)) for v in values.values())
    return (
        bool(strings)
        and scalars
        and all(v in ELISIONS or (v in PLACEHOLDER_VALUES and k in PLACEHOLDER_KEYS) for k, v in strings)
    )
