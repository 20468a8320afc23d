"""Recover text tool calls in a raw server-sent-events byte stream of ``chat.completion.chunk`` s.

``SSERecovery`` takes the upstream bytes in any splits and returns the bytes to send
downstream; ``recover_sse`` / ``arecover_sse`` wrap (async) iterables of byte chunks.
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import Protocol

from ._drive import adrive, drive
from ._wire import dumps_compact, loads
from .stream import ChunkRecovery

__all__ = ["MAX_EVENT", "SSERecovery", "arecover_sse", "recover_sse"]

#: Default cap, in bytes, on one event held while it is incomplete (``max_event``).
MAX_EVENT = 1 << 20

# The end of an event: a line ending (LF, CR or CRLF) followed by an empty line; "\r\n" is never two.
_EVENT_END = re.compile(rb"\r\n(?:\n|\r\n?)|\r\r\n?|\n(?:\n|\r\n?)")
_LINE = re.compile(rb"([^\r\n]*)(\r\n|\r|\n)")
_BOM = b"\xef\xbb\xbf"
_DONE = b"[DONE]"
_CONTENT = b'"content":'
_CHOICE_KEYS = frozenset({"index", "delta", "finish_reason", "logprobs"})
#: Events a stream decodes at most, though screened untouched, to find a plain content event's shape.
_TRIES = 8


def _stops(starts: str) -> tuple:
    """What a plain text between a remembered prefix and suffix may not hold: a quote, a backslash, a
    control character (a line ending among them: JSON writes none raw, so an event with one does not
    decode, and its text must not be fed), or a character that can begin markup (as bytes)."""
    return tuple(c.encode() for c in '"\\' + "".join(map(chr, range(0x20))) + starts)


def _inside(stops: tuple):
    """``search(data, start, end)``: finds the first of ``stops`` in ``data[start:end]``."""
    single = b"".join(stop for stop in stops if len(stop) == 1)
    multi = [re.escape(stop) for stop in stops if len(stop) > 1]
    return re.compile(b"|".join([b"[" + re.escape(single) + b"]", *multi])).search


class SSEFraming:
    """The framing of a raw server-sent-events byte stream fed in any splits, which a recovery builds on.

    Events follow the SSE spec: they end at an empty line, lines end with LF, CR or CRLF (``"\\r\\n"`` is one
    ending, even split across reads); a UTF-8 BOM first in the stream and empty lines before an event go out
    as they came. ``_feed`` returns the bytes to send now: each complete event as ``_event`` says (those a
    subclass passes over in bulk, ``_ahead``, as they came). At most ``max_event`` bytes of an incomplete
    event are held; an event over the cap is sent on verbatim as it arrives, unread. ``close()`` sends what
    ``_flush`` gives, then any incomplete event verbatim.
    """

    #: A rewritten event's bytes end with its own last line ending: an LF that completes a CR last in the
    #: input then goes out too (else it goes with the event).
    _keeps_end = True

    def __init__(self, max_event: int) -> None:
        """Nothing held; TypeError or ValueError for a ``max_event`` that is not an int >= 1."""
        if not isinstance(max_event, int) or isinstance(max_event, bool):
            raise TypeError(f"max_event must be an int, not {type(max_event).__name__}")
        if max_event < 1:
            raise ValueError(f"max_event must be >= 1, not {max_event}")
        self.max_event = max_event
        self._buf = bytearray()  # the incomplete event (or a BOM's first bytes)
        self._scan = 0  # offset in _buf before which no event end starts
        self._started = False  # a possible BOM has been dealt with
        self._lf: bytes | None = None  # the input ended with an event's CR: what to send if an LF completes it
        self._over: bytes | None = None  # passing an oversized event through: its last bytes
        self._newline = b"\n"  # line ending of written events: that of the last event read
        self._closed = False

    @property
    def incomplete(self) -> bool:
        """True while the bytes fed so far end inside an event (held, or an oversized one being passed
        through): a stream that ends now ends mid-event, which is a broken stream, not a clean end."""
        return bool(self._buf) or self._over is not None

    def close(self) -> bytes:
        """End the stream: what is still held (``_flush``), then any incomplete event verbatim."""
        if self._closed:
            return b""
        self._closed = True
        out = self._flush()
        if not self._stopped():  # (after the error event nothing goes out, an incomplete event neither)
            out.append(bytes(self._buf))
        self._buf.clear()
        return b"".join(out)

    def _flush(self) -> list:
        """The bytes that end the stream, before any incomplete event (``close``)."""
        raise NotImplementedError

    def _stopped(self) -> bool:
        """Whether the stream ended early with an error event (a streamed call abandoned): what follows is dropped."""
        return False

    def _cap(self) -> int:
        """The most bytes of one event read (held while incomplete); a longer one goes on unread: ``max_event``."""
        return self.max_event

    def _event(self, buf: bytearray, pos: int, end: int, single: bool) -> list | None:
        """The complete event ``buf[pos:end]`` (its final empty line included): None if it goes out as it
        came, else the bytes that replace it (maybe none). ``single``: it is one line, then LF LF."""
        raise NotImplementedError

    @staticmethod
    def _read(raw: bytes) -> tuple[list, bytes | None]:
        """``(lines, data)`` of the complete event ``raw``: its ``(content, line ending)`` pairs, and the
        values of its ``data`` fields joined by LF (None when it has none)."""
        lines = _LINE.findall(raw)
        data = []
        for content, _ in lines:
            if content[:5] == b"data:" or content == b"data":
                value = content[5:]
                data.append(value[1:] if value[:1] == b" " else value)
        return lines, b"\n".join(data) if data else None

    def _feed(self, data: bytes) -> bytes:
        if self._stopped():  # the stream ended with an error event: nothing more goes out (but the LF that
            # completes the CR LF ending the error event itself)
            end = self._lf if self._lf is not None and data and data[0] == 0x0A else b""
            if data:
                self._lf = None
            self._buf.clear()
            self._over = None
            return end
        out: list = []
        if self._lf is not None and data:
            if data[0] == 0x0A:
                out.append(self._lf)
                data = data[1:]
            self._lf = None
        buf = self._buf
        if self._over is not None:
            data = self._pass_over(data, out)
        buf += data
        if not self._started:
            if len(buf) < 3 and _BOM.startswith(buf):
                return b""
            self._started = True
            if buf.startswith(_BOM):
                out.append(_BOM)
                del buf[:3]
        self._events(out)
        if self._stopped():  # an event here ended the stream with an error event: the rest is dropped
            buf.clear()
            return b"".join(out)
        if _size(buf, len(buf)) > self._cap():  # the event can only be oversized: pass it through
            self._over = bytes(buf[-3:])
            out.append(bytes(buf))
            buf.clear()
            self._scan = 0
        return b"".join(out)

    def _pass_over(self, data, out: list):
        """Send on the oversized event's bytes; return what follows its end (or nothing)."""
        assert self._over is not None  # passing an oversized event through
        joined = self._over + data
        m = _EVENT_END.search(joined)
        if m is None:
            out.append(data)
            self._over = joined[-3:]
            return b""
        end = m.end() - len(self._over)
        out.append(data[:end])
        self._over = None
        if end == len(data) and data[-1] == 0x0D:
            self._lf = b"\n"
        return data[end:]

    def _ahead(self, buf: bytearray, n: int, cr: bool) -> int:
        """Where ``_events`` starts in ``buf[:n]``, which holds a line ending after ``_scan`` (a CR if
        ``cr``): the complete events before it go out as they came, unread (here none)."""
        return 0

    def _events(self, out: list) -> None:
        """Handle every complete event in the buffer, leaving the incomplete one."""
        buf = self._buf
        n = len(buf)
        scan = self._scan  # no event ends before it: each byte is searched once
        cr = buf.find(b"\r", scan) >= 0  # without CR an event ends at the first LF followed by an LF
        find = buf.find
        pos = self._ahead(buf, n, cr) if cr or find(b"\n", scan) >= 0 else 0
        verbatim = 0  # buf[verbatim:pos] goes out as it came: sent in one piece when something else must go
        new: list | None = None  # what replaced the last event (None: it went out as it came)
        while pos < n:
            first = buf[pos]
            if first == 0x0A or first == 0x0D:  # an empty line opening an event: it dispatches nothing
                pos += 1
                if first == 0x0D and pos < n and buf[pos] == 0x0A:
                    pos += 1
                new = None
                continue
            start = pos if pos > scan else scan
            if cr:
                m = _EVENT_END.search(buf, start)
                if m is None:
                    break
                last, end = m.span()
                single = False
            else:  # (memchr: a search for LF LF is slower)
                last = find(b"\n", start)
                single = True  # no line ending before its end: the event is one line
                while 0 <= last < n - 1 and buf[last + 1] != 0x0A:
                    single = False
                    last = find(b"\n", last + 2)
                if last < 0 or last == n - 1:
                    break
                end = last + 2
                if single and start > pos:  # its first bytes were searched before, for an LF LF only
                    single = find(b"\n", pos, start) < 0 and find(b"\r", pos, start) < 0
            # (an oversized event goes out as it came, as in any other split)
            if last - pos > self._cap():  # noqa: SIM108 (the two cases read apart)
                new = [] if self._stopped() else None
            else:
                new = self._event(buf, pos, end, single)
            if new is not None:
                if verbatim < pos:
                    out.append(bytes(buf[verbatim:pos]))
                out.extend(new)
                verbatim = end
            pos = end
        if verbatim < pos:
            out.append(bytes(buf[verbatim:pos]))
        if pos == n and n and buf[n - 1] == 0x0D:  # an LF first in the next input completes this CR: sent
            if self._stopped():  # an error event ended the stream: the LF only if that event ends with this CR
                self._lf = b"\n" if out and out[-1].endswith(b"\r") else b""
            else:  # as the event was, or dropped
                self._lf = b"\n" if new is None or (new and self._keeps_end) else b""
        del buf[:pos]
        self._scan = max(0, len(buf) - 3)


