"""OpenAI rewriting: the recovery gate, ``chat.completion`` responses, and structured calls whose
``function.name`` carries markup (``NameRepair``)."""

from __future__ import annotations

import json
from collections import Counter

from .dialects import GRAMMARS
from .dialects.jsonlike import KIMI_ARGUMENT_BEGIN
from .markers import DEEPSEEK, DEEPSEEK_OPEN, DEEPSEEK_SEP, HERMES
from .options import Options, options_of
from .parse import parse
from .toolcall import ToolCall

__all__ = ["NameRepair", "check_gate", "recover_response", "should_recover"]


def check_gate(native: bool, has_tools: bool) -> None:
    """TypeError unless both of the gate's flags are bools."""
    if not isinstance(native, bool):
        raise TypeError(f"native must be a bool, not {type(native).__name__}")
    if not isinstance(has_tools, bool):
        raise TypeError(f"has_tools must be a bool, not {type(has_tools).__name__}")


def should_recover(native: bool, has_tools: bool, structured_calls: int) -> bool:
    """Whether to recover text calls: tools were offered, and the model is prompt-guided or
    (native) sent no structured call itself."""
    check_gate(native, has_tools)
    if not isinstance(structured_calls, int) or isinstance(structured_calls, bool):
        raise TypeError(f"structured_calls must be an int, not {type(structured_calls).__name__}")
    if structured_calls < 0:
        raise ValueError(f"structured_calls must be >= 0, not {structured_calls}")
    return has_tools and (not native or structured_calls == 0)


def recover_response(response: dict, *, native: bool, has_tools: bool, tally: Counter | None = None, **options) -> dict:
    """Recover text tool calls in an OpenAI ``chat.completion`` object.

    The gate is applied per choice with that choice's own ``tool_calls`` count. A choice changes
    only when markup was removed from its string ``content`` (or reasoning moved out of it, with
    ``reasoning_started``; or, with ``trim_blanks``, blanks dropped): content becomes the cleaned text
    (``None`` when empty), reasoning it held (``<think>`` …) goes to ``reasoning_content``,
    recovered calls are appended after its ``tool_calls`` and ``finish_reason`` becomes
    ``"tool_calls"`` when any were recovered. The input is never
    mutated; when no choice changes, the very same object is returned. ``options`` are ``parse``'s
    (``formats``, ``tools``, ``unknown_tools``, ``max_block``).

    With ``has_tools``, whatever the gate says, a structured ``tool_calls`` entry whose
    ``function.name`` carries markup is repaired (``NameRepair``): the choice then changes even
    when its content does not, and the repaired call still counts as the structured call it is.

    ``tally``, a ``collections.Counter``, counts what recovery did: ``("calls", DIALECT)`` for each call
    recovered (``ToolCall.dialect``), ``("malformed", "")`` for each block removed without a call.
    """
    if not isinstance(response, dict):
        raise TypeError(f"response must be a dict, not {type(response).__name__}")
    check_gate(native, has_tools)
    opts = options_of(options)
    choices = response.get("choices")
    if choices is None:
        return response
    if not isinstance(choices, list):
        raise TypeError(f"response['choices'] must be a list, not {type(choices).__name__}")
    new_choices = None
    names: list = []  # the NameRepair, built at the first structured name that needs one
    for i, choice in enumerate(choices):
        new = _recover_choice(choice, i, native, has_tools, opts, names, tally)
        if new is not None:
            if new_choices is None:
                new_choices = list(choices)
            new_choices[i] = new
    if new_choices is None:
        return response
    return {**response, "choices": new_choices}


