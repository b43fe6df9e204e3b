"""What a bridge may answer before its server listens: ``initialize``, ``server/discover`` and ``tools/list``,
exactly as a server answered them before.

Those answers depend only on the code, the installed packages, the settings and the toolsets asked
for: not on the data dir, nor on what the store holds. So a bridge records the answers of a server
whose key (``answers_key``: a fingerprint of all of these, which the server writes into its lock
record) equals its own, and a later bridge with the same key answers those requests at once while
the server it started is still loading. A change to any of them changes the key: an answer recorded
under another key is never served. The bridge still asks the server each served request once it
listens and drops the record when an answer differs (entrypoints/bridge.py).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # a bridge computes the key from remembered settings, without loading these (entrypoints/start.py)
    from config.settings import Settings

CACHEABLE = frozenset({"initialize", "server/discover", "tools/list"})
PACKAGES = ("config", "domain", "adapters", "plugins", "entrypoints")
IGNORED_SETTINGS = ("memtrove_data_dir", "memtrove_toolsets")  # the data dir: no answer names it; toolsets: per entry
KEPT_FILES = 8  # keys recorded (one per code version and settings); older ones are removed


def answers_key(settings: Settings) -> str:
    """A fingerprint of what a server's answers to CACHEABLE requests are made of."""
    values = settings.model_dump(mode="json", exclude=set(IGNORED_SETTINGS))
    digest = hashlib.sha256(code_key().encode())
    digest.update(json.dumps(values, sort_keys=True, default=str).encode())
    return digest.hexdigest()[:32]


@functools.cache
def code_key() -> str:
    """A fingerprint of the code and the installed packages (Python's version, memtrove's modules, the
    distributions in site-packages), computed once a process."""
    digest = hashlib.sha256(sys.version.encode())
    for package in PACKAGES:
        spec = find_spec(package)
        for root in (spec.submodule_search_locations or []) if spec else []:
            for folder, dirs, files in os.walk(root):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__")
                for name in sorted(files):
                    if name.endswith(".py"):
                        status = os.stat(os.path.join(folder, name))
                        digest.update(f"{folder}/{name}:{status.st_size}:{status.st_mtime_ns}\n".encode())
    for entry in sys.path:  # installed distributions and their versions (the SDK, pydantic, plugins)
        if os.path.basename(entry) not in ("site-packages", "dist-packages"):
            continue  # the script's own folder or the working dir: which one differs between processes
        try:
            names = sorted(n for n in os.listdir(entry or ".") if n.endswith((".dist-info", ".egg-info", ".pth")))
        except OSError:
            continue
        digest.update(f"{entry}:{','.join(names)}\n".encode())
    return digest.hexdigest()[:32]


def entry_key(toolsets: tuple[str, ...], method: str, params: Any) -> str:
    """A request as the cache knows it: the toolsets, the method, the params (an ``initialize``'s
    clientInfo left out: the server's answer reads only the protocol version asked for)."""
    if method == "initialize" and isinstance(params, dict):
        params = {k: v for k, v in params.items() if k != "clientInfo"}
    return json.dumps([list(toolsets), method, params], sort_keys=True, separators=(",", ":"))


def cache_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("memtrove")) / "answers"


class Answers:
    """The answers recorded under one key, read once and written back whole when one is added."""

    def __init__(self, key: str, folder: Path | None = None) -> None:
        self.key = key
        self.path = (folder or cache_dir()) / f"{key}.json"
        try:
            loaded = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            loaded = {}
        self.entries: dict[str, Any] = loaded if isinstance(loaded, dict) else {}

    def get(self, entry: str) -> Any:
        return self.entries.get(entry)

    def put(self, entry: str, result: Any) -> None:
        if self.entries.get(entry) == result:
            return
        self.entries[entry] = result
        self._write()

    def drop(self) -> None:
        """Forget every answer of this key (one turned out different from the server's)."""
        self.entries.clear()
        try:
            self.path.unlink()
        except OSError:
            pass

    def _write(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}")
            temporary.write_text(json.dumps(self.entries), encoding="utf-8")
            os.replace(temporary, self.path)  # a reader sees the old file or the new one, never half
            others = sorted(self.path.parent.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
            for stale in others[KEPT_FILES:]:
                stale.unlink()
        except OSError:
            pass  # a cache: a start without it is only slower


def parse_request(line: bytes) -> tuple[str, Any] | None:
    """A cacheable request's method and params, else None."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("method") not in CACHEABLE:
        return None
    return message["method"], message.get("params")


def answer_line(key: Any, result: Any) -> bytes:
    """A JSON-RPC result line, written as the mcp SDK writes one."""
    return json.dumps({"jsonrpc": "2.0", "id": key, "result": result}, separators=(",", ":"),
                      ensure_ascii=False).encode() + b"\n"
