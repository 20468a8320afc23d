"""CanIToolCall (``pip install canitoolcall``, a test dependency): every fixture of its corpus, through its own
pytest plugin (``canitoolcall_fixture``, one test per fixture id) and its own checks (``assert_conforms``:
the expected parse, no marker leaked, arguments that are JSON objects matching the schema, call order).

Each fixture is replayed as a gateway sees it (``canitoolcall_adapter``): one ``chat.completion`` through
``recover_response``, and a chunk stream through ``recover_stream`` in every split of ``SPLITS`` (whole,
one character a delta, seeded random runs), on both implementations, with ``stream_arguments`` off and on.
The adapter asks for ``trim_blanks=True`` (the blanks that touch the markup at the content's edges are
the markup's), so a streamed parse must give exactly what the whole one gives, blanks included, with the
same ``finish_reason`` -- unless the stream ended with an error (a call streamed in pieces and then
abandoned, option on), which is what the client's SDK raises. Every parse must conform strictly: a soft
pass (CanIToolCall's name for a difference in whitespace only) is allowed only for the fixtures of
``BLANK_BEFORE_OPENER``, and there it must be one.

The fixtures not conforming yet are strict expected failures (``canitoolcall_known``): one that starts
passing must leave the list.
"""

from __future__ import annotations

import pytest
from canitoolcall.pytest_plugin import assert_conforms, assert_equivalent

from ..canitoolcall_adapter import SPLITS, nonstream, stream, truncated
from ..canitoolcall_known import BLANK_BEFORE_OPENER, KNOWN, ONLY_STREAMED_ARGUMENTS


@pytest.fixture(params=[False, True], ids=["off", "on"])
def stream_arguments(request):
    return request.param


def test_the_known_failures_are_fixtures_of_the_corpus():
    from canitoolcall.fixtures import load_fixtures

    ids = {f.id for f in load_fixtures(None)}
    assert len(ids) == 469 and set(KNOWN) <= ids and set(ONLY_STREAMED_ARGUMENTS) <= ids
    assert set(BLANK_BEFORE_OPENER) <= ids
    assert not set(KNOWN) & set(ONLY_STREAMED_ARGUMENTS) and not set(KNOWN) & set(BLANK_BEFORE_OPENER)


def conforms(fixture, parsed):
    """CanIToolCall's checks, strict; a soft pass only where the fixture keeps the blank before the opener."""
    if fixture.id not in BLANK_BEFORE_OPENER:
        assert_conforms(fixture, parsed)
        return
    assert_conforms(fixture, parsed, soft=True)
    with pytest.raises(AssertionError, match="soft_pass"):  # a fixture that passes strictly leaves the list
        assert_conforms(fixture, parsed)


def test_conformance(impl, canitoolcall_fixture, stream_arguments, request):
    fixture = canitoolcall_fixture
    reason = KNOWN.get(fixture.id) or (ONLY_STREAMED_ARGUMENTS.get(fixture.id) if stream_arguments else None)
    if reason is not None:
        request.applymarker(pytest.mark.xfail(strict=True, reason=reason))
    whole, finish = nonstream(fixture, stream_arguments=stream_arguments)
    conforms(fixture, whole)
    # a cut output keeps its finish_reason; no other is ever "length"
    assert (finish == "length") == truncated(fixture)
    for split in SPLITS:
        streamed, streamed_finish = stream(fixture, split, stream_arguments=stream_arguments)
        if streamed.exception is None:
            conforms(fixture, streamed)
        else:
            assert_conforms(fixture, streamed, soft=True)  # the error's outcome may differ from the text in blanks
        if streamed.exception is not None:  # the stream ended with the abandonment's error (option on only)
            assert stream_arguments and streamed_finish is None, split
            continue
        assert_equivalent(whole, streamed)
        assert streamed_finish == finish, split
