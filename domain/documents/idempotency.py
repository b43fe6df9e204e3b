"""Idempotency keys: the same key and payload give the first call's result and write nothing; the same
key with another payload is refused, naming the key. Keys are kept in the store (durable, shared by
every replica); a call that fails gives its key up. A call under way keeps its claim alive (renewed
well inside the store's lease), so a slow write is never run a second time by a retry; only a
claim whose caller died goes stale and is taken over."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from domain.documents.model import digest
from domain.errors import ValidationError
from domain.ports.documents import DocumentStore
from domain.validation import require_text

WAIT_SECONDS = 30.0  # a replay of a call still under way waits this long for its result
RENEW_SECONDS = 60.0  # a claim under way is renewed this often (the stores' lease is 300 s)


def check_key(value: object) -> str:
    return require_text("idempotencyKey", value, 200, label="idempotencyKey")


class Renewal:
    """Keeps one claim alive from a daemon thread while its call runs; ``stop`` gives its current claim
    time (the fencing token finish and release need)."""

    def __init__(self, store: DocumentStore, project: str, key: str, claimed_at: float,
                 now: Callable[[], float], every: float) -> None:
        self.token = claimed_at
        self._stopped = threading.Event()

        def keep_alive() -> None:
            while not self._stopped.wait(every):
                at = now()
                try:
                    if not store.renew_key(project, key, self.token, at):
                        return  # no longer this call's claim: finish_key will say so
                except Exception:  # noqa: BLE001 - the store is briefly unreachable: try again next time
                    continue
                self.token = at

        self._thread = threading.Thread(target=keep_alive, name="idempotency-renewal", daemon=True)
        self._thread.start()

    def stop(self) -> float:
        self._stopped.set()
        self._thread.join()
        return self.token


@dataclass(frozen=True, slots=True)
class Idempotent:
    store: DocumentStore
    now: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    renew_every: float = RENEW_SECONDS

    def __call__(self, project: str, key: str, tool: str, payload: Any,
                 action: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """``action()``'s result, once per key; a replay answers that result with ``replayed: true``."""
        payload_hash = digest(tool, payload)
        deadline = self.now() + WAIT_SECONDS
        while True:
            claimed_at = self.now()
            held = self.store.claim_key(project, key, tool, payload_hash, claimed_at)
            if held is None:
                break
            if held.payload_hash != payload_hash or held.tool != tool:
                raise ValidationError("idempotencyKey", f"idempotencyKey {key!r} was already used with a different "
                                                        f"payload ({held.tool}); use a new key for a new change")
            if held.result is not None:
                return {**held.result, "replayed": True}
            if self.now() > deadline:
                raise ValidationError("idempotencyKey", f"idempotencyKey {key!r}: the first call with it is still "
                                                        "under way; retry in a moment")
            self.sleep(0.2)
        renewal = Renewal(self.store, project, key, claimed_at, self.now, self.renew_every)
        try:
            result = action()
        except BaseException:
            self.store.release_key(project, key, renewal.stop())
            raise
        claimed_at = renewal.stop()
        if not self.store.finish_key(project, key, result, claimed_at):
            # Past its lease another call took the key over: a result it recorded is the key's.
            again = self.now()
            held = self.store.claim_key(project, key, tool, payload_hash, again)
            if held is None:  # nobody holds it now: this call's result stands
                self.store.finish_key(project, key, result, again)
            elif held.result is not None:
                return {**held.result, "replayed": True}
        return {**result, "replayed": False}
