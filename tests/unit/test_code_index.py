"""index_codebase, search_code, get_indexing_status and clear_index on the domain's fakes, over a real
directory: incremental runs, symbols in any spelling, access, and bad paths refused naming the field."""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from pathlib import Path

import pytest

from adapters.memory.scopes import InMemoryStore
from adapters.files.source_tree import SourceDirs
from domain.access.principal import Principal, RequestContext
from domain.artifacts.ingest import IngestArtifact
from domain.artifacts.usecases import DeleteArtifact
from domain.code.index import IndexCodebase, IndexRequest
from domain.code.model import Outline, Symbol
from domain.code.roots import OUTSIDE
from domain.code.usecases import ClearIndex, Codebases, IndexStatus, SearchCode
from domain.errors import NotFoundError, ValidationError
from domain.model import ChunkSpec
from domain.search.symbol_signal import SymbolSignal, symbol_keys
from plugins.chunkers.code import CodeChunker
from plugins.chunkers.token_window import TokenWindowChunker
from tests.conftest import catalog, searcher

SOURCES = {
    "app/users.py": 'def get_user_by_id(user_id):\n    """Read one user from the table."""\n    return USERS[user_id]\n\n\n'
                    'class Repository:\n    def save_record(self, record):\n        self.rows.append(record)\n',
    "app/mail.py": 'def send_welcome_email(address):\n    """Greets a new member by mail."""\n    return smtp(address)\n',
    "app/util/paths.py": 'import os.path\n\n\ndef joined(a, b):\n    return os.path.join(a, b)\n',
    "README.md": "# not code\n",
    "node_modules/lib/index.js": "function vendored() {}\n",
    "app/schema_pb2.py": "def generated():\n    pass\n",
}


def python_outline(language: str, text: str) -> Outline | None:
    """A stand-in for the tree-sitter reader: Python definitions by ast."""
    symbols: list[Symbol] = []

    def visit(nodes: list[ast.stmt], owner: str) -> None:
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                name = f"{owner}.{node.name}" if owner else node.name
                kind = "class" if isinstance(node, ast.ClassDef) else ("method" if owner else "function")
                symbols.append(Symbol(kind, node.name, name, f"def {node.name}", node.lineno, node.end_lineno or 0))
                if isinstance(node, ast.ClassDef):
                    visit(node.body, name)
    visit(ast.parse(text).body, "")
    return Outline(language, tuple(symbols))


class Caller:
    def __init__(self) -> None:
        self.context = RequestContext()

    def __call__(self) -> RequestContext:
        return self.context


@pytest.fixture
def w(aworld, tmp_path: Path):
    root = tmp_path / "repo"
    for path, text in SOURCES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    store = InMemoryStore()
    aworld.store = aworld.artifacts = store
    caller = Caller()
    ingest = IngestArtifact(aworld.embedder, store, store, catalog(TokenWindowChunker(), CodeChunker()),
                            aworld.tokenizer, ChunkSpec(30, 5, 30), aworld.split, identity=caller)
    delete = DeleteArtifact(store, store, identity=caller)
    tree = SourceDirs()
    aworld.index = IndexCodebase(store, tree, python_outline, ingest, delete, store, identity=caller)
    codebases = Codebases(store, tree, identity=caller)
    retrieve = replace(searcher(aworld), symbols=SymbolSignal(store, store), identity=caller)
    aworld.search, aworld.status = SearchCode(retrieve, codebases, store), IndexStatus(codebases)
    aworld.clear = ClearIndex(codebases, store, delete, identity=caller)
    aworld.root, aworld.caller, aworld.tmp = root, caller, tmp_path
    return aworld


def index(w, path=None, **options):
    cb, started = w.index.start(IndexRequest(str(path or w.root), [str(w.tmp)], **options))
    assert started
    return w.index.run(cb)


def test_a_codebase_is_indexed_then_only_what_changed_is_read_again(w) -> None:
    first = index(w)
    assert first.status == "indexed"
    assert {k: first.counts[k] for k in ("files", "indexed", "unchanged", "removed", "symbols")} == {
        "files": 3, "indexed": 3, "unchanged": 0, "removed": 0, "symbols": 5}
    assert sorted(w.store.code_files(first.id)) == ["app/mail.py", "app/users.py", "app/util/paths.py"]
    assert index(w).counts["unchanged"] == 3
    gone = w.store.code_files(first.id)["app/util/paths.py"].artifact_id
    assert w.store.get_artifacts([gone])
    (w.root / "app/mail.py").write_text(SOURCES["app/mail.py"] + "\n\ndef send_farewell(address):\n    pass\n")
    (w.root / "app/util/paths.py").unlink()
    third = index(w)
    assert {k: third.counts[k] for k in ("files", "indexed", "unchanged", "removed")} == {
        "files": 2, "indexed": 1, "unchanged": 1, "removed": 1}
    assert "app/util/paths.py" not in w.store.code_files(first.id)
    assert w.store.get_artifacts([gone]) == {}
    assert w.store.find_symbols(["joined"], None, 10) == []
    assert [h.symbol.qualified_name for h in w.search("send_farewell", limit=1)] == ["send_farewell"]


@pytest.mark.parametrize("spelling", ["get_user_by_id", "getUserById", "GetUserByID", "get user by id"])
def test_a_definition_is_found_in_any_spelling(w, spelling: str) -> None:
    index(w)
    top = w.search(spelling, limit=3)[0]
    assert (top.path, top.symbol.qualified_name, top.start_line) == ("app/users.py", "get_user_by_id", 1)
    assert "symbol" in top.hit.fields["signals"]


