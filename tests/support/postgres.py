"""A real PostgreSQL server for the tests: a throwaway cluster on loopback, started and stopped here.

The binaries come from Debian's ``postgresql`` package (``scripts/test`` installs it). initdb
refuses to run as root, so as root the cluster belongs to the ``postgres`` system user.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def postgres_server() -> Iterator[str]:
    """Yields a SQLAlchemy URL (psycopg) of a fresh database on a running server."""
    initdb, pg_ctl = pg_bin("initdb"), pg_bin("pg_ctl")
    if not initdb or not pg_ctl:
        raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql): scripts/test installs it")
    root = Path(tempfile.mkdtemp(prefix="memtrove-pg-"))
    data, sockets = root / "data", root / "sock"
    sockets.mkdir()
    as_root = os.geteuid() == 0
    prefix = ["runuser", "-u", "postgres", "--"] if as_root else []
    if as_root:
        shutil.chown(root, "postgres")
        shutil.chown(sockets, "postgres")
    port = _free_port()
    subprocess.run([*prefix, initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                    "--locale=C.UTF-8"], check=True, capture_output=True)
    options = f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
    subprocess.run([*prefix, pg_ctl, "-D", str(data), "-o", options, "-l", str(root / "server.log"), "-w",
                    "start"], check=True, capture_output=True)
    try:
        url = f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
        _wait(url)
        yield url
    finally:
        subprocess.run([*prefix, pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"], capture_output=True)
        # A run's server holds hundreds of databases (one per test, ~8 MB of small files each): removing
        # them took minutes at the end of a full run on a loaded machine. Nothing waits for it.
        subprocess.Popen(["rm", "-rf", str(root)], start_new_session=True, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)


def _wait(url: str) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    deadline = time.monotonic() + 30
    try:
        while True:
            try:
                with engine.connect() as conn:
                    conn.execute(text("SELECT 1"))
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    finally:
        engine.dispose()


def fresh_database(url: str) -> str:
    """A new empty database on the server of ``url``: each test gets its own."""
    from sqlalchemy import create_engine, text

    name = f"t{time.monotonic_ns()}"
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return url.rsplit("/", 1)[0] + f"/{name}"
