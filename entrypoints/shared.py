"""One server per data dir: where its socket, lock and log live, and the lock that makes it the only one.

The process that serves a data dir (the shared stdio owner, or an HTTP server on the embedded
stores) holds an exclusive ``flock`` on ``<data dir>/memtrove.lock`` and writes who it is into
that file (one JSON line: pid, kind, socket or URL), so anyone refused can name it. The lock is
released by the kernel when the process ends, however it ends; the file itself is never removed
(removing a lock file races with the next process opening it). A command that needs the data dir
(``holding``) takes it over from a shared server with no client connected (entrypoints/handover.py).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import itertools
import json
import os
import socket
import stat
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from domain.errors import ConfigurationError

if TYPE_CHECKING:  # a bridge gets here without loading the settings (entrypoints/start.py)
    from config.settings import Settings

LOCK_NAME = "memtrove.lock"
SOCKET_NAME = "memtrove.sock"
LOG_NAME = "server.log"
OWNER_BUSY = 3  # exit code of a shared server that found the data dir taken (its bridge uses that one)
# sun_path holds 108 bytes on Linux and 104 on macOS (NUL included); keep a margin for both.
MAX_SOCKET_PATH = 100
LOCK_ATTEMPTS = 3  # a bridge probing the lock holds it for microseconds: retry briefly before refusing
LOCK_RETRY_SECONDS = 0.05
TAKE_OVER_TIMEOUT = 60.0  # seconds a command waits for a starting shared server to listen and hand over


class DataDirBusy(ConfigurationError):
    """Another memtrove server already owns the data dir; the message names it."""


def data_dir_of(settings: Settings) -> Path:
    return settings.memtrove_data_dir.expanduser().resolve()


def lock_path(data_dir: Path) -> Path:
    return data_dir / LOCK_NAME


def log_path(data_dir: Path) -> Path:
    return data_dir / LOG_NAME


def socket_path(data_dir: Path) -> Path:
    """``<data dir>/memtrove.sock``; for a data dir too deep for a socket path, a short per-user path.

    The fallback is ``$XDG_RUNTIME_DIR/memtrove/<hash>.sock`` (else, or when that is too long as well,
    ``/tmp/memtrove-<uid>/<hash>.sock``),
    the hash being of the data dir's resolved path, so every client of that data dir finds it.
    """
    inside = data_dir / SOCKET_NAME
    if len(os.fsencode(inside)) <= MAX_SOCKET_PATH:
        return inside
    digest = hashlib.sha256(os.fsencode(data_dir)).hexdigest()[:24]
    runtime_dir = os.environ.get("XDG_RUNTIME_DIR")
    if runtime_dir and os.path.isdir(runtime_dir):
        kept = Path(runtime_dir) / "memtrove" / f"{digest}.sock"
        if len(os.fsencode(kept)) <= MAX_SOCKET_PATH:
            return kept
    return Path(tempfile.gettempdir()) / f"memtrove-{os.getuid()}" / f"{digest}.sock"


def prepare_socket_dir(path: Path, data_dir: Path) -> None:
    """The fallback socket's folder: created 0700 and refused unless it is ours and private."""
    folder = path.parent
    if folder == data_dir:
        return
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    status = folder.lstat()
    if not stat.S_ISDIR(status.st_mode) or status.st_uid != os.getuid() or status.st_mode & 0o077:
        raise ConfigurationError(f"{folder} (the socket folder for a data dir whose path is too long for a "
                                 "socket) must be a directory of this user with mode 0700")


def embedder_label(settings: Settings) -> str:
    """The embedder a server is configured with, as a client's settings name it (``local/<model>``,
    ``openai/<model>/<dims>``)."""
    if settings.memtrove_embedder == "local":
        return f"local/{settings.memtrove_local_model}"
    return f"{settings.memtrove_embedder}/{settings.openai_embed_model}/{settings.openai_embed_dims}"


def uses_data_dir(settings: Settings) -> bool:
    """True when a server keeps stores inside the data dir (embedded Chroma or the default SQLite file)."""
    return settings.chroma_host is None or settings.memtrove_database_url is None


