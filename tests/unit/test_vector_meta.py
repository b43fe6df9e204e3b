"""A vector's metadata as the SQL store's row keeps it: what the id says and the usual values left out,
everything given back on reading, exactly; rows written before read as they always did."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.sql.vector_meta import ELIDED, pack, unpack
from domain.access.rules import NEVER
from domain.model import VectorRecord

CHUNK_ID = "art_0132df46a84752181a234b670715d64f::chunk::007::15c4a404::87ab80584881::0"


def record(vector_id: str, metadata: dict[str, Any]) -> VectorRecord:
    return VectorRecord(id=vector_id, record_id=vector_id.rsplit("::", 2)[0], vector=[0.0], metadata=metadata)


def test_a_local_chunk_keeps_only_what_is_its_own() -> None:
    meta = {"acl:u:local": True, "artifact_id": "art_0132df46a84752181a234b670715d64f", "artifact_type": "doc",
            "chunk_index": 7, "expires_epoch": NEVER, "sensitivity": "normal", "source_system": "bench",
            "ts_epoch": 1795848801.4, "version": "87ab80584881", "piece": 0, "visibility_scope": "me"}
    stored = pack("chunk", record(CHUNK_ID, meta))
    assert stored == ELIDED + '{"artifact_type":"doc","source_system":"bench","ts_epoch":1795848801.4}'
    assert unpack("chunk", CHUNK_ID, stored) == meta


def test_another_owners_vector_does_not_gain_the_local_owners_access() -> None:
    meta = {"acl:u:bob": True, "expires_epoch": 1.0e9, "sensitivity": "secret", "visibility_scope": "team"}
    stored = pack("chunk", record(CHUNK_ID, meta))
    assert "acl:u:local" in json.loads(stored[1:])["~absent"]
    back = unpack("chunk", CHUNK_ID, stored)
    assert "acl:u:local" not in back and back["acl:u:bob"] is True and back["sensitivity"] == "secret"


def test_a_row_written_before_the_defaults_were_left_out_gains_none_of_them() -> None:
    old = json.dumps({"acl:u:bob": True, "expires_epoch": 5.0})
    back = unpack("chunk", CHUNK_ID, old)
    assert "acl:u:local" not in back and "sensitivity" not in back and back["expires_epoch"] == 5.0
    assert back["chunk_index"] == 7 and back["version"] == "87ab80584881" and back["piece"] == 0


def test_a_memory_does_not_gain_an_artifacts_labels() -> None:
    vid = "mem_" + "a" * 32 + "::0123456789ab::0"
    meta = {"acl:u:local": True, "expires_epoch": NEVER, "type": "fact"}
    stored = pack("memory", record(vid, meta))
    back = unpack("memory", vid, stored)
    assert back == {**meta, "version": "0123456789ab", "piece": 0} and "sensitivity" not in back


VALUES = st.one_of(st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False), st.sampled_from(
    ["normal", "me", "secret", "team", "9000000000000000.0"]), st.just(NEVER), st.just(1), st.just(1.0))
KEYS = st.sampled_from(["acl:u:local", "acl:u:bob", "expires_epoch", "sensitivity", "visibility_scope",
                        "artifact_type", "ts_epoch", "~absent"])


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["chunk", "artifact", "memory", "history"]), st.dictionaries(KEYS, VALUES))
def test_what_is_read_is_what_was_written(collection: str, given_meta: dict[str, Any]) -> None:
    """Any metadata (beyond what the id says) comes back exactly, types included (True is not 1)."""
    given_meta.pop("~absent", None)  # the one key the format reserves
    vid = ("mem_" + "b" * 32 if collection in ("memory", "history") else CHUNK_ID.rsplit("::", 2)[0]) + "::v::3"
    back = unpack(collection, vid, pack(collection, record(vid, given_meta)))
    said = {"version", "piece", "artifact_id", "chunk_index"}
    assert {k: v for k, v in back.items() if k not in said} == given_meta
    assert all(type(back[k]) is type(v) for k, v in given_meta.items())
