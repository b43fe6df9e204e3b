"""embedding_health: the active profile, and whether the embedder answers right now."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from domain.access.principal import LOCAL_USER, Identity
from domain.errors import MemtroveError
from domain.model import RequestContext
from domain.ports import Embedder, VectorIndex
from domain.common import nothing


@dataclass(frozen=True, slots=True)
class EmbeddingHealth:
    embedder: Embedder
    vectors: VectorIndex
    catch_up: Callable[[], None] = nothing  # the counts include every write committed before the call
    identity: Identity = RequestContext  # store-wide counts are for the server's owner only

    def __call__(self) -> dict[str, Any]:
        report: dict[str, Any] = dict(self.embedder.describe())
        started = time.perf_counter()
        try:
            vector = self.embedder.embed_query("test")
        except MemtroveError as exc:
            report.update(api_status="unhealthy", error=exc.message)
        else:
            report.update(
                api_status="healthy",
                test_embedding_dimensions=len(vector),
                api_latency_ms=round((time.perf_counter() - started) * 1000, 1),
            )
        report["dimensions_match"] = report.get("test_embedding_dimensions") in (None, self.embedder.profile.dimensions)
        if self.identity().principal.user_id != LOCAL_USER:
            return report
        try:
            self.catch_up()
            report["stored_vectors"] = {c: self.vectors.count(c) for c in ("memory", "history")}
        except MemtroveError as exc:
            report["vector_store_error"] = exc.message
        return report
