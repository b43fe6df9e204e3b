"""Which files ``memtrove ingest`` takes from a folder, and what it says of the ones it skips."""

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
