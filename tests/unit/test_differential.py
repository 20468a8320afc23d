"""Bounded differential fuzzing of every layer, Cython against the twin and each layer against ``parse``.

Random texts are built from the whole table (every opener, closer and marker literal and proper prefixes
of them), tag openers with attribute text, code-fence runs (three or more backticks, or two, at line starts
after 0-3 or 4 spaces, and ``~~~``, which is no fence), markup inside fences, valid and broken call bodies
of every grammar, ``<think>`` spans ending in calls or not, bare JSON calls of offered tools at a message's
start (alone, or in one fence) and end, Harmony tokens, prose, CR/CRLF, non-ASCII and lone surrogates;
random option sets cover ``formats`` (``None``, the defaults, opt-in formats, random subsets, none),
``max_block``, ``tools`` (none offered, tools with and without schemas), ``unknown_tools``,
``calls_in_reasoning``, ``code_fences``, ``reasoning_started``, ``trim_blanks`` and ``stream_arguments`` (each value
given, or the option left out), and ``prompt_tail`` now and then; with ``trim_blanks=True`` every comparison of content with ``parse``'s is exact
(without it a stream's content is compared stripped: ``parse`` strips). Three layers are compared, each on both implementations (``textcalls._scan.impl`` switched):

- ``StreamScrubber``: per-feed output, reasoning, call counts and call events identical between Cython and the
  twin for the same split; any split gives the one-feed result; ``parse`` agrees (content, calls, reasoning,
  removed). With ``stream_arguments=True`` the events keep their rules (``event_faults``) and the option
  changes nothing else (per feed, the same split with the option off); without it there are none.
- ``recover_stream``: one or two choices interleaved in random deltas (role chunk first, finish last,
  sometimes a structured call or a usage chunk), ``native`` True and False: per choice the content equals
  ``parse``'s, the calls equal ``parse``'s when the gate allows (indexes after the structured ones),
  ``finish_reason`` is ``"tool_calls"`` iff calls were recovered, ``reasoning_content`` concatenates to
  what the scrubber moved out; Cython and twin give the same chunks (call ids masked); a chunk that needs
  no change (by a reference scrubber fed the same deltas) comes back as the very same object, and only then.
  The same texts as whole responses: ``recover_response`` and ``recover_response_bytes`` agree with ``parse``.
- ``SSERecovery``: the same chunk stream as SSE bytes (LF/CRLF, comments, escaped forms, ``[DONE]``) fed in
  random byte splits, 1-byte splits and splits inside UTF-8 sequences: the same bytes for every split and
  for both implementations (call ids masked), and the events decode to layer 2's chunks.

With ``stream_arguments=True`` layers 2 and 3 also run the option off on the same chunks: what a client rebuilds
(``rebuild``) equals it once the partial calls left by abandoned ones are taken out (``check_streamed``), and
the chunks that need no change follow a reference that reads the call events (``reference_streamed``).

Budget (environment): ``TEXTCALLS_FUZZ_SEED`` (any string; default fixed), ``TEXTCALLS_FUZZ_CASES``
(cases per layer), ``TEXTCALLS_FUZZ_SECONDS`` (seconds for the three layers together: without it the default
case counts run, capped by a safety deadline; with it, cases run until the time is up), ``TEXTCALLS_FUZZ_START``
(the first case number: with ``TEXTCALLS_FUZZ_CASES=1`` it replays one case) and ``TEXTCALLS_FUZZ_SHRINK_SECONDS``.
Case ``k`` of a layer depends only on the seed, the layer and ``k``. A failure is shrunk (pieces, splits and
options dropped greedily) and reported as a reproduction: options, texts, splits and the two outputs.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import json
import os
import random
import re
import time
import traceback
import warnings

import pytest

from textcalls import _scan, _scan_py, _table
from textcalls.chat_bytes import recover_response_bytes
from textcalls.markers import ATTR_MAX, BLOCKS, DIALECTS, MARKERS
from textcalls.openai import recover_response
from textcalls.options import Options
from textcalls.parse import parse
from textcalls.screens import may_hold_bare_call
from textcalls.sse import SSERecovery
from textcalls.stream import ChunkRecovery, abandoned_error_chunk, recover_stream

from ..conftest import IMPLS
from ..gateway_support.sse_events import events

# --- budget --------------------------------------------------------------------------------------

SEED = os.environ.get("TEXTCALLS_FUZZ_SEED", "20261130")
START = int(os.environ.get("TEXTCALLS_FUZZ_START", "0"))
_SECONDS = os.environ.get("TEXTCALLS_FUZZ_SECONDS")
_CASES = os.environ.get("TEXTCALLS_FUZZ_CASES")
SHRINK_SECONDS = float(os.environ.get("TEXTCALLS_FUZZ_SHRINK_SECONDS", "20"))
#: share of the time budget, and default case count, per layer (the defaults take ~50 s on 2 cores)
LAYERS = {"scrubber": (0.25, 8500), "chunks": (0.35, 1900), "sse": (0.40, 1000)}
#: without TEXTCALLS_FUZZ_SECONDS, a safety deadline for the default case counts (seconds, all layers)
SAFETY_SECONDS = 80.0
MAX_REPORTS = 6  # distinct failures shrunk and reported per layer

#: the reasoning policies and options of the scrubber under test (the API grows: follow it)
POLICIES = getattr(_table, "CALLS_IN_REASONING", ("ignore", "extract"))
STARTED = "reasoning_started" in inspect.signature(parse).parameters
MODS = [(p.id, p.values[0]) for p in IMPLS if p.values[0] is not None]  # ("c", _scan_c)?, ("py", _scan_py)
STATS: dict = {}  # layer -> cases run (read by long local runs)


def _budget(layer: str) -> tuple:
    share, default_cases = LAYERS[layer]
    if _SECONDS is not None:
        seconds = float(_SECONDS) * share
        cases = int(_CASES) if _CASES else 1 << 62
    else:
        seconds = SAFETY_SECONDS * share
        cases = int(_CASES) if _CASES else default_cases
    return cases, seconds


@contextlib.contextmanager
def using(mod):
    """Run the public API (parse, recover_stream, SSERecovery) on ``mod``."""
    saved = _scan.use(mod)
    try:
        yield
    finally:
        _scan.use(saved)


# --- vocabulary ----------------------------------------------------------------------------------

NAMES = ["f", "g", "lookup", "get_weather", "rm_rf"]
SCHEMA = {
    "a": {"type": "integer"},
    "b": {"type": "number"},
    "q": {"type": "string"},
    "on": {"type": "boolean"},
    "obj": {"type": "object"},
    "arr": {"type": "array"},
    "nil": {"type": "null"},
    "mix": {"type": ["integer", "string"]},
    "city": {"type": "string"},
}
PARAMS = list(SCHEMA)
LITERALS = sorted(
    {b.opener for b in BLOCKS if b.anchor is None}
    | {b.closer for b in BLOCKS if b.closer}
    | {m.literal for m in MARKERS}
)
WORDS = [
    "Sure.",
    "Let me check",
    " the weather",
    "a < b",
    "x > y",
    "[1, 2]",
    "{a}",
    "tool_call",
    "functions",
    "call",
    "think",
    "TOOL_CALLS",
    "json",
    "name",
    "arguments",
    " ",
    "  ",
    "ok",
    "Done.",
    "<b>bold</b>",
    "if a<b and c>d:",
    "f(x)",
    "```",
    "`code`",
    "'",
    "=",
    ":",
    ";",
    "functools",
    "func",
    "to=functions.f",
]
PROSE = [
    "The",
    " answer",
    " is",
    " 42.",
    " Let",
    " me",
    " look",
    " that",
    " up",
    ".",
    ",",
    " x",
    " y",
    "Sure",
    " café",
    " — ",
    " (ok)",
    " 1+1=2",
    " a-b",
    " well",
    "!",
    "?",
    " I'll",
    " call",
    " the",
    " tool",
    "s",
    "ing",
]
# "ļ" (U+013C) and "㰼" (U+3C3C) hold the byte 0x3C of "<": wide text is searched by memchr on that byte
UNICODE = ["é", "€", "｜", "😀", "▁", "\u00a0", "中文", "\u2028", "\ufeff", "ｔｏｏｌ", "ļ", "㰼"]
PUNCT = ["<", ">", "/", "|", "[", "]", "{", "}", '"', "\\", "`", ":", ",", "=", "_", " ", "\t"]
ALPHABET = "<>/|[]{}\"'\\`:=_ \n\tabcfilnostuéä｜▁\r"
HIGH = ["\ud800", "\udbff", "\ud83d"]  # lone surrogates: one kind per case, so that none pairs up in JSON
LOW = ["\udc00", "\udfff", "\ude00"]
STRINGS = [
    "x",
    "Paris",
    "",
    "a b",
    "</tool_call>",
    "<tool_call>",
    "<|tool_call_end|>",
    "<｜tool▁call▁end｜>",
    '"',
    "\\",
    "\n",
    "é€",
    "😀",
    "}",
    "]",
    "</parameter>",
    "<|call|>",
    "```",
    "</think>",
    '{"a": 1}',
    "<tool_call|>",
    "</function>",
    "[TOOL_CALLS]",
    "</｜DSML｜invoke>",
]
DS_SEP = "<\uff5ctool\u2581sep\uff5c>"


class G:
    """Generation context: the random source, the case's lone-surrogate kind, and whether its calls stream
    (``stream_arguments=True``: then values are longer than a piece's lag now and then, and odd now and then)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.surrogates = rng.choice([HIGH, LOW])
        self.streamed = False

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, seq):
        return self.rng.choice(seq)


def _value(g: G, depth: int = 0):
    if (g.streamed and g.chance(0.2)) or g.chance(0.05):  # (runs of 16 bytes and more: the scanners' block reads)
        return long_string(g)
    r = g.rng.random()
    if r < 0.25:
        return g.rng.randint(-5, 100)
    if r < 0.32:
        return g.pick([1.5, -0.25, 1e3, 0.0])
    if r < 0.65:
        s = g.pick(STRINGS)
        return s + g.pick(g.surrogates) if g.chance(0.05) else s
    if r < 0.75:
        return g.pick([True, False, None])
    if depth >= 2:
        return "v"
    if r < 0.87:
        return [_value(g, depth + 1) for _ in range(g.rng.randint(0, 3))]
    return {g.pick(PARAMS): _value(g, depth + 1) for _ in range(g.rng.randint(0, 2))}


def _args(g: G) -> dict:
    return {g.pick(PARAMS): _value(g) for _ in range(g.rng.randint(0, 3))}


def _dumps(g: G, obj) -> str:
    text = json.dumps(obj, ensure_ascii=g.chance(0.4), separators=g.pick([None, (",", ":"), (", ", ": ")]))
    if g.streamed and isinstance(obj, dict) and g.chance(0.1):  # a last member parse reads or writes otherwise
        text = text[:-1] + (", " if obj else "") + f'"{g.pick(["z", "z", "name"])}": {g.pick(ODD_VALUES)}' + "}"
    return text


#: JSON values ``parse`` writes otherwise (or reads otherwise, or not at all): a call streamed with them is
#: abandoned; as a last ``"name"`` member of a call object, they rename the call
ODD_VALUES = ["1e5", "1E2", "-0.0", "0.10", "NaN", "-Infinity", "tru", "01", '"rm"', '"\\ud83d"', "[1,]"]


def long_string(g: G) -> str:
    """A string longer than a piece's lag (``LAG``) now and then: prose, markup, non-ASCII."""
    return "".join(g.pick(PROSE + STRINGS + UNICODE) for _ in range(g.rng.randint(8, 60)))


def json_call(g: G) -> str:
    """A JSON call object: valid most of the time, sometimes string arguments, nulls or broken JSON."""
    obj = {"name": g.pick(NAMES)}
    key = g.pick(["arguments"] * 5 + ["parameters", "args", "input"])
    r = g.rng.random()
    if r < 0.75:
        obj[key] = _args(g)
    elif r < 0.85:
        obj[key] = json.dumps(_args(g))
    elif r < 0.95:
        obj[key] = g.pick([None, "", "[]", 1])
    if g.chance(0.05):
        obj = {"arguments": obj.get(key, {}), "name": obj["name"]}
    text = _dumps(g, obj)
    return broken_json(g, text) if g.chance(0.15) else text


def broken_json(g: G, text: str) -> str:
    r = g.rng.random()
    i = g.rng.randint(0, len(text))
    if r < 0.3:
        return text[:i]  # unclosed
    if r < 0.55:
        return text[:i] + '"' + text[i:]  # a stray quote
    if r < 0.7:
        return text.replace('"', "", 2)  # relaxed: bare key
    if r < 0.8:
        return text.replace('"', "'")
    if r < 0.9:
        return "```json\n" + text + "\n```"
    return text[:-1] + ",}" if text.endswith("}") else text + ","


def json_calls(g: G) -> str:
    r = g.rng.random()
    if r < 0.6:
        return json_call(g)
    if r < 0.9:
        return "[" + ", ".join(json_call(g) for _ in range(g.rng.randint(0, 3))) + "]"
    return "; ".join(json_call(g) for _ in range(2))


#: code as XML values hold it: a "{" then an odd number of quotes (no JSON: the closer is not hidden)
CODE = [
    'print(f"{x}")',
    'd = {"k": 1, "s": "',
    "if (a) { return '}'; }",
    # "<" in code and HTML, and near misses of tags (a value's "<" the extension passes by its next character,
    # and the XML tag reader's literals: issue 31)
    "return x < 3 and '<tag>' != \"q\" or y <= z  # a <b> c",
    "<td>a</td> <to be> </para> <parameter <|x",
]


