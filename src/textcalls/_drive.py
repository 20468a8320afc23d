"""Running a push-style recovery machine over a (sync or async) iterable, closing the source when done."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence


def drive(source, what: str, step: Callable[..., Sequence], finish: Callable[[], Iterable]) -> Iterator:
    """Yield ``step(item)``'s outputs for every item of ``source``, then ``finish()``'s. Closing the
    result closes ``source`` (when it has ``close()``). A non-iterable ``source`` raises TypeError now."""
    try:
        it = iter(source)
    except TypeError:
        raise TypeError(f"chunks must be an iterable of {what}, not {type(source).__name__}") from None
    return _drive(it, step, finish)


def _drive(it: Iterator, step: Callable[..., Sequence], finish: Callable[[], Iterable]) -> Iterator:
    try:
        for item in it:
            out = step(item)
            if len(out) == 1:  # the usual case: one item for one (no iterator over the list)
                yield out[0]
            else:
                yield from out
        yield from finish()
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            close()


def adrive(source, what: str, step: Callable[..., Iterable], finish: Callable[[], Iterable]) -> AsyncIterator:
    """``drive`` over an async iterable; closing the result ``aclose()``-s ``source``."""
    try:
        it = aiter(source)
    except TypeError:
        raise TypeError(f"chunks must be an async iterable of {what}, not {type(source).__name__}") from None
    return _adrive(it, step, finish)


async def _adrive(it: AsyncIterator, step, finish) -> AsyncIterator:
    try:
        async for item in it:
            for out in step(item):
                yield out
        for out in finish():
            yield out
    finally:
        aclose = getattr(it, "aclose", None)
        if aclose is not None:
            await aclose()
