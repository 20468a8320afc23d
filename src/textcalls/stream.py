"""Recover text tool calls in OpenAI ``chat.completion.chunk`` streams.

``recover_stream`` / ``arecover_stream`` wrap an (async) iterable of chunk dicts;
``ChunkRecovery`` is the push-style state machine under both (and under ``SSERecovery``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator

from . import _scan
from ._drive import adrive, drive
from ._events import ABANDONED
from .openai import NameRepair, check_gate, count, marked, should_recover
from .options import Options, options_of
from .screens import screen_for

__all__ = ["MAX_CHOICES", "ChunkRecovery", "abandoned_error_chunk", "arecover_stream", "recover_stream"]

#: Where reasoning moved out of the content goes, in deltas and messages (DeepSeek's and vLLM's name).
REASONING_KEY = "reasoning_content"
_CHOICE_KEYS = frozenset({"index", "delta", "logprobs", "finish_reason"})
#: Cap on the choices of one stream that are open at once (OpenAI's ``n`` is at most 128): a chunk that
#: would open one more raises ValueError (``SSERecovery`` then relays its event unrecovered).
MAX_CHOICES = 128


def abandoned_error_chunk() -> dict:
    """The chunk that ends a chat stream whose streamed call was abandoned (``ChunkRecovery``), shaped as the
    servers' mid-stream errors (``data: {"error": …}``, which the openai SDK raises as ``APIError``): a new
    dict each time."""
    return {"error": {"message": ABANDONED, "type": "api_error", "param": None, "code": "tool_call_abandoned"}}


class _Choice:
    """The state of one choice ``index``: its scrubber and its ``tool_calls`` indexes."""

    __slots__ = (
        "scrubber",
        "active",
        "upstream",
        "recovered",
        "next_index",
        "held",
        "midline",
        "streaming",
        "lag",
        "sticky",
    )

    def __init__(self, options: Options) -> None:
        self.scrubber = _scan.impl.StreamScrubber(options=options)
        self.active = False  # False: settled, behaves exactly like a fresh choice (see ChunkRecovery)
        self.upstream: dict = {}  # structured call index as sent -> index as forwarded
        self.recovered = 0  # downstream tool_calls indexes taken by recovered calls (streamed ones included)
        self.next_index = 0  # first downstream tool_calls index not used yet
        self.held: dict | None = None  # downstream index -> _Held: structured calls held for repair
        # settled, and its scrubber known to be mid-line: a text without a line ending fed to it on the
        # fast path cannot move its line state (code fences), so it needs no feeding
        self.midline = False
        self.streaming: int | None = None  # stream_arguments: the downstream index of the call in pieces
        # schema-guided stage on: active only because its scrubber held text (no call, no removal, no reasoning,
        # no structured call: not sticky), it settles again once all it held went out (lag, the characters fed
        # and not shown yet, back to 0: the text shown is then the text fed) and its stage is quiet
        self.lag = 0
        self.sticky = False


class _Held:
    """A structured call whose name carries arguments as markup: its entries until the call ends."""

    __slots__ = ("entry", "names", "arguments")

    def __init__(self, entry: dict) -> None:
        self.entry = entry  # the first entry (index, id, type, function …)
        function = entry["function"]
        self.names = [function["name"]]
        arguments = function.get("arguments")
        self.arguments = [arguments] if isinstance(arguments, str) else []

    def absorb(self, entry: dict) -> None:
        function = entry.get("function")
        if isinstance(function, dict):
            for key, parts in (("name", self.names), ("arguments", self.arguments)):
                text = function.get(key)
                if isinstance(text, str):
                    parts.append(text)

    def whole(self) -> dict:
        """The call as one complete entry, as a non-streamed response would carry it."""
        function = {**self.entry["function"], "name": "".join(self.names), "arguments": "".join(self.arguments)}
        return {**self.entry, "function": function}


class ChunkRecovery:
    """Push ``chat.completion.chunk`` dicts one at a time; get back the chunks to send.

    Rules, per choice ``index`` (each has its own scrubber):

    - String ``content`` deltas are scrubbed. A choice left with nothing to say (no text, role,
      finish_reason, logprobs or other non-empty field) is removed, and a chunk left with no
      choice and no ``usage`` is dropped. Everything else passes through as sent.
    - When a block completes and ``should_recover(native, True, structured calls seen)``
      allows, a chunk with ``delta.tool_calls`` follows, indexes continuing after the
      choice's structured calls. Structured ``tool_calls`` pass as sent; only if they arrive
      after recovered calls are their indexes shifted past them, so no two calls share one.
    - On a chunk carrying ``finish_reason`` the scrubber is flushed: the held tail (with that
      chunk's own text) goes first as a content delta, then any calls, then the finish chunk,
      whose ``finish_reason`` is ``"tool_calls"`` if calls were recovered for the choice. The
      choice then starts afresh.
    - ``close()`` flushes the choices that did not finish (no finish chunk is invented) and
      starts afresh.
    - A structured call whose ``function.name`` carries markup is repaired as ``recover_response``
      repairs it (``openai.NameRepair``), whatever the gate says. A name whose markup holds no
      arguments (``tool_12</arg_value>``) is replaced in its own delta and the arguments deltas
      pass as sent. One whose markup holds arguments (``read<arg_key>…</arg_value>``) is held with
      that call's later deltas (their ``function.arguments``, and ``name``, concatenated) until the
      call ends: an entry of another call index of the choice comes (the held call is sent first,
      in that delta's ``tool_calls``), the choice finishes (it goes out before the finish chunk) or
      the stream closes; it is then sent as one entry, merged and repaired exactly as a whole
      response's would be (or as it came, concatenated, when its arguments cannot be merged).
      Deltas of that call index coming after it was sent (streams that interleave calls) pass as
      sent. A held or repaired call still counts as the structured call it is for the gate.

    A chunk that needs no change is returned as the very same object; with
    ``has_tools=False`` every chunk is, unchecked. Otherwise a malformed chunk (not a dict,
    ``choices`` not a list of dicts with an int ``index``, ``delta`` or ``delta.tool_calls``
    of the wrong shape) raises TypeError/ValueError before any state changes. Inputs are
    never mutated.

    ``options`` are ``parse``'s (``max_block``, ``formats``, ``tools``, ``unknown_tools`` …, or
    ``options=`` an ``Options``), checked once and shared by the scrubbers of every choice.

    ``active`` counts the choices that may not behave like fresh ones. A choice is settled
    while it saw no structured call and every delta its scrubber was fed came back unchanged
    (so nothing is held, no block is open and none was removed). With no active choice, a
    chunk whose strings hold none of ``screen.starts`` (the characters that can begin markup,
    and the backtick while code fences are on) and that carries no ``tool_calls`` cannot
    change anything: it passes unchanged. With code fences off it is not even fed to a
    scrubber (and ``SSERecovery`` sends such events without decoding them); with them on, its
    text is still fed, since it moves the line state that decides whether a later backtick run
    is a fence. A whole-message format (``json_message`` …) reads every message from its
    start, so with one enabled ``active`` is never 0 and every chunk is read. With ``tools``, a
    message that starts with a bare JSON call of an offered tool is a call: ``{`` and ``[`` count
    among ``starts``, and skipped content is fed as with code fences on, so a choice's first
    non-blank characters always reach its scrubber. With the schema-guided stage on (``tools``,
    ``schema_guided``), a line break is a start too, a choice is skipped only while its stage is
    ``quiet``, and a choice active only because it held text (no call, removal, reasoning or
    structured call) settles again once what it held went out and its stage is quiet.

    At most ``MAX_CHOICES`` choices may be open at once (a choice closes with its
    ``finish_reason``): a chunk that would open one more raises ValueError.

    With ``stream_arguments=True`` a call goes out in pieces as its body arrives (its arguments'
    closing ``}`` held until the block ends). A call abandoned after its start went out (cut by another
    opener or by the output's end, malformed, read otherwise: see ``StreamScrubber.take_events``)
    cannot be taken back: the push or close that abandons it returns only ``abandoned_error_chunk()``,
    ``failed`` becomes true, and every later push and close returns nothing. The openai SDK raises the
    error, so no client holds the unfinished call (``abandoned`` counts them). A chunk finishing with
    ``length`` keeps that ``finish_reason``, and a choice becomes ``tool_calls`` only when a call was
    recovered for it.
    """

    def __init__(self, *, native: bool, has_tools: bool, **options) -> None:
        check_gate(native, has_tools)
        self.native = native
        self.has_tools = has_tools
        self.options = opts = options_of(options)  #: the recovery options, checked
        table = opts.table
        # with tools, a message may start with a bare JSON call of an offered tool (the scrubber holds it
        # from its first `{`, `[` or backtick after blanks): content skipped by the screens must then reach
        # the scrubber until its choice has shown non-blank text (see follow), as with code fences on — so
        # the screens are those of fences on (they skip less, never more), and `{`, `[` are starts too
        self._bare = (
            opts.tools is not None
            and not opts.reasoning_started
            and not opts.prompt_tail
            and not (table.whole or table.anchored)
        )
        # with tools, the schema-guided stage reads every line's head: a choice is skipped only while its stage
        # is quiet (inside a line whose head is decided, nothing held; see quiet), and a line break is a start
        self._guided = opts.guided
        #: the screens, derived from the same table, fence setting, bare-call reading and guided stage as the scrubbers
        self.screen = screen_for(table, opts.code_fences, self._bare, self._guided)
        self.starts = self.screen.starts  #: what can begin markup, a fence run or a bare call in content
        self._opens = self.screen.opens
        self._fences = self.screen.fences  # skipped content is still fed
        # a whole-message format, a plain-word opener (phi4_mini), or a text that starts inside reasoning:
        # no choice is ever like a fresh one, so none is ever skipped
        # (trim_blanks: a blank at a delta's end may be held, so every delta goes to the scrubber)
        self._floor = 1 if self.screen.every or opts.reasoning_started or opts.trim_blanks or opts.prompt_tail else 0
        self.recovered = 0  #: tool calls recovered and emitted so far (streamed ones once ended), all choices
        #: calls whose start went out in pieces (``stream_arguments``) and that were then abandoned
        self.abandoned = 0
        #: a streamed call was abandoned: the stream ended with ``abandoned_error_chunk()`` (read-only)
        self.failed = False
        #: what recovery did, as ``recover_response``'s ``tally``: calls by dialect, blocks removed without a call
        self.tally: Counter = Counter()
        self._events = opts.stream_arguments
        self._choices: dict = {}
        self.active = self._floor  #: choices that may not behave like fresh ones (read-only)
        self._template: dict | None = None  # the last chunk that had choices: model, id …
        self._names: NameRepair | None = None  # built at the first structured name with markup

    def push(self, chunk: dict) -> list:
        """Take the next chunk; return the chunks to send in its place (maybe none)."""
        if not self.has_tools:
            return [chunk]
        if self.failed:  # the stream ended with the abandonment's error
            _check_chunk(chunk)
            return []
        choices = _check_chunk(chunk)
        if not choices:
            return [chunk]
        if not self.active:
            content = None
            for choice in choices:
                delta = choice.get("delta")
                if delta:
                    content = delta.get("content")
                    if delta.get("tool_calls") or (isinstance(content, str) and self._opens(content)):
                        break
                    if self._guided and content:  # (self.quiet, inline)
                        state = self._choices.get(choice["index"])
                        if state is None or not state.scrubber.guided_quiet:
                            break
            else:  # all settled, and nothing that could open a block or a fence: nothing to change
                if len(choices) == 1 and choice.get("finish_reason") is None:  # the common case, inline
                    if self._fences and content and isinstance(content, str):
                        state = self._choices.get(choice["index"])
                        if state is None or not state.midline or "\n" in content:
                            self.follow(choice["index"], content)
                elif self._fences or self._choices:
                    self._passed(choices)
                return [chunk]
        fed = None
        if len(choices) == 1:  # the usual chunk of a choice mid-markup: one content delta to scrub
            choice = choices[0]
            delta = choice.get("delta")
            state = self._choices.get(choice["index"])
            if state is not None and delta and choice.get("finish_reason") is None and not delta.get("tool_calls"):
                content = delta.get("content")
                if isinstance(content, str) and content:
                    self._template = chunk
                    recovered = self.recovered  # (what the client got: restored if this withdraws the answer)
                    fed = self._scrub(state, content)
                    if self.failed:
                        self.recovered = recovered
                        return [abandoned_error_chunk()]
                    if fed is None:
                        return [chunk]
                    if (
                        not fed[0]
                        and not fed[1]
                        and len(delta) == 1
                        and choice.keys() <= _CHOICE_KEYS
                        and choice.get("logprobs") is None
                        and chunk.get("usage") is None
                    ):  # all of it held or removed, and nothing else to say: only the calls' chunks go
                        index = choice["index"]
                        return [self._synthetic(chunk, index, {"tool_calls": group}) for group in fed[2]]
        self._room(choices)
        self._template = chunk
        recovered = self.recovered
        before: list[dict] = []
        after: list[dict] = []
        main_choices = []
        changed = False
        for choice in choices:
            new = self._choice(chunk, choice, before, after, fed)
            if new is not choice:
                changed = True
            if new is not None:
                main_choices.append(new)
        if self.failed:
            self.recovered = recovered
            return [abandoned_error_chunk()]
        if not changed and not before and not after:
            return [chunk]
        if main_choices or chunk.get("usage") is not None:
            before.append({**chunk, "choices": main_choices})
        before.extend(after)
        return before

    def close(self) -> list:
        """End the stream: the chunks that flush every unfinished choice. Starts afresh (but for ``failed``)."""
        if self.failed:
            return []
        recovered = self.recovered
        out: list = []
        for index in sorted(self._choices):
            state = self._choices[index]
            if state.active:
                assert self._template is not None  # set by the chunk that made a choice active
                if state.held:
                    out.append(self._synthetic(self._template, index, {"tool_calls": self._release_all(state)}))
                text, calls, thought = self._flush(state)
                said = _said(text, thought)
                if said:
                    out.append(self._synthetic(self._template, index, said))
                out.extend(self._synthetic(self._template, index, {"tool_calls": group}) for group in calls)
        self._choices.clear()
        self.active = self._floor
        if self.failed:
            self.recovered = recovered
            return [abandoned_error_chunk()]
        return out

    def quiet(self, index: int) -> bool:
        """Whether a content text of choice ``index`` with none of ``starts`` may skip its scrubber: always
        without the schema-guided stage; with it, only while that choice's stage is inside a line whose head
        is decided and holds nothing (a fresh choice is at its message's start: not quiet)."""
        if not self._guided:
            return True
        state = self._choices.get(index)
        return state is not None and state.scrubber.guided_quiet

    def follow(self, index: int, text: str) -> None:
        """Feed a content ``text`` that holds none of ``starts``, sent on unchanged without a chunk
        being decoded (``SSERecovery``), to choice ``index``: it moves that choice's line state."""
        state = self._choices.get(index)
        if state is None:
            self._room(({"index": index},))
            state = self._choices[index] = _Choice(self.options)
        elif state.midline and "\n" not in text:
            return
        state.scrubber.feed(text)
        tail = text[text.rfind("\n") + 1 :]
        if self._bare:  # only non-blank text shows its scrubber is past a bare call's start
            state.midline = bool(tail.strip(" \r"))
        else:
            state.midline = len(tail) > 3 or bool(tail.strip(" "))  # else unknown: fed next time

    # -- one choice ---------------------------------------------------------------------------

    def _passed(self, choices: list) -> None:
        """After a chunk passed unchanged: its content fed (code fences on: see the class doc), and
        its finished choices forgotten (they start afresh)."""
        fences = self._fences
        if fences and len(self._choices) + len(choices) > MAX_CHOICES:
            self._room(choices)
        for choice in choices:
            index = choice["index"]
            if fences:
                delta = choice.get("delta")
                content = delta.get("content") if delta else None
                if isinstance(content, str) and content:
                    self.follow(index, content)
            if choice.get("finish_reason") is not None:
                self._choices.pop(index, None)

    def _room(self, choices) -> None:
        """Raise ValueError, before any state changes, if ``choices`` would open more than
        ``MAX_CHOICES`` choices at once."""
        known = self._choices
        if len(known) + len(choices) <= MAX_CHOICES:
            return
        new = {choice["index"] for choice in choices if choice["index"] not in known}
        if len(known) + len(new) > MAX_CHOICES:
            raise ValueError(
                f"a stream may have at most {MAX_CHOICES} choices open at once "
                f"(choice index {min(new)} would open one more)"
            )

    def _choice(self, chunk: dict, choice: dict, before: list, after: list, fed: tuple | None = None):
        """The choice to keep in the chunk (``choice`` itself when unchanged, None to drop it);
        appends to ``before``/``after`` the chunks to send around it. ``fed``: what ``_scrub`` gave for
        its content, already fed (a choice with no finish_reason and no ``tool_calls``)."""
        index = choice["index"]
        state = self._choices.get(index)
        if state is None:
            state = self._choices[index] = _Choice(self.options)
        delta = choice.get("delta") or {}
        finish = choice.get("finish_reason")
        new_delta = None

        structured = delta.get("tool_calls")
        if structured:
            self._mark(state)
            shifted = self._structured(state, structured)
            if state.held or any(map(marked, shifted)):
                shifted = self._repair(state, shifted)
            if shifted is not structured:
                if shifted:
                    new_delta = {**delta, "tool_calls": shifted}
                else:  # every entry was held
                    new_delta = {k: v for k, v in delta.items() if k != "tool_calls"}

        content = delta.get("content")
        if fed is not None:
            text, thought, calls = fed
        elif isinstance(content, str) and content:
            text, thought, calls = self._scrub(state, content) or (content, "", [])
        else:
            text, thought, calls = content, "", []

        if finish is not None:
            del self._choices[index]
            if not state.active:
                return choice  # a settled choice has nothing held and nothing to change
            self.active -= 1
            if state.held:  # held structured calls go first, before the finish chunk
                base = new_delta if new_delta is not None else delta
                entries = (base.get("tool_calls") or []) + self._release_all(state)
                new_delta = {k: v for k, v in base.items() if k != "tool_calls"}
                before.append(self._synthetic(chunk, index, {"tool_calls": entries}))
            tail, more, late = self._flush(state, finish == "length")
            calls += more
            if tail or calls or late:  # held text, reasoning and calls go before the finish chunk
                said = _said((text or "") + tail, thought + late)
                if said:
                    before.append(self._synthetic(chunk, index, said))
                before.extend(self._synthetic(chunk, index, {"tool_calls": group}) for group in calls)
                calls, thought = [], ""
                if "content" in delta:
                    new_delta = {k: v for k, v in (delta if new_delta is None else new_delta).items() if k != "content"}
                text = content
        for group in calls:
            after.append(self._synthetic(chunk, index, {"tool_calls": group}))
        if text != content:
            new_delta = {**(delta if new_delta is None else new_delta), "content": text}
        if thought:
            base = delta if new_delta is None else new_delta
            new_delta = {**base, REASONING_KEY: (base.get(REASONING_KEY) or "") + thought}
        # a cut output (``length``) keeps its finish_reason (an abandoned call ends the stream: see push)
        recovered = finish is not None and finish != "length" and state.recovered
        if new_delta is None and not recovered:
            return choice
        new = {**choice, "delta": new_delta if new_delta is not None else delta}
        if recovered:
            new["finish_reason"] = "tool_calls"
        return None if _says_nothing(new) else new

    def _scrub(self, state: _Choice, content: str) -> tuple | None:
        """Feed a content delta to the choice's scrubber: None when it comes back as it went, with no
        reasoning moved out and no call completed or streamed; else (the text to show, the reasoning,
        the ``tool_calls`` groups to send, one chunk each)."""
        scrubber = state.scrubber
        n = len(scrubber.calls)
        text = scrubber.feed(content)
        state.midline = False  # fed off the fast path: its line state is not followed here
        thought = scrubber.take_reasoning()
        if self._events:
            events = scrubber.take_events()
            calls = self._stream(state, n, events) if events or len(scrubber.calls) > n else []
        elif len(scrubber.calls) > n:
            calls = self._whole(state, scrubber.calls[n:])
        else:
            calls = []
        unchanged = text == content
        if not self._guided:
            if not state.active and (calls or not unchanged):
                self._mark(state)  # it holds text, removed some, or streams a call
        elif calls or thought:
            self._mark(state)
        elif state.active or not unchanged:  # (see _Choice.lag)
            if not state.sticky:
                state.lag += len(content) - len(text)
                if unchanged and state.lag == 0 and scrubber.guided_quiet:
                    state.active = False
                    self.active -= 1
                    return None
            self._mark(state, False)
        if not calls and unchanged and not thought:
            return None
        return text, thought, calls

    def _mark(self, state: _Choice, sticky: bool = True) -> None:
        """Count the choice active; ``sticky``: for good (it removed text, saw a call or reasoning)."""
        if sticky:
            state.sticky = True
        if not state.active:
            state.active = True
            self.active += 1

    def _structured(self, state: _Choice, structured: list) -> list:
        """Count the structured calls; shift their indexes past calls recovered before them."""
        upstream = state.upstream
        shifted = None
        for i, call in enumerate(structured):
            index = call["index"]
            if index not in upstream:
                upstream[index] = index + state.recovered
                state.next_index = max(state.next_index, upstream[index] + 1)
            if upstream[index] != index:
                if shifted is None:
                    shifted = list(structured)
                shifted[i] = {**call, "index": upstream[index]}
        return structured if shifted is None else shifted

    def _repair(self, state: _Choice, entries: list) -> list:
        """Structured entries (indexes already shifted) with names repaired and held calls absorbed
        or released (see the class doc); the very same list when nothing changes."""
        names = self._names
        if names is None:
            names = self._names = NameRepair(self.options)
        held = state.held
        out: list = []
        changed = False
        for entry in entries:
            index = entry["index"]
            if held:
                if index in held:  # a later delta of a held call
                    held[index].absorb(entry)
                    changed = True
                    continue
                for other in sorted(held):  # another call index: the held calls have ended
                    out.append(self._release(held.pop(other)))
                changed = True
            if marked(entry):
                found = names.name(entry["function"]["name"])
                if found is not None:
                    changed = True
                    if found[1]:  # arguments in the name: hold the call until it ends
                        if held is None:
                            held = state.held = {}
                        held[index] = _Held(entry)
                        continue
                    entry = {**entry, "function": {**entry["function"], "name": found[0]}}
            out.append(entry)
        return out if changed else entries

    def _release(self, held: _Held) -> dict:
        whole = held.whole()
        assert self._names is not None  # built before any call was held
        repaired = self._names.entry(whole)
        return whole if repaired is None else repaired

    def _release_all(self, state: _Choice) -> list:
        held, state.held = state.held, None
        assert held is not None  # called only for a choice that holds calls
        return [self._release(held[index]) for index in sorted(held)]

    def _whole(self, state: _Choice, calls: list) -> list:
        """The ``tool_calls`` groups (none, or one of every entry) for newly completed calls the gate
        lets through, each sent whole."""
        if not should_recover(self.native, self.has_tools, len(state.upstream)):
            return []
        entries = []
        for call in calls:
            entries.append({"index": state.next_index, **call.to_openai()})
            state.next_index += 1
        count(self.tally, calls, 0)
        state.recovered += len(entries)
        self.recovered += len(entries)
        return [entries]

    def _stream(self, state: _Choice, n: int, events: list) -> list:
        """``stream_arguments``: the ``tool_calls`` groups for ``events``, the call events just taken from the
        choice's scrubber, and its calls from ``n`` on (those before were sent): a streamed call's start, its
        pieces, and the calls its events do not cover, sent whole in their place in the stream."""
        calls = state.scrubber.calls
        groups: list = []
        taken = n  # calls before it are sent (whole, or streamed)
        for event in events:
            kind, index = event[0], event[1]
            if kind == "arguments":
                wire = state.streaming
                if wire is not None:
                    last = groups[-1][0] if groups else None
                    if last is not None and last["index"] == wire and "id" not in last:
                        last["function"]["arguments"] += event[2]
                    else:
                        groups.append([{"index": wire, "function": {"arguments": event[2]}}])
            elif kind == "started":
                if index > taken:
                    groups += self._whole(state, calls[taken:index])
                    taken = index
                if should_recover(self.native, self.has_tools, len(state.upstream)):
                    wire = state.streaming = state.next_index
                    state.next_index += 1
                    state.recovered += 1
                    function = {"name": event[3], "arguments": ""}
                    groups.append([{"index": wire, "id": event[2], "type": "function", "function": function}])
            elif state.streaming is not None:  # ended (calls[index] is the call sent), or abandoned
                if kind == "ended":
                    self.recovered += 1
                    count(self.tally, calls[index : index + 1], 0)
                    taken = index + 1
                else:
                    self.abandoned += 1
                    self.failed = True
                state.streaming = None
        if len(calls) > taken:
            groups += self._whole(state, calls[taken:])
        return groups

    def _flush(self, state: _Choice, truncated: bool = False) -> tuple:
        """(held text, ``tool_calls`` groups, reasoning) at the end of a choice (``truncated``: it finished
        with ``length``)."""
        scrubber = state.scrubber
        n = len(scrubber.calls)
        tail = scrubber.flush(truncated)
        count(self.tally, [], scrubber.malformed)
        if self._events:
            calls = self._stream(state, n, scrubber.take_events())
        else:
            calls = self._whole(state, scrubber.calls[n:]) if len(scrubber.calls) > n else []
        return tail, calls, scrubber.take_reasoning()

    @staticmethod
    def _synthetic(template: dict, index: int, delta: dict) -> dict:
        """A chunk like ``template`` (id, model …) with one choice carrying ``delta``."""
        chunk = template.copy()
        del chunk["choices"]  # (every template has them) set again below: the same key order
        if chunk.get("usage") is not None:
            chunk["usage"] = None
        chunk["choices"] = [{"index": index, "delta": delta, "logprobs": None, "finish_reason": None}]
        return chunk


def _said(text: str, thought: str) -> dict:
    """A delta with the reasoning, then the content, that are not empty."""
    delta = {REASONING_KEY: thought} if thought else {}
    if text:
        delta["content"] = text
    return delta


def _says_nothing(choice: dict) -> bool:
    """No finish_reason, logprobs, delta field or other field with something in it."""
    for key, value in choice.items():
        if key == "delta":
            for v in value.values():
                if not (v is None or v == "" or v == []):
                    return False
        elif key != "index" and value is not None:
            return False
    return True


def _check_chunk(chunk) -> list | None:
    """The chunk's choices, after checking the shape of everything the rules read."""
    if not isinstance(chunk, dict):
        raise TypeError(f"a chunk must be a dict, not {type(chunk).__name__}")
    choices = chunk.get("choices")
    if choices is None:
        return None
    if not isinstance(choices, list):
        raise TypeError(f"chunk['choices'] must be a list, not {type(choices).__name__}")
    for choice in choices:  # (its position is found again only for an error's message)
        if not isinstance(choice, dict):
            raise TypeError(f"chunk['choices'][{_at(choices, choice)}] must be a dict, not {type(choice).__name__}")
        index = choice.get("index")
        if type(index) is not int or index < 0:
            _check_index(index, f"chunk['choices'][{_at(choices, choice)}]['index']")
        delta = choice.get("delta")
        if delta is None:
            continue
        if not isinstance(delta, dict):
            where = f"chunk['choices'][{_at(choices, choice)}]['delta']"
            raise TypeError(f"{where} must be a dict, not {type(delta).__name__}")
        calls = delta.get("tool_calls")
        if calls is None:
            continue
        if not isinstance(calls, list):
            where = f"chunk['choices'][{_at(choices, choice)}]['delta']['tool_calls']"
            raise TypeError(f"{where} must be a list, not {type(calls).__name__}")
        for j, call in enumerate(calls):
            index = call.get("index") if isinstance(call, dict) else None
            if type(index) is not int or index < 0:  # (its place is written out only for an error)
                where = f"chunk['choices'][{_at(choices, choice)}]['delta']['tool_calls'][{j}]"
                if not isinstance(call, dict):
                    raise TypeError(f"{where} must be a dict, not {type(call).__name__}")
                _check_index(index, f"{where}['index']")
    return choices


def _at(items: list, item: object) -> int:
    """The position of ``item`` (that very object) in ``items``."""
    return next(k for k, other in enumerate(items) if other is item)


def _check_index(index, where: str) -> None:
    """Raise unless ``index`` is an int >= 0 (bool excluded)."""
    if not isinstance(index, int) or isinstance(index, bool):
        raise TypeError(f"{where} must be an int, not {type(index).__name__}")
    if index < 0:
        raise ValueError(f"{where} must be >= 0, not {index}")


def recover_stream(chunks: Iterable[dict], *, native: bool, has_tools: bool, **options) -> Iterator[dict]:
    """Yield the chunks of ``chunks`` with text tool calls recovered (see ``ChunkRecovery``).

    Arguments are checked at the call; chunks as they come. Closing the returned iterator
    closes ``chunks`` when it has a ``close()``.
    """
    machine = ChunkRecovery(native=native, has_tools=has_tools, **options)
    it = drive(chunks, "dicts", machine.push, machine.close)
    return it if has_tools else iter(chunks)  # no tools: every chunk passes untouched


def arecover_stream(chunks: AsyncIterable[dict], *, native: bool, has_tools: bool, **options) -> AsyncIterator[dict]:
    """``recover_stream`` over an async iterable; closing the result ``aclose()``-s ``chunks``."""
    machine = ChunkRecovery(native=native, has_tools=has_tools, **options)
    it = adrive(chunks, "dicts", machine.push, machine.close)
    return it if has_tools else aiter(chunks)
