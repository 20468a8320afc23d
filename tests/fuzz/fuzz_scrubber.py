"""atheris harness: StreamScrubber, parse, hold_from and may_contain_markup, Cython against the twin.

    python tests/fuzz/fuzz_scrubber.py [libFuzzer flags] [CORPUS_DIR ...]   fuzz (see tests/fuzz/README.md)
    python tests/fuzz/fuzz_scrubber.py CRASH_FILE                            replay one input
    python tests/fuzz/fuzz_scrubber.py --explain FILE                        print the case an input decodes to

From one input (layout: fuzz_common's docstring): the options (a formats subset, opt-in dialects
included, max_block, tools, unknown_tools, calls_in_reasoning, code_fences), how to split, and a text
(UTF-8, where invalid bytes and encoded surrogates become lone surrogates). It raises, and so makes
libFuzzer save the input, when:

- ``textcalls._scan_c.StreamScrubber`` and ``textcalls._scan_py.StreamScrubber`` fed the same pieces
  differ in any ``feed``/``flush`` output, any ``take_reasoning()`` after it, the calls (name,
  arguments, id with ``call_…`` masked) or ``removed``;
- on either implementation, the joined outputs (content and reasoning), calls or ``removed`` for the
  split differ from feeding the whole text at once;
- the content ``.strip()``-ped, the calls, ``removed`` or the reasoning stripped differ from
  ``textcalls.parse(text, **options)`` (on ``textcalls._scan.impl``, the Cython one);
- ``hold_from`` (the text and each prefix ending at a cut) or ``may_contain_markup`` (the text, its
  UTF-8 bytes, its JSON encodings) differ between the two; or ``may_contain_markup`` says False for
  a text that ``parse`` removed markup from;
- a call's name is not a non-empty string or its arguments not the JSON text of an object;
- anything raises on this valid input (the README: any ``str`` is valid text and never raises);
- for the one bad-input probe the input selects, either implementation does not raise TypeError or
  ValueError with a message, or the two raise different types.
"""

from __future__ import annotations

import json
import os
import sys

import atheris

with atheris.instrument_imports(include=["textcalls", "fuzz_common"]):
    import fuzz_common as fc
    from fuzz_common import _scan_c

    import textcalls
    from textcalls import _scan_py

# -- decoding -------------------------------------------------------------------------------------


def decode_case(data: bytes) -> dict:
    fdp = atheris.FuzzedDataProvider(data)
    options = fc.scrubber_options(fdp)
    split = fc.cut_spec(fdp)
    bad = fc.int_in(fdp, 0, 255)
    text = fc.decode(fdp.ConsumeBytes(fdp.remaining_bytes()))
    return {"options": options, "cuts": fc.cuts_for(split, len(text)), "bad": bad, "text": text}


def seed(
    text: str, *, mode=0, mask=0, max_block=0, tools=0, unknown=0, reasoning=0, fences=1, split=(3, 1, ()), bad=255
) -> bytes:
    """The input that decodes to these choices (indexes into fuzz_common's lists)."""
    smode, step, raw = split
    return fc.encode(text) + fc.trailer(
        (mode, 1),
        (mask, 4),
        (max_block, 1),
        (tools, 1),
        (unknown, 1),
        (reasoning, 1),
        (fences, 1),
        (smode, 1),
        (step - 1, 1),
        (len(raw), 1),
        *((r, 2) for r in raw),
        (bad, 1),
    )


# -- the checks -----------------------------------------------------------------------------------


def run(mod, text: str, cuts: list, options: dict):
    s = mod.StreamScrubber(**options)
    outs, thoughts = [], []
    for piece in fc.pieces(text, cuts):
        outs.append(s.feed(piece))
        thoughts.append(s.take_reasoning())
    outs.append(s.flush())
    thoughts.append(s.take_reasoning())
    fc.check(s.flush() == "", "a second flush() returned text")
    return outs, thoughts, fc.calls_of(s), s.removed


