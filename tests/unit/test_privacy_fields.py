"""What a writer asks of an item (Privacy): fields of the wrong type or that would do nothing are refused
naming them; a write nobody could read is refused; who can read a write is said in words."""

from __future__ import annotations

import pytest

from domain.access.principal import Principal, RequestContext
from domain.access.privacy import Privacy, check_readable
from domain.access.rules import NEVER, readers
from domain.errors import ValidationError

NOW = 1_800_000_000.0
LOCAL = RequestContext(Principal("local", clearance="sensitive"))
BOB = RequestContext(Principal("bob", ("eng",), "acme", clearance="normal"))


@pytest.mark.parametrize(("privacy", "field", "words"), [
    (Privacy(retention_days=30), "retention_days", ("retention_policy=custom", "retention_policy=forever")),
    (Privacy(retention_policy="1y", retention_days=30), "retention_days", ("retention_policy=1y",)),
    (Privacy(retention_days="5"), "retention_days", ("'5'",)),  # the type first, whatever the policy
    (Privacy(retention_policy="custom", retention_days="5"), "retention_days", ("'5'",)),
    (Privacy(retention_policy="custom", retention_days=True), "retention_days", ("True",)),
    (Privacy(retention_policy="custom", retention_days=36_501), "retention_days", ("36500",)),
    (Privacy(visible_to={}), "visible_to", ("list",)),
    (Privacy(visible_to="alice"), "visible_to", ("list",)),
    (Privacy(visibility_scope="team", visible_to=["alice"]), "visible_to", ("visibility_scope=team",)),
    (Privacy(visible_to=["alice"]), "visible_to", ("visibility_scope=custom", "visibility_scope=me")),
])
def test_a_field_of_the_wrong_type_or_that_does_nothing_is_refused_by_name(
        privacy: Privacy, field: str, words: tuple[str, ...]) -> None:
    with pytest.raises(ValidationError) as refused:
        privacy.checked()
    assert refused.value.field == field and all(w in refused.value.message for w in words), refused.value.message


@pytest.mark.parametrize("privacy", [
    Privacy(), Privacy(visible_to=[]), Privacy(visibility_scope="custom"),  # spec 000's custom, deferred: kept
    Privacy(retention_policy="custom"), Privacy(retention_policy="custom", retention_days=1),
    Privacy(visibility_scope="custom", visible_to=["alice", "team:ops"]),
])
def test_meaningful_combinations_are_accepted(privacy: Privacy) -> None:
    assert privacy.checked()["sensitivity"] == "normal"


def test_a_write_above_the_writers_clearance_only_the_writer_reads_is_refused() -> None:
    for privacy in (Privacy("highly_sensitive"), Privacy("highly_sensitive", "custom", visible_to=["local"])):
        with pytest.raises(ValidationError) as refused:
            privacy.written(LOCAL, NOW, NOW)
        assert refused.value.field == "sensitivity"
        assert refused.value.message == (
            "sensitivity highly_sensitive is above your clearance (sensitive) and only you may read it: nobody "
            "could read it back, so nothing was stored. Use normal or sensitive, open it to readers cleared for "
            "highly_sensitive (visibility_scope team, org or custom), or raise MEMTROVE_LOCAL_CLEARANCE "
            "(the local owner's)")
    with pytest.raises(ValidationError) as refused:
        Privacy("sensitive").written(BOB, NOW, NOW)
    assert refused.value.field == "sensitivity" and "MEMTROVE_LOCAL_CLEARANCE" not in refused.value.message


def test_writing_up_for_others_is_kept_and_says_who_reads_it() -> None:
    fields = Privacy("highly_sensitive", "team").written(BOB, NOW, NOW)
    assert fields["acl"] == ("t:eng", "u:bob")
    assert readers(fields["acl"], "highly_sensitive", BOB) == "team eng (cleared for highly_sensitive)"
    assert readers(("o:acme", "p:atlas", "u:carol", "u:bob"), "normal", BOB) == \
        "you, carol, org acme, project atlas (cleared for normal)"


def test_a_write_expired_before_it_is_written_is_refused_with_when() -> None:
    year_ago = NOW - 400 * 86_400.0
    with pytest.raises(ValidationError) as refused:
        Privacy(retention_policy="1y").written(LOCAL, year_ago, NOW)
    assert refused.value.field == "ts" and "expired at 2026-" in refused.value.message
    with pytest.raises(ValidationError):
        Privacy(retention_policy="custom", retention_days=7).written(LOCAL, NOW - 7 * 86_400.0, NOW)
    assert Privacy(retention_policy="custom", retention_days=7).written(LOCAL, NOW - 6 * 86_400.0, NOW)[
        "expires_epoch"] == NOW + 86_400.0
    assert Privacy().written(LOCAL, 0.0, NOW)["expires_epoch"] == NEVER  # kept forever, however old
    check_readable(LOCAL, {"sensitivity": "normal", "acl": ("u:local",), "retention_policy": "1y"},
                   NOW - 365 * 86_400.0, NOW)  # a year (less a quarter day) ago: still readable
    with pytest.raises(ValidationError) as refused:
        Privacy(retention_policy="custom", retention_days=1).written(LOCAL, 0.0, NOW)
    assert refused.value.message.startswith("ts 1970-01-01T00:00:00Z with retention_policy custom and "
                                            "retention_days 1 expired at 1970-01-02T00:00:00Z")


