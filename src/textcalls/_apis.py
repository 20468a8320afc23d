"""What the Responses and Messages recoveries (``responses_api``, ``messages_api``) share: reading tools and
options, the steps of a whole answer's and a raw body's recovery, the start of an event machine
(``EventMachine``, with ``stream_arguments`` the steps a text part's call events give), one text part's
scrubber, and ``EventRecovery``, the framing of typed server-sent events (``event: TYPE`` then a JSON
``data:`` line) in any splits, which sends on byte for byte every event an API's machine leaves as it is (on
``SSEFraming``, the framing the chat-completions ``SSERecovery`` screens).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from . import _scan
from ._wire import dumps_compact, loads
from .markers import DIALECTS
from .openai import check_gate, should_recover
from .options import Options, options_of
from .screens import may_contain_markup
from .sse import MAX_EVENT, SSEFraming, adrive_sse, drive_sse
from .toolcall import ToolCall, new_call_id

__all__ = [
    "FORMATS",
    "ApiSpec",
    "EventMachine",
    "EventRecovery",
    "Machine",
    "TextPart",
    "adrive_sse",
    "answer_entries",
    "api_options",
    "chat_tool",
    "chat_tools",
    "check_tools",
    "drive_sse",
    "fresh_id",
    "function_tools",
    "json_type",
    "recover_bytes",
    "scrub_parts",
    "scrub_whole",
]

#: The dialects these APIs recover by default: every default one but ``reasoning``, since they carry
#: reasoning in items and blocks of their own (``<think>`` written into a text part stays text).
FORMATS = tuple(name for name, on in DIALECTS.items() if on and name != "reasoning")


def json_type(value) -> str:
    """How JSON names the type of ``value`` ("an object", "null" …), for messages about a request."""
    if isinstance(value, bool):
        return "a boolean"
    names = {dict: "an object", list: "an array", str: "a string", int: "a number", float: "a number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def chat_tools(tools) -> tuple:
    """``(functions, None)`` when every entry of a chat ``tools`` list is an OpenAI function tool
    (``{"type": "function", "function": {"name": non-empty str, "parameters": object or absent}}``)
    or another well-formed tool (an object whose string ``type`` is not ``"function"``, e.g.
    ``custom``): the function tools; else ``(None, why)``."""
    return function_tools(tools, nested=True)


def function_tools(tools, *, nested: bool) -> tuple:
    """``(chat-shaped function tools, None)`` for a ``tools`` list of function tools (``"type": "function"``,
    a non-empty str ``name``, ``parameters`` an object or absent: in the tool's ``function`` object when
    ``nested``, the chat shape, else in the tool itself) and other well-formed tools (an object whose
    string ``type`` is not ``"function"``), which are left out; else ``(None, why)``."""
    if not isinstance(tools, list):
        return None, f"tools is {json_type(tools)}, not an array"
    where = "function." if nested else ""
    functions = []
    for i, tool in enumerate(tools):
        kind = tool.get("type") if isinstance(tool, dict) else None
        if kind == "function":
            function = tool.get("function") if nested else tool
            name = function.get("name") if isinstance(function, dict) else None
            if not isinstance(name, str) or not name:
                return None, f"tools[{i}] is a function tool without a {'function ' if nested else ''}name"
            parameters = function.get("parameters")
            if parameters is not None and not isinstance(parameters, dict):
                return None, f"tools[{i}].{where}parameters is {json_type(parameters)}, not an object"
            functions.append(tool if nested else chat_tool(name, parameters, tool.get("description")))
        elif not isinstance(kind, str):
            what = "an object without a string type" if isinstance(tool, dict) else json_type(tool)
            return None, f"tools[{i}] is {what}, not a tool"
    return functions, None


def chat_tool(name: str, parameters: dict | None, description: object) -> dict:
    """The chat ``tools`` entry of the function ``name`` (``description`` kept when it is a str)."""
    function = {"name": name, "parameters": parameters or {}}
    if isinstance(description, str):
        function["description"] = description
    return {"type": "function", "function": function}


def check_tools(tools, convert: Callable[[Any], tuple]) -> list:
    """The chat-shaped function tools of an API's ``tools``; TypeError/ValueError saying what is wrong."""
    functions, why = convert(tools)
    if why is not None:
        raise (TypeError if not isinstance(tools, list) else ValueError)(f"tools: {why}")
    return functions


