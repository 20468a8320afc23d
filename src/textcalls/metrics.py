"""The proxy's metrics, rendered in the Prometheus text exposition format (version 0.0.4).

Every label takes its values from a fixed set (``PATHS``, ``OUTCOMES``, ``BODIES``), so the series are
known in advance: each is a slot of a flat array of floats, one row of slots per process. A ``Metrics``
adds to its own row and renders the sum of all rows, so with ``run(workers=N)`` (rows in shared memory,
one writer each) any worker answers ``/metrics`` for all of them. No dependency: the format is a few
lines of text, written here.
"""

from __future__ import annotations

import bisect
from typing import Any

from .markers import DIALECTS

__all__ = ["BODIES", "BUCKETS", "CONTENT_TYPE", "DIALECT_LABELS", "OUTCOMES", "PATHS", "SLOTS", "Metrics", "path_label"]

#: The ``path`` label: these request paths as they are, any other one as ``"other"``.
PATHS = (
    "/v1/chat/completions",
    "/v1/responses",
    "/v1/messages",
    "/v1/completions",
    "/v1/embeddings",
    "/v1/models",
    "other",
)
#: The ``outcome`` label of a request (docs/proxy.md).
OUTCOMES = ("recovered", "rewritten", "unchanged", "relayed", "broken", "client_gone", "error")
#: The ``body`` label of recovered calls: a non-streamed JSON answer or an event stream.
BODIES = ("json", "sse")
#: The ``dialect`` label of recovered calls: a ``DIALECTS`` name, ``bare_json``, or ``other`` (a call whose
#: dialect the recovery does not report: the Responses and Messages paths).
DIALECT_LABELS = (*DIALECTS, "bare_json", "other")
#: Upper bounds, in seconds, of the time-to-first-byte histogram's buckets (``+Inf`` besides).
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_PATH_INDEX = {path: i for i, path in enumerate(PATHS)}
_OUTCOME_INDEX = {outcome: i for i, outcome in enumerate(OUTCOMES)}
_BODY_INDEX = {body: i for i, body in enumerate(BODIES)}
_DIALECT_INDEX = {dialect: i for i, dialect in enumerate(DIALECT_LABELS)}
# the slots of one row
_REQUESTS = 0  # [path][outcome]
_CALLS = _REQUESTS + len(PATHS) * len(OUTCOMES)  # [body][dialect]
_MALFORMED = _CALLS + len(BODIES) * len(DIALECT_LABELS)
_ABANDONED = _MALFORMED + 1
_SENT = _ABANDONED + 1
_UNTOUCHED = _SENT + 1
_BUCKET = _UNTOUCHED + 1  # [path][bucket]: observations in each bucket alone; the last: over every bound
_SUM = _BUCKET + len(PATHS) * (len(BUCKETS) + 1)  # [path]
#: Slots in one row.
SLOTS = _SUM + len(PATHS)


def path_label(path: str) -> str:
    """The ``path`` label of a request path."""
    return path if path in _PATH_INDEX else "other"


