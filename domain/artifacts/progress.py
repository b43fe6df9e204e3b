"""How far an ingest got, told to whoever waits for it (MCP progress) or to nobody (a resumed job)."""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    """Told how far an ingest got; ``detached`` once nobody waits for the call any more. ``done`` and
    ``total`` count the same things, the records that get vectors (an artifact's chunks, or the artifact
    when unchunked), never the pieces a record is embedded in: 0 <= done <= total."""

    detached: bool

    def __call__(self, artifact_id: str, done: int, total: int) -> None: ...


class Silent:
    detached = False

    def __call__(self, artifact_id: str, done: int, total: int) -> None:
        return None


class Detached(Silent):
    """Progress of work nobody waits for (a resumed job): a failure is recorded on its job."""

    detached = True
