"""The ``textcalls`` command: ``textcalls recover [FILE]``, ``textcalls dialects``, ``textcalls proxy --upstream
URL``."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import sys
from typing import Any

from . import IMPLEMENTATION, __version__, _scan_py
from ._apis import chat_tools
from ._table import explaining
from .markers import BLOCKS, DIALECTS, EXAMPLES, MARKERS
from .messages_api import convert_tools as messages_convert
from .openai import recover_response
from .options import Options
from .parse import parse
from .proxy import (
    BODY_TIMEOUT,
    CONNECT_TIMEOUT,
    HEAD_TIMEOUT,
    HEALTH_PATH,
    IDLE_TIMEOUT,
    LOG_FORMATS,
    LOOPS,
    MAX_CLIENTS,
    MAX_CONNECTIONS,
    MAX_REQUEST,
    METRICS_PATH,
    METRICS_TOKEN_ENV,
    READ_TIMEOUT,
    check_token,
    own_path,
)
from .responses_api import convert_tools as responses_convert
from .sse import SSERecovery

# An SSE capture opens (after a BOM and blank lines) with a field or a comment, and has a data: line.
_SSE_START = re.compile(rb"(?:\xef\xbb\xbf)?[\r\n]*(?::|(?:data|event|id|retry)(?::|\r|\n))")
_SSE_DATA = re.compile(rb"(?:^|[\r\n])data:")


def _recover(text: str, *, native: bool, has_tools: bool, options: Options) -> dict:
    """A ``chat.completion`` object is recovered as a response; anything else as model text."""
    obj = _completion(text)
    if obj is not None:
        return recover_response(obj, native=native, has_tools=has_tools, options=options)
    parsed = parse(text, options=options)
    result = {"content": parsed.content, "tool_calls": [call.to_openai() for call in parsed.calls]}
    if parsed.reasoning:
        result["reasoning_content"] = parsed.reasoning
    return result


def _completion(text: str) -> dict | None:
    """``text`` read as a ``chat.completion`` object (JSON with ``choices``), else None."""
    if not text.lstrip().startswith("{"):
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) and isinstance(obj.get("choices"), list) else None


def _tools(path: str) -> list:
    """The function tools of a file (a JSON array of tools, or a request body holding ``tools``) as chat tools:
    chat, Responses or Messages shaped, told apart by the first function tool's shape."""
    try:
        with open(path, "rb") as f:
            value = json.loads(f.read())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise ValueError(f"--tools: cannot read {path} as JSON: {e}") from None
    tools = value.get("tools") if isinstance(value, dict) else value
    if not isinstance(tools, list):
        raise ValueError(f"--tools: {path} holds no tools (a JSON array of tools, or an object with a tools array)")
    first = next((t for t in tools if isinstance(t, dict)), {})
    convert = (
        chat_tools
        if "function" in first
        else responses_convert
        if first.get("type") == "function"
        else messages_convert
    )
    functions, why = convert(tools)
    if why is not None:
        raise ValueError(f"--tools: {why} ({path})")
    return functions


def _content_texts(data: bytes) -> list:
    """The assistant text of each choice of an SSE capture of ``chat.completion.chunk`` events, by index."""
    texts: dict = {}
    for line in data.splitlines():
        if not line.startswith(b"data:"):
            continue
        try:
            chunk = json.loads(line[5:])
        except ValueError:
            continue
        for choice in chunk.get("choices") or () if isinstance(chunk, dict) else ():
            delta = choice.get("delta") if isinstance(choice, dict) else None
            content = delta.get("content") if isinstance(delta, dict) else None
            if isinstance(content, str):
                texts[choice.get("index", 0)] = texts.get(choice.get("index", 0), "") + content
    return [texts[i] for i in sorted(texts, key=str)]


def _explain(texts: list, options: Options) -> list:
    """What became of each piece of markup in each text (``_table.Note``), read by the twin scanner, whose
    answers are the extension's (the extension reads plain call objects without the shared readers)."""
    out = []
    for i, text in enumerate(texts):
        with explaining() as notes:
            parsed = _scan_py.scan_whole(text, options)
        kept = {id(call) for call in parsed.calls}
        for note in notes:
            why = note.why
            if note.calls and not any(id(call) in kept for call in note.calls):
                why += "; not kept: read inside reasoning (calls_in_reasoning), or replaced by a later reading"
            calls = [{"name": c.name, "arguments": c.arguments} for c in note.calls]
            out.append({"text": i, "dialect": note.dialect, "opener": note.opener, "calls": calls, "why": why})
        if not notes:
            out.append({"text": i, "dialect": None, "opener": "", "calls": [], "why": _nothing_read(options)})
    return out


