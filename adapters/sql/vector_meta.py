"""A stored vector's metadata as its row keeps it: without what the row's id and owner already say, and
without the values nearly every vector has (the local owner's access, no expiry, normal sensitivity)."""

from __future__ import annotations

import json
from typing import Any

from domain.access.principal import LOCAL_USER
from domain.access.rules import ACL_PREFIX, NEVER
from domain.ids import artifact_of
from domain.model import VectorRecord

ARTIFACT_COLLECTIONS = ("artifact", "chunk")  # their vectors are owned by their artifact

# Left out of a row when the vector has them, put back when it is read; a vector without one of them
# lists it under ABSENT, so that reading gives back exactly what was written.
_COMMON: dict[str, Any] = {f"{ACL_PREFIX}u:{LOCAL_USER}": True, "expires_epoch": NEVER}
DEFAULTS: dict[str, dict[str, Any]] = {
    collection: {**_COMMON, "sensitivity": "normal", "visibility_scope": "me"} for collection in ARTIFACT_COLLECTIONS}
ABSENT = "~absent"
ELIDED = "!"  # starts a row written with the defaults left out (rows written before keep every key)


def defaults(collection: str) -> dict[str, Any]:
    return DEFAULTS.get(collection, _COMMON)


def implied(collection: str, vector_id: str) -> dict[str, Any]:
    """What a piece id (``record::version::piece``) says of its vector: its version, its piece and, in
    an artifact's collections, its artifact (and a chunk's place, ``art::chunk::NNN::hash``)."""
    parts = vector_id.rsplit("::", 2)
    if len(parts) < 3:
        return {}
    said: dict[str, Any] = {"version": parts[1]}
    if parts[2].isdigit():
        said["piece"] = int(parts[2])
    if collection in ARTIFACT_COLLECTIONS:
        said["artifact_id"] = artifact_of(vector_id)
    place = parts[0].split("::")
    if collection == "chunk" and len(place) == 4 and place[1] == "chunk" and place[2].isdigit():
        said["chunk_index"] = int(place[2])
    return said


def pack(collection: str, record: VectorRecord) -> str:
    """The metadata as stored: compact JSON of what the id does not say and the defaults do not give."""
    said, usual = implied(collection, record.id), defaults(collection)
    kept = {k: v for k, v in record.metadata.items()
            if not (k in said and said[k] == v) and not (k in usual and _same(usual[k], v))}
    missing = sorted(k for k in usual if k not in record.metadata)
    if missing:
        kept[ABSENT] = missing
    return ELIDED + json.dumps(kept, sort_keys=True, separators=(",", ":"))


def unpack(collection: str, vector_id: str, meta: str) -> dict[str, Any]:
    """The metadata back whole. A row written before the defaults were left out has no ``ELIDED`` mark
    and gets none of them (a vector of another owner's never gains the local owner's access); one
    written before ``pack`` kept every key and gains only what its id says."""
    if not meta.startswith(ELIDED):
        return {**implied(collection, vector_id), **json.loads(meta)}
    stored = json.loads(meta[len(ELIDED):])
    missing = set(stored.pop(ABSENT, ()))
    usual = {k: v for k, v in defaults(collection).items() if k not in missing}
    return {**implied(collection, vector_id), **usual, **stored}


def _same(usual: Any, value: Any) -> bool:
    return type(usual) is type(value) and usual == value  # True is not 1.0, 9e15 is not "9e15"
