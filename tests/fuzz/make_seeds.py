"""Write the seed corpora (corpus/scrubber, corpus/sse) and the libFuzzer dictionary (textcalls.dict).

    python tests/fuzz/make_seeds.py

The files are committed; rerun this after changing the input layout of a harness (the seeds carry
the options trailer described in fuzz_common) or the table of markers (the dictionary lists every
opener, closer and marker literal of ``textcalls.markers``).
"""

from __future__ import annotations

import pathlib
import shutil

import fuzz_scrubber
import fuzz_sse

from textcalls.markers import BLOCKS, MARKERS

HERE = pathlib.Path(__file__).resolve().parent
CALL = '<tool_call>{"name": "lookup", "arguments": {"q": 1}}</tool_call>'
DS = (
    '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Oslo"}'
    "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
)
JSON_MESSAGE = 1 << 30  # the mask bit of the opt-in json_message (fuzz_common.formats_of, mode 1)

SCRUBBER = {
    "hermes": fuzz_scrubber.seed("Sure." + CALL + " done", split=(0, 1, (3, 12, 40))),
    "hermes_attr_split": fuzz_scrubber.seed(
        'a <tool_call id="call_0">\n{"name":"f","arguments":"{\\"a\\": 1}"}\n</tool_call>', split=(1, 1, ())
    ),
    "deepseek": fuzz_scrubber.seed("Let me check." + DS, split=(1, 1, ())),
    "fence": fuzz_scrubber.seed("Format:\n```\n" + CALL + "\n```\nthen " + CALL, split=(2, 3, ())),
    "think": fuzz_scrubber.seed(
        "<think>I could " + CALL + " but no.</think>Answer <think>" + CALL, reasoning=1, split=(2, 5, ())
    ),
    "qwen_xml_tools": fuzz_scrubber.seed(
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n"
        "</parameter>\n</function>\n</tool_call>",
        tools=2,
        unknown=1,
        split=(0, 1, (20, 21)),
    ),
    "json_message": fuzz_scrubber.seed(
        '  {"name": "f", "arguments": {"a": 1}}', mode=1, mask=JSON_MESSAGE, split=(1, 1, ())
    ),
    "mistral_cap": fuzz_scrubber.seed(
        '[TOOL_CALLS][{"name": "f", "arguments": {}}] tail [TOOL_CALLS]g{"x":', max_block=4, split=(2, 2, ())
    ),
    "surrogates": fuzz_scrubber.seed(
        'a\udc80<tool_call>{"name":"f","arguments":{"s":"\ud800"}}</tool_call>\udfff', split=(0, 1, (2, 3))
    ),
    "kimi_harmony": fuzz_scrubber.seed(
        '<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{"a":1}'
        "<|tool_call_end|><|tool_calls_section_end|><|channel|>analysis<|message|>hm<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.g <|constrain|>json<|message|>{}<|call|>",
        mode=3,
        split=(2, 7, ()),
    ),
}

SSE = {
    "raw_hermes_crlf": fuzz_sse.seed(
        fuzz_sse.build(["Sure.", CALL], 1, 0).replace(b"\n", b"\r\n"), smode=0, cuts=(10, 100, 101, 200)
    ),
    "raw_deepseek": fuzz_sse.seed(fuzz_sse.build(["Let me", " check." + DS[:30], DS[30:]], 1, 0), smode=1),
    "built_hermes_split_tag": fuzz_sse.seed(
        ["Sure. <tool", '_call>{"name": "lookup", ', '"arguments": {}}</tool', "_call> ok"],
        mode=2,
        framing=7,
        smode=2,
        step=9,
    ),
    "built_two_choices": fuzz_sse.seed(
        ["<think>plan</think>", CALL, "a < b", '[TOOL_CALLS][{"name": "m"}]'],
        mode=3,
        framing=12345,
        smode=0,
        cuts=(5, 50, 300),
    ),
    "built_native_small_cap": fuzz_sse.seed(["x" * 40, CALL], native=1, mode=2, framing=3, max_event=6, smode=1),
    "no_tools": fuzz_sse.seed([CALL], has_tools=0, mode=2, framing=99, smode=2, step=4),
}


def dictionary() -> str:
    words = {b.opener for b in BLOCKS} | {b.closer for b in BLOCKS if b.closer} | {m.literal for m in MARKERS}
    words |= {
        '"name"',
        '"arguments"',
        '"parameters"',
        "{",
        "}",
        "[",
        "]",
        '"',
        "\\",
        "```",
        "\n",
        "<function=",
        "<parameter=",
        "</parameter>",
        "</function>",
        "<arg_key>",
        "</arg_key>",
        "<arg_value>",
        "</arg_value>",
        '<invoke name="',
        "</invoke>",
        '<parameter name="',
        "call:",
        '<|"|>',
        "functions.",
        ":0",
        "data: ",
        "\n\n",
        "\r\n",
        "\r",
        "[DONE]",
        "\\u003c",
        "\\/",
        '"content":',
        '"tool_calls"',
        '"finish_reason":"stop"',
        '"index":1',
        ": ping",
        "\ufeff",
        # schema-guided heads (textcalls._guided): the harness's tool names, a label, a namespace, keyword args
        "get_weather",
        "lookup",
        "[Calling tool: ",
        "default_api:",
        "(city='",
        '<param name="',
        "`",
    }
    lines = []
    for word in sorted(words):
        raw = word.encode()
        lines.append(
            '"' + "".join(chr(b) if 0x20 <= b < 0x7F and b not in b'"\\' else f"\\x{b:02X}" for b in raw) + '"'
        )
    return (
        "# libFuzzer dictionary: the table's literals (UTF-8), JSON and SSE fragments. Written by make_seeds.py.\n"
        + "\n".join(lines)
        + "\n"
    )


def main() -> None:
    for name, seeds in (("scrubber", SCRUBBER), ("sse", SSE)):
        folder = HERE / "corpus" / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for stem, data in seeds.items():
            (folder / stem).write_bytes(data)
    (HERE / "textcalls.dict").write_text(dictionary())


if __name__ == "__main__":
    main()
