"""The ``textcalls`` command: ``textcalls recover [FILE]``, ``textcalls proxy --upstream URL``."""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from typing import Any

from . import IMPLEMENTATION, __version__
from .openai import recover_response
from .parse import parse
from .proxy import (
    BODY_TIMEOUT,
    CONNECT_TIMEOUT,
    HEAD_TIMEOUT,
    HEALTH_PATH,
    IDLE_TIMEOUT,
    LOG_FORMATS,
    MAX_CLIENTS,
    MAX_CONNECTIONS,
    MAX_REQUEST,
    METRICS_PATH,
    METRICS_TOKEN_ENV,
    READ_TIMEOUT,
    check_token,
    own_path,
)
from .sse import SSERecovery

# An SSE capture opens (after a BOM and blank lines) with a field or a comment, and has a data: line.
_SSE_START = re.compile(rb"(?:\xef\xbb\xbf)?[\r\n]*(?::|(?:data|event|id|retry)(?::|\r|\n))")
_SSE_DATA = re.compile(rb"(?:^|[\r\n])data:")


def _recover(text: str, *, native: bool, has_tools: bool) -> dict:
    """A ``chat.completion`` object is recovered as a response; anything else as model text."""
    if text.lstrip().startswith("{"):
        try:
            obj = json.loads(text)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and isinstance(obj.get("choices"), list):
            return recover_response(obj, native=native, has_tools=has_tools)
    parsed = parse(text)
    result = {"content": parsed.content, "tool_calls": [call.to_openai() for call in parsed.calls]}
    if parsed.reasoning:
        result["reasoning_content"] = parsed.reasoning
    return result


def _is_sse(data: bytes) -> bool:
    """Whether ``data`` reads as an SSE capture (see ``_SSE_START``) rather than text or JSON."""
    return _SSE_START.match(data) is not None and _SSE_DATA.search(data) is not None


def _listen(value: str) -> tuple:
    """``HOST:PORT`` (``[v6]:PORT`` too) as (host, port)."""
    host, sep, port = value.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not (port.isascii() and port.isdigit()) or int(port) > 65535:
        raise ValueError(f"--listen must be HOST:PORT with a port from 0 to 65535, not {value!r}")
    return host, int(port)


def _seconds(flag: str, value) -> float:
    """A flag's number of seconds: finite and > 0."""
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"{flag} must be a number of seconds > 0, not {value!r}")
    return seconds


def _count(flag: str, value) -> int:
    """A flag's integer: >= 1."""
    text = str(value)
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise ValueError(f"{flag} must be an integer >= 1, not {value!r}")
    return int(text)


def _path_flag(flag: str, value: str) -> str | None:
    """A path the proxy answers itself, or None for ``off``."""
    return None if value == "off" else own_path(flag, value)


