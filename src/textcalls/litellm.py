"""A LiteLLM proxy callback that recovers text tool calls: one line in the proxy's ``config.yaml``::

    litellm_settings:
      callbacks: textcalls.litellm.recovery

``recovery`` is a ``TextcallsRecovery()`` (``native=True``). Chat completion responses
(``ModelResponse``) and streams (``ModelResponseStream`` chunks) of requests that offer function
``tools`` are recovered as ``recover_response`` and ``ChunkRecovery`` recover their dicts, with the
request's tools. Tested with litellm 1.108.7 (``TESTED_WITH``); importing this module on an older
litellm, or one whose hooks or types are not the ones it knows, raises ImportError naming that
litellm's version. Needs ``pip install 'textcalls[litellm]'``.
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

from . import _hosts
from ._apis import chat_tools
from .openai import check_gate, recover_response
from .options import Options
from .stream import ChunkRecovery

__all__ = ["NATIVE_KEY", "TESTED_WITH", "TextcallsRecovery", "recovery"]

#: The litellm release this module was tested with, and the oldest it accepts: older releases have
#: the same hooks, but some ignore the response a success hook returns (BerriAI/litellm#19670).
TESTED_WITH = "1.108.7"
#: A deployment's ``model_info`` key that sets ``native`` for that model (a bool).
NATIVE_KEY = "textcalls_native"
#: The hooks the proxy calls, with the parameters (after ``self``) it passes by keyword.
_HOOKS = {
    "async_post_call_success_hook": ("data", "user_api_key_dict", "response"),
    "async_post_call_streaming_iterator_hook": ("user_api_key_dict", "response", "request_data"),
}

log = logging.getLogger("textcalls.litellm")


def _litellm_version() -> str:
    return _hosts.host_version("litellm")


def _unknown_api(what: str) -> ImportError:
    return _hosts.unknown_api("litellm", "litellm", _litellm_version(), TESTED_WITH, what, ImportError)


try:
    from litellm.integrations.custom_logger import CustomLogger  # type: ignore[import-not-found,unused-ignore]
    from litellm.types.utils import (  # type: ignore[import-not-found,unused-ignore]
        ChatCompletionDeltaToolCall,
        ChatCompletionMessageToolCall,
        Delta,
        Function,
        ModelResponse,
        ModelResponseStream,
        StreamingChoices,
    )
except ImportError as e:
    _hosts.import_failed(e, "litellm", "LiteLLM", _unknown_api)


def _check_version() -> None:
    """ImportError if the installed litellm is older than ``TESTED_WITH``."""
    found = re.match(r"(\d+)\.(\d+)\.(\d+)", _litellm_version())
    if found and tuple(map(int, found.groups())) < tuple(map(int, TESTED_WITH.split("."))):
        raise _unknown_api("it is older than the oldest release supported")


def _check_hooks() -> None:
    """ImportError unless CustomLogger has each hook with the parameters the proxy passes."""
    for name, params in _HOOKS.items():
        hook = getattr(CustomLogger, name, None)
        got = tuple(inspect.signature(hook).parameters)[1:] if callable(hook) else None
        if got != params:
            shown = "is missing" if got is None else f"takes ({', '.join(got)})"
            raise _unknown_api(f"CustomLogger.{name} {shown}, expected ({', '.join(params)})")


_check_version()
_check_hooks()


def _offered_tools(tools) -> tuple[list | None, str | None]:
    """What a request's ``tools`` offer to recover with, as ``(functions, why)``, by the proxy's rules
    (``_apis.chat_tools``): ``(None, None)`` for no tools (absent, None or empty); ``(None, why)`` when
    ``tools`` is malformed: the request is then left unrecovered."""
    if tools is None or tools == []:
        return None, None
    return chat_tools(tools)


class TextcallsRecovery(CustomLogger):
    """A LiteLLM ``CustomLogger`` that recovers text tool calls in the proxy's chat completions.

    A request is recovered when its ``tools`` is a non-empty list, by the rules of ``textcalls
    proxy``: its function tools are given to the scrubbers (a call of a tool not offered stays
    text), other kinds (``custom``, ``mcp`` …) are left out, and a malformed ``tools`` leaves the
    request untouched, with a warning on the ``textcalls.litellm`` logger. ``native`` is the gate's (see
    ``should_recover``): this instance's, unless the deployment's ``model_info`` sets
    ``textcalls_native`` (``NATIVE_KEY``) to a bool. ``options`` are ``parse``'s (``formats``,
    ``unknown_tools``, ``max_block`` …, not ``tools``), checked here.

    ``async_post_call_success_hook`` returns a recovered copy of a ``ModelResponse`` (the input is
    not changed), or None when nothing changes or the response is of another kind.
    ``async_post_call_streaming_iterator_hook`` runs ``ModelResponseStream`` chunks through a
    ``ChunkRecovery``: a chunk it leaves unchanged is passed on as the very same object, others
    are rebuilt as ``ModelResponseStream`` copies of their chunk (id, model, hidden params …)
    with new choices; held markup is released at the finish chunk or at the stream's end. Items
    of other kinds pass as they come. A stream that fails is not flushed: held markup is never
    released as content.

    LiteLLM finds the streaming hook in the class's own ``__dict__``: a subclass must define it
    again (calling this one) for the proxy to run it.
    """

    def __init__(self, *, native: bool = True, **options: Any) -> None:
        check_gate(native, True)
        _hosts.check_options(options)
        super().__init__()
        self.native = native
        self.options = options

    def _plan(self, data: dict) -> tuple[bool, Options] | None:
        """``(native, options)`` to recover the request ``data`` with, or None to leave it alone."""
        tools, why = _offered_tools(data.get("tools"))
        if why is not None:
            log.warning("textcalls: request left unrecovered: %s", why)
        if tools is None:
            return None
        return self._native(data), Options(tools=tools, **self.options)

    def _native(self, data: dict) -> bool:
        for key in ("metadata", "litellm_metadata"):
            metadata = data.get(key)
            info = metadata.get("model_info") if isinstance(metadata, dict) else None
            if isinstance(info, dict) and info.get(NATIVE_KEY) is not None:
                value = info[NATIVE_KEY]
                if not isinstance(value, bool):
                    raise TypeError(f"model_info.{NATIVE_KEY} must be a bool, not {type(value).__name__}")
                return value
        return self.native

    async def async_post_call_success_hook(self, data: dict, user_api_key_dict: Any, response: Any) -> Any:
        if not isinstance(response, ModelResponse):
            return None
        plan = self._plan(data)
        if plan is None:
            return None
        recovered = _recover_model_response(response, native=plan[0], options=plan[1])
        return None if recovered is response else recovered

    async def async_post_call_streaming_iterator_hook(
        self, user_api_key_dict: Any, response: AsyncIterable, request_data: dict
    ) -> AsyncIterator:
        plan = self._plan(request_data)
        if plan is None:
            async for item in response:
                yield item
            return
        stream = _Stream(ChunkRecovery(native=plan[0], has_tools=True, options=plan[1]))
        async for item in response:
            if isinstance(item, ModelResponseStream):
                for out in stream.push(item):
                    yield out
            else:
                yield item
        for out in stream.close():
            yield out


# -- non-streamed ---------------------------------------------------------------------------------


def _recover_model_response(response: Any, *, native: bool, options: Options) -> Any:
    """``recover_response`` on a ``ModelResponse``: a copy with the changed choices rebuilt, or
    ``response`` itself when nothing changes."""
    view = {"choices": [_choice_view(choice) for choice in response.choices]}
    new = recover_response(view, native=native, has_tools=True, options=options)
    if new is view:
        return response
    choices = list(response.choices)
    for i, (was, got) in enumerate(zip(view["choices"], new["choices"], strict=True)):
        if got is not was:
            choices[i] = _rebuilt_choice(choices[i], was, got)
    return response.model_copy(update={"choices": choices})


def _choice_view(choice) -> dict:
    """The parts of a ``Choices`` that ``recover_response`` reads, as dicts."""
    message = choice.message
    view: dict = {"content": message.content}
    if message.tool_calls:
        view["tool_calls"] = [call.model_dump() for call in message.tool_calls]
    reasoning = getattr(message, "reasoning_content", None)
    if reasoning is not None:
        view["reasoning_content"] = reasoning
    return {"index": choice.index, "message": view, "finish_reason": choice.finish_reason}


def _rebuilt_choice(choice, was: dict, got: dict):
    """A copy of ``choice`` with the message and finish_reason ``recover_response`` gave."""
    message = got["message"]
    update: dict = {"content": message["content"]}
    if "reasoning_content" in message:
        update["reasoning_content"] = message["reasoning_content"]
    calls = message.get("tool_calls")
    if calls:  # structured entries left as they were keep their objects
        viewed = zip(was["message"].get("tool_calls") or (), choice.message.tool_calls or (), strict=True)
        originals = {id(v): o for v, o in viewed}
        update["tool_calls"] = [originals.get(id(e)) or ChatCompletionMessageToolCall(**e) for e in calls]
    return choice.model_copy(
        update={"message": choice.message.model_copy(update=update), "finish_reason": got["finish_reason"]}
    )


# -- streamed -------------------------------------------------------------------------------------

#: The key, in the chunk dicts given to ChunkRecovery, of the ModelResponseStream a dict stands for:
#: it passes into the chunks made from that dict (an unknown field passes through), so each output
#: dict names the chunk to copy (its own, or the last one with choices for the chunks it adds).
_SOURCE = "_textcalls_source"


class _Stream:
    """A ``ChunkRecovery`` fed ``ModelResponseStream`` objects: dict views in, objects out."""

    __slots__ = ("machine",)

    def __init__(self, machine: ChunkRecovery) -> None:
        self.machine = machine

    def push(self, chunk) -> list:
        view, originals = _chunk_view(chunk)
        return [chunk if out is view else _rebuilt_chunk(out, originals) for out in self.machine.push(view)]

    def close(self) -> list:
        return [_rebuilt_chunk(out, {}) for out in self.machine.close()]


def _chunk_view(chunk) -> tuple[dict, dict]:
    """The chunk as ``ChunkRecovery`` reads it (the fields of each choice and of its delta that are
    not None, ``tool_calls`` as dicts), and the tool call objects by the id of their dict. The models
    are read by iterating them (their fields and extras in one pass: most of these are extras)."""
    originals: dict = {}
    choices = []
    fields = dict(chunk)
    for choice in fields["choices"]:
        view = {k: v for k, v in choice if v is not None}
        view["delta"] = delta = {k: v for k, v in view["delta"] if v is not None}
        calls = delta.get("tool_calls")
        if calls:
            delta["tool_calls"] = views = [call.model_dump() for call in calls]
            originals.update(zip(map(id, views), calls, strict=True))
        choices.append(view)
    view = {"choices": choices, _SOURCE: chunk}
    if fields.get("usage") is not None:
        view["usage"] = fields["usage"]
    return view, originals


def _rebuilt_chunk(out: dict, originals: dict):
    """A ``ModelResponseStream`` for an output dict: a copy of its source chunk with its choices."""
    choices = []
    for choice in out["choices"]:
        delta = dict(choice["delta"])
        calls = delta.get("tool_calls")
        if calls:
            delta["tool_calls"] = [originals.get(id(e)) or _delta_call(e) for e in calls]
        rest = {k: v for k, v in choice.items() if k != "delta"}
        choices.append(StreamingChoices(**rest, delta=Delta(**delta)))
    update: dict = {"choices": choices}
    if "usage" in out:
        update["usage"] = out["usage"]
    return out[_SOURCE].model_copy(update=update)


def _delta_call(entry: dict):
    """A ``ChatCompletionDeltaToolCall`` for a function call entry; another kind of entry is left
    as a dict, for ``Delta`` to build."""
    function = entry.get("function")
    if not isinstance(function, dict):
        return dict(entry)
    return ChatCompletionDeltaToolCall(
        index=entry["index"],
        id=entry.get("id"),
        type=entry.get("type"),
        function=Function(name=function.get("name"), arguments=function.get("arguments")),
    )


#: The instance a LiteLLM config names: ``callbacks: textcalls.litellm.recovery``.
recovery = TextcallsRecovery()