def test_each_write_use_case_refuses_a_write_nobody_could_read_and_writes_nothing(aworld) -> None:
    from domain.artifacts.ingest import IngestArtifact
    from domain.artifacts.input import IngestRequest
    from domain.history.usecases import AppendTurn, AppendTurnRequest
    from domain.memories.usecases import StoreMemory, StoreMemoryRequest
    from domain.model import ChunkSpec
    from plugins.chunkers.token_window import TokenWindowChunker
    from tests.conftest import catalog

    w, me = aworld, (lambda: LOCAL)
    writes = {
        "memory": lambda p: StoreMemory(w.embedder, w.store, w.split, w.tokenizer, identity=me)(
            StoreMemoryRequest("The ferry leaves at nine", "fact", 0.9, privacy=p)),
        "turn": lambda p, ts=None: AppendTurn(w.embedder, w.store, w.store, w.split, w.tokenizer, identity=me)(
            AppendTurnRequest("trip", "user", "we booked the ferry", 0, ts, privacy=p)),
        "artifact": lambda p, ts=None: IngestArtifact(
            w.embedder, w.store, w.store, catalog(TokenWindowChunker()), w.tokenizer, ChunkSpec(30, 5, 30), w.split,
            identity=me)(IngestRequest("note", "wiki", "Ferry note.", ts=ts, sensitivity=p.sensitivity,
                                       visibility_scope=p.visibility_scope, retention_policy=p.retention_policy,
                                       visible_to=p.visible_to, retention_days=p.retention_days)),
    }
    for kind, write in writes.items():
        for privacy, field in ((Privacy("highly_sensitive"), "sensitivity"), (Privacy(retention_days=3), "retention_days"),
                               (Privacy(visible_to="bob"), "visible_to")):
            with pytest.raises(ValidationError) as refused:
                write(privacy)
            assert refused.value.field == field, kind
        if kind != "memory":
            with pytest.raises(ValidationError) as refused:
                write(Privacy(retention_policy="1y"), "1970-01-01T00:00:00Z")
            assert refused.value.field == "ts", kind
    assert w.store.memories == {} and w.store.turns == {} and w.store.recent(10) == []
    assert w.store.lexical_search("artifact", ["ferry"], 5) == [] and w.store.lexical_search("chunk", ["ferry"], 5) == []


def test_an_artifact_ingested_again_with_other_privacy_or_already_expired_is_not_unchanged(aworld) -> None:
    from domain.artifacts.ingest import IngestArtifact
    from domain.artifacts.input import IngestRequest
    from domain.model import ChunkSpec
    from plugins.chunkers.token_window import TokenWindowChunker
    from tests.conftest import catalog

    clock = {"now": NOW}
    ingest = IngestArtifact(aworld.embedder, aworld.store, aworld.store, catalog(TokenWindowChunker()),
                            aworld.tokenizer, ChunkSpec(30, 5, 30), aworld.split, now=lambda: clock["now"],
                            identity=lambda: LOCAL)

    def put(**asked) -> object:
        return ingest(IngestRequest("note", "wiki", "Ferry timetable.", source_id="ferry", **asked))

    first = put(ts="2027-01-14T00:00:00Z", retention_policy="custom", retention_days=2)
    assert put(ts="2027-01-14T00:00:00Z", retention_policy="custom", retention_days=2).status == "unchanged"
    longer = put(ts="2027-01-14T00:00:00Z", retention_policy="custom", retention_days=30)
    assert longer.status == "replaced" and longer.artifact.expires_epoch == first.artifact.expires_epoch + 28 * 86_400
    assert put(ts="2027-01-14T00:00:00Z", retention_policy="custom", retention_days=30).status == "unchanged"
    assert put(sensitivity="sensitive").status == "replaced"  # the local owner's own: its privacy was ignored
    assert put(sensitivity="sensitive").status == "unchanged"
    assert put().artifact.sensitivity == "normal"
    clock["now"] = NOW + 40 * 86_400
    kept = put(retention_policy="1y")
    assert kept.status == "replaced" and kept.artifact.expires_epoch > clock["now"]
