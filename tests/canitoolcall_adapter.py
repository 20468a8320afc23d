"""CanIToolCall's fixtures replayed through textcalls at the text level, as a gateway sees them.

A fixture is one raw model output with the tools offered and the parse a correct engine gives
(``pip install canitoolcall``: the corpus ships in its wheel). Here there are no token ids: a stream is
the raw text cut into character deltas. What a server knows from the chat template is told to
textcalls as a gateway would: ``trim_blanks=True`` always (the blanks the templates write around the
markup are not content, and a stream then gives exactly what the whole text gives); ``reasoning_started``
when the generation prompt (the fixture's, else its model's template default, from the family's
``reference_models``) leaves ``<think>`` open; ``prompt_tail="<|start|>assistant"`` when it ends with
gpt-oss's open message header; and the whole-message pythonic format (``pythonic_message``, opt-in) for a
model whose template asks for it (the reference model's variant ``llama4-pythonic``: the parser a server
runs for Llama 4, vLLM's ``llama4_pythonic``). A fixture tagged ``truncated`` ended at ``max_tokens``: it
is replayed with ``finish_reason: "length"``, and no stop token is ever appended.

``nonstream`` goes through ``recover_response`` (a ``chat.completion``), ``stream`` through
``recover_stream`` (``chat.completion.chunk`` dicts) and accumulates the deltas as an OpenAI client
does (canitoolcall's ``StreamAccumulator``); a mid-stream error chunk (a call streamed with
``stream_arguments`` and then abandoned) is what the openai SDK raises: the parse is that exception.
"""

from __future__ import annotations

import json
import random
from typing import Any

from canitoolcall.pytest_plugin import family_for
from canitoolcall.results import ParsedToolCall, ParseResult, StreamAccumulator

from textcalls import DIALECTS
from textcalls.openai import recover_response
from textcalls.stream import recover_stream

from .gateway_support.upstream import cut

#: the character splits every fixture is streamed in: whole, one character a delta, and seeded random
#: runs of 1-12 characters (``gateway_support.upstream.cut``)
SPLITS = ("one", "char:0", "char:1", "char:2", "char:3")

# what a generation prompt ends with when it leaves a reasoning span open
_OPEN_THINK = ("<think>", "<|channel>thought", "[THINK]", "<|open|>think<|sep|>")
# what a generation prompt ends with when it leaves a message header open (gpt-oss): ``prompt_tail``
_OPEN_HEADER = "<|start|>assistant"


def truncated(fixture: Any) -> bool:
    return "truncated" in fixture.tags


def reference_model(fixture: Any) -> Any:
    """The family's reference model the fixture was written by (``None``: none): what a server serving that
    model knows (its template's generation prompt, the parser it runs)."""
    family = family_for(fixture)
    for model in family.reference_models if family is not None else ():
        if model.repo in fixture.models:
            return model
    return None


def generation_prompt(fixture: Any) -> str:
    """The tail of the prompt the server rendered: the fixture's own, else the one its model's chat template
    ends with."""
    if fixture.generation_prompt is not None:
        return fixture.generation_prompt
    model = reference_model(fixture)
    return (model.default_generation_prompt or "") if model is not None else ""


#: the default dialects and the whole-message pythonic list (``[f(a=1), g()]``), for a model whose template
#: asks for that
_PYTHONIC = (*(name for name, on in DIALECTS.items() if on), "pythonic_message")


def options_for(fixture: Any, *, stream_arguments: bool = False) -> dict[str, Any]:
    """The keywords a gateway gives textcalls for this fixture's request: ``trim_blanks``; ``reasoning_started``
    where the generation prompt leaves a reasoning span open (and thinking was not turned off); ``prompt_tail``;
    ``formats`` with the pythonic message for a model whose template asks for it."""
    options: dict[str, Any] = {"tools": json.loads(json.dumps(fixture.tools)), "trim_blanks": True}
    prompt = generation_prompt(fixture)
    if fixture.thinking is not False and prompt.rstrip().endswith(_OPEN_THINK):
        options["reasoning_started"] = True
    if prompt.endswith(_OPEN_HEADER):  # the output goes on with the header the prompt opened
        options["prompt_tail"] = _OPEN_HEADER
    model = reference_model(fixture)
    if model is not None and model.variant.endswith("-pythonic"):  # the template asks for a pythonic list
        options["formats"] = _PYTHONIC
    if stream_arguments:
        options["stream_arguments"] = True
    return options


def split_text(text: str, split: str) -> list[str]:
    if split == "one":
        return [text] if text else []
    seed = int(split.split(":")[1])
    return list(text) if seed == 0 else cut(text, random.Random(seed))


def _result(content: Any, reasoning: Any, calls: list[tuple[str, Any]]) -> ParseResult:
    return ParseResult(
        content=content or None,
        reasoning_content=reasoning or None,
        tool_calls=tuple(ParsedToolCall(name, arguments) for name, arguments in calls),
    )


def nonstream(fixture: Any, **keywords: Any) -> tuple[ParseResult, str]:
    """The fixture as one ``chat.completion`` through ``recover_response``: the parse and the
    ``finish_reason`` that came back."""
    finish = "length" if truncated(fixture) else "stop"
    response = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": fixture.raw_output},
                "finish_reason": finish,
            }
        ],
    }
    out = recover_response(response, native=False, has_tools=True, **options_for(fixture), **keywords)
    choice = out["choices"][0]
    message = choice["message"]
    calls = [(c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or ()]
    return _result(message.get("content"), message.get("reasoning_content"), calls), choice["finish_reason"]


def stream(fixture: Any, split: str, *, stream_arguments: bool = False, **keywords: Any) -> tuple[ParseResult, str]:
    """The fixture as ``chat.completion.chunk`` dicts, one a delta of ``split``, through
    ``recover_stream``: what an OpenAI client accumulates, and the last ``finish_reason``."""
    finish = "length" if truncated(fixture) else "stop"

    def chunks():
        yield {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}
        for piece in split_text(fixture.raw_output, split):
            yield {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": piece}}]}
        yield {
            "id": "c",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
        }

    options = options_for(fixture, stream_arguments=stream_arguments)
    acc = StreamAccumulator()
    last_finish = None
    for chunk in recover_stream(chunks(), native=False, has_tools=True, **options, **keywords):
        if "error" in chunk:  # a mid-stream error: an OpenAI client raises it and holds nothing of the answer
            return ParseResult(exception=f"APIError: {chunk['error']['message']}"), None
        for choice in chunk.get("choices") or ():
            acc.add_openai_delta(choice.get("delta") or {})
            if choice.get("finish_reason") is not None:
                last_finish = choice["finish_reason"]
    return acc.result(), last_finish