def _recover_choice(choice, i: int, native: bool, has_tools: bool, options: Options, names: list, tally):
    """The rewritten choice, or None when it stays as it is."""
    if not isinstance(choice, dict):
        raise TypeError(f"response['choices'][{i}] must be a dict, not {type(choice).__name__}")
    message = choice.get("message")
    if message is None:
        return None
    if not isinstance(message, dict):
        raise TypeError(f"response['choices'][{i}]['message'] must be a dict, not {type(message).__name__}")
    structured = message.get("tool_calls")
    if structured is None:
        structured = []
    elif not isinstance(structured, list):
        raise TypeError(
            f"response['choices'][{i}]['message']['tool_calls'] must be a list, not {type(structured).__name__}"
        )
    repaired = structured
    if has_tools is True and any(map(marked, structured)):
        if not names:
            names.append(NameRepair(options))
        repaired = names[0].entries(structured)
    content = message.get("content")
    parsed = None
    if isinstance(content, str) and should_recover(native, has_tools, len(structured)):
        parsed = parse(content, options=options, truncated=choice.get("finish_reason") == "length")
        if tally is not None:
            count(tally, parsed.calls, parsed.malformed)
    # (trim_blanks: the text, all of it reasoning with reasoning_started, may have lost only blanks: a change too)
    if parsed is None or not (
        parsed.removed or parsed.reasoning or (options.trim_blanks and parsed.content != content)
    ):
        if repaired is structured:
            return None
        return {**choice, "message": {**message, "tool_calls": repaired}}
    message = {**message, "content": parsed.content or None}
    if repaired is not structured:
        message["tool_calls"] = repaired
    if parsed.reasoning:  # <think> text moved out of the content
        message["reasoning_content"] = "\n".join(filter(None, [message.get("reasoning_content"), parsed.reasoning]))
    choice = {**choice, "message": message}
    if parsed.calls:
        message["tool_calls"] = list(repaired) + [call.to_openai() for call in parsed.calls]
        if choice.get("finish_reason") != "length":  # a cut output says so
            choice["finish_reason"] = "tool_calls"
    return choice


def count(tally: Counter, calls: list, malformed: int) -> None:
    """Add ``calls`` (by their dialect) and ``malformed`` blocks to ``tally`` (see ``recover_response``)."""
    for call in calls:
        tally["calls", call.dialect] += 1
    if malformed:
        tally["malformed", ""] += malformed


# -- structured calls whose name carries markup --------------------------------------------------

#: At most this many stray tags are taken off the end of a name (``NAME</arg_value></tool_call>``).
MAX_STRAY_TAGS = 8
_BAD_NAME_CHARS = frozenset("<>{}\"'\n\r")
_ASCII_SEP = DEEPSEEK_SEP.replace("\uff5c", "|")


def marked(entry) -> bool:
    """Whether a structured ``tool_calls`` entry has a string ``function.name`` with a ``<`` in it."""
    if not isinstance(entry, dict):
        return False
    function = entry.get("function")
    if not isinstance(function, dict):
        return False
    name = function.get("name")
    return isinstance(name, str) and "<" in name


