"""Body grammars of the JSON-style dialects: calls written as JSON, or as JSON after a name.

Every grammar has the signature ``grammar(opener, body, ctx) -> list[ToolCall] | None``:
``opener`` is the block's opener as written, ``body`` the text between opener and closer.
A grammar returns one or more calls; ``[]`` when the block is markup but malformed (it is
removed, no call); ``None`` when the body is not a call at all (the block stays as text; only
where a docstring says so). No grammar raises for a ``str``, and none invents content: JSON is
read strictly, then with the conservative repairs of ``relaxed_json`` (fence, leaked quote
tokens, bare or single-quoted keys, trailing commas, one pair of redundant braces), nothing else.

Where a body holds several calls, they are accepted only if all of them are well-formed:
one malformed element makes the whole block ``[]``.

The Hermes call object (``{"name", "arguments"}``) and DeepSeek's ``NAME<｜tool▁sep｜>{args}`` are read
here (``call_from_block``, ``hermes_json``, ``deepseek``), and every call object other grammars meet is
read by the same rules.

``bare_json_message`` is an opt-in whole-message format (a message that is only a call object).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import cast

from .. import _kernels
from .._calls import make_call, placeholder
from ..markers import ARGUMENT_KEYS, DEEPSEEK, DEEPSEEK_SEP, HERMES
from ..relaxed_json import NO_VALUE, decode, strip_fence
from ..toolcall import ToolCall
from .context import Context

__all__ = [
    "FUNCTION_OPENER",
    "GRAMMARS",
    "KIMI_ID",
    "KIMI_SPACED",
    "MISTRAL_HEAD",
    "NAME_ATTRIBUTE",
    "NAME_HEAD",
    "STREAM_HEADS",
    "Head",
    "apertus",
    "arrow_call",
    "as_written",
    "bare_calls",
    "bare_json_message",
    "call_from_block",
    "call_object_head",
    "deepseek",
    "function_gemma",
    "function_tag",
    "gemma4",
    "hermes_json",
    "json_calls",
    "json_lines_or_array",
    "kimi_k2",
    "mistral",
    "name_then_json",
    "named_arguments",
    "wrapped_call",
]

#: Keys a call object may have inside a ``wrapped_call`` wrapper (an ordinary word, so be strict).
_WRAPPED_KEYS = frozenset({"name", "arguments", "id", "type"})
#: An inner ``<json>…</json>`` inside a wrapper (llama.cpp accepts ``<xml><json>{…}</json></xml>``).
_INNER_JSON_TAG = re.compile(r"<(json|JSON)>(.*)</\1>", re.DOTALL)

FUNCTION_OPENER = re.compile(
    r"""<function\s*=\s*(?P<q1>["']?)(?P<n1>[^"'<>\s]+)(?P=q1)\s*>"""
    r"""|<function\s+name\s*=\s*(?P<q2>["'])(?P<n2>[^"'<>]+)(?P=q2)\s*>"""
)

KIMI_ARGUMENT_BEGIN = "<|tool_call_argument_begin|>"
#: The same token decoded by its id, by a tokenizer that lost K2's token names.
KIMI_RESERVED_ARGUMENT_BEGIN = "<|reserved_token_163598|>"
KIMI_ID = re.compile(r"(?P<name>\S+):[0-9]+")
#: An id, whitespace and an object: the argument token left out (vLLM's streamed leak writes it so).
KIMI_SPACED = re.compile(r"\s*(?P<id>\S+:[0-9]+)\s+(?=\{)")

_MISTRAL_CALL_ID = "[CALL_ID]"
_MISTRAL_ARGS = "[ARGS]"
#: ``NAME``, then optionally ``[CALL_ID]ID``, then optionally ``[ARGS]``; the JSON arguments follow.
MISTRAL_HEAD = re.compile(
    r"(?P<name>[^\s\[\]{}]+)\s*"
    rf"(?:{re.escape(_MISTRAL_CALL_ID)}\s*(?P<id>[^\s\[\]{{}}]+)\s*)?"
    rf"(?:{re.escape(_MISTRAL_ARGS)}\s*)?"
)

GEMMA4_QUOTE = '<|"|>'
FUNCTION_GEMMA_QUOTE = "<escape>"


# --- the Hermes call object and DeepSeek's bodies -------------------------------------------


def call_from_block(family: str, body: str) -> ToolCall | None:
    """Return the call written in ``body``, or ``None`` if it is malformed or has no name.

    ``family`` is ``markers.HERMES`` (a JSON object with ``name`` and ``arguments``) or
    ``markers.DEEPSEEK`` (``NAME<sep>{args}``, ``TYPE<sep>NAME`` + a fenced JSON object,
    or, without a separator, a Hermes body). Never raises for a ``str`` body; raises
    ``ValueError`` for an unknown family.
    """
    if family == HERMES:
        return _hermes_body(body)
    if family == DEEPSEEK:
        return _deepseek_body(body)
    raise ValueError(f"unknown tool-call family: {family!r}")


def hermes_json(opener: str, body: str, ctx: Context) -> list[ToolCall]:
    """A ``<tool_call>`` body that is one JSON call object (``call_from_block(HERMES, body)``); ``[]`` when
    malformed. (``dialects.hermes`` sends the other shapes of ``<tool_call>`` bodies elsewhere.)"""
    call = _hermes_body(body)
    return [] if call is None else [call]


def deepseek(opener: str, body: str, ctx: Context) -> list[ToolCall]:
    """DeepSeek V3/V3.1 bodies (``NAME<｜tool▁sep｜>{…}``, ``TYPE<｜tool▁sep｜>NAME`` + fenced JSON, the
    separator's bars full-width or ASCII) or a JSON object; ``[]`` when malformed."""
    if "｜" not in opener:
        body = body.replace(DEEPSEEK_SEP.replace("\uff5c", "|"), DEEPSEEK_SEP)
    call = _deepseek_body(body)
    return [] if call is None else [call]


def _hermes_body(body: str) -> ToolCall | None:
    """``{"name": ..., "arguments": ...}``: arguments under the first key present, maybe as JSON text."""
    call = _kernels.impl.hermes_call(body, "")  # a plain call object: its arguments kept as written
    if call is not None:
        return call
    value = decode(body.strip())
    return _call_object(value) if isinstance(value, dict) else None


def as_written(name: object, text: str, call_id: str | None = None) -> ToolCall | None:
    """The call of ``name`` with ``text`` as its arguments, kept as written (a lone surrogate as U+FFFD:
    ``strict_json``), when ``text`` is a
    plain JSON object (``_kernels.impl.plain_object``: strict JSON as ``json.loads`` reads it, JSON whitespace
    around it left out) and ``name`` a non-blank string; ``None`` otherwise. Where it gives a call,
    ``make_call(name, decode(text), call_id)`` gives one equal as JSON, at the cost of reading and writing
    the arguments again."""
    plain = _kernels.impl.plain_object(text)
    if plain is None or not isinstance(name, str) or not name.strip():
        return None
    arguments = text[plain[0] : plain[1]]
    arguments = _kernels.impl.strict_json(arguments)  # a lone surrogate as U+FFFD, as make_call writes it
    return ToolCall(name.strip(), arguments) if call_id is None else ToolCall(name.strip(), arguments, id=call_id)


def _deepseek_body(body: str) -> ToolCall | None:
    """V3.1 ``NAME<sep>{args}``, V3 ``TYPE<sep>NAME\\n```json {args}```; no separator: a JSON body."""
    call = _kernels.impl.deepseek_call(body, "")  # plain arguments: kept as written
    if call is not None:
        return call
    head, sep, tail = body.partition(DEEPSEEK_SEP)
    if not sep:
        return _hermes_body(body)
    if tail.lstrip().startswith(("{", "```")):
        return as_written(head, tail) or make_call(head, decode(tail))
    name, _, rest = tail.partition("\n")
    rest = strip_fence(rest)
    if not rest.strip():
        return make_call(name, {})
    return as_written(name, rest) or make_call(name, decode(rest))


def _call_object(call: dict, call_id: str | None = None) -> ToolCall | None:
    """The call of a call object: ``name``, and the arguments under the first of ``ARGUMENT_KEYS``
    present (missing, ``null`` or ``""``: ``{}``; a string: the JSON object it holds)."""
    args = next((call[key] for key in ARGUMENT_KEYS if key in call), None)
    if args is None or args == "":
        args = {}
    elif isinstance(args, str):
        args = decode(args)
    return make_call(call.get("name"), args, call_id)


# --- shared helpers ---------------------------------------------------------------------


def _object_call(obj: object, keep_id: bool = False, reread: bool = True) -> ToolCall | None:
    """A call object found in a body (``tool_name`` counts as ``name``), read by ``_call_object``; with
    ``keep_id`` a non-blank string ``id`` becomes the call's id."""
    if not isinstance(obj, dict):
        return None
    if "name" not in obj and "tool_name" in obj:  # Command R
        obj = {**obj, "name": obj["tool_name"]}
    written = obj.get("id")
    call_id = written.strip() if keep_id and isinstance(written, str) and written.strip() else None
    # The object is written as JSON text and read back before it is read, as it always was: that joins a
    # surrogate pair whose halves the model wrote one raw and one escaped ("\ud83d" + "\\ude00" -> one
    # character; keys that become equal merge). Reading ``obj`` as it is would change such arguments.
    # ``reread=False``: the text it was read from has no surrogate (raw or escaped), so neither has it, and
    # reading it back would give it again.
    if reread:
        try:
            obj = json.loads(json.dumps(obj))
        except (ValueError, RecursionError):
            return None
    return _call_object(cast("dict", obj), call_id)


#: a surrogate code point, raw or as a JSON escape (``\uD800``-``\uDFFF``); also matches an escaped
#: backslash before ``uD8..``, which only costs the reading back
_SURROGATE = re.compile(r"[\ud800-\udfff]|\\u[dD][89a-fA-F]")


def _all_calls(values: list, text: str, keep_id: bool = False) -> list[ToolCall]:
    """Every value (read from the JSON ``text``) as a call object, or ``[]`` if any of them is not one."""
    reread = _SURROGATE.search(text) is not None
    calls = [_object_call(value, keep_id, reread) for value in values]
    return [] if None in calls else cast("list[ToolCall]", calls)  # no None in it


def _semicolon_objects(text: str) -> list | None:
    """Llama 3's ``{…}; {…}``: JSON values separated by semicolons, or ``None``."""
    decoder = json.JSONDecoder()
    values, pos, end = [], 0, len(text)
    while True:
        try:
            value, pos = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            return None
        values.append(value)
        while pos < end and text[pos].isspace():
            pos += 1
        if pos == end:
            return values
        if text[pos] != ";":
            return None
        pos += 1
        while pos < end and text[pos].isspace():
            pos += 1


# --- JSON call objects --------------------------------------------------------------------


def json_calls(opener: str, body: str, ctx: Context) -> list[ToolCall] | None:
    """A JSON call object, an array of them, or (Llama 3) objects separated by ``;``.

    Each object is read by the Hermes rules (``call_from_block``) (``name`` or ``tool_name``; arguments under
    ``arguments``, ``parameters``, ``args`` or ``input``, maybe as JSON text). Used by Granite
    ``<|tool_call|>[…]`` / ``<tool_call>[…]``, Nemotron ``<TOOLCALL>``, InternLM
    ``<|action_start|><|plugin|>``, Llama 3 ``<|python_tag|>``, LongCat, Command R
    ``<|START_ACTION|>`` and Phi-4-mini ``functools[…]``. ``None`` when the body (inside one
    optional fence) does not start with ``{`` or ``[``: it is not JSON (Llama's python tag also
    carries code); ``[]`` when it is empty, JSON-shaped but not calls, or any element is
    malformed (an empty array is ``[]`` too: markup without a call).
    """
    text = strip_fence(body).strip()
    if not text:
        return []
    if not text.startswith(("{", "[")):
        return None
    if _SURROGATE.search(text) is None:  # plain call objects: read in one pass, arguments kept as written
        calls = _kernels.impl.array_calls(text, "") if text[0] == "[" else _kernels.impl.hermes_call(text, "")
        if calls is not None:
            return calls if isinstance(calls, list) else [calls]
    value = decode(text)
    if value is NO_VALUE:
        value = _semicolon_objects(text)
        if value is None:
            return []
    return _all_calls(value if isinstance(value, list) else [value], text)


def json_lines_or_array(opener: str, body: str, ctx: Context) -> list[ToolCall] | None:
    """MiniMax-M1 / Jamba / Hunyuan ``<tool_calls>`` bodies: one call object per line, or an array.

    ``<tool_calls>`` is also a word people write, so anything that is not call objects (prose,
    an empty body, objects without ``name``) returns ``None``: the text stays. Call objects that
    are malformed (``name`` present, arguments not an object) make the block ``[]``.
    """
    text = strip_fence(body).strip()
    if not text:
        return None
    value = decode(text)
    if value is NO_VALUE:
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if len(lines) < 2 or not all(line.startswith("{") for line in lines):
            return None
        value = [decode(line) for line in lines]
    elif not isinstance(value, list):
        value = [value]
    if not value or not all(isinstance(v, dict) and "name" in v for v in value):
        return None
    return _all_calls(value, text)


def wrapped_call(opener: str, body: str, ctx: Context) -> list[ToolCall] | None:
    """A ``{"name", "arguments"}`` object, or an array of them, inside a stray wrapper tag.

    The deviations llama.cpp accepts around Hermes bodies: ``<tools>``, ``<tool>``,
    ``<response>``, ``<json>``/``<JSON>``, ``<xml>`` (also holding ``<json>…</json>``) and
    ``<function_call>``, the body maybe fenced. These are ordinary words, so the body must be
    exactly call objects — keys ``name`` and ``arguments`` (``id``/``type`` allowed, nothing
    else) naming offered tools — or the result is ``None`` (text kept). ``[]`` only when such
    objects carry arguments that are not an object.
    """
    text = strip_fence(body).strip()
    inner = _INNER_JSON_TAG.fullmatch(text)
    if inner:
        text = strip_fence(inner.group(2)).strip()
    value = decode(text)
    values = value if isinstance(value, list) else [value]
    if not values or not all(_is_wrapped_call(v, ctx) for v in values):
        return None
    return _all_calls(values, text)


def _is_wrapped_call(value: object, ctx: Context) -> bool:
    return (
        isinstance(value, dict)
        and {"name", "arguments"} <= value.keys() <= _WRAPPED_KEYS
        and isinstance(value["name"], str)
        and ctx.known(value["name"].strip())
    )


def bare_json_message(text: str, ctx: Context) -> list[ToolCall] | None:
    """Opt-in: a whole message that is only ``{"name": …, "arguments"|"parameters": …}``.

    After stripping whitespace the message must be exactly one such object (no other keys) naming
    an offered tool, with object arguments; the call is returned, anything else is ``None``
    (there is no markup to remove, so never ``[]``).
    """
    stripped = text.strip()
    if not (stripped.startswith("{") and stripped.endswith("}")):
        return None
    value = decode(stripped)
    if not isinstance(value, dict) or len(value) != 2 or "name" not in value:
        return None
    if not ({"arguments", "parameters"} & value.keys()) or not isinstance(value["name"], str):
        return None
    if not ctx.known(value["name"].strip()):
        return None
    call = _object_call(value)
    return None if call is None else [call]


_BARE_KEYS = frozenset({"name", "arguments", "parameters", "type", "id"})
_BARE_WRAPPER_KEYS = frozenset({"type", "function", "id"})
#: every key a bare call object (or OpenAI's wrapper around one) may have: any other makes it text
BARE_CALL_KEYS = _BARE_KEYS | _BARE_WRAPPER_KEYS


def bare_calls(text: str, ctx: Context) -> list[ToolCall] | None:
    """A bare JSON value (strict JSON, no repair) that is a call of an offered tool, or a non-empty
    array of them; ``None`` otherwise, and always without ``tools``. A call is
    ``{"name", "arguments"|"parameters"}`` (also with ``"type": "function"`` and ``"id"``) or OpenAI's
    ``{"type": "function", "function": {"name", "arguments"}}`` (``id`` allowed); the arguments an
    object or JSON text holding one (``null`` is ``{}``). Any other key makes it text. The array may come
    in OpenAI's message key, ``{"tool_calls": [...]}`` (that key alone), as models echo it."""
    if not ctx.has_tools:
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if isinstance(value, dict) and value.keys() == {"tool_calls"}:
        value = value["tool_calls"]
        if not isinstance(value, list):
            return None
    values = value if isinstance(value, list) else [value]
    if not values:
        return None
    calls = []
    for item in values:
        call = _bare_call(item, ctx)
        if call is None:
            return None
        calls.append(call)
    return calls


def _bare_call(item: object, ctx: Context) -> ToolCall | None:
    if not isinstance(item, dict):
        return None
    if "function" in item:
        if item.get("type") != "function" or not item.keys() <= _BARE_WRAPPER_KEYS:
            return None
        item = item["function"]
        if not isinstance(item, dict):
            return None
    if not item.keys() <= _BARE_KEYS or item.get("type", "function") != "function":
        return None
    name = item.get("name")
    present = [key for key in ("arguments", "parameters") if key in item]
    if not isinstance(name, str) or len(present) != 1 or not ctx.known(name.strip()):
        return None
    args = item[present[0]]
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except (ValueError, RecursionError):
            return None
    call = make_call(name, {} if args is None else args)
    return None if call is None or placeholder(call) else call  # (a format's description: text)


# --- a name outside the JSON ----------------------------------------------------------------


def function_tag(opener: str, body: str, ctx: Context) -> list[ToolCall] | None:
    """Functionary v3.1 ``<function=NAME>{args}</function>`` and ``<function name="NAME">``.

    The name comes from the opener (``=`` form optionally quoted; ``name=`` form quoted with
    ``"`` or ``'``); the body is the JSON arguments object (strict, then relaxed; an empty body
    is ``{}``). ``None`` if the opener carries no name; ``[]`` if the body is not an object.
    """
    m = FUNCTION_OPENER.fullmatch(opener.strip())
    if not m:
        return None
    name = m.group("n1") or m.group("n2")
    text = strip_fence(body).strip()
    call = as_written(name, text) or make_call(name, decode(text) if text else {})
    return [] if call is None else [call]


def kimi_k2(opener: str, body: str, ctx: Context) -> list[ToolCall] | None:
    """Kimi K2 ``functions.NAME:IDX<|tool_call_argument_begin|>{args}`` (inside ``<|tool_call_begin|>``).

    The call id is the id as written (``functions.NAME:IDX``, or ``NAME:IDX`` without the
    prefix, which SGLang and vLLM accept too); the name is that id without ``functions.`` and
    ``:IDX``. An empty arguments text is ``{}``. The argument token may be written by its id
    (``<|reserved_token_163598|>``) or left out when whitespace separates the id from the object
    (``functions.f:0 {"a": 1}``; glued, ``:0{``, stays malformed); arguments encoded twice (a JSON
    string holding the object) are decoded once more. Anything else is ``[]``.
    """
    head, sep, tail = body.partition(KIMI_ARGUMENT_BEGIN)
    if not sep:
        head, sep, tail = body.partition(KIMI_RESERVED_ARGUMENT_BEGIN)
    if not sep:
        spaced = KIMI_SPACED.match(body)
        if spaced:
            head, sep, tail = spaced.group("id"), " ", body[spaced.end() :]
    call_id = head.strip()
    m = KIMI_ID.fullmatch(call_id) if sep else None
    if not m:
        return []
    name = m.group("name").removeprefix("functions.")
    text = tail.strip()
    call = as_written(name, text, call_id)
    if call is not None:
        return [call]
    args = decode(text) if text else {}
    if isinstance(args, str):  # arguments encoded twice: a JSON string holding the object
        args = decode(args)
    call = make_call(name, args, call_id)
    return [] if call is None else [call]


def mistral(opener: str, body: str, ctx: Context) -> list[ToolCall] | None:
    """The body after one ``[TOOL_CALLS]``, in each Mistral tokenizer's shape.

    Up to v7: a JSON array of ``{"name", "arguments", "id"?}`` (or one such object). v11:
    ``NAME[CALL_ID]ID[ARGS]{args}`` with the ``[CALL_ID]ID`` part optional, and ``NAME{args}``
    as vLLM sees it with the control tokens skipped; v13+: ``NAME[ARGS]{args}``. A call id
    written in the body (``"id"`` or ``[CALL_ID]``) becomes the call's id. Anything else is ``[]``.
    """
    text = body.strip()
    if text.startswith(("[", "{")):  # a name never starts so
        value = decode(text)
        if value is NO_VALUE:
            return []
        return _all_calls(value if isinstance(value, list) else [value], text, keep_id=True)
    m = MISTRAL_HEAD.match(text)
    if not m:
        return []
    args = text[m.end() :]
    name, call_id = m.group("name"), m.group("id")
    call = as_written(name, args, call_id) or make_call(name, decode(args) if args.startswith("{") else None, call_id)
    return [] if call is None else [call]


def apertus(opener: str, body: str, ctx: Context) -> list[ToolCall] | None:
    """Apertus ``[{"NAME": {args}}, …]`` (between ``<|tools_prefix|>`` and ``<|tools_suffix|>``).

    Each element is an object with exactly one key, the tool name, whose value is the arguments
    object (``null`` or ``""`` read as ``{}``, as in a call object); a single such object without
    the array is accepted too. Anything else, in any element, is ``[]``.
    """
    value = decode(body.strip())
    if value is NO_VALUE:
        return []
    calls = []
    for element in value if isinstance(value, list) else [value]:
        if not isinstance(element, dict) or len(element) != 1:
            return []
        ((name, args),) = element.items()
        call = make_call(name, {} if args is None or args == "" else args)
        if call is None:
            return []
        calls.append(call)
    return calls


def named_arguments(name: str, body: str) -> list[ToolCall]:
    """A call whose name was written outside the body (``<tool_call name="NAME">{args}</tool_call>``):
    the body (maybe fenced; empty is ``{}``) is the arguments object — unless it is itself a call object
    (``name`` and ``arguments``/``parameters``/``args``/``input``, no other keys but ``id``/``type``):
    read as one if it names the same tool, ``[]`` if another (which one was meant is not known).
    ``[]`` if the body is not an object."""
    text = strip_fence(body).strip()
    value = decode(text) if text else {}
    if isinstance(value, dict) and "name" in value and value.keys() & ARGUMENT_KEYS and value.keys() <= _CALL_KEYS:
        same = isinstance(value["name"], str) and value["name"].strip() == name.strip()
        call = _object_call(value) if same else None
        return [] if call is None else [call]
    call = make_call(name, value)
    return [] if call is None else [call]


_CALL_KEYS = frozenset({*ARGUMENT_KEYS, "name", "id", "type"})


NAME_HEAD = re.compile(r"\s*(?P<name>[^\s{}\[\]<>\"'`]+)\s*")


def name_then_json(opener: str, body: str, ctx: Context) -> list[ToolCall] | None:
    """``NAME`` then its JSON arguments object, maybe in a markdown fence (``NAME\n```json\n{…}\n```\n``),
    as DeepSeek V3 writes after its separator; nothing after the name is ``{}``. ``[]`` otherwise."""
    m = NAME_HEAD.match(body)
    if not m:
        return []
    text = strip_fence(body[m.end() :]).strip()
    call = as_written(m.group("name"), text) or make_call(m.group("name"), decode(text) if text else {})
    return [] if call is None else [call]


# --- MiniMax's [TOOL_CALL] {tool => "NAME", args => {--key "value"}} notation ---------------------

_ARROW = re.compile(r"\{\s*tool\s*=>\s*")
_ARROW_ARGS = re.compile(r"\s*,\s*args\s*=>\s*")
_FLAG = re.compile(r"--(?P<key>[^\s=\-][^\s=]*)(?:\s*=\s*|\s+)")
_BARE_VALUE = re.compile(r"[^\s{}\[\],\"']+")
_DECODER = json.JSONDecoder()


def arrow_call(opener: str, body: str, ctx: Context) -> list[ToolCall] | None:
    """MiniMax M2.5/M2.7's ``[TOOL_CALL]`` bodies: ``{tool => "NAME", args => {--key "value" --n 20}}``,
    one or more. ``args`` holds ``--key VALUE`` flags — VALUE a JSON value, or one bare word read as
    a string — or a JSON object (strict, then relaxed: ``{path: "x"}``); without ``args`` the call has
    none. A JSON call object or array (``{"name", "arguments"}``) is read as such. ``None`` (the text
    stays) when the body starts neither way; ``[]`` when it starts so but is malformed (``args => {...}``).
    """
    text = strip_fence(body).strip()
    if not _ARROW.match(text):
        return json_calls(opener, body, ctx) if text.startswith(('{"', "[")) else None
    calls, pos, end = [], 0, len(text)
    try:
        while pos < end:
            m = _ARROW.match(text, pos)
            if not m:
                return []
            name, pos = _DECODER.raw_decode(text, m.end())
            args: object = {}
            m = _ARROW_ARGS.match(text, pos)
            if m:
                args, pos = _arrow_args(text, m.end())
            pos = _space_end(text, pos)
            if not text.startswith("}", pos):
                return []
            call = make_call(name, args)
            if call is None:
                return []
            calls.append(call)
            pos = _space_end(text, pos + 1)
    except (ValueError, RecursionError):  # a JSON value that does not decode
        return []
    return calls


def _arrow_args(text: str, pos: int) -> tuple[object, int]:
    """The ``args`` value at ``pos``: ``{--k v …}`` flags or an object; (value, end). ValueError if neither."""
    if not text.startswith("{", pos):
        raise ValueError("args is not an object")
    inner = _space_end(text, pos + 1)
    if not text.startswith("--", inner):
        end = _object_end(text, pos)
        value = decode(text[pos:end])
        if value is NO_VALUE:
            raise ValueError("args is not an object")
        return value, end
    args: dict = {}
    pos = inner
    while not text.startswith("}", pos):
        m = _FLAG.match(text, pos)
        if not m or m.group("key") in args:
            raise ValueError("not a --key value flag")
        pos = m.end()
        try:
            value, pos = _DECODER.raw_decode(text, pos)
        except ValueError:
            bare = _BARE_VALUE.match(text, pos)
            if not bare:
                raise
            value, pos = bare.group(), bare.end()
        args[m.group("key")] = value
        pos = _space_end(text, pos)
        if text.startswith(",", pos):
            pos = _space_end(text, pos + 1)
    return args, pos + 1


def _object_end(text: str, pos: int) -> int:
    """The index after the ``}`` that closes the object opening at ``pos`` (strings skipped); ValueError
    when it does not close."""
    depth, quote, k, n = 0, "", pos, len(text)
    while k < n:
        c = text[k]
        if quote:
            if c == "\\":
                k += 1
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
            if depth == 0:
                return k + 1
        k += 1
    raise ValueError("unclosed object")


# --- Gemma's call:NAME{…} notation ----------------------------------------------------------


def gemma4(opener: str, body: str, ctx: Context) -> list[ToolCall] | None:
    """Gemma 4 ``call:NAME{key:<|"|>text<|"|>,n:42,on:true,obj:{…},list:[…]}``, one or more.

    Keys are bare (words, single spaces between them allowed) or quoted; a ``<|"|>``-delimited
    value is a string taken verbatim (no escapes), numbers, ``true``, ``false`` and ``null`` are as in
    JSON, a JSON ``"…"`` string is accepted too. Types come from the text, never from the schema. Calls may follow each
    other in one block (SGLang's streaming parser reads them so). Anything else — a bare word
    value, an unterminated string, a missing brace — makes the block ``[]``.
    """
    return _call_notation(body, GEMMA4_QUOTE)


def function_gemma(opener: str, body: str, ctx: Context) -> list[ToolCall] | None:
    """FunctionGemma ``call:NAME{key:<escape>text<escape>,n:3}`` (inside ``<start_function_call>``).

    The same notation as ``gemma4`` with ``<escape>`` as the string delimiter.
    """
    return _call_notation(body, FUNCTION_GEMMA_QUOTE)


_CALL_HEAD = re.compile(r"call:\s*(?P<name>[^\s{}\[\],:<>\"']+)\s*\{")
_SPACE = re.compile(r"\s*")
#: a bare key: words, with single spaces between them (``key with space:1``, as Gemma 4 writes a schema's key)
_BARE_KEY = re.compile(r"[^\s:,{}\[\]<>\"']+(?: [^\s:,{}\[\]<>\"']+)*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LITERALS = {"true": True, "false": False, "null": None}
_LITERAL = re.compile(r"true|false|null")


def _space_end(text: str, pos: int) -> int:
    """The index after the whitespace at ``pos``: ``_SPACE`` matches anywhere, if only the empty string."""
    m = _SPACE.match(text, pos)
    assert m is not None
    return m.end()


class _Malformed(Exception):
    """The notation is broken at this point."""


#: How many of ``, : { [`` a Gemma notation body may have outside its quoted strings: it is read in Python,
#: at microseconds per member, so a body of tens of thousands of members is malformed rather than a CPU
#: sink (as ``pythonic.NODES_MAX``). One long string, however long, is no node.
NOTATION_NODES_MAX = 4096


def too_many_nodes(text: str, quote: str, nodes: str, cap: int) -> bool:
    """More than ``cap`` of the ``nodes`` characters in ``text`` outside its strings: what lies between a
    ``quote`` and the next one, paired from the start (a last quote that no other closes opens none). Counted
    at C speed over the text outside the strings only (``str.split`` finds the quotes): a long string, however
    dense in ``nodes``, costs one search. ``quote`` itself holds none of ``nodes``."""
    parts = text.split(quote)
    outside = parts[0::2] if len(parts) % 2 else [*parts[0::2], parts[-1]]
    return sum(part.count(node) for part in outside for node in nodes) > cap


def _call_notation(body: str, quote: str) -> list[ToolCall]:
    """Every ``call:NAME{…}`` in ``body`` (only whitespace between), or ``[]``."""
    if too_many_nodes(body, quote, ",:{[", NOTATION_NODES_MAX):
        return []
    reader = _Notation(body, quote)
    calls = []
    try:
        reader.skip_space()
        while reader.pos < len(body):
            m = _CALL_HEAD.match(body, reader.pos)
            if not m:
                return []
            reader.pos = m.end()
            call = make_call(m.group("name"), reader.members())
            if call is None:
                return []
            calls.append(call)
            reader.skip_space()
    except (_Malformed, RecursionError, ValueError):  # ValueError: an int too long to convert
        return []
    return calls


class _Notation:
    """A cursor over Gemma's notation; each method consumes one construct or raises ``_Malformed``."""

    def __init__(self, text: str, quote: str) -> None:
        self.text = text
        self.quote = quote
        self.pos = 0

    def skip_space(self) -> None:
        self.pos = _space_end(self.text, self.pos)

    def take(self, char: str) -> bool:
        """Consume ``char`` (after whitespace) if it is next."""
        self.skip_space()
        if self.text.startswith(char, self.pos):
            self.pos += len(char)
            return True
        return False

    def members(self) -> dict:
        """``key:value`` pairs up to the ``}`` closing an object whose ``{`` was consumed."""
        result: dict = {}
        while not self.take("}"):
            key = self.key()
            if not self.take(":"):
                raise _Malformed
            result[key] = self.value()
            if not self.take(","):
                if not self.take("}"):
                    raise _Malformed
                break
        return result

    def items(self) -> list:
        """Values up to the ``]`` closing an array whose ``[`` was consumed."""
        result: list = []
        while not self.take("]"):
            result.append(self.value())
            if not self.take(","):
                if not self.take("]"):
                    raise _Malformed
                break
        return result

    def key(self) -> str:
        self.skip_space()
        if self.text.startswith((self.quote, '"'), self.pos):
            return self.string()
        m = _BARE_KEY.match(self.text, self.pos)
        if not m:
            raise _Malformed
        self.pos = m.end()
        return m.group()

    def string(self) -> str:
        """A delimited string (verbatim) or a JSON string at the cursor."""
        text, pos = self.text, self.pos
        if text.startswith(self.quote, pos):
            end = text.find(self.quote, pos + len(self.quote))
            if end < 0:
                raise _Malformed
            self.pos = end + len(self.quote)
            return text[pos + len(self.quote) : end]
        try:
            # scanstring: json's own string reader (C, or its Python fallback); typeshed leaves it out
            value, self.pos = json.decoder.scanstring(text, pos + 1)  # type: ignore[attr-defined]
        except ValueError:
            raise _Malformed from None
        return value

    def value(self) -> object:
        self.skip_space()
        text, pos = self.text, self.pos
        if text.startswith((self.quote, '"'), pos):
            return self.string()
        if text.startswith("{", pos):
            self.pos += 1
            return self.members()
        if text.startswith("[", pos):
            self.pos += 1
            return self.items()
        m = _NUMBER.match(text, pos) or _LITERAL.match(text, pos)
        if not m:
            raise _Malformed
        self.pos = m.end()
        token = m.group()
        if token in _LITERALS:
            return _LITERALS[token]
        return float(token) if any(c in token for c in ".eE") else int(token)


#: A ``name="…"`` attribute in a tag opener's attribute text (``<tool_call id="…" name="NAME">``).
NAME_ATTRIBUTE = re.compile(r"""\sname\s*=\s*(?:"([^"<>]*)"|'([^'<>]*)')""")


# -- stream heads: what comes before a JSON call's arguments object, as _events.CallEvents reads it --------

_JSON_WS = " \t\n\r"
_ASCII_SEP = DEEPSEEK_SEP.replace("\uff5c", "|")
#: ``{"name": "NAME", "arguments": `` up to the arguments object (the Hermes call object, name first)
_CALL_OBJECT_HEAD = re.compile(
    r'\s*\{[ \t\n\r]*"name"[ \t\n\r]*:[ \t\n\r]*"(?P<name>[^"\\]*)"[ \t\n\r]*,'
    r'[ \t\n\r]*"(?:arguments|parameters|args|input)"[ \t\n\r]*:[ \t\n\r]*'
)

Head = tuple[str, str | None]  # the call's name, and the id written in the body (None: a fresh one)


def call_object_head(opener: str, head: str) -> Head | None:
    """A Hermes call object's head: ``{"name": "NAME", "arguments": `` up to the arguments object."""
    m = _CALL_OBJECT_HEAD.fullmatch(head)
    return None if m is None else (m.group("name"), None)


def _fenced(text: str) -> bool:
    """``text`` (what comes before the arguments' ``{``) is blank, or opens one markdown fence
    (```` ``` ```` or ```` ```json ````, a line break, JSON whitespace), as ``relaxed_json.strip_fence`` reads."""
    text = text.lstrip()
    if not text:
        return True
    newline = text.find("\n")
    return (
        text.startswith("```")
        and newline >= 0
        and text[3:newline].strip().lower() in ("", "json")
        and not text[newline + 1 :].strip(_JSON_WS)
    )


def _hermes_head(opener: str, head: str) -> Head | None:
    """``dialects.hermes``: a call object; not when the opener names the tool (its own grammar)."""
    named = NAME_ATTRIBUTE.search(opener)
    if named and (named.group(1) or named.group(2) or "").strip():
        return None
    return call_object_head(opener, head)


def _deepseek_head(opener: str, head: str) -> Head | None:
    """``jsonlike.deepseek``: ``NAME<sep>{`` (V3.1), ``TYPE<sep>NAME`` and a fence (V3), or a call object."""
    if "\uff5c" not in opener:
        head = head.replace(_ASCII_SEP, DEEPSEEK_SEP)
    name, sep, tail = head.partition(DEEPSEEK_SEP)
    if not sep:
        return call_object_head(opener, head)
    if not tail.strip():
        return name, None
    if tail.lstrip().startswith("```"):  # V3.1 with a fence: read as JSON again, not as written
        return None
    name, _, fence = tail.partition("\n")
    return (name, None) if _fenced(fence) else None


def _kimi_head(opener: str, head: str) -> Head | None:
    """``jsonlike.kimi_k2``: ``functions.NAME:IDX<|tool_call_argument_begin|>{`` (the id is the call's)."""
    call_id, sep, tail = head.partition(KIMI_ARGUMENT_BEGIN)
    if not sep:
        call_id, sep, tail = head.partition(KIMI_RESERVED_ARGUMENT_BEGIN)
    if not sep:
        spaced = KIMI_SPACED.match(head + "{")
        if spaced is None:
            return None
        call_id, tail = spaced.group("id"), head[spaced.end() :]
    m = KIMI_ID.fullmatch(call_id.strip())
    if m is None or tail.strip():
        return None
    return m.group("name").removeprefix("functions."), call_id.strip()


def _function_head(opener: str, head: str) -> Head | None:
    """``dialects.function``: the name in the opener (``<function=NAME>``), the body a (fenced) object."""
    m = FUNCTION_OPENER.fullmatch(opener.strip())
    return (m.group("n1") or m.group("n2"), None) if m and _fenced(head) else None


def _mistral_head(opener: str, head: str) -> Head | None:
    """``jsonlike.mistral``: ``NAME{``, ``NAME[ARGS]{``, ``NAME[CALL_ID]ID[ARGS]{`` (the id is the call's)."""
    head = head.strip()
    m = MISTRAL_HEAD.match(head) if head else None
    return (m.group("name"), m.group("id")) if m and m.end() == len(head) else None


def _name_then_json_head(opener: str, head: str) -> Head | None:
    """``dialects.dsml_toolcall``'s ``NAME`` then a (fenced) object."""
    m = NAME_HEAD.match(head)
    return (m.group("name"), None) if m and _fenced(head[m.end() :]) else None


#: The stream heads (``_events.CallEvents``): grammar name -> (how many ``{`` may come before the arguments'
#: own, the reader of the text before it: the call's name and the id written in the body, or None).
STREAM_HEADS: dict[str, tuple[int, Callable[[str, str], Head | None]]] = {
    "hermes": (1, _hermes_head),
    "deepseek": (1, _deepseek_head),
    "kimi_k2": (0, _kimi_head),
    "function": (0, _function_head),
    "mistral": (0, _mistral_head),
    "dsml_toolcall": (0, _name_then_json_head),
}


#: this family's body grammars, by the names ``markers.BLOCKS`` uses (``dialects.GRAMMARS`` gathers them)
GRAMMARS = {
    "deepseek": deepseek,
    "kimi_k2": kimi_k2,
    "json_lines_or_array": json_lines_or_array,
    "json_calls": json_calls,
    "mistral": mistral,
    "gemma4": gemma4,
    "function_gemma": function_gemma,
    "apertus": apertus,
    "wrapped_call": wrapped_call,
    "arrow_call": arrow_call,
}