def api_options(keywords: dict, convert: Callable[[Any], tuple]) -> Options:
    """The ``Options`` for an API's recovery keywords: ``tools`` in that API's own shape (``convert`` gives
    ``(chat-shaped function tools, why not)``), ``formats`` defaulting to ``FORMATS``; or ``options=``."""
    if "options" in keywords:
        return options_of(keywords)
    given = dict(keywords)
    if given.get("tools") is not None:
        given["tools"] = check_tools(given["tools"], convert)
    given.setdefault("formats", FORMATS)
    return Options(**given)


def fresh_id(prefix: str) -> str:
    """A new id with ``prefix`` (``fc_``, ``toolu_``), unique within the process."""
    return prefix + new_call_id().removeprefix("call_")


#: Once a stream was changed, an event is read up to this many times ``max_event`` (64 MiB by default): the final
#: events of a long answer repeat its whole text, and must say what was streamed.
FINAL_EVENT_FACTOR = 64


def _field(value: object) -> bytes:
    """An upstream value (an event's ``type``) as an SSE field's value: its text as a JSON string writes it, without
    the quotes: ASCII, a line break or a lone surrogate escaped (``\\n``, ``\\ud800``), so it can neither end
    the line and inject an event nor fail to encode; an ordinary type (printable ASCII) as it is."""
    return json.dumps(value if isinstance(value, str) else str(value))[1:-1].encode("ascii")


class TextPart:
    """One text part's scrubber and the text it has shown. Reasoning it moves out of the text (Harmony's
    analysis channel; ``<think>`` with the ``reasoning`` dialect on) is dropped: these APIs carry reasoning
    in items and blocks of their own, which recovery does not invent."""

    __slots__ = ("scrubber", "shown", "done", "item_id", "open", "streaming", "_flushed_from", "_kept")

    def __init__(self, options: Options, item_id: object = None) -> None:
        self.scrubber = _scan.impl.StreamScrubber(options=options)
        self.shown: list[str] = []
        self.done = False  # flushed
        self.item_id = item_id
        self.open = False  # stream_arguments: a call of its scrubber started and has not ended
        self.streaming = False  # and the client was sent its start (the gate allowed it)
        self._flushed_from = 0  # how many calls the scrubber had when it was flushed
        self._kept: list[ToolCall] | None = None  # ``cut``: the part's calls (else the scrubber's)

    def feed(self, text: str) -> str:
        shown = self.scrubber.feed(text)
        self.scrubber.take_reasoning()
        self.shown.append(shown)
        return shown

    def flush(self, truncated: bool = False) -> str:
        self.done = True
        self._flushed_from = len(self.scrubber.calls)
        tail = self.scrubber.flush(truncated)
        self.scrubber.take_reasoning()
        self.shown.append(tail)
        return tail

    @property
    def text(self) -> str:
        return "".join(self.shown)

    def cut(self) -> list[ToolCall]:
        """The output was found cut (``max_tokens``) after the part was flushed as not cut: the calls its flush
        gave (from the block it ended inside: anything but a bare JSON call, complete as written) are dropped;
        returns them."""
        calls = list(self.scrubber.calls)
        late = calls[self._flushed_from :]
        self._kept = calls[: self._flushed_from] + [c for c in late if c.dialect == "bare_json"]
        return [c for c in late if c.dialect != "bare_json"]

    @property
    def calls(self) -> list[ToolCall]:
        return self.scrubber.calls if self._kept is None else self._kept


def scrub_whole(text: str, options: Options, truncated: bool = False) -> tuple[str, list[ToolCall]]:
    """A whole text part: (the text a stream of it shows, in any split; its calls). ``truncated``: the
    output was cut at this part's end (``StreamScrubber.flush``)."""
    part = TextPart(options)
    return part.feed(text) + part.flush(truncated), part.calls


