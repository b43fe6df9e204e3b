"""Re-embedding into another embedding profile, side by side: searches stay on the active profile."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from domain.access.principal import LOCAL_USER, Identity
from domain.chunking import content_hash
from domain.errors import NotFoundError, ValidationError
from domain.model import EmbeddingProfile, RequestContext, VectorRecord
from domain.ports import ArtifactStore, AuditLog, Embedder, MetadataStore, ReembedLedger, VectorIndex
from domain.artifacts.usecases import CHUNKS, WHOLE, check_artifact_id, embedded_text, vector_metadata
from domain.common import Clock, audit, check_change, piece_records, utc_now
from domain.pieces import Piece
from domain.memories.usecases import memory_metadata
from domain.history.usecases import COLLECTION as HISTORY, CONTEXT_COLLECTION, read_after, turn_metadata


@dataclass(frozen=True, slots=True)
class ReembedReport:
    target: EmbeddingProfile
    artifacts: int
    memories: int
    turns: int
    skipped: int
    complete: bool


@dataclass(frozen=True, slots=True)
class Reembed:
    """Embed artifacts (one, or all plus memories and history) with ``target`` into its own collections.

    Progress is kept in a ledger, so a rerun only embeds what changed. When everything is done the
    profile is marked complete as of the latest audited write; a later start with that embedder
    switches to it, unless writes happened since (then a rerun catches up).
    """

    active: EmbeddingProfile
    target: Embedder
    target_vectors: VectorIndex
    store: MetadataStore
    artifacts: ArtifactStore
    ledger: ReembedLedger
    audit_log: AuditLog
    split: Callable[[str], list[Piece]]
    clock: Clock = utc_now
    identity: Identity = RequestContext  # who is calling (fed by the transport; the local owner by default)
    now: Callable[[], float] = time.time

    def __call__(self, artifact_id: object = None) -> ReembedReport:
        context = self.identity()
        if artifact_id is None and context.principal.user_id != LOCAL_USER:
            raise ValidationError("artifact_id", "Re-embedding the whole store is for the server's owner (stdio, the "
                                                 "local socket or the shared HTTP token): name one of your artifacts")
        if artifact_id is not None:  # refused as for any change: "not found" unless the caller may change it
            one = check_artifact_id(artifact_id)
            check_change(self.audit_log, context, self.artifacts.get_artifact(one), "reembed", "artifact", one,
                         "Artifact", "artifact_id", self.clock(), self.now())
        profile = self.target.profile
        if profile.key == self.active.key:
            raise ValidationError("target_embedder", f"{profile.model} is already the active embedding profile")
        one = None if artifact_id is None else check_artifact_id(artifact_id)
        key = profile.key
        done = self.ledger.reembedded(key)
        committed = self.artifacts.committed_versions()
        if one is not None and one not in committed:
            raise NotFoundError(f"Artifact {one} not found")
        counts = {"artifact": 0, "memory": 0, "turn": 0, "skipped": 0}
        for art_id in [one] if one else sorted(committed):
            if done.get(f"artifact:{art_id}") == committed[art_id]:
                counts["skipped"] += 1
                continue
            self._artifact(art_id)
            counts["artifact"] += 1
        if one is None:
            counts["memory"], counts["turn"], skipped = self._memories_and_turns(done)
            counts["skipped"] += skipped
            self._drop_deleted(committed)
            self.audit_log.append(audit("reembed_complete", "profile", [key], self.clock(),
                                        artifacts=counts["artifact"], memories=counts["memory"], turns=counts["turn"]))
            self.ledger.mark_complete(profile, self.ledger.last_audit_seq())
        return ReembedReport(profile, counts["artifact"], counts["memory"], counts["turn"], counts["skipped"],
                             one is None)

    def _artifact(self, art_id: str) -> None:
        artifact = self.artifacts.get_artifact(art_id)
        if artifact is None:
            return
        chunks = self.artifacts.chunks_of(art_id) if artifact.is_chunked else []
        targets = [(c.id, embedded_text(c), c.index) for c in chunks if c.metadata.get("indexed", True)] \
            if chunks else [(art_id, artifact.content or "", -1)]
        meta = {**vector_metadata(artifact), "version": artifact.version}
        records = self._records(targets, artifact.version, meta)
        collection = CHUNKS if chunks else WHOLE
        for name in (WHOLE, CHUNKS):
            self.target_vectors.delete_where(name, {"artifact_id": art_id})
        self.target_vectors.upsert(collection, records)
        self.ledger.mark_reembedded(self.target.profile.key, [(f"artifact:{art_id}", artifact.version)])

    def _memories_and_turns(self, done: dict[str, str]) -> tuple[int, int, int]:
        key, skipped = self.target.profile.key, 0
        memories = self.store.get_memories(sorted(self.store.memory_ids()))
        todo = [m for m in memories.values() if f"memory:{m.id}" not in done]
        skipped += len(memories) - len(todo)
        for m in todo:
            digest = content_hash(m.content)
            self.target_vectors.upsert("memory", self._records([(m.id, m.content, -1)], digest, {
                **memory_metadata(m), "version": digest[:12]}))
            self.ledger.mark_reembedded(key, [(f"memory:{m.id}", "1")])
        hashes = self.store.turn_hashes()
        turns = self.store.get_turns([t for t, h in hashes.items() if done.get(f"turn:{t}") != h[:12]])
        skipped += len(hashes) - len(turns)
        for t in turns.values():
            meta = turn_metadata(t)  # piece_records adds the version
            before = self.store.get_turn(t.owner, t.conversation_id, t.turn_index - 1) if t.turn_index > 0 else None
            plain = self._records([(t.id, t.content, -1)], t.content_hash, meta)
            read = read_after(before, t)
            contextual = self._records([(t.id, read, -1)], t.content_hash, meta) if read != t.content else plain
            for collection, records in ((HISTORY, plain), (CONTEXT_COLLECTION, contextual)):
                self.target_vectors.delete_records(collection, [t.id])
                self.target_vectors.upsert(collection, records)
            self.ledger.mark_reembedded(key, [(f"turn:{t.id}", t.content_hash[:12])])
        return len(todo), len(turns), skipped

    def _drop_deleted(self, committed: dict[str, str]) -> None:
        """Vectors in the target profile of artifacts, memories or turns deleted since they were embedded."""
        turns = set(self.store.turn_hashes())
        live = {"memory": self.store.memory_ids(), HISTORY: turns, CONTEXT_COLLECTION: turns}
        for collection in (WHOLE, CHUNKS, "memory", HISTORY, CONTEXT_COLLECTION):
            alive = live.get(collection)
            doomed = [vid for vid, owner in self.target_vectors.all_vectors(collection).items()
                      if (owner not in alive if alive is not None else owner.split("::", 1)[0] not in committed)]
            self.target_vectors.delete_vectors(collection, doomed)

    def _records(self, targets: list[tuple[str, str, int]], digest: str, meta: dict[str, object]
                 ) -> list[VectorRecord]:
        planned = [(rid, piece, {**meta, "chunk_index": index}) for rid, text, index in targets
                   for piece in self.split(text)]
        return piece_records(planned, self.target.embed_documents([p.content for _, p, _ in planned]), digest)

