"""What a user installs and reads: the packages, the compose file, every setting documented."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from setuptools import find_namespace_packages

from config.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
ROOTS = ("domain", "adapters", "plugins", "config", "entrypoints", "bench")


def packaging() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]


def packaged() -> set[str]:
    """The packages a build finds, by the rule pyproject.toml gives setuptools."""
    find = packaging()["packages"]["find"]
    assert find.get("namespaces", True), "data folders are packages only when namespaces are found"
    return set(find_namespace_packages(where=str(ROOT), include=find["include"], exclude=find["exclude"]))


def code_folders() -> dict[str, Path]:
    """Every folder of the five import roots (the example plugin is a distribution of its own)."""
    folders = {}
    for root in ROOTS:
        for path in [ROOT / root, *(ROOT / root).rglob("*")]:
            parts = path.relative_to(ROOT).parts
            if (path.is_dir() and "__pycache__" not in parts and parts[:2] != ("plugins", "examples")
                    and all(part.isidentifier() for part in parts)):
                folders[".".join(parts)] = path
    return folders


def test_every_folder_of_the_code_is_a_package_and_nothing_else_is() -> None:
    """New subpackages are picked up without an entry, and a data folder is a package: setuptools
    warns "Package ... is absent from the `packages` configuration" for any folder left out."""
    assert packaged() == set(code_folders())


def test_every_packaged_name_resolves_to_this_repository() -> None:
    folders = code_folders()
    for name in sorted(packaged()):
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.submodule_search_locations is not None, name
        assert folders[name] in {Path(p).resolve() for p in spec.submodule_search_locations}, name


def test_every_data_file_ships() -> None:
    """Files other than Python modules go into the wheel only when package-data names them."""
    data = packaging()["package-data"]
    assert set(data) <= packaged()
    matches = {(package, pattern): set(ROOT.joinpath(*package.split(".")).glob(pattern))
               for package, patterns in data.items() for pattern in patterns}
    assert all(matches.values()), [key for key, files in matches.items() if not files]
    shipped = set().union(*matches.values())
    others = {path for folder in code_folders().values() for path in folder.iterdir()
              if path.is_file() and path.suffix not in {".py", ".pyc"}}
    assert others <= shipped, sorted(str(p.relative_to(ROOT)) for p in others - shipped)


def test_docker_compose_file_validates() -> None:
    if shutil.which("docker-compose") is None:
        pytest.skip("docker-compose is not installed (./scripts/test installs it with apt-get as root)")
    env = {**os.environ, "MEMTROVE_HTTP_TOKEN": "compose-check"}
    result = subprocess.run(["docker-compose", "config"], cwd=ROOT, capture_output=True, text=True, env=env,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert "memtrove" in result.stdout and "chroma" in result.stdout and "CHROMA_HOST: chroma" in result.stdout


def test_compose_refuses_to_start_without_a_token() -> None:
    if shutil.which("docker-compose") is None:
        pytest.skip("docker-compose is not installed")
    env = {k: v for k, v in os.environ.items() if k != "MEMTROVE_HTTP_TOKEN"}
    result = subprocess.run(["docker-compose", "config"], cwd=ROOT, capture_output=True, text=True, env=env,
                            timeout=60)
    assert result.returncode != 0 and "MEMTROVE_HTTP_TOKEN" in result.stderr


def test_the_image_runs_one_server_and_its_context_leaves_local_state_out() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert "MEMTROVE_SHARED=false" in dockerfile  # one server per container: no owner process to bridge to
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
               if line.strip() and not line.startswith("#")}
    assert {".git", ".venv", ".hypothesis", ".conformance", "node_modules", "**/__pycache__"} <= ignored
    assert not ignored & {"README.md", "pyproject.toml", *ROOTS}  # what the image's pip install reads


def test_every_setting_is_documented_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = [name.upper() for name in Settings.model_fields if f"`{name.upper()}`" not in readme]
    assert missing == []


def test_console_script_runs() -> None:
    script = Path(sys.executable).with_name("memtrove")
    result = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "serve" in result.stdout
