"""gpt-oss Harmony calls written as text: the recipient in the opener, the arguments after ``<|message|>``.

Two grammars. ``harmony`` reads the blocks that open at a special token (``<|channel|>commentary`` or
``<|start|>assistant``); ``harmony_text`` reads a call whose special tokens a server stripped or half
stripped (``commentary to=functions.NAME json{…}``), found by the opt-in phrase openers ``commentary to=``
and ``to=``, so it is strict: anything but ``functions.NAME``, an optional content type and a JSON
object leaves the text standing.

The recipient (``to=functions.NAME``) ends at the next special token (``<|constrain|>``, ``<|channel|>``,
``<|message|>``): a name may hold spaces there (``to=functions.Web Search <|constrain|>json``), and a
trailing content type (``NAME json<|message|>``) is not part of it. Without a token after it, the name
is one word, unless the request's tools name the longer text. With tools, a name that is not offered
but becomes one without a glued ``json`` or ``commentary`` (``shelljson``; ``get_weathercommentary`` when
``<|channel|>`` was stripped) is read so; without tools the name is kept as written.
"""

from __future__ import annotations

import re

from .._calls import make_call
from ..relaxed_json import decode
from ..toolcall import ToolCall
from .context import Context
from .jsonlike import as_written

__all__ = ["GRAMMARS", "harmony", "harmony_text"]

_RECIPIENT = re.compile(r"\bto=(?:functions\.)?")
_MESSAGE = "<|message|>"
_TOKEN = "<|"
_CONTENT_TYPES = ("json", "code")
_GLUED = ("json", "commentary")
#: What may follow the recipient in a text-form header: the channel, the constraint, the content type.
_TEXT_TAIL = re.compile(r"(?:<\|channel\|>\s*commentary\s*)?(?:<\|constrain\|>\s*)?(?:json\s*)?")
_TEXT_PREFIX = "functions."
_ENDS = ("<|end|>", "<|return|>")


def harmony(opener: str, body: str, ctx: Context) -> list[ToolCall] | None:
    """``<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{ARGS}`` or, recipient first,
    ``<|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>{ARGS}`` (the opener ends at
    its first ``>``, so opener and body are read as one): one call; ``[]`` without a recipient before the
    message or object arguments after it. Without ``<|message|>`` (stripped) the arguments are the JSON
    object from the first ``{``. The body may end right after the arguments (no ``<|call|>``)."""
    text = opener + body
    head, sep, args_text = text.partition(_MESSAGE)
    if not sep:
        brace = text.find("{")
        if brace < 0:
            return []
        head, args_text = text[:brace], text[brace:]
    found = _RECIPIENT.search(head)
    if found is None:
        return []
    call = _call(_name(head[found.end() :], ctx, text_form=False), args_text)
    return [] if call is None else [call]


def harmony_text(opener: str, body: str, ctx: Context) -> list[ToolCall] | None:
    """The same call with its special tokens stripped, after the phrase ``commentary to=`` or ``to=``:
    ``functions.NAME json{ARGS}``, ``functions.NAME <|constrain|>json<|message|>{ARGS}``,
    ``functions.NAMEcommentary json{ARGS}`` (``<|channel|>`` stripped between). ``None`` (the text stays)
    for anything else: another recipient, words after the name, arguments that are not a JSON object."""
    if not body.startswith(_TEXT_PREFIX):
        return None
    rest = body[len(_TEXT_PREFIX) :]
    head, sep, args_text = rest.partition(_MESSAGE)
    if not sep:
        brace = rest.find("{")
        if brace < 0:
            return None
        head, args_text = rest[:brace], rest[brace:]
    token = head.find(_TOKEN)
    if token >= 0 and not _TEXT_TAIL.fullmatch(head[token:]):
        return None
    call = _call(_name(head, ctx, text_form=True), args_text)
    return None if call is None else [call]


def _without_content_type(written: str) -> str:
    """``written`` (stripped) without a last word ``json`` or ``code`` and the whitespace before it. (Not by a
    regex ``\\s+(?:json|code)$``: tried at every position of a long run of whitespace, that is quadratic.)"""
    if written.endswith(_CONTENT_TYPES) and written[-5:-4].isspace():
        return written[:-4].rstrip()
    return written


def _name(rest: str, ctx: Context, text_form: bool) -> str | None:
    """The tool name at the start of ``rest`` (the header after ``to=functions.``), or ``None``."""
    token = rest.find(_TOKEN)
    delimited = token >= 0
    written = (rest[:token] if delimited else rest).strip()
    if ctx.has_tools and ctx.known(written):
        return written
    raw = _without_content_type(written).strip()
    if not raw or any(c in raw for c in "<>{}\"'"):
        return None
    if not delimited and any(c.isspace() for c in raw):
        # one word, unless the request's tools name the longer text
        if ctx.has_tools and ctx.known(raw):
            return raw
        if text_form:
            return None  # words after the name: prose, not a header
        raw = raw.split()[0]
    if ctx.has_tools:
        if ctx.known(raw):
            return raw
        for suffix in _GLUED:
            if raw.endswith(suffix) and ctx.known(raw[: -len(suffix)]):
                return raw[: -len(suffix)]
        return raw
    if text_form and raw.endswith("commentary") and len(raw) > len("commentary"):
        return raw[: -len("commentary")]  # <|channel|> was stripped between the name and the channel
    return raw


def _call(name: str | None, args_text: str) -> ToolCall | None:
    """The call of ``name`` with the JSON object in ``args_text`` as its arguments (strict, then the
    conservative repairs; empty is ``{}``), or ``None``."""
    text = args_text.strip()
    if text.endswith(_ENDS):  # a call message closed by <|end|> (or <|return|>) where <|call|> belongs
        text = text[: text.rindex("<|")].rstrip()
    # the name stripped: "get " before a channel word
    return as_written(name, text) or make_call(name, decode(text) if text else {})


#: this family's body grammars, by the names ``markers.BLOCKS`` uses (``dialects.GRAMMARS`` gathers them)
GRAMMARS = {
    "harmony": harmony,
    "harmony_text": harmony_text,
}
