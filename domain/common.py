"""What the write-side use cases share: clock, audit entries, embedding of pieces."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timezone

from domain.access.rules import NOT_VISIBLE, refusal
from domain.errors import EmbeddingError, MemtroveError, NotFoundError, StorageError, ValidationError
from domain.ids import piece_id
from domain.model import AuditEntry, Hit, RequestContext, Vector, VectorRecord
from domain.pieces import Piece
from domain.ports import Embedder, PrivacyPolicy
from domain.validation import format_ts

Clock = Callable[[], str]


def nothing() -> None:
    """The default of an optional step (a catch-up that callers may wire in)."""
    return None


def utc_now() -> str:
    return format_ts(datetime.now(timezone.utc))


def audit(action: str, collection: str, ids: Sequence[str], ts: str, actor: str | RequestContext = "local",
          **detail: object) -> AuditEntry:
    """An audit entry; ``actor`` is the caller (its request context or its user id), never content."""
    who = actor.actor if isinstance(actor, RequestContext) else actor
    via = actor.via if isinstance(actor, RequestContext) else None
    return AuditEntry(action=action, collection=collection, item_ids=tuple(ids), actor=who,
                      ts=ts, detail={**detail, "via": via} if via else dict(detail))


Planned = Sequence[tuple[str, Piece, dict[str, object]]]  # (record id, piece, metadata) per vector


def embed_pieces(
    embedder: Embedder, record_id: str, version_hash: str, pieces: Sequence[Piece],
    metadata: dict[str, object],
) -> list[VectorRecord]:
    """Phase one of every write: all vectors exist before anything is stored."""
    try:
        vectors = embedder.embed_documents([piece.content for piece in pieces])
    except MemtroveError:
        raise
    except Exception as exc:  # an adapter bug must still surface as an embedding failure
        raise EmbeddingError(f"Failed to generate embeddings: {exc}") from exc
    return piece_records([(record_id, piece, metadata) for piece in pieces], vectors, version_hash)


def piece_records(planned: Planned, vectors: Sequence[Vector], version_hash: str) -> list[VectorRecord]:
    """Vector records whose ids and metadata carry the content version they were embedded from."""
    return [
        VectorRecord(
            id=piece_id(record_id, version_hash, piece.index),
            record_id=record_id,
            vector=vector,
            metadata={**metadata, "version": version_hash[:12], "piece": piece.index},
        )
        for (record_id, piece, metadata), vector in zip(planned, vectors, strict=True)
    ]


def apply_policies(policies: Sequence[PrivacyPolicy], hits: list[Hit], context: RequestContext) -> list[Hit]:
    """Every policy in turn; one that fails fails the read (closed: nothing unfiltered is returned)."""
    fetched = {h.id for h in hits}
    for policy in policies:
        try:
            hits = list(policy.filter_hits(hits, context))
        except Exception as exc:
            raise StorageError(f"Privacy policy {getattr(policy, 'name', '?')!r} failed ({type(exc).__name__}); "
                               "nothing is returned without it") from exc
    context.tally.withheld.update(fetched - {h.id for h in hits})
    return hits


def check_change(audit_log: object, context: RequestContext, item: object | None, action: str, collection: str,
                 item_id: str, noun: str, field: str, ts: str, now: float) -> None:
    """Refuse (audited) a delete/resolve of an item the caller may not change: "not found" when it may
    not see it (as for a missing one), a refusal naming the owner when it sees another's."""
    why = None if item is None else refusal(item, context, now)
    if why is None:
        return
    denied(audit_log, context, action, collection, item_id, why, ts)
    if why == NOT_VISIBLE:
        raise NotFoundError(f"{noun} {item_id} not found")
    raise ValidationError(field, f"{noun} {item_id} is {getattr(item, 'owner')}'s: only its owner may {action} it")


def denied(audit_log: object, context: RequestContext, action: str, collection: str, item_id: str, reason: str,
           ts: str) -> None:
    """Audit a refusal the caller could notice (actor, item, reason; never content), if the store keeps
    an audit log; the caller is then told "not found", as for an item that does not exist."""
    context.tally.denials.append((action, reason))
    append = getattr(audit_log, "append", None)
    if callable(append):
        append(audit("denied", collection, [item_id], ts, context, refused=action, reason=reason))
