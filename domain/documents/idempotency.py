"""Idempotency keys: the same key and payload give the first call's result and write nothing; the same
key with another payload is refused, naming the key. Keys are kept in the store (durable, shared by
every replica); a call that fails gives its key up."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from domain.documents.model import digest
from domain.errors import ValidationError
from domain.ports.documents import DocumentStore
from domain.validation import require_text

WAIT_SECONDS = 30.0  # a replay of a call still under way waits this long for its result


def check_key(value: object) -> str:
    return require_text("idempotencyKey", value, 200, label="idempotencyKey")


@dataclass(frozen=True, slots=True)
class Idempotent:
    store: DocumentStore
    now: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep

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
        try:
            result = action()
        except BaseException:
            self.store.release_key(project, key, claimed_at)
            raise
        if not self.store.finish_key(project, key, result, claimed_at):
            # Past its lease another call took the key over: a result it recorded is the key's.
            again = self.now()
            held = self.store.claim_key(project, key, tool, payload_hash, again)
            if held is None:  # nobody holds it now: this call's result stands
                self.store.finish_key(project, key, result, again)
            elif held.result is not None:
                return {**held.result, "replayed": True}
        return {**result, "replayed": False}