class NameRepair:
    """Repairs structured calls whose ``function.name`` carries markup, for ``parse``'s ``options``.

    Only a name with a ``<`` in it is looked at. Its text (stripped) is read by the grammar of the
    markup it holds, among the enabled dialects: DeepSeek's ``NAME<｜tool▁sep｜>{…}`` (``deepseek``),
    Kimi's ``functions.NAME:0<|tool_call_argument_begin|>{…}`` (``kimi_k2``), else the ``<tool_call>``
    body grammar (``hermes``): GLM ``NAME<arg_key>K</arg_key><arg_value>V</arg_value>…``, Qwen3-Coder
    ``<function=NAME><parameter=…>``, a JSON call object. Values are typed by ``tools`` as in text.
    When that gives no single call, one tag at the end (``<…>``: ``</arg_value>``, ``</tool_call>``,
    ``<｜tool▁call▁end｜>``, …) is taken off and the rest read again, at most ``MAX_STRAY_TAGS``
    times; text with no ``<`` left is the name itself. The result must be exactly one call with a
    non-empty name free of ``<>{}"'`` and line breaks, and, with ``tools`` given, a tool they offer
    (unless ``unknown_tools="accept"``). Otherwise the entry stays as it is.

    Arguments: when the markup carried none (``tool_12</arg_value>``) only the name changes and
    ``function.arguments`` is kept as sent. Otherwise they are merged with ``function.arguments``:
    missing, blank or an empty JSON object gives the markup's arguments; a JSON object gives
    both, the markup's keys first (they came first), a key in both taking the field's value (a
    repeated parameter keeps its first place and its last value); anything else (not JSON, not
    an object) cannot be merged and the entry stays as it is.
    """

    __slots__ = ("_ctx", "_unknown", "_dialects")

    def __init__(self, options: Options) -> None:
        self._ctx = options.ctx
        self._unknown = options.unknown_tools
        self._dialects = frozenset(block.dialect for block in options.table.blocks)

    def name(self, name) -> tuple[str, dict] | None:
        """``(name, arguments)`` read from a name that carries markup, or None: leave it as it is."""
        if not isinstance(name, str) or "<" not in name:
            return None
        text = name.strip()
        for _ in range(MAX_STRAY_TAGS + 1):
            call = self._read(text)
            if call is not None:
                break
            cut = text.rfind("<")
            if cut < 0 or not text.endswith(">") or ">" in text[cut + 1 : -1]:
                return None
            text = text[:cut].rstrip()
        else:
            return None
        ctx = self._ctx
        if ctx.has_tools and self._unknown != "accept" and not ctx.known(call.name):
            return None
        return call.name, json.loads(call.arguments)

    def entry(self, entry) -> dict | None:
        """The repaired copy of one complete structured ``tool_calls`` entry, or None."""
        if not marked(entry):
            return None
        function = entry["function"]
        found = self.name(function["name"])
        if found is None:
            return None
        name, args = found
        function = {**function, "name": name}
        if args:
            arguments = merge_arguments(args, function.get("arguments"))
            if arguments is None:
                return None
            function["arguments"] = arguments
        return {**entry, "function": function}

    def entries(self, entries: list) -> list:
        """``entries`` with each repairable one repaired; the very same list if none is."""
        out = None
        for k, entry in enumerate(entries):
            new = self.entry(entry)
            if new is not None:
                if out is None:
                    out = list(entries)
                out[k] = new
        return entries if out is None else out

    def _read(self, text: str) -> ToolCall | None:
        """The one call ``text`` holds, or None."""
        if "<" not in text:
            return ToolCall(text, "{}") if _good_name(text) else None
        dialects = self._dialects
        if DEEPSEEK in dialects and (DEEPSEEK_SEP in text or _ASCII_SEP in text):
            opener = DEEPSEEK_OPEN if DEEPSEEK_SEP in text else DEEPSEEK_OPEN.replace("\uff5c", "|")
            calls = GRAMMARS["deepseek"](opener, text, self._ctx)
        elif "kimi_k2" in dialects and KIMI_ARGUMENT_BEGIN in text:
            calls = GRAMMARS["kimi_k2"]("<|tool_call_begin|>", text, self._ctx)
        elif HERMES in dialects:
            calls = GRAMMARS["hermes"]("<tool_call>", text, self._ctx)
        else:
            return None
        if not calls or len(calls) != 1 or not _good_name(calls[0].name):
            return None
        return calls[0]


def _good_name(name: str) -> bool:
    return bool(name) and name == name.strip() and not any(c in _BAD_NAME_CHARS for c in name)


def merge_arguments(args: dict, field) -> str | None:
    """The JSON text of ``args`` (read from a name) merged with a ``function.arguments`` field, or
    None when the field cannot be merged (see ``NameRepair``)."""
    if field is None:
        given: object = {}
    elif isinstance(field, str):
        if not field.strip():
            given = {}
        else:
            try:
                given = json.loads(field)
            except (ValueError, RecursionError):
                return None
            if given is None:
                given = {}
    else:
        return None
    if not isinstance(given, dict):
        return None
    try:
        return json.dumps({**args, **given}, ensure_ascii=False)
    except (ValueError, RecursionError):
        return None
