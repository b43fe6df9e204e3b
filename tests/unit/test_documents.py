"""Spec 004's project documents on the in-memory fakes: idempotent commits, versions, outline, sections,
context packs, restore bundles, project isolation, the canonical boost."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from adapters.memory.scopes import InMemoryStore
from adapters.files.projects import GitProjects, normalised_remote
from domain.artifacts.ingest import IngestArtifact
from domain.documents.bundles import ContextPack, ProjectSearch, Restore, fit
from domain.documents.idempotency import Idempotent
from domain.documents.usecases import CommitEntries, ItemWriter, ReadCanonical, UpsertCanonical
from domain.errors import NotFoundError, ValidationError
from domain.model import ChunkSpec
from domain.search.passages import PassageSearch
from plugins.chunkers.markdown import MarkdownChunker
from plugins.chunkers.token_window import TokenWindowChunker
from tests.conftest import catalog, searcher, synced

SPEC = """# App Spec

What the app is for.

## Auth

Users sign in with passkeys. Sessions last twelve hours.

### Token Refresh

Refresh tokens rotate on every use; a reused token revokes the family.

## Billing

Invoices are issued monthly in euros.
"""


class Clock:
    def __init__(self) -> None:
        self.n = 0

    def __call__(self) -> str:
        self.n += 1
        return f"2026-11-{1 + self.n // 1440:02d}T{(self.n // 60) % 24:02d}:{self.n % 60:02d}:00Z"


@pytest.fixture
def d(aworld):
    store = InMemoryStore()
    aworld.store = aworld.artifacts = store
    clock = Clock()
    chunkers = catalog(TokenWindowChunker(), MarkdownChunker())
    ingest = IngestArtifact(aworld.embedder, store, store, chunkers, aworld.tokenizer, ChunkSpec(30, 5, 30),
                            aworld.split, clock=clock)
    writer = ItemWriter(store, ingest, clock)
    idem = Idempotent(store, sleep=lambda _: None)
    passages = PassageSearch(searcher(aworld), store, aworld.embedder, store)
    aworld.commit, aworld.upsert = CommitEntries(writer, idem), UpsertCanonical(writer, idem)
    aworld.read = ReadCanonical(store, chunkers, ChunkSpec(30, 5, 30), aworld.tokenizer)
    aworld.search = ProjectSearch(passages)
    aworld.pack = ContextPack(aworld.read, passages)
    aworld.restore = Restore(store, aworld.search, aworld.tokenizer, clock)
    return aworld


def test_the_same_key_and_payload_write_once_and_another_payload_is_refused(d) -> None:
    entries = [{"kind": "decision", "title": "Use Postgres", "content": "We chose PostgreSQL for rows."}]
    first = d.commit("p1", "k-1", entries)
    again = d.commit("p1", "k-1", entries)
    assert (first["replayed"], again["replayed"]) == (False, True)
    assert again["items"] == first["items"] and len(d.store.latest_items("p1")) == 1
    with pytest.raises(ValidationError) as refused:
        d.commit("p1", "k-1", [{**entries[0], "content": "something else"}])
    assert refused.value.field == "idempotencyKey" and "k-1" in refused.value.message
    assert d.store.artifact_counts("documents")[0] == 1


def test_canonical_versions_outline_and_exact_sections(d) -> None:
    one = d.upsert("p1", "app", "app_spec", "App Spec", SPEC, None, "u-1")
    two = d.upsert("p1", "app", "app_spec", "App Spec", SPEC + "\n## Support\n\nEmail only.\n", None, "u-2")
    same = d.upsert("p1", "app", "app_spec", "App Spec", SPEC + "\n## Support\n\nEmail only.\n", None, "u-3")
    assert (one["versionNum"], two["versionNum"], same["versionNum"], same["status"]) == (1, 2, 2, "unchanged")
    assert d.read.version("p1", "app", 1).content == SPEC and "Support" in d.read.version("p1", "app").content
    sections = d.read.outline(d.read.version("p1", "app", 1))
    assert [s.anchor for s in sections] == ["h1:app-spec", "h2:app-spec.auth", "h3:app-spec.auth.token-refresh",
                                            "h2:app-spec.billing"]
    assert "".join(SPEC[s.start:s.end] for s in sections) == SPEC
    _, section, text = d.read.section("p1", "app", "h3:app-spec.auth.token-refresh")
    assert text.startswith("### Token Refresh") and "revokes the family" in text and "Billing" not in text
    with pytest.raises(NotFoundError, match="h2:app-spec.auth"):
        d.read.section("p1", "app", "h9:nothing")
    with pytest.raises(NotFoundError):
        d.read.version("p2", "app")  # another project never sees it


def test_context_pack_is_whole_sections_in_order_within_budget_and_deterministic(d) -> None:
    d.upsert("p1", "app", "app_spec", "App Spec", SPEC, None, "u-1")
    synced(d)
    version, picked, used = d.pack("p1", "app", "refresh tokens rotate revokes", 200)
    assert picked and used <= 200 and all(text == version.content[s.start:s.end] for s, text in picked)
    assert any("Token Refresh" in text for _, text in picked)
    starts = [s.start for s, _ in picked]
    assert starts == sorted(starts) and d.pack("p1", "app", "refresh tokens rotate revokes", 200)[1] == picked


def test_restore_bundle_order_budgets_and_provenance(d) -> None:
    d.upsert("p1", "app", "app_spec", "App Spec", SPEC, None, "u-1")
    d.commit("p1", "c-1", [{"kind": "troubleshooting", "title": "Login loop", "content": "Clear the cookie " * 30}])
    d.commit("p1", "c-2", [{"kind": "note", "title": "Snapshot", "content": "Working on billing."}], "sess-1")
    d.commit("p2", "c-3", [{"kind": "note", "title": "Other project", "content": "billing elsewhere"}], "sess-9")
    synced(d)
    bundle = d.restore("p1", "billing invoices", max_chars=2_000)
    reasons = [e["reason"] for e in bundle["entries"]]
    assert reasons[:3] == ["pinned_canonical", "latest_snapshot", "recent_troubleshooting"]
    assert bundle["totalChars"] <= 2_000 and all(e["provenance"]["project"] == "p1" for e in bundle["entries"])
    assert d.restore("p1", "billing invoices", max_chars=2_000) == bundle
    tight = d.restore("p1", None, max_items=1, max_chars=220)  # the spec is 242 characters
    assert len(tight["entries"]) == 1 and tight["totalChars"] <= 220 and tight["entries"][0]["truncated"]
    tokens = d.restore("p1", None, max_tokens=40)
    assert tokens["totalTokens"] <= 40


def test_project_search_boosts_canonical_and_keeps_projects_apart(d) -> None:
    d.upsert("p1", "app", "app_spec", "App Spec", SPEC, None, "u-1")
    d.commit("p1", "c-1", [{"kind": "note", "title": "Billing note", "content": "Invoices are issued monthly in euros."}])
    d.commit("p2", "c-2", [{"kind": "note", "title": "Elsewhere", "content": "Invoices are issued monthly in euros."}])
    synced(d)
    found = d.search("p1", "invoices issued monthly euros")
    assert found and all(p.artifact.labels["project"] == "p1" for p, _ in found)
    assert found[0][0].artifact.labels.get("canonical_key") == "app"
    notes = d.search("p1", "invoices issued monthly euros", ["note"])
    assert [p.artifact.labels["kind"] for p, _ in notes] == ["note"]


def test_bad_input_names_the_field(d) -> None:
    for call, field in ((lambda: d.commit("p", "k", []), "entries"),
                        (lambda: d.commit("p", "k", [{"kind": "x", "title": "t", "content": "c"}]), "kind"),
                        (lambda: d.commit("p", "", [{"kind": "note", "title": "t", "content": "c"}]),
                         "idempotencyKey"),
                        (lambda: d.upsert("p", "Bad Key", "app_spec", "t", "c", None, "k"), "canonicalKey"),
                        (lambda: d.upsert("p", "app", "nope", "t", "c", None, "k"), "docClass"),
                        (lambda: d.restore("p", None, max_chars=0), "maxChars")):
        with pytest.raises(ValidationError) as refused:
            call()
        assert refused.value.field == field
    assert d.store.latest_items("p") == []


def test_projects_from_roots(tmp_path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:Acme/App.git\n')
    plain = tmp_path / "plain"
    plain.mkdir()
    projects = GitProjects()
    by_remote = projects.project_of([f"file://{repo}"])
    assert by_remote == projects.project_of([f"file://{repo}/"]) and by_remote.startswith("prj_")
    assert normalised_remote("https://github.com/acme/App.git") == normalised_remote("git@github.com:acme/App.git")
    assert projects.project_of([f"file://{plain}"]) not in (None, by_remote)
    assert projects.project_of(["https://example.com/x"]) is None


def test_a_remote_clients_roots_name_a_project_without_reading_the_servers_disk(tmp_path, monkeypatch) -> None:
    """Over HTTP a root is a path on the client's machine: its project is its path's, whether or not that
    path exists or holds a git repository here, so the answer tells nothing about the server's folders."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:Acme/App.git\n')
    projects = GitProjects()
    local = projects.project_of([f"file://{tmp_path / 'plain'}"])
    assert local is None  # on this machine a missing folder names no project
    looked: list[str] = []
    monkeypatch.setattr("adapters.files.projects.remote_of", lambda d: looked.append(str(d)))
    monkeypatch.setattr("pathlib.Path.is_dir", lambda self: looked.append(str(self)) or True)
    remote = {name: projects.project_of([f"file://{tmp_path / name}"], read_disk=False)
              for name in ("repo", "repo/", "missing", "plain")}
    assert looked == []  # nothing on the server's disk was asked
    assert remote["repo"] == remote["repo/"] and len(set(remote.values())) == 3
    assert all(p is not None and p.startswith("prj_") for p in remote.values())
    assert projects.project_of(["https://example.com/x"], read_disk=False) is None


