"""``textcalls proxy``: an OpenAI-compatible reverse proxy that recovers text tool calls.

``POST /v1/chat/completions`` whose request offers ``tools`` is recovered: streamed answers
through ``SSERecovery`` as they arrive, others through ``recover_response_bytes``, with the
request's tools given to the scrubbers (values typed by their schemas; a call of a tool the
request did not offer stays text). ``POST /v1/responses`` (OpenAI Responses API) and
``POST /v1/messages`` (Anthropic Messages API) likewise, through ``responses_api`` and
``messages_api``. Every other request, and every answer that is not a 200 in plain JSON or SSE,
is relayed as it is. Only origin-form request targets (``/path?query``) are
relayed; any other target is a 400 that never reaches the upstream. ``GET /metrics`` (Prometheus
text format, see ``metrics``) and ``GET /healthz`` are answered by the proxy itself, never relayed.
One log line per request, with its fields on the record for ``JsonFormatter``. Needs aiohttp
(``pip install 'textcalls[proxy]'``), imported only when a proxy is built.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import errno
import hmac
import io
import json
import logging
import math
import multiprocessing
import os
import signal
import socket
import sys
import time
from collections import Counter
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from . import _scan, messages_api, responses_api
from ._apis import FORMATS, ApiSpec, EventRecovery, chat_tools
from .chat_bytes import recover_response_bytes
from .metrics import CONTENT_TYPE, SLOTS, Metrics, path_label
from .openai import check_gate
from .options import Options
from .sse import MAX_EVENT, SSERecovery

if TYPE_CHECKING:
    import aiohttp

__all__ = [
    "BODY_TIMEOUT",
    "CHAT_PATH",
    "CONNECT_TIMEOUT",
    "HEAD_TIMEOUT",
    "HEALTH_PATH",
    "IDLE_TIMEOUT",
    "LOG_FORMATS",
    "LOG_INTERVAL",
    "LOOPS",
    "MAX_CLIENTS",
    "MAX_CONNECTIONS",
    "MAX_REQUEST",
    "MAX_RESPONSE",
    "MESSAGES_PATH",
    "METRICS_PATH",
    "METRICS_TOKEN_ENV",
    "READ_TIMEOUT",
    "RECOVERED_PATHS",
    "RESPONSES_PATH",
    "JsonFormatter",
    "check_upstream",
    "create_app",
    "run",
    "start",
]

log = logging.getLogger("textcalls.proxy")

CHAT_PATH = "/v1/chat/completions"
RESPONSES_PATH = "/v1/responses"
MESSAGES_PATH = "/v1/messages"
#: The paths whose POST answers are recovered.
RECOVERED_PATHS = (CHAT_PATH, RESPONSES_PATH, MESSAGES_PATH)
#: Default cap, in bytes, on a request body the proxy reads (the recovered paths): over it, 413. It bounds the
#: time one request's JSON holds the event loop (a body of many small objects reads at about 30 ms a MiB, and
#: the reading cannot be split: see ``_OFF_LOOP``).
MAX_REQUEST = 32 << 20
#: Cap, in bytes, on a non-streamed answer held to recover it; a larger one is relayed as it is.
MAX_RESPONSE = 64 << 20
#: Default seconds to open an upstream connection, and to wait for a free one when all are busy.
CONNECT_TIMEOUT = 10.0
#: Default seconds the upstream may stay silent: before its answer starts (a model may think a long
#: time before its first byte) and between any two reads of the answer.
READ_TIMEOUT = 600.0
#: Default seconds a client has to send its whole request body.
BODY_TIMEOUT = 60.0
#: Default cap on concurrent upstream connections.
MAX_CONNECTIONS = 100
#: Default seconds a client has to send a whole request head: from its connection's opening, and on a kept-alive
#: connection from the next head's first byte; past it the connection is closed, unanswered.
HEAD_TIMEOUT = 10.0
#: Default seconds a kept-alive client connection may stay idle, waiting for its next request.
IDLE_TIMEOUT = 60.0
#: Default cap on open client connections, per process; lowered to what the descriptor limit leaves (``start``).
MAX_CLIENTS = 1024
#: Seconds between two log lines about a run of like events: client connections refused or closed, failed accepts.
LOG_INTERVAL = 10.0
# Descriptors the default client cap leaves for other uses than client and upstream connections.
_SPARE_FDS = 32
# Failures of accept() that only say the process or system is short of descriptors or memory for now.
_SCARCE = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
# run(workers=N): a worker that served this many seconds before it died is replaced at once; one that died
# sooner, after a delay that doubles with each such death of its row, from _FIRST_DELAY up to _MAX_DELAY.
_STABLE = 10.0
_FIRST_DELAY = 0.5
_MAX_DELAY = 30.0
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
#: Default paths the proxy answers itself: its metrics (Prometheus text format) and its health.
METRICS_PATH = "/metrics"
HEALTH_PATH = "/healthz"
#: The environment variable the command reads ``--metrics-token`` from when the flag is not given.
METRICS_TOKEN_ENV = "TEXTCALLS_METRICS_TOKEN"
#: The formats of ``run``'s log lines: ``logging``'s usual text, or one JSON object a line (``JsonFormatter``).
LOG_FORMATS = ("text", "json")
_TEXT_FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"
#: The event loops ``run`` can serve on: ``asyncio`` (the standard library's, the default), ``uvloop`` (``pip install
#: 'textcalls[uvloop]'``: an error without it), ``auto`` (uvloop where it is installed, else asyncio's).
LOOPS = ("auto", "asyncio", "uvloop")
# A request body over this many bytes is read (JSON) and its tools checked in a worker thread, not on the event
# loop, with Python-level hooks for objects and numbers: json's C reader holds the GIL for a whole document, and
# a hook's bytecode is where the loop thread can take it back. A run of strings alone gives no such point
# (about 11 ms a MiB): MAX_REQUEST bounds it.
_OFF_LOOP = 1 << 20
# A request offering more tools than this has its recovery Options (a Context over every tool) made in a
# worker thread too.
_MANY_TOOLS = 1000
#: Headers that describe one connection, never forwarded (RFC 9110 7.6.1), plus proxy-connection.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
# Not forwarded upstream either: aiohttp writes Host for the upstream; Expect was answered here.
_REQUEST_DROP = HOP_BY_HOP | {"host", "expect"}

# Headers aiohttp would add to the upstream request when the client did not send them.
_NO_AUTO_HEADERS = ("Accept", "Accept-Encoding", "Content-Type", "User-Agent")


def _aiohttp():
    try:
        import aiohttp
        from aiohttp import web
    except ImportError:
        raise ImportError("the textcalls proxy needs aiohttp: pip install 'textcalls[proxy]'") from None
    return aiohttp, web


def check_upstream(url) -> str:
    """The upstream base URL without a trailing slash; ValueError unless ``http(s)://host[:port][/path]``."""
    if not isinstance(url, str):
        raise TypeError(f"upstream must be a str, not {type(url).__name__}")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as e:
        raise ValueError(f"upstream {url!r} is not a valid URL: {e}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ValueError(f"upstream must be an http(s) URL like http://127.0.0.1:8000, not {url!r}")
    return url.rstrip("/")


def _forwarded(headers, drop) -> list:
    """The (name, value) pairs of ``headers`` except ``drop`` and those ``Connection`` names."""
    listed = {token.strip().lower() for value in headers.getall("Connection", ()) for token in value.split(",")}
    return [(k, v) for k, v in headers.items() if k.lower() not in drop and k.lower() not in listed]


def _origin_form(target: str) -> bool:
    """Whether a request target is a path (origin form, ``/path?query``): one ``/`` first, not two.

    Absolute form (``http://host/…``, ``munity://…``), authority form (``host:443``), ``*`` and
    ``//host/…`` are not: appended to the upstream URL, they could change its host or port.
    """
    return target[:1] == "/" and target[1:2] != "/"


def _seconds(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, not {type(value).__name__}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a number of seconds > 0, not {value!r}")
    return float(value)


def _count(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, not {value}")
    return value


def _flag(name: str, value) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, not {type(value).__name__}")
    return value


def own_path(name: str, value) -> str | None:
    """A path the proxy answers itself (``/metrics``): ``value``, or None for none (the path is relayed)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str or None, not {type(value).__name__}")
    if not (_origin_form(value) and value.isprintable()) or any(c in value for c in " ?#"):
        raise ValueError(f"{name} must be a path like /metrics (one leading '/', no query), not {value!r}")
    if value in RECOVERED_PATHS:
        raise ValueError(f"{name} cannot be {value}, the path the proxy recovers")
    return value


def check_token(name: str, value) -> str | None:
    """A bearer token for the metrics (``value``), or None for none: one or more visible ASCII characters. A bad
    one is refused without being repeated (it may be a secret all but a character)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str or None, not {type(value).__name__}")
    if not value or not all("!" <= c <= "~" for c in value):
        raise ValueError(f"{name} must be one or more visible ASCII characters: no space, no control character")
    return value


def _log_format(value) -> str:
    if not isinstance(value, str):
        raise TypeError(f"log_format must be a str, not {type(value).__name__}")
    if value not in LOG_FORMATS:
        raise ValueError(f"log_format must be 'text' or 'json', not {value!r}")
    return value


class JsonFormatter(logging.Formatter):
    """Formats a log record as one line of JSON: ``time`` (UTC, ISO 8601), ``level``, ``logger``, ``pid``,
    ``message``, the traceback as ``exception`` if any; and for the proxy's line about a request, its
    fields: ``method``, ``path``, ``status``, ``upstream_status``, ``outcome``, ``detail``, ``calls``,
    ``bytes``, ``duration_ms``, ``first_byte_ms`` (docs/proxy.md)."""

    def format(self, record: logging.LogRecord) -> str:
        when = datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds")
        line = {
            "time": when.replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "pid": record.process,
            "message": record.getMessage(),
        }
        line.update(getattr(record, "textcalls", ()))
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line)


def _loop_name(value) -> str:
    if not isinstance(value, str):
        raise TypeError(f"loop must be a str, not {type(value).__name__}")
    if value not in LOOPS:
        raise ValueError(f"loop must be 'auto', 'asyncio' or 'uvloop', not {value!r}")
    return value


def _loop_factory(loop: str):
    """What makes the event loop ``loop`` names (``LOOPS``): None for asyncio's own, else uvloop's ``new_event_loop``;
    ImportError for ``uvloop`` without uvloop, which ``auto`` then does without."""
    if loop == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        if loop == "auto":
            return None
        raise ImportError("--loop uvloop needs uvloop: pip install 'textcalls[uvloop]' (not on Windows)") from None
    return uvloop.new_event_loop


def _run_on(factory, coro) -> None:
    """``asyncio.run(coro)`` on a loop made by ``factory`` (None: asyncio's own)."""
    if factory is None:
        asyncio.run(coro)
    elif sys.version_info >= (3, 11):
        with asyncio.Runner(loop_factory=factory) as runner:
            runner.run(coro)
    else:  # 3.10: no loop factory to give; asyncio.run makes its loop by the policy

        class Policy(asyncio.DefaultEventLoopPolicy):
            def new_event_loop(self):
                return factory()

        policy = asyncio.get_event_loop_policy()
        asyncio.set_event_loop_policy(Policy())
        try:
            asyncio.run(coro)
        finally:
            asyncio.set_event_loop_policy(policy)


def _running_loop_name() -> str:
    """``uvloop`` or ``asyncio``: the event loop this coroutine runs on (for the banner)."""
    return "uvloop" if type(asyncio.get_running_loop()).__module__.startswith("uvloop") else "asyncio"


def _log_to_stderr(log_format: str) -> None:
    """Log INFO and above to stderr in ``log_format``, unless logging is configured already."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(_TEXT_FORMAT))
    logging.basicConfig(level=logging.INFO, handlers=[handler])


def _object(pairs: list) -> dict:
    """A JSON object, from its pairs as ``json`` reads them (a Python function on purpose: see ``_OFF_LOOP``)."""
    return dict(pairs)


def _int(text: str) -> int:
    """A JSON integer, as ``json`` reads it (a Python function on purpose: see ``_OFF_LOOP``)."""
    return int(text)


def _float(text: str) -> float:
    """A JSON number with a fraction or an exponent, as ``json`` reads it (see ``_int``)."""
    return float(text)


def _offered_tools(body: bytes, convert=None, yielding: bool = False) -> tuple:
    """What a request offers to recover with, as ``(tools, why)``; ``convert`` reads its API's ``tools``
    (``chat_tools`` by default); ``yielding``: read in a worker thread (see ``_OFF_LOOP``).

    ``(functions, None)`` for a non-empty ``tools`` list whose every entry is well-formed: its function
    tools, chat-shaped, the other kinds left out (a call naming one stays text). ``(None, None)`` when
    the request offers no tools (or is not a JSON object). ``(None, why)`` when ``tools`` is malformed:
    the request is then relayed unrecovered, never recovered without a filter.
    """
    try:
        if yielding:
            request = json.loads(body, object_pairs_hook=_object, parse_int=_int, parse_float=_float)
        else:
            request = json.loads(body)
    except (ValueError, RecursionError):
        return None, None
    tools = request.get("tools") if isinstance(request, dict) else None
    if tools is None or tools == []:
        return None, None
    return (convert or chat_tools)(tools)


def _ends_event(tail: bytes) -> bool:
    """Whether an event stream whose last bytes are ``tail`` ends with an empty line (the end of an
    event): a line ending (CRLF, LF or CR) right after another one."""
    if tail.endswith(b"\r\n"):
        rest = tail[:-2]
    elif tail.endswith((b"\n", b"\r")):
        rest = tail[:-1]
    else:
        return False
    return rest.endswith((b"\n", b"\r"))


def _call_count(body: bytes) -> int:
    """The ``tool_calls`` entries of a ``chat.completion`` body's messages (0 for another shape)."""
    try:
        response = json.loads(body)
    except (ValueError, RecursionError):
        return 0
    choices = response.get("choices") if isinstance(response, dict) else None
    if not isinstance(choices, list):
        return 0
    messages = [c.get("message") for c in choices if isinstance(c, dict)]
    return sum(len(m.get("tool_calls") or ()) for m in messages if isinstance(m, dict))


def _items_count(key: str, kinds: frozenset):
    """A counter of the entries of a body's list ``key`` whose ``type`` is one of ``kinds``."""

    def count(body: bytes) -> int:
        try:
            answer = json.loads(body)
        except (ValueError, RecursionError):
            return 0
        entries = answer.get(key) if isinstance(answer, dict) else None
        if not isinstance(entries, list):
            return 0
        return sum(1 for e in entries if isinstance(e, dict) and e.get("type") in kinds)

    return count


class _Api:
    """How the proxy recovers one path: reading its request's tools (chat-shaped ones out), the options
    for them, its SSE recovery (each streams call arguments with ``stream_arguments``), its body recovery,
    the count of calls in a body, and whether its recoveries count calls by dialect (``tally``)."""

    __slots__ = ("tools", "formats", "sse", "body", "count", "tallies")

    def __init__(self, tools, formats, sse, body, count, tallies=False) -> None:
        self.tools, self.formats, self.sse, self.body, self.count = tools, formats, sse, body, count
        self.tallies = tallies  # its recoveries count calls by dialect (chat completions)

    def options(self, tools: list, stream_arguments: bool = False) -> Options:
        return Options(tools=tools, formats=self.formats, stream_arguments=stream_arguments)

    @classmethod
    def of(cls, spec: ApiSpec) -> _Api:
        """An API of ``_apis.ApiSpec``'s (Responses, Messages): what its module says of it."""
        return cls(spec.convert_tools, FORMATS, spec.sse, spec.recover_bytes, _items_count(spec.entries, spec.calls))


_APIS = {
    CHAT_PATH: _Api(chat_tools, None, SSERecovery, recover_response_bytes, _call_count, tallies=True),
    RESPONSES_PATH: _Api.of(responses_api.SPEC),
    MESSAGES_PATH: _Api.of(messages_api.SPEC),
}


class _Exchange:
    """How one request went, for its log line and the metrics."""

    __slots__ = (
        "started",
        "first",
        "status",
        "upstream_status",
        "outcome",
        "how",
        "body",
        "calls",
        "tally",
        "abandoned",
        "sent",
        "same",
    )

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.first: float | None = None  # when the first body byte was sent (written to the transport)
        self.status: int | None = None  # the status sent (once the answer started)
        self.upstream_status: int | None = None
        self.outcome = "error"  # one of metrics.OUTCOMES
        self.how = "failed"  # the text log line's account
        self.body = "json"  # what recovered calls came in: "json" or "sse"
        self.calls = 0  # calls recovered
        self.tally: Counter | None = None  # what recovery did, by dialect (chat completions: ChunkRecovery.tally)
        self.abandoned = 0  # calls streamed in pieces, then abandoned
        self.sent = 0  # body bytes of the upstream's answer sent on
        self.same = True  # those bytes are the upstream's as it sent them

    def wrote(self, data: bytes) -> None:
        if self.first is None:
            self.first = time.perf_counter()
        self.sent += len(data)


class _Echo:
    """Whether what a recovery has sent so far is a prefix of what the upstream sent (``same``), and
    all of it (``whole``)."""

    def __init__(self) -> None:
        self.same = True
        self._ahead = bytearray()  # the upstream's bytes not sent yet

    def check(self, data: bytes, out: bytes) -> None:
        """``data`` was fed and ``out`` came back."""
        if not self.same or (out is data and not self._ahead):
            return
        ahead = self._ahead
        ahead += data
        if ahead.startswith(out):
            del ahead[: len(out)]
        else:
            self.same = False
            ahead.clear()

    @property
    def whole(self) -> bool:
        return self.same and not self._ahead


class _BodyTimeout(Exception):
    """The client took longer than the body timeout to send its request body."""


class _Body:
    """A relayed request body, streamed upstream as the client sends it; iterating it raises
    ``_BodyTimeout`` (and sets ``timed_out``) once the whole body took over ``timeout`` seconds."""

    def __init__(self, content, timeout: float) -> None:
        self.content = content
        self.timeout = timeout
        self.timed_out = False

    async def __aiter__(self):
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        while True:
            try:
                data = await asyncio.wait_for(self.content.readany(), max(0.0, deadline - loop.time()))
            except asyncio.TimeoutError:
                self.timed_out = True
                raise _BodyTimeout from None
            if not data:
                return
            yield data


class _Runs:
    """Logs a run of like events without a line each: the first at once (``first`` with ``note``'s arguments), then
    every ``LOG_INTERVAL`` seconds how many more came (``more``: their count and the seconds), if any; ``close``
    tells those not told yet."""

    def __init__(self, first: str, more: str) -> None:
        self.first, self.more = first, more
        self.count = 0  # events not told yet
        self.since = 0.0  # when the run, or the last line about it, began
        self.timer: asyncio.TimerHandle | None = None

    def note(self, *args) -> None:
        if self.timer is None:
            log.warning(self.first, *args)
            loop = asyncio.get_running_loop()
            self.since = loop.time()
            self.timer = loop.call_later(LOG_INTERVAL, self._tell)
        else:
            self.count += 1

    def _tell(self) -> None:
        self.timer = None
        if self.count:  # the run goes on: one more line, then wait again
            self._told()
            self.timer = asyncio.get_running_loop().call_later(LOG_INTERVAL, self._tell)

    def _told(self) -> None:
        now = asyncio.get_running_loop().time()
        log.warning(self.more, self.count, now - self.since)
        self.count, self.since = 0, now

    def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.count:
            self._told()


class _Client(asyncio.Protocol):
    """A client connection: aiohttp's protocol for it (``inner``), made once ``_Clients`` has admitted it, with
    every event passed on; the data received while no request is in progress tells that a head has begun."""

    __slots__ = ("clients", "make", "inner", "transport", "timer", "busy")

    def __init__(self, clients: _Clients, make) -> None:
        self.clients = clients
        self.make = make  # makes aiohttp's protocol
        self.inner: asyncio.Protocol | None = None
        self.transport: asyncio.Transport | None = None
        self.timer: asyncio.TimerHandle | None = None  # the head timeout, while a head is awaited
        self.busy = 0  # requests of this connection in the app now

    def connection_made(self, transport) -> None:
        self.transport = transport
        if self.clients.admit(self):
            self.inner = self.make()
            self.inner.connection_made(transport)
        else:
            transport.abort()

    def data_received(self, data: bytes) -> None:
        if not self.busy and self.timer is None:
            self.clients.head_begun(self)
        if self.inner is not None:
            self.inner.data_received(data)

    def eof_received(self):
        return None if self.inner is None else self.inner.eof_received()

    def connection_lost(self, exc) -> None:
        self.clients.lost(self)
        if self.inner is not None:
            self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        if self.inner is not None:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.inner is not None:
            self.inner.resume_writing()


class _Clients:
    """The client connections of one server. Each must send a whole request head within ``head_timeout`` seconds
    (from its opening; kept alive, from the next head's first byte), else it is closed unanswered. At most
    ``max_clients`` are open: one more closes the longest idle (no request in the app), or is refused (closed at
    once) when none is idle. Refusals, closings and head timeouts are logged in runs (``_Runs``)."""

    def __init__(self, head_timeout: float, max_clients: int) -> None:
        self.head_timeout = head_timeout
        self.max_clients = max_clients
        self.open: dict[asyncio.Transport, _Client] = {}
        self.idle: dict[asyncio.Transport, _Client] = {}  # the open ones with no request in the app, longest idle first
        self.refused = _Runs(
            "client connections: all %d open are busy (--max-clients): refusing new ones",
            "refused %d more client connections in the last %.0f s, all open ones busy",
        )
        self.closed = _Runs(
            "client connections: %d open (--max-clients): closing the longest idle to let new ones in",
            "closed %d more idle client connections in the last %.0f s to let new ones in",
        )
        self.timed_out = _Runs(
            "closed a client connection that sent no whole request head within %g s (--head-timeout)",
            "closed %d more client connections without a whole request head in the last %.0f s",
        )

    def protocol(self, make):
        """The protocol factory of a listening socket: ``make`` makes aiohttp's protocol."""
        return lambda: _Client(self, make)

    def admit(self, client: _Client) -> bool:
        """Whether a new connection is let in, an idle one closed to make room if need be."""
        if len(self.open) >= self.max_clients:
            if not self.idle:
                self.refused.note(self.max_clients)
                return False
            oldest = next(iter(self.idle.values()))
            self._forget(oldest)
            assert oldest.transport is not None
            oldest.transport.close()
            self.closed.note(self.max_clients)
        assert client.transport is not None
        self.open[client.transport] = self.idle[client.transport] = client
        self._time(client)
        return True

    def _time(self, client: _Client) -> None:
        client.timer = asyncio.get_running_loop().call_later(self.head_timeout, self._expired, client)

    def head_begun(self, client: _Client) -> None:
        if client.transport in self.open:
            self._time(client)

    def _expired(self, client: _Client) -> None:
        client.timer = None
        if not client.busy and client.transport in self.open:
            self._forget(client)
            assert client.transport is not None
            client.transport.close()
            self.timed_out.note(self.head_timeout)

    def begin(self, transport) -> _Client | None:
        """A request of ``transport``'s connection is in the app (its head is whole)."""
        client = self.open.get(transport)
        if client is not None:
            client.busy += 1
            self.idle.pop(transport, None)
            if client.timer is not None:
                client.timer.cancel()
                client.timer = None
        return client

    def end(self, client: _Client) -> None:
        """That request has left the app."""
        client.busy -= 1
        if not client.busy and client.transport in self.open:
            self.idle[client.transport] = client  # (last: it has been idle the shortest)

    def lost(self, client: _Client) -> None:
        self._forget(client)

    def _forget(self, client: _Client) -> None:
        self.open.pop(client.transport, None)  # type: ignore[arg-type]
        self.idle.pop(client.transport, None)  # type: ignore[arg-type]
        if client.timer is not None:
            client.timer.cancel()
            client.timer = None

    def close(self) -> None:
        for runs in (self.refused, self.closed, self.timed_out):
            runs.close()


class _ServerLog(logging.LoggerAdapter):
    """aiohttp's server logger (``aiohttp.server``), except that a request it refuses as malformed (``bad``, its
    ``HttpProcessingError``) is one line on the proxy's logger, not an error with its traceback."""

    def __init__(self, bad: type) -> None:
        super().__init__(logging.getLogger("aiohttp.server"), {})
        self.bad = bad

    def log(self, level, msg, *args, exc_info=None, **kwargs) -> None:
        if isinstance(exc_info, self.bad):
            remote = args[0] if args and "from %s" in str(msg) else None  # (aiohttp >= 3.10 says who)
            reason = " ".join(str(getattr(exc_info, "message", "") or exc_info).split())  # its bytes are escaped
            code = getattr(exc_info, "code", 400)
            log.info("malformed request%s: %s %s", "" if remote is None else f" from {remote}", code, reason[:500])
            return
        super().log(level, msg, *args, exc_info=exc_info, **kwargs)


def _default_clients(max_connections: int) -> int:
    """``MAX_CLIENTS``, or what the descriptor limit leaves after ``max_connections`` and ``_SPARE_FDS`` (>= 1)."""
    try:
        import resource
    except ImportError:  # no such limit to read (Windows)
        return MAX_CLIENTS
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY:
        return MAX_CLIENTS
    return max(1, min(MAX_CLIENTS, soft - max_connections - _SPARE_FDS))


def _runner(web, app, clients: _Clients, **kwargs):
    """An ``AppRunner`` for ``app`` whose listening sockets (``listen``) hand every connection to ``clients``."""

    class Runner(web.AppRunner):
        def __init__(self) -> None:
            super().__init__(app, **kwargs)
            self.listening: list[asyncio.Server] = []

        async def listen(self, host: str, port: int, reuse_port: bool) -> None:
            loop = asyncio.get_running_loop()
            server = await loop.create_server(
                clients.protocol(self.server), host, port, backlog=128, reuse_port=reuse_port or None
            )
            self.listening.append(server)

        @property
        def addresses(self) -> list:
            return [sock.getsockname() for server in self.listening for sock in server.sockets]

        async def cleanup(self) -> None:
            for server in self.listening:
                server.close()  # no new connection
            clients.close()
            await super().cleanup()

    return Runner()


def _connect_timeout(aiohttp, e) -> bool:
    """Whether the client timeout ``e`` was opening the connection, not waiting for data."""
    cls = getattr(aiohttp, "ConnectionTimeoutError", None)  # aiohttp >= 3.10
    if cls is not None:
        return isinstance(e, cls)
    return str(e).startswith("Connection timeout")  # aiohttp 3.9: one class for both


class _Proxy:
    """The handler and the upstream session of one app."""

    def __init__(
        self,
        upstream: str,
        native: bool,
        *,
        connect_timeout: float,
        read_timeout: float,
        body_timeout: float,
        max_connections: int,
        max_body: int,
        max_event: int,
        stream_arguments: bool,
        metrics: Metrics,
        metrics_path: str | None,
        health_path: str | None,
        metrics_token: str | None,
    ) -> None:
        self.aiohttp, self.web = _aiohttp()
        from yarl import URL  # an aiohttp dependency

        self.upstream = upstream
        url = URL(upstream)
        self.origin = (url.scheme, url.host, url.port)  # every URL requested has exactly these
        self.native = native
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.body_timeout = body_timeout
        self.max_connections = max_connections
        self.max_body = max_body
        self.max_event = max_event
        self.stream_arguments = stream_arguments
        self.metrics = metrics
        own = {metrics_path: self._metrics, health_path: self._health}
        self.own = {path: answer for path, answer in own.items() if path is not None}  # path -> its answer
        self.metrics_path = metrics_path
        self.token = None if metrics_token is None else metrics_token.encode()  # asked of the metrics' readers
        self.clients: _Clients | None = None  # its client connections, when ``start`` serves it
        self.session: aiohttp.ClientSession | None = None
        # one per upstream connection in use: waiting for one is bounded in time
        self.slots: asyncio.Semaphore | None = None

    async def session_context(self, app):
        aiohttp = self.aiohttp
        timeout = aiohttp.ClientTimeout(
            total=None, connect=self.connect_timeout, sock_connect=self.connect_timeout, sock_read=self.read_timeout
        )
        connector = aiohttp.TCPConnector(limit=self.max_connections)
        self.slots = asyncio.Semaphore(self.max_connections)
        # no cookie jar: the session is every client's, so a cookie the upstream set for one must never go out with
        # another's requests (a client's own Cookie header is relayed as it is)
        async with aiohttp.ClientSession(
            connector=connector, auto_decompress=False, timeout=timeout, cookie_jar=aiohttp.DummyCookieJar()
        ) as self.session:
            yield

    @property
    def middleware(self):
        """Sends every request to ``route``, or to ``handle`` (which answers 400) when its target is not a
        path, whatever the router made of it: it matches neither ``*`` nor ``host:443``, nor a path whose
        decoded form holds a line break (``/v1/models%0A``), which are still relayed, counted and logged."""
        handle, route = self.handle, self.route

        @self.web.middleware
        async def every_target(request, handler):
            clients = self.clients
            client = None if clients is None else clients.begin(request.transport)
            try:
                if _origin_form(request.raw_path):
                    return await route(request)
                return await handle(request)
            finally:
                if client is not None:
                    clients.end(client)  # type: ignore[union-attr]

        return every_target

    async def route(self, request):
        """Answer the proxy's own paths; relay the others (``handle``).

        Its answers (GET and HEAD) are neither counted nor logged: scrapes and probes every few seconds would
        drown the traffic. A request it refuses (another method: 405; the metrics without their token: 401) is
        both, under the path ``other``, outcome ``error``.
        """
        answer = self.own.get(request.path)
        if answer is None:
            return await self.handle(request)
        if request.method not in ("GET", "HEAD"):
            response = self._error(405, "method_not_allowed", f"{request.path} answers GET and HEAD only")
            response.headers["Allow"] = "GET, HEAD"
            return self._refused(request, response, "method not allowed")
        if request.path == self.metrics_path and self.token is not None and not self._authorized(request):
            message = f"{request.path} needs the metrics token: Authorization: Bearer <token>"
            response = self._error(401, "authentication_error", message)
            response.headers["WWW-Authenticate"] = 'Bearer realm="textcalls metrics"'
            return self._refused(request, response, "unauthorized")
        return answer()

    def _authorized(self, request) -> bool:
        """Whether the request's ``Authorization`` is ``Bearer`` and the metrics token (compared in constant time)."""
        assert self.token is not None
        scheme, _, given = request.headers.get("Authorization", "").strip().partition(" ")
        given_bytes = given.strip().encode("utf-8", "surrogateescape")
        return hmac.compare_digest(given_bytes, self.token) and scheme.lower() == "bearer"

    def _refused(self, request, response, how: str):
        """``response``, the proxy's refusal of a request for one of its own paths, counted and logged."""
        ex = _Exchange()
        ex.status, ex.how = response.status, how
        self._done(request, ex)
        return response

    def _metrics(self):
        return self.web.Response(
            body=self.metrics.render(), headers={"Content-Type": CONTENT_TYPE, "Cache-Control": "no-store"}
        )

    def _health(self):
        return self.web.Response(text="ok\n", headers={"Cache-Control": "no-store"})

    async def handle(self, request):
        """Relay one request, recovering where it applies; count it and log one line about it."""
        ex = _Exchange()
        try:
            response = await self._handle(request, ex)
            ex.status = response.status
            return response
        except self.web.HTTPException as e:  # e.g. 413 from reading an oversized body
            ex.status, ex.how = e.status, e.reason
            raise
        except asyncio.CancelledError:
            ex.outcome, ex.how = "client_gone", "client gone"
            raise
        finally:
            self._done(request, ex)

    def _done(self, request, ex: _Exchange) -> None:
        end = time.perf_counter()
        origin = _origin_form(request.raw_path)
        target = request.path_qs if origin else request.raw_path
        duration = end - ex.started
        first = (end if ex.first is None else ex.first) - ex.started
        metrics = self.metrics
        metrics.count(
            path_label(request.path) if origin else "other",
            ex.outcome,
            first,
            sent=ex.sent,
            untouched=ex.sent if ex.same else 0,
        )
        told = 0  # calls counted with their dialect
        for (kind, dialect), n in (ex.tally or {}).items():
            if kind == "calls":
                metrics.recovered(ex.body, n, dialect)
                told += n
            else:
                metrics.malformed(n)
        if ex.calls > told:  # calls a recovery counts without their dialect (Responses, Messages)
            metrics.recovered(ex.body, ex.calls - told)
        if ex.abandoned:
            metrics.abandoned(ex.abandoned)
        fields = {
            "method": request.method,
            "path": target,
            "status": ex.status,
            "upstream_status": ex.upstream_status,
            "outcome": ex.outcome,
            "detail": ex.how,
            "calls": ex.calls,
            "bytes": ex.sent,
            "duration_ms": round(duration * 1000, 1),
            "first_byte_ms": round(first * 1000, 1),
        }
        status = "-" if ex.status is None else ex.status
        log.info(
            "%s %s %s %s %.1fms", request.method, target, status, ex.how, duration * 1000, extra={"textcalls": fields}
        )

    def _error(self, status: int, kind: str, message: str):
        body = {"error": {"message": message, "type": kind, "param": None, "code": status}}
        return self.web.json_response(body, status=status)

    def _failed(self, ex: _Exchange, how: str, response):
        """``response``, the proxy's own error answer, after noting ``how`` the request failed."""
        ex.how = how
        return response

    async def _close_with(self, request, response):
        """Send ``response`` now, then close the connection (the rest of the request body is not read)."""
        response.force_close()
        with contextlib.suppress(ConnectionError):
            await response.prepare(request)
            await response.write_eof()
        request.protocol.force_close()  # flushes what was written; no lingering over an unread body
        return response

    async def _body_timed_out(self, request, ex: _Exchange):
        log.warning(
            "%s %s: the client did not send its request body within %g s",
            request.method,
            request.path_qs,
            self.body_timeout,
        )
        message = f"the request body was not received within {self.body_timeout:g} s"
        response = await self._close_with(request, self._error(408, "request_timeout", message))
        return self._failed(ex, "request body timeout", response)

    async def _read_body(self, request) -> bytes | None:
        """The whole request body, or None as soon as it is known to be over ``max_body``."""
        if (request.content_length or 0) > self.max_body:
            return None
        data = bytearray()
        while chunk := await request.content.readany():
            data += chunk
            if len(data) > self.max_body:
                return None
        return bytes(data)

    def _too_large(self, ex: _Exchange):
        """The 413 for a body over ``max_body``. The connection closes after it, once aiohttp has read and dropped
        what the client still sends (for up to its lingering time, 10 s), so that a client that sends its whole
        body before it reads sees this answer, not a reset."""
        cap = self.max_body
        size = f"{cap >> 20} MiB" if cap & 0xFFFFF == 0 else f"{cap} bytes"
        response = self._error(413, "request_too_large", f"the request body is over {size}, the proxy's cap")
        response.force_close()
        return self._failed(ex, "request body too large", response)

    async def _options(self, api: _Api, tools: list, stream_arguments: bool = False) -> Options:
        """``api.options``, made in a worker thread for many tools (see ``_MANY_TOOLS``)."""
        if len(tools) > _MANY_TOOLS:
            return await asyncio.to_thread(api.options, tools, stream_arguments)
        return api.options(tools, stream_arguments)

    def _bad_target(self, request, ex: _Exchange):
        message = (
            "the request target must be a path starting with one '/' (origin form): absolute-form, "
            "authority-form and '*' targets are not relayed"
        )
        return self._failed(ex, "bad request target", self._error(400, "invalid_request_error", message))

    async def _handle(self, request, ex: _Exchange):
        from multidict import CIMultiDict
        from yarl import URL

        if not _origin_form(request.raw_path):
            return self._bad_target(request, ex)
        try:
            url = URL(self.upstream + request.raw_path, encoded=True)
            origin = (url.scheme, url.host, url.port)
        except ValueError:
            origin = None
        if origin != self.origin:  # cannot happen for a path; checked all the same
            log.warning(
                "%s %s: not relayed: the target would change the upstream's origin", request.method, request.path_qs
            )
            return self._bad_target(request, ex)
        headers = CIMultiDict(_forwarded(request.headers, _REQUEST_DROP))
        tools, body = None, None
        data: bytes | io.BytesIO | _Body | None = None
        api = _APIS.get(request.path) if request.method == "POST" else None
        if api is not None:
            try:
                if request.content.is_eof():  # all here already (the common case): no timer needed
                    read = await self._read_body(request)
                else:
                    read = await asyncio.wait_for(self._read_body(request), self.body_timeout)
            except asyncio.TimeoutError:
                return await self._body_timed_out(request, ex)
            if read is None:
                return self._too_large(ex)
            if len(read) > _OFF_LOOP:
                tools, why = await asyncio.to_thread(_offered_tools, read, api.tools, True)
            else:
                tools, why = _offered_tools(read, api.tools)
            data = io.BytesIO(read) if len(read) > _OFF_LOOP else read  # (aiohttp sends a BytesIO in pieces)
            if why is not None:
                log.warning("%s %s: not recovered, relayed as it is: %s", request.method, request.path_qs, why)
            if tools is not None:
                headers["Accept-Encoding"] = "identity"  # the answer must be readable to recover it
        elif request.body_exists:
            data = body = _Body(request.content, self.body_timeout)
        # both made by session_context, which runs while the app does
        assert self.slots is not None and self.session is not None
        try:
            if self.slots.locked():
                await asyncio.wait_for(self.slots.acquire(), self.connect_timeout)
            else:
                await self.slots.acquire()  # returns at once
        except asyncio.TimeoutError:
            log.warning(
                "%s %s: all %d upstream connections stayed busy for %g s",
                request.method,
                request.path_qs,
                self.max_connections,
                self.connect_timeout,
            )
            message = (
                f"all {self.max_connections} upstream connections stayed busy for "
                f"{self.connect_timeout:g} s: try again later"
            )
            return self._failed(ex, "no free upstream connection", self._error(503, "service_unavailable", message))
        try:
            async with self.session.request(
                request.method,
                url,
                headers=headers,
                data=data,
                allow_redirects=False,
                skip_auto_headers=_NO_AUTO_HEADERS,
            ) as upstream:
                ex.upstream_status = upstream.status
                return await self._relay(request, upstream, tools, ex, api)
        except (self.aiohttp.ClientError, asyncio.TimeoutError, OSError, _BodyTimeout) as e:
            if ex.status is not None:  # the answer had started: _pump handles what follows
                raise
            if body is not None and body.timed_out:
                return await self._body_timed_out(request, ex)
            answered = ex.upstream_status is not None
            if isinstance(e, asyncio.TimeoutError) and not _connect_timeout(self.aiohttp, e):
                if answered:
                    message = f"upstream sent nothing more for {self.read_timeout:g} s"
                else:
                    message = f"upstream did not answer within {self.read_timeout:g} s"
                return self._failed(ex, "gateway timeout", self._error(504, "gateway_timeout", message))
            message = f"upstream {'broke off' if answered else 'unreachable'}: {e or type(e).__name__}"
            return self._failed(ex, "bad gateway", self._error(502, "bad_gateway", message))
        finally:
            self.slots.release()

    async def _relay(self, request, upstream, tools: list | None, ex: _Exchange, api: _Api | None):
        """Send the upstream answer on (recovered by ``api`` when ``tools`` were offered); return the response."""
        from multidict import CIMultiDict

        web = self.web
        headers = CIMultiDict(_forwarded(upstream.headers, HOP_BY_HOP))
        content_type = upstream.headers.get("Content-Type", "").lower()
        plain = upstream.headers.get("Content-Encoding", "identity").lower() in ("", "identity")
        recover = api is not None and tools is not None and plain and upstream.status == 200
        if recover and content_type.startswith("text/event-stream"):
            assert api is not None and tools is not None
            headers.popall("Content-Length", None)
            options = await self._options(api, tools, self.stream_arguments)
            recovery = api.sse(native=self.native, has_tools=True, max_event=self.max_event, options=options)
            response = web.StreamResponse(status=200, headers=headers)
            ex.body = "sse"
            how = await self._pump(request, response, upstream, [], ex, recovery)
            abandoned = f" abandoned={recovery.abandoned}" if self.stream_arguments else ""
            ex.how = f"sse recovered={recovery.recovered}{abandoned}{how}"
            return response
        if recover and "json" in content_type:
            assert api is not None and tools is not None
            options = await self._options(api, tools)
            held: list[bytes] = []
            size = 0
            while size <= MAX_RESPONSE:
                data = await upstream.content.readany()
                if not data:
                    body = b"".join(held)
                    tally = ex.tally = Counter() if api.tallies else None
                    extra = {"tally": tally} if api.tallies else {}
                    new = api.body(body, native=self.native, has_tools=True, options=options, **extra)
                    if new is body:
                        ex.outcome, ex.how = "unchanged", "json unchanged"
                        ex.wrote(body)
                        return web.Response(status=200, headers=headers, body=body)
                    headers.popall("Content-Length", None)
                    ex.calls = api.count(new) - api.count(body)
                    ex.outcome, ex.how = ("recovered" if ex.calls else "rewritten"), "json recovered"
                    ex.same = False
                    ex.wrote(new)
                    return web.Response(status=200, headers=headers, body=new)
                held.append(data)
                size += len(data)
            response = web.StreamResponse(status=200, headers=headers)
            ex.outcome = "relayed"
            ex.how = "json too large, relayed" + await self._pump(request, response, upstream, held, ex)
            return response
        response = web.StreamResponse(status=upstream.status, reason=upstream.reason, headers=headers)
        events = plain and content_type.startswith("text/event-stream")  # must end at an event's end
        ex.outcome = "relayed"
        ex.how = "relayed" + await self._pump(request, response, upstream, [], ex, events=events)
        return response

    async def _pump(
        self,
        request,
        response,
        upstream,
        held: list,
        ex: _Exchange,
        recovery: SSERecovery | EventRecovery | None = None,
        events: bool = False,
    ) -> str:
        """Send ``held`` and the rest of the upstream body (through ``recovery``) to the client.

        Returns "" or why it stopped early: the client left, or the upstream broke off: reading failed
        or timed out, or the body of an event stream (recovered, or relayed with ``events``) ended
        inside an event. The client connection is then closed, so the client sees a truncated answer,
        not a complete one, and ``recovery`` is not closed: markup it holds is never released as content.
        With ``recovery``, sets ``ex.outcome`` when the answer is complete (the caller sets it otherwise).
        """
        tail = b""  # the last bytes relayed, with ``events``
        echo = _Echo()
        try:
            ex.status = response.status
            await response.prepare(request)
            for data in held:
                await response.write(data)
                ex.wrote(data)
            while True:
                try:
                    data = await upstream.content.readany()
                except (self.aiohttp.ClientError, asyncio.TimeoutError, OSError, _BodyTimeout) as e:
                    return self._broke_off(request, ex, e or type(e).__name__)
                if not data:
                    break
                if recovery is not None:
                    out = recovery.feed(data)
                    echo.check(data, out)
                    data = out
                elif events:
                    tail = (tail + data)[-4:]
                if data:
                    await response.write(data)
                    ex.wrote(data)
            if tail and not _ends_event(tail):
                return self._broke_off(request, ex, "its event stream ended inside an event")
            if recovery is not None:
                if recovery.incomplete:
                    return self._broke_off(request, ex, "its body ended inside an event")
                data = recovery.close()
                echo.check(b"", data)
                if data:
                    await response.write(data)
                    ex.wrote(data)
                if recovery.recovered:
                    ex.outcome = "recovered"
                else:
                    ex.outcome = "unchanged" if echo.whole else "rewritten"
            await response.write_eof()
        except ConnectionError:
            ex.outcome = "client_gone"
            return ", client gone"
        finally:
            ex.same = echo.same
            if recovery is not None:
                ex.calls = recovery.recovered
                ex.tally = getattr(recovery, "tally", None)  # chat completions' SSERecovery
                ex.abandoned = recovery.abandoned
        return ""

    def _broke_off(self, request, ex: _Exchange, why) -> str:
        log.warning("%s %s: upstream broke off: %s", request.method, request.path_qs, why)
        if request.transport is not None:
            request.transport.close()
        ex.outcome = "broken"
        return ", upstream broke off"


def create_app(
    upstream: str,
    *,
    native: bool = True,
    connect_timeout: float = CONNECT_TIMEOUT,
    read_timeout: float = READ_TIMEOUT,
    body_timeout: float = BODY_TIMEOUT,
    max_connections: int = MAX_CONNECTIONS,
    max_body: int = MAX_REQUEST,
    max_event: int = MAX_EVENT,
    stream_arguments: bool = False,
    metrics_path: str | None = METRICS_PATH,
    health_path: str | None = HEALTH_PATH,
    metrics_token: str | None = None,
    metrics: Metrics | None = None,
):
    """An ``aiohttp.web.Application`` proxying to ``upstream`` (see the module docstring).

    ``connect_timeout``: seconds to wait for a free upstream connection when ``max_connections``
    are busy (then 503), and again to open one (then 502). ``read_timeout``: seconds the upstream
    may stay silent, before its answer (then 504) or within it (then the answer is cut off).
    ``body_timeout``: seconds a client has to send its whole request body (then 408, and the
    connection is closed). ``max_body``: the cap, in bytes, on a request body the proxy reads (the recovered
    paths; others are streamed upstream as they come): over it, 413. ``max_event``: ``SSERecovery``'s cap on one
    held event. ``stream_arguments``:
    streamed answers (chat completions, Responses, Messages) send a text call's arguments in pieces as the
    model writes them (``ChunkRecovery``, ``ResponsesRecovery``, ``MessagesRecovery``); each request's log line
    then counts the calls abandoned after their start went out.
    ``metrics_path``, ``health_path``: the paths of the proxy's metrics and health answers (GET and
    HEAD; other methods 405), or None to relay that path like any other. ``metrics_token``: when given, the
    metrics answer only a request with ``Authorization: Bearer <metrics_token>`` (else 401); the health answer
    stays open (it says ``ok``, nothing more, and load balancers probe it without headers). ``metrics``: the
    ``textcalls.metrics.Metrics`` it counts in (default: its own); apps given the same one report together.

    Serve it with ``handler_cancellation=True`` (as ``start`` does) so that a client that
    disconnects cancels its upstream request at once. The head timeout and the cap on client connections are
    ``start``'s: served by another runner, the app has neither.
    """
    return _app(
        upstream,
        native=native,
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        body_timeout=body_timeout,
        max_connections=max_connections,
        max_body=max_body,
        max_event=max_event,
        stream_arguments=stream_arguments,
        metrics_path=metrics_path,
        health_path=health_path,
        metrics_token=metrics_token,
        metrics=metrics,
    )[0]


def _app(
    upstream: str,
    *,
    native: bool = True,
    connect_timeout: float = CONNECT_TIMEOUT,
    read_timeout: float = READ_TIMEOUT,
    body_timeout: float = BODY_TIMEOUT,
    max_connections: int = MAX_CONNECTIONS,
    max_body: int = MAX_REQUEST,
    max_event: int = MAX_EVENT,
    stream_arguments: bool = False,
    metrics_path: str | None = METRICS_PATH,
    health_path: str | None = HEALTH_PATH,
    metrics_token: str | None = None,
    metrics: Metrics | None = None,
) -> tuple:
    """``create_app``'s app and its ``_Proxy``."""
    upstream = check_upstream(upstream)
    check_gate(native, True)
    metrics_path = own_path("metrics_path", metrics_path)
    health_path = own_path("health_path", health_path)
    if metrics_path is not None and metrics_path == health_path:
        raise ValueError(f"metrics_path and health_path must differ, not both {metrics_path!r}")
    metrics_token = check_token("metrics_token", metrics_token)
    if metrics is not None and not isinstance(metrics, Metrics):
        raise TypeError(f"metrics must be a textcalls.metrics.Metrics, not {type(metrics).__name__}")
    proxy = _Proxy(
        upstream,
        native,
        connect_timeout=_seconds("connect_timeout", connect_timeout),
        read_timeout=_seconds("read_timeout", read_timeout),
        body_timeout=_seconds("body_timeout", body_timeout),
        max_connections=_count("max_connections", max_connections),
        max_body=_count("max_body", max_body),
        max_event=_count("max_event", max_event),
        stream_arguments=_flag("stream_arguments", stream_arguments),
        metrics=Metrics() if metrics is None else metrics,
        metrics_path=metrics_path,
        health_path=health_path,
        metrics_token=metrics_token,
    )
    app = proxy.web.Application(client_max_size=proxy.max_body, middlewares=[proxy.middleware])
    app.cleanup_ctx.append(proxy.session_context)
    app.router.add_route("*", "/{tail:.*}", proxy.route)
    return app, proxy


async def start(
    upstream: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8787,
    native: bool = True,
    reuse_port: bool = False,
    head_timeout: float = HEAD_TIMEOUT,
    idle_timeout: float = IDLE_TIMEOUT,
    max_clients: int | None = None,
    **options,
):
    """Start a proxy; return its ``aiohttp.web.AppRunner`` (``addresses``; ``await cleanup()`` stops it).

    ``options`` are ``create_app``'s (timeouts, ``max_connections``, ``max_body``, ``max_event``,
    ``stream_arguments``, the own paths, ``metrics``); ``reuse_port``: bind with SO_REUSEPORT, so that other
    processes may serve the same port (``run(workers=…)``).

    Client connections: ``head_timeout``, seconds a client has to send a whole request head, from its
    connection's opening or, kept alive, from the next head's first byte (else the connection is closed,
    unanswered); ``idle_timeout``, seconds a kept-alive connection may wait for its next request;
    ``max_clients``, the cap on open ones: one more closes the longest idle one, or is refused (closed at once)
    when all are busy. By default ``MAX_CLIENTS``, or fewer when the descriptor limit (``ulimit -n``) leaves less
    room after ``max_connections`` and 32 more (said in a warning). A request aiohttp refuses as malformed (400)
    is one log line, without a traceback; refusals, closings and timeouts are logged once every ``LOG_INTERVAL``
    seconds with their count.
    """
    aiohttp, web = _aiohttp()
    head_timeout = _seconds("head_timeout", head_timeout)
    idle_timeout = _seconds("idle_timeout", idle_timeout)
    app, proxy = _app(upstream, native=native, **options)
    if max_clients is not None:
        max_clients = _count("max_clients", max_clients)
    else:
        max_clients = _default_clients(proxy.max_connections)
        if max_clients < MAX_CLIENTS:
            log.warning(
                "the descriptor limit (ulimit -n) leaves room for %d client connections at once (--max-clients)",
                max_clients,
            )
    proxy.clients = clients = _Clients(head_timeout, max_clients)
    bad = aiohttp.http_exceptions.HttpProcessingError
    runner = _runner(
        web,
        app,
        clients,
        handler_cancellation=True,
        access_log=None,
        keepalive_timeout=idle_timeout,
        logger=_ServerLog(bad),
    )
    await runner.setup()
    try:
        await runner.listen(host, port, reuse_port)
    except BaseException:
        await runner.cleanup()
        raise
    return runner


def run(
    upstream: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8787,
    native: bool = True,
    workers: int = 1,
    log_format: str = "text",
    loop: str = "asyncio",
    **options,
) -> None:
    """Serve until SIGTERM (then return) or Ctrl-C (KeyboardInterrupt propagates); ``options`` as ``start``.

    ``loop`` (``LOOPS``): the event loop each process serves on: ``asyncio`` (the standard library's), ``uvloop``
    (``pip install 'textcalls[uvloop]'``; ImportError without it) or ``auto`` (uvloop where it is installed, else
    asyncio's). On uvloop, accepts that fail for want of descriptors are libuv's to handle: they are not logged.

    ``workers``: how many processes serve the port, this one and ``workers - 1`` children, each with its
    own event loop and upstream connections (``max_connections`` each), bound with SO_REUSEPORT so that
    the kernel spreads the connections between them. It needs SO_REUSEPORT (Linux, macOS, BSD) and a
    fixed port. SIGTERM to this process stops the children too. Their metrics are shared: each counts
    in its own row of one array in shared memory, and ``/metrics`` on any of them sums the rows.
    A child that dies is replaced, in its row (its counts stay): at once if it had served 10 s, else after
    a delay that doubles with each such death, 0.5 s to 30 s. A child stops when this process dies, even
    by SIGKILL: on Linux by a parent-death signal (SIGTERM), elsewhere when a pipe from this process
    closes, and, checked every second, when its parent's pid changes.
    ``log_format`` (``LOG_FORMATS``): each process logs INFO and above to stderr as text or one JSON
    object a line (``JsonFormatter``); this one only if its logging is not configured already.
    """
    workers = _count("workers", workers)
    log_format = _log_format(log_format)
    factory = _loop_factory(_loop_name(loop))
    _log_to_stderr(log_format)
    if workers == 1:
        _run_on(factory, _serve(upstream, host, port, native, options, False, None))
        return
    if not hasattr(socket, "SO_REUSEPORT"):
        raise ValueError("workers > 1 needs SO_REUSEPORT, which this platform lacks")
    if port == 0:
        raise ValueError("workers > 1 needs a fixed port: each worker binds it")
    context = multiprocessing.get_context("spawn")  # no event loop or lock copied from this process
    store = context.RawArray("d", workers * SLOTS)  # the metrics: one row per worker, zeros
    args = (upstream, host, port, native, options, log_format, loop)
    children = _Workers(context, _worker, args, store, range(1, workers))
    try:
        _run_on(factory, _serve(upstream, host, port, native, options, True, (store, 0), children=children))
    finally:
        children.stop()


def _restart_delay(previous: float, lived: float) -> float:
    """Seconds to wait before a worker that died after serving ``lived`` seconds is replaced, ``previous`` being the
    last such delay of its row: none after a worker that served ``_STABLE`` seconds, else twice the last one, from
    ``_FIRST_DELAY`` up to ``_MAX_DELAY`` (a worker that dies as it starts is not restarted in a loop)."""
    if lived >= _STABLE:
        return 0.0
    return min(_MAX_DELAY, max(_FIRST_DELAY, 2 * previous))


class _Workers:
    """The children of ``run(workers=N)``, one for each row of the metrics from 1 on: ``target(*args, (store, row),
    this process's pid)``. One that dies is replaced (``_restart_delay``), with the same row: its counts stay.
    ``stop`` stops them (SIGTERM); each also stops when this process dies (``_worker``)."""

    def __init__(self, context, target, args: tuple, store, rows: range) -> None:
        self.context, self.target, self.args, self.store = context, target, args, store
        self.procs: dict[int, Any] = {}  # row -> its process
        self.born: dict[int, float] = {}  # row -> when its process started
        self.delays = dict.fromkeys(rows, 0.0)  # row -> the last delay before a restart
        self.loop: asyncio.AbstractEventLoop | None = None
        self.stopping = False
        for row in rows:
            self._start(row)

    def _start(self, row: int) -> None:
        proc = self.context.Process(target=self.target, args=(*self.args, (self.store, row), os.getpid()), daemon=True)
        proc.start()  # (from the main thread: a parent-death signal follows the thread that forked)
        self.procs[row], self.born[row] = proc, time.monotonic()
        if self.loop is not None:
            self.loop.add_reader(proc.sentinel, self._ended, row)

    def watch(self, loop: asyncio.AbstractEventLoop) -> None:
        """Replace the workers that die from now on, on ``loop`` (this process's)."""
        self.loop = loop
        for row, proc in self.procs.items():
            loop.add_reader(proc.sentinel, self._ended, row)  # readable once it has ended

    def _ended(self, row: int) -> None:
        assert self.loop is not None
        proc = self.procs.pop(row)
        self.loop.remove_reader(proc.sentinel)
        proc.join()
        pid, code = proc.pid, proc.exitcode
        proc.close()
        lived = time.monotonic() - self.born.pop(row)
        delay = self.delays[row] = _restart_delay(self.delays[row], lived)
        if code is not None and code < 0:
            try:
                how = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"was killed by signal {-code}"
        else:
            how = f"exited with code {code}"
        later = f" in {delay:g} s" if delay else ""
        log.warning("worker %d (pid %d) %s after %.1f s: starting another%s", row, pid, how, lived, later)
        self.loop.call_later(delay, self._restart, row)

    def _restart(self, row: int) -> None:
        if not self.stopping:
            self._start(row)

    def unwatch(self) -> None:
        """Replace no more workers (this process is stopping)."""
        self.stopping = True
        if self.loop is not None:
            for proc in self.procs.values():
                self.loop.remove_reader(proc.sentinel)
            self.loop = None

    def stop(self) -> None:
        """SIGTERM to every worker (each stops as this process does), and wait for them (10 s at most each)."""
        self.stopping = True
        for proc in self.procs.values():
            proc.terminate()
        for proc in self.procs.values():
            proc.join(10)


def _die_with_parent(parent: int) -> bool:
    """Have Linux send this process SIGTERM when its parent dies (``prctl(PR_SET_PDEATHSIG)``); whether the parent
    is still ``parent`` (else it died before: nothing will come)."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGTERM), *[ctypes.c_ulong(0)] * 3)
        except (OSError, AttributeError):  # no prctl to be found: the pipe and the check below remain
            pass
    return os.getppid() == parent


def _watch_parent(loop: asyncio.AbstractEventLoop, parent: int, gone) -> None:
    """Call ``gone`` once the parent process is gone: its end of a pipe closes (``multiprocessing``'s parent
    sentinel, where the platform has none of Linux's parent-death signal), or, checked every second, this process's
    parent is another (it was adopted)."""
    sentinel = getattr(multiprocessing.parent_process(), "sentinel", None)

    def ended() -> None:
        if sentinel is not None:
            loop.remove_reader(sentinel)
        gone()

    if sentinel is not None:
        try:
            loop.add_reader(sentinel, ended)
        except (NotImplementedError, ValueError, OSError):  # a loop that cannot watch it: the check alone
            sentinel = None

    def check() -> None:
        if os.getppid() != parent:
            ended()
        else:
            loop.call_later(1.0, check)

    loop.call_later(1.0, check)


def _worker(
    upstream: str,
    host: str,
    port: int,
    native: bool,
    options: dict,
    log_format: str,
    loop: str,
    shared: tuple,
    parent: int,
) -> None:
    """A child of ``run(workers=…)``: serve the same port until SIGTERM or until its parent (``parent``) dies."""
    if not _die_with_parent(parent):
        return
    _log_to_stderr(log_format)
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C reaches the whole process group
        _run_on(_loop_factory(loop), _serve(upstream, host, port, native, options, True, shared, parent=parent))


async def _serve(
    upstream: str,
    host: str,
    port: int,
    native: bool,
    options: dict,
    reuse_port: bool,
    shared: tuple | None,
    *,
    children: _Workers | None = None,
    parent: int | None = None,
) -> None:
    """Serve until SIGTERM; ``shared``: (the store, this process's row) for the metrics, or None; ``children``:
    the workers this process replaces when they die; ``parent``: the pid of the process whose death stops this one
    too (a worker's)."""
    metrics = Metrics()
    if shared is not None:
        metrics.share(*shared)
    accepting = _Runs(
        "cannot accept client connections for now: %s",
        "accepting a client connection failed %d more times in the last %.0f s",
    )
    _quiet_accepts(asyncio.get_running_loop(), accepting)
    runner = await start(
        upstream, host=host, port=port, native=native, reuse_port=reuse_port, metrics=metrics, **options
    )
    try:
        if urlsplit(upstream).path.endswith("/v1"):
            log.warning(
                "the upstream URL ends with /v1 and request paths (/v1/...) are appended to it: "
                "give the server's root unless it really serves /v1/v1/..."
            )
        for address in runner.addresses:
            host, port = address[:2]
            shown = f"[{host}]" if ":" in host else host
            log.info(
                "textcalls proxy on http://%s:%d -> %s (%s, %s scanner, %s loop)",
                shown,
                port,
                upstream,
                "native" if native else "prompt-guided",
                _scan.IMPLEMENTATION,
                _running_loop_name(),
            )
        stop = asyncio.Event()
        why = ["SIGTERM"]
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError):  # no signal handlers in Windows event loops
            loop.add_signal_handler(signal.SIGTERM, stop.set)
        if children is not None:
            children.watch(loop)
        if parent is not None:

            def orphaned() -> None:
                why[0] = f"its parent process {parent} is gone"
                stop.set()

            _watch_parent(loop, parent, orphaned)
        await stop.wait()
        log.info("textcalls proxy stopping (%s)", why[0])
    finally:
        if children is not None:
            children.unwatch()
        accepting.close()
        await runner.cleanup()


def _quiet_accepts(loop: asyncio.AbstractEventLoop, runs: _Runs) -> None:
    """Make ``loop`` tell its failures to accept a connection for want of descriptors or memory (asyncio stops
    accepting for a second, then tries again) as ``runs``, not as one ERROR with its traceback each; any other
    trouble goes to the handler there was."""
    previous = loop.get_exception_handler()

    def handler(loop: asyncio.AbstractEventLoop, context: dict) -> None:
        exc = context.get("exception")
        if isinstance(exc, OSError) and exc.errno in _SCARCE and "socket" in context:
            runs.note(exc)
        elif previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handler)
