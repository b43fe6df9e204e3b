"""The files ``memtrove ingest`` reads: folders walked with their ``.gitignore`` rules (nested ones
too, as git reads them), ``--include``/``--exclude`` globs, and the files it must skip said so:
binaries, text that is not UTF-8, files over the artifact limit, unreadable ones."""

from __future__ import annotations

import os
import stat
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
    size: int = 0  # bytes, when known


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
        if not given.is_dir():  # a file named is taken as it is (read() says so if it is no regular file)
            yield given
            continue
        root = given
        rules: list[tuple[Path, pathspec.PathSpec]] = []
        for folder, dirs, files in os.walk(root):
            here = Path(folder)
            rules = [(base, spec) for base, spec in rules if base == here or base in here.parents]
            ignore = gitignore(here / ".gitignore")
            if ignore is not None:
                rules.append((here, ignore))
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in skip_dirs
                             and not _ignored(here / d, rules, True))
            for name in sorted(f for f in files if not f.startswith(".")):
                path = here / name
                relative = path.relative_to(root).as_posix()
                if _ignored(path, rules, False) or (unwanted and unwanted.match_file(relative)):
                    continue
                if wanted is None or wanted.match_file(relative):
                    yield path


def gitignore(path: Path) -> pathspec.PathSpec | None:
    """A folder's ``.gitignore`` rules; None without one (or when it is no regular file: not opened)."""
    try:
        data = read_regular(path, MAX_CONTENT)
    except (OSError, NotRegular):
        return None
    return pathspec.GitIgnoreSpec.from_lines(data[:MAX_CONTENT].decode("utf-8", "replace").splitlines())


def _ignored(path: Path, rules: Sequence[tuple[Path, pathspec.PathSpec]], folder: bool) -> bool:
    ignored = False
    for base, spec in rules:  # deeper files' rules come later and win, as in git
        relative = path.relative_to(base).as_posix() + ("/" if folder else "")
        result = spec.check_file(relative)
        if result.include is not None:
            ignored = result.include
    return ignored


def kind_of(mode: int) -> str:
    """What a file that is not a regular one is, in words."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


class NotRegular(Exception):
    """The path is not a regular file (``kind`` says what it is): it was not read."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


def read_regular(path: Path, limit: int) -> bytes:
    """Up to ``limit`` + 1 bytes of a regular file. Anything else (a FIFO, a socket, a device) raises
    NotRegular without being opened; opening is non-blocking, and the opened file is checked again,
    so one swapped in meanwhile cannot block the reader either. OSError when unreadable."""
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise NotRegular(kind_of(mode))
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegular(kind_of(mode))
        return handle.read(limit + 1)


def read(path: Path) -> Found:
    """The file's text, or why it is skipped. Only regular files are read."""
    resolved = path.resolve()
    if len(resolved.as_posix()) > MAX_SOURCE_ID:
        return Found(resolved, skipped=f"its path is longer than {MAX_SOURCE_ID} characters (the source id's limit)")
    try:
        size = resolved.stat().st_size
        if size > MAX_CONTENT:
            return Found(resolved, skipped=f"{size:,} bytes, over the {MAX_CONTENT:,}-byte limit of an artifact",
                         size=size)
        data = read_regular(resolved, MAX_CONTENT)
    except NotRegular as exc:
        return Found(resolved, skipped=f"{exc.kind}, not a regular file: not opened")
    except OSError as exc:
        return Found(resolved, skipped=f"unreadable: {exc.strerror or exc}")
    if len(data) > MAX_CONTENT:  # grew since it was looked at
        return Found(resolved, skipped=f"over the {MAX_CONTENT:,}-byte limit of an artifact", size=len(data))
    if b"\0" in data[:SNIFF]:
        return Found(resolved, skipped="binary", size=len(data))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Found(resolved, skipped=f"not UTF-8 text (byte {exc.start})", size=len(data))
    if not text.strip():
        return Found(resolved, skipped="empty", size=len(data))
    return Found(resolved, text=text, size=len(data))
