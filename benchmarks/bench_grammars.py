"""Body grammars on adversarial bodies: time must grow linearly with the body.

python -m pytest benchmarks/bench_grammars.py --benchmark-only -q
"""

import pytest

from textcalls.dialects import Context
from textcalls.dialects.xml import dsml, glm, minimax_m2, qwen3_xml, step3
from textcalls.relaxed_json import loads

from .conftest import ratio

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
    "relaxed-json-dense": (None, lambda n: "{a: 1, " * n + "}"),
}
for name in ADVERSARIAL:
    ratio(f"{name}: 4x the body / 1x (linear = 4)", f"{name}-40k", f"{name}-10k", "~4")


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
    bench(f"{name}-{size // 1000}k", _run, grammar, make(size))