def test_filters_narrow_to_a_folder_a_file_a_kind(w) -> None:
    index(w)
    assert {h.path for h in w.search("join", path=str(w.root / "app/util"))} == {"app/util/paths.py"}
    assert {h.path for h in w.search("user", path=str(w.root / "app/users.py"))} == {"app/users.py"}
    found = w.search("save record", symbol_kind="method")
    assert [h.symbol.qualified_name for h in found][:1] == ["Repository.save_record"]
    with pytest.raises(ValidationError, match="symbol_kind"):
        w.search("x", symbol_kind="lambda")
    with pytest.raises(ValidationError, match="language"):
        w.search("x", language="cobol")


def test_a_codebase_is_its_indexers_alone(w) -> None:
    index(w)
    w.caller.context = RequestContext(Principal("mallory"))
    with pytest.raises(NotFoundError):
        w.search("get_user_by_id")
    with pytest.raises(NotFoundError, match="path"):
        w.status(str(w.root))
    with pytest.raises(NotFoundError):
        w.clear(str(w.root))


def test_a_live_run_is_not_started_twice_and_clear_waits_for_it(w) -> None:
    cb, started = w.index.start(IndexRequest(str(w.root), [str(w.tmp)]))
    again, second = w.index.start(IndexRequest(str(w.root), [str(w.tmp)]))
    assert started and not second and again.run == cb.run
    with pytest.raises(ValidationError, match="being indexed"):
        w.clear(str(w.root))
    w.index.run(cb)
    cleared, files = w.clear(str(w.root))
    assert files == 3 and w.store.get_codebase(cb.id) is None
    with pytest.raises(NotFoundError):
        w.search("get_user_by_id")


def test_bad_paths_are_refused_naming_the_field(w) -> None:
    outside = w.tmp.parent / f"{w.tmp.name}-outside"
    outside.mkdir()
    (w.root / "escape").symlink_to(outside)
    cases = {"relative/path": "absolute", f"{w.root}/../repo": "'..'", str(w.root / "app/mail.py"): "not a directory",
             str(w.root / "missing"): "does not exist", str(outside): re.escape(OUTSIDE),
             str(w.root / "escape"): re.escape(OUTSIDE), "": "absolute"}
    for path, said in cases.items():
        with pytest.raises(ValidationError, match=said) as caught:
            w.index.start(IndexRequest(path, [str(w.tmp)]))
        assert caught.value.field == "path"
    with pytest.raises(ValidationError, match="no roots"):
        w.index.start(IndexRequest(str(w.root), []))
    with pytest.raises(ValidationError, match="languages"):
        w.index.start(IndexRequest(str(w.root), [str(w.tmp)], languages=["cobol"]))
    assert w.store.list_codebases() == []


def test_a_symlinked_file_out_of_the_codebase_is_skipped(w) -> None:
    secret = w.tmp / "secret.py"
    secret.write_text("def leaked():\n    pass\n")
    (w.root / "app/leak.py").symlink_to(secret)
    done = index(w)
    assert ("app/leak.py", "a symlink out of the codebase") in done.skipped
    assert "app/leak.py" not in w.store.code_files(done.id)
    assert all(h.path != "app/leak.py" for h in w.search("leaked"))


def test_the_query_keys_of_the_symbol_signal() -> None:
    assert symbol_keys("where is getUserById?") == {"getuserbyid": 1.0}  # "where is": stopwords at both ends
    keys = symbol_keys("os.path.join in the merge settings")
    assert keys["ospathjoin"] == 1.0 and keys["join"] == 0.7 and keys["mergesettings"] == 0.5
    assert "in" not in keys and "inthe" not in keys
    sentence = symbol_keys("where does the session merge proxy settings from the environment with os.path.join")
    assert sentence == {"ospathjoin": 1.0, "join": 0.7}  # a sentence: its identifiers only, no runs of words


def test_a_run_whose_process_died_shows_interrupted_and_the_next_goes_on_from_it(w) -> None:
    clock = [1_000.0]
    w.index = replace(w.index, now=lambda: clock[0])
    w.status = IndexStatus(w.status.codebases, now=lambda: clock[0])
    cb, _ = w.index.start(IndexRequest(str(w.root), [str(w.tmp)]))
    # The process "dies" after its first file: that file's artifact and row are committed, nothing else.
    path = "app/mail.py"
    w.index._file(cb, path, None, {}, lambda check=True: None)
    clock[0] += 121
    assert [c.status for c in w.status(str(w.root))] == ["interrupted"]
    again, started = w.index.start(IndexRequest(str(w.root), [str(w.tmp)]))
    assert started and again.run != cb.run
    done = w.index.run(again)
    assert (done.counts["unchanged"], done.counts["indexed"]) == (1, 2)
    assert w.status(str(w.root))[0].status == "indexed"


def test_a_run_taken_over_stops_without_writing_over_the_new_one(w) -> None:
    clock = [1_000.0]
    w.index = replace(w.index, now=lambda: clock[0])
    old, _ = w.index.start(IndexRequest(str(w.root), [str(w.tmp)]))
    clock[0] += 500  # silent past STALE_SECONDS: another run claims it
    new, started = w.index.start(IndexRequest(str(w.root), [str(w.tmp)]))
    assert started
    left = w.index.run(old)
    assert left.run == new.run and left.status == "indexing"  # the old run saw it lost the codebase, did nothing
    assert w.store.code_files(old.id) == {}
    assert w.index.run(new).counts["indexed"] == 3
