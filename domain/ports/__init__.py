"""The ports: what the use cases need from the world, as typing.Protocol classes (one module per kind)."""

from domain.ports.extensions import ArtifactScopes, Chunker, ChunkerCatalog, DocumentExporter, PrivacyPolicy
from domain.ports.filters import Filter
from domain.ports.models import Embedder, LexicalIndex, Tokenizer, VectorIndex
from domain.ports.stores import ArtifactStore, AuditLog, KeyLocks, MetadataStore, ReembedLedger, VectorOutbox

__all__ = [
    "ArtifactScopes", "ArtifactStore", "AuditLog", "Chunker", "ChunkerCatalog", "DocumentExporter", "Embedder",
    "Filter", "KeyLocks", "LexicalIndex", "MetadataStore", "PrivacyPolicy", "ReembedLedger", "Tokenizer",
    "VectorIndex", "VectorOutbox",
]