def _plain(g: G) -> str:
    if g.chance(0.15):
        return g.pick(CODE)
    v = _value(g)
    return v if isinstance(v, str) else json.dumps(v)


def qwen_xml(g: G) -> str:
    nl = g.pick(["\n", ""])
    params = "".join(
        f"<parameter={p}>{nl}{_plain(g)}{nl}</parameter>{nl}" for p in g.rng.sample(PARAMS, g.rng.randint(0, 2))
    )
    return f"{nl}<function={g.pick(NAMES)}>{nl}{params}</function>{nl}"


def glm(g: G) -> str:
    args = "".join(
        f"<arg_key>{p}</arg_key><arg_value>{_plain(g)}</arg_value>" for p in g.rng.sample(PARAMS, g.rng.randint(0, 2))
    )
    return f"{g.pick(NAMES)}{g.pick(['', chr(10)])}{args}"


def invoke(g: G, prefix: str = "", string_attr: bool = False) -> str:
    params = ""
    for p in g.rng.sample(PARAMS, g.rng.randint(0, 2)):
        attr = f' string="{g.pick(["true", "false"])}"' if string_attr else ""
        params += f'<{prefix}parameter name="{p}"{attr}>{_plain(g)}</{prefix}parameter>'
    if string_attr and g.chance(0.3):
        params = json.dumps(_args(g))
    return f'<{prefix}invoke name="{g.pick(NAMES)}">{params}</{prefix}invoke>'


def k3_call(g: G) -> str:
    """A Kimi K3 XTML call: typed arguments between control tokens."""
    args = ""
    for p in g.rng.sample(PARAMS, g.rng.randint(0, 2)):
        kind, value = g.pick([("string", _plain(g)), ("number", "42"), ("boolean", "true"), ("object", '{"a": 1}')])
        args += f'<|open|>argument key="{p}" type="{kind}"<|sep|>{value}<|close|>argument<|sep|>'
    return f'<|open|>call tool="{g.pick(NAMES)}" index="1"<|sep|>{args}<|close|>call<|sep|>'


def pythonic(g: G) -> str:
    def one():
        args = ", ".join(
            f"{p}={g.pick(['1', repr('x'), 'True', '[1, 2]', repr(g.pick(STRINGS))])}"
            for p in g.rng.sample(PARAMS, g.rng.randint(0, 2))
        )
        return f"{g.pick(NAMES)}({args})"

    return "[" + ", ".join(one() for _ in range(g.rng.randint(1, 2))) + "]"


def gemma_body(g: G, quote: str) -> str:
    args = ",".join(
        f"{p}:{quote}{g.pick(STRINGS)}{quote}" if g.chance(0.6) else f"{p}:{g.rng.randint(0, 9)}"
        for p in g.rng.sample(PARAMS, g.rng.randint(0, 2))
    )
    return f"call:{g.pick(NAMES)}{{{args}}}"


def body_for(g: G, grammar: str, opener: str) -> str:
    """A body for a block of ``grammar`` (mostly one the grammar accepts)."""
    sep = DS_SEP.replace("\uff5c", "|") if "|tool" in opener else DS_SEP
    other = DS_SEP if sep != DS_SEP else DS_SEP.replace("\uff5c", "|")  # the bars the opener does not have
    if g.chance(0.1):  # read only after an ASCII opener (the grammar makes them full-width first)
        sep = other
    if grammar in ("hermes", "wrapped_call"):
        r = g.rng.random()
        if r < 0.7 or grammar == "wrapped_call":  # padded, now and then, by whitespace JSON does not have
            return g.pick(["", "", "", "\u3000", "\x1c"]).join(["", json_calls(g), ""])
        return qwen_xml(g) if r < 0.85 else glm(g)
    if grammar == "qwen3_xml":
        return qwen_xml(g)
    if grammar == "deepseek":
        r = g.rng.random()
        if r < 0.5:
            if g.chance(0.15):  # the opener's bars in the name, the other bars before the object
                return f"{g.pick(NAMES)}{sep}{g.pick(NAMES)}{other}{_dumps(g, _args(g))}"
            return f"{g.pick(NAMES)}{sep}{_dumps(g, _args(g))}"
        if r < 0.8:
            return f"function{sep}{g.pick(NAMES)}\n```json\n{_dumps(g, _args(g))}\n```"
        return json_call(g)
    if grammar == "dsml":  # V3.2/V4, or V4.1's space after the bar
        return invoke(g, g.pick(["\uff5cDSML\uff5c", "\uff5cDSML\uff5c "]), string_attr=True)
    if grammar == "kimi_k3":
        return "".join(k3_call(g) for _ in range(g.rng.randint(1, 2)))
    if grammar == "kimi_k2":
        return f"functions.{g.pick(NAMES)}:{g.rng.randint(0, 3)}<|tool_call_argument_begin|>{_dumps(g, _args(g))}"
    if grammar == "minimax_m2":
        return invoke(g)
    if grammar == "json_lines_or_array":
        return "\n".join(json_call(g) for _ in range(g.rng.randint(1, 2))) if g.chance(0.5) else json_calls(g)
    if grammar == "mistral":
        name, args = g.pick(NAMES), _dumps(g, _args(g))
        return g.pick(
            [f"[{json_call(g)}]", f"{name}{args}", f"{name}[ARGS]{args}", f"{name}[CALL_ID]a1B2c3D4e[ARGS]{args}"]
        )
    if grammar == "gemma4":
        return gemma_body(g, '<|"|>')
    if grammar == "function_gemma":
        return gemma_body(g, "<escape>")
    if grammar == "pythonic_list":
        return pythonic(g)
    if grammar == "pythonic_lines":
        return pythonic(g)[1:-1].replace(", ", "\n")
    if grammar == "json_calls":
        return json_calls(g)
    if grammar == "step3":
        return f"function<\uff5ctool_sep\uff5c>{invoke(g, 'steptml:')}"
    if grammar == "apertus":
        return json.dumps([{g.pick(NAMES): _args(g)} for _ in range(g.rng.randint(1, 2))])
    if grammar == "arrow_call":  # MiniMax's {tool => "NAME", args => {--key "v"}}
        flags = " ".join(
            f"--{p} {g.pick([json.dumps(_plain(g)), '20', 'true', 'word'])}"
            for p in g.rng.sample(PARAMS, g.rng.randint(0, 2))
        )
        args = g.pick([f", args => {{{flags}}}", f", args => {_dumps(g, _args(g))}", ""])
        return g.pick(["", "\n"]) + f'{{tool => "{g.pick(NAMES)}"{args}}}' + g.pick(["", "\n"])
    if grammar == "builtin_call":  # after "<|python_tag|>NAME.call(": keyword arguments and ")"
        return ", ".join(f"{p}={json.dumps(_plain(g))}" for p in g.rng.sample(PARAMS, g.rng.randint(0, 2))) + ")"
    if grammar == "dsml_toolcall":
        return (
            invoke(g, "\uff5cDSML\uff5c", string_attr=True)
            if g.chance(0.3)
            else (
                f"{g.pick(NAMES)}\n```json\n{_dumps(g, _args(g))}\n```"
                if g.chance(0.5)
                else f"{g.pick(NAMES)}\n{_dumps(g, _args(g))}"
            )
        )
    if grammar == "harmony_text":  # after "to=" (anchored at the f of "functions")
        return (
            f"functions.{g.pick(NAMES)}"
            + g.pick([" json", " <|constrain|>json<|message|>", "commentary json"])
            + (_dumps(g, _args(g)))
        )
    return json_call(g)  # a grammar this generator does not know yet (see the last test)


#: the grammars ``body_for`` writes bodies for (any other gets a JSON call object)
KNOWN_GRAMMARS = {
    "hermes",
    "wrapped_call",
    "qwen3_xml",
    "deepseek",
    "dsml",
    "kimi_k2",
    "minimax_m2",
    "json_lines_or_array",
    "mistral",
    "gemma4",
    "function_gemma",
    "pythonic_list",
    "pythonic_lines",
    "json_calls",
    "step3",
    "apertus",
    "function",
    "harmony",
    "arrow_call",
    "builtin_call",
    "dsml_toolcall",
    "harmony_text",
    "kimi_k3",
}


def block(g: G) -> str:
    """A whole block of a random kind: opener (with attribute text for tags), body, closer, and maybe the
    section markers of its dialect around it."""
    return block_of(g, g.pick(BLOCKS), wrap=True)


def block_of(g: G, b, wrap: bool = False) -> str:
    body = body_for(g, b.grammar, b.opener)
    if b.grammar == "function":
        head = g.pick([f"={g.pick(NAMES)}>", f' name="{g.pick(NAMES)}">'])
        body = head + (_dumps(g, _args(g)) if g.chance(0.8) else qwen_xml(g)[len("<function=f>") :])
    elif b.grammar == "harmony":
        name, args = g.pick(NAMES), _dumps(g, _args(g))
        if b.opener.startswith("<|channel|>"):
            body = f" to=functions.{name} <|constrain|>json<|message|>{args}"
        else:
            body = f" to=functions.{name}<|channel|>commentary json<|message|>{args}"
    elif b.delimiters:
        body = g.pick([">", ">", ">\n", ' id="call_0">', "|>", "\n>", ' name="x" >']) + body
    if g.chance(0.12):
        body = broken_json(g, body)
    closer = b.closer or ""
    if closer and g.chance(0.08):
        closer = closer[: g.rng.randint(0, len(closer) - 1)]  # unterminated, or a prefix of the closer
    text = b.opener + body + closer
    wrappers = [m.literal for m in MARKERS if m.dialect == b.dialect and not m.reasoning and not m.always]
    if wrap and wrappers and g.chance(0.4):
        before = [w for w in wrappers if any(m.literal == w and m.before for m in MARKERS)]
        after = [w for w in wrappers if w not in before]
        # SECTION_GAP_MAX is 256; text between makes a marker text (the scrubber must forget the block it saw)
        ws = g.pick(["", "\n", " ", " " * g.rng.randint(250, 260), " ok ", "x"])
        text = (g.pick(before) + ws if before else "") + text + (ws + g.pick(after) if after else "")
    return text


def tag(g: G) -> str:
    b = g.pick([b for b in BLOCKS if b.delimiters])
    attr = g.pick(
        [
            'id="call_0"',
            'name="f"',
            "",
            "x" * g.rng.randint(ATTR_MAX - 6, ATTR_MAX + 3),
            "a<b",
            "'q'",
            "\n",
            "to=functions.f",
        ]
    )
    delim = g.pick(list(b.delimiters) + ["able", "s", "_x"])
    return b.opener + delim + attr + g.pick([">", ">", "", "|>"])


def fence(g: G) -> str:
    """A backtick run, mostly at a line start (0-3 spaces: a fence if 3 or more; 4: not); ``~~~`` is no fence."""
    if g.chance(0.2):
        return g.pick(["x ``` y", " ```", "a```b", "``", "`", "~~~", "\n~~~json\n"])
    return (
        g.pick(["\n", "", "\r\n"])
        + " " * g.pick([0, 0, 1, 2, 3, 4])
        + "`" * g.pick([3, 3, 3, 4, 2, 5])
        + g.pick(["", "", "json", "xml", "py"])
        + g.pick(["\n", "\n", "", "\r\n", " "])
    )


def call_block(g: G, opts: dict) -> str:
    """A whole block of a dialect the case enables (of any dialect if it enables none)."""
    formats = opts.get("formats")
    on = [b for b in BLOCKS if (DIALECTS[b.dialect] if formats is None else b.dialect in formats)]
    if any(b.dialect == "hermes" for b in on) and g.chance(0.35):  # the commonest markup, mostly well formed
        return "<tool_call>" + g.pick(["", "\n"]) + bare_call(g, opts) + g.pick(["", "\n"]) + "</tool_call>"
    return block_of(g, g.pick(on or BLOCKS), wrap=True)


def bare_call(g: G, opts: dict) -> str:
    """JSON calls as written without markup, in the shapes a bare call may take (docs/scanning.md, "Bare JSON calls"):
    ``{"name", "arguments"|"parameters"}`` with ``type``/``id`` or OpenAI's ``{"type", "function"}``, one, an
    array or ``;``-separated; mostly of an offered tool, sometimes of another or with a key no call has."""
    offered = [t["function"]["name"] for t in opts.get("tools") or []]

    def one() -> str:
        name = g.pick(offered) if offered and g.chance(0.85) else g.pick(NAMES)
        args = _args(g) if g.chance(0.75) else g.pick([None, "", json.dumps(_args(g))])
        r = g.rng.random()
        if r < 0.55:
            obj = {"name": name, g.pick(["arguments", "arguments", "parameters"]): args}
        elif r < 0.7:
            obj = {"type": "function", "id": "call_1", "name": name, "arguments": args}
            obj = dict(g.rng.sample(sorted(obj.items()), len(obj))) if g.chance(0.5) else obj
        elif r < 0.9:
            fn = {"name": name, "arguments": args if g.chance(0.3) else json.dumps(args)}
            obj = {"type": "function", "function": fn, **({"id": "call_2"} if g.chance(0.3) else {})}
        else:
            obj = {"name": name, "arguments": args, g.pick(["queries", "args", "content"]): 1}  # not a call
        return _dumps(g, obj)

    r = g.rng.random()
    if r < 0.6:
        return one()
    if r < 0.85:
        return "[" + g.pick([", ", ",", ",\n "]).join(one() for _ in range(g.rng.randint(1, 3))) + "]"
    return g.pick(["; ", ";", ";\n", "\n"]).join(one() for _ in range(2))


