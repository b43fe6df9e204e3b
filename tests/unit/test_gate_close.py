"""``Gate.close``: how a stopping server waits for the calls still running (entrypoints/stopping.py drain)."""

from __future__ import annotations

import threading

from entrypoints.switch import Gate


def test_close_waits_for_the_calls_in_flight_and_lets_no_new_one_in() -> None:
    gate = Gate()
    release = gate.share()  # a call's work going on in the background
    ended = threading.Timer(0.2, release)
    ended.start()
    assert gate.close(timeout=30.0) is True  # returned once that work ended
    entered = threading.Event()

    def late_call() -> None:
        with gate.serving():
            entered.set()

    threading.Thread(target=late_call, daemon=True).start()
    assert not entered.wait(0.3)  # closed for good: the server is stopping


def test_close_gives_up_after_its_timeout_when_work_outlasts_it() -> None:
    gate = Gate()
    release = gate.share()
    try:
        assert gate.close(timeout=0.1) is False
    finally:
        release()