def _proxy(args, parser: argparse.ArgumentParser) -> int:
    from .proxy import check_upstream, run

    try:
        upstream = check_upstream(args.upstream)
        host, port = _listen(args.listen)
        options: dict[str, Any] = {
            "connect_timeout": _seconds("--connect-timeout", args.connect_timeout),
            "read_timeout": _seconds("--read-timeout", args.read_timeout),
            "body_timeout": _seconds("--body-timeout", args.body_timeout),
            "head_timeout": _seconds("--head-timeout", args.head_timeout),
            "idle_timeout": _seconds("--idle-timeout", args.idle_timeout),
            "max_clients": None if args.max_clients is None else _count("--max-clients", args.max_clients),
            "max_connections": _count("--max-connections", args.max_connections),
            "max_body": _count("--max-body", args.max_body) << 20,
            "metrics_path": _path_flag("--metrics-path", args.metrics_path),
            "health_path": _path_flag("--health-path", args.health_path),
        }
        if args.stream_arguments:  # (create_app's default otherwise)
            options["stream_arguments"] = True
        if args.metrics_token is not None:
            options["metrics_token"] = check_token("--metrics-token", args.metrics_token)
        elif os.environ.get(METRICS_TOKEN_ENV) is not None:
            options["metrics_token"] = check_token(METRICS_TOKEN_ENV, os.environ[METRICS_TOKEN_ENV])
        if options["metrics_path"] is not None and options["metrics_path"] == options["health_path"]:
            raise ValueError(f"--metrics-path and --health-path must differ, not both {args.metrics_path!r}")
        workers = _count("--workers", args.workers)
    except ValueError as e:
        parser.error(str(e))
    try:
        run(upstream, host=host, port=port, native=args.native, workers=workers, log_format=args.log_format, **options)
    except ValueError as e:  # --workers on a platform or port that cannot have them
        parser.error(str(e))
    except ImportError as e:
        parser.exit(1, f"textcalls proxy: error: {e}\n")
    except OSError as e:  # the address cannot be resolved or bound
        parser.exit(2, f"textcalls proxy: error: cannot listen on {args.listen}: {e}\n")
    except KeyboardInterrupt:
        pass
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="textcalls", description="Recover tool calls written as text markup.")
    parser.add_argument("--version", action="version", version=f"textcalls {__version__} ({IMPLEMENTATION})")
    commands = parser.add_subparsers(dest="command", required=True)
    recover = commands.add_parser(
        "recover",
        help="recover the calls in model text, a chat.completion JSON or an SSE capture",
        description="Read plain model text, a chat.completion JSON or an SSE capture of chat.completion.chunk "
        "events (stdin by default). Print the recovered result: {content, tool_calls} JSON for text, the "
        "rewritten response for JSON, the recovered SSE for a capture (detected by its first line).",
    )
    recover.add_argument("file", nargs="?", help="input file (default: stdin)")
    recover.add_argument(
        "--native",
        action="store_true",
        help="apply the native gate to a response: recover only choices that carry no structured tool_calls",
    )
    recover.add_argument(
        "--no-tools",
        action="store_true",
        help="the request offered no tools: a response passes through unchanged",
    )
    proxy = commands.add_parser(
        "proxy",
        help="run an OpenAI-compatible reverse proxy that recovers the calls (needs textcalls[proxy])",
        description="Relay every request to the upstream. Answers to POST /v1/chat/completions that offer "
        "tools come back with their text tool calls recovered, streamed or not. Logs one line per request; "
        "serves its metrics and health itself.",
    )
    # errors on one line, for this subcommand only (the parser class is shared with "recover")
    proxy.error = lambda message: proxy.exit(2, f"textcalls proxy: error: {message}\n")  # type: ignore[method-assign]
    proxy.add_argument(
        "--upstream",
        required=True,
        metavar="URL",
        help="the OpenAI-compatible server's root, e.g. http://127.0.0.1:8000 (request paths, "
        "/v1/... included, are appended to it)",
    )
    proxy.add_argument(
        "--listen",
        default="127.0.0.1:8787",
        metavar="HOST:PORT",
        help="address to serve on (default 127.0.0.1:8787; port 0 picks a free one)",
    )
    gate = proxy.add_mutually_exclusive_group()
    gate.add_argument(
        "--native",
        dest="native",
        action="store_true",
        default=True,
        help="the upstream returns structured calls itself: recover only choices without any (default)",
    )
    gate.add_argument(
        "--prompt-guided", dest="native", action="store_false", help="tools are described in the prompt: always recover"
    )
    proxy.add_argument(
        "--stream-arguments",
        action="store_true",
        help="streamed chat completions: send a text call's arguments in pieces as the model writes them "
        "(JSON-bodied calls), not whole when its block ends",
    )
    proxy.add_argument(
        "--connect-timeout",
        default=CONNECT_TIMEOUT,
        metavar="SECONDS",
        help="seconds to open an upstream connection (else 502), and to wait for a free one when "
        f"--max-connections are busy (else 503) (default {CONNECT_TIMEOUT:g})",
    )
    proxy.add_argument(
        "--read-timeout",
        default=READ_TIMEOUT,
        metavar="SECONDS",
        help="seconds the upstream may stay silent: before it answers (else 504) or within its answer "
        f"(else the answer is cut off) (default {READ_TIMEOUT:g})",
    )
    proxy.add_argument(
        "--body-timeout",
        default=BODY_TIMEOUT,
        metavar="SECONDS",
        help=f"seconds a client has to send its whole request body (else 408) (default {BODY_TIMEOUT:g})",
    )
    proxy.add_argument(
        "--head-timeout",
        default=HEAD_TIMEOUT,
        metavar="SECONDS",
        help="seconds a client has to send a whole request head, from its connection's opening or, kept alive, "
        f"from the next head's first byte (else the connection is closed, unanswered) (default {HEAD_TIMEOUT:g})",
    )
    proxy.add_argument(
        "--idle-timeout",
        default=IDLE_TIMEOUT,
        metavar="SECONDS",
        help=f"seconds a kept-alive client connection may wait for its next request (default {IDLE_TIMEOUT:g})",
    )
    proxy.add_argument(
        "--max-clients",
        metavar="N",
        help="cap on open client connections, per worker: one more closes the longest idle one, or is refused "
        f"when all are busy (default {MAX_CLIENTS}, or what the descriptor limit, ulimit -n, leaves after "
        "--max-connections and 32 more)",
    )
    proxy.add_argument(
        "--max-connections",
        default=MAX_CONNECTIONS,
        metavar="N",
        help=f"cap on concurrent upstream connections, per worker (default {MAX_CONNECTIONS})",
    )
    proxy.add_argument(
        "--max-body",
        default=MAX_REQUEST >> 20,
        metavar="MIB",
        help="cap, in MiB, on a request body the proxy reads, the recovered paths' (else 413); other paths' "
        f"bodies are streamed upstream as they come (default {MAX_REQUEST >> 20})",
    )
    proxy.add_argument(
        "--workers",
        default=1,
        metavar="N",
        help="processes serving the port, sharing it with SO_REUSEPORT (Linux, macOS; a fixed port); one that "
        "dies is replaced, and they all stop when this one dies (default 1)",
    )
    proxy.add_argument(
        "--metrics-path",
        default=METRICS_PATH,
        metavar="PATH",
        help=f"where the proxy answers GET with its metrics (Prometheus text format), never relayed; "
        f"'off': relay that path too (default {METRICS_PATH})",
    )
    proxy.add_argument(
        "--health-path",
        default=HEALTH_PATH,
        metavar="PATH",
        help=f"where the proxy answers GET with 200 'ok' while it runs, never relayed; 'off': relay that path too "
        f"(default {HEALTH_PATH})",
    )
    proxy.add_argument(
        "--metrics-token",
        metavar="TOKEN",
        help=f"the metrics answer only requests with 'Authorization: Bearer TOKEN' (else 401); the health answer "
        f"stays open. Default: ${METRICS_TOKEN_ENV} if set (better than the flag: the command line is visible "
        "to every user of the machine), else none",
    )
    proxy.add_argument(
        "--log-format",
        default="text",
        choices=LOG_FORMATS,
        help="one line per request and per event, as text or as one JSON object (default text)",
    )
    args = parser.parse_args(argv)
    if args.command == "proxy":
        return _proxy(args, proxy)
    try:
        if args.file is None:
            data = sys.stdin.buffer.read()
        else:
            with open(args.file, "rb") as f:
                data = f.read()
        sse = _is_sse(data)
        if not sse:  # as text-mode reading gives it: UTF-8, universal newlines
            text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except (OSError, UnicodeDecodeError) as e:
        parser.exit(2, f"textcalls: error: cannot read {args.file or 'stdin'}: {e}\n")
    if sse:
        recovery = SSERecovery(native=args.native, has_tools=not args.no_tools)
        sys.stdout.buffer.write(recovery.feed(data) + recovery.close())
        sys.stdout.flush()
        return 0
    result = _recover(text, native=args.native, has_tools=not args.no_tools)
    json.dump(result, sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
