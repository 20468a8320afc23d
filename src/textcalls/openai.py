"""OpenAI rewriting: the recovery gate and ``chat.completion`` responses."""

from __future__ import annotations

from .parse import parse

__all__ = ["recover_response", "should_recover"]


def should_recover(native: bool, has_tools: bool, structured_calls: int) -> bool:
    """Whether to recover text calls: tools were offered, and the model is prompt-guided or
    (native) sent no structured call itself."""
    if not isinstance(native, bool):
        raise TypeError(f"native must be a bool, not {type(native).__name__}")
    if not isinstance(has_tools, bool):
        raise TypeError(f"has_tools must be a bool, not {type(has_tools).__name__}")
    if not isinstance(structured_calls, int) or isinstance(structured_calls, bool):
        raise TypeError(f"structured_calls must be an int, not {type(structured_calls).__name__}")
    if structured_calls < 0:
        raise ValueError(f"structured_calls must be >= 0, not {structured_calls}")
    return has_tools and (not native or structured_calls == 0)


def recover_response(response: dict, *, native: bool, has_tools: bool, **options) -> dict:
    """Recover text tool calls in an OpenAI ``chat.completion`` object.

    The gate is applied per choice with that choice's own ``tool_calls`` count. A choice changes
    only when markup was removed from its string ``content``: content becomes the cleaned text
    (``None`` when empty), reasoning it held (``<think>`` …) goes to ``reasoning_content``,
    recovered calls are appended after its ``tool_calls`` and ``finish_reason`` becomes
    ``"tool_calls"`` when any were recovered. The input is never
    mutated; when no choice changes, the very same object is returned. ``options`` are ``parse``'s
    (``formats``, ``tools``, ``unknown_tools``, ``max_block``).
    """
    if not isinstance(response, dict):
        raise TypeError(f"response must be a dict, not {type(response).__name__}")
    choices = response.get("choices")
    if choices is None:
        return response
    if not isinstance(choices, list):
        raise TypeError(f"response['choices'] must be a list, not {type(choices).__name__}")
    new_choices = None
    for i, choice in enumerate(choices):
        new = _recover_choice(choice, i, native, has_tools, options)
        if new is not None:
            if new_choices is None:
                new_choices = list(choices)
            new_choices[i] = new
    if new_choices is None:
        return response
    return {**response, "choices": new_choices}


def _recover_choice(choice, i: int, native: bool, has_tools: bool, options: dict):
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
    content = message.get("content")
    if not isinstance(content, str) or not should_recover(native, has_tools, len(structured)):
        return None
    parsed = parse(content, **options)
    if not parsed.removed:
        return None
    message = {**message, "content": parsed.content or None}
    if parsed.reasoning:  # <think> text moved out of the content
        message["reasoning_content"] = "\n".join(filter(None, [message.get("reasoning_content"), parsed.reasoning]))
    choice = {**choice, "message": message}
    if parsed.calls:
        message["tool_calls"] = list(structured) + [call.to_openai() for call in parsed.calls]
        choice["finish_reason"] = "tool_calls"
    return choice
