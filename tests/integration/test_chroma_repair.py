"""A Chroma collection whose HNSW files are lost or damaged is rebuilt from the store's copy of its vectors.

Real embedded Chroma on disk: a first process fills a collection past Chroma's sync threshold (so its
HNSW segment is written to files) and exits; one of those files is then removed or emptied, as a bad
disk, a partial copy or a kill at the wrong moment leaves it; a fresh index over that folder answers
a search from the rebuilt collection instead of failing.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.vectors.chroma import ChromaVectorIndex
from domain.errors import StorageError
from domain.model import EmbeddingProfile, VectorRecord

PROFILE = EmbeddingProfile("fake", "repair-8", 8, 64)
COUNT = 1_500  # past Chroma's default sync threshold (1,000): the HNSW segment is on disk


def records() -> list[VectorRecord]:
    rng = random.Random(7)
    return [VectorRecord(f"art_{i:032x}::chunk::000::h::v{i % 3}::0", f"art_{i:032x}::chunk::000::h",
                         [rng.uniform(-1, 1) for _ in range(8)],
                         {"artifact_id": f"art_{i:032x}", "sensitivity": "normal", "acl:u:local": True,
                          "version": f"v{i % 3}", "piece": 0})
            for i in range(COUNT)]


def fill(path: Path) -> None:
    """In another process, as a server that stored these vectors and was stopped."""
    code = ("import sys, json; sys.path[:0] = json.loads(sys.argv[2]);"
            "from tests.integration.test_chroma_repair import PROFILE, records;"
            "from adapters.vectors.chroma import ChromaVectorIndex;"
            "ChromaVectorIndex(PROFILE, path=sys.argv[1]).upsert('chunk', records())")
    subprocess.run([sys.executable, "-c", code, str(path), json.dumps(sys.path)], check=True, timeout=300)


def source_of(stored: list[VectorRecord]):
    ordered = sorted(stored, key=lambda r: r.id)

    def page(collection: str, after: str, limit: int) -> list[VectorRecord]:
        assert collection == "chunk"
        return [r for r in ordered if r.id > after][:limit]
    return page


def segment_files(path: Path) -> list[Path]:
    return [f for f in path.glob("*/*") if f.name in ("data_level0.bin", "header.bin", "link_lists.bin", "length.bin")]


def test_a_search_rebuilds_a_collection_whose_hnsw_files_cannot_be_read(tmp_path: Path) -> None:
    # A file removed: Chroma says so. (A file emptied in place can crash Chroma's own reader, a
    # segmentation fault in its native code that no caller can catch: seen once in a full test run.)
    path = tmp_path / "chroma"
    fill(path)
    files = segment_files(path)
    assert files, "the HNSW segment should be on disk past the sync threshold"
    for f in files:
        if f.name == "data_level0.bin":
            f.unlink()
    stored = records()
    index = ChromaVectorIndex(PROFILE, path=str(path), source=source_of(stored))
    target = stored[1234]
    found = index.query("chunk", target.vector, 5)
    assert found[0].id == target.id and found[0].score == pytest.approx(1.0, abs=1e-4)
    assert len(found) == 5
    assert index.count("chunk") == COUNT
    # What the rebuilt collection keeps is what it filters on: the sensitivity still narrows a search.
    assert index.query("chunk", target.vector, 3, {"sensitivity": "sensitive"}) == []
    assert index.query("chunk", target.vector, 1, {"artifact_id": target.metadata["artifact_id"]})[0].id == target.id
    # Another index over the folder meets a whole collection: the rebuilt one took the same name.
    again = ChromaVectorIndex(PROFILE, path=str(path))
    assert again.query("chunk", target.vector, 1)[0].id == target.id


def test_without_a_copy_the_damage_is_reported_with_the_way_out(tmp_path: Path) -> None:
    path = tmp_path / "chroma"
    fill(path)
    for f in segment_files(path):
        f.unlink()
    index = ChromaVectorIndex(PROFILE, path=str(path))
    with pytest.raises(StorageError, match="doctor --rebuild-vectors"):
        index.query("chunk", records()[0].vector, 5)

