"""Switching a store to another local model without losing service.

A store built with one model (say MiniLM) opened with the other configured (e5-small) is not refused:
the server serves it with the model that built it, re-embeds everything into the configured model's
own collections in the background (resumable: the re-embed ledger says what is done, so a kill loses
only the record in hand), and once that is complete and current, switches at once: calls in flight
finish, new ones wait the moment it takes, the configured model answers from then on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from loguru import logger

from dependency_injector import providers

from config.container import Application, reembed_into
from config.embedders import serving_settings
from config.settings import Settings
from domain.model import EmbeddingProfile
from domain.upkeep.maintenance import describe

RETRY = 5.0  # seconds before a failed or not-yet-current round is tried again
DRAIN = 10.0  # seconds a switch waits for calls in flight (a long ingest) before trying again later


class Gate:
    """Tool calls pass together (``serving``); a switch passes alone (``exclusive``), after those in flight."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._serving = 0
        self._closed = False

    @contextmanager
    def serving(self) -> Iterator[None]:
        with self._cond:
            self._cond.wait_for(lambda: not self._closed)
            self._serving += 1
        try:
            yield
        finally:
            with self._cond:
                self._serving -= 1
                self._cond.notify_all()

    def share(self) -> Callable[[], None]:
        """One more share for work a call in flight hands to another thread (it must not wait: a closed
        gate waits for that very call); returns its release."""
        with self._cond:
            self._serving += 1

        def release() -> None:
            with self._cond:
                self._serving -= 1
                self._cond.notify_all()
        return release

    def close(self, timeout: float) -> bool:
        """Closed for good (the server stops: a call that comes now waits for ever); True once the calls
        in flight have ended, False if they outlast ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            if not self._cond.wait_for(lambda: not self._closed, timeout):
                return False  # a switch holds it: it ends with the background work it waits for
            self._closed = True
            return self._cond.wait_for(lambda: self._serving == 0, max(0.0, deadline - time.monotonic()))

    @contextmanager
    def exclusive(self, timeout: float | None = None) -> Iterator[None]:
        """Alone once the calls in flight end; TimeoutError (the gate open again) if they take longer."""
        with self._cond:
            self._cond.wait_for(lambda: not self._closed)
            self._closed = True
            if not self._cond.wait_for(lambda: self._serving == 0, timeout):
                self._closed = False
                self._cond.notify_all()
                raise TimeoutError(f"calls in flight did not end within {timeout:.0f} s")
        try:
            yield
        finally:
            with self._cond:
                self._closed = False
                self._cond.notify_all()


@dataclass
class ModelSwitch:
    """From the ``stored`` profile (served meanwhile, by ``serving``) to the ``configured`` settings' model."""

    configured: Settings
    serving: Settings
    stored: EmbeddingProfile
    target: EmbeddingProfile
    state: str = "re-embedding"  # then "switched", or "failed" (the reason in ``error``)
    error: str | None = None
    started: float = field(default_factory=time.time)
    rounds: int = 0

    def status(self, progress: dict[str, int] | None = None) -> dict[str, Any]:
        return {"from": describe(self.stored), "to": describe(self.target), "state": self.state,
                "rounds": self.rounds, "seconds": round(time.time() - self.started, 1),
                **(progress or {}), **({"error": self.error} if self.error else {})}

    def progress(self, store: Any) -> dict[str, int]:
        """Records re-embedded into the target so far (the ledger's), of all the store holds."""
        if self.state == "switched":
            return {}
        total = len(store.committed_versions()) + len(store.memory_ids()) + len(store.turn_hashes())
        return {"done": min(len(store.reembedded(self.target.key)), total), "total": total}

    def of_artifact(self, store: Any, artifact_id: str, version: str) -> dict[str, Any]:
        """Whether this version of an artifact has its vectors of the target model yet."""
        done = store.reembedded(self.target.key).get(f"artifact:{artifact_id}") == version
        return {"to": describe(self.target), "reembedded": done}

    def run(self, reembed: Callable[[], Any], current: Callable[[], bool], gate: Gate, swap: Callable[[], bool],
            stopped: Callable[[], bool], wait: Callable[[float], Any]) -> None:
        """Re-embed until complete and current, then ``swap`` alone behind the gate (it catches up on what
        came in meanwhile and says whether it switched); a round or a swap that fails is tried again."""
        while not stopped():
            try:
                self.rounds += 1
                reembed()
                self.error = None
                if current():
                    with gate.exclusive(DRAIN):
                        if swap():
                            self.state = "switched"
                            logger.info("model_switched from={} to={} seconds={:.0f}", describe(self.stored),
                                        describe(self.target), time.time() - self.started)
                            return
            except Exception as exc:  # noqa: BLE001 - the old model keeps serving; try again
                self.error = str(getattr(exc, "message", exc))
                logger.warning("model_switch_round_failed error={}", self.error)
            wait(RETRY)