def _nothing_read(options: Options) -> str:
    off = [name for name, on in DIALECTS.items() if not on and name not in (options.formats or ())]
    hints = ["no tool-call markup was read: the text is all content"]
    if not options.ctx.has_tools:
        hints.append("bare JSON calls are read only with the request's tools (--tools)")
    hints.append(f"off by default, enabled with --formats: {', '.join(off)}")
    hints.append("markup inside a markdown code fence is text (--no-code-fences reads it)")
    return "; ".join(hints)


def _print_explained(notes: list) -> None:
    for note in notes:
        where = f"[{note['dialect']}] {note['opener']!r}: " if note["dialect"] else ""
        calls = "".join(f" -> {c['name']}({c['arguments']})" for c in note["calls"])
        sys.stderr.write(f"textcalls: text {note['text']}: {where}{note['why']}{calls}\n")


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
        run(
            upstream,
            host=host,
            port=port,
            native=args.native,
            workers=workers,
            log_format=args.log_format,
            loop=args.loop,
            **options,
        )
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
    """The command; its exit status (2 for bad input, as argparse exits)."""
    try:
        return _main(argv)
    except BrokenPipeError:  # the reader went away (``textcalls dialects | head``): not an error of ours
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _main(argv: list[str] | None) -> int:
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
    recover.add_argument(
        "--tools",
        metavar="FILE",
        help="the request's tools: a JSON array of tools (chat, Responses or Messages shaped) or a request body "
        "holding one. Bare JSON calls are read only with them, a call of a tool not offered stays text, and a "
        "block the message ends inside is a call when it names one",
    )
    recover.add_argument(
        "--explain",
        action="store_true",
        help="say, for each piece of markup, the dialect read and the call, or why it stayed text or was "
        "removed (on stderr; with --json, in the output's explain field)",
    )
    recover.add_argument("--json", action="store_true", help="with --explain: the notes as a JSON field, not on stderr")
    recover.add_argument(
        "--stream-arguments",
        action="store_true",
        help="an SSE capture: send each text call's arguments in pieces as the model wrote them",
    )
    recover.add_argument(
        "--formats",
        metavar="NAMES",
        help="the dialects read, comma-separated (default: those on by default; see 'textcalls dialects'); "
        "'+NAME' adds one to the defaults",
    )
    recover.add_argument(
        "--unknown-tools",
        choices=("keep_text", "drop", "accept"),
        default="keep_text",
        help="with --tools, a call of a tool not offered: keep its block as text (default), drop it, or accept it",
    )
    recover.add_argument(
        "--calls-in-reasoning",
        choices=("auto", "ignore", "extract"),
        default="auto",
        help="calls written inside <think> (default auto: kept when no call follows the reasoning)",
    )
    recover.add_argument(
        "--reasoning-started",
        action="store_true",
        help="the prompt opened the reasoning (the chat template ended with <think>): the text starts inside it",
    )
    recover.add_argument(
        "--prompt-tail",
        metavar="TEXT",
        default="",
        help="the end of the rendered prompt (a template that opened a reasoning span or a call block)",
    )
    recover.add_argument(
        "--no-code-fences",
        action="store_true",
        help="read markup inside markdown code fences too (by default it is text)",
    )
    listing = commands.add_parser(
        "dialects",
        help="list the dialects read, each with an example and the call it gives",
        description="The dialects textcalls reads, in table order: on or off by default, their openers, and one "
        "example each with the call it gives.",
    )
    listing.add_argument("--json", action="store_true", help="one JSON array instead of text")
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
    proxy.add_argument(
        "--loop",
        default="asyncio",
        choices=LOOPS,
        help="the event loop each process serves on: asyncio's own, uvloop (pip install 'textcalls[uvloop]'), or "
        "auto: uvloop where it is installed, else asyncio's (default asyncio)",
    )
    args = parser.parse_args(argv)
    if args.command == "proxy":
        return _proxy(args, proxy)
    if args.command == "dialects":
        return _dialects(args.json)
    if args.json and not args.explain:
        recover.error("--json goes with --explain")
    try:
        options = _options(args)
    except (TypeError, ValueError) as e:
        recover.error(str(e))
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
    has_tools = not args.no_tools
    if sse:
        recovery = SSERecovery(native=args.native, has_tools=has_tools, options=options)
        sys.stdout.buffer.write(recovery.feed(data) + recovery.close())
        sys.stdout.flush()
        if args.explain:
            _print_explained(_explain(_content_texts(data), options))
        return 0
    result = _recover(text, native=args.native, has_tools=has_tools, options=options)
    if args.explain:
        completion = _completion(text)
        texts = [text] if completion is None else _choice_texts(completion)
        notes = _explain(texts, options)
        if args.json:
            result["explain"] = notes
        else:
            _print_explained(notes)
    json.dump(result, sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")
    return 0


def _options(args) -> Options:
    """The recovery options the flags give (``Options`` checks them: TypeError or ValueError)."""
    formats = None
    if args.formats is not None:
        names = [n.strip() for n in args.formats.split(",") if n.strip()]
        if any(n.startswith("+") for n in names):
            formats = [n for n, on in DIALECTS.items() if on] + [n.lstrip("+") for n in names]
        else:
            formats = names
    tools = _tools(args.tools) if args.tools is not None else None
    if tools is not None and args.no_tools:
        raise ValueError("--tools and --no-tools contradict each other")
    return Options(
        formats=formats,
        tools=tools,
        unknown_tools=args.unknown_tools,
        calls_in_reasoning=args.calls_in_reasoning,
        code_fences=not args.no_code_fences,
        reasoning_started=args.reasoning_started,
        stream_arguments=args.stream_arguments,
        prompt_tail=args.prompt_tail,
    )


def _choice_texts(completion: dict) -> list:
    """The message content of each choice of a ``chat.completion`` (``""`` where there is none)."""
    texts = []
    for choice in completion["choices"]:
        message = choice.get("message") if isinstance(choice, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        texts.append(content if isinstance(content, str) else "")
    return texts


def dialect_rows() -> list[dict[str, Any]]:
    """Each dialect in table order (``markers.DIALECTS``): ``dialect``, ``default`` (on or off), ``openers`` and
    ``markers`` (``markers.BLOCKS``, ``markers.MARKERS``), its ``example`` (``markers.EXAMPLES``) and the ``calls``
    (``reasoning``) ``parse`` reads in it. ``textcalls dialects`` prints them; the docs' reference is made of them."""
    rows: list[dict[str, Any]] = []
    for name, on in DIALECTS.items():
        example = EXAMPLES[name]
        formats = [n for n, enabled in DIALECTS.items() if enabled] + ([] if on else [name])
        parsed = parse(example, formats=formats, tools=_EXAMPLE_TOOLS)
        rows.append(
            {
                "dialect": name,
                "default": on,
                "openers": sorted({b.opener for b in BLOCKS if b.dialect == name}),
                "markers": sorted({m.literal for m in MARKERS if m.dialect == name}),
                "example": example,
                "calls": [{"name": c.name, "arguments": c.arguments} for c in parsed.calls],
                "reasoning": parsed.reasoning,
            }
        )
    return rows


def _dialects(as_json: bool) -> int:
    """``textcalls dialects``: each dialect, on or off by default, its openers and markers, one example."""
    rows = dialect_rows()
    if as_json:
        json.dump(rows, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
        return 0
    for row in rows:
        state = "on" if row["default"] else "off (--formats +" + row["dialect"] + ")"
        sys.stdout.write(f"{row['dialect']}  [{state}]\n")
        if row["openers"] or row["markers"]:
            sys.stdout.write(f"  opens with: {', '.join(row['openers'] + row['markers'])}\n")
        sys.stdout.write("  example:    " + row["example"].replace("\n", "\n              ") + "\n")
        gives = "; ".join(f"{c['name']}({c['arguments']})" for c in row["calls"]) or f"reasoning {row['reasoning']!r}"
        sys.stdout.write(f"  gives:      {gives}\n\n")
    return 0


#: the tool the dialects' examples call
_EXAMPLE_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


if __name__ == "__main__":
    sys.exit(main())