def check_case(case: dict) -> None:
    text, cuts, options = case["text"], case["cuts"], case["options"]
    whole_c = run(_scan_c, text, [], options)
    split_c = run(_scan_c, text, cuts, options)
    split_py = run(_scan_py, text, cuts, options)
    fc.check(
        split_c == split_py,
        "Cython and twin differ for the same split (outputs, reasoning, calls, removed)",
        split_c,
        split_py,
    )
    whole_py = run(_scan_py, text, [], options)
    fc.check(whole_c == whole_py, "Cython and twin differ on the whole text", whole_c, whole_py)
    for name, split, whole in (("c", split_c, whole_c), ("py", split_py, whole_py)):
        joined = ("".join(split[0]), "".join(split[1]), split[2], split[3])
        fc.check(
            joined == ("".join(whole[0]), "".join(whole[1]), whole[2], whole[3]),
            f"{name}: the split's joined output differs from one feed",
            joined,
            whole,
        )

    parsed = textcalls.parse(text, **options)  # on textcalls._scan.impl
    got = ("".join(whole_c[0]).strip(), [(n, a) for n, a, _ in whole_c[2]], whole_c[3], "".join(whole_c[1]).strip())
    want = (parsed.content, [(c.name, c.arguments) for c in parsed.calls], parsed.removed, parsed.reasoning)
    fc.check(got == want, "the stream's output .strip() differs from parse()", got, want)

    formats = options["formats"]
    for end in sorted({len(text), *cuts}):
        prefix = text[:end]
        a, b = _scan_c.hold_from(prefix, formats=formats), _scan_py.hold_from(prefix, formats=formats)
        fc.check(a == b and 0 <= a <= end, "hold_from differs", prefix, a, b)
    forms = [text, fc.encode(text), json.dumps(text).encode(), fc.encode(json.dumps(text, ensure_ascii=False))]
    for form in forms:
        a = _scan_c.may_contain_markup(form, formats=formats)
        b = _scan_py.may_contain_markup(form, formats=formats)
        fc.check(a == b, "may_contain_markup differs", form, a, b)
        fc.check(a or parsed.removed == 0, "may_contain_markup says False, but parse() removed markup", form)

    probe = case["bad"]
    if probe < len(BAD):
        raised = [
            fc.expect_bad_input(f"{name}: {BAD[probe][0]}", BAD[probe][1], mod, text, options) for name, mod in fc.IMPLS
        ]
        fc.check(raised[0] is raised[1], f"{BAD[probe][0]}: different exception types", raised)


def _after_flush(mod, text, options):
    s = mod.StreamScrubber(**options)
    s.feed(text)
    s.flush()
    s.feed(text)


def _with(**bad):
    return lambda mod, text, options: mod.StreamScrubber(**{**options, **bad})


def _parse_with(mod, text, options, **bad):
    with fc.use_impl(mod):
        textcalls.parse(text, **{**options, **bad})


BAD = [
    ("max_block=0", _with(max_block=0)),
    ("max_block=-1", _with(max_block=-1)),
    ("max_block=True", _with(max_block=True)),
    ("max_block=1.5", _with(max_block=1.5)),
    ("max_block='8'", _with(max_block="8")),
    ("formats=['nope']", _with(formats=["hermes", "nope"])),
    ("formats='hermes'", _with(formats="hermes")),
    ("formats=3", _with(formats=3)),
    ("unknown_tools='keep'", _with(unknown_tools="keep")),
    ("calls_in_reasoning='x'", _with(calls_in_reasoning="x")),
    ("code_fences=1", _with(code_fences=1)),
    ("tools='f'", _with(tools="f")),
    ("tools=[{}]", _with(tools=[{"type": "function", "function": {}}])),
    ("feed(bytes)", lambda mod, text, options: mod.StreamScrubber(**options).feed(fc.encode(text))),
    ("feed(None)", lambda mod, text, options: mod.StreamScrubber(**options).feed(None)),
    ("feed() after flush()", _after_flush),
    ("hold_from(bytes)", lambda mod, text, options: mod.hold_from(fc.encode(text))),
    ("hold_from(formats=['x'])", lambda mod, text, options: mod.hold_from(text, formats=["x"])),
    ("may_contain_markup(int)", lambda mod, text, options: mod.may_contain_markup(len(text))),
    ("parse(bytes)", lambda mod, text, options: _parse_with(mod, fc.encode(text), {})),
    ("parse(max_block=0)", lambda mod, text, options: _parse_with(mod, text, options, max_block=0)),
]


def TestOneInput(data: bytes) -> None:
    check_case(decode_case(data))


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--explain":
        with open(sys.argv[2], "rb") as f:
            case = decode_case(f.read())
        print("options:", case["options"])
        print("bad-input probe:", BAD[case["bad"]][0] if case["bad"] < len(BAD) else None)
        print("text:", ascii(case["text"]))
        print("pieces:", ascii(fc.pieces(case["text"], case["cuts"])))
        return
    if os.environ.get("TEXTCALLS_NO_EXTENSIONS"):
        raise SystemExit("TEXTCALLS_NO_EXTENSIONS is set: the harness compares the Cython extension with the twin")
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
