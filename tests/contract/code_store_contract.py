"""The behaviour every CodeStore shares: one live run per codebase (a stale one, or one whose process is
gone, taken over), a run's progress written only while it holds the codebase, files replaced with their
symbols whole, symbols found by folded name or qualified name, and a codebase dropped with everything
it holds.

Subclass CodeStoreContract as ``Test...`` and override the ``store`` fixture with a fresh, empty store;
override ``reopen`` to give another store object on the same database (durability tests skip without).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from domain.code.model import CodeFile, Import, Symbol
from domain.ports.code import Codebase, CodeStore


def codebase(cb_id: str = "cb_1", run: str = "r1", heartbeat: float = 100.0, **fields: Any) -> Codebase:
    return Codebase(id=cb_id, root=fields.pop("root", "/src/app"), owner="alice", acl=("u:alice",), run=run,
                    heartbeat=heartbeat, started_at="2026-11-27T10:00:00Z", **fields)


def code_file(path: str, digest: str = "h1", cb_id: str = "cb_1", *names: str) -> CodeFile:
    symbols = tuple(Symbol("function" if "." not in n else "method", n.split(".")[-1], n, f"def {n}()", i + 1, i + 2)
                    for i, n in enumerate(names))
    return CodeFile(cb_id, path, "python", digest, 10, f"art_{path}", symbols,
                    (Import("os.path", ("join",), 1),))


class CodeStoreContract:
    @pytest.fixture
    def store(self) -> CodeStore:
        raise NotImplementedError

    @pytest.fixture
    def reopen(self) -> Callable[[], CodeStore] | None:
        return None

    def test_one_live_run_per_codebase_and_a_stale_one_is_taken_over(self, store: CodeStore) -> None:
        assert store.begin_run(codebase(run="r1", heartbeat=100.0), stale_before=50.0) is not None
        assert store.begin_run(codebase(run="r2", heartbeat=101.0), stale_before=50.0) is None
        assert store.get_codebase("cb_1").run == "r1"
        # r1 stopped beating at 100: a claim that counts beats before 150 as dead takes it.
        assert store.begin_run(codebase(run="r3", heartbeat=160.0), stale_before=150.0) is not None
        assert store.get_codebase("cb_1").run == "r3"

    def test_a_run_whose_process_is_gone_is_taken_over_only_while_it_holds(self, store: CodeStore) -> None:
        assert store.begin_run(codebase(run="r1", heartbeat=100.0, holder="host 10 7"), stale_before=50.0)
        assert store.get_codebase("cb_1").holder == "host 10 7"
        # r1 is fresh, but its process is known gone: a claim replacing r1 takes it at once.
        assert store.begin_run(codebase(run="r2", heartbeat=101.0, holder="host 11 8"), 50.0, replacing="r1")
        got = store.get_codebase("cb_1")
        assert (got.run, got.holder) == ("r2", "host 11 8")
        # Another claim that judged r1 gone comes too late: r2 (live) is not what it replaces.
        assert store.begin_run(codebase(run="r3", heartbeat=102.0), 50.0, replacing="r1") is None
        assert store.get_codebase("cb_1").run == "r2"

    def test_a_finished_run_lets_the_next_one_in(self, store: CodeStore) -> None:
        first = codebase(run="r1")
        store.begin_run(first, 0.0)
        store.update_run(replace(first, status="indexed", counts={"files": 3}, finished_at="2026-11-27T10:01:00Z"))
        assert store.begin_run(codebase(run="r2", heartbeat=101.0), 0.0) is not None

    def test_only_the_holding_run_writes_progress(self, store: CodeStore) -> None:
        store.begin_run(codebase(run="r1"), 0.0)
        store.begin_run(codebase(run="r2", heartbeat=500.0), 400.0)
        store.update_run(codebase(run="r1", status="failed", error="late"))
        got = store.get_codebase("cb_1")
        assert (got.run, got.status, got.error) == ("r2", "indexing", None)
        store.update_run(codebase(run="r2", status="indexed", counts={"files": 2, "indexed": 2},
                                  skipped=(("a.bin", "binary"),), include=("src/**",), languages=("python",)))
        got = store.get_codebase("cb_1")
        assert (got.status, dict(got.counts), got.skipped) == ("indexed", {"files": 2, "indexed": 2}, (("a.bin", "binary"),))
        assert (got.include, got.languages, got.acl) == (("src/**",), ("python",), ("u:alice",))

    def test_files_are_replaced_whole_with_their_symbols(self, store: CodeStore) -> None:
        store.begin_run(codebase(), 0.0)
        store.put_code_file(code_file("a.py", "h1", "cb_1", "load", "Loader.run"), ["art_a.py::chunk::000::x", "r2"])
        store.put_code_file(code_file("a.py", "h2", "cb_1", "save"), ["r3"])
        files = store.code_files("cb_1")
        assert list(files) == ["a.py"] and files["a.py"].content_hash == "h2"
        whole = store.file_symbols("cb_1", "a.py")
        assert [s.qualified_name for s in whole.symbols] == ["save"]
        assert whole.imports == (Import("os.path", ("join",), 1),)
        assert store.find_symbols(["load"], None, 10) == []

    def test_symbols_mismatched_with_their_records_are_refused(self, store: CodeStore) -> None:
        with pytest.raises(Exception):
            store.put_code_file(code_file("a.py", "h1", "cb_1", "load"), [])
        assert store.code_files("cb_1") == {}

    def test_symbols_are_found_by_folded_name_exact_qualified_first(self, store: CodeStore) -> None:
        store.put_code_file(code_file("a.py", "h", "cb_1", "get_user_by_id", "Repo.getUserById"), ["r1", "r2"])
        store.put_code_file(code_file("b.py", "h", "cb_2", "GetUserByID"), ["r3"])
        assert [(h.record, h.exact) for h in store.find_symbols(["repogetuserbyid"], None, 10)] == [("r2", True)]
        found = store.find_symbols(["getuserbyid"], None, 10)  # Repo.getUserById by its name only: after
        assert [(h.record, h.exact) for h in found] == [("r1", True), ("r3", True), ("r2", False)]
        only = store.find_symbols(["getuserbyid"], ["cb_2"], 10)
        assert [(h.codebase, h.path, h.qualified_name, h.start_line) for h in only] == [("cb_2", "b.py", "GetUserByID", 1)]

    def test_dropping_files_and_codebases(self, store: CodeStore) -> None:
        store.begin_run(codebase(), 0.0)
        for name in ("a.py", "b.py", "c.py"):
            store.put_code_file(code_file(name, "h", "cb_1", f"f_{name[0]}"), ["r"])
        store.put_code_file(code_file("a.py", "h", "cb_2", "f_a"), ["r"])
        store.drop_code_files("cb_1", ["a.py", "b.py"])
        assert list(store.code_files("cb_1")) == ["c.py"]
        assert [h.codebase for h in store.find_symbols(["fa"], None, 10)] == ["cb_2"]
        store.drop_codebase("cb_1")
        assert store.get_codebase("cb_1") is None and store.code_files("cb_1") == {}
        assert store.file_symbols("cb_1", "c.py") is None
        assert list(store.code_files("cb_2")) == ["a.py"]

    def test_codebases_are_listed_and_durable(self, store: CodeStore, reopen: Callable[[], CodeStore] | None) -> None:
        store.begin_run(codebase("cb_b", root="/src/b"), 0.0)
        store.begin_run(codebase("cb_a", root="/src/a", project="web"), 0.0)
        store.put_code_file(code_file("x.py", "h", "cb_a", "Thing.go"), ["r"])
        assert [cb.root for cb in store.list_codebases()] == ["/src/a", "/src/b"]
        if reopen is None:
            pytest.skip("no second store object on the same database")
        again = reopen()
        assert [(cb.id, cb.project) for cb in again.list_codebases()] == [("cb_a", "web"), ("cb_b", None)]
        assert [s.qualified_name for s in again.file_symbols("cb_a", "x.py").symbols] == ["Thing.go"]
