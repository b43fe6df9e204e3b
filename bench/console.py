"""What people wait for: the ``memtrove`` command and the page, measured from outside as a user runs them.

``memtrove-bench console folder``: ``memtrove ingest`` of a folder (by default 300 files of Python's
library documentation, python3-doc) on the embedded default model: wall time, chunks, chunks/s, the
peak RSS of the server that did the work and of the command; then the same command again (every file
unchanged). ``memtrove-bench console store --store DIR``: a store built by ``memtrove-bench scale``
(its stand-in embedder) is exported (wall, peak RSS, file size), imported into an empty store (wall,
peak RSS; embedded again by the stand-in) and served over HTTP, where the page's search and browse
pages are timed (p50/p95 over repeated GETs) against the same search as an MCP ``hybrid_search`` call
over the same HTTP server (the reference, measured in the same run).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import latency
from bench.standin import StandinEmbeddings

QUERIES = ("how to open a file", "regular expression groups", "thread pool executor", "decimal rounding",
           "parse command line arguments", "json encoder", "socket timeout", "unit test mock")


def _command() -> list[str]:
    from entrypoints.shared import memtrove_command

    return memtrove_command()


def _env(data: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMTROVE_", "CHROMA_", "OPENAI_"))}
    env.update({"MEMTROVE_DATA_DIR": str(data), "MEMTROVE_SHARED": "true", "MEMTROVE_IDLE_TIMEOUT": "600",
                "LOG_LEVEL": "WARNING"})
    env.update(extra or {})
    return env


def timed(args: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Run ``memtrove ARGS --json``: its answer, wall seconds and the command's own peak RSS."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        process = subprocess.Popen([*_command(), *args, "--json"], env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if process.returncode != 0:
            raise RuntimeError(f"memtrove {' '.join(args)} exited {process.returncode}: {err.read().strip()[-500:]}")
        text = out.read()
    return {"answer": json.loads(text) if text.strip() else {}, "seconds": round(seconds, 2),
            "command_peak_rss_mb": round(usage.ru_maxrss / 1024, 1)}


def owner_peak_mb(data: Path) -> float | None:
    """The peak RSS (VmHWM) of the shared server holding ``data``, read before it stops."""
    from entrypoints.shared import read_holder

    pid = read_holder(data.resolve()).get("pid")
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def stop_owner(data: Path) -> None:
    from entrypoints.shared import lock_is_held, read_holder

    pid = read_holder(data.resolve()).get("pid")
    if isinstance(pid, int) and lock_is_held(data.resolve()):
        os.kill(pid, signal.SIGTERM)
        for _ in range(300):
            if not lock_is_held(data.resolve()):
                return
            time.sleep(0.1)


def folder(docs: Path, files: int, out: Path, keep: Path | None) -> int:
    chosen = sorted(p for p in docs.iterdir() if p.is_file())[:files]
    with tempfile.TemporaryDirectory(prefix="memtrove-console-") as scratch:
        root = Path(scratch)
        notes, data = root / "docs", keep or root / "data"
        notes.mkdir()
        for path in chosen:
            shutil.copy2(path, notes / path.name.replace(".rst.txt", ".rst"))
        env = _env(data)
        try:
            first = timed(["ingest", str(notes)], env)
            peak = owner_peak_mb(data)
            second = timed(["ingest", str(notes)], env)
        finally:
            stop_owner(data)
    summary = first["answer"]
    chunks = int(summary.get("chunks", 0))
    report = {"files": len(chosen), "first": {**first, "answer": summary, "chunks": chunks,
                                              "chunks_per_second": round(chunks / first["seconds"], 1),
                                              "server_peak_rss_mb": peak},
              "second": second}
    out.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))
    return 0


def store(source: Path, dims: int, requests: int, out: Path) -> int:
    import httpx

    with StandinEmbeddings(dims) as embeddings, tempfile.TemporaryDirectory(prefix="memtrove-transfer-") as scratch:
        extra = {"MEMTROVE_EMBEDDER": "openai-compatible", "OPENAI_BASE_URL": embeddings.url,
                 "OPENAI_API_KEY": "standin", "OPENAI_EMBED_MODEL": f"standin-bow-{dims}",
                 "OPENAI_EMBED_DIMS": str(dims), "CHUNK_TARGET_TOKENS": "300", "MEMTROVE_WARMUP": "false"}
        root = Path(scratch)
        exported, copy = root / "export.jsonl", root / "imported"
        report: dict[str, Any] = {"store": str(source)}
        try:
            report["stats"] = timed(["stats"], _env(source, extra))["answer"]
            done = timed(["export", str(exported)], _env(source, extra))
            report["export"] = {**done, "server_peak_rss_mb": owner_peak_mb(source),
                                "file_mb": round(exported.stat().st_size / 2**20, 1)}
        finally:
            stop_owner(source)
        try:
            done = timed(["import", str(exported)], _env(copy, extra))
            report["import"] = {**done, "server_peak_rss_mb": owner_peak_mb(copy)}
        finally:
            stop_owner(copy)
        report["pages"] = _pages(source, extra, requests, httpx)
    out.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))
    return 0


def _pages(data: Path, extra: dict[str, str], requests: int, httpx: Any) -> dict[str, Any]:
    """p50/p95 of the page's search and browse GETs, and of hybrid_search over MCP on the same server."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**_env(data, extra), "MEMTROVE_SHARED": "false", "MEMTROVE_TOOLSETS": "core,console"}
    server = subprocess.Popen([*_command(), "serve", "--transport", "http", "--port", str(port)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, timeout=60) as client:
            for _ in range(600):
                try:
                    if client.get("/health").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(0.2)
            client.get("/ui/search")  # the session cookie
            first = client.get("/ui/artifacts").text
            artifact = first.split('href="/ui/artifacts/art_', 1)[1].split('"', 1)[0]
            pages = {"search": lambda i: f"/ui/search?q={QUERIES[i % len(QUERIES)].replace(' ', '+')}",
                     "browse artifacts": lambda i: "/ui/artifacts",
                     "open artifact": lambda i: f"/ui/artifacts/art_{artifact}",
                     "health": lambda i: "/ui/health"}
            found: dict[str, Any] = {}
            for name, path in pages.items():
                ms = []
                for i in range(requests):
                    started = time.perf_counter()
                    response = client.get(path(i))
                    ms.append((time.perf_counter() - started) * 1000)
                    if response.status_code != 200:
                        raise RuntimeError(f"{path(i)} answered {response.status_code}")
                found[name] = latency(sorted(ms))
            found["hybrid_search over MCP (reference)"] = _mcp_reference(f"{base}/mcp/", requests)
            ref = found["hybrid_search over MCP (reference)"]["p50"]
            found["search page p50 / MCP p50"] = round(found["search"]["p50"] / ref, 2)
            return found
    finally:
        server.terminate()
        server.wait(timeout=60)


def _mcp_reference(url: str, requests: int) -> dict[str, float]:
    import anyio

    async def run() -> list[float]:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        ms = []
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=120.0)) as http, \
                Client(streamable_http_client(url, http_client=http), read_timeout_seconds=120) as client:
            for i in range(requests):
                started = time.perf_counter()
                await client.call_tool("hybrid_search", {"query": QUERIES[i % len(QUERIES)], "limit": 10,
                                                         "include_memory": True, "include_history": True})
                ms.append((time.perf_counter() - started) * 1000)
        return ms
    return latency(sorted(anyio.run(run)))

