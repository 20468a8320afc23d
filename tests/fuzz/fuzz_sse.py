"""atheris harness: SSERecovery over raw SSE bytes in random splits, Cython against the twin.

    python tests/fuzz/fuzz_sse.py [libFuzzer flags] [CORPUS_DIR ...]   fuzz (see tests/fuzz/README.md)
    python tests/fuzz/fuzz_sse.py CRASH_FILE                            replay one input
    python tests/fuzz/fuzz_sse.py --explain FILE                        print the case an input decodes to

From one input (layout: fuzz_common's docstring): ``native``, ``has_tools``, the scrubber options,
``max_event``, how to split, and the upstream bytes. Those are either the front of the input as it
is (mode 0: any bytes), or built from its text: pieces separated by NUL characters, each the
``content`` of a ``chat.completion.chunk`` event, framed (modes 2, 3) with a seeded mix of LF / CRLF /
CR line endings, a BOM, comments, ``event:``/``id:`` fields, blank lines, non-chunk events, escaped
``<`` (``\\u003c``, as Go writes it), a structured call first, a second choice, a finish chunk and
``data: [DONE]``. It raises, and so makes libFuzzer save the input, when:

- on either implementation (``textcalls._scan.impl`` switched), the bytes out for the split, joined,
  differ from feeding everything at once (``close()`` included), call ids ``call_…`` masked — checked
  when the stream is no longer than ``max_event``: an event over the cap is sent on verbatim as it
  arrives (the README), so a split can then rightly change the output;
- the Cython and the twin runs differ in any ``feed``/``close`` output (ids masked) or ``recovered``;
- with ``has_tools=False``, the output is not the input byte for byte;
- anything raises on this input (bytes in any split are valid input);
- for the one bad-input probe the input selects, either implementation does not raise TypeError or
  ValueError with a message, or the two raise different types.
"""

from __future__ import annotations

import json
import os
import random
import sys

import atheris

with atheris.instrument_imports(include=["textcalls", "fuzz_common"]):
    import fuzz_common as fc

    from textcalls.sse import SSERecovery, recover_sse

MAX_EVENTS = (1 << 20, 1, 2, 3, 8, 16, 64, 200)
NEWLINES = (b"\n", b"\r\n", b"\r")
MAX_PIECES = 512  # byte-by-byte splits of streams up to 512 bytes; longer ones in at most 512 pieces


# -- decoding -------------------------------------------------------------------------------------


def decode_case(data: bytes) -> dict:
    fdp = atheris.FuzzedDataProvider(data)
    native = bool(fc.int_in(fdp, 0, 1))
    has_tools = fc.int_in(fdp, 0, 7) != 0
    options = fc.scrubber_options(fdp)
    max_event = fc.pick(fdp, MAX_EVENTS)
    mode = fc.int_in(fdp, 0, 3)
    framing = fc.int_in(fdp, 0, 0xFFFFFFFF)
    split = fc.cut_spec(fdp)
    bad = fc.int_in(fdp, 0, 255)
    rest = fdp.ConsumeBytes(fdp.remaining_bytes())
    raw = rest if mode == 0 else build(fc.decode(rest).split("\0"), mode, framing)
    return {
        "native": native,
        "has_tools": has_tools,
        "options": options,
        "max_event": max_event,
        "mode": mode,
        "raw": raw,
        "cuts": fc.cuts_for(split, len(raw), MAX_PIECES),
        "bad": bad,
    }


def chunk(index=0, finish=None, **delta) -> dict:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def build(texts: list, mode: int, framing: int) -> bytes:
    """An SSE stream whose chunk events carry ``texts`` as content deltas (see the module docstring)."""
    if mode == 1:  # plain: one LF-framed event per piece, then the finish chunk and [DONE]
        events = [b"data: " + _dumps(chunk(content=t), True) + b"\n\n" for t in texts]
        return b"".join(events + [b"data: " + _dumps(chunk(finish="stop"), True) + b"\n\n", b"data: [DONE]\n\n"])
    rng = random.Random(framing)
    nl = rng.choice(NEWLINES)
    mixed = rng.random() < 0.3  # each event its own line ending
    two = mode == 3  # a second choice, index 1
    out = [b"\xef\xbb\xbf"] if rng.random() < 0.2 else []
    if rng.random() < 0.2:
        call = {"index": 0, "id": "call_s", "type": "function", "function": {"name": "s", "arguments": "{}"}}
        out.append(b"data: " + _dumps(chunk(tool_calls=[call]), True) + nl + nl)
    for t in texts:
        if mixed:
            nl = rng.choice(NEWLINES)
        extra = rng.choice(["", "", "", "comment", "fields", "blank", "other", "escaped", "nonascii", "role"])
        if extra == "comment":
            out.append(b": ping" + nl)
        elif extra == "fields":
            out.append(b"event: chunk" + nl + b"id: 9" + nl)
        elif extra == "blank":
            out.append(nl)
        elif extra == "other":
            out.append(b'data: {"error": "<tool_call>"}' + nl + nl)
        delta = {"role": "assistant", "content": t} if extra == "role" else {"content": t}
        line = _dumps(chunk(index=rng.randrange(2) if two else 0, **delta), extra != "nonascii")
        if extra == "escaped":
            line = line.replace(b"<", b"\\u003c").replace(b"/", b"\\/")
        out.append(b"data: " + line + nl + nl)
    for index in (0, 1) if two else (0,):
        if rng.random() < 0.7:
            out.append(b"data: " + _dumps(chunk(index=index, finish="stop"), True) + nl + nl)
    if rng.random() < 0.7:
        out.append(b"data: [DONE]" + nl + nl)
    return b"".join(out)


