"""Benchmark helpers: full size under ./scripts/bench (MEMTROVE_BENCH_FULL=1), a small smoke size otherwise.

The smoke run (./scripts/test) exercises every benchmark's code path and asserts its outputs; a time
or a ratio of times is asserted only under ./scripts/bench (``assert_timing``): in the ordinary
run, whatever else the machine is doing decides it, not the code.
"""

from __future__ import annotations

import os
import statistics
import time

import pytest

FULL = os.environ.get("MEMTROVE_BENCH_FULL") == "1"


def size(full: int, smoke: int) -> int:
    return full if FULL else smoke


def assert_timing(condition: bool, message: str) -> None:
    """Assert a time or a timing ratio, under ./scripts/bench only; the smoke run reports it."""
    if FULL:
        assert condition, message


def percentiles(samples: list[float]) -> dict[str, float]:
    """p50/p95 in milliseconds from seconds."""
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50_ms": round(statistics.median(ordered) * 1000, 2), "p95_ms": round(p95 * 1000, 2),
            "n": len(ordered)}


@pytest.fixture
def report(benchmark, request):
    """Attach figures to the benchmark JSON and print them (visible with -s or in ./scripts/bench)."""
    def emit(**figures: object) -> None:
        benchmark.extra_info.update(figures)
        print(f"\n[figures] {request.node.name}: {figures}")
    return emit


def best_seconds(action, rounds: int) -> float:
    """The fastest of ``rounds`` calls: the least disturbed by whatever else the machine runs."""
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return min(samples)


def measure(benchmark, action, rounds: int) -> list[float]:
    """Run ``action`` ``rounds`` times under pytest-benchmark (or plainly when benchmarks are
    disabled, as in the ordinary test run) and return each call's seconds."""
    samples: list[float] = []

    def timed() -> None:
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)

    if benchmark.disabled:
        for _ in range(rounds):
            timed()
    else:
        benchmark.pedantic(timed, rounds=rounds, iterations=1)
    return samples