def prose(g: G, n: int) -> str:
    """Mostly prose, as real streams are: markup now and then."""
    parts = []
    for _ in range(n):
        r = g.rng.random()
        parts.append(
            g.pick(PROSE)
            if r < 0.6
            else g.pick(["\n", "\n\n", " ", "\r\n"])
            if r < 0.75
            else fence(g)
            if r < 0.83
            else piece(g)
        )
    return "".join(parts)


def bare_text(g: G, opts: dict) -> str:
    """A message (for a case with tools) that starts or ends with bare JSON calls, or nearly does."""
    calls = bare_call(g, opts)
    r = g.rng.random()
    if r < 0.4:  # the leading part: the calls, spaces, then maybe content from a line break on
        rest = g.pick(["", "", " ", "\t", " x", ", then"]) + g.pick(["", "\n", "\r\n", "\n\n"])
        if rest.endswith("\n") and g.chance(0.7):
            rest += prose(g, g.pick([2, 6])) + (call_block(g, opts) if g.chance(0.3) else "")
        return g.pick(["", "", " ", "\n", "\n \n"]) + calls + rest
    if r < 0.55:  # a single markdown fence, the whole message (or not quite)
        run = g.pick(["```", "```", "````", "~~~"])
        return (
            g.pick(["", "", "\n", "  "])
            + run
            + g.pick(["json", "", "json ", "python"])
            + g.pick(["\n", "\r\n"])
            + calls
            + g.pick(["\n", "\n", ""])
            + g.pick([run, run, "```", "````", "``", "   " + run])
            + g.pick(["", "", "\n", " ", "\nmore"])
        )
    # the trailing part: content, then the calls from a line start (at most 3 spaces), whitespace to the end
    before = g.pick(["Let me check.", "", "<think>plan</think>", "x ```"]) if g.chance(0.5) else prose(g, 6)
    if g.chance(0.2):
        before += call_block(g, opts)
    return (
        before
        + g.pick(["\n", "\n", "\n\n", "\r\n", "\r", " ", "\n   ", "\n    ", "\n```\n"])
        + calls
        + g.pick(["", "", "\n", "  \n", " x", "\nmore", "\n" + bare_call(g, opts), ";" + bare_call(g, opts)])
    )


def reasoning_text(g: G, opts: dict) -> str:
    """A reasoning span with calls in it, where ``calls_in_reasoning`` decides: calls that end the span (taken
    with ``auto``), a call followed by more reasoning (a rehearsal), a span never closed; then content
    with or without a call of its own (which makes the span's calls rehearsals)."""
    opened = "" if opts.get("reasoning_started") and g.chance(0.7) else g.pick(["<think>", "<think>\n"])
    span = g.pick(["", "Let me think.", "plan: call f"]) + g.pick(["", " ", "\n"]) + call_block(g, opts)
    span += g.pick(["", "", "\n", "\n\n", " then more thought", "\n" + call_block(g, opts)])
    closed = g.pick(["</think>", "</think>", "\n</think>\n\n", "</think>\n", ""])  # "": never closed
    after = g.pick(
        [
            "",
            "",
            prose(g, 4),
            call_block(g, opts),
            "Calling it. " + call_block(g, opts),
            "\n" + bare_call(g, opts),
            "<think>more" + g.pick(["", "</think>"]),
        ]
    )
    return opened + span + closed + after


def fenced_text(g: G, opts: dict) -> str:
    """Markup inside a code fence (text with ``code_fences``, calls without): mostly a fence that opens and
    closes at line starts after 0-3 spaces, else one shifted by 4 spaces, after a lone CR or mid-line,
    runs longer or shorter than the opening one, ``~~~`` (no fence), a fence never closed."""
    plain = g.chance(0.6)
    run = g.pick(["```", "```", "````"]) if plain else g.pick(["```", "````", "`````", "~~~", "``"])
    inside = g.pick([call_block(g, opts), call_block(g, opts), piece(g), bare_call(g, opts), "<think>x</think>"])
    indent = [0, 0, 0, 1, 2, 3] + ([] if plain else [4])
    if plain:
        close = " " * g.pick(indent) + g.pick([run, run, run + "`"])
    else:
        close = g.pick([run, "```", "````", "``", "~~~", "    ```", " " * g.rng.randint(1, 3) + run, ""])
    return (
        g.pick(["", "Example:", prose(g, 3)])
        + (g.pick(["\n", "\n\n", "\r\n"]) if plain else g.pick(["\n", "", "\r\n", "\r", " "]))
        + " " * g.pick(indent)
        + run
        + g.pick(["", "json", "xml", " py"])
        + (g.pick(["\n", "\r\n"]) if plain else g.pick(["\n", " ", ""]))
        + inside
        + (g.pick(["\n", "\r\n"]) if plain else g.pick(["\n", "", "\r"]))
        + close
        + g.pick(["", "\n", "\n" + call_block(g, opts), "\nNow for real: " + call_block(g, opts), " x"])
    )


def piece(g: G) -> str:
    r = g.rng.random()
    if r < 0.10:
        return g.pick(LITERALS)
    if r < 0.16:
        lit = g.pick(LITERALS)
        return lit[: g.rng.randint(1, len(lit) - 1)]
    if r < 0.20:
        return tag(g)
    if r < 0.26:
        return fence(g)
    if r < 0.40:
        return block(g)
    if r < 0.47:
        b = g.pick(BLOCKS)
        return body_for(g, b.grammar, b.opener)
    if r < 0.51:
        return g.pick(["<think>", "</think>", "<think>", "<think>plan ", " done</think>", "<thi", "nk>", "</th"])
    if r < 0.54:
        return g.pick(
            [
                "<|channel|>analysis<|message|>",
                "<|end|>",
                "<|start|>assistant",
                "<|channel|>final<|message|>",
                "<|return|>",
                "<|channel|>commentary",
                "<|message|>",
                "<|call|>",
                "<|constrain|>json",
                "<|channel|>commentary<|message|>",
                "<|channel>thought\n",
                "<channel|>",
            ]
        )
    if r < 0.66:
        return g.pick(WORDS)
    if r < 0.73:
        return g.pick(["\n", "\n", "\r\n", "\r", "\n\n"])
    if r < 0.77:
        return g.pick(UNICODE)
    if r < 0.785:
        return g.pick(g.surrogates)
    if r < 0.89:
        return g.pick(PUNCT)
    return "".join(g.pick(ALPHABET) for _ in range(g.rng.randint(1, 6)))


GUIDED_VALUES = ["Oslo", "42", "4.5", "true", "null", "x y", '"q"', "'s'", "[1]", "{}", "a < b", "", "\n", "é", '<|"|>']


def guided_call(g: G, opts: dict) -> str:
    """A call of an offered tool (mostly) in the shapes the schema-guided stage reads (``_guided``), with
    arguments its schema may or may not accept, sometimes unfinished, with leftover tokens around."""
    offered = [t["function"]["name"] for t in opts.get("tools") or []]
    name = g.pick(offered) if offered and g.chance(0.85) else g.pick(NAMES)
    keys = g.rng.sample(PARAMS, g.rng.randint(0, 3))
    vals = [g.pick(GUIDED_VALUES) for _ in keys]
    r = g.rng.random()
    if r < 0.2:
        body = "".join(f"<{k}>{v}</{k}>" + g.pick(["\n", ""]) for k, v in zip(keys, vals, strict=True))
        text = f"<{name}>" + g.pick(["\n", ""]) + body + g.pick([f"</{name}>", "", f"</{name}"])
    elif r < 0.35:
        body = "".join(f'<parameter name="{k}">{v}</parameter>\n' for k, v in zip(keys, vals, strict=True))
        text = g.pick(["[Calling tool: ", "[tool: ", '<invoke name="']) + name + g.pick(["]\n", '">\n', " "]) + body
        text += g.pick(["</invoke>", "", "</invoke>\n</minimax:tool_call>"])
    elif r < 0.5:
        body = ",".join(f"{k}:{v}" for k, v in zip(keys, vals, strict=True))
        text = g.pick(["call:", "default_api:", "", "functions."]) + name + "{" + body + g.pick(["}", "}", ""])
    elif r < 0.65:
        body = ", ".join(
            f"{k}={v if v[:1] in '[{' or v in ('42', '4.5') else repr(v)}" for k, v in zip(keys, vals, strict=True)
        )
        text = g.pick(["", "<call>", "[", "<|python_tag|>"]) + name + "(" + body + g.pick([")", ")", "", ")]"])
    elif r < 0.8:
        body = "".join(f"<arg_key>{k}</arg_key><arg_value>{v}</arg_value>" for k, v in zip(keys, vals, strict=True))
        text = name + g.pick(["", "\n"]) + body + g.pick(["", "</tool_call>", "<|user|>"])
    elif r < 0.9:
        body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in zip(keys, vals, strict=True))
        text = g.pick(["<parameter=", "<function="]) + name + ">\n" + body + g.pick(["</function>", ""])
    elif r < 0.95:
        args = json.dumps(dict(zip(keys, vals, strict=True)))
        text = json.dumps({"name": name, "arguments": json.loads(args)}) + g.pick(["<|eot_id|>", "", "</s>", " x"])
    else:  # the name, then its JSON arguments on the next line, maybe fenced
        args = json.dumps(dict(zip(keys, vals, strict=True)))
        text = name + g.pick(["\n", "\n```json\n", "\n```\n", " \n"]) + args + g.pick(["", "\n```", "```"])
    return text


def guided_text(g: G, opts: dict) -> str:
    """Prose and schema-guided candidates, on lines of their own (or not), leading, trailing or between."""
    parts = []
    for _ in range(g.rng.randint(1, 3)):
        if g.chance(0.6):
            parts.append(prose(g, g.pick([0, 1, 3])))
        parts.append(g.pick(["\n", "\n\n", "", " ", "\n    ", "\n```\n", "`"]) + guided_call(g, opts))
    return "".join(parts) + g.pick(["", "", "\n", "\nDone.", " more"])


def gen_text(g: G, opts: dict) -> str:
    text = _gen_text(g, opts)
    if text and g.chance(0.1):  # the message ends inside something: a block without its closer, say
        cut = g.rng.randint(1, min(len(text), 24))
        text = text[:-cut] if g.chance(0.5) else text[:-cut] + text[-cut:][: g.rng.randint(0, 2)]
    if g.chance(0.08):  # a last block, complete but for its closer (and maybe a bracket)
        b = g.pick([b for b in BLOCKS if b.closer])
        text += block_of(g, b)[: -len(b.closer) - g.pick([0, 0, 1])]
    if g.chance(0.1):  # bare JSON calls at the end, from a line start or not (with tools: a call)
        text += (
            g.pick(["\n", "\n\n", "\r\n", "\n   ", "\n    ", " ", "\r"])
            + json_calls(g)
            + g.pick(["", "\n", "  \n", " x", "\nmore", "\n" + json_call(g), "; " + json_call(g)])
        )
    return text


def _gen_text(g: G, opts: dict) -> str:
    formats = opts.get("formats") or ()
    if ("json_message" in formats or "pythonic_message" in formats) and g.chance(0.4):
        ws = g.pick(["", " ", "\n", " \n "])
        body = pythonic(g) if g.chance(0.3) else bare_call(g, opts) if g.chance(0.5) else json_calls(g)
        return ws + body + g.pick(["", "", "\n", " and more", ws])
    if "phi4_mini" in formats and g.chance(0.4):
        calls = "[" + bare_call(g, opts).strip("[]") + "]" if g.chance(0.5) else json_calls(g)
        return g.pick(["", "Sure. ", "fun"]) + "functools" + calls + g.pick(["", "", " f", " functo"])
    if "harmony_text" in formats and g.chance(0.4):  # gpt-oss with its special tokens stripped
        return (
            g.pick(["", "analysis The user asks. ", "to", "commentary "])
            + g.pick(["commentary to=", "to="])
            + body_for(g, "harmony_text", "to=")
            + g.pick(["", " f", " to", "<|call|>"])
        )
    if opts.get("tools") is not None and g.chance(0.25):
        return bare_text(g, opts)
    if opts.get("tools") is not None and g.chance(0.25):
        return guided_text(g, opts)
    if g.streamed and g.chance(0.35):
        return streamed_text(g, opts)
    r = g.rng.random()
    if r < 0.12:
        return reasoning_text(g, opts)
    if r < 0.24:
        return fenced_text(g, opts)
    if r < 0.5:
        return prose(g, g.pick([4, 8, 16, 30]))
    n = g.pick([1, 2, 3, 5, 8, 12, 16, 24]) if g.chance(0.98) else g.rng.randint(60, 160)
    return "".join(piece(g) for _ in range(n))


#: the grammars of JSON-bodied calls (docs/gateway.md): their pieces are slices of the text
JSON_BODIED = {"hermes", "deepseek", "kimi_k2", "function", "mistral", "dsml_toolcall"}
#: the grammars whose calls stream with ``stream_arguments``: those, with Qwen3-Coder XML or GLM bodies in the
#: ``hermes`` and ``function`` blocks too, and the blocks of XML calls
STREAMED = JSON_BODIED | {"qwen3_xml", "minimax_m2", "step3", "dsml"}