@dataclass(frozen=True)
class ApiSpec:
    """One API (Responses, Messages) as the shared code here and the proxy know it, said once in its module
    (``responses_api.SPEC``, ``messages_api.SPEC``); what its events look like stays its machine's."""

    answer: str  #: the whole answer's name in error messages ("response", "message")
    entries: str  #: the answer's key of its entries ("output", "content")
    text: str  #: the type of a text part ("output_text", "text")
    calls: frozenset[str]  #: the entry types that are calls (function_call items, tool_use blocks)
    convert_tools: Callable[[Any], tuple]  #: its request's tools, made chat-shaped (``api_options``)
    recover: Callable[..., dict]  #: the whole answer's recovery, as a body's (``recover_bytes``) calls it
    recover_bytes: Callable[..., Any]  #: a raw body's (``recover_*_bytes``)
    sse: type  #: its server-sent events' recovery (an ``EventRecovery``)


def scrub_parts(parts: list, kind: str, options: Options, calls: list, truncated: bool = False) -> list | None:
    """``parts`` with the ``text`` of each ``{"type": kind, "text": str}`` part scrubbed (``scrub_whole``), its
    calls added to ``calls``: a new list, or None when no text changes. ``truncated``: the output was cut at
    the end of ``parts``, so the last part, if it is such a text, never ended."""
    new = None
    last = len(parts) - 1 if truncated else -1
    for i, part in enumerate(parts):
        if isinstance(part, dict) and part.get("type") == kind and isinstance(part.get("text"), str):
            text, found = scrub_whole(part["text"], options, i == last)
            calls += found
            if text != part["text"]:
                if new is None:
                    new = list(parts)
                new[i] = {**part, "text": text}
    return new


def answer_entries(answer, spec: ApiSpec, native: bool, has_tools: bool, keywords: dict) -> tuple[list | None, Options]:
    """Check a whole answer of ``spec``'s API and its recovery keywords (``api_options``): ``(entries,
    options)``, the entries (``answer[spec.entries]``) a list of dicts or None when there is nothing to
    recover (``has_tools`` false, or no entries); TypeError naming what is not a dict or list."""
    what, key = spec.answer, spec.entries
    if not isinstance(answer, dict):
        raise TypeError(f"{what} must be a dict, not {type(answer).__name__}")
    check_gate(native, has_tools)
    options = api_options(keywords, spec.convert_tools)
    entries = answer.get(key)
    if not has_tools or entries is None:
        return None, options
    if not isinstance(entries, list):
        raise TypeError(f"{what}['{key}'] must be a list, not {type(entries).__name__}")
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise TypeError(f"{what}['{key}'][{i}] must be a dict, not {type(entry).__name__}")
    return entries, options


def recover_bytes(body, spec: ApiSpec, native: bool, has_tools: bool, keywords: dict):
    """An API's ``recover_*_bytes``: ``spec.recover(answer, native=, has_tools=True, options=)`` on the JSON
    object in ``body`` (bytes-like). ``body`` itself (the very same object) when nothing changes, when it is not an
    object ``recover`` takes (it raises TypeError) or, without ``tools``, when ``may_contain_markup`` says no;
    otherwise compact UTF-8 JSON bytes."""
    if not isinstance(body, (bytes, bytearray, memoryview)):
        raise TypeError(f"body must be bytes, bytearray or memoryview, not {type(body).__name__}")
    check_gate(native, has_tools)
    opts = api_options(keywords, spec.convert_tools)
    if not has_tools:
        return body
    data = bytes(body) if isinstance(body, memoryview) else body
    if (
        opts.tools is None
        and not (opts.reasoning_started or opts.prompt_tail)
        and not may_contain_markup(data, formats=opts.formats)
    ):
        return body  # with tools a text may be a bare JSON call: always read
    try:
        answer = loads(bytes(data))
    except (ValueError, RecursionError):
        return body
    if not isinstance(answer, dict):
        return body
    try:
        recovered = spec.recover(answer, native=native, has_tools=True, options=opts)
    except TypeError:  # a shape recover rejects: nothing to rewrite
        return body
    return body if recovered is answer else dumps_compact(recovered)


