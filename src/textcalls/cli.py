"""The ``textcalls`` command: ``textcalls recover [FILE]``."""

from __future__ import annotations

import argparse
import json
import sys

from . import IMPLEMENTATION, __version__
from .openai import recover_response
from .parse import parse


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
    return {"content": parsed.content, "tool_calls": [call.to_openai() for call in parsed.calls]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="textcalls", description="Recover tool calls written as text markup.")
    parser.add_argument("--version", action="version", version=f"textcalls {__version__} ({IMPLEMENTATION})")
    commands = parser.add_subparsers(dest="command", required=True)
    recover = commands.add_parser(
        "recover",
        help="recover the calls in model text or a chat.completion JSON; print JSON",
        description="Read plain model text or a chat.completion JSON (stdin by default) and print the "
        "recovered result as JSON: {content, tool_calls} for text, the rewritten response for JSON.",
    )
    recover.add_argument("file", nargs="?", help="input file (default: stdin)")
    recover.add_argument(
        "--native", action="store_true",
        help="apply the native gate to a response: recover only choices that carry no structured tool_calls",
    )
    recover.add_argument(
        "--no-tools", action="store_true",
        help="the request offered no tools: a response passes through unchanged",
    )
    args = parser.parse_args(argv)
    try:
        if args.file is None:
            text = sys.stdin.read()
        else:
            with open(args.file, encoding="utf-8") as f:
                text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        parser.exit(2, f"textcalls: error: cannot read {args.file or 'stdin'}: {e}\n")
    result = _recover(text, native=args.native, has_tools=not args.no_tools)
    json.dump(result, sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