def test_fit_cuts_at_a_paragraph() -> None:
    text = "a" * 150 + "\n\n" + "b" * 300
    assert fit(text, 1_000) == (text, False) and fit(text, 250) == ("a" * 150, True) and fit(text, 100) == ("", True)


GOLDEN = Path(__file__).resolve().parent.parent / "fixtures" / "golden"


def golden(name: str, value: object) -> None:
    """Compare with the golden file (MEMTROVE_UPDATE_GOLDEN=1 rewrites it: the change is then a visible diff)."""
    path = GOLDEN / f"{name}.json"
    text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if os.environ.get("MEMTROVE_UPDATE_GOLDEN") == "1" or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{path} differs (MEMTROVE_UPDATE_GOLDEN=1 to accept)"


def test_restore_bundle_and_context_pack_match_their_golden_files(d) -> None:
    d.upsert("p1", "app", "app_spec", "App Spec", SPEC, ["core"], "u-1")
    d.commit("p1", "c-1", [{"kind": "troubleshooting", "title": "Login loop", "content": "Clear the session cookie."},
                           {"kind": "decision", "title": "Passkeys", "content": "Sign-in uses passkeys only."}])
    d.commit("p1", "c-2", [{"kind": "note", "title": "Snapshot", "content": "Next: billing exports."}], "sess-1")
    synced(d)
    golden("restore_bundle", d.restore("p1", "passkeys sign in", max_chars=1_000))
    version, picked, used = d.pack("p1", "app", "token refresh rotation", 300)
    golden("context_pack", {"versionNum": version.version_num, "totalChars": used,
                            "sections": [{**s.as_outline(), "text": text} for s, text in picked]})


