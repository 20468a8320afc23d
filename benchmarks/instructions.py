"""A fixed amount of scanning work, for counting instructions (this machine's timings are too noisy to compare
builds a few percent apart; an instruction count does not move):

    PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=cg.out python benchmarks/instructions.py parse deepseek

runs ``parse`` three times over a benchmark corpus (``stream``: three ``StreamScrubber`` runs over it in
4-character deltas). ``none`` as the corpus does only the start-up, to subtract. Compare builds by the
``summary`` line of each output, start-up subtracted. ``TEXTCALLS_NO_EXTENSIONS=1`` counts the twin. With
``PYTHONHASHSEED=0`` a build gives the same count run after run; with the hash seed random, about 1% apart.
"""

import sys

from corpora import calls, deepseek, html, prose

from textcalls import StreamScrubber, parse

CORPORA = {"deepseek": deepseek, "html": html, "calls": calls, "prose": prose, "none": lambda: ""}


def main(mode: str, corpus: str) -> None:
    text = CORPORA[corpus]()
    for _ in range(3):
        if mode == "parse":
            parse(text)
        else:
            scrubber = StreamScrubber()
            for i in range(0, len(text), 4):
                scrubber.feed(text[i : i + 4])
            scrubber.flush()


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("parse", "stream") or sys.argv[2] not in CORPORA:
        sys.exit(f"usage: instructions.py parse|stream {'|'.join(CORPORA)}")
    main(sys.argv[1], sys.argv[2])
