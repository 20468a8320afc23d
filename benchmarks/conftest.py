"""Ratios, not absolute times: each benchmark records its best time; the summary divides them.

The machine is shared and noisy, so a figure is only ever compared with one measured in the same run.
"""

import pytest

BEST: dict = {}
RATIOS: list = []  # (label, numerator, denominator, target text)


def ratio(label, numerator, denominator, target=""):
    """Declare a ratio of two named benchmarks, printed at the end of the run."""
    RATIOS.append((label, numerator, denominator, target))


@pytest.fixture
def bench(benchmark):
    """``bench(name, fn, *args)``: run ``fn(*args)`` under pytest-benchmark and remember its best time."""

    def run(name, fn, *args):
        result = benchmark(fn, *args)
        BEST[name] = benchmark.stats.stats.min
        return result

    return run


def pytest_terminal_summary(terminalreporter):
    rows = [(label, BEST[a] / BEST[b], target) for label, a, b, target in RATIOS if a in BEST and b in BEST]
    if not rows:
        return
    terminalreporter.section("ratios (best times, this run)")
    for label, value, target in rows:
        terminalreporter.write_line(f"{label:<62} {value:8.2f}x   {target}")
