"""The recovery keywords, checked once: ``Options``. Every entry point takes them (``parse``,
``StreamScrubber``, the stream, SSE and bytes helpers, ``recover_response``) and builds one ``Options``,
which the scrubbers it creates share."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ._table import CALLS_IN_REASONING, UNKNOWN_TOOLS, Table, table_for
from .dialects import Context
from .markers import MAX_BLOCK

__all__ = ["DEFAULT", "Options", "options_of"]

_NO_TOOLS = Context(None)
#: the longest ``prompt_tail``: the end of a generation prompt, not a prompt
PROMPT_TAIL_MAX = 256


class Options:
    """``parse``'s keywords, validated: a TypeError or ValueError names the one that is wrong. Also
    holds what they imply: ``table``, the enabled dialects' table (``formats``); ``ctx``, the request's
    tools (``tools``) as the grammars read them; and ``quiet``, what a text without markup lacks (``parse``
    returns such a text at once). ``stream_arguments`` is the scrubbers' alone (``StreamScrubber.take_events``;
    ``parse`` has no events). Share one between the scrubbers of a request or a stream; it is read-only
    (setting an attribute raises ``AttributeError``: build another)."""

    __slots__ = (
        "max_block",
        "formats",
        "tools",
        "unknown_tools",
        "calls_in_reasoning",
        "code_fences",
        "reasoning_started",
        "stream_arguments",
        "trim_blanks",
        "prompt_tail",
        "schema_guided",
        "table",
        "ctx",
        "quiet",
        "derived",
    )

    max_block: int
    formats: Iterable[str] | None
    tools: list[Any] | None
    unknown_tools: str
    calls_in_reasoning: str
    code_fences: bool
    reasoning_started: bool
    stream_arguments: bool
    trim_blanks: bool
    prompt_tail: str
    schema_guided: bool
    table: Table
    ctx: Context
    quiet: tuple[str, ...] | None
    derived: dict  #: what a scanner builds from these once (the Cython scanner's settings)

    def __init__(
        self,
        *,
        max_block: int = MAX_BLOCK,
        formats: Iterable[str] | None = None,
        tools: list[Any] | None = None,
        unknown_tools: str = "keep_text",
        calls_in_reasoning: str = "auto",
        code_fences: bool = True,
        reasoning_started: bool = False,
        stream_arguments: bool = False,
        trim_blanks: bool = False,
        prompt_tail: str = "",
        schema_guided: bool = True,
    ) -> None:
        if not isinstance(max_block, int) or isinstance(max_block, bool):
            raise TypeError(f"max_block must be an int, not {type(max_block).__name__}")
        if max_block < 1:
            raise ValueError(f"max_block must be >= 1, not {max_block}")
        if unknown_tools not in UNKNOWN_TOOLS:
            raise ValueError(f"unknown_tools must be one of {UNKNOWN_TOOLS}, not {unknown_tools!r}")
        if calls_in_reasoning not in CALLS_IN_REASONING:
            raise ValueError(f"calls_in_reasoning must be one of {CALLS_IN_REASONING}, not {calls_in_reasoning!r}")
        if not isinstance(code_fences, bool):
            raise TypeError(f"code_fences must be a bool, not {type(code_fences).__name__}")
        if not isinstance(reasoning_started, bool):
            raise TypeError(f"reasoning_started must be a bool, not {type(reasoning_started).__name__}")
        if not isinstance(stream_arguments, bool):
            raise TypeError(f"stream_arguments must be a bool, not {type(stream_arguments).__name__}")
        if not isinstance(trim_blanks, bool):
            raise TypeError(f"trim_blanks must be a bool, not {type(trim_blanks).__name__}")
        if not isinstance(prompt_tail, str):
            raise TypeError(f"prompt_tail must be a str, not {type(prompt_tail).__name__}")
        if not isinstance(schema_guided, bool):
            raise TypeError(f"schema_guided must be a bool, not {type(schema_guided).__name__}")
        if len(prompt_tail) > PROMPT_TAIL_MAX:
            raise ValueError(f"prompt_tail must be at most {PROMPT_TAIL_MAX} characters, not {len(prompt_tail)}")
        put = object.__setattr__  # read-only once made (see __setattr__)
        put(self, "table", table_for(formats))  # checks formats
        put(self, "ctx", _NO_TOOLS if tools is None else Context(tools))  # checks tools
        put(self, "max_block", max_block)
        put(self, "formats", formats)
        put(self, "tools", tools)
        put(self, "unknown_tools", unknown_tools)
        put(self, "calls_in_reasoning", calls_in_reasoning)
        put(self, "code_fences", code_fences)
        put(self, "reasoning_started", reasoning_started)
        put(self, "stream_arguments", stream_arguments)
        put(self, "trim_blanks", trim_blanks)
        put(self, "prompt_tail", prompt_tail)
        put(self, "schema_guided", schema_guided)
        put(self, "quiet", self._quiet())
        put(self, "derived", {})

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Options are read-only (what they imply is built once): build another to change {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Options are read-only: cannot delete {name!r}")

    def _quiet(self) -> tuple[str, ...] | None:
        """The characters without which a text is all content, as it is (what can begin markup: the first
        character of every literal, the anchors of plain-word openers, ``{`` and ``[`` with tools, ``(`` too with
        schema-guided recovery; code fences
        only ever keep markup as text, so a backtick is not one of them); ``None`` when there are none such (a
        whole-message format is enabled, or the text begins inside reasoning or after a ``prompt_tail``)."""
        table = self.table
        if table.whole or self.reasoning_started or self.prompt_tail:
            return None
        guided = self.guided
        key = ("quiet", self.ctx.has_tools, guided)  # the same for every Options of this table: built once
        quiet = table.derived.get(key)
        if quiet is None:
            chars = {literal[0] for literal in table.literals} | {anchor for _, anchor, _ in table.anchored}
            if self.ctx.has_tools:
                chars |= {"{", "["}
            if guided:  # a schema-guided call's arguments open with one of "{", "(" or "<" (_guided)
                chars |= {"{", "(", "<"}
            quiet = table.derived[key] = tuple(sorted(chars))
        return quiet

    @property
    def guided(self) -> bool:
        """Whether the scrubbers run the schema-guided stage (``_guided``): tools given and ``schema_guided``."""
        return self.schema_guided and self.ctx.has_tools

    def __repr__(self) -> str:
        given = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__[:11] if getattr(self, k) != _DEFAULTS[k])
        return f"Options({given})"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled (and copied) as its keywords: what it derives from them is built again."""
        return (_from_keywords, ({k: getattr(self, k) for k in self.__slots__[:11]},))


def _from_keywords(keywords: dict[str, Any]) -> Options:
    return Options(**keywords)


_DEFAULTS = {
    "max_block": MAX_BLOCK,
    "formats": None,
    "tools": None,
    "unknown_tools": "keep_text",
    "calls_in_reasoning": "auto",
    "code_fences": True,
    "reasoning_started": False,
    "stream_arguments": False,
    "trim_blanks": False,
    "prompt_tail": "",
    "schema_guided": True,
}

#: the default options (shared: building them is the cost of most of a small ``parse``)
DEFAULT = Options()


def options_of(keywords: dict[str, Any]) -> Options:
    """The ``Options`` for ``parse``-style keywords (``DEFAULT`` when there are none); an ``options=``
    entry holding an ``Options`` is taken as it is (then no other keyword may be given)."""
    if not keywords:
        return DEFAULT
    if "options" not in keywords:
        return Options(**keywords)
    given = keywords["options"]
    if len(keywords) > 1:
        raise TypeError("options= takes the place of the other keywords: give one or the other")
    if not isinstance(given, Options):
        raise TypeError(f"options must be a textcalls.Options, not {type(given).__name__}")
    return given