class SSERecovery(SSEFraming):
    """Feed raw SSE bytes in any splits; get back the bytes to send downstream.

    Events follow the SSE spec (LF, CRLF or CR line endings, a UTF-8 BOM, multi-line
    ``data:``, comments, ``event:``/``id:``/``retry:`` fields). An event whose data is a
    ``chat.completion.chunk`` goes through a ``ChunkRecovery``; every event it leaves
    unchanged — and every comment, non-JSON, non-chunk or data-less event — goes out
    byte-for-byte. A rewritten event becomes one ``data:`` line per resulting chunk
    (compact JSON, the event's own line ending); the original's other lines stay on the last
    one, its ``event:`` lines on each. ``data: [DONE]`` first flushes what choices still hold.

    Fast paths, while no choice is ``active`` (see ``ChunkRecovery``): an event is sent on
    undecoded when nothing in it can begin markup or is a structured call — for each first
    character of the scrubbed literals, neither the character (one that JSON uses anyway,
    like ``[``, only when followed by a possible second character, a quote or a backslash)
    nor its JSON escape (``\\u003c``), and no ``tool_calls`` key. Cheaper still: once a plain
    content event (one choice, only ``content``) went through unchanged, the bytes around
    its text are remembered, and an event with the same bytes around a text holding no
    quote, backslash, line ending or first character is sent on after two comparisons.
    Once a choice holds text, opened a block, recovered a call or saw a structured one,
    every event is decoded until that choice finishes: this, not the absence of an opener
    in one event, is what keeps a ``<`` and a ``tool_call`` in consecutive events right.

    At most ``max_event`` bytes of an incomplete event are held. An event over the cap is
    sent on verbatim as it arrives (not decoded, so its text is not scrubbed). ``feed``
    returns ``b""`` while it holds; ``close()`` flushes held text and returns any
    incomplete event verbatim. With ``has_tools=False`` input comes straight back out.

    With ``stream_arguments=True`` a JSON-bodied call goes out in pieces as its body arrives (see
    ``ChunkRecovery``); its choice is active from the opener on, so every event is decoded until it
    finishes.
    """

    def __init__(self, *, native: bool, has_tools: bool, max_event: int = MAX_EVENT, **options) -> None:
        """``options`` are ``StreamScrubber``'s, for every choice (see ``ChunkRecovery``)."""
        super().__init__(max_event)
        self.chunks = ChunkRecovery(native=native, has_tools=has_tools, **options)
        self._untouched = self.chunks.screen.untouched
        self._fences = self.chunks.screen.fences  # skipped content must still be fed (see _follow)
        self._guided = self.chunks._guided  # its choice's guided stage must be quiet too (ChunkRecovery.quiet)
        self._stops = _stops(self.chunks.starts)
        self._inside = _inside(self._stops)
        self._around: tuple | None = None  # a plain content event's bytes before and after its text
        self._around_index = 0  # the choice index of that event
        # that choice's scrubber is known to be mid-line: the texts of further events sent on undecoded
        # (never a line ending: they hold no backslash) cannot move its line state, so need no feeding
        self._midline = False
        self._tries = _TRIES  # events still to decode, though screened untouched, to find such an event
        self._clear = False  # open, with tools, started, and nothing held: the fast path may apply

    @property
    def recovered(self) -> int:
        """Tool calls recovered and emitted so far."""
        return self.chunks.recovered

    @property
    def tally(self) -> Counter:
        """What recovery did: calls by dialect, blocks removed without a call (``ChunkRecovery.tally``)."""
        return self.chunks.tally

    @property
    def abandoned(self) -> int:
        """Calls streamed in pieces (``stream_arguments=True``) and then abandoned (see ``ChunkRecovery``)."""
        return self.chunks.abandoned

    @property
    def failed(self) -> bool:
        """A streamed call was abandoned: the stream ended with an error event (see ``ChunkRecovery``)."""
        return self.chunks.failed

    def _stopped(self) -> bool:
        return self.chunks.failed

    def feed(self, data) -> bytes:
        """Take the next upstream bytes (bytes-like); return the bytes to send now."""
        if type(data) is not bytes:
            if not isinstance(data, (bytearray, memoryview)):
                raise TypeError(f"feed() expects bytes, bytearray or memoryview, not {type(data).__name__}")
            data = bytes(data)
        if self._clear and not self.chunks.active:
            around = self._around
            if around is not None:
                before, after = around  # one event like the remembered one, around a text with nothing to act on
                end = len(data) - len(after)
                if (
                    end >= len(before)
                    and data.startswith(before)
                    and data.endswith(after)
                    and (self._inside(data, len(before), end) is None)
                    and len(data) <= self.max_event
                ):
                    if self._fences and not self._midline:
                        self._follow(data[len(before) : end])
                    return data
            elif self._tries:
                return self._feed_and_clear(data)
            if data.endswith(b"\n\n") and self._untouched(data):  # whole events, nothing to act on
                return data
        if self._closed:
            raise ValueError("feed() after close(): the stream has ended")
        if not self.chunks.has_tools:
            return data
        return self._feed_and_clear(data)

    def _feed_and_clear(self, data: bytes) -> bytes:
        """``_feed``, then note whether the next input starts at an event with nothing held."""
        out = self._feed(data)
        self._clear = (
            self._started
            and not self._buf
            and self._lf is None
            and self._over is None
            and not self.chunks.failed
            # (a text sent on undecoded holds no line break: it leaves its choice's stage as quiet as it was)
            and (not self._guided or self.chunks.quiet(self._around_index))
        )
        return out

    def close(self) -> bytes:
        """End the stream: flushed text and calls, then any incomplete event verbatim."""
        self._clear = False
        return super().close()

    def _flush(self) -> list:
        return self._synthetic(self.chunks.close(), [])

    # -- events ---------------------------------------------------------------------------------

    def _ahead(self, buf: bytearray, n: int, cr: bool) -> int:
        """While no choice is active, pass over in one piece the complete events it cannot act on."""
        if self.chunks.active or self.chunks.failed:
            return 0
        start = self._scan  # no event ends before it: each byte is searched once
        last = buf.rfind(b"\n\n", start)
        if cr:  # (memchr first: the two searches below are slower)
            last = max(last, buf.rfind(b"\n\r", start), buf.rfind(b"\r\r", start))
        if last < 0:
            return 0
        end = last + 2
        if end < n and buf[end - 1] == 0x0D and buf[end] == 0x0A:
            end += 1
        pos = self._known(buf, end)
        if pos < end and not self._learning and self._untouched(bytes(buf[pos:end])):
            pos = end
        return pos

    def _known(self, buf: bytearray, limit: int) -> int:
        """Where the events at the start of ``buf[:limit]`` that are shaped like the remembered one,
        around a text with nothing to act on, end (0: none)."""
        if self._around is None or (self._guided and not self.chunks.quiet(self._around_index)):
            return 0
        before, after = self._around
        startswith, find, inside = buf.startswith, buf.find, self._inside
        skip, tail = len(before), len(after)
        pos = 0
        texts = []
        while startswith(before, pos, limit):
            start = pos + skip
            end = find(b'"', start, limit)  # a plain text holds no quote: its end, if the suffix follows
            if (
                end < 0
                or not startswith(after, end, limit)
                or inside(buf, start, end) is not None
                or (end + tail - pos > self.max_event)
            ):
                break
            if self._fences and not self._midline:
                texts.append(buf[start:end])
            pos = end + tail
        if texts:
            self._follow(*texts)
        return pos

    def _follow(self, *texts) -> None:
        """Feed the texts of events sent on undecoded to their choice (code fences on: they move the
        line state). A text that is not UTF-8 would have made its event undecodable: it is skipped."""
        try:
            joined = b"".join(texts).decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            if len(texts) > 1:
                for text in texts:
                    self._follow(text)
            return
        with contextlib.suppress(ValueError):  # over MAX_CHOICES: the event is relayed unrecovered
            self.chunks.follow(self._around_index, joined)
            self._midline = self._midline or bool(joined.strip(" "))

    def _event(self, buf: bytearray, pos: int, end: int, single: bool) -> list | None:
        if self.chunks.failed:  # a streamed call was abandoned: the stream ended with its error event
            return []
        learning = self._around is None and self._tries > 0  # self._learning, inline (on every event)
        if not self.chunks.active and not learning and self._untouched(bytes(buf[pos:end])):
            return None
        payload: bytes | bytearray
        if single and buf.startswith(b"data:", pos):  # the usual shape, read here as _LINE would read it
            lines = None
            payload = buf[pos + 6 if buf[pos + 5] == 0x20 else pos + 5 : end - 2]  # (loads takes a bytearray)
            self._newline = b"\n"
        else:
            lines, joined = self._read(bytes(buf[pos:end]))
            self._newline = lines[0][1]
            if joined is None:
                return None
            payload = joined
        if payload == _DONE:
            self._midline = False
            flushed = self._synthetic(self.chunks.close(), lines or [])
            if self.chunks.failed:  # the close abandoned a streamed call: its error ends the stream
                return flushed
            return [*flushed, bytes(buf[pos:end])] if flushed else None
        if learning:
            self._tries -= 1
        try:
            chunk = loads(payload)
            self._midline = False  # a decoded event may hold a line ending
            chunks = self.chunks.push(chunk)
        except (ValueError, TypeError, RecursionError):  # not JSON, or not a chunk
            return None
        if len(chunks) == 1 and chunks[0] is chunk:
            if learning and not self.chunks.active and (lines is None or len(lines) == 2):
                self._remember(bytes(buf[pos:end]), chunk)
            return None
        if lines is None:
            lines = _LINE.findall(bytes(buf[pos:end]))
        newline = self._newline
        out = self._synthetic(chunks[:-1], lines)
        # The last chunk takes the event's own lines: the other fields, and data where data was.
        kept = []
        placed = False
        for content, ending in lines[:-1]:
            if content[:5] == b"data:" or content == b"data":
                if not placed and chunks:
                    kept.append(b"data: " + dumps_compact(chunks[-1]) + newline)
                placed = True
            else:
                kept.append(content + ending)
        if chunks or kept:
            out.extend(kept)
            out.append(lines[-1][1])  # the original empty line
        return out

    @property
    def _learning(self) -> bool:
        return self._around is None and self._tries > 0

    def _remember(self, raw: bytes, chunk: dict) -> None:
        """Keep the bytes around the text of ``raw``, one ``data:`` line of a plain content delta."""
        choices = chunk.get("choices")
        if not choices or len(choices) != 1:
            return
        choice = choices[0]
        delta = choice.get("delta")
        if (
            not isinstance(delta, dict)
            or delta.keys() != {"content"}
            or not isinstance(delta["content"], str)
            or choice.get("finish_reason") is not None
            or choice.get("logprobs") is not None
            or not choice.keys() <= _CHOICE_KEYS
            or not raw.endswith(b"\n")
        ):
            return
        text = delta["content"].encode("utf-8", "surrogatepass")
        i = raw.find(_CONTENT)
        if i < 0 or raw.find(_CONTENT, i + 1) >= 0:
            return
        start = i + len(_CONTENT)
        while raw[start : start + 1] == b" ":
            start += 1
        start += 1  # the opening quote
        end = start + len(text)
        if raw[start - 1 : start] == b'"' and raw[start:end] == text and raw[end : end + 1] == b'"':
            self._around = (raw[:start], raw[end:])
            self._around_index = choice["index"]

    def _synthetic(self, chunks: list, lines: list) -> list:
        """One event per chunk (its bytes), each with the ``event:`` lines of ``lines``."""
        out: list = []
        newline = self._newline
        event = [c + e for c, e in lines if c[:6] == b"event:" or c == b"event"]
        for chunk in chunks:
            out.extend(event)
            out.append(b"data: " + dumps_compact(chunk) + newline + newline)
        return out


