"""How a local model's work is cut into calls and spread over its workers (adapters/embedders/runs.py)."""

from __future__ import annotations

import threading
import time

import pytest

from adapters.embedders.runs import Workers, distinct, token_batches


def test_calls_are_cut_by_padded_tokens_shortest_first() -> None:
    lengths = [256, 10, 256, 12, 300, 8, 256, 256, 256]
    batches = token_batches(lengths, budget=1024, most=64)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for batch in batches:
        assert len(batch) == 1 or len(batch) * max(lengths[i] for i in batch) <= 1024
    assert batches[0] == [5, 1, 3, 0]  # the three short ones ride with the first long one
    assert batches[-1] == [4]  # longer than a quarter of the budget with the others: alone at the end


def test_a_call_holds_at_most_most_texts() -> None:
    assert [len(b) for b in token_batches([1] * 10, budget=1024, most=4)] == [4, 4, 2]
    assert token_batches([], budget=1024) == []


def test_the_same_text_is_embedded_once() -> None:
    unique, slots = distinct(["a", "b", "a", "c", "b"])
    assert unique == ["a", "b", "c"] and slots == [0, 1, 0, 2, 1]


def test_workers_keep_the_order_and_run_at_most_count_at_once() -> None:
    running, most, lock = [0], [0], threading.Lock()

    def work(n: int) -> int:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.01)
        with lock:
            running[0] -= 1
        return n * n

    workers = Workers(2, "test")
    assert workers.map(work, list(range(10))) == [n * n for n in range(10)]
    assert most[0] <= 2


def test_a_failed_call_fails_the_whole_request() -> None:
    def work(n: int) -> int:
        if n == 3:
            raise ValueError("bad text")
        return n

    with pytest.raises(ValueError, match="bad text"):
        Workers(2, "test").map(work, list(range(6)))
