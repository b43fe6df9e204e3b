"""The switch's gate and loop: calls in flight finish before a swap, none runs during it; the swap
happens only once the re-embedding is current inside the gate; a failed round is tried again."""

from __future__ import annotations

import threading
import time

from config.settings import Settings
from domain.model import EmbeddingProfile
from entrypoints.switch import Gate, ModelSwitch, plan

MINILM = EmbeddingProfile("local", "all-MiniLM-L6-v2", 384, 256)
E5 = EmbeddingProfile("local", "multilingual-e5-small-q4", 384, 512)


def test_a_swap_waits_for_calls_in_flight_and_holds_new_ones() -> None:
    gate, events = Gate(), []
    inside, release = threading.Event(), threading.Event()

    def call(name: str, hold: bool) -> None:
        with gate.serving():
            events.append(f"{name} in")
            if hold:
                inside.set()
                release.wait(5)
            events.append(f"{name} out")

    first = threading.Thread(target=call, args=("first", True))
    first.start()
    inside.wait(5)

    def swap() -> None:
        with gate.exclusive():
            events.append("swap")
    swapper = threading.Thread(target=swap)
    swapper.start()
    time.sleep(0.1)
    late = threading.Thread(target=call, args=("late", False))
    late.start()
    time.sleep(0.1)
    assert events == ["first in"]  # the swap waits for the call; the late call waits for the swap
    release.set()
    for t in (first, swapper, late):
        t.join(5)
    assert events == ["first in", "first out", "swap", "late in", "late out"]


def test_work_a_call_hands_on_keeps_its_share_even_while_a_swap_waits() -> None:
    gate = Gate()
    with gate.serving():
        release = gate.share()  # taken inside the call: never waits
    done = threading.Event()
    threading.Thread(target=lambda: (gate.exclusive().__enter__(), done.set())).start()
    assert not done.wait(0.2)  # the handed-on work still holds it
    release()
    assert done.wait(5)


def test_the_loop_swaps_only_when_the_swap_finds_it_current_and_retries_a_failure() -> None:
    switch = ModelSwitch(Settings(), Settings(), MINILM, E5)
    rounds: list[str] = []
    answers = iter([False, True, True])  # current? after rounds 2, 3 and 4 (round 1 fails)
    swaps = iter([False, True])  # the first swap finds a write came in meanwhile: not switched

    def reembed() -> None:
        rounds.append("round")
        if len(rounds) == 1:
            raise RuntimeError("disk full")

    tried: list[bool] = []

    def swap() -> bool:
        tried.append(True)
        return next(swaps)

    switch.run(reembed, lambda: next(answers), Gate(), swap, lambda: False, lambda _seconds: None)
    assert switch.state == "switched" and switch.error is None  # the failure was retried
    assert len(rounds) == 4 and len(tried) == 2


def test_a_swap_gives_up_when_calls_in_flight_outlast_the_drain() -> None:
    gate = Gate()
    release = gate.share()  # a long ingest handed on by a call
    try:
        with gate.exclusive(0.2):
            raise AssertionError("the gate closed over work in flight")
    except TimeoutError:
        pass
    with gate.serving():  # open again at once
        pass
    release()


def test_a_switch_is_planned_only_between_the_two_local_models_when_not_yet_done() -> None:
    e5 = Settings(memtrove_local_model="e5-small")
    made = plan(e5, MINILM, E5, lambda: False)
    assert made is not None and made.serving.memtrove_local_model == "minilm" and made.state == "re-embedding"
    assert plan(e5, MINILM, E5, lambda: True) is None  # complete and current: the store check switches
    assert plan(e5, None, E5, lambda: False) is None and plan(e5, E5, E5, lambda: False) is None
    openai = EmbeddingProfile("openai", "text-embedding-3-small", 1536, 8191)
    assert plan(e5, openai, E5, lambda: False) is None  # not a model shipped here: refused as before
    # OpenAI configured on a MiniLM store: refused as before (re-embedding would spend API calls unasked).
    assert plan(Settings(memtrove_embedder="openai"), MINILM, openai, lambda: False) is None
