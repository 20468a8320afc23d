"""The table's limits are checked where the table is defined (``markers.check_limits``), with errors
that name the entry; the Cython scanner is built for the same limits."""

import pytest

from textcalls import markers
from textcalls.markers import BLOCKS, MARKERS, Block, Marker, check_limits


def test_the_shipped_table_is_within_its_limits():
    check_limits(BLOCKS, MARKERS)
    firsts = {b.opener[0] for b in BLOCKS if b.anchor is None} | {m.literal[0] for m in MARKERS}
    assert len(firsts | {b.anchor for b in BLOCKS if b.anchor}) <= markers.FIRST_CHARS_MAX


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (Marker("x", "<"), "2-40 characters long: '<'"),
        (Marker("x", "<" + "a" * markers.LITERAL_MAX), "2-40 characters long"),
        (Block("x", "｜tool", "｜end", "hermes"), "start with an ASCII character: '｜tool'"),
        (Block("x", "<x>", "</" + "x" * markers.LITERAL_MAX + ">", "hermes"), "a closer must be 1-40 characters long"),
        (Block("x", "word", None, "hermes", anchor="（"), "anchor must be one ASCII character"),
        (Marker("x", "<\U0001f527>"), "characters must be in the BMP: '<\U0001f527>'"),
        (Block("x", "<x>", "</\U0001f527>", "hermes"), "characters must be in the BMP"),
    ],
)
def test_an_entry_outside_the_limits_is_named(extra, message):
    blocks = (*BLOCKS, extra) if isinstance(extra, Block) else BLOCKS
    marks = (*MARKERS, extra) if isinstance(extra, Marker) else MARKERS
    with pytest.raises(ValueError) as info:
        check_limits(blocks, marks)
    assert str(info.value).startswith("x: ") and message in str(info.value)


def test_too_many_first_characters():
    extra = tuple(Marker("x", c + "ab") for c in "!#$%&*+,-.")
    with pytest.raises(ValueError, match="at most 8 distinct first characters"):
        check_limits(BLOCKS, MARKERS + extra)


def test_the_extension_is_built_for_these_limits():
    _scan_c = pytest.importorskip("textcalls._scan_c")
    assert _scan_c.TABLE_LIMITS == (markers.LITERAL_MAX, markers.FIRST_CHARS_MAX)
