"""mkdocs hook: the dialect reference of docs/dialects.md, made at build time from the table
(``textcalls.cli.dialect_rows``: ``markers.DIALECTS``, ``BLOCKS``, ``MARKERS``, ``EXAMPLES``), so it cannot drift."""

from __future__ import annotations

import html

MARK = "<!-- dialects: generated from markers.py by docs/hooks.py -->"


def _code(text: str) -> str:
    # (a "|" would end the table's cell, even in HTML: its character reference)
    return "<code>" + html.escape(text).replace("|", "&#124;").replace("\n", "<br>") + "</code>"


def reference() -> str:
    from textcalls.cli import dialect_rows

    lines = [
        "Made from the table (`markers.py`) when the docs are built; `textcalls dialects` prints the same.",
        "Each example is read with the dialects on by default (and its own when it is off by default); the tests",
        "read each with its dialect alone.",
        "",
        "| dialect | default | opens with | example | gives |",
        "|---|---|---|---|---|",
    ]
    for row in dialect_rows():
        opens = "<br>".join(_code(o) for o in row["openers"] + row["markers"])
        gives = "<br>".join(_code(f"{c['name']}({c['arguments']})") for c in row["calls"]) or "a reasoning span"
        default = "on" if row["default"] else "off: `formats=`"
        lines.append(f"| `{row['dialect']}` | {default} | {opens} | {_code(row['example'])} | {gives} |")
    return "\n".join(lines)


def on_page_markdown(markdown: str, page, config, files) -> str:  # (mkdocs' signature)
    return markdown.replace(MARK, reference()) if MARK in markdown else markdown
