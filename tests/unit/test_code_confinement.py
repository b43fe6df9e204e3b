"""Issue 41, the code toolset's part: which roots a call may index (the server's, narrowed by a local
client's; none over HTTP without them), one message for every path outside them whatever it is, FIFOs
and other non-regular files skipped unopened, and a run whose process is gone taken over at once."""

from __future__ import annotations

import os
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from adapters.files.source_tree import SourceDirs
from domain.code.index import IndexRequest
from domain.code.roots import NO_HTTP_ROOTS, NO_ROOTS, OUTSIDE, Roots, allowed
from domain.errors import ValidationError
from tests.unit.test_code_index import index, w  # noqa: F401 - the fixture, shared

TREE = SourceDirs()


def test_a_clients_roots_only_narrow_the_servers() -> None:
    server = ["/srv/code", "/srv/more"]
    assert allowed(server, None, remote=False) == server
    assert allowed(server, ["/"], remote=False) == server  # a client root holding them keeps them, no more
    assert allowed(server, ["/srv/code/app", "/etc", "/home"], remote=False) == ["/srv/code/app"]
    assert allowed(server, ["/etc"], remote=False) == []  # outside every server root: adds nothing
    assert allowed([], ["/home/me/proj"], remote=False) == ["/home/me/proj"]  # stdio, no server roots: trusted
    with pytest.raises(ValidationError, match="no roots") as caught:
        allowed([], None, remote=False)
    assert caught.value.message == NO_ROOTS and caught.value.field == "path"


def test_over_http_a_clients_roots_count_for_nothing() -> None:
    assert allowed(["/srv/code"], ["/", "/srv/code/app"], remote=True) == ["/srv/code"]
    for client in (None, ["/"], ["/home/me"]):
        with pytest.raises(ValidationError, match="MEMTROVE_CODE_ROOTS") as caught:
            allowed([], client, remote=True)
        assert caught.value.message == NO_HTTP_ROOTS


def outside_message(path: str, roots: Roots) -> str:
    with pytest.raises(ValidationError) as caught:
        TREE.resolve(path, roots)
    assert caught.value.field == "path"
    return caught.value.message


def test_every_path_outside_the_roots_gets_the_same_message(tmp_path: Path) -> None:
    root = tmp_path / "roots"
    (root / "app").mkdir(parents=True)
    (root / "app" / "main.py").write_text("x = 1\n")
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "settings.py").write_text("DB_PASSWORD = 'hunter2'\n")
    (root / "escape").symlink_to(secret)
    (root / "shadow").symlink_to("/etc/shadow")
    probes = ["/etc/shadow", "/etc/passwd", "/nonexistent/x", "/proc/self/cwd", "/proc/self/root", "/",
              str(secret), str(secret / "settings.py"), str(root / "escape"), str(root / "shadow"),
              str(root / "escape" / "missing")]
    for roots in (Roots((str(root),)), Roots((str(root),), (f"file://{root}/app",)), Roots((str(root),), ("file:///",)),
                  Roots((str(root),), ("file:///",), remote=True), Roots((), (f"file://{root}",))):
        assert {outside_message(p, roots) for p in probes} == {OUTSIDE}, roots
    # Inside the roots the path is told about.
    inside = Roots((str(root),))
    assert "does not exist" in outside_message(str(root / "app" / "missing"), inside)
    assert "is a file" in outside_message(str(root / "app" / "main.py"), inside)
    assert TREE.resolve(str(root / "app"), inside) == os.path.realpath(root / "app")


def test_a_local_clients_roots_narrow_and_other_schemes_count_for_nothing(tmp_path: Path) -> None:
    root = tmp_path / "roots"
    for name in ("a", "b"):
        (root / name).mkdir(parents=True)
    narrowed = Roots((str(root),), (f"file://{root}/a", "https://example.com/", "relative/path"))
    assert TREE.resolve(str(root / "a"), narrowed) == os.path.realpath(root / "a")
    assert outside_message(str(root / "b"), narrowed) == OUTSIDE
    only_web = Roots((), ("https://example.com/x",))
    assert "no roots" in outside_message(str(root / "a"), only_web)


def test_a_fifo_in_a_codebase_is_skipped_unopened_and_the_run_ends(w) -> None:  # noqa: F811
    os.mkfifo(w.root / "app" / "pipe.py")
    done: list = []
    worker = threading.Thread(target=lambda: done.append(index(w)), daemon=True)
    worker.start()
    worker.join(60)  # a read of the FIFO would block for ever: the thread would still be alive
    assert not worker.is_alive(), "indexing blocked on a FIFO"
    result = done[0]
    assert result.status == "indexed" and result.counts["indexed"] == 3 and result.counts["skipped"] == 1
    assert result.skipped == (("app/pipe.py", "a FIFO (named pipe), not a regular file: not opened"),)
    assert "app/pipe.py" not in w.store.code_files(result.id)


class Holders:
    """Processes whose holders are named in ``dead``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.dead: set[str] = set()

    def me(self) -> str:
        return self.name

    def gone(self, holder: str) -> bool:
        return holder in self.dead


def test_a_run_whose_process_is_gone_is_taken_over_at_once(w) -> None:  # noqa: F811
    clock = [1_000.0]
    first = Holders("host 100 5")
    w.index = replace(w.index, now=lambda: clock[0], processes=first)
    old, started = w.index.start(IndexRequest(str(w.root), [str(w.tmp)]))
    assert started and old.holder == "host 100 5"
    clock[0] += 1  # seconds later, its heartbeat fresh: the process is alive, so the run is live
    second = Holders("host 200 9")
    w.index = replace(w.index, processes=second)
    codebases = replace(w.status.codebases, now=lambda: clock[0], processes=second)
    w.status = replace(w.status, codebases=codebases, now=lambda: clock[0])
    w.clear = replace(w.clear, codebases=codebases, now=lambda: clock[0])
    again, started = w.index.start(IndexRequest(str(w.root), [str(w.tmp)]))
    assert not started and again.run == old.run
    assert [c.status for c in w.status(str(w.root))] == ["indexing"]

    second.dead.add("host 100 5")  # killed: gone, though its heartbeat is a second old
    assert [c.status for c in w.status(str(w.root))] == ["interrupted"]
    new, started = w.index.start(IndexRequest(str(w.root), [str(w.tmp)]))
    assert started and new.run != old.run and w.store.get_codebase(new.id).holder == "host 200 9"
    assert w.index.run(new).counts["indexed"] == 3
    second.dead.add("host 200 9")  # a finished run's holder dying changes nothing
    assert w.status(str(w.root))[0].status == "indexed"


def test_a_dead_holders_run_does_not_keep_clear_waiting(w) -> None:  # noqa: F811
    holders = Holders("host 1 1")
    w.index = replace(w.index, processes=holders)
    w.index.start(IndexRequest(str(w.root), [str(w.tmp)]))
    with pytest.raises(ValidationError, match="being indexed"):
        w.clear(str(w.root))
    holders.dead.add("host 1 1")
    w.clear = replace(w.clear, codebases=replace(w.clear.codebases, processes=holders))
    assert w.clear(str(w.root))[1] == 0
