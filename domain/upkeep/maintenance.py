"""Start-up check: the store's embedding profile matches the configured embedder."""

from __future__ import annotations

from dataclasses import dataclass

from domain.errors import ConfigurationError
from domain.model import EmbeddingProfile
from domain.ports import MetadataStore, ReembedLedger


@dataclass(frozen=True, slots=True)
class CheckProfile:
    """A store built with one embedding profile never silently receives another's vectors."""

    store: MetadataStore
    profile: EmbeddingProfile
    ledger: ReembedLedger | None = None

    def __call__(self) -> EmbeddingProfile:
        stored = self.store.stored_profile()
        if stored is None:  # a new store: this profile, unless a replica starting beside this one was first
            self.store.record_profile(self.profile, replace=False)
            stored = self.store.stored_profile() or self.profile
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