def test_a_version_whose_indexing_failed_is_indexed_by_the_next_write(d, monkeypatch) -> None:
    """The version is stored before its artifact: a retry after a failed embedding indexes it."""
    from domain.errors import EmbeddingError

    real = d.embedder.embed_documents
    monkeypatch.setattr(d.embedder, "embed_documents", lambda texts: (_ for _ in ()).throw(EmbeddingError("down")))
    with pytest.raises(EmbeddingError):
        d.upsert("p1", "app", "app_spec", "App Spec", SPEC, None, "u-1")
    assert d.read.version("p1", "app").version_num == 1 and d.store.artifact_counts("documents") == (0, 0)
    monkeypatch.setattr(d.embedder, "embed_documents", real)
    again = d.upsert("p1", "app", "app_spec", "App Spec", SPEC, None, "u-1")
    assert (again["versionNum"], again["status"]) == (1, "unchanged")
    assert d.store.artifact_counts("documents")[0] == 1


def test_a_version_left_without_its_artifact_is_projected_by_the_background_repair(d, monkeypatch) -> None:
    """The sweep the server runs: a stopped write's version becomes searchable with no further call."""
    from domain.errors import EmbeddingError
    from domain.validation import epoch

    real = d.embedder.embed_documents
    monkeypatch.setattr(d.embedder, "embed_documents", lambda texts: (_ for _ in ()).throw(EmbeddingError("down")))
    with pytest.raises(EmbeddingError):
        d.upsert("p1", "app", "app_spec", "App Spec", SPEC, None, "u-1")
    writer = d.upsert.writer
    created = d.read.version("p1", "app").created_at
    assert writer.project_pending(epoch(created) - 1) == (0, [])  # too recent: its own call may still write it
    done, failed = writer.project_pending(epoch(created))
    assert done == 0 and [(v.item_id, type(e)) for v, e in failed] == [(d.read.version("p1", "app").item_id,
                                                                         EmbeddingError)]
    monkeypatch.setattr(d.embedder, "embed_documents", real)
    assert writer.project_pending(epoch(created)) == (1, [])
    assert writer.project_pending(epoch(created)) == (0, [])  # done once
    synced(d)
    (passage, _), = d.search("p1", "token refresh", limit=1)
    assert passage.artifact.labels["canonical_key"] == "app"


