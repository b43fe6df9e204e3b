"""Benchmarks (pytest-benchmark): figures, not pass/fail timings."""