class Machine(Protocol):
    """An API's recovery over decoded events. ``text_delta``, ``with_text``, ``screened`` and ``unscreened`` are the
    screen's (``EventRecovery`` sends text deltas on undecoded through them); without them every event is decoded."""

    recovered: int
    abandoned: int
    has_tools: bool

    def push(self, event: dict) -> list:
        """The events to send in place of ``event``: ``[event]`` itself when it goes out as it came."""

    def close(self) -> list:
        """The events that end the stream (what is still held)."""

    def text_delta(self, event: dict) -> tuple | None:
        """For an event ``push`` just sent on as it came: ``(slot, text, seq)`` when it is a text delta that
        ``screened`` can stand for (``slot`` names its part, ``seq`` is its sequence number or None), else None."""

    def with_text(self, event: dict, text: str, seq: int | None) -> dict:
        """``event`` (a ``text_delta`` one) with ``text`` for its text (and ``seq`` for its sequence number)."""

    def screened(self, slot: Any, text: str, seq: int | None) -> Any:
        """``push`` of a text delta of ``slot`` with ``text`` (and ``seq``), not decoded: None when it cannot stand
        for ``push`` (nothing done: the event is decoded and pushed), True when the event goes out as it came
        (its text fed), else what ``unscreened`` takes with the decoded event to finish ``push``."""

    def unscreened(self, event: dict, state: Any) -> list:
        """The rest of ``push(event)`` after ``screened`` gave ``state`` for it: the events to send."""


class EventMachine:
    """What an API's ``Machine`` starts with: the gate checked, its options (``api_options`` with its
    ``ApiSpec``'s tool conversion), no call recovered, no structured call or index seen, not ended."""

    def __init__(self, native: bool, has_tools: bool, keywords: dict, spec: ApiSpec) -> None:
        check_gate(native, has_tools)
        self.native = native
        self.has_tools = has_tools
        self.options = api_options(keywords, spec.convert_tools)  #: the recovery options, checked
        self.recovered = 0  #: calls recovered and sent (streamed ones once ended)
        #: calls whose start went out in pieces (``stream_arguments``) and that were then abandoned
        self.abandoned = 0
        self._structured: set = set()  # the indexes of structured calls
        self._last = -1  # the highest index seen (with stream_arguments: sent)
        self._ended = False

    def _gated_calls(self, parts: dict) -> list[ToolCall]:
        """The calls of ``parts`` (``TextPart``s, in key order) if the gate lets them through (counted in
        ``recovered``), else none."""
        calls = [call for _, part in sorted(parts.items()) for call in part.calls]
        if not calls or not should_recover(self.native, True, len(self._structured)):
            return []
        self.recovered += len(calls)
        return calls

    def _steps(self, part: TextPart, text: str | None, truncated: bool = False) -> list[tuple]:
        """``stream_arguments``: feed ``text`` to ``part`` (None: flush it, ``truncated`` as given); what to send:
        ``("text", str)``; a call streamed: ``("start", id, name)``, ``("piece", str)`` …, then ``("end", call)``
        or ``("abandon",)``; ``("call", call)``: a call without events, whole. Calls are sent when the gate
        (``should_recover`` with the structured calls seen so far) allows at their start or completion, counted
        in ``recovered`` and ``abandoned``.

        Where the text shown goes: after the end of the call open when the feed began, if one was (its block
        held all text until then); else, when the feed ends calls and leaves none open, its longest end that
        ``text`` also ends with goes after them and the rest before them (text the feed brings after a block it
        ends, unless the scrubber changed it: markers removed); else before them."""
        was_open = part.open
        before = len(part.calls)
        shown = part.flush(truncated) if text is None else part.feed(text)
        calls = part.calls
        steps: list[tuple] = []
        taken = before  # calls before it are decided (sent, or refused by the gate)
        ended = -1  # where the text goes when a call was open: after the first step that ends one
        for event in part.scrubber.take_events():
            kind, index = event[0], event[1]
            if kind == "arguments":
                if part.streaming:
                    steps.append(("piece", event[2]))
            elif kind == "started":
                taken = self._whole(calls, taken, index, steps)
                part.open = True
                part.streaming = should_recover(self.native, True, len(self._structured))
                if part.streaming:
                    steps.append(("start", event[2], event[3]))
            else:  # ended (calls[index] is the call), or abandoned
                if part.streaming and kind == "ended":
                    self.recovered += 1
                    taken = index + 1
                    steps.append(("end", calls[index]))
                elif part.streaming:
                    self.abandoned += 1
                    steps.append(("abandon",))
                part.open = part.streaming = False
                if ended < 0:
                    ended = len(steps)
        self._whole(calls, taken, len(calls), steps)
        if not shown:
            return steps
        if was_open:  # (a block open all through a feed shows nothing: the text is never left without a place)
            at = ended if ended >= 0 else len(steps)
            return [*steps[:at], ("text", shown), *steps[at:]]
        cut = len(shown) if part.open or not steps or not text else _shared_end(shown, text)
        return [
            *([("text", shown[:cut])] if cut else []),
            *steps,
            *([("text", shown[cut:])] if cut < len(shown) else []),
        ]

    def _whole(self, calls: list[ToolCall], taken: int, end: int, steps: list) -> int:
        """``calls[taken:end]`` (completed without events) as ``("call", call)`` steps if the gate allows; ``end``."""
        if end > taken and should_recover(self.native, True, len(self._structured)):
            self.recovered += end - taken
            steps += [("call", call) for call in calls[taken:end]]
        return end