def test_an_item_id_survives_a_project_name_with_a_slash(d) -> None:
    d.commit("team/web", "k-1", [{"kind": "note", "title": "Deploys", "content": "Deploys happen on Fridays."}])
    synced(d)
    (passage, _), = d.search("team/web", "deploys fridays", limit=1)
    bundle = d.restore("team/web", "deploys fridays", include_recent_troubleshooting=False)
    assert bundle["entries"] and bundle["entries"][-1]["itemId"].startswith("doc_")
    assert d.store.item_version("team/web", passage.artifact.source_id.rsplit("/", 1)[-1]) is not None


def test_a_submodule_or_worktree_is_its_own_repository(tmp_path) -> None:
    """A ``.git`` file points at the git directory: its remote names the project, not the parent's."""
    parent = tmp_path / "parent"
    (parent / ".git" / "modules" / "lib").mkdir(parents=True)
    (parent / ".git" / "config").write_text('[remote "origin"]\n\turl = https://example.com/acme/parent.git\n')
    (parent / ".git" / "modules" / "lib" / "config").write_text('[remote "origin"]\n\turl = https://example.com/acme/lib\n')
    (parent / "lib").mkdir()
    (parent / "lib" / ".git").write_text("gitdir: ../.git/modules/lib\n")
    projects = GitProjects()
    assert projects.project_of([f"file://{parent / 'lib'}"]) != projects.project_of([f"file://{parent}"])
    elsewhere = tmp_path / "clone"
    (elsewhere / ".git").mkdir(parents=True)
    (elsewhere / ".git" / "config").write_text('[remote "origin"]\n\turl = git@example.com:acme/lib.git\n')
    assert projects.project_of([f"file://{parent / 'lib'}"]) == projects.project_of([f"file://{elsewhere}"])


def test_a_call_whose_claim_was_taken_over_does_not_overwrite_the_new_holder(d) -> None:
    """Fencing: the key's claim time identifies the claim; a late finish or release of an old claim
    changes nothing once another call took the key over past its lease."""
    store = d.store
    assert store.claim_key("p", "k", "t", "h", 0.0) is None
    assert store.claim_key("p", "k", "t", "h", 10_000.0) is None  # the first claim's lease ran out
    store.release_key("p", "k", 0.0)  # the first call failing late gives nothing up
    assert store.finish_key("p", "k", {"by": "second"}, 10_000.0)
    assert not store.finish_key("p", "k", {"by": "first"}, 0.0)
    assert store.claim_key("p", "k", "t", "h", 10_001.0).result == {"by": "second"}


def test_a_call_that_outlives_the_lease_keeps_its_key_and_runs_once() -> None:
    """A slow first call renews its claim while it runs: a retry with the same key that arrives past the
    store's lease waits for that call's result instead of taking the key over and writing again."""
    store = InMemoryStore()
    store.claim_lease = 1.0
    runs: list[int] = []

    def slow() -> dict[str, object]:
        runs.append(1)
        time.sleep(2.5)  # longer than two leases
        return {"items": ["it_1"]}

    idem = Idempotent(store, renew_every=0.05)
    first: list[dict[str, object]] = []
    caller = threading.Thread(target=lambda: first.append(idem("p", "k", "memory_commit", {"a": 1}, slow)))
    caller.start()
    time.sleep(1.5)  # the claim is older than the lease by now, yet alive (renewed every 0.05 s)
    retry = idem("p", "k", "memory_commit", {"a": 1}, slow)
    caller.join()
    assert len(runs) == 1 and first[0] == {"items": ["it_1"], "replayed": False}
    assert retry == {"items": ["it_1"], "replayed": True}
