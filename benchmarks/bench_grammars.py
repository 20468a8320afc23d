"""Body grammars: time must grow linearly with an adversarial body, and a big call costs about the same in
every dialect.

python -m pytest benchmarks/bench_grammars.py --benchmark-only -q
"""

import json

import pytest

from textcalls import parse
from textcalls.dialects import Context
from textcalls.dialects.pythonic import pythonic_list
from textcalls.dialects.xml import dsml, glm, minimax_m2, qwen3_xml, step3
from textcalls.relaxed_json import loads

from .conftest import BEST, ratio

B = "｜"  # U+FF5C
# each: a grammar and a body built from n repeats of a unit (n = 10_000 and 40_000 below)
ADVERSARIAL = {
    "qwen3-unclosed-params": (qwen3_xml, lambda n: "<function=f>\n" + "<parameter=a>x" * n),
    "qwen3-stray-closers": (qwen3_xml, lambda n: "<function=f>\n<parameter=a>\n" + "</parameter>x" * n),
    "glm-unclosed-values": (glm, lambda n: "f" + "<arg_key>a</arg_key><arg_value>x" * n),
    "minimax-attributes": (minimax_m2, lambda n: "<invoke " + 'a="' * n + ">"),
    "dsml-unclosed-params": (
        dsml,
        lambda n: f'<{B}DSML{B}invoke name="f">' + f'<{B}DSML{B}parameter name="p" string="true">v' * n,
    ),
    "step3-stray-closers": (
        step3,
        lambda n: '<steptml:invoke name="f"><steptml:parameter name="p">' + "</steptml:parameter>x" * n,
    ),
    "relaxed-json-nested-keys": (None, lambda n: "{a: 1, " * n + "}"),
    "relaxed-json-flat-keys": (None, lambda n: "{" + "a: 1, " * n + "}"),
    "relaxed-json-unclosed-array": (None, lambda n: '{"a": [' + "1, " * n),
    "pythonic-many-strings": (pythonic_list, lambda n: "[f(" + "a='x'," * n + ")]"),
    "pythonic-backslash-runs": (pythonic_list, lambda n: "[f(a='" + "\\\\\\'" * n + "')]"),
    "pythonic-unterminated": (pythonic_list, lambda n: "[f(a='" + "x" * n),
    # each escaped quote opens a literal that never closes (a regex sub read from each to the end: quadratic)
    "pythonic-escaped-quotes": (pythonic_list, lambda n: "[f(a=" + "'x,\\" * n),
}
for name in ADVERSARIAL:
    # linear, or less where a cap stops the reading early (TAGS_MAX, MAX_DEPTH, REPAIR_TOKENS)
    ratio(f"{name}: 4x the body / 1x (linear = 4)", f"{name}-40k", f"{name}-10k", "<= 4")
    ratio(f"  {name}: MB/s (UTF-8), the slower of 10k and 40k", f"{name}-MB/s", "one", ">= 20")


def _run(grammar, body):
    if grammar is None:
        try:
            loads(body)
        except ValueError:
            pass
    else:
        grammar("<opener>", body, Context())


@pytest.mark.parametrize("size", [10_000, 40_000], ids=["10k", "40k"])
@pytest.mark.parametrize("name", ADVERSARIAL)
def test_adversarial_body(bench, name, size):
    grammar, make = ADVERSARIAL[name]
    body = make(size)
    bench(f"{name}-{size // 1000}k", _run, grammar, body)
    # the rate, recorded as a pseudo-time (divided by "one") for the summary: the slower size's (a cap that
    # stops the reading early makes the bigger body look fast)
    rate = len(body.encode()) / BEST[f"{name}-{size // 1000}k"] / 1e6
    BEST[f"{name}-MB/s"] = min(rate, BEST.get(f"{name}-MB/s", rate))
    BEST["one"] = 1


# --- a coding agent's big call, in every dialect: 256 KiB of code in a write_file ----------------------

