"""The reasoning side of a scrubber, shared by both scanners: cold code, run inside ``<think>`` spans and
when a span's call blocks are decided (``calls_in_reasoning``, docs/scanning.md, Reasoning)."""

from __future__ import annotations

from .markers import WHITESPACE
from .toolcall import ToolCall

__all__ = ["Reasoning"]

#: held inside a span: reasoning text, or a call block's (text, calls, the blanks before it: ``trim_blanks``)
Held = str | tuple[str, list[ToolCall], str]


class Reasoning:
    """Reasoning text not yet taken (``out``: the scanners' ``take_reasoning`` empties it; it is never
    replaced, so a scanner may keep a reference to it), and the call blocks of a span held until it is
    known whether they were meant: ``deferred`` while the span is open (with the text after them, at
    most ``max_block`` characters: past that they are rehearsals), then, with ``"auto"``, ``pending``:
    the blocks that ended the span, until the content calls a tool (rehearsals) or not (meant). The
    methods that decide return the blocks' call lists that became calls, for the scanner to take."""

    __slots__ = ("extract", "auto", "max_block", "out", "deferred", "deferred_len", "pending")

    def __init__(self, calls_in_reasoning: str, max_block: int) -> None:
        self.extract = calls_in_reasoning == "extract"  # every call in a span is a call
        self.auto = calls_in_reasoning == "auto"
        self.max_block = max_block
        self.out: list[str] = []
        self.deferred: list[Held] | None = None
        self.deferred_len = 0
        self.pending: list[Held] | None = None

    def text(self, text: str) -> None:
        """Reasoning text."""
        if self.deferred is None:
            self.out.append(text)
        else:
            self._defer(text, len(text))

    def block(self, text: str, calls: list[ToolCall], lead: str = "") -> None:
        """A call block inside a span (not with ``extract``: then it is a call at once); ``lead``: the blanks
        before it (``trim_blanks``), its text's if it is not a call, dropped if it is and ends the text."""
        if self.deferred is None:
            self.deferred, self.deferred_len = [], 0
        self._defer((text, calls, lead), len(lead) + len(text))

    def close_span(self) -> None:
        """The span closed: its blocks were rehearsals, except, with ``"auto"``, the blocks that end it
        (only whitespace after them), which stay pending (see ``settle``)."""
        deferred = self.deferred
        if deferred is None:
            return
        cut = len(deferred)
        if self.auto:
            while cut and (not isinstance(item := deferred[cut - 1], str) or not item.strip(WHITESPACE)):
                cut -= 1
        tail = deferred[cut:]
        self.deferred = deferred[:cut]
        self._resolve(False)
        if any(not isinstance(item, str) for item in tail):
            self.pending = tail
        else:
            self.out.extend(tail)  # type: ignore[arg-type]  # only text in it

    def settle(self, meant: bool) -> list[list[ToolCall]]:
        """Decide the pending blocks: calls (``meant``) or rehearsals whose text is reasoning."""
        if self.pending is None:
            return []
        self.deferred, self.pending = self.pending, None
        return self._resolve(meant)

    def end(self) -> list[list[ToolCall]]:
        """The stream ended: the blocks of a span never closed were meant, and so were pending ones."""
        taken = self._resolve(True) if self.deferred is not None else []
        return taken + self.settle(True)

    def _defer(self, item: Held, n: int) -> None:
        assert self.deferred is not None  # a span's deferral has started
        self.deferred.append(item)
        self.deferred_len += n
        if self.deferred_len > self.max_block:
            self._resolve(False)

    def _resolve(self, extract: bool) -> list[list[ToolCall]]:
        """Release the deferred items: blocks become calls (``extract``: returned) or reasoning text."""
        assert self.deferred is not None  # called only while deferring
        taken = []
        deferred = self.deferred
        last = len(deferred)  # the last visible text held (the blanks before a call after it are dropped)
        while last and (not isinstance(item := deferred[last - 1], str) or not item.strip(WHITESPACE)):
            last -= 1
        for k, item in enumerate(deferred):
            if isinstance(item, str):
                self.out.append(item)
            elif extract:
                if item[2] and k < last:
                    self.out.append(item[2])
                taken.append(item[1])
            else:
                self.out.append(item[2] + item[0] if item[2] else item[0])
        self.deferred = None
        self.deferred_len = 0
        return taken