def streamed_text(g: G, opts: dict) -> str:
    """Prose and calls, mostly of grammars that stream, some blocks cut short (by the next opener, or the end)."""
    formats = opts.get("formats")
    on = [
        b
        for b in BLOCKS
        if b.grammar in STREAMED and (DIALECTS[b.dialect] if formats is None else b.dialect in formats)
    ]
    parts = []
    for _ in range(g.rng.randint(1, 3)):
        parts.append(prose(g, g.pick([0, 1, 3])))
        text = block_of(g, g.pick(on), wrap=True) if on and g.chance(0.7) else call_block(g, opts)
        parts.append(text[: g.rng.randint(1, len(text))] if g.chance(0.1) else text)
    return "".join(parts) + prose(g, g.pick([0, 2]))


def _format_pool() -> tuple:
    """The ``formats`` cases draw from, per seed: ``None`` and the defaults spelled out, the defaults with
    opt-in formats, small random sets, the defaults minus some, none. Kept under the table caches' size
    (64): a gateway has few settings, and a table new to the caches costs a regex compilation."""
    g = G(random.Random(f"{SEED}/formats"))
    defaults = [n for n, on in DIALECTS.items() if on]
    opt_in = [n for n, on in DIALECTS.items() if not on]  # json_message, pythonic_message, phi4_mini …
    pool = [None, defaults, defaults + opt_in]
    pool += [defaults + g.rng.sample(opt_in, g.rng.randint(1, len(opt_in))) for _ in range(12)]
    for _ in range(30):  # small sets, half of them with <think> (the reasoning policies need it)
        names = g.rng.sample(list(DIALECTS), g.rng.randint(1, 6))
        pool.append(names + ["reasoning"] if g.chance(0.5) and "reasoning" not in names else names)
    pool += [[n for n in defaults if g.chance(0.8)] for _ in range(12)]
    return tuple(pool) + ([],)


FORMATS = _format_pool()


def gen_options(g: G) -> dict:
    opts: dict = {}
    if g.chance(0.6):
        formats = g.pick(FORMATS)
        opts["formats"] = None if formats is None else list(formats)
    if g.chance(0.45):
        opts["max_block"] = g.pick([1, 5, 40, 200, "near"])  # "near": about a block's size, set by the case
    if g.chance(0.35):  # (sometimes none offered, or a tool without a schema)
        names = g.rng.sample(NAMES, g.rng.randint(1, len(NAMES) - 1)) if g.chance(0.95) else []
        opts["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": n,
                    "parameters": {
                        "type": "object",
                        "properties": dict(g.rng.sample(sorted(SCHEMA.items()), g.rng.randint(0, len(SCHEMA)))),
                    },
                }
                if g.chance(0.9)
                else {"name": n},
            }
            for n in names
        ]
    if opts.get("tools") is not None and g.chance(0.15):
        opts["schema_guided"] = False
    if g.chance(0.5):
        opts["unknown_tools"] = g.pick(["keep_text", "drop", "accept"])
    if g.chance(0.5):
        opts["calls_in_reasoning"] = g.pick(POLICIES)
    if g.chance(0.45):
        opts["code_fences"] = g.pick([True, False])
    if STARTED and g.chance(0.16):
        opts["reasoning_started"] = g.chance(0.65)
    if g.chance(0.3):
        opts["trim_blanks"] = g.chance(0.7)
    if g.chance(0.08) and "formats" not in opts:  # (the tails are markup of default dialects)
        opts["prompt_tail"] = g.pick(["<|start|>assistant", "<think>", "<|channel|>analysis<|message|>", ""])
    if g.chance(0.45):
        opts["stream_arguments"] = g.chance(0.6)
    g.streamed = bool(opts.get("stream_arguments"))
    return opts


def plain(opts: dict) -> dict:
    """``opts`` with ``stream_arguments`` left out: the option off, and the keywords ``parse`` takes."""
    return {k: v for k, v in opts.items() if k != "stream_arguments"}


def near(g: G, opts: dict, texts: list) -> None:
    """Resolve ``max_block="near"``: a cap the size of some block of the texts, give or take."""
    if opts.get("max_block") == "near":
        opts["max_block"] = g.rng.randint(1, max(1, max(map(len, texts)) // 2))


def split(g: G, text: str) -> list:
    """``text`` in random deltas (sometimes one character each, sometimes cut inside a literal)."""
    if not text:
        return [""]
    r = g.rng.random()
    if r < 0.15 and len(text) < 400:
        return list(text)
    if r < 0.25:
        return [text]
    if r < 0.5:  # token-sized deltas, as models stream them
        cuts, pos = [], 0
        while True:
            pos += g.rng.randint(1, 8)
            if pos >= len(text):
                break
            cuts.append(pos)
        return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=False)]
    k = g.rng.randint(1, min(len(text), 16))
    cuts = sorted({g.rng.randint(1, len(text)) for _ in range(k)} - {len(text)})
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=False)]


# --- mismatches, shrinking, reports ----------------------------------------------------------------

CALL_ID = re.compile(r"call_[0-9a-f]{22}")


def mask(s: str) -> str:
    return CALL_ID.sub("call_ID", s)


def canon(chunk) -> str:
    return mask(json.dumps(chunk, sort_keys=True))


class Mismatch:
    """One failed comparison: ``sig`` (layer, check) names it, ``impl`` says on which implementation."""

    def __init__(self, sig: tuple, detail: str, impl: str = "cython vs twin") -> None:
        self.sig = sig
        self.detail = detail
        self.impl = impl


def _short(value, limit: int = 3000) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"


def differ(where, check, left_name, left, right_name, right, impl=None) -> Mismatch:
    detail = f"{left_name}:\n    {_short(left)}\n  {right_name}:\n    {_short(right)}"
    return Mismatch((where, check), detail, *([impl] if impl else []))


def crashed(where, what, exc, impl) -> Mismatch:
    tb = "".join(traceback.format_exception(exc)[-6:])
    return Mismatch((where, f"raises in {what}: {type(exc).__name__}"), f"no exception expected, got:\n{tb}", impl)


def shrink(case, candidates, still_fails, seconds: float):
    """Greedily apply the first simplification of ``candidates(case)`` that still fails; repeat."""
    deadline = time.monotonic() + seconds
    tries = 0
    progress = True
    while progress and time.monotonic() < deadline:
        progress = False
        for smaller in candidates(case):
            if time.monotonic() >= deadline:
                break
            tries += 1
            if still_fails(smaller):
                case = smaller
                progress = True
                break
    return case, tries


def _string_cuts(s: str):
    """Ways to make ``s`` shorter: halves first, then smaller pieces, then single characters."""
    n = len(s)
    size = n
    while size >= 1:
        for start in range(0, n, size):
            yield s[:start] + s[start + size :]
        size //= 2


def _option_cuts(opts: dict):
    for key in list(opts):
        yield {k: v for k, v in opts.items() if k != key}
    formats = opts.get("formats")
    if formats and len(formats) > 1:
        for name in formats:
            yield {**opts, "formats": [n for n in formats if n != name]}
    tools = opts.get("tools")
    if tools and len(tools) > 1:
        for i in range(len(tools)):
            yield {**opts, "tools": tools[:i] + tools[i + 1 :]}


def fuzz(layer: str, generate, check, candidates, describe) -> None:
    cases, seconds = _budget(layer)
    deadline = time.monotonic() + seconds
    reports: dict = {}  # sig -> [report, implementations it failed on]
    k = START
    ran = 0
    while ran < cases and time.monotonic() < deadline:
        case = generate(random.Random(f"{SEED}/{layer}/{k}"))
        for m in check(case):
            if m.sig in reports:
                reports[m.sig][1].add(m.impl)
                continue
            if len(reports) >= MAX_REPORTS:
                continue
            started = time.monotonic()

            def still_fails(c, sig=m.sig):
                return any(x.sig == sig for x in check(c))

            small, tries = shrink(case, candidates, still_fails, SHRINK_SECONDS)
            final = next((x for x in check(small) if x.sig == m.sig), m)
            report = (
                f"  TEXTCALLS_FUZZ_SEED={SEED} TEXTCALLS_FUZZ_START={k} TEXTCALLS_FUZZ_CASES=1 "
                f"(shrunk in {time.monotonic() - started:.1f} s, {tries} tries)\n"
                f"{describe(small)}\n  on {final.impl}: {final.detail}"
            )
            reports[m.sig] = [report, {m.impl}]
        k += 1
        ran += 1
    STATS[layer] = ran
    print(f"\n[{layer}] {ran} cases (seed {SEED!r}, from {START}), each on {[n for n, _ in MODS]}")
    if reports:
        text = "\n\n".join(
            f"[{layer}] {sig[1]} (seen on {', '.join(sorted(impls))})\n{report}"
            for sig, (report, impls) in reports.items()
        )
        pytest.fail(f"{len(reports)} disagreement(s) in layer {layer!r}:\n\n{text}", pytrace=False)


# --- layer 1: StreamScrubber ---------------------------------------------------------------------


def given(opts: dict, shape: int) -> dict:
    """The options as an entry point takes them: the keywords, or (every other shape) ``options=`` one
    ``Options`` built from them; both must give the same answers."""
    return {"options": Options(**opts)} if opts and shape % 2 else opts


def scrub(mod, deltas: list, opts: dict, truncated: bool = False) -> dict:
    """Feed ``deltas``; per feed (and the flush, ``truncated`` as given): (output, reasoning taken, calls so far,
    call events with ids masked); ``events``: per feed, (characters fed so far, the events as taken)."""
    s = mod.StreamScrubber(**given(opts, len(deltas)))
    feeds, events, fed = [], [], 0
    for d in [*deltas, None]:
        if d is None:
            out = s.flush(truncated=truncated)
        else:
            out = s.feed(d)
            fed += len(d)
        taken = s.take_events()
        reasoning = s.take_reasoning()
        assert canonical(out) and canonical(reasoning), (out, reasoning)
        feeds.append((out, reasoning, len(s.calls), [masked(e) for e in taken]))
        events.append((fed, taken))
    return {
        "feeds": feeds,
        "content": "".join(f[0] for f in feeds),
        "reasoning": "".join(f[1] for f in feeds),
        "calls": [(c.name, c.arguments, mask(c.id)) for c in s.calls],
        "removed": s.removed,
        "events": events,
        "abandoned": s.abandoned,
        "objects": list(s.calls),
    }


def canonical(text: str) -> bool:
    """``text`` is a ``str`` as CPython makes it: of the narrowest kind, ASCII exactly when its characters are
    (a string the scanner built with a wrong largest character compares unequal, or encodes wrongly)."""
    again = text.encode("utf-32-le", "surrogatepass").decode("utf-32-le", "surrogatepass")
    return text == again and text.isascii() == again.isascii()


def masked(event: tuple) -> tuple:
    """A call event with a fresh id masked (``started`` carries the id)."""
    return (*event[:2], mask(event[2]), *event[3:]) if event and event[0] == "started" else event


#: a streamed call's pieces trail the text fed by at most this many characters (docs/api.md)
LAG = 64


def block_grammar(text: str, at: int) -> str | None:
    """The grammar of the block whose opener comes last before ``at`` (the longest opener there)."""
    pos, _, grammar = max((text.rfind(b.opener, 0, at), len(b.opener), b.grammar) for b in BLOCKS)
    return grammar if pos >= 0 else None


def event_faults(label: str, run: dict, text: str, streams: bool, impl: str) -> list:
    """The rules of ``take_events`` (docs/api.md, ``StreamScrubber``) that ``run`` breaks. Without
    ``stream_arguments`` there are no events and ``abandoned`` is 0. With it: per call, ``started``, then
    ``arguments`` (non-empty pieces), then ``ended`` or ``abandoned``; one call open at a time, none after the
    flush; an ended call is ``calls[index]``, with that id and name, and its pieces join to its arguments
    exactly; ``abandoned`` counts the abandoned ones; the pieces never trail the text fed by more than ``LAG``
    characters (``trail``: calls whose pieces are a slice of the text, the JSON-bodied ones)."""

    def fault(check: str, detail: str) -> Mismatch:
        return Mismatch(
            ("scrubber", f"stream_arguments: {check}"), f"{label}: {detail}\n  events: {_short(run['events'])}", impl
        )

    if not streams:
        if run["abandoned"] or any(taken for _, taken in run["events"]):
            return [fault("events without the option", f"abandoned = {run['abandoned']}")]
        return []
    started: list = []
    current = None
    for step, (_, taken) in enumerate(run["events"]):
        for e in taken:
            shape = (e[0], len(e), *map(type, e[1:])) if isinstance(e, tuple) and e else e
            if shape == ("started", 4, int, str, str) and current is None:
                current = {"event": e, "step": step, "pieces": [], "fate": None}
                started.append(current)
            elif current is None or not isinstance(e, tuple) or e[0] == "started" or e[1:2] != current["event"][1:2]:
                return [fault("events out of order", f"{e!r} with {current and current['event']!r} open")]
            elif shape == ("arguments", 3, int, str) and e[2]:
                current["pieces"].append((step, e[2]))
            elif shape in (("ended", 2, int), ("abandoned", 2, int)):
                current["fate"], current["end"], current = e[0], step, None
            else:
                return [fault("malformed event", repr(e))]
    if current is not None:
        return [fault("a call still open after the flush", repr(current["event"]))]
    found = []
    calls = run["objects"]
    for call in started:
        _, index, call_id, name = call["event"]
        joined = "".join(p for _, p in call["pieces"])
        if call["fate"] == "ended":
            got = calls[index] if index < len(calls) else None
            if got is None or (got.name, got.arguments, got.id) != (name, joined, call_id):
                found.append(
                    fault(
                        "an ended call is not calls[index] with its pieces joined",
                        f"started {call['event']!r}, pieces joined {joined!r}; calls[{index}] = {got!r}",
                    )
                )
        behind = trail(call, joined, run["events"], text)
        if behind is not None:
            found.append(fault(f"pieces trail the text fed by more than {LAG}", f"{call['event']!r}: {behind}"))
    n = sum(call["fate"] == "abandoned" for call in started)
    if run["abandoned"] != n:
        found.append(fault(".abandoned != abandoned events", f".abandoned = {run['abandoned']}, events: {n}"))
    return found