def _shared_end(shown: str, fed: str) -> int:
    """Where the longest end of ``shown`` that ``fed`` also ends with begins."""
    lo, hi = 0, len(shown)  # fed ends with shown[hi:]; the answer is in [lo, hi]
    while lo < hi:
        mid = (lo + hi) // 2
        if fed.endswith(shown[mid:]):
            hi = mid
        else:
            lo = mid + 1
    return lo


#: A delta's text up to its closing quote: a text a template may stand for holds none of these (a JSON string
#: holds no raw control character, quote or backslash but as an escape, which a text here does not have).
_TEXT_END = re.compile(rb'[\x00-\x1f"\\]')
#: A sequence number as JSON writes an int >= 0.
_DIGITS = re.compile(rb"0|[1-9][0-9]*")
#: A Responses event's ``sequence_number`` as written (the only number a text delta's shape leaves open).
_NUMBER = re.compile(rb'"sequence_number"[ \t\r\n]*:[ \t\r\n]*(0|[1-9][0-9]*)(?![0-9.eE])')


class _Shape:
    """The bytes of one text delta event around its text and its sequence number (if it has one), learned
    from a decoded event: an event of the same bytes around another text (no quote, backslash or control
    character in it) and another number decodes to the learned event with those two values (checked when
    it is learned, by decoding such an event), so it need not be decoded. ``head``, then the number and
    ``mid`` when ``number == 1``, the text, ``mid`` and the number when ``number == 2``, then ``tail``."""

    __slots__ = ("head", "mid", "tail", "number", "slot", "newline", "whole")

    def __init__(self, head: bytes, mid: bytes, tail: bytes, number: int, slot: Any, newline: bytes) -> None:
        self.head, self.mid, self.tail, self.number = head, mid, tail, number
        self.slot, self.newline = slot, newline
        #: an input of exactly such an event is one whole event to the framing (it ends with an LF, so no LF
        #: of the next input can belong to it)
        self.whole = tail.endswith(b"\n")

    def match(self, buf, pos: int, end: int) -> tuple | None:
        """``(text, number)`` of the event ``buf[pos:end]`` if it has this shape (``number`` None without one);
        else None (a text that is not UTF-8 too: such an event does not decode)."""
        if not buf.startswith(self.head, pos):
            return None
        at = pos + len(self.head)
        seq = None
        number = self.number
        if number == 1:
            m = _DIGITS.match(buf, at, end)
            if m is None or not buf.startswith(self.mid, m.end()):
                return None
            seq = int(m.group())
            at = m.end() + len(self.mid)
        m = _TEXT_END.search(buf, at, end)
        if m is None:
            return None
        q = m.start()
        if buf[q] != 0x22:
            return None
        if number == 2:
            if not buf.startswith(self.mid, q):
                return None
            m = _DIGITS.match(buf, q + len(self.mid), end)
            if m is None:
                return None
            seq = int(m.group())
            after = m.end()
        else:
            after = q
        if after + len(self.tail) != end or not buf.startswith(self.tail, after):
            return None
        try:
            return buf[at:q].decode("utf-8", "surrogatepass"), seq  # as json.loads decodes bytes
        except UnicodeDecodeError:
            return None


