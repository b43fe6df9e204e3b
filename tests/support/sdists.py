"""Real source trees for the code index's tests and benchmark: sdists from PyPI (pip download), kept in
a cache across runs and unpacked into a directory of the test's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

CACHE = Path(os.environ.get("MEMTROVE_SDIST_CACHE", Path.home() / ".cache" / "memtrove-tests" / "sdists"))
CORPORA = {"requests": "2.32.3", "flask": "3.0.3"}


def archive(name: str, version: str) -> Path:
    """The sdist's tarball, downloaded once."""
    CACHE.mkdir(parents=True, exist_ok=True)
    found = sorted(CACHE.glob(f"{name}-{version}.tar.gz"))
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps", "--quiet",
                        f"{name}=={version}", "-d", str(CACHE)], check=True, timeout=300)
        found = sorted(CACHE.glob(f"{name}-{version}.tar.gz"))
    assert found, f"pip downloaded no sdist of {name}=={version} into {CACHE}"
    return found[0]


def unpacked(name: str, dest: Path) -> Path:
    """``name``'s sdist unpacked under ``dest`` (as ``<name>-<version>/``); its path."""
    version = CORPORA[name]
    target = dest / f"{name}-{version}"
    if target.exists():
        shutil.rmtree(target)
    with tarfile.open(archive(name, version)) as tar:
        tar.extractall(dest, filter="data")
    assert target.is_dir(), f"{target} not in the sdist"
    return target


def python_files(root: Path) -> list[str]:
    """The .py files below ``root`` (relative, "/"), as a walk that skips hidden folders finds them."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found += [(Path(folder) / f).relative_to(root).as_posix() for f in files if f.endswith(".py")]
    return sorted(found)
