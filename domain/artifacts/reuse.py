"""Never the same text embedded twice: a new version of a document embeds only what changed (a piece
whose text the committed version already embedded, with the same model, takes that vector: the model
gives a text the same vector every time), and a piece whose text another document of the same owner
already embedded with the same model takes that one, all read from the store's copy of the vectors.
Only the same owner's: a faster ingest must not tell one caller that another stored the same text."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping

from domain.artifacts.usecases import CHUNKS, embedding_targets
from domain.ids import piece_id
from domain.model import Artifact, Vector
from domain.pieces import Piece
from domain.ports import ArtifactStore, VectorOutbox

PAGE = 500


def text_key(profile: str, owner: str, text: str) -> str:
    """What a piece's vector is found by: its model, its owner and its text (96 bits of SHA-256)."""
    return hashlib.sha256(f"{profile}\x1f{owner}\x1f{text}".encode()).hexdigest()[:24]


def known_vectors(store: ArtifactStore, copies: VectorOutbox, new: Artifact,
                  split: Callable[[str], list[Piece]]) -> dict[str, Vector]:
    """The committed version's vectors by the text of their piece; empty for a new document, an
    unchunked one (one piece: nothing to share) or one embedded with another model."""
    old = store.get_artifact(new.id)
    if old is None or old.version == new.version or not old.is_chunked or old.profile != new.profile:
        return {}
    text_of = {piece_id(record_id, old.version, piece.index): piece.content
               for record_id, text, _ in embedding_targets(old, "", store.chunks_of(new.id)) for piece in split(text)}
    found: dict[str, Vector] = {}
    after = f"{new.id}::"
    while True:
        page = copies.stored_vectors(CHUNKS, after, PAGE)
        for record in page:
            if not record.id.startswith(f"{new.id}::"):
                return found
            if (text := text_of.get(record.id)) is not None:
                found[text] = record.vector
        if len(page) < PAGE:
            return found
        after = page[-1].id


def same_text(copies: VectorOutbox | None, keys: Mapping[str, str], known: Mapping[str, Vector]) -> dict[str, Vector]:
    """Vectors stored for these texts (``keys``: text -> its text_key) by any of the owner's documents,
    for the texts not ``known`` already."""
    wanted = {key: text for text, key in keys.items() if text not in known}
    if copies is None or not wanted:
        return {}
    return {wanted[key]: vector for key, vector in copies.vectors_by_text(sorted(wanted)).items() if key in wanted}