class EventRecovery(SSEFraming):
    """Feed raw SSE bytes in any splits; get back the bytes to send (see the module doc).

    Events follow the SSE spec (LF, CRLF or CR line endings, a UTF-8 BOM, multi-line ``data:``, comments).
    An event whose data is a JSON object goes to the machine; one it leaves unchanged, and every comment,
    non-JSON or data-less event, goes out byte for byte. Events the machine writes are ``event: TYPE`` and
    one compact ``data:`` line, with the line ending of the upstream event they stand for; a rewritten
    event keeps its other lines (``id:``, comments). An incomplete event is held up to ``max_event``
    bytes; a longer one is sent on verbatim as it arrives, unread, until the machine has changed an event:
    from then on an event is read up to ``FINAL_EVENT_FACTOR`` times ``max_event`` (a final event repeats the
    whole text and its calls, and going on unread it would contradict what was streamed: the markup back, no
    call). ``feed`` returns ``b""`` while it holds.

    The screen: once a text delta event went through its machine unchanged, the bytes around its text (and its
    sequence number) are remembered (``_Shape``); a later event with the same bytes around a plain text (no
    quote, backslash or control character) is not decoded: its text goes to the machine's ``screened``, which
    feeds it to its part as ``push`` would, and the event goes out as it came when ``push`` would send it so.
    Only when the machine must change it is it decoded (``unscreened``).
    """

    _keeps_end = False  # written events end with their own empty line

    def __init__(self, machine: Machine, *, max_event: int = MAX_EVENT) -> None:
        super().__init__(max_event)
        self.machine = machine
        self._changed = False  # the machine replaced or dropped an event: later ones are read up to the larger cap
        self._shape: _Shape | None = None  # the last text delta event learned (see the class doc)
        self._fails = hasattr(machine, "failed")  # (_stopped, on every event)
        self._screens = hasattr(machine, "text_delta")  # a machine without the screen's methods decodes every event
        self._clear = False  # open, with tools, started, nothing held or pending: an input may be one event alone

    def _cap(self) -> int:
        return self.max_event * FINAL_EVENT_FACTOR if self._changed else self.max_event

    @property
    def recovered(self) -> int:
        """Tool calls recovered and sent so far."""
        return self.machine.recovered

    @property
    def abandoned(self) -> int:
        """Calls streamed in pieces (``stream_arguments=True``) and then abandoned."""
        return self.machine.abandoned

    def feed(self, data) -> bytes:
        """Take the next upstream bytes (bytes-like); return the bytes to send now."""
        if self._clear and type(data) is bytes:
            shape = self._shape
            if shape is not None and shape.whole and len(data) <= self.max_event:  # one event of the shape?
                found = shape.match(data, 0, len(data))
                if found is not None:
                    state = self.machine.screened(shape.slot, found[0], found[1])
                    if state is True:  # (its text fed) it goes out as it came
                        self._newline = shape.newline
                        return data
                    if state is not None:
                        new = self._decoded(data, state)
                        self._clear = not self._stopped()
                        return data if new is None else b"".join(new)
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"feed() expects bytes, bytearray or memoryview, not {type(data).__name__}")
        if self._closed:
            raise ValueError("feed() after close(): the stream has ended")
        if not self.machine.has_tools:
            return data  # type: ignore[return-value]  # as SSERecovery: the input itself, unread
        out = self._feed(bytes(data))
        self._clear = (
            self._started and not self._buf and self._lf is None and self._over is None and not self._stopped()
        )
        return out

    def close(self) -> bytes:
        """End the stream: what is still held, then any incomplete event verbatim."""
        self._clear = False
        return super().close()

    def _flush(self) -> list:
        return [self._write(event, []) for event in self.machine.close()]

    def _stopped(self) -> bool:
        return self._fails and self.machine.failed  # type: ignore[attr-defined]

    def _event(self, buf: bytearray, pos: int, end: int, single: bool) -> list | None:
        if self._stopped():  # a streamed call was abandoned: the stream ended with the machine's error event
            return []
        shape = self._shape
        state = found = None
        if shape is not None:
            found = shape.match(buf, pos, end)
            if found is not None:
                state = self.machine.screened(shape.slot, found[0], found[1])
                if state is True:  # (its text fed) it goes out as it came
                    self._newline = shape.newline
                    return None
        return self._decoded(bytes(buf[pos:end]), state, found is None)

    def _decoded(self, raw: bytes, state: Any, learn: bool = False) -> list | None:
        """``_event`` of the complete event ``raw``, decoded: pushed to the machine, or (``state`` not None:
        ``screened`` fed its text, and its shape says it decodes) the rest of that push; ``learn``: an event
        sent on as it came may be learned (``_learn``)."""
        lines, data = self._read(raw)
        if data is None:
            return None
        try:
            event = loads(data)
        except (ValueError, RecursionError):
            return None
        if not isinstance(event, dict):
            return None
        self._newline = lines[0][1]
        new = self.machine.push(event) if state is None else self.machine.unscreened(event, state)
        if len(new) == 1 and new[0] is event:
            if learn:
                self._learn(raw, lines, event)
            return None
        self._changed = True
        return [self._write(e, lines if i == len(new) - 1 else []) for i, e in enumerate(new)]

    def _learn(self, raw: bytes, lines: list, event: dict) -> None:
        """Remember the shape of ``raw`` (``event``, sent on as it came) if it is a text delta the machine can
        take undecoded (``text_delta``), its text written plain; checked by decoding it with other values."""
        machine = self.machine
        found = machine.text_delta(event) if self._screens else None
        if found is None:
            return
        slot, text, seq = found
        plain = text.encode("utf-8", "surrogatepass")
        if _TEXT_END.search(plain) is not None:
            return  # written with escapes: a later plain one may be learned
        quoted = b'"' + plain + b'"'
        at = raw.find(quoted)
        if at < 0 or raw.find(quoted, at + 1) >= 0:
            return
        head, tail = raw[: at + 1], raw[at + 1 + len(plain) :]
        mid = b""
        number = 0
        if seq is not None:  # its digits after the key, found once in the event (in head or tail)
            places = [(side, m) for side in (head, tail) for m in _NUMBER.finditer(side)]
            if len(places) != 1 or int(places[0][1].group(1)) != seq:
                return
            side, m = places[0]
            number = 1 if side is head else 2
            if number == 1:
                head, mid = side[: m.start(1)], side[m.end(1) :]
            else:
                mid, tail = side[: m.start(1)], side[m.end(1) :]
        shape = _Shape(head, mid, tail, number, slot, lines[0][1])
        # the check: an event of this shape around other values decodes to the event with those values
        other, other_seq = ("x" if text != "x" else "y"), (None if seq is None else seq + 1)
        parts = [head]
        if number == 1:
            parts += [str(other_seq).encode(), mid]
        parts.append(other.encode())
        if number == 2:
            parts += [mid, str(other_seq).encode()]
        parts.append(tail)
        probe = b"".join(parts)
        if shape.match(probe, 0, len(probe)) != (other, other_seq):
            return
        data = self._read(probe)[1]
        try:
            decoded = None if data is None else loads(data)
        except (ValueError, RecursionError):
            return
        if decoded == machine.with_text(event, other, other_seq):
            self._shape = shape

    def _write(self, event: dict, lines: list) -> bytes:
        """One event: ``event: TYPE``, its other original ``lines`` (no data or event line), one ``data:`` line."""
        nl = self._newline
        out = [b"event: " + _field(event.get("type", "message")) + nl]
        for content, ending in lines[:-1]:
            if not (content[:5] in (b"data:", b"data") or content[:6] in (b"event:", b"event")):
                out.append(content + ending)
        out.append(b"data: " + dumps_compact(event) + nl + nl)
        return b"".join(out)