def trail(call: dict, joined: str, steps: list, text: str) -> str | None:
    """Where the pieces of ``call``, a JSON-bodied one, trail the text fed by more than ``LAG`` characters, if
    they do. Its pieces are a slice of the text from its ``{`` (fed by the feed that started the call): the
    last place before that where the pieces joined occur counts as their start, so a trail measured is never
    more than the real one. Each feed that leaves the call open is measured, against what its pieces so far
    cover of that slice (for an abandoned call, the slice is what was sent). XML calls are not measured: their
    pieces are JSON written from the values, held by rules of their own (a typed value goes whole, ...)."""
    if not joined:
        return None
    at = text.rfind(joined, 0, steps[call["step"]][0] - 1 + len(joined))
    if at < 0 or block_grammar(text, at) not in JSON_BODIED:
        return None
    pieces, sent, k = call["pieces"], 0, 0
    for step in range(call["step"], call["end"]):
        while k < len(pieces) and pieces[k][0] <= step:
            sent += len(pieces[k][1])
            k += 1
        fed = steps[step][0]
        behind = min(fed - at, len(joined)) - sent
        if behind > LAG:
            return f"after feed {step} ({fed} characters fed, pieces from offset {at}): {sent} sent, {behind} behind"
    return None


def gen_scrubber_case(rng: random.Random) -> dict:
    g = G(rng)
    opts = gen_options(g)
    text = gen_text(g, opts)
    near(g, opts, [text])
    prefixes = sorted(g.rng.randint(0, len(text)) for _ in range(3))
    return {"options": opts, "deltas": split(g, text), "chars": g.chance(0.2) and len(text) < 600, "prefixes": prefixes}


def check_scrubber(case: dict) -> list:
    opts, deltas = case["options"], case["deltas"]
    text = "".join(deltas)
    streams = bool(opts.get("stream_arguments"))
    found, split_runs, parsed = [], {}, None
    for name, mod in MODS:
        try:
            whole = scrub(mod, [text], opts)
            runs = {"split": scrub(mod, deltas, opts)}
            if case["chars"]:
                runs["1-char split"] = scrub(mod, list(text), opts)
            off = scrub(mod, deltas, plain(opts)) if streams else None
            with using(mod):
                p = parse(text, **plain(opts))
        except Exception as exc:
            found.append(crashed("scrubber", "StreamScrubber/parse", exc, name))
            continue
        split_runs[name] = runs["split"]
        for label, run in {"one feed": whole, **runs}.items():
            found += event_faults(label, run, text, streams, name)
        if off is not None:  # the option changes no content and no call: per feed, as with it off
            on = runs["split"]
            for field in ("feeds", "content", "reasoning", "calls", "removed"):
                a, b = on[field], off[field]
                if field == "feeds":
                    a, b = [f[:3] for f in a], [f[:3] for f in b]
                if a != b:
                    found.append(
                        differ(
                            "scrubber",
                            f"stream_arguments changes {field}",
                            "split, the option off",
                            b,
                            "split, the option on",
                            a,
                            name,
                        )
                    )
        parsed = p if parsed is None else parsed
        for label, run in runs.items():
            for field in ("content", "reasoning", "calls", "removed"):
                if run[field] != whole[field]:
                    found.append(
                        differ(
                            "scrubber",
                            f"{label} != one feed: {field}",
                            "one feed",
                            whole[field],
                            label,
                            run[field],
                            name,
                        )
                    )
        run = runs["split"]
        expected = {
            "content": p.content,
            "reasoning": p.reasoning,
            "calls": [(c.name, c.arguments) for c in p.calls],
            "removed": p.removed,
        }
        trim = (lambda s: s) if opts.get("trim_blanks") else str.strip  # trim_blanks: exact
        got = {
            "content": trim(run["content"]),
            "reasoning": trim(run["reasoning"]),
            "calls": [c[:2] for c in run["calls"]],
            "removed": run["removed"],
        }
        for field, want in expected.items():
            if got[field] != want:
                found.append(
                    differ("scrubber", f"split != parse: {field}", "parse", want, "split (stripped)", got[field], name)
                )
    found += check_screens(case, text, parsed)
    if len(split_runs) == 2:
        c, py = split_runs["c"], split_runs["py"]
        for i, (a, b) in enumerate(zip(c["feeds"], py["feeds"], strict=False)):
            if a != b:
                where = f"feed {i} of {len(deltas)}" if i < len(deltas) else "flush"
                found.append(
                    differ(
                        "scrubber",
                        "cython != twin: per feed (output, reasoning, calls so far, events)",
                        f"cython at {where}",
                        a,
                        f"twin at {where}",
                        b,
                    )
                )
                break
        for field in ("calls", "removed", "abandoned"):
            if c[field] != py[field]:
                found.append(differ("scrubber", f"cython != twin: {field}", "cython", c[field], "twin", py[field]))
    return found


def check_screens(case: dict, text: str, parsed) -> list:
    """``hold_from``: Cython == twin (the text and a few of its prefixes); ``may_contain_markup`` False
    only when ``parse`` would leave the text alone, for the text and its JSON forms."""
    found = []
    formats = case["options"].get("formats")
    for end in {len(text), *case["prefixes"]}:
        prefix = text[:end]
        try:
            held = {name: mod.hold_from(prefix, formats=formats) for name, mod in MODS}
        except Exception as exc:
            found.append(crashed("scrubber", "hold_from", exc, "c/py"))
            break
        if len(set(held.values())) > 1:
            found.append(
                differ("scrubber", "hold_from: cython != twin", f"cython, text[:{end}]", held["c"], "twin", held["py"])
            )
            break
    if parsed is None:
        return found
    json_text = json.dumps(text)
    forms = [
        text,
        text.encode("utf-8", "surrogatepass"),
        json_text.encode(),
        json_text.replace("<", "\\u003c").encode(),
        json_text.replace("/", "\\/").encode(),
    ]
    with contextlib.suppress(UnicodeEncodeError):  # (not with lone surrogates)
        forms.append(json.dumps(text, ensure_ascii=False).encode())
    try:
        says = [_scan_py.may_contain_markup(form, formats=formats) for form in forms]
    except Exception as exc:
        return found + [crashed("scrubber", "may_contain_markup", exc, "c/py")]

    def untouched(p) -> bool:
        whole = text if options.get("trim_blanks") else text.strip()
        return p.removed == 0 and not p.calls and p.content == whole and not p.reasoning

    options = case["options"]
    if options.get("tools") is not None and options.get("schema_guided", True):
        # the schema-guided stage needs no markup: with it on, the layers read every text (stream._floor,
        # chat_bytes); the screens answer for what the rest of parse does
        parsed = parse(text, **{**plain(options), "schema_guided": False})
    if options.get("tools") is not None and not untouched(parsed):
        # with tools, a bare JSON call needs no markup: the raw forms answer for what parse does without
        # tools, and a response body's forms are screened by may_hold_bare_call as well
        bare = [
            form is not forms[0] and form is not forms[1] and may_hold_bare_call(b'{"content":' + form + b"}")
            for form in forms
        ]
        says = [s or b for s, b in zip(says, bare, strict=False)]
        if not all(says[:2]) and untouched(parse(text, **{k: v for k, v in plain(options).items() if k != "tools"})):
            says[:2] = [True, True]
    # (reasoning_started makes text reasoning without any markup: the screen is about markup only)
    if (
        not untouched(parsed)
        and not all(says)
        and not options.get("reasoning_started")
        and not options.get("prompt_tail")
    ):
        found.append(
            differ(
                "scrubber",
                "may_contain_markup misses markup parse removes",
                "may_contain_markup of (text, UTF-8, JSON, JSON with \\u003c, JSON with \\/, JSON not ASCII)",
                says,
                "parse",
                parsed,
            )
        )
    return found


def scrubber_candidates(case: dict):
    deltas = case["deltas"]
    if case["chars"]:
        yield {**case, "chars": False}
    for i in range(len(deltas)):
        if len(deltas) > 1:
            yield {**case, "deltas": deltas[:i] + deltas[i + 1 :]}
    for i in range(len(deltas) - 1):
        yield {**case, "deltas": deltas[:i] + [deltas[i] + deltas[i + 1]] + deltas[i + 2 :]}
    for opts in _option_cuts(case["options"]):
        yield {**case, "options": opts}
    for i, d in enumerate(deltas):
        for shorter in _string_cuts(d):
            if shorter:
                yield {**case, "deltas": deltas[:i] + [shorter] + deltas[i + 1 :]}


def describe_scrubber(case: dict) -> str:
    cuts = [sum(map(len, case["deltas"][:k])) for k in range(1, len(case["deltas"]))]
    return (
        f"  options = {case['options']!r}\n  deltas = {case['deltas']!r}\n  cuts = {cuts}\n"
        f"  text = {''.join(case['deltas'])!r}" + ("\n  (also fed one character at a time)" if case["chars"] else "")
    )


def test_scrubber_layer_agrees():
    fuzz("scrubber", gen_scrubber_case, check_scrubber, scrubber_candidates, describe_scrubber)


# --- layer 2: recover_stream over chunk dicts ------------------------------------------------------

#: a structured call, whole or in two chunks (its head, then its arguments), as upstream sent it
STRUCT_PARTS = {
    "whole": lambda u: {
        "index": u,
        "id": f"call_s{u}",
        "type": "function",
        "function": {"name": "s", "arguments": "{}"},
    },
    "head": lambda u: {"index": u, "id": f"call_s{u}", "type": "function", "function": {"name": "s", "arguments": ""}},
    "args": lambda u: {"index": u, "function": {"arguments": "{}"}},
}


def gen_stream_case(rng: random.Random) -> dict:
    """A script of steps, from which the chunks are built: role, structured call, text, finish, usage."""
    g = G(rng)
    opts = gen_options(g)
    n = 2 if g.chance(0.35) else 1
    texts = [gen_text(g, opts) for _ in range(n)]
    near(g, opts, texts)
    queues = {i: [d for d in split(g, text) if d] for i, text in enumerate(texts)}
    steps: list = []

    def sse_params() -> dict:  # how this event's SSE bytes differ from the stream's usual encoding
        enc = {}
        if g.chance(0.06):
            enc["nl"] = g.pick(["\n", "\r\n"])
        if g.chance(0.06):
            enc["comment"] = True
        if g.chance(0.04):
            enc["fields"] = True  # event: and id: lines
        if g.chance(0.04):
            enc["ascii"] = g.chance(0.5)
        if g.chance(0.04):
            enc["esc"] = g.chance(0.5)
        if g.chance(0.04):
            enc["compact"] = g.chance(0.5)
        return {"enc": enc}

    if n == 2 and g.chance(0.5):
        steps.append({"kind": "role", "indexes": [0, 1], **sse_params()})
    else:
        steps += [{"kind": "role", "indexes": [i], **sse_params()} for i in range(n)]
    structs = {i: g.rng.randint(1, 2) for i in range(n) if g.chance(0.15)}  # structured calls per choice
    finish = {
        i: {"reason": "tool_calls" if i in structs else g.pick(["stop", "stop", "length"]), "content": None}
        for i in range(n)
        if g.chance(0.92)
    }
    head = len(steps)
    for i, f in finish.items():
        if queues[i] and g.chance(0.3):
            f["content"] = queues[i].pop()
    while any(queues.values()):
        live = [i for i in queues if queues[i]]
        if len(live) == 2 and g.chance(0.2):
            steps.append({"kind": "text", "contents": {i: queues[i].pop(0) for i in live}, **sse_params()})
        else:
            i = g.pick(live)
            steps.append(
                {"kind": "text", "contents": {i: queues[i].pop(0)}, "logprobs": g.chance(0.04), **sse_params()}
            )
        if g.chance(0.03):
            steps.append({"kind": "text", "contents": {g.pick(list(queues)): None}, **sse_params()})
    for i, count in structs.items():  # anywhere before the choice's finish (first, sometimes), in order
        at = head if g.chance(0.4) else g.rng.randint(head, len(steps))
        for u in range(count):
            for part in ["whole"] if g.chance(0.6) else ["head", "args"]:
                steps.insert(at, {"kind": "struct", "index": i, "upstream": u, "part": part, **sse_params()})
                at = g.rng.randint(at + 1, len(steps))
    if len(finish) == 2 and g.chance(0.5):
        steps.append({"kind": "finish", "finish": finish, **sse_params()})
    else:
        steps += [{"kind": "finish", "finish": {i: f}, **sse_params()} for i, f in finish.items()]
    if g.chance(0.3):
        steps.append({"kind": "usage", **sse_params()})
    return {
        "options": opts,
        "steps": steps,
        "natives": [True, False],
        "usage_null": g.chance(0.3),
        "fingerprint": g.chance(0.3),
        "cuts": [],
        "chars": False,
        "kinds": [],
        "bom": g.chance(0.04),
        "usage_every": g.chance(0.05),
        "enc": {
            "nl": g.pick(["\n"] * 12 + ["\r\n"] * 6 + ["\r"]),
            "comment": False,
            "fields": False,
            "ascii": g.chance(0.3),
            "esc": g.chance(0.1),
            "compact": g.chance(0.6),
        },
    }


