"""What a body grammar may know about the request: the offered tools and their parameter schemas."""

from __future__ import annotations

import json
import math

from ..relaxed_json import NO_VALUE

__all__ = ["Context", "convert_text", "schema_kinds"]


class Context:
    """Built from the request's OpenAI ``tools`` list (or ``None``: no schema, values stay strings).

    ``value(tool, param, text)`` types an XML-style string value by the parameter's JSON schema
    ``type`` (integer, number, boolean, object, array, null; a list of types is tried in order);
    a value that does not fit, or a parameter without a schema, stays the string ``text``.
    """

    __slots__ = ("_params", "_schemas", "memo")

    def __init__(self, tools=None) -> None:
        self._params: dict | None = None
        self._schemas: dict = {}
        self.memo: dict = {}  #: what a reader derives from the tools once (``_guided``'s names)
        if tools is None:
            return
        if not isinstance(tools, list):
            raise TypeError(f"tools must be a list of OpenAI tool objects, not {type(tools).__name__}")
        self._params = {}
        for i, tool in enumerate(tools):
            fn = tool.get("function") if isinstance(tool, dict) else None
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                raise ValueError(
                    f"tools[{i}] is not an OpenAI function tool ({{'type': 'function', 'function': {{'name': …}}}})"
                )
            schema = fn.get("parameters")
            props = schema.get("properties") if isinstance(schema, dict) else None
            self._params[fn["name"]] = props if isinstance(props, dict) else {}
            self._schemas[fn["name"]] = schema if isinstance(schema, dict) else {}

    @property
    def has_tools(self) -> bool:
        return self._params is not None

    def known(self, tool: str) -> bool:
        """Whether ``tool`` was offered (always True when no tools were given)."""
        return self._params is None or tool in self._params

    def names(self) -> list[str]:
        """The offered tools' names (none without tools)."""
        return list(self._params or ())

    def schema(self, tool: str) -> dict:
        """``tool``'s ``parameters`` schema as given (``{}`` when it has none)."""
        return self._schemas.get(tool, {})

    def value(self, tool: str, param: str, text: str):
        """``text`` typed by the schema of ``tool``'s parameter ``param``; the string itself otherwise."""
        if not self._params:
            return text
        schema = self._params.get(tool, {}).get(param)
        for t in schema_kinds(schema):
            typed = convert_text(t, text.strip())
            if typed is not NO_VALUE:
                return typed
        return text


def schema_kinds(schema) -> list:
    """The JSON types a parameter's ``schema`` allows, in order: its ``type`` (a name or a list), else the
    types of its ``anyOf`` / ``oneOf`` members (Pydantic writes ``Optional[int]`` as ``anyOf: [{type:
    integer}, {type: null}]``), one level deep."""
    if not isinstance(schema, dict):
        return []
    kind = schema.get("type")
    if kind is not None:
        return kind if isinstance(kind, list) else [kind]
    out: list = []
    for key in ("anyOf", "oneOf"):
        members = schema.get(key)
        for member in members if isinstance(members, list) else ():
            member_kind = member.get("type") if isinstance(member, dict) else None
            out += member_kind if isinstance(member_kind, list) else [member_kind]
    return out


def convert_text(kind, text: str):
    if kind == "string":
        return NO_VALUE
    if kind == "integer":
        try:
            return int(text)
        except ValueError:
            return NO_VALUE
    if kind == "number":
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            return NO_VALUE
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        return value if ok else NO_VALUE
    if kind == "boolean":
        return {"true": True, "false": False}.get(text.lower(), NO_VALUE)
    if kind == "null":
        return None if text.lower() in ("null", "none", "") else NO_VALUE
    if kind in ("object", "array"):
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            return NO_VALUE
        return value if isinstance(value, dict if kind == "object" else list) else NO_VALUE
    return NO_VALUE
