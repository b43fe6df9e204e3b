"""The files ``memtrove ingest`` reads: folders walked with their ``.gitignore`` rules (nested ones
too, as git reads them), ``--include``/``--exclude`` globs, and the files it must skip said so:
binaries, text that is not UTF-8, files over the artifact limit, unreadable ones."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pathspec

from domain.artifacts.input import MAX_CONTENT

SNIFF = 8192  # bytes looked at for a NUL (git's own test of a binary file)
MAX_SOURCE_ID = 500  # an artifact's source id: the file's absolute path


@dataclass(frozen=True, slots=True)
class Found:
    """A file to ingest (``text`` set) or one skipped (``skipped`` says why)."""

    path: Path
    text: str | None = None
    skipped: str | None = None


def matcher(globs: Sequence[str]) -> pathspec.PathSpec | None:
    return pathspec.GitIgnoreSpec.from_lines(globs) if globs else None


def walk(paths: Sequence[Path], include: Sequence[str] = (), exclude: Sequence[str] = (),
         skip_dirs: frozenset[str] = frozenset()) -> Iterator[Path]:
    """Every file under ``paths`` (a file named itself is taken as it is), in a stable order, without
    hidden files and folders (``.git``, ``.obsidian``, ``.gitignore``...), what ``.gitignore`` files
    and ``exclude`` leave out, and only what ``include`` names when given (globs matched against the
    path below the folder given, gitignore style); folders named in ``skip_dirs`` are not entered."""
    wanted, unwanted = matcher(include), matcher(exclude)
    for given in paths:
        if given.is_file():
            yield given
            continue
        root = given
        rules: list[tuple[Path, pathspec.PathSpec]] = []
        for folder, dirs, files in os.walk(root):
            here = Path(folder)
            rules = [(base, spec) for base, spec in rules if base == here or base in here.parents]
            ignore = here / ".gitignore"
            if ignore.is_file():
                rules.append((here, pathspec.GitIgnoreSpec.from_lines(ignore.read_text("utf-8", "replace").splitlines())))
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in skip_dirs
                             and not _ignored(here / d, rules, True))
            for name in sorted(f for f in files if not f.startswith(".")):
                path = here / name
                relative = path.relative_to(root).as_posix()
                if _ignored(path, rules, False) or (unwanted and unwanted.match_file(relative)):
                    continue
                if wanted is None or wanted.match_file(relative):
                    yield path


def _ignored(path: Path, rules: Sequence[tuple[Path, pathspec.PathSpec]], folder: bool) -> bool:
    ignored = False
    for base, spec in rules:  # deeper files' rules come later and win, as in git
        relative = path.relative_to(base).as_posix() + ("/" if folder else "")
        result = spec.check_file(relative)
        if result.include is not None:
            ignored = result.include
    return ignored


def read(path: Path) -> Found:
    """The file's text, or why it is skipped."""
    resolved = path.resolve()
    if len(resolved.as_posix()) > MAX_SOURCE_ID:
        return Found(resolved, skipped=f"its path is longer than {MAX_SOURCE_ID} characters (the source id's limit)")
    try:
        size = resolved.stat().st_size
        if size > MAX_CONTENT:
            return Found(resolved, skipped=f"{size:,} bytes, over the {MAX_CONTENT:,}-byte limit of an artifact")
        data = resolved.read_bytes()
    except OSError as exc:
        return Found(resolved, skipped=f"unreadable: {exc.strerror or exc}")
    if b"\0" in data[:SNIFF]:
        return Found(resolved, skipped="binary")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Found(resolved, skipped=f"not UTF-8 text (byte {exc.start})")
    if not text.strip():
        return Found(resolved, skipped="empty")
    return Found(resolved, text=text)