class DataDirLock:
    """The exclusive, non-blocking ``flock`` that makes a process the data dir's one server."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.fd: int | None = None
        self.identity = (0, 0)  # the lock file's device and inode

    def acquire(self, holder: dict[str, Any], take_over: bool = False) -> None:
        """Take the lock and record ``holder``; raises DataDirBusy naming the server that holds it.
        ``take_over``: a shared server with no client connected is asked to stop and hand the lock over
        (entrypoints/handover.py); one with clients is named with them, and how to stop it."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_path(self.data_dir), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        deadline = time.monotonic() + TAKE_OVER_TIMEOUT
        for attempt in itertools.count():
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    os.close(fd)
                    raise DataDirBusy(describe(self.data_dir, read_holder(self.data_dir))) from None
            if attempt + 1 < LOCK_ATTEMPTS:
                time.sleep(LOCK_RETRY_SECONDS)
                continue
            found = read_holder(self.data_dir)
            if not take_over or not can_hand_over(found) or time.monotonic() > deadline:
                os.close(fd)
                raise DataDirBusy(describe(self.data_dir, found)) from None
            handed = self._ask(found)
            if handed is not None:
                os.close(fd)
                fd = handed
                break
            time.sleep(LOCK_RETRY_SECONDS)  # not listening yet (starting), or stopping: look again
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps({"pid": os.getpid(), **holder}) + "\n").encode(), 0)
        self.fd = fd
        status = os.fstat(fd)
        self.identity = (status.st_dev, status.st_ino)

    def _ask(self, found: dict[str, Any]) -> int | None:
        """Ask the idle shared server ``found`` to hand the data dir over: its lock's descriptor, or None
        when it did not (not listening yet, or already gone); DataDirBusy when it has clients."""
        from entrypoints.handover import StopFailed, ask_to_stop

        try:
            outcome = ask_to_stop(str(found.get("socket") or socket_path(self.data_dir)), force=False,
                                  hand_over=True, log=str(log_path(self.data_dir)))
        except StopFailed as exc:
            raise DataDirBusy(f"{describe(self.data_dir, found)} ({exc})") from None
        if outcome is not None and outcome.refused:
            raise DataDirBusy(describe(self.data_dir, {**found, "clients": outcome.clients}))
        return outcome.lock_fd if outcome is not None else None

    def replaced(self) -> bool:
        """Whether the lock file this process holds is no longer the data dir's (deleted, or the data dir
        deleted or moved, and maybe made anew by another server)."""
        try:
            status = os.stat(lock_path(self.data_dir))
        except (FileNotFoundError, NotADirectoryError):
            return True
        except OSError:
            return False  # cannot tell (a permission changed, a network file system away): keep serving
        return (status.st_dev, status.st_ino) != self.identity

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the last descriptor drops the flock
            self.fd = None


@contextlib.contextmanager
def holding(data_dir: Path, holder: dict[str, Any]) -> Iterator[DataDirLock]:
    """The data dir's lock for a command that needs it (an HTTP server, doctor): an idle shared server
    hands it over."""
    lock = DataDirLock(data_dir)
    lock.acquire(holder, take_over=True)
    try:
        yield lock
    finally:
        lock.release()


def read_holder(data_dir: Path) -> dict[str, Any]:
    """What the lock file says about its holder (possibly a dead one's record: check ``lock_is_held``)."""
    for _ in range(3):  # the holder truncates, then writes: a read in between sees nothing
        try:
            text = lock_path(data_dir).read_text(encoding="utf-8").strip()
        except OSError:
            return {}
        if text:
            try:
                found = json.loads(text)
            except ValueError:
                return {}
            return found if isinstance(found, dict) else {}
        time.sleep(0.01)
    return {}


def lock_is_held(data_dir: Path) -> bool:
    """Whether a live process holds the data dir's lock (probed by taking it for an instant)."""
    try:
        fd = os.open(lock_path(data_dir), os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return True
        raise
    finally:
        os.close(fd)
    return False


def can_hand_over(holder: dict[str, Any]) -> bool:
    """Whether the holder is a shared server that understands a request to stop (entrypoints/handover.py;
    an older one's record lacks ``control``)."""
    return holder.get("kind") == "stdio" and isinstance(holder.get("control"), int) and holder["control"] >= 1


def describe(data_dir: Path, holder: dict[str, Any]) -> str:
    """One line naming the server that owns ``data_dir`` (and its connected clients, when counted)."""
    pid = holder.get("pid", "?")
    kind = holder.get("kind")
    if kind == "http":
        return (f"the data dir {data_dir} is already served over HTTP by memtrove pid {pid} "
                f"({holder.get('url', '?')}): connect to that URL, or stop it (Ctrl-C where it runs, or "
                "`memtrove stop --force`), or use another MEMTROVE_DATA_DIR")
    if kind != "stdio":
        return f"the data dir {data_dir} is in use by memtrove pid {pid} ({kind or 'unknown'}): wait for it to finish"
    served = f"the data dir {data_dir} is already served by memtrove pid {pid} (socket {holder.get('socket', '?')})"
    if clients := holder.get("clients"):
        return (f"{served} with {clients} client{'s' if clients != 1 else ''} connected: close "
                f"{'them' if clients != 1 else 'it'}, or stop it with `memtrove stop --force` (a client's next call "
                "starts it again), or use another MEMTROVE_DATA_DIR")
    return (f"{served}: stdio clients share it through 'memtrove serve'; stop it with `memtrove stop`, or use "
            "another MEMTROVE_DATA_DIR")


def connect(path: Path | str) -> socket.socket | None:
    """A connected Unix socket to ``path``, or None when nothing listens there."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(os.fspath(path))
    except OSError:
        sock.close()
        return None
    return sock


HELLO_KEY = "memtrove_bridge"


def bridge_hello(toolsets: tuple[str, ...]) -> bytes:
    """The line a bridge sends first on a connection: the toolsets its client was configured for."""
    return json.dumps({HELLO_KEY: {"toolsets": list(toolsets)}}).encode() + b"\n"


def read_hello(line: bytes) -> tuple[str, ...] | None:
    """The toolsets a bridge's first line asks for; None when the line is not a bridge's hello."""
    if HELLO_KEY.encode() not in line[:64]:
        return None
    try:
        asked = json.loads(line)[HELLO_KEY]["toolsets"]
    except (ValueError, KeyError, TypeError):
        return None
    return tuple(str(name) for name in asked) if isinstance(asked, list) else None


def memtrove_command() -> list[str]:
    """The installed ``memtrove`` console script of this interpreter's environment (else ``python -m``)."""
    script = Path(sys.executable).parent / "memtrove"
    return [str(script)] if script.exists() else [sys.executable, "-m", "entrypoints"]
