"""Which files ``memtrove ingest`` takes from a folder, and what it says of the ones it skips (FIFOs,
sockets and devices among them, never opened)."""

from __future__ import annotations

from pathlib import Path

from adapters.files.walk import read, walk


def tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, body in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body if isinstance(body, bytes) else body.encode())
    return root


def names(root: Path, **options: list[str]) -> list[str]:
    return [p.relative_to(root).as_posix() for p in walk([root], **options)]


def test_nested_gitignores_negation_and_hidden_files(tmp_path: Path) -> None:
    root = tree(tmp_path, {
        ".gitignore": "*.log\nbuild/\n", "a.md": "a", "keep.log": "k", "b/.gitignore": "!keep.log\n*.md\n",
        "b/keep.log": "k", "b/x.md": "x", "b/y.txt": "y", "build/out.md": "o", "src/build/deep.md": "d",
        ".hidden/h.md": "h", "c/.env": "secret", "c/d.rst": "d"})
    assert names(root) == ["a.md", "b/keep.log", "b/y.txt", "c/d.rst"]


def test_include_and_exclude_globs(tmp_path: Path) -> None:
    root = tree(tmp_path, {"a.md": "a", "b.rst": "b", "sub/c.md": "c", "sub/d.txt": "d"})
    assert names(root, include=["*.md"]) == ["a.md", "sub/c.md"]
    assert names(root, include=["*.md"], exclude=["sub/"]) == ["a.md"]
    assert names(root, exclude=["*.md", "*.txt"]) == ["b.rst"]
    assert [p.name for p in walk([root / "sub" / "d.txt"], include=["*.md"])] == ["d.txt"]  # named: taken


def test_what_is_skipped_and_why(tmp_path: Path) -> None:
    root = tree(tmp_path, {"bin.dat": b"\x00\x01\x02", "latin.txt": "caf\xe9".encode("latin-1"), "blank.md": " \n",
                           "ok.md": "fine text"})
    assert read(root / "ok.md").text == "fine text"
    assert read(root / "bin.dat").skipped == "binary"
    assert read(root / "latin.txt").skipped == "not UTF-8 text (byte 3)"
    assert read(root / "blank.md").skipped == "empty"
    assert "unreadable" in str(read(root / "missing.md").skipped)
    deep = root / ("d" * 250) / ("e" * 250) / "f.md"
    deep.parent.mkdir(parents=True)
    deep.write_text("x")
    assert "longer than 500 characters" in str(read(deep).skipped)


def test_fifos_sockets_and_devices_are_skipped_never_opened(tmp_path: Path) -> None:
    import os
    import socket
    import threading

    root = tree(tmp_path / "notes", {"ok.md": "fine text"})
    os.mkfifo(root / "pipe.md")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(root / "sock.md"))
    (root / "dev.md").symlink_to("/dev/zero")  # read would never end
    try:
        assert names(root) == ["dev.md", "ok.md", "pipe.md", "sock.md"]
        said: dict[str, str | None] = {}
        reader = threading.Thread(target=lambda: said.update({p.name: read(p).skipped for p in walk([root])}),
                                  daemon=True)
        reader.start()
        reader.join(60)  # a FIFO opened for reading would block for ever
        assert not reader.is_alive(), "reading blocked"
        assert said == {"dev.md": "a character device, not a regular file: not opened", "ok.md": None,
                        "pipe.md": "a FIFO (named pipe), not a regular file: not opened",
                        "sock.md": "a socket, not a regular file: not opened"}
        assert [p.name for p in walk([root / "pipe.md"])] == ["pipe.md"]  # named: taken, then skipped by read
    finally:
        listener.close()


def test_a_fifo_named_gitignore_is_not_read(tmp_path: Path) -> None:
    import os
    import threading

    root = tree(tmp_path / "notes", {"a.md": "a"})
    os.mkfifo(root / ".gitignore")
    found: list[str] = []
    walker = threading.Thread(target=lambda: found.extend(names(root)), daemon=True)
    walker.start()
    walker.join(60)
    assert not walker.is_alive(), "walking blocked on a FIFO .gitignore"
    assert found == ["a.md"]