def _chunk(case: dict, choices: list, usage=None) -> dict:
    c = {"id": "chatcmpl-fuzz", "object": "chat.completion.chunk", "created": 1764547200, "model": "m"}
    if case["fingerprint"]:
        c["system_fingerprint"] = "fp_fuzz"
    c["choices"] = choices
    if case.get("usage_every"):  # usage in every chunk (as some servers send it)
        usage = usage or USAGE
    if usage is not None or case["usage_null"]:
        c["usage"] = usage
    return c


USAGE = {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8}
LOGPROBS = {"content": [{"token": "x", "logprob": -0.5, "bytes": [120], "top_logprobs": []}]}


def _choice(index: int, delta: dict, finish=None, logprobs=False) -> dict:
    return {"index": index, "delta": delta, "logprobs": LOGPROBS if logprobs else None, "finish_reason": finish}


def build_chunks(case: dict) -> list:
    chunks = []
    for step in case["steps"]:
        kind = step["kind"]
        if kind == "role":
            chunks.append(_chunk(case, [_choice(i, {"role": "assistant", "content": ""}) for i in step["indexes"]]))
        elif kind == "struct":
            entry = STRUCT_PARTS[step["part"]](step["upstream"])
            chunks.append(_chunk(case, [_choice(step["index"], {"tool_calls": [entry]})]))
        elif kind == "text":
            chunks.append(
                _chunk(
                    case,
                    [_choice(i, {"content": t}, logprobs=step.get("logprobs")) for i, t in step["contents"].items()],
                )
            )
        elif kind == "finish":
            chunks.append(
                _chunk(
                    case,
                    [
                        _choice(i, {} if f["content"] is None else {"content": f["content"]}, f["reason"])
                        for i, f in step["finish"].items()
                    ],
                )
            )
        else:
            chunks.append(_chunk(case, [], USAGE))
    return chunks


def choice_texts(case: dict) -> dict:
    texts: dict = {}
    for step in case["steps"]:
        if step["kind"] == "role":
            for i in step["indexes"]:
                texts.setdefault(i, "")
        elif step["kind"] == "text":
            for i, t in step["contents"].items():
                texts[i] = texts.get(i, "") + (t or "")
        elif step["kind"] == "finish":
            for i, f in step["finish"].items():
                texts[i] = texts.get(i, "") + (f["content"] or "")
        elif step["kind"] == "struct":
            texts.setdefault(step["index"], "")
    return texts


def walk(case: dict, state: dict, choice, emit, struct, sent_before) -> list:
    """Feed a case's steps to per-choice scrubbers (``choice(i)`` makes one in ``state``): per input chunk,
    whether it needs no change. ``emit(i, st, n)``: whether what the scrubber gave from its call ``n`` on is
    sent; ``struct(step)``: whether a structured call's chunk goes out unchanged; ``sent_before(i, st)``:
    whether calls went out for the choice (its finish is then rewritten). Choices that never finish are
    flushed at the end, as ``close()`` does."""
    same = []
    for step in case["steps"]:
        kind = step["kind"]
        if kind in ("role", "usage"):
            same.append(True)
            continue
        if kind == "struct":
            same.append(struct(step))
            continue
        items = step["contents"].items() if kind == "text" else [(i, f["content"]) for i, f in step["finish"].items()]
        unchanged = True
        reasons = {i: f["reason"] for i, f in step["finish"].items()} if kind == "finish" else {}
        for i, content in items:
            st = choice(i)
            s = st["scrubber"]
            if content:
                n = len(s.calls)
                out = s.feed(content)
                thought = s.take_reasoning()
                if emit(i, st, n) or out != content or thought:
                    unchanged = False
            if kind == "finish":
                n = len(s.calls)
                tail = s.flush(truncated=reasons[i] == "length")  # a cut output: its open block is no call
                thought = s.take_reasoning()
                emitted = emit(i, st, n)  # (a cut output keeps its finish_reason: no rewrite for the calls)
                if emitted or tail or thought or (reasons[i] != "length" and sent_before(i, st)):
                    unchanged = False
                del state[i]  # the choice starts afresh
        same.append(unchanged)
    for i, st in state.items():  # close(): the choices that did not finish are flushed
        n = len(st["scrubber"].calls)
        st["scrubber"].flush()
        emit(i, st, n)
    return same


def reference(mod, case: dict, native: bool) -> tuple:
    """The chunk layer's rules applied step by step, with a scrubber per choice fed every delta (no screen):

    - per input chunk, whether it needs no change (its output, reasoning and emitted calls all empty or the
      same, no structured index to shift, no finish_reason to rewrite);
    - per choice, the ``tool_calls`` entries expected, in order: structured ones as sent (shifted past calls
      recovered before them), recovered ones -- ``parse``'s calls, in order -- while the gate allows,
      with indexes continuing after the structured ones.
    """
    opts = plain(case["options"])
    calls = {i: list(exp[0].calls) for i, exp in expectations(mod, case).items()}
    state: dict = {}
    entries: dict = {i: [] for i in choice_texts(case)}
    recovered: dict = {}

    def choice(i):
        if i not in state:
            state[i] = {"scrubber": mod.StreamScrubber(**opts), "upstream": {}, "recovered": 0, "next": 0}
        return state[i]

    def emit(i, st, new: int) -> bool:
        if new == 0 or (native and st["upstream"]):  # should_recover(native, True, structured seen)
            return False
        for _ in range(new):
            c = calls[i].pop(0) if calls[i] else None
            entries[i].append((st["next"], c and c.name, c and c.arguments))
            st["next"] += 1
        st["recovered"] += new
        recovered[i] = recovered.get(i, 0) + new
        return True

    def struct(step) -> bool:
        i, u = step["index"], step["upstream"]
        st = choice(i)
        if u not in st["upstream"]:
            st["upstream"][u] = u + st["recovered"]
            st["next"] = max(st["next"], st["upstream"][u] + 1)
        entry = STRUCT_PARTS[step["part"]](u)
        entries[i].append((st["upstream"][u], entry["function"].get("name"), entry["function"]["arguments"]))
        return st["upstream"][u] == u

    same = walk(
        case,
        state,
        choice,
        lambda i, st, n: emit(i, st, len(st["scrubber"].calls) - n),
        struct,
        lambda i, st: st["recovered"],
    )
    return same, entries, recovered


def reference_streamed(mod, case: dict, native: bool) -> tuple:
    """``reference`` with ``stream_arguments=True`` (docs/gateway.md): per choice a scrubber with the
    option, fed every delta, its events read in order. A call that starts while the gate allows streams: it
    takes the next index at once and goes on to its end whatever comes meanwhile; one that starts while the
    gate stops calls is not sent. The calls no streamed call's ``ended`` covers go whole, in their place (before
    a call that starts after them), while the gate allows.

    Returns, per input chunk, whether it needs no change (no text changed, no reasoning, nothing sent: no start,
    no piece of a streamed call, no whole call; at a finish, also no call sent for the choice); per choice,
    the kind of each call sent, in index order: ``ended`` or ``abandoned`` (streamed), ``whole``."""
    opts = case["options"]
    state: dict = {}
    kinds: dict = {i: [] for i in choice_texts(case)}

    def choice(i):
        if i not in state:
            state[i] = {"scrubber": mod.StreamScrubber(**opts), "upstream": {}, "streaming": None}
        return state[i]

    def emit(i, st, n: int) -> bool:
        """Read the scrubber's events and its calls from ``n`` on (those before were sent); whether any go out."""
        calls, sent, taken = st["scrubber"].calls, False, n
        allowed = not (native and st["upstream"])  # should_recover(native, True, structured seen)
        for e in st["scrubber"].take_events():
            if e[0] == "started":
                if e[1] > taken:
                    if allowed:
                        kinds[i] += ["whole"] * (e[1] - taken)
                        sent = True
                    taken = e[1]
                if allowed:
                    st["streaming"] = len(kinds[i])
                    kinds[i].append("started")
                    sent = True
            elif e[0] == "arguments":
                sent = sent or st["streaming"] is not None
            elif st["streaming"] is not None:  # ended, abandoned
                kinds[i][st["streaming"]] = e[0]
                st["streaming"] = None
                if e[0] == "ended":
                    taken = e[1] + 1
        if len(calls) > taken and allowed:
            kinds[i] += ["whole"] * (len(calls) - taken)
            sent = True
        return sent

    def struct(step) -> bool:
        i, u = step["index"], step["upstream"]
        st = choice(i)
        if u not in st["upstream"]:
            st["upstream"][u] = u + len(kinds[i])  # shifted past the calls sent (a streamed one from its start)
        return st["upstream"][u] == u

    same = walk(case, state, choice, emit, struct, lambda i, st: kinds[i])
    return same, kinds


def rebuild(chunks: list, index: int) -> dict:
    """What a client rebuilds of choice ``index``, as the openai SDK does: content, reasoning, finish reasons,
    and the calls by ``tool_calls`` index (the first entry of an index gives its id, type and name, later ones
    append ``function.arguments``), each with its first entry's arguments and that entry's place among the
    choice's entries. ``odd``: the entries that do not fit that shape."""
    content = reasoning = ""
    calls: dict = {}
    finishes, odd, place = [], [], 0
    for delta, finish in choice_deltas(chunks, index):
        content += delta.get("content") or ""
        reasoning += delta.get("reasoning_content") or ""
        for e in delta.get("tool_calls") or []:
            f = e.get("function") if isinstance(e.get("function"), dict) else {}
            arguments = f.get("arguments")
            if e["index"] not in calls:
                named = isinstance(e.get("id"), str) and e.get("type") == "function"
                if not (named and isinstance(f.get("name"), str) and isinstance(arguments, str)):
                    odd.append(e)
                first = arguments if isinstance(arguments, str) else ""
                calls[e["index"]] = {"id": e.get("id"), "name": f.get("name"), "arguments": first, "first": first}
                calls[e["index"]]["at"] = place
            elif set(e) != {"index", "function"} or set(f) != {"arguments"} or not isinstance(arguments, str):
                odd.append(e)  # a second call at one index, or a later entry naming its call again
            else:
                calls[e["index"]]["arguments"] += arguments
            place += 1
        if finish is not None:
            finishes.append(finish)
    return {"content": content, "reasoning": reasoning, "calls": calls, "finishes": finishes, "odd": odd}


def choice_deltas(chunks: list, index: int):
    """The ``(delta, finish_reason)`` of each entry of choice ``index``, in order (a missing delta is ``{}``)."""
    for chunk in chunks:
        for c in chunk.get("choices") or []:
            if c["index"] == index:
                yield c.get("delta") or {}, c.get("finish_reason")


def per_choice(chunks: list, index: int) -> dict:
    content, reasoning, calls, finishes = "", "", [], []
    for delta, finish in choice_deltas(chunks, index):
        content += delta.get("content") or ""
        reasoning += delta.get("reasoning_content") or ""
        calls += [
            (t["index"], t["function"].get("name"), t["function"]["arguments"]) for t in delta.get("tool_calls") or []
        ]
        if finish is not None:
            finishes.append(finish)
    return {"content": content, "reasoning": reasoning, "calls": calls, "finishes": finishes}


def run_chunks(mod, chunks: list, native: bool, opts: dict) -> list:
    with using(mod):
        return list(recover_stream(chunks, native=native, has_tools=True, **given(opts, len(chunks))))


def normal(out: list, chunks: list) -> list:
    """The output with input objects named by position (identity) and call ids masked."""
    position = {id(c): k for k, c in enumerate(chunks)}
    return [("input object", position[id(c)]) if id(c) in position else canon(c) for c in out]


def expectations(mod, case: dict) -> dict:
    """Per choice, what parse and a one-feed scrubber say about its whole text (``truncated`` where the choice
    finished with ``length``)."""
    opts = plain(case["options"])
    finishes = {i: f["reason"] for s in case["steps"] if s["kind"] == "finish" for i, f in s["finish"].items()}
    exp = {}
    with using(mod):
        for i, text in choice_texts(case).items():
            cut = finishes.get(i) == "length"
            exp[i] = (parse(text, truncated=cut, **opts), scrub(mod, [text], opts, cut)["reasoning"], text)
    return exp


def check_chunk_outputs(where, name, mod, case, native, out, exp, ref) -> list:
    found = []
    _, entries, recovered = ref
    finishes = {i: f["reason"] for s in case["steps"] if s["kind"] == "finish" for i, f in s["finish"].items()}
    for i, (p, reasoning, _text) in exp.items():
        got = per_choice(out, i)
        tag_ = f"choice {i}, native={native}"
        content = got["content"] if case["options"].get("trim_blanks") else got["content"].strip()
        if content != p.content:
            found.append(
                differ(
                    where,
                    "content != parse",
                    f"parse ({tag_})",
                    p.content,
                    "stream" if case["options"].get("trim_blanks") else "stream (stripped)",
                    content,
                    name,
                )
            )
        if got["calls"] != entries[i]:
            found.append(
                differ(
                    where,
                    "tool_calls != parse's calls (as the gate allows)",
                    f"expected ({tag_})",
                    entries[i],
                    "stream",
                    got["calls"],
                    name,
                )
            )
        # a cut output (length) keeps its finish_reason
        want = (
            [("tool_calls" if recovered.get(i) and finishes[i] != "length" else finishes[i])] if i in finishes else []
        )
        if got["finishes"] != want:
            found.append(differ(where, "finish_reason", f"expected ({tag_})", want, "stream", got["finishes"], name))
        if got["reasoning"] != reasoning:
            found.append(
                differ(
                    where,
                    "reasoning_content != the scrubber's reasoning",
                    f"scrubber ({tag_})",
                    reasoning,
                    "stream",
                    got["reasoning"],
                    name,
                )
            )
    return found


