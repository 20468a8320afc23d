"""The negative corpus (``field/negative.jsonl``, issue 27): real texts from public issue and pull-request threads
and public web pages that show or discuss tool-call markup without calling anything (format explanations, PR
descriptions, review diffs, bug reports quoting a call's shape, vendor docs, chat-template pages), each with its
thread or page address and the tool names its markup names. 203 records (123 pull requests, 45 issues, 20 comments
or answers in threads, 15 web pages) from 200 distinct threads and pages, over 30 dialect labels. Offered exactly
those tools (the worst case; a text that names none is read with no tools given, every dialect's markup read), no
text may give a call; whole and in random splits, on both implementations.

``FALSE_CALLS`` are the texts read as calls today, each for a reason: strict expected failures, so a text that
stops giving a call must leave the list, and one that gives none today can never silently start.
"""

from __future__ import annotations

import json
import pathlib
import random

import pytest

from ..streams import feed_in_pieces

CASES = [
    json.loads(line)
    for line in (pathlib.Path(__file__).parent.parent / "field" / "negative.jsonl").read_text("utf-8").splitlines()
]
FALSE_CALLS = {
    # an example of model output in a PR's context, its fence lost where the page was read
    "neg-0134": "an output example without its fence",
    # a zero-argument GLM call quoted in a commit message's prose, unfenced
    "neg-0292": "a zero-argument call in commit-message prose",
    # a [TOOL_REQUEST] line between broken nested fences
    "neg-0305": "markup between broken nested fences",
}


def test_the_corpus_is_real_threads_with_their_sources():
    assert len(CASES) >= 200 and len({c["id"] for c in CASES}) == len(CASES)
    for case in CASES:
        assert case["source"] and case["text"] and case["notes"] and isinstance(case["tools"], list)
        source = case["source"]
        if case["kind"] == "page":  # a public web page: its address
            assert source.startswith(("https://", "http://")), case["id"]
        else:  # an issue or pull-request thread
            assert "#" in source or "/issues/" in source or "/pull/" in source, case["id"]
    assert set(FALSE_CALLS) <= {c["id"] for c in CASES}


def _tools(case: dict) -> list | None:
    """The tools the text names, offered; none named: no tools given (``tools=[]`` would read no call at all)."""
    return [{"type": "function", "function": {"name": name, "parameters": {}}} for name in case["tools"]] or None


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, id=c["id"], marks=pytest.mark.xfail(strict=True, reason=FALSE_CALLS[c["id"]]))
        if c["id"] in FALSE_CALLS
        else pytest.param(c, id=c["id"])
        for c in CASES
    ],
)
def test_a_text_that_shows_markup_gives_no_call(impl, tc, case):
    tools = _tools(case)
    assert tc.parse(case["text"], tools=tools).calls == []
    rng = random.Random(case["id"])
    cuts = sorted(rng.sample(range(1, len(case["text"])), min(6, len(case["text"]) - 1)))
    _, _, calls, _ = feed_in_pieces(impl, case["text"], cuts, tools=tools)
    assert calls == []