_CODE = ("def f(x):\n    return x * 2  # a line of code, with 'quotes' and \"quotes\"\n" * 4000)[: 1 << 18]
_ARGS = {"path": "a.py", "content": _CODE}
WRITE_FILE = {
    "hermes": "<tool_call>" + json.dumps({"name": "write_file", "arguments": _ARGS}) + "</tool_call>",
    "qwen3_coder": "<tool_call>\n<function=write_file>\n<parameter=path>\na.py\n</parameter>\n<parameter=content>\n"
    + _CODE
    + "\n</parameter>\n</function>\n</tool_call>",
    "glm": "<tool_call>write_file\n<arg_key>path</arg_key>\n<arg_value>a.py</arg_value>\n<arg_key>content</arg_key>\n"
    "<arg_value>" + _CODE + "</arg_value>\n</tool_call>",
    "minimax": '<minimax:tool_call>\n<invoke name="write_file">\n<parameter name="path">a.py</parameter>\n'
    '<parameter name="content">' + _CODE + "</parameter>\n</invoke>\n</minimax:tool_call>",
    "lfm2": "<|tool_call_start|>[write_file(path='a.py', content=" + repr(_CODE) + ")]<|tool_call_end|>",
    "deepseek": "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>write_file\n```json\n"
    + json.dumps(_ARGS)
    + "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
    "harmony": "<|channel|>commentary to=functions.write_file <|constrain|>json<|message|>"
    + json.dumps(_ARGS)
    + "<|call|>",
    "kimi_k2": "<|tool_calls_section_begin|><|tool_call_begin|>functions.write_file:0<|tool_call_argument_begin|>"
    + json.dumps(_ARGS)
    + "<|tool_call_end|><|tool_calls_section_end|>",
}
for name in WRITE_FILE:
    if name != "hermes":
        ratio(f"256 KiB write_file: {name} / the Hermes JSON form", f"write-{name}", "write-hermes", "<= 3")


# --- the same call, its content code dense in "<" and quotes (issue 31): what XML values and Gemma strings read ----

_LINE = "return x < 3 and '<tag>' != \"q\" or y <= z  # a <b> c"  # (no layout for the XML values' trim to take)
_DENSE = "\n".join([_LINE] * ((1 << 18) // (len(_LINE) + 1)))
_DENSE_ARGS = {"path": "a.py", "content": _DENSE}
_Q = '<|"|>'
WRITE_DENSE = {
    "hermes": "<tool_call>" + json.dumps({"name": "write_file", "arguments": _DENSE_ARGS}) + "</tool_call>",
    "qwen3_coder": "<tool_call>\n<function=write_file>\n<parameter=path>\na.py\n</parameter>\n<parameter=content>\n"
    + _DENSE
    + "\n</parameter>\n</function>\n</tool_call>",
    "glm": "<tool_call>write_file\n<arg_key>path</arg_key>\n<arg_value>a.py</arg_value>\n<arg_key>content</arg_key>\n"
    "<arg_value>" + _DENSE + "</arg_value>\n</tool_call>",
    "minimax": '<minimax:tool_call>\n<invoke name="write_file">\n<parameter name="path">a.py</parameter>\n'
    '<parameter name="content">' + _DENSE + "</parameter>\n</invoke>\n</minimax:tool_call>",
    "dsml": f'<{B}DSML{B}function_calls>\n<{B}DSML{B}invoke name="write_file">\n'
    f'<{B}DSML{B}parameter name="path" string="true">a.py</{B}DSML{B}parameter>\n'
    f'<{B}DSML{B}parameter name="content" string="true">' + _DENSE + f"</{B}DSML{B}parameter>\n"
    f"</{B}DSML{B}invoke>\n</{B}DSML{B}function_calls>",
    "lfm2": "<|tool_call_start|>[write_file(path='a.py', content=" + repr(_DENSE) + ")]<|tool_call_end|>",
    "gemma4": f"<|tool_call>call:write_file{{path:{_Q}a.py{_Q},content:{_Q}" + _DENSE + f"{_Q}}}<tool_call|>",
}
for name in WRITE_DENSE:
    if name != "hermes":
        ratio(f"256 KiB write_file, '<'-dense code: {name} / Hermes", f"dense-{name}", "dense-hermes", "<= 3")


#: benchmark name -> (the text, the arguments its one call must have): both shapes, every form
BIG_CALLS = {
    **{f"write-{name}": (text, _ARGS) for name, text in WRITE_FILE.items()},
    **{f"dense-{name}": (text, _DENSE_ARGS) for name, text in WRITE_DENSE.items()},
}


@pytest.mark.parametrize("name", BIG_CALLS)
def test_big_write_file(bench, name):
    text, arguments = BIG_CALLS[name]
    (call,) = parse(text).calls  # the same call in every dialect
    assert json.loads(call.arguments) == arguments, name
    bench(name, parse, text)
