"""Deterministic corpora for the benchmarks: prose, HTML/code-heavy text, tool-call-heavy text, DeepSeek."""

import json
import random
import re

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


# --- peer comparison (bench_peers.py): the same messages written as Hermes and as DeepSeek V3 ---

PEER_TOOLS = (
    "get_weather",
    "search_web",
    "create_event",
    "run_sql",
    "send_email",
    "lookup_order",
    "translate_text",
    "book_flight",
)
_PLACES = ["Paris", "Oslo", "Zürich", "São Paulo", "東京", "Kraków", "New York", "Reykjavík"]
_PHRASES = [
    'the "quick" fix',
    "line one\nline two",
    "C:\\Users\\ana\\report.txt",
    "50% off — today only",
    "naïve café ☕",
    "SELECT * FROM t WHERE a < 3",
    "tab\tseparated",
    "emoji 🌧 and ünïcode",
]
HERMES_MARKERS = ("<tool_call>", "</tool_call>")
DEEPSEEK_V3_MARKERS = (
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁calls▁end｜>",
    "<｜tool▁call▁begin｜>",
    "<｜tool▁call▁end｜>",
    "<｜tool▁sep｜>",
)


def _sentences(rng, size):
    """Prose with capitals, commas, full stops, figures and the odd ``a < b``: no markup, no code fence."""
    out, n = [], 0
    while n < size:
        words = [rng.choice(WORDS) for _ in range(rng.randint(5, 14))]
        if rng.random() < 0.3:
            words.insert(rng.randrange(len(words)), str(rng.randint(2, 2048)))
        if rng.random() < 0.05:
            words.insert(rng.randrange(len(words)), "a < b")
        if rng.random() < 0.3:
            words[rng.randrange(len(words) - 1)] += ","
        sentence = " ".join(words)
        sentence = sentence[0].upper() + sentence[1:] + rng.choice("...!?")
        out.append(sentence)
        n += len(sentence) + 1
    text = " ".join(out)
    return (text[:size].rsplit(" ", 1)[0] if len(text) > size else text).rstrip(",.!?") + "."


def _value(rng, depth):
    kind = rng.choice(("str", "str", "int", "float", "bool", "null", "list", "dict") if depth < 3 else ("str", "int"))
    if kind == "str":
        return rng.choice(_PHRASES + _PLACES) if rng.random() < 0.5 else _sentences(rng, rng.randint(10, 120))
    if kind == "int":
        return rng.randint(-1000, 10**6)
    if kind == "float":
        return round(rng.uniform(-90, 90), rng.randint(1, 6))
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "null":
        return None
    if kind == "list":
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {f"k{i}_{rng.choice(WORDS)}": _value(rng, depth + 1) for i in range(rng.randint(1, 4))}


def _arguments(rng, budget):
    """An argument object of roughly ``budget`` characters or less once written."""
    args = {"city": rng.choice(_PLACES), "days": rng.randint(1, 14)}
    while len(json.dumps(args, ensure_ascii=False)) < budget and len(args) < 20:
        args[f"{rng.choice(WORDS)}_{len(args)}"] = _value(rng, 0)
    return args


def peer_messages(count=200, seed=6):
    """``count`` messages as ``(prose, calls)``, ``calls`` a list of ``(name, arguments)``: a third prose
    only, a third one call, a third two calls; written as Hermes they are 200 to 4,000 characters.
    Arguments mix strings (quotes, escapes, newlines, non-ASCII), numbers, booleans, null, lists and
    nested objects."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        size = rng.randint(200, 4000)
        n_calls = i % 3
        calls = []
        for _ in range(n_calls):
            budget = rng.randint(20, max(20, size // (2 * n_calls) - 60))
            calls.append((rng.choice(PEER_TOOLS), _arguments(rng, budget)))
        prose_size = max(40, size - len(hermes_message("", calls)))
        out.append((_sentences(rng, prose_size), calls))
    return out


def hermes_message(prose, calls):
    """Hermes / Qwen 2.5 markup: prose, then each call as ``<tool_call>\\n{json}\\n</tool_call>``, one a line."""
    blocks = [
        "<tool_call>\n" + json.dumps({"name": name, "arguments": args}, ensure_ascii=False) + "\n</tool_call>"
        for name, args in calls
    ]
    return prose + ("\n" + "\n".join(blocks) if blocks else "")


def deepseek_v3_message(prose, calls, indent_every=4):
    """DeepSeek V3 (0324 template) markup: prose, then the calls section, one call a line; arguments whose
    number of keys is a multiple of ``indent_every`` pretty-printed over several lines."""
    if not calls:
        return prose
    begin, end, call_begin, call_end, sep = DEEPSEEK_V3_MARKERS
    blocks = []
    for name, args in calls:
        indent = 2 if len(args) % indent_every == 0 else None
        body = json.dumps(args, ensure_ascii=False, indent=indent)
        blocks.append(f"{call_begin}function{sep}{name}\n```json\n{body}\n```{call_end}")
    return prose + begin + "\n".join(blocks) + end


def token_deltas(text, markers, lo=1, hi=6, seed=5):
    """Split ``text`` as a model streams it: each marker (a special token) one delta, the rest lo..hi characters."""
    rng = random.Random(seed)
    pattern = re.compile("(" + "|".join(re.escape(m) for m in markers) + ")")
    out = []
    for piece in pattern.split(text):
        if piece in markers:
            out.append(piece)
            continue
        i = 0
        while i < len(piece):
            k = rng.randint(lo, hi)
            out.append(piece[i : i + k])
            i += k
    return out
