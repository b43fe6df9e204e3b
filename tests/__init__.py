"""Tests for memtrove: unit, contract, integration, end-to-end and benchmarks."""