def check_responses(case: dict, native: bool, name: str, mod, exp: dict) -> list:
    """The same texts as whole ``chat.completion`` messages: ``recover_response`` and ``recover_response_bytes``
    rewrite a choice exactly when the gate allows and ``parse`` changes its text (removes markup, or moves
    reasoning out), as ``parse`` says -- what the chunk layer does to the same text. A choice the stream finished
    with ``length`` finishes so here too: cut, it keeps that finish_reason."""
    opts = case["options"]
    cut = {i for s in case["steps"] if s["kind"] == "finish" for i, f in s["finish"].items() if f["reason"] == "length"}
    structured = {}
    for step in case["steps"]:
        if step["kind"] == "struct":
            structured.setdefault(step["index"], set()).add(step["upstream"])
    choices, expected, changed = [], [], False
    for i, (p, _, text) in exp.items():
        message = {"role": "assistant", "content": text}
        if i in structured:
            message["tool_calls"] = [
                {k: v for k, v in STRUCT_PARTS["whole"](u).items() if k != "index"} for u in sorted(structured[i])
            ]
        choice = {
            "index": i,
            "message": message,
            "logprobs": None,
            "finish_reason": "tool_calls" if i in structured else "length" if i in cut else "stop",
        }
        choices.append(choice)
        whole = text if opts.get("trim_blanks") else text.strip()
        if (not native or i not in structured) and (p.removed or p.reasoning or p.content != whole):
            changed = True
            new = {**message, "content": p.content or None}
            if p.reasoning:
                new["reasoning_content"] = p.reasoning
            choice = {**choice, "message": new}
            if p.calls:
                new["tool_calls"] = message.get("tool_calls", []) + [c.to_openai() for c in p.calls]
                if i not in cut:
                    choice["finish_reason"] = "tool_calls"
        expected.append(choice)
    response = {
        "id": "chatcmpl-fuzz",
        "object": "chat.completion",
        "created": 1764547200,
        "model": "m",
        "choices": choices,
    }
    want = canon({**response, "choices": expected})
    try:
        body = json.dumps(response, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        body = json.dumps(response).encode()
    found = []
    try:
        with using(mod):
            got = recover_response(response, native=native, has_tools=True, **given(opts, len(body)))
            got_bytes = recover_response_bytes(body, native=native, has_tools=True, **given(opts, len(body) + 1))
    except Exception as exc:
        return [crashed("chunks", "recover_response(_bytes)", exc, name)]
    if canon(got) != want or (got is response) == changed:
        found.append(
            differ(
                "chunks",
                "recover_response != parse",
                f"expected (native={native})",
                want,
                "recover_response (the same object)" if got is response else "recover_response",
                canon(got),
                name,
            )
        )
    try:
        got_json = canon(json.loads(got_bytes))
    except (ValueError, TypeError):
        got_json = None
    if (got_bytes is body) == changed or (changed and got_json != want):
        label = "recover_response_bytes" + (" (the same object)" if got_bytes is body else "")
        found.append(
            differ(
                "chunks", "recover_response_bytes != parse", f"expected (native={native})", want, label, got_bytes, name
            )
        )
    return found


def run_machine(mod, chunks: list, native: bool, opts: dict) -> tuple:
    """``ChunkRecovery`` pushed ``chunks``, then closed: (the chunks out, ``.recovered``, ``.abandoned``)."""
    with using(mod):
        machine = ChunkRecovery(native=native, has_tools=True, **given(opts, len(chunks)))
        out = [new for chunk in chunks for new in machine.push(chunk)] + machine.close()
    return out, machine.recovered, machine.abandoned


def structured_call(call: dict) -> bool:
    """A rebuilt call that upstream sent structured (``STRUCT_PARTS``' ids)."""
    return (call["id"] or "").startswith("call_s")


def check_streamed(where, name, case, native, out, off, kinds, counts) -> list:
    """``stream_arguments=True`` (``out``) against the option off on the same chunks (``off``), per choice
    (docs/gateway.md): every entry fits a client's rebuild; content and reasoning are the same; the calls
    sent are those ``reference_streamed`` says, in index order, a streamed one's first entry with empty
    arguments; with the abandoned ones taken out (each left its partial call at its index, as sent) the calls
    rebuilt are the option off's, ids masked -- but for the one call streaming when a structured call closed
    the gate (native): it goes on to its end, so it may be one more, the last; structured calls as with the
    option off; ``finish_reason`` is ``tool_calls`` once any call was sent for the choice, a partial one
    included; ``counts`` (``.recovered``, ``.abandoned``) are the calls kept and the calls abandoned."""
    found = []
    finishes = {i: f["reason"] for s in case["steps"] if s["kind"] == "finish" for i, f in s["finish"].items()}
    kept_n = abandoned_n = 0
    if any("abandoned" in k for k in kinds.values()):
        # a call abandoned after its start went out: the stream ends there with the error chunk (the openai SDK
        # raises it, so no client holds the unfinished call), counted (those its last events abandoned); nothing follows
        errors = [k for k, c in enumerate(out) if "error" in c]
        if errors != [len(out) - 1] or out[-1] != abandoned_error_chunk() or counts[1] < 1:
            found.append(differ(where, "stream_arguments: an abandoned call ends the stream", "reference", kinds,
                                "sent (last chunks), counts", (out[-3:], counts), name))  # fmt: skip
        return found

    def rows(calls) -> list:
        return [(mask(c["id"] or ""), c["name"], c["arguments"]) for c in calls]

    for i in choice_texts(case):
        got, want = rebuild(out, i), rebuild(off, i)
        tag_ = f"choice {i}, native={native}"

        def mismatch(check, left_name, left, right_name, right, tag_=tag_):
            found.append(
                differ(where, f"stream_arguments: {check}", f"{left_name} ({tag_})", left, right_name, right, name)
            )

        if got["odd"]:
            mismatch("tool_calls entries a client cannot rebuild", "entries", got["odd"], "in", out)
        for field in ("content", "reasoning"):
            if got[field] != want[field]:
                mismatch(f"{field} != the option off", "option off", want[field], "option on", got[field])
        calls = [c for _, c in sorted(got["calls"].items())]
        ours = [c for c in calls if not structured_call(c)]
        theirs = [c for _, c in sorted(want["calls"].items())]
        if rows(filter(structured_call, calls)) != rows(filter(structured_call, theirs)):
            mismatch("structured calls != the option off", "option off", rows(theirs), "option on", rows(calls))
        if i in finishes and got["finishes"] != ["tool_calls" if ours and finishes[i] != "length" else finishes[i]]:
            mismatch("finish_reason", "original", finishes[i], "sent", (got["finishes"], rows(ours)))
        abandoned_n += kinds[i].count("abandoned")
        kept_n += len(kinds[i]) - kinds[i].count("abandoned")
        if len(ours) != len(kinds[i]):
            mismatch("calls sent != the reference's", "reference", kinds[i], "sent", rows(ours))
            continue
        kept = []
        for c, kind in zip(ours, kinds[i], strict=True):
            if kind != "whole" and c["first"] != "":
                mismatch("a streamed call's first entry has arguments", kind, rows([c]), "first entry's", c["first"])
            if kind != "abandoned":
                kept.append((c, kind))
        a, b = rows([c for c, _ in kept]), rows([c for c in theirs if not structured_call(c)])
        if a != b:
            gate = min((c["at"] for c in calls if structured_call(c)), default=None)  # a structured call's first entry
            late = native and gate is not None and a[:-1] == b and kept[-1][1] == "ended" and kept[-1][0]["at"] < gate
            if not late:
                mismatch("calls, abandoned ones out, != the option off", "option off", b, "option on", (a, kinds[i]))
    if counts != (kept_n, abandoned_n):
        found.append(
            differ(
                where,
                "stream_arguments: .recovered, .abandoned",
                f"calls kept, abandoned (native={native})",
                (kept_n, abandoned_n),
                ".recovered, .abandoned",
                counts,
                name,
            )
        )
    return found


def check_sent(chunks: list, out: list, same: list, native: bool, name: str, label: str) -> list:
    """A chunk that needs no change (``same``, by a reference) comes back as the very same object, and only
    then; no chunk goes out empty."""
    found = []
    ids = {id(c) for c in out}
    for k, (chunk, unchanged) in enumerate(zip(chunks, same, strict=False)):
        if (id(chunk) in ids) != unchanged:
            found.append(
                differ(
                    "chunks",
                    f"unchanged chunk identity{label}",
                    f"input chunk {k} (native={native})",
                    chunk,
                    "needs no change by the reference scrubber / came back as itself",
                    (unchanged, id(chunk) in ids),
                    name,
                )
            )
            break
    inputs = {id(c) for c in chunks}
    for chunk in out:
        if id(chunk) not in inputs and not chunk["choices"] and chunk.get("usage") is None:
            found.append(differ("chunks", f"empty chunk sent{label}", "output", out, "empty", chunk, name))
            break
    return found


def check_chunks(case: dict) -> list:
    opts = case["options"]
    streams = bool(opts.get("stream_arguments"))
    found, outs = [], {}
    for native in case["natives"]:
        for name, mod in MODS:
            chunks = build_chunks(case)
            before = copy.deepcopy(chunks)
            try:
                exp = expectations(mod, case)
                out = run_chunks(mod, chunks, native, plain(opts) if streams else opts)  # (False, if given)
                ref = reference(mod, case, native)
                if streams:
                    on, *counts = run_machine(mod, chunks, native, opts)
                    same, kinds = reference_streamed(mod, case, native)
            except Exception as exc:
                found.append(crashed("chunks", "recover_stream/parse", exc, name))
                continue
            if chunks != before:
                found.append(differ("chunks", "input mutated", "before", before, "after", chunks, name))
            found += check_chunk_outputs("chunks", name, mod, case, native, out, exp, ref)
            found += check_responses(case, native, name, mod, exp)
            found += check_sent(chunks, out, ref[0], native, name, "")
            outs[name, native, "off"] = normal(out, chunks)
            if streams:
                found += check_streamed("chunks", name, case, native, on, out, kinds, tuple(counts))
                if not counts[1]:  # (a stream that failed is checked as such above)
                    found += check_sent(chunks, on, same, native, name, " (stream_arguments)")
                outs[name, native, "on"] = normal(on, chunks)
        for option in ("off", "on"):
            a, b = outs.get(("c", native, option)), outs.get(("py", native, option))
            if a is not None and b is not None and a != b:
                k = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
                found.append(
                    differ(
                        "chunks",
                        "cython != twin" + (" (stream_arguments)" if option == "on" else ""),
                        f"cython (native={native}) from output chunk {k}",
                        a[k : k + 3],
                        "twin",
                        b[k : k + 3],
                    )
                )
    return found


def stream_candidates(case: dict):
    steps = case["steps"]

    def step_as(k: int, **changes) -> dict:  # the case with step k changed
        return {**case, "steps": [*steps[:k], {**steps[k], **changes}, *steps[k + 1 :]]}

    if len(case["natives"]) > 1:
        for native in case["natives"]:
            yield {**case, "natives": [native]}
    for flag in ("chars", "usage_null", "fingerprint", "bom", "usage_every"):
        if case.get(flag):
            yield {**case, flag: False}
    for k in range(len(case["cuts"])):
        yield {**case, "cuts": case["cuts"][:k] + case["cuts"][k + 1 :]}
    for k in range(len(steps)):
        yield {**case, "steps": steps[:k] + steps[k + 1 :]}
    for k, step in enumerate(steps):  # one choice fewer in a chunk
        key = "contents" if "contents" in step else "finish" if "finish" in step else None
        if key and len(step[key]) > 1:
            for i in step[key]:
                yield step_as(k, **{key: {j: v for j, v in step[key].items() if j != i}})
        if step["kind"] == "role" and len(step["indexes"]) > 1:
            for i in step["indexes"]:
                yield step_as(k, indexes=[j for j in step["indexes"] if j != i])
    for k in range(len(steps) - 1):  # two deltas of one choice in one
        a, b = steps[k], steps[k + 1]
        if (
            a["kind"] == b["kind"] == "text"
            and len(a["contents"]) == len(b["contents"]) == 1
            and (list(a["contents"]) == list(b["contents"]))
        ):
            (i, x), (_, y) = next(iter(a["contents"].items())), next(iter(b["contents"].items()))
            yield {**case, "steps": [*steps[:k], {**a, "contents": {i: (x or "") + (y or "")}}, *steps[k + 2 :]]}
    for k, step in enumerate(steps):  # plainer chunks and SSE encoding
        if step.get("logprobs"):
            yield step_as(k, logprobs=False)
        for key in step.get("enc", {}):
            yield step_as(k, enc={x: v for x, v in step["enc"].items() if x != key})
    for key, plain in (("ascii", False), ("esc", False), ("compact", True), ("nl", "\n")):
        if case["enc"][key] != plain:
            yield {**case, "enc": {**case["enc"], key: plain}}
    if case.get("events"):
        yield {**case, "events": False}
    if case.get("max_event"):
        yield {**case, "max_event": None}
    for opts in _option_cuts(case["options"]):
        yield {**case, "options": opts}
    for k, step in enumerate(steps):  # shorter texts
        if step["kind"] == "text":
            for i, t in step["contents"].items():
                for shorter in _string_cuts(t or ""):
                    if shorter:
                        yield step_as(k, contents={**step["contents"], i: shorter})
        elif step["kind"] == "finish":
            for i, f in step["finish"].items():
                for shorter in _string_cuts(f["content"] or ""):
                    yield step_as(k, finish={**step["finish"], i: {**f, "content": shorter or None}})


def describe_stream(case: dict) -> str:
    lines = [
        f"  options = {case['options']!r}",
        f"  native in {case['natives']}",
        f"  choice texts = {choice_texts(case)!r}",
        "  chunks (in order):",
    ]
    lines += [f"    {json.dumps(c, ensure_ascii=True)}" for c in build_chunks(case)]
    return "\n".join(lines)


def test_chunk_layer_agrees():
    fuzz("chunks", gen_stream_case, check_chunks, stream_candidates, describe_stream)


# --- layer 3: SSERecovery over the SSE bytes -------------------------------------------------------


def sse_body(case: dict) -> bytes:
    return b"".join(sse_events(case))


def sse_events(case: dict) -> list:
    """The SSE events of the case's chunks (the stream's encoding, with each step's deviations), then [DONE]."""
    out = []
    for step, chunk in zip(case["steps"], build_chunks(case), strict=False):
        enc = {**case["enc"], **step["enc"]}
        nl = enc["nl"].encode()
        separators = (",", ":") if enc["compact"] else None
        payload = json.dumps(chunk, ensure_ascii=enc["ascii"], separators=separators)
        if enc["esc"]:
            payload = payload.replace("<", "\\u003c").replace(">", "\\u003e")
        try:
            data = payload.encode()
        except UnicodeEncodeError:  # lone surrogates: escaped, as any JSON encoder must
            data = json.dumps(chunk, separators=separators).encode()
        fields = b"event: message" + nl + b"id: 7" + nl if enc["fields"] else b""
        out.append((b": keep-alive" + nl if enc["comment"] else b"") + fields + b"data: " + data + nl + nl)
    nl = case["enc"]["nl"].encode()
    out.append(b"data: [DONE]" + nl + nl)
    if case["bom"]:
        out[0] = b"\xef\xbb\xbf" + out[0]
    return out


def gen_sse_case(rng: random.Random) -> dict:
    case = gen_stream_case(rng)
    g = G(rng)
    body = sse_body(case)
    n = len(body)
    cuts = {rng.randint(1, n - 1) for _ in range(rng.randint(1, 24))}
    inside = [k for k in range(1, n) if 0x80 <= body[k] < 0xC0]  # continuation bytes: a cut inside a character
    cuts |= set(rng.sample(inside, min(len(inside), rng.randint(0, 6))))
    case["cuts"] = sorted(cuts)
    case["chars"] = n < 5000 and g.chance(0.5)
    case["events"] = g.pick([False, "each", "each", "pairs"])  # reads that end where events end
    case["kinds"] = [g.pick([bytes, bytes, bytearray, memoryview]) for _ in range(8)]
    case["max_event"] = None
    if g.chance(0.12):  # a small cap: some events are over it (and pass verbatim), near some event's size
        sizes = event_sizes(case)[:-1] or [60]
        near_one = g.pick(sizes) + g.rng.randint(-2, 2)
        case["max_event"] = max(40, near_one if g.chance(0.6) else g.rng.randint(40, max(sizes) + 8))
    return case


def event_sizes(case: dict) -> list:
    """Each event's size as the cap counts it: its bytes before the line endings that end it (no BOM)."""
    sizes = []
    for raw in sse_events(case):
        nl = 2 if raw.endswith(b"\r\n\r\n") else 1
        sizes.append(len(raw.removeprefix(b"\xef\xbb\xbf")) - 2 * nl)
    return sizes


def capped_model(mod, case: dict, native: bool, chunks: list, oversized: list) -> tuple:
    """What a client should decode with a cap: oversized events as they were, the others through one
    ``ChunkRecovery`` that never sees the oversized ones, its close() at [DONE]."""
    with using(mod):
        machine = ChunkRecovery(native=native, has_tools=True, **case["options"])
        out = []
        for chunk, over in zip(chunks, oversized, strict=False):
            if machine.failed:  # the stream ended with the abandonment's error: nothing follows, oversized or not
                break
            out += [canon(chunk)] if over else [canon(c) for c in machine.push(chunk)]
        out += [canon(c) for c in machine.close()] + ([] if machine.failed else ["[DONE]"])
    return out, (machine.recovered, machine.abandoned)


def run_sse(mod, body: bytes, cuts: list, native: bool, opts: dict, kinds, max_event=None) -> tuple:
    """``body`` fed in the pieces ``cuts`` make: (the bytes out, ``.incomplete`` before the close,
    (``.recovered``, ``.abandoned``))."""
    with using(mod):
        r = SSERecovery(
            native=native, has_tools=True, **given(opts, len(body)), **({"max_event": max_event} if max_event else {})
        )
        out = []
        for k, (a, b) in enumerate(zip([0, *cuts], [*cuts, len(body)], strict=False)):
            kind = kinds[k % len(kinds)] if kinds else bytes
            out.append(r.feed(kind(body[a:b])))
        incomplete = r.incomplete
        out.append(r.close())
    return b"".join(out), incomplete, (r.recovered, r.abandoned)


def event_cuts(case: dict) -> list:
    """Offsets where events end: after each one (``each``) or after every second one (``pairs``)."""
    ends, pos = [], 0
    for event in sse_events(case):
        pos += len(event)
        ends.append(pos)
    return ends[:-1] if case["events"] == "each" else ends[1:-1:2]


def decoded(data: bytes) -> list:
    out = []
    for _, payload, _ in events(data):
        try:
            out.append(canon(json.loads(payload)))
        except ValueError:
            out.append(payload)
    return out


def check_sse(case: dict) -> list:
    opts = case["options"]
    streams = bool(opts.get("stream_arguments"))
    body = sse_body(case)
    cuts = [c for c in case["cuts"] if 0 < c < len(body)]
    found, whole_by = [], {}
    cap = case.get("max_event")
    oversized = [bool(cap) and size > cap for size in event_sizes(case)]
    for native in case["natives"]:
        for name, mod in MODS:
            chunks = build_chunks(case)
            try:
                if streams:
                    layer2, *layer2_counts = run_machine(mod, chunks, native, opts)
                    off = run_chunks(mod, chunks, native, plain(opts))
                else:
                    layer2, layer2_counts = run_chunks(mod, chunks, native, opts), None
                whole, incomplete, recovered = run_sse(mod, body, [], native, opts, None, cap)
                splits = {"random split": cuts}
                if case["chars"]:
                    splits["1-byte split"] = list(range(1, len(body)))
                if case["events"]:
                    splits[f"split at events ({case['events']})"] = event_cuts(case)
                runs = {label: run_sse(mod, body, c, native, opts, case["kinds"], cap) for label, c in splits.items()}
                if any(oversized):
                    model, model_recovered = capped_model(mod, case, native, chunks, oversized)
            except Exception as exc:
                found.append(crashed("sse", "SSERecovery/recover_stream", exc, name))
                continue
            whole_by[name, native] = mask(whole.decode("utf-8", "backslashreplace"))
            for label, (data, inc, _) in runs.items():
                if mask(data.decode("utf-8", "backslashreplace")) != whole_by[name, native]:
                    at = splits[label] if label != "1-byte split" else "every byte"
                    found.append(
                        differ(
                            "sse",
                            f"{label} != one feed (bytes)",
                            f"one feed (native={native})",
                            whole,
                            f"{label} at {at}",
                            data,
                            name,
                        )
                    )
                if inc:
                    found.append(differ("sse", "incomplete after whole events", "expected", False, label, inc, name))
            if incomplete:
                found.append(differ("sse", "incomplete after whole events", "expected", False, "one feed", True, name))
            try:
                got = decoded(whole)
            except UnicodeDecodeError as exc:
                found.append(differ("sse", "output is not UTF-8", "output", whole, "error", exc, name))
                continue
            if any(oversized):  # the events over the cap pass verbatim, unseen by the choices
                pos = 0
                # (a stream that failed, a streamed call abandoned, stops at its error: the model below checks it)
                failed = b'"code":"tool_call_abandoned"' in whole
                for k, raw in enumerate(sse_events(case)):
                    if oversized[k] and not failed:
                        at = whole.find(raw.removeprefix(b"\xef\xbb\xbf"), pos)
                        if at < 0:
                            found.append(
                                differ(
                                    "sse",
                                    "event over max_event not sent verbatim",
                                    f"event {k} (max_event={cap}, size {event_sizes(case)[k]})",
                                    raw,
                                    "output",
                                    whole,
                                    name,
                                )
                            )
                            break
                        pos = at + len(raw) - (3 if k == 0 and case["bom"] else 0)
                if got != model:
                    k = next(
                        (k for k, (x, y) in enumerate(zip(got, model, strict=False)) if x != y),
                        min(len(got), len(model)),
                    )
                    found.append(
                        differ(
                            "sse",
                            "decoded events != the model with events over max_event skipped",
                            f"model (native={native}, max_event={cap}, oversized events "
                            f"{[k for k, o in enumerate(oversized) if o]}) from chunk {k}",
                            model[k : k + 3],
                            "SSERecovery",
                            got[k : k + 3],
                            name,
                        )
                    )
                if recovered != model_recovered:
                    found.append(
                        differ(
                            "sse",
                            ".recovered",
                            "the model's recovered, abandoned calls",
                            model_recovered,
                            "SSERecovery.recovered, .abandoned",
                            recovered,
                            name,
                        )
                    )
                continue
            failed = bool(layer2) and "error" in layer2[-1]  # nothing follows the abandonment's error
            want = [canon(c) for c in layer2] + ([] if failed else ["[DONE]"])
            if got != want:
                k = next(
                    (k for k, (x, y) in enumerate(zip(got, want, strict=False)) if x != y), min(len(got), len(want))
                )
                found.append(
                    differ(
                        "sse",
                        "decoded events != recover_stream's chunks",
                        f"recover_stream (native={native}) from chunk {k}",
                        want[k : k + 3],
                        "SSERecovery",
                        got[k : k + 3],
                        name,
                    )
                )
            kept = {id(c) for c in layer2}
            pos = 0
            for k, (chunk, raw) in enumerate(zip(chunks, sse_events(case), strict=False)):
                if id(chunk) in kept:  # recover_stream left it alone: its event goes out byte for byte
                    at = whole.find(raw, pos)
                    if at < 0:
                        found.append(
                            differ(
                                "sse",
                                "unchanged event not sent byte for byte",
                                f"event {k} (native={native}), unchanged by recover_stream",
                                raw,
                                "output",
                                whole,
                                name,
                            )
                        )
                        break
                    pos = at + len(raw)
            n_recovered = sum(
                1
                for c in layer2
                for ch in c.get("choices") or []
                for t in (ch.get("delta") or {}).get("tool_calls") or []
                if t.get("id") and not t["id"].startswith("call_s")
            )
            # (with stream_arguments, the calls sent count the abandoned ones too: ChunkRecovery's counts)
            counts = tuple(layer2_counts) if streams else (n_recovered, 0)
            if recovered != counts:
                found.append(
                    differ(
                        "sse",
                        ".recovered",
                        "recover_stream's recovered, abandoned calls",
                        counts,
                        "SSERecovery.recovered, .abandoned",
                        recovered,
                        name,
                    )
                )
            try:
                seen = [json.loads(e[1]) for e in events(whole) if e[1] != "[DONE]"]
            except ValueError:
                continue  # reported above: the events are not recover_stream's chunks
            if streams:
                kinds = reference_streamed(mod, case, native)[1]
                found += check_streamed("sse", name, case, native, seen, off, kinds, recovered)
            else:
                found += check_chunk_outputs(
                    "sse", name, mod, case, native, seen, expectations(mod, case), reference(mod, case, native)
                )
        if ("c", native) in whole_by and ("py", native) in whole_by and whole_by["c", native] != whole_by["py", native]:
            found.append(
                differ(
                    "sse",
                    "cython != twin (bytes, ids masked)",
                    f"cython (native={native})",
                    whole_by["c", native],
                    "twin",
                    whole_by["py", native],
                )
            )
    return found


def describe_sse(case: dict) -> str:
    body = sse_body(case)
    cuts = [c for c in case["cuts"] if 0 < c < len(body)]
    return (
        describe_stream(case)
        + f"\n  SSE body = {body!r}\n  cuts = {cuts}"
        + ("  (and 1-byte splits)" if case["chars"] else "")
        + (f"  (and at event ends: {event_cuts(case)})" if case["events"] else "")
        + f"\n  feed types = {[k.__name__ for k in case['kinds']]}"
        + (f"\n  max_event = {case['max_event']} (event sizes {event_sizes(case)})" if case.get("max_event") else "")
    )


def test_sse_layer_agrees():
    fuzz("sse", gen_sse_case, check_sse, stream_candidates, describe_sse)


def test_the_generator_reaches_every_literal_and_grammar():
    """The vocabulary is the table: every literal is generated, every block kind written whole."""
    assert set(LITERALS) >= {m.literal for m in MARKERS} | {b.opener for b in BLOCKS if b.anchor is None}
    g = G(random.Random(SEED))
    seen = "".join(block(g) for _ in range(4000))
    assert all(b.opener in seen for b in BLOCKS)
    unknown = sorted({b.grammar for b in BLOCKS} - KNOWN_GRAMMARS)
    if unknown:  # a new grammar: its blocks get JSON call bodies until body_for learns it
        warnings.warn(f"test_differential: no body generator for grammar(s) {unknown}", stacklevel=1)