def recover_sse(
    chunks: Iterable, *, native: bool, has_tools: bool, max_event: int = MAX_EVENT, **options
) -> Iterator[bytes]:
    """Yield the recovered bytes of an iterable of upstream byte chunks (empty results skipped).

    Closing the returned iterator closes ``chunks`` when it has a ``close()``.
    """
    return drive_sse(SSERecovery(native=native, has_tools=has_tools, max_event=max_event, **options), chunks)


def arecover_sse(
    chunks: AsyncIterable, *, native: bool, has_tools: bool, max_event: int = MAX_EVENT, **options
) -> AsyncIterator[bytes]:
    """``recover_sse`` over an async iterable; closing the result ``aclose()``-s ``chunks``."""
    return adrive_sse(SSERecovery(native=native, has_tools=has_tools, max_event=max_event, **options), chunks)


class _Recovery(Protocol):
    def feed(self, data) -> bytes: ...

    def close(self) -> bytes: ...


def drive_sse(recovery: _Recovery, chunks: Iterable) -> Iterator[bytes]:
    """The bytes ``recovery`` gives for an iterable of byte chunks (empty results skipped); closing the
    result closes ``chunks``."""
    return drive(chunks, "bytes", lambda data: _some(recovery.feed(data)), lambda: _some(recovery.close()))


def adrive_sse(recovery: _Recovery, chunks: AsyncIterable) -> AsyncIterator[bytes]:
    """``drive_sse`` over an async iterable."""
    return adrive(chunks, "bytes", lambda data: _some(recovery.feed(data)), lambda: _some(recovery.close()))


def _size(buf, end: int) -> int:
    """The length of ``buf[:end]`` without the line endings it ends with: an incomplete event's size
    as it will count once complete, whatever the split (its final line endings are not counted)."""
    while end and buf[end - 1] in b"\r\n":
        end -= 1
    return end


def _some(data: bytes) -> tuple:
    return (data,) if data else ()