def _escape(value: str) -> str:
    """A label value as the text format writes it between quotes."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() else repr(value)


class Metrics:
    """The counters and histogram of one proxy: ``count`` adds a finished request, ``recovered`` its
    calls, ``render`` writes them all.

    They live in a row of their own until ``share`` puts them in a shared store. One thread (one event
    loop) adds to a row: apps given the same ``Metrics`` must run on the same loop.
    """

    def __init__(self) -> None:
        self.share([0.0] * SLOTS, 0)

    def share(self, store: Any, row: int) -> None:
        """Count in row ``row`` of ``store`` from now on, and render the sum of its rows: a mutable
        sequence of floats (a ``multiprocessing`` ``RawArray('d')``) of whole rows of ``SLOTS``, zero at
        first, each row added to by one process only."""
        self._store = store
        self._base = row * SLOTS
        self._rows = len(store) // SLOTS

    def count(self, path: str, outcome: str, first_byte: float, *, sent: int, untouched: int) -> None:
        """Add one request: its ``path`` label, ``outcome``, seconds to its first body byte, the body bytes
        sent and, of those, the ones sent as the upstream sent them."""
        store, base = self._store, self._base
        p = _PATH_INDEX[path]
        store[base + _REQUESTS + p * len(OUTCOMES) + _OUTCOME_INDEX[outcome]] += 1
        store[base + _SENT] += sent
        store[base + _UNTOUCHED] += untouched
        store[base + _BUCKET + p * (len(BUCKETS) + 1) + bisect.bisect_left(BUCKETS, first_byte)] += 1
        store[base + _SUM + p] += first_byte

    def recovered(self, body: str, calls: int, dialect: str = "other") -> None:
        """Add ``calls`` of ``dialect`` recovered in an answer whose ``body`` is ``"json"`` or ``"sse"``."""
        label = _DIALECT_INDEX.get(dialect, _DIALECT_INDEX["other"])
        self._store[self._base + _CALLS + _BODY_INDEX[body] * len(DIALECT_LABELS) + label] += calls

    def malformed(self, blocks: int) -> None:
        """Add ``blocks`` removed without giving a call."""
        self._store[self._base + _MALFORMED] += blocks

    def abandoned(self, calls: int) -> None:
        """Add ``calls`` whose arguments went out in pieces and that were then abandoned."""
        self._store[self._base + _ABANDONED] += calls

    def _totals(self) -> list:
        store, rows = self._store, self._rows
        return [sum(store[r * SLOTS + i] for r in range(rows)) for i in range(SLOTS)]

    def render(self) -> bytes:
        """Every series, in the Prometheus text format (``CONTENT_TYPE``), summed over the rows."""
        t = self._totals()
        out = [
            "# HELP textcalls_requests_total Requests relayed or answered by the proxy (not its own "
            "metrics and health endpoints), by path and outcome.",
            "# TYPE textcalls_requests_total counter",
        ]
        for p, path in enumerate(PATHS):
            for o, outcome in enumerate(OUTCOMES):
                value = t[_REQUESTS + p * len(OUTCOMES) + o]
                out.append(
                    f'textcalls_requests_total{{path="{_escape(path)}",outcome="{_escape(outcome)}"}} {_number(value)}'
                )
        out += [
            "# HELP textcalls_calls_recovered_total Tool calls recovered from text markup, by answer body and "
            "the dialect of the markup.",
            "# TYPE textcalls_calls_recovered_total counter",
        ]
        out += [
            f'textcalls_calls_recovered_total{{body="{_escape(body)}",dialect="{_escape(dialect)}"}} '
            f"{_number(t[_CALLS + b * len(DIALECT_LABELS) + d])}"
            for b, body in enumerate(BODIES)
            for d, dialect in enumerate(DIALECT_LABELS)
        ]
        out += [
            "# HELP textcalls_blocks_malformed_total Blocks of markup removed without giving a call (malformed).",
            "# TYPE textcalls_blocks_malformed_total counter",
            f"textcalls_blocks_malformed_total {_number(t[_MALFORMED])}",
            "# HELP textcalls_calls_abandoned_total Calls whose arguments went out in pieces (--stream-arguments) "
            "and that were then abandoned.",
            "# TYPE textcalls_calls_abandoned_total counter",
            f"textcalls_calls_abandoned_total {_number(t[_ABANDONED])}",
        ]
        out += [
            "# HELP textcalls_response_bytes_total Body bytes of upstream answers sent to clients.",
            "# TYPE textcalls_response_bytes_total counter",
            f"textcalls_response_bytes_total {_number(t[_SENT])}",
            "# HELP textcalls_untouched_bytes_total Body bytes of answers sent exactly as the upstream sent them.",
            "# TYPE textcalls_untouched_bytes_total counter",
            f"textcalls_untouched_bytes_total {_number(t[_UNTOUCHED])}",
            "# HELP textcalls_first_byte_seconds Seconds from a request's arrival to the first body byte "
            "sent (its end when none was), by path.",
            "# TYPE textcalls_first_byte_seconds histogram",
        ]
        for p, path in enumerate(PATHS):
            label = f'path="{_escape(path)}"'
            start = _BUCKET + p * (len(BUCKETS) + 1)
            total = 0.0
            for k, bound in enumerate((*BUCKETS, "+Inf")):
                total += t[start + k]
                le = bound if isinstance(bound, str) else repr(bound)
                out.append(f'textcalls_first_byte_seconds_bucket{{{label},le="{le}"}} {_number(total)}')
            out.append(f"textcalls_first_byte_seconds_sum{{{label}}} {_number(t[_SUM + p])}")
            out.append(f"textcalls_first_byte_seconds_count{{{label}}} {_number(total)}")
        out.append("")
        return "\n".join(out).encode()
