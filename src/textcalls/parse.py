"""Whole-text recovery: ``parse(text) -> Parsed``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from . import _scan
from .markers import MAX_BLOCK
from .options import DEFAULT, Options, options_of
from .toolcall import Parsed

__all__ = ["Parsed", "parse"]


def parse(
    text: str,
    *,
    max_block: int = MAX_BLOCK,
    formats: Iterable[str] | None = None,
    tools: list[Any] | None = None,
    unknown_tools: str = "keep_text",
    calls_in_reasoning: str = "auto",
    code_fences: bool = True,
    reasoning_started: bool = False,
    options: Options | None = None,
    truncated: bool = False,
    trim_blanks: bool = False,
    prompt_tail: str = "",
    schema_guided: bool = True,
) -> Parsed:
    """Recover the tool calls written as markup in ``text``.

    The same as feeding ``text`` to a ``StreamScrubber`` with the same keywords in any number of
    pieces and flushing: a block whose body exceeds ``max_block`` characters is not a block;
    ``formats`` names the dialects to recognise (default: the default-on ones, see ``DIALECTS``);
    ``tools`` (the request's OpenAI tools) types XML-style values, and a call of a tool not in it is
    kept as text (``unknown_tools="keep_text"``), removed (``"drop"``) or accepted (``"accept"``).
    Calls inside a ``<think>`` span (``calls_in_reasoning``): with ``"auto"`` (the default), the
    calls that end a span (only whitespace after them) are calls unless the content after it calls a
    tool, and the others are rehearsals that stay in the reasoning text; ``"ignore"`` keeps every call
    of a span that closes as reasoning text; ``"extract"`` takes them all. In a span never closed a call
    is a call. ``reasoning_started=True``: the text begins inside a reasoning span (the prompt opened
    ``<think>``), so a lone ``</think>`` ends it.
    Markup inside a markdown code fence or an inline code span in the content is text (``code_fences=False``:
    not so).
    The content and the reasoning are stripped at both ends (``str.strip``; a stream keeps the model's
    blanks). ``trim_blanks=True``: neither is stripped, and a stream gives the very same text whatever the
    splitting: the blanks (spaces, tabs, line breaks) that touch a removed block or marker at the content's
    edges are dropped (before its first visible character when a removal came before it, after its last
    when one came after: the chat templates write them around the markup), and so are those at a
    reasoning span's start and before its closer (with a span never closed, the blanks that end it stay);
    a run of blanks longer than ``max_block`` always stays.
    ``prompt_tail``: the end of the generation prompt when the output goes on with markup it opened (gpt-oss:
    ``"<|start|>assistant"``, the output then starting `` to=functions.NAME<|channel|>…``): the text is read
    as following it, and nothing of it is shown (at most 256 characters; ``reasoning_started=True`` is the
    same for a prompt that ends inside ``<think>``).
    ``schema_guided`` (with ``tools``): in a message in which no dialect rule found a call, a call of an offered
    tool at the message's start or end is recovered whatever its markup, if its arguments validate against the
    tool's schema (``docs/scanning.md``, "Schema-guided recovery"); ``False``: only the dialects' rules.
    ``options``: an ``Options`` holding these keywords, checked once (then give no other keyword).
    ``truncated=True``: the output was cut (``max_tokens``; ``finish_reason: "length"``), so a block the text
    ends inside was never finished: it is no call, and its markup is removed (counted in ``malformed``),
    tools or not; a block without a closer (Mistral's ``[TOOL_CALLS]``) is a call only as written, nothing
    added.
    """
    if not isinstance(truncated, bool):
        raise TypeError(f"truncated must be a bool, not {type(truncated).__name__}")
    given = not (
        max_block is MAX_BLOCK
        and formats is None
        and tools is None
        and unknown_tools == "keep_text"
        and calls_in_reasoning == "auto"
        and code_fences is True
        and reasoning_started is False
        and trim_blanks is False
        and prompt_tail == ""
        and schema_guided is True
    )
    if options is None and not given:
        return _scan.impl.scan_whole(text, DEFAULT, truncated)  # it raises the TypeError below for a text not a str
    if not isinstance(text, str):
        raise TypeError(f"parse() expects str, not {type(text).__name__}")
    if options is None:
        options = Options(
            max_block=max_block,
            formats=formats,
            tools=tools,
            unknown_tools=unknown_tools,
            calls_in_reasoning=calls_in_reasoning,
            code_fences=code_fences,
            reasoning_started=reasoning_started,
            trim_blanks=trim_blanks,
            prompt_tail=prompt_tail,
            schema_guided=schema_guided,
        )
    elif given:
        raise TypeError("options= takes the place of the other keywords: give one or the other")
    elif not isinstance(options, Options):
        options = options_of({"options": options})  # raises the error
    return _scan.impl.scan_whole(text, options, truncated)


if not TYPE_CHECKING and _scan.IMPLEMENTATION == "cython":
    # The same function, its common paths (no keyword, or only options=) made in C without a Python frame
    # (about 0.2 µs less a call); every other call comes back to the function above.
    _scan.impl.use_python_parse(parse)
    _scan.impl.parse.__doc__ = parse.__doc__
    _scan.impl.parse.__wrapped__ = parse
    parse = _scan.impl.parse
