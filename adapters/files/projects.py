"""Projects from a client's roots: the git remote of the root's repository, hashed, else its path hashed."""

from __future__ import annotations

import configparser
import hashlib
import os
import re
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote, urlsplit

from domain.ports.documents import ProjectResolver

_SCP = re.compile(r"\A(?:[\w.-]+@)?(?P<host>[\w.-]+):(?P<path>[^/].*)\Z")  # git@host:owner/repo.git


def normalised_remote(url: str) -> str:
    """One spelling per repository: https, ssh and scp-like forms of the same remote are equal."""
    url = url.strip()
    scp = _SCP.match(url)
    if scp and "://" not in url:
        host, path = scp.group("host"), scp.group("path")
    else:
        parts = urlsplit(url)
        host, path = (parts.hostname or ""), parts.path
    path = path.strip("/").removesuffix(".git")
    return f"{host.lower()}/{path}"


def git_config(dot_git: Path) -> Path | None:
    """The config file of the repository whose ``.git`` this is: a directory, or (a submodule, a linked
    worktree) a file naming its git directory, whose ``commondir`` names the shared one."""
    if dot_git.is_dir():
        config = dot_git / "config"
        return config if config.is_file() else None
    if not dot_git.is_file():
        return None
    try:
        pointer = re.match(r"gitdir:\s*(.+)", dot_git.read_text(encoding="utf-8").strip())
        if pointer is None:
            return None
        gitdir = (dot_git.parent / pointer.group(1).strip()).resolve()
        common = gitdir / "commondir"
        if common.is_file():
            gitdir = (gitdir / common.read_text(encoding="utf-8").strip()).resolve()
    except (OSError, UnicodeDecodeError):
        return None
    config = gitdir / "config"
    return config if config.is_file() else None


def remote_of(directory: Path) -> str | None:
    """The ``origin`` remote (else the first remote) of the git repository holding ``directory``."""
    for here in [directory, *directory.parents]:
        config = git_config(here / ".git")
        if config is not None:
            parser = configparser.ConfigParser(strict=False, interpolation=None)
            try:
                parser.read(config, encoding="utf-8")
            except (configparser.Error, OSError, UnicodeDecodeError):
                return None
            remotes = [s for s in parser.sections() if s.startswith('remote "')]
            ordered = sorted(remotes, key=lambda s: s != 'remote "origin"')
            for section in ordered:
                if parser.has_option(section, "url"):
                    return parser.get(section, "url")
            return None
    return None


class GitProjects(ProjectResolver):
    def project_of(self, root_uris: Sequence[str], read_disk: bool = True) -> str | None:
        for uri in root_uris:
            parts = urlsplit(uri)
            if parts.scheme != "file" or not parts.path.startswith("/"):
                continue
            if not read_disk:  # a remote client's path: named as sent (normalised), nothing looked up here
                return project_id(f"path:{os.path.normpath(unquote(parts.path))}")
            directory = Path(unquote(parts.path))
            if not directory.is_dir():
                continue
            remote = remote_of(directory)
            return project_id(f"git:{normalised_remote(remote)}" if remote else f"path:{os.path.realpath(directory)}")
        return None


def project_id(key: str) -> str:
    return f"prj_{hashlib.sha256(key.encode()).hexdigest()[:24]}"
