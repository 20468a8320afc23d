"""Deterministic corpora for the benchmarks: prose, HTML/code-heavy text, tool-call-heavy text, DeepSeek."""

import random

WORDS = [
    "the",
    "model",
    "answered",
    "with",
    "a",
    "short",
    "plan",
    "then",
    "looked",
    "up",
    "the",
    "weather",
    "in",
    "paris",
    "and",
    "oslo",
    "before",
    "writing",
    "a",
    "careful",
    "summary",
    "of",
    "what",
    "it",
    "found",
    "for",
    "the",
    "user",
    "who",
    "asked",
    "about",
    "travel",
    "next",
    "week",
]
HTML_BITS = [
    '<div class="row">',
    "</div>",
    "<p>",
    "</p>",
    "<span>",
    "if (a < b && c > d) {",
    "x <= y",
    "</span>",
    "<br/>",
    "<code>vec<int></code>",
    "a<b",
    "<tool_calls> are listed",
    "<li>",
    "</li>",
]
SIZE = 64 * 1024


def _prose(rng, size):
    out, n = [], 0
    while n < size:
        w = rng.choice(WORDS)
        out.append(w)
        n += len(w) + 1
    return " ".join(out)[:size]


def prose(size=SIZE):
    return _prose(random.Random(1), size)


def html(size=SIZE):
    rng = random.Random(2)
    out, n = [], 0
    while n < size:
        piece = rng.choice(HTML_BITS) if rng.random() < 0.4 else rng.choice(WORDS)
        out.append(piece)
        n += len(piece) + 1
    return " ".join(out)[:size]


def calls(size=SIZE):
    rng = random.Random(3)
    out, n, i = [], 0, 0
    while n < size:
        piece = (
            _prose(rng, 400)
            + f'\n<tool_call>\n{{"name": "get_weather", "arguments": {{"city": "c{i}", "days": {i % 7}}}}}\n</tool_call>\n'
        )
        out.append(piece)
        n += len(piece)
        i += 1
    return "".join(out)


def deepseek(size=SIZE):
    rng = random.Random(4)
    out, n, i = [], 0, 0
    while n < size:
        piece = (
            _prose(rng, 400) + "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>"
            f'{{"city": "c{i}"}}<｜tool▁call▁end｜><｜tool▁calls▁end｜>'
        )
        out.append(piece)
        n += len(piece)
        i += 1
    return "".join(out)


def deltas(text, lo=1, hi=6, seed=5):
    """Split ``text`` into deltas of lo..hi characters, as a token stream would arrive."""
    rng = random.Random(seed)
    out, i = [], 0
    while i < len(text):
        k = rng.randint(lo, hi)
        out.append(text[i : i + k])
        i += k
    return out