class Switching:
    """The Runtime's part in a switch: serve with the stored model, re-embed, swap containers."""

    settings: Settings
    app: Application
    metrics: Any
    gate: Gate
    switch: ModelSwitch | None
    _builders: dict[type, Any]
    _threads: list[threading.Thread]
    _stop: threading.Event
    _work: threading.Event
    _checked: bool
    _ready: bool

    def _plan_switch(self) -> None:
        store, target = self.app.adapters.store(), self.app.adapters.embedder().profile
        self.switch = plan(self.settings, store.stored_profile(), target, lambda: current(store, target))
        if self.switch is not None:
            logger.info("model_switch_started from={} to={} (searches use the first until the second is "
                        "complete)", describe(self.switch.stored), describe(target))
            self._rebuild(self.switch.serving)

    def _rebuild(self, settings: Settings) -> None:
        """A container for ``settings`` in place of the current one (the metrics registry kept)."""
        old, self.app = self.app, Application(settings=settings)
        self.app.adapters.metrics.override(providers.Object(self.metrics))
        self._builders.clear()
        old.shutdown_resources()

    def _run_switch(self) -> None:
        switch = self.switch
        assert switch is not None
        # The container changes under a failed swap: each round reads the one of the moment.
        switch.run(self._reembed_round, lambda: current(self.app.adapters.store(), switch.target), self.gate,
                   self._swap, lambda: self._stop.is_set(), lambda seconds: self._stop.wait(seconds))

    def _reembed_round(self) -> None:
        assert self.switch is not None
        adapters = self.app.adapters
        reembed_into(self.switch.configured, self.switch.stored, adapters.store(), self.app.plugins.chunker(),
                     adapters.tokenizer())()

    def _swap(self) -> bool:
        """Behind the closed gate: the background work stops (nothing writes now), a last round catches up,
        and if the re-embedding is current the configured model's container takes over. On any failure
        the stored model's container serves again, its background work restarted."""
        switch = self.switch
        assert switch is not None
        switch.state = "switching"  # the ensure_ready below starts no second switch
        self._pause()
        try:
            self._reembed_round()
            if not current(self.app.adapters.store(), switch.target):
                self._restart(switch.serving)
                switch.state = "re-embedding"
                return False
            self._restart(switch.configured)  # the configured profile is recorded; the store adopts its vectors
            return True
        except Exception:
            self._restart(switch.serving)
            switch.state = "re-embedding"
            raise

    def _pause(self) -> None:
        """Stop the background work (all but the calling thread) and wait for it."""
        self._stop.set()
        self._work.set()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=30.0)
        self._threads = [t for t in self._threads if t is threading.current_thread()]
        self._stop = threading.Event()

    def _restart(self, settings: Settings) -> None:
        """Serve with ``settings``' container: the store checked, the background work started again."""
        self._rebuild(settings)
        self._checked = self._ready = False
        self.check_store()  # type: ignore[attr-defined]
        self.ensure_ready()  # type: ignore[attr-defined]

def current(store: Any, target: EmbeddingProfile) -> bool:
    """Whether re-embedding into ``target`` is complete as of the store's latest audited write."""
    done = store.completed(target.key)
    return done is not None and done[1] == store.last_audit_seq()


def plan(configured: Settings, stored: EmbeddingProfile | None, target: EmbeddingProfile,
         complete: Callable[[], bool]) -> ModelSwitch | None:
    """A switch when the store was built with one local model, the other is configured, and its
    re-embedding is not yet complete and current (when it is, the store check switches at once)."""
    if stored is None or stored.key == target.key or configured.memtrove_embedder != "local" or complete():
        return None  # a paid or remote embedder is never switched to unasked: artifact_reembed does that
    if not configured.database_url.startswith("sqlite"):
        return None  # replicas on PostgreSQL: another could still write with the old model after a swap
    serving = serving_settings(configured, stored)
    if serving is None:
        return None
    return ModelSwitch(configured, serving, stored, target)
