"""The behaviour every ArtifactScopes store shares: labels kept with an artifact, listed by scope in
natural iteration order, reads counted, counts and size, and both lexical searches filtered by labels.

Subclass ArtifactScopesContract as ``Test...`` and override ``store`` with a fresh, empty store that
is an ArtifactStore, an ArtifactScopes and a LexicalIndex at once. Set ``on_disk = True`` when the
store keeps files (or a database server) whose size ``storage_bytes`` reports.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

import pytest

from domain.model import Artifact, ArtifactChunk, AuditEntry, EmbeddingProfile, IngestJob
from domain.sessions.scope import iteration_order

PROFILE = EmbeddingProfile("fake", "hash", 64, 64)
TS = "2025-03-01T10:00:00Z"


def entry(action: str, aid: str = "a") -> AuditEntry:
    return AuditEntry(action, "artifact", (aid,), "test", "2025-01-01T00:00:00Z")


def labelled(aid: str, labels: dict[str, Any] | None = None, *, source: str = "sessions", ts: str = TS,
             content: str = "whole text", chunks: int = 0, title: str | None = "T", salt: str = "") -> Artifact:
    digest = hashlib.sha256(f"{aid}|{content}|{chunks}|{salt}".encode()).hexdigest()
    return Artifact(
        id=aid, artifact_type="note", source_system=source, source_id=None, source_url=None, title=title,
        author="A", participants=(), ts=ts, content_hash=digest, token_count=10, is_chunked=chunks > 0,
        num_chunks=chunks, sensitivity="normal", visibility_scope="me", retention_policy="forever",
        ingested_at=ts, chunker="token-window", chunker_version="1", profile=PROFILE,
        content=None if chunks else content, labels=dict(labels or {}))


def chunk_parts(a: Artifact, texts: list[str]) -> list[ArtifactChunk]:
    parts, offset = [], 0
    for i, text in enumerate(texts):
        digest = hashlib.sha256(text.encode()).hexdigest()
        parts.append(ArtifactChunk(f"{a.id}::chunk::{i:03d}::{digest[:8]}", a.id, i, offset, offset + len(text),
                                   text, 3, digest))
        offset += len(text)
    return parts


def begin(store, a: Artifact, texts: list[str] | None = None) -> None:
    texts = texts if texts is not None else [f"part {i} of {a.id}" for i in range(a.num_chunks)]
    assert len(texts) == a.num_chunks
    job = IngestJob(a.id, a.version, "indexing", 0, max(a.num_chunks, 1), lease_owner="w1", lease_until=1e12)
    store.begin_artifact(a, chunk_parts(a, texts), entry("begin", a.id), job)


def put(store, aid: str, labels: dict[str, Any] | None = None, texts: list[str] | None = None,
        **fields: Any) -> Artifact:
    """Write and commit an artifact (chunked when ``texts`` is given: one chunk per text)."""
    if texts is not None:
        fields["chunks"] = len(texts)
    a = labelled(aid, labels, **fields)
    begin(store, a, texts)
    store.commit_artifact(aid, a.version, entry("ingested", aid))
    return a


def ids(artifacts: list[Artifact]) -> list[str]:
    return [a.id for a in artifacts]


def owners(matches: list) -> set[str]:
    """The artifacts lexical matches belong to (a chunk's id starts with its artifact's)."""
    return {m.record_id.split("::", 1)[0] for m in matches}


def session(memory_type: str, session_id: str, iteration: str | None = None, **more: Any) -> dict[str, Any]:
    labels: dict[str, Any] = {"memory_type": memory_type, "session_id": session_id, **more}
    if iteration is not None:
        labels["session_iter"] = iteration
        labels["iter_order"] = iteration_order(iteration)
    return labels


class ArtifactScopesContract:
    on_disk = False

    @pytest.fixture
    def store(self):
        raise NotImplementedError

    # --- labels --------------------------------------------------------------------------------

    def test_labels_round_trip_with_a_tag_list(self, store) -> None:
        labels = {"memory_type": "report", "session_id": "s1", "session_iter": "v2", "iter_order": iteration_order("v2"),
                  "agent_id": "agent-7", "task_code": "T-12", "category": "notes", "source": "cli",
                  "tags": ["red", "blue", "東京"]}
        a = put(store, "art_lab", labels)
        b = put(store, "art_ch", {"session_id": "s1", "tags": []}, texts=["one", "two"])
        c = put(store, "art_none")
        got = store.get_artifact("art_lab")
        assert got is not None and got.labels == labels and got.labels["tags"] == ["red", "blue", "東京"]
        assert got == a
        assert store.get_artifact("art_ch").labels == {"session_id": "s1", "tags": []}
        assert store.get_artifact("art_none").labels == {}
        assert {k: v.labels for k, v in store.get_artifacts(["art_lab", "art_ch", "art_none"]).items()} == {
            "art_lab": labels, "art_ch": b.labels, "art_none": c.labels}

    def test_a_pending_version_keeps_its_own_labels(self, store) -> None:
        put(store, "art_a", {"session_id": "s1", "tags": ["old"]})
        v2 = labelled("art_a", {"session_id": "s2", "tags": ["new"]}, content="second text")
        begin(store, v2)
        assert store.get_artifact("art_a").labels == {"session_id": "s1", "tags": ["old"]}
        pending = store.pending_artifact("art_a", v2.version)
        assert pending is not None and pending[0].labels == {"session_id": "s2", "tags": ["new"]}
        store.commit_artifact("art_a", v2.version, entry("replaced"))
        assert store.get_artifact("art_a").labels == {"session_id": "s2", "tags": ["new"]}

    # --- list_artifacts ------------------------------------------------------------------------

    def test_list_filters_by_every_label_pair(self, store) -> None:
        put(store, "art_r1", session("report", "s1", "v1"))
        put(store, "art_r2", session("report", "s1", "v2", agent_id="ag"))
        put(store, "art_w1", session("working_memory", "s1", "v1"))
        put(store, "art_r3", session("report", "s2", "v1"))
        put(store, "art_x", {"session_id": "séance-東京 'quoted'"})
        put(store, "art_plain")
        both = {"session_id": "s1", "memory_type": "report"}
        assert set(ids(store.list_artifacts("sessions", both, 50))) == {"art_r1", "art_r2"}
        assert set(ids(store.list_artifacts("sessions", {**both, "agent_id": "ag"}, 50))) == {"art_r2"}
        assert store.list_artifacts("sessions", {**both, "agent_id": "nobody"}, 50) == []
        assert set(ids(store.list_artifacts("sessions", {"session_id": "s1"}, 50))) == {"art_r1", "art_r2", "art_w1"}
        assert set(ids(store.list_artifacts("sessions", {"memory_type": "report"}, 50))) == {
            "art_r1", "art_r2", "art_r3"}
        assert ids(store.list_artifacts("sessions", {"session_id": "séance-東京 'quoted'"}, 50)) == ["art_x"]
        assert set(ids(store.list_artifacts("sessions", {}, 50))) == {
            "art_r1", "art_r2", "art_w1", "art_r3", "art_x", "art_plain"}
        listed = store.list_artifacts("sessions", {"session_id": "s1", "agent_id": "ag"}, 50)
        assert listed == [store.get_artifact("art_r2")]  # whole artifacts, labels included

    def test_list_ignores_other_source_systems(self, store) -> None:
        put(store, "art_s", session("report", "s1", "v1"))
        put(store, "art_d", session("report", "s1", "v1"), source="drive")
        assert ids(store.list_artifacts("sessions", {"session_id": "s1"}, 50)) == ["art_s"]
        assert ids(store.list_artifacts("drive", {"session_id": "s1"}, 50)) == ["art_d"]
        assert ids(store.list_artifacts("drive", {}, 50)) == ["art_d"]
        assert store.list_artifacts("mail", {}, 50) == []

    def test_list_ignores_pending_versions(self, store) -> None:
        begin(store, labelled("art_p", session("report", "s1", "v1")))  # never committed
        put(store, "art_c", session("report", "s1", "v1"))
        v2 = labelled("art_c", session("report", "s2", "v9"), content="a new version")
        begin(store, v2)  # a new version is under way: the committed one is what is listed
        assert ids(store.list_artifacts("sessions", {"session_id": "s1"}, 50)) == ["art_c"]
        assert store.list_artifacts("sessions", {"session_id": "s2"}, 50) == []
        assert ids(store.list_artifacts("sessions", {}, 50)) == ["art_c"]
        assert store.list_artifacts("sessions", {}, 50)[0].labels["session_id"] == "s1"
        store.commit_artifact("art_c", v2.version, entry("replaced"))
        assert store.list_artifacts("sessions", {"session_id": "s1"}, 50) == []
        assert ids(store.list_artifacts("sessions", {"session_id": "s2"}, 50)) == ["art_c"]

    def test_list_orders_iterations_naturally(self, store) -> None:
        for aid, iteration in (("art_10", "v10"), ("art_02", "v2"), ("art_01", "v1"), ("art_09", "v9"),
                               ("art_2a", "v2a")):
            put(store, aid, session("report", "s1", iteration))
        assert ids(store.list_artifacts("sessions", {"session_id": "s1"}, 50)) == [
            "art_10", "art_09", "art_2a", "art_02", "art_01"]
        assert ids(store.list_artifacts("sessions", {"session_id": "s1"}, 50, newest_first=False)) == [
            "art_01", "art_02", "art_2a", "art_09", "art_10"]

    def test_list_orders_by_iteration_then_time_then_id(self, store) -> None:
        put(store, "art_b", session("report", "s1", "v2"), ts="2025-03-01T10:00:00Z")
        put(store, "art_a", session("report", "s1", "v2"), ts="2025-03-01T10:00:00Z")
        put(store, "art_late", session("report", "s1", "v2"), ts="2025-03-02T10:00:00Z")
        put(store, "art_early", session("report", "s1", "v2"), ts="2025-02-01T10:00:00Z")
        put(store, "art_v10_old", session("report", "s1", "v10"), ts="2024-01-01T00:00:00Z")
        put(store, "art_noiter", {"session_id": "s1"}, ts="2026-01-01T00:00:00Z")  # no iter_order: lowest
        newest = ["art_v10_old", "art_late", "art_b", "art_a", "art_early", "art_noiter"]
        assert ids(store.list_artifacts("sessions", {"session_id": "s1"}, 50)) == newest
        assert ids(store.list_artifacts("sessions", {"session_id": "s1"}, 50, newest_first=False)) == newest[::-1]

    def test_list_without_iterations_is_by_time(self, store) -> None:
        put(store, "art_1", ts="2025-01-01T00:00:00Z")
        put(store, "art_3", ts="2025-01-03T00:00:00Z")
        put(store, "art_2", ts="2025-01-02T00:00:00+00:00")
        assert ids(store.list_artifacts("sessions", {}, 50)) == ["art_3", "art_2", "art_1"]
        assert ids(store.list_artifacts("sessions", {}, 50, newest_first=False)) == ["art_1", "art_2", "art_3"]

    def test_list_honours_the_limit(self, store) -> None:
        for i in range(1, 8):
            put(store, f"art_{i}", session("report", "s1", f"v{i}"))
        assert ids(store.list_artifacts("sessions", {"session_id": "s1"}, 3)) == ["art_7", "art_6", "art_5"]
        assert ids(store.list_artifacts("sessions", {"session_id": "s1"}, 3, newest_first=False)) == [
            "art_1", "art_2", "art_3"]
        assert len(store.list_artifacts("sessions", {}, 1)) == 1
        assert len(store.list_artifacts("sessions", {}, 100)) == 7

    def test_list_before_excludes_that_time_and_later(self, store) -> None:
        put(store, "art_1", ts="2025-01-01T00:00:00Z")
        put(store, "art_2", ts="2025-01-02T00:00:00Z")
        put(store, "art_3", ts="2025-01-03T00:00:00Z")
        assert ids(store.list_artifacts("sessions", {}, 50, before="2025-01-02T00:00:00Z")) == ["art_1"]
        assert ids(store.list_artifacts("sessions", {}, 50, before="2025-01-02T00:00:01Z")) == ["art_2", "art_1"]
        assert ids(store.list_artifacts("sessions", {}, 50, newest_first=False, before="2025-01-02T12:00:00Z")) == [
            "art_1", "art_2"]
        assert store.list_artifacts("sessions", {}, 50, before="2025-01-01T00:00:00Z") == []
        assert len(store.list_artifacts("sessions", {}, 50, before="2030-01-01T00:00:00Z")) == 3

    def test_list_by_tag(self, store) -> None:
        put(store, "art_red", {"session_id": "s1", "tags": ["red", "blue"]})
        put(store, "art_blue", {"session_id": "s1", "tags": ["blue"]})
        put(store, "art_redder", {"session_id": "s2", "tags": ["redder"]})  # a longer tag is another tag
        put(store, "art_untagged", {"session_id": "s1"})
        put(store, "art_other", {"tags": ["red"]}, source="drive")
        assert ids(store.list_artifacts("sessions", {"tag:red": True}, 50)) == ["art_red"]
        assert set(ids(store.list_artifacts("sessions", {"tag:blue": True}, 50))) == {"art_red", "art_blue"}
        assert ids(store.list_artifacts("sessions", {"tag:blue": True, "tag:red": True}, 50)) == ["art_red"]
        assert ids(store.list_artifacts("sessions", {"tag:redder": True, "session_id": "s2"}, 50)) == ["art_redder"]
        assert store.list_artifacts("sessions", {"tag:red": True, "session_id": "s2"}, 50) == []
        assert store.list_artifacts("sessions", {"tag:green": True}, 50) == []

    @pytest.mark.parametrize("name", [
        pytest.param("x') IS NULL OR 1=1 OR json_extract(a.labels, '$.x", id="sqlite-payload"),
        pytest.param("x') IS NULL OR 1=1 OR (CAST(a.labels AS jsonb) ->> 'x", id="postgres-payload"),
        pytest.param("session_id'", id="stray-quote"),
    ])
    def test_a_label_name_is_never_read_as_sql(self, store, name: str) -> None:
        """An unknown label name matches nothing, or is refused with a ValueError; it never widens the list."""
        put(store, "art_s", {"session_id": "s1"})
        put(store, "art_d", {"session_id": "s1"}, source="drive")
        try:
            found = store.list_artifacts("sessions", {name: "s1"}, 50)
        except ValueError:
            return
        assert found == []

    # --- reads ---------------------------------------------------------------------------------

    def test_record_access_counts_reads(self, store) -> None:
        put(store, "art_a")
        put(store, "art_b")
        assert store.accesses(["art_a", "art_b"]) == {}
        assert store.record_access("art_a", "2025-04-01T00:00:00Z") == ("2025-04-01T00:00:00Z", 1)
        assert store.record_access("art_a", "2025-04-02T00:00:00Z") == ("2025-04-02T00:00:00Z", 2)
        assert store.record_access("art_a", "2025-04-03T00:00:00Z") == ("2025-04-03T00:00:00Z", 3)
        assert store.record_access("art_missing", "2025-04-03T00:00:00Z") is None
        assert store.accesses(["art_a", "art_b", "art_missing"]) == {"art_a": ("2025-04-03T00:00:00Z", 3)}
        assert store.accesses([]) == {}
        assert store.record_access("art_b", "2025-04-04T00:00:00Z") == ("2025-04-04T00:00:00Z", 1)
        assert store.accesses(["art_b"]) == {"art_b": ("2025-04-04T00:00:00Z", 1)}

    def test_a_pending_artifact_is_not_read(self, store) -> None:
        begin(store, labelled("art_p"))
        assert store.record_access("art_p", "2025-04-01T00:00:00Z") is None
        assert store.accesses(["art_p"]) == {}

    def test_reads_survive_a_new_version(self, store) -> None:
        put(store, "art_a")
        store.record_access("art_a", "2025-04-01T00:00:00Z")
        put(store, "art_a", content="a second version")
        assert store.record_access("art_a", "2025-04-02T00:00:00Z") == ("2025-04-02T00:00:00Z", 2)

    def test_delete_forgets_the_reads(self, store) -> None:
        put(store, "art_a", texts=["one", "two"])
        put(store, "art_b")
        store.record_access("art_a", "2025-04-01T00:00:00Z")
        store.record_access("art_a", "2025-04-02T00:00:00Z")
        store.record_access("art_b", "2025-04-02T00:00:00Z")
        assert store.delete_artifact("art_a", entry("deleted", "art_a")) == 2
        assert store.accesses(["art_a", "art_b"]) == {"art_b": ("2025-04-02T00:00:00Z", 1)}
        assert store.record_access("art_a", "2025-04-03T00:00:00Z") is None
        put(store, "art_a", content="born again")
        assert store.accesses(["art_a"]) == {}
        assert store.record_access("art_a", "2025-04-04T00:00:00Z") == ("2025-04-04T00:00:00Z", 1)

    # --- figures -------------------------------------------------------------------------------

    def test_artifact_counts(self, store) -> None:
        assert store.artifact_counts() == (0, 0) and store.artifact_counts("sessions") == (0, 0)
        put(store, "art_s1", texts=["a", "b", "c"])
        put(store, "art_s2")
        put(store, "art_d1", texts=["x", "y"], source="drive")
        begin(store, labelled("art_p", chunks=4))  # pending only: not counted
        v2 = labelled("art_s2", content="next", chunks=5)
        begin(store, v2, ["1", "2", "3", "4", "5"])  # a pending new version: the committed one counts
        assert store.artifact_counts("sessions") == (2, 3)
        assert store.artifact_counts("drive") == (1, 2)
        assert store.artifact_counts() == (3, 5)
        assert store.artifact_counts(None) == (3, 5)
        assert store.artifact_counts("mail") == (0, 0)
        store.commit_artifact("art_s2", v2.version, entry("replaced"))
        assert store.artifact_counts("sessions") == (2, 8)
        store.delete_artifact("art_s1", entry("deleted"))
        assert store.artifact_counts("sessions") == (1, 5) and store.artifact_counts() == (2, 7)

    def test_artifact_counts_under_an_access_rule(self, store) -> None:
        """Counted for one caller: only what the rule lets through (keys, sensitivity, expiry)."""
        from domain.access.principal import Principal, RequestContext
        from domain.access.rules import access_filter

        def shared(aid: str, chunks: int, **access: Any) -> None:
            a = dataclasses.replace(labelled(aid, chunks=chunks), **access)
            begin(store, a)
            store.commit_artifact(aid, a.version, entry("ingested", aid))

        shared("art_team", 2, owner="alice", acl=("t:eng", "u:alice"), visibility_scope="team")
        shared("art_alice", 3, owner="alice", acl=("u:alice",))
        shared("art_secret", 1, owner="alice", acl=("t:eng", "u:alice"), sensitivity="highly_sensitive")
        shared("art_gone", 1, owner="alice", acl=("t:eng", "u:alice"), expires_epoch=100.0)
        bob = RequestContext(Principal("bob", teams=("eng",), clearance="sensitive"))
        alice = RequestContext(Principal("alice", teams=("eng",), clearance="highly_sensitive"))
        assert store.artifact_counts("sessions", access_filter(bob, 1000.0)) == (1, 2)
        assert store.artifact_counts(None, access_filter(alice, 1000.0)) == (3, 6)
        assert store.artifact_counts(None, access_filter(alice, 50.0)) == (4, 7)
        assert store.artifact_counts(None, access_filter(RequestContext(Principal("eve")), 0.0)) == (0, 0)
        assert store.artifact_counts() == (4, 7)

    # --- the catalog: find_artifacts and tallies ------------------------------------------------

    def test_find_artifacts_newest_first_filtered_and_paged(self, store) -> None:
        from domain.validation import epoch

        def filed(aid: str, ts: str, source_id: str | None, **more: Any) -> Artifact:
            a = dataclasses.replace(labelled(aid, ts=ts, **{k: v for k, v in more.items() if k == "source"}),
                                    source_id=source_id, **{k: v for k, v in more.items() if k != "source"})
            begin(store, a)
            store.commit_artifact(aid, a.version, entry("ingested", aid))
            return a

        filed("art_1", "2025-01-01T00:00:00Z", "/notes/a.md", source="files")
        filed("art_2", "2025-01-02T00:00:00Z", "/notes/sub/b.md", source="files")
        filed("art_3", "2025-01-02T00:00:00Z", "/other/c.md", source="files", artifact_type="doc")
        filed("art_4", "2025-01-03T00:00:00Z", None, source="mail", artifact_type="email")
        begin(store, labelled("art_p", ts="2025-02-01T00:00:00Z", source="files"))  # pending: never listed
        assert ids(store.find_artifacts({}, None, 10)) == ["art_4", "art_3", "art_2", "art_1"]
        assert ids(store.find_artifacts({"source_system": "files"}, None, 10)) == ["art_3", "art_2", "art_1"]
        assert ids(store.find_artifacts({"source_id_prefix": "/notes/"}, None, 10)) == ["art_2", "art_1"]
        assert ids(store.find_artifacts({"source_id_prefix": "/notes/%"}, None, 10)) == []  # no wildcard
        assert ids(store.find_artifacts({"artifact_type": "doc"}, None, 10)) == ["art_3"]
        first = store.find_artifacts({}, None, 2)
        assert ids(first) == ["art_4", "art_3"]
        after = (epoch(first[-1].ts), first[-1].id)
        assert ids(store.find_artifacts({}, None, 10, after)) == ["art_2", "art_1"]  # same time: by id
        listed = store.find_artifacts({"source_system": "mail"}, None, 1)[0]
        assert listed == store.get_artifact("art_4")

    def test_find_artifacts_and_tallies_under_an_access_rule(self, store) -> None:
        from domain.access.principal import Principal, RequestContext
        from domain.access.rules import access_filter
        from domain.model import Memory, Turn

        def shared(aid: str, **access: Any) -> None:
            a = dataclasses.replace(labelled(aid, chunks=2, ts="2025-03-0%sT00:00:00Z" % aid[-1]), **access)
            begin(store, a)
            store.commit_artifact(aid, a.version, entry("ingested", aid))

        shared("art_1", owner="alice", acl=("t:eng", "u:alice"), visibility_scope="team")
        shared("art_2", owner="alice", acl=("u:alice",))
        shared("art_3", owner="alice", acl=("t:eng",), sensitivity="highly_sensitive")
        for i, (acl, kind) in enumerate(((("t:eng",), "fact"), (("u:alice",), "fact"), (("t:eng",), "decision"))):
            store.add_memory(Memory(id=f"mem_{i}", content=f"m{i}", type=kind, confidence=1.0,
                                    ts=f"2024-12-0{i + 1}T00:00:00Z", conversation_id=None, token_count=1,
                                    profile=PROFILE, owner="alice", acl=acl), entry("stored"))
        for i, conv in enumerate(("c1", "c1", "c2")):
            store.put_turn(Turn(id=f"{conv}_turn_{i}", conversation_id=conv, role="user", content=f"t{i}",
                                turn_index=i, ts="2025-04-01T00:00:00Z", token_count=1, content_hash=f"{i:064d}",
                                profile=PROFILE, owner="alice", acl=("t:eng",) if conv == "c1" else ("u:alice",)),
                           entry("appended"))
        # A conversation id is each owner's own: bob's "c2" is a conversation of its own, counted apart.
        store.put_turn(Turn(id="c2_turn_0~b", conversation_id="c2", role="user", content="b", turn_index=0,
                            ts="2025-04-01T00:00:00Z", token_count=1, content_hash="b" * 64, profile=PROFILE,
                            owner="bob", acl=("u:bob",)), entry("appended"))
        bob = access_filter(RequestContext(Principal("bob", teams=("eng",), clearance="sensitive")), 1000.0)
        assert ids(store.find_artifacts({}, bob, 10)) == ["art_1"]
        assert store.find_artifacts({"owner": "bob"}, bob, 10) == []  # what bob sees is alice's
        assert ids(store.find_artifacts({"owner": "alice"}, None, 10)) == ["art_3", "art_2", "art_1"]
        assert store.tallies(bob) == {
            "memories": {"decision": 1, "fact": 1}, "turns": 3, "conversations": 2, "chunks": 2,
            "artifacts": {"by_type": {"note": 1}, "by_source": {"sessions": 1}},
            "oldest": "2024-12-01T00:00:00Z", "newest": "2025-04-01T00:00:00Z"}
        everything = store.tallies(None)
        assert everything["memories"] == {"decision": 1, "fact": 2} and everything["turns"] == 4
        assert everything["conversations"] == 3 and everything["chunks"] == 6
        assert everything["artifacts"] == {"by_type": {"note": 3}, "by_source": {"sessions": 3}}
        eve = access_filter(RequestContext(Principal("eve")), 1000.0)
        assert store.find_artifacts({}, eve, 10) == []
        assert store.tallies(eve) == {"memories": {}, "turns": 0, "conversations": 0, "chunks": 0,
                                      "artifacts": {"by_type": {}, "by_source": {}}, "oldest": None, "newest": None}

    def test_storage_bytes(self, store) -> None:
        put(store, "art_a", content="some text " * 200)
        size = store.storage_bytes()
        assert isinstance(size, int) and size >= 0
        if self.on_disk:
            assert size > 0

    # --- lexical index filtered by labels ------------------------------------------------------

    @pytest.fixture
    def mixed(self, store):
        """Whole and chunked artifacts with the same words, filed under different labels."""
        words = "quarterly budget review with forecast_2025"
        put(store, "art_w_s1", session("report", "s1", "v1", tags=["red"]), content=f"{words} one")
        put(store, "art_w_s1n", session("working_memory", "s1", "v1"), content=f"{words} two")
        put(store, "art_w_s2", session("report", "s2", "v1", tags=["red", "blue"]), content=f"{words} three")
        put(store, "art_w_no", {}, content=f"{words} four")
        put(store, "art_w_dr", {"session_id": "s1", "tags": ["red"]}, content=f"{words} five", source="drive")
        put(store, "art_c_s1", session("report", "s1", "v2", tags=["blue"]),
            texts=[f"{words} alpha. ", f"{words} beta."])
        put(store, "art_c_s2", session("report", "s2", "v2", tags=["red"]), texts=[f"{words} gamma."])
        put(store, "art_c_no", {"tags": ["redder"]}, texts=[f"{words} delta."])
        return store

    @pytest.mark.parametrize("collection", ["artifact", "chunk"])
    @pytest.mark.parametrize("where", [
        {"session_id": "s1"}, {"tag:red": True}, {"session_id": "s1", "memory_type": "report"},
        {"tag:blue": True, "session_id": "s2"}, {"source_system": "sessions", "tag:red": True},
        {"session_id": "nobody"}, {"tag:green": True}])
    def test_both_lexical_searches_filter_on_labels(self, mixed, collection: str, where: dict) -> None:
        store = mixed
        prefix = "art_w_" if collection == "artifact" else "art_c_"
        everything = {a for a in store.committed_versions() if a.startswith(prefix)}
        expected = {a for a in everything if _passes(store.get_artifact(a), where)}
        words = store.lexical_search(collection, ["budget", "forecast"], 50, where)
        exact = store.exact_search(collection, ["forecast_2025"], 50, where)
        assert owners(words) == expected
        assert owners(exact) == expected
        if collection == "chunk":
            assert len(words) == len(exact) == sum(store.get_artifact(a).num_chunks for a in expected)
        unfiltered = owners(store.lexical_search(collection, ["budget"], 50))
        assert unfiltered == everything  # the words are in every one: the filter alone makes the difference

    @pytest.mark.parametrize("collection", ["artifact", "chunk"])
    @pytest.mark.parametrize("where", [{"session_id": "s1"}, {"tag:red": True}])
    def test_a_selective_label_filter_still_fills_the_limit(self, store, collection: str, where: dict) -> None:
        for i in range(30):
            # The ones left out are shorter, with the words repeated (BM25 ranks them higher): a filter
            # applied after the limit would keep few or none of the matching ones.
            other = "budget budget forecast_2025 forecast_2025"
            matching = "a long winded note about the budget and the forecast_2025 figures for this team"
            texts_out, texts_in = ([other], [matching]) if collection == "chunk" else (None, None)
            put(store, f"art_out_{i:02d}", {"session_id": "s2", "tags": ["blue"]}, texts=texts_out, content=other)
            put(store, f"art_in_{i:02d}", {"session_id": "s1", "tags": ["red"]}, texts=texts_in, content=matching)
        for found in (store.lexical_search(collection, ["budget", "forecast"], 10, where),
                      store.exact_search(collection, ["forecast_2025"], 10, where)):
            assert len(found) == 10
            assert all(o.startswith("art_in_") for o in owners(found))


def _passes(artifact: Artifact, where: dict[str, Any]) -> bool:
    for name, value in where.items():
        if name.startswith("tag:"):
            if name[4:] not in artifact.labels.get("tags", ()):
                return False
        elif name == "source_system":
            if artifact.source_system != value:
                return False
        elif artifact.labels.get(name) != value:
            return False
    return True
