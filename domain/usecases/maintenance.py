"""Start-up checks: the store's embedding profile matches, and stores agree after a crash."""

from __future__ import annotations

from dataclasses import dataclass

from domain.errors import ConfigurationError
from domain.ids import version_of
from domain.model import EmbeddingProfile
from domain.ports import ArtifactStore, MetadataStore, ReembedLedger, VectorIndex
from domain.usecases.history import COLLECTION as HISTORY, CONTEXT_COLLECTION


@dataclass(frozen=True, slots=True)
class CheckProfile:
    """A store built with one embedding profile never silently receives another's vectors."""

    store: MetadataStore
    profile: EmbeddingProfile
    ledger: ReembedLedger | None = None

    def __call__(self) -> EmbeddingProfile:
        stored = self.store.stored_profile()
        if stored is None:
            self.store.record_profile(self.profile)
            return self.profile
        same = (stored.provider, stored.model, stored.dimensions) == (
            self.profile.provider, self.profile.model, self.profile.dimensions)
        done = self.ledger.completed(self.profile.key) if self.ledger is not None and not same else None
        if done is not None:
            if done[1] == self.ledger.last_audit_seq():  # type: ignore[union-attr]
                self.store.record_profile(self.profile)  # re-embedding finished and nothing changed since
                return self.profile
            raise ConfigurationError(
                f"Re-embedding into {describe(self.profile)} finished, but this store has changed since: run "
                f"artifact_reembed with target_embedder={self.profile.provider} again (it only embeds what "
                f"changed), then restart with this embedder")
        if not same:
            raise ConfigurationError(
                f"This data directory was built with embedding profile {describe(stored)}, but the "
                f"configured embedder is {describe(self.profile)}. Vectors of different profiles cannot "
                f"be compared, so memtrove will not mix them: set MEMTROVE_EMBEDDER (and its model "
                f"settings) back to match, or point MEMTROVE_DATA_DIR at a new directory, or re-embed the "
                f"store first with artifact_reembed(target_embedder=...)."
            )
        return stored


def describe(profile: EmbeddingProfile) -> str:
    return f"{profile.provider}/{profile.model}/{profile.dimensions}d"


@dataclass(frozen=True, slots=True)
class RepairReport:
    orphan_vectors_removed: int
    stale_vectors_removed: int
    pending_artifacts_rolled_back: int = 0


@dataclass(frozen=True, slots=True)
class RepairStores:
    """Rows are the commit point: vectors without a row, or of an older version, are removed."""

    store: MetadataStore
    vectors: VectorIndex
    artifacts: ArtifactStore | None = None

    def __call__(self) -> RepairReport:
        orphans = stale = 0
        memory_ids = self.store.memory_ids()
        doomed = [vid for vid, owner in self.vectors.all_vectors("memory").items() if owner not in memory_ids]
        self.vectors.delete_vectors("memory", doomed)
        orphans += len(doomed)
        memory_doomed = len(doomed)
        hashes = self.store.turn_hashes()
        touched: set[str] = {"memory"} if memory_doomed else set()
        for collection in (HISTORY, CONTEXT_COLLECTION):
            doomed = []
            for vid, owner in self.vectors.all_vectors(collection).items():
                digest = hashes.get(owner)
                if digest is None:
                    orphans += 1
                    doomed.append(vid)
                elif version_of(vid) != digest[:12]:
                    stale += 1
                    doomed.append(vid)
            self.vectors.delete_vectors(collection, doomed)
            if doomed:
                touched.add(collection)
        if self.artifacts is None:
            return RepairReport(orphans, stale)
        # An ingest interrupted before its commit is rolled back: its vectors, then its rows.
        pending = self.artifacts.pending_versions()
        for artifact_id, version in pending:
            for collection in ("artifact", "chunk"):
                self.vectors.delete_where(collection, {"artifact_id": artifact_id, "version": version})
            self.artifacts.discard_pending(artifact_id, version)
            touched |= {"artifact", "chunk"}
        # After a commit, only the committed version's vectors may remain.
        current = self.artifacts.committed_versions()
        for collection in ("artifact", "chunk"):
            doomed = []
            for vid, owner in self.vectors.all_vectors(collection).items():
                version = current.get(owner.split("::", 1)[0])
                if version is None or version_of(vid) != version:
                    doomed.append(vid)
                    orphans += version is None
                    stale += version is not None
            self.vectors.delete_vectors(collection, doomed)
            if doomed:
                touched.add(collection)
        # Deletes can leave a Chroma index unable to find live vectors; after a repair, rebuild.
        for collection in sorted(touched):
            self.vectors.rebuild(collection)
        return RepairReport(orphans, stale, len(pending))
