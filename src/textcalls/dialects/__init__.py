"""Body grammars: the text of one block -> its calls.

A grammar is ``grammar(opener, body, ctx) -> list[ToolCall] | None``: ``opener`` is the opener as
written (a tag opener with its attributes), ``body`` the text between opener and closer, ``ctx`` the
request's tools (``Context``). It returns the calls (``[]``: markup, but malformed — removed without a
call) or ``None``: not a call at all, the block's text stays. Grammars never raise for any text.
``GRAMMARS`` maps the names used in ``markers.BLOCKS`` to them: each family module (``jsonlike``, ``xml``,
``pythonic``, ``harmony``) exports its own ``GRAMMARS``, gathered here with the grammars below that choose
between families by a body's shape.
"""

from __future__ import annotations

import json
import re

from ..toolcall import ToolCall
from . import harmony as _harmony
from . import jsonlike, pythonic, xml
from .context import Context
from .jsonlike import NAME_ATTRIBUTE

__all__ = ["GRAMMARS", "NAME_ATTRIBUTE", "WHOLE_MESSAGE", "Context"]

_GLM_NAME = re.compile(r"[\w.:-]+")
_NONBLANK = re.compile(r"\S")
#: a ``<tool_call>`` body's name written as a tag before its JSON arguments: ``<function>NAME</function>\n{…}``
_NAME_TAG = re.compile(r"<(function|name|tool_name)>\s*([\w.:-]+)\s*</\1>\s*(?=\{)")


def hermes(opener: str, body: str, ctx: Context) -> list[ToolCall] | None:
    """``<tool_call>`` bodies, by their shape: a JSON call object or an array of them (Granite 3.1),
    Qwen3-Coder XML (``<function=…>``), a name tag then the JSON arguments (``<function>NAME</function>{…}``),
    or GLM (``NAME<arg_key>…``, or ``NAME`` and a line break: a
    call without arguments; a lone word only when it names an offered tool: GLM-4.7's
    ``<tool_call>get_time</tool_call>``). When the opener names the tool
    (``<tool_call id="…" name="NAME">``) a body that is empty or an object is its arguments."""
    first = _NONBLANK.search(body)  # body.strip() is body[lo:hi] (found without copying a big body)
    lo = first.start() if first else len(body)
    hi = xml.text_end(body, lo, len(body))
    named = NAME_ATTRIBUTE.search(opener)
    if named and (named.group(1) or named.group(2) or "").strip() and (lo == hi or body.startswith(("{", "```"), lo)):
        return jsonlike.named_arguments((named.group(1) or named.group(2)).strip(), body)
    if body.startswith("{", lo):  # a JSON call object (GLM and Qwen3-Coder bodies never start so)
        return jsonlike.hermes_json(opener, body, ctx)
    if body.startswith("[", lo):
        return jsonlike.json_calls(opener, body, ctx)
    if body.startswith("<function=", lo):
        return xml.qwen3_xml(opener, body, ctx)
    tagged = _NAME_TAG.match(body, lo)
    if tagged:  # <function>NAME</function> then its JSON arguments (a Hermes cousin)
        return jsonlike.named_arguments(tagged.group(2), body[tagged.end() :])
    if (
        body.find("<arg_key>", lo, hi) >= 0
        or body.find("</arg_key>", lo, hi) >= 0
        or (
            _GLM_NAME.fullmatch(body, lo, hi)
            and (body.startswith("\n", hi) or (ctx.has_tools and ctx.known(body[lo:hi])))
        )
    ):
        return xml.glm(opener, body, ctx)
    return jsonlike.hermes_json(opener, body, ctx)


def function(opener: str, body: str, ctx: Context) -> list[ToolCall] | None:
    """``<function=NAME>`` / ``<function name="NAME">`` blocks: JSON arguments (Functionary v3.1),
    Qwen3-Coder parameter tags when the model left out the ``<tool_call>`` around them, or MiniCPM's
    ``<param name="P">V</param>`` values."""
    if opener.startswith("<function=") and body.lstrip().startswith("<parameter="):  # (by the body's shape: a
        # JSON body's string may mention the tag)
        return xml.qwen3_xml(opener, opener + body + "</function>", ctx)
    if opener.startswith("<function ") and body.lstrip().startswith("<param "):  # MiniCPM's XML values
        return xml.function_params(opener, body, ctx)
    return jsonlike.function_tag(opener, body, ctx)


def dsml_toolcall(opener: str, body: str, ctx: Context) -> list[ToolCall] | None:
    """``<｜DSML｜toolcall>`` bodies: DSML invokes (a misspelled ``<｜DSML｜tool_calls>``), or ``NAME``
    followed by its (fenced) JSON arguments."""
    if body.lstrip().startswith("<"):
        return xml.dsml(opener, body, ctx)
    return jsonlike.name_then_json(opener, body, ctx)


def function_calls(opener: str, body: str, ctx: Context) -> list[ToolCall] | None:
    """``<function_calls>`` bodies (the table's ``pythonic_lines`` grammar): Olmo 3's pythonic calls, one
    per line (``pythonic.pythonic_lines``), or ``<invoke name="F"><parameter name="P">V</parameter></invoke>``
    — Claude's XML, and DeepSeek V3.2 DSML whose ``｜DSML｜`` markers a server stripped — read as MiniMax-M2
    invokes (values typed by the schema)."""
    if body.lstrip().startswith("<invoke"):
        return xml.minimax_m2(opener, body, ctx)
    return pythonic.pythonic_lines(opener, body, ctx)


def json_message(text: str, ctx: Context) -> list[ToolCall] | None:
    """Opt-in whole message: only ``{"name", "arguments"|"parameters"}`` (Llama 3.x), or a JSON array
    of such objects; ``None`` otherwise (the text stays)."""
    stripped = text.strip()
    if not stripped.startswith("["):
        return jsonlike.bare_json_message(stripped, ctx)
    try:
        items = json.loads(stripped)
    except (ValueError, RecursionError):
        return None
    if not isinstance(items, list) or not items:
        return None
    calls = []
    for item in items:
        # Each item goes through JSON text once more, as it always has: that joins a surrogate pair written
        # half raw, half escaped before the name is checked against the tools (see jsonlike._object_call).
        try:
            one = jsonlike.bare_json_message(json.dumps(item), ctx) if isinstance(item, dict) else None
        except (ValueError, RecursionError):
            one = None
        if one is None:
            return None
        calls += one
    return calls


#: Whole-message formats (off by default): a grammar over the whole text, and the first characters
#: (after whitespace) a message it could read starts with.
WHOLE_MESSAGE = {
    "json_message": (json_message, "{["),
    "pythonic_message": (pythonic.pythonic_message, "["),
}

#: the grammars that choose a family's grammar by a body's shape (openers more than one family writes)
_BY_SHAPE = {
    "hermes": hermes,
    "function": function,
    "pythonic_lines": function_calls,
    "dsml_toolcall": dsml_toolcall,
}


def _gathered(*tables: dict) -> dict:
    """The families' ``GRAMMARS`` in one map; a name two families give is an error (at import)."""
    merged: dict = {}
    for table in tables:
        clash = merged.keys() & table.keys()
        if clash:
            raise ValueError(f"grammar names given twice: {sorted(clash)}")
        merged.update(table)
    return merged


GRAMMARS = _gathered(_BY_SHAPE, jsonlike.GRAMMARS, xml.GRAMMARS, pythonic.GRAMMARS, _harmony.GRAMMARS)