def _dumps(obj, ascii_only: bool) -> bytes:
    return fc.encode(json.dumps(obj, ensure_ascii=ascii_only, separators=(",", ":")))


def seed(
    raw_or_texts,
    *,
    native=0,
    has_tools=1,
    mode=0,
    framing=0,
    smode=3,
    step=1,
    cuts=(),
    bad=255,
    max_event=0,
    fmode=0,
    mask=0,
) -> bytes:
    """The input that decodes to these choices: ``raw_or_texts`` is the bytes (mode 0) or the list
    of content pieces (modes 1-3)."""
    front = raw_or_texts if mode == 0 else fc.encode("\0".join(raw_or_texts))
    return front + fc.trailer(
        (native, 1),
        (has_tools, 1),
        (fmode, 1),
        (mask, 4),
        (0, 1),
        (0, 1),
        (0, 1),
        (0, 1),
        (1, 1),
        (max_event, 1),
        (mode, 1),
        (framing, 4),
        (smode, 1),
        (step - 1, 1),
        (len(cuts), 1),
        *((c, 2) for c in cuts),
        (bad, 1),
    )


# -- the checks -----------------------------------------------------------------------------------


def run(mod, case: dict, cuts: list):
    with fc.use_impl(mod):
        sse = SSERecovery(
            native=case["native"], has_tools=case["has_tools"], max_event=case["max_event"], **case["options"]
        )
        outs = [sse.feed(piece) for piece in fc.pieces(case["raw"], cuts)]
        outs.append(sse.close())
        fc.check(sse.close() == b"", "a second close() returned bytes")
    return [fc.masked(out) for out in outs], sse.recovered


def check_case(case: dict) -> None:
    split = {name: run(mod, case, case["cuts"]) for name, mod in fc.IMPLS}
    fc.check(split["c"] == split["py"], "Cython and twin differ for the same split", split["c"], split["py"])
    for name, mod in fc.IMPLS:
        if len(case["raw"]) > case["max_event"]:
            break  # an event over max_event is passed on verbatim as it arrives: where it is cut matters
        whole = run(mod, case, [])
        fc.check(
            b"".join(split[name][0]) == b"".join(whole[0]) and split[name][1] == whole[1],
            f"{name}: the split's output differs from one feed",
            split[name],
            whole,
        )
    if not case["has_tools"]:
        fc.check(b"".join(split["c"][0]) == fc.masked(case["raw"]), "has_tools=False changed the bytes")

    probe = case["bad"]
    if probe < len(BAD):
        raised = [
            fc.expect_bad_input(f"{name}: {BAD[probe][0]}", _in(mod, BAD[probe][1]), case) for name, mod in fc.IMPLS
        ]
        fc.check(raised[0] is raised[1], f"{BAD[probe][0]}: different exception types", raised)


def _in(mod, fn):
    def call(case):
        with fc.use_impl(mod):
            fn(case)

    return call


def _sse(case, **bad):
    return SSERecovery(
        **{
            "native": case["native"],
            "has_tools": case["has_tools"],
            "max_event": case["max_event"],
            **case["options"],
            **bad,
        }
    )


def _feed_after_close(case):
    sse = _sse(case)
    sse.feed(case["raw"])
    sse.close()
    sse.feed(b"data: {}\n\n")


BAD = [
    ("max_event=0", lambda case: _sse(case, max_event=0)),
    ("max_event=True", lambda case: _sse(case, max_event=True)),
    ("max_event='1'", lambda case: _sse(case, max_event="1")),
    ("native=1", lambda case: _sse(case, native=1)),
    ("has_tools=None", lambda case: _sse(case, has_tools=None)),
    ("max_block=0", lambda case: _sse(case, max_block=0)),
    ("formats=['x']", lambda case: _sse(case, formats=["x"])),
    ("unknown_tools=None", lambda case: _sse(case, unknown_tools=None)),
    ("feed(str)", lambda case: _sse(case).feed(case["raw"].decode("latin-1"))),
    ("feed(None)", lambda case: _sse(case).feed(None)),
    ("feed() after close()", _feed_after_close),
    ("recover_sse(int)", lambda case: recover_sse(len(case["raw"]), native=False, has_tools=True)),
]


def TestOneInput(data: bytes) -> None:
    check_case(decode_case(data))


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--explain":
        with open(sys.argv[2], "rb") as f:
            case = decode_case(f.read())
        for key in ("native", "has_tools", "options", "max_event", "mode"):
            print(f"{key}:", case[key])
        print("bad-input probe:", BAD[case["bad"]][0] if case["bad"] < len(BAD) else None)
        print("bytes:", case["raw"])
        print("pieces:", fc.pieces(case["raw"], case["cuts"]))
        return
    if os.environ.get("TEXTCALLS_NO_EXTENSIONS"):
        raise SystemExit("TEXTCALLS_NO_EXTENSIONS is set: the harness compares the Cython extension with the twin")
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
