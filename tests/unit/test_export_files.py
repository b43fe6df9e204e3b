"""DirectoryExporter writes under its export directory and nowhere else; check_output_path refuses
paths that could lead out of it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from adapters.files.export import DirectoryExporter
from domain.errors import ValidationError
from domain.sessions.upkeep import check_output_path


def snapshot(top: Path) -> dict[str, tuple[str, object]]:
    """Everything under ``top`` (links not followed): kind and content or link target."""
    seen: dict[str, tuple[str, object]] = {}
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(top))
            if path.is_symlink():
                seen[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                seen[rel] = ("dir", None)
            else:
                seen[rel] = ("file", path.read_bytes())
    return seen


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path, DirectoryExporter]:
    """An export directory (with a real subdirectory) beside an outside directory holding a secret."""
    root, outside = tmp_path / "export", tmp_path / "outside"
    (root / "real").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text("do not touch")
    return root, outside, DirectoryExporter(root)


def test_writes_a_relative_path_creating_its_directories(world) -> None:
    root, _, exporter = world
    text = "# Report\n\nCafé 東京 😀\n"
    written, size = exporter.write("notes/2025/march/report.md", text)
    target = root.resolve() / "notes" / "2025" / "march" / "report.md"
    assert written == str(target) and os.path.isabs(written)
    assert size == len(text.encode("utf-8")) == target.stat().st_size
    assert target.read_text(encoding="utf-8") == text
    assert not [p for p in root.rglob("*") if p.name.startswith(".export-")], "a temporary file was left behind"


def test_writes_into_an_existing_directory_and_at_the_top(world) -> None:
    root, _, exporter = world
    assert exporter.write("real/a.md", "a") == (str(root.resolve() / "real" / "a.md"), 1)
    assert exporter.write("top.md", "") == (str(root.resolve() / "top.md"), 0)
    assert exporter.write("./real/./b.md", "bb") == (str(root.resolve() / "real" / "b.md"), 2)
    assert (root / "top.md").read_text() == "" and (root / "real" / "b.md").read_text() == "bb"


def test_the_export_directory_is_created_when_missing(tmp_path: Path) -> None:
    exporter = DirectoryExporter(tmp_path / "not" / "yet")
    written, _ = exporter.write("x.md", "x")
    assert Path(written).read_text() == "x"


def test_an_existing_file_is_replaced_atomically(world) -> None:
    root, _, exporter = world
    target = root / "real" / "doc.md"
    exporter.write("real/doc.md", "old version")
    os.link(target, root / "hardlink.md")  # the old file's inode, seen through a second name
    with open(target, encoding="utf-8") as reader:
        written, size = exporter.write("real/doc.md", "new version, longer")
        assert reader.read() == "old version"  # a reader of the old file is never shown a half-written one
    assert target.read_text() == "new version, longer" and size == len("new version, longer")
    assert (root / "hardlink.md").read_text() == "old version", "the file was rewritten in place, not replaced"
    assert not [p for p in root.rglob("*") if p.name.startswith(".export-")]


def _links(root: Path, outside: Path) -> None:
    (root / "out_dir").symlink_to(outside, target_is_directory=True)
    (root / "real" / "deep_out").symlink_to(outside, target_is_directory=True)
    (root / "alias").symlink_to(root / "real", target_is_directory=True)  # a link, even one pointing inside
    (root / "out_file.md").symlink_to(outside / "secret.txt")
    (root / "dangling.md").symlink_to(outside / "created.txt")  # its target does not exist (yet)
    (root / "plain_file").write_text("a file, not a directory")


REFUSED = [
    pytest.param(lambda o: str(o / "abs.md"), id="absolute-into-outside"),
    pytest.param(lambda o: str(o / "secret.txt"), id="absolute-existing-file"),
    pytest.param(lambda o: "/etc/memtrove-test.md", id="absolute"),
    pytest.param(lambda o: "../outside/x.md", id="dotdot"),
    pytest.param(lambda o: "../outside/secret.txt", id="dotdot-existing"),
    pytest.param(lambda o: "real/../../outside/x.md", id="dotdot-nested"),
    pytest.param(lambda o: "real/../x.md", id="dotdot-staying-inside"),
    pytest.param(lambda o: "..\\outside\\x.md", id="dotdot-backslashes"),
    pytest.param(lambda o: "..\\made_outside\\x.md", id="dotdot-backslashes-new-dir"),
    pytest.param(lambda o: "fresh\\..\\..\\outside\\x.md", id="dotdot-backslashes-after-new-dir"),
    pytest.param(lambda o: "out_dir/x.md", id="symlinked-dir"),
    pytest.param(lambda o: "out_dir/secret.txt", id="symlinked-dir-existing-file"),
    pytest.param(lambda o: "real/deep_out/x.md", id="symlinked-dir-deeper"),
    pytest.param(lambda o: "alias/x.md", id="symlinked-dir-pointing-inside"),
    pytest.param(lambda o: "out_file.md", id="final-symlink"),
    pytest.param(lambda o: "dangling.md", id="final-dangling-symlink"),
    pytest.param(lambda o: "plain_file/x.md", id="file-as-directory"),
    pytest.param(lambda o: "real", id="a-directory"),
    pytest.param(lambda o: "bad\x00name.md", id="nul"),
    pytest.param(lambda o: "sub\x00dir/x.md", id="nul-in-directory"),
    pytest.param(lambda o: "", id="empty"),
    pytest.param(lambda o: ".", id="dot"),
]


@pytest.mark.parametrize("path_of", REFUSED)
def test_paths_leading_elsewhere_are_refused_and_nothing_is_written(world, path_of) -> None:
    root, outside, exporter = world
    _links(root, outside)
    top = root.parent
    before = snapshot(top)
    with pytest.raises(ValidationError) as refused:
        exporter.write(path_of(outside), "payload")
    assert refused.value.field == "output_path"
    assert snapshot(top) == before  # neither the export directory nor anything beside it changed
    assert (outside / "secret.txt").read_text() == "do not touch"
    assert not Path("/etc/memtrove-test.md").exists()


# --- check_output_path (the use case's check, before the exporter) ------------------------------


@pytest.mark.parametrize("value", [
    "/etc/passwd", "/abs/report.md", "\\server\\share.md", "~/report.md", "C:\\x", "C:/x", "c:report.md",
    "../x.md", "a/../../x.md", "a/../b.md", "..", "a\\..\\x.md", "..\\x.md",
    "", "   ", "dir/", "dir\\", "a/b/", ".", "a/.", None, 42, "bad\x00name.md", "x" * 1001,
])
def test_check_output_path_refuses(value: object) -> None:
    with pytest.raises(ValidationError) as refused:
        check_output_path(value)
    assert refused.value.field == "output_path"


@pytest.mark.parametrize("value", ["report.md", "notes/2025/report.md", "a\\b.md", "./x.md", "x..y.md", "...md",
                                   "sessions/s1/v2 report (final).md", "東京/メモ.md"])
def test_check_output_path_accepts_relative_file_paths(value: str) -> None:
    assert check_output_path(value) == value
