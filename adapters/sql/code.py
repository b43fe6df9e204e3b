"""Indexed codebases in the SQL store: each codebase's latest run, its files, and their symbol tables.

A mixin for the SQL store (``self._write()``/``self._read()`` of SqlMetadataStore); its tables join
the shared MetaData, created when the store starts. A run is claimed by a conditional update, so
one run per codebase is live across processes and replicas of one database.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (Column, Connection, Float, Index, Integer, String, Table, Text, delete, insert, inspect, or_,
                        select, text, update)
from sqlalchemy.exc import IntegrityError

from adapters.sql.base import metadata
from domain.code.model import CodeFile, Import, Symbol, folded
from domain.errors import StorageError
from domain.ports.code import Codebase, CodeStore, SymbolHit

codebases = Table(
    "codebases", metadata,
    Column("id", String(40), primary_key=True),
    Column("root", Text, nullable=False),
    Column("owner", String(200), nullable=False),
    Column("acl", Text, nullable=False),  # a JSON list of access keys
    Column("project", String(100)),
    Column("settings", Text, nullable=False),  # JSON: include, exclude, languages
    Column("status", String(16), nullable=False),
    Column("run", String(40), nullable=False),
    Column("heartbeat", Float, nullable=False),
    Column("counts", Text, nullable=False),  # JSON object
    Column("skipped", Text, nullable=False),  # JSON list of [path, why]
    Column("error", Text),
    Column("started_at", String(40), nullable=False),
    Column("finished_at", String(40)),
    Column("holder", Text, nullable=False, server_default=""),  # the run's process (domain/ports/processes.py)
)

code_files = Table(
    "code_files", metadata,
    Column("codebase", String(40), primary_key=True),
    Column("path", Text, primary_key=True),
    Column("language", String(16), nullable=False),
    Column("content_hash", String(128), nullable=False),
    Column("size", Integer, nullable=False),
    Column("artifact_id", String(40), nullable=False),
    Column("imports", Text, nullable=False),  # JSON list of [module, [names], line]
)

code_symbols = Table(
    "code_symbols", metadata,
    Column("codebase", String(40), nullable=False),
    Column("path", Text, nullable=False),
    Column("ordinal", Integer, nullable=False),
    Column("kind", String(16), nullable=False),
    Column("name", Text, nullable=False),
    Column("qualified_name", Text, nullable=False),
    Column("signature", Text, nullable=False),
    Column("start_line", Integer, nullable=False),
    Column("end_line", Integer, nullable=False),
    Column("folded_name", String(255), nullable=False),
    Column("folded_qualified", String(255), nullable=False),
    Column("record", String(120), nullable=False),
    Index("ix_code_symbols_file", "codebase", "path"),
    Index("ix_code_symbols_name", "folded_name"),
    Index("ix_code_symbols_qualified", "folded_qualified"),
)


def _codebase(row: Any) -> Codebase:
    settings = json.loads(row["settings"])
    return Codebase(id=row["id"], root=row["root"], owner=row["owner"], acl=tuple(json.loads(row["acl"])),
                    project=row["project"], include=tuple(settings.get("include", ())),
                    exclude=tuple(settings.get("exclude", ())), languages=tuple(settings.get("languages", ())),
                    status=row["status"], run=row["run"], heartbeat=float(row["heartbeat"]),
                    counts=json.loads(row["counts"]), skipped=tuple((p, w) for p, w in json.loads(row["skipped"])),
                    error=row["error"], started_at=row["started_at"], finished_at=row["finished_at"],
                    holder=row["holder"] or "")


def _values(cb: Codebase) -> dict[str, Any]:
    return {"root": cb.root, "owner": cb.owner, "acl": json.dumps(list(cb.acl)), "project": cb.project,
            "settings": json.dumps({"include": list(cb.include), "exclude": list(cb.exclude),
                                    "languages": list(cb.languages)}),
            "status": cb.status, "run": cb.run, "heartbeat": cb.heartbeat, "counts": json.dumps(dict(cb.counts)),
            "skipped": json.dumps([list(s) for s in cb.skipped]), "error": cb.error, "started_at": cb.started_at,
            "finished_at": cb.finished_at, "holder": cb.holder}


def _file(row: Any, symbols: Sequence[Symbol] = ()) -> CodeFile:
    imports = tuple(Import(m, tuple(n), int(line)) for m, n, line in json.loads(row["imports"]))
    return CodeFile(row["codebase"], row["path"], row["language"], row["content_hash"], int(row["size"]),
                    row["artifact_id"], tuple(symbols), imports)


class SqlCode(CodeStore):
    """Codebases, files and symbols over the store's engine (SQLite or PostgreSQL)."""

    def _migrate(self, conn: Connection) -> None:
        """Columns added since a store was created: codebases.holder (runs from before it are judged by
        their heartbeat alone)."""
        super()._migrate(conn)  # type: ignore[misc]
        if "holder" not in {c["name"] for c in inspect(conn).get_columns("codebases")}:
            conn.execute(text("ALTER TABLE codebases ADD COLUMN holder TEXT NOT NULL DEFAULT ''"))

    def begin_run(self, codebase: Codebase, stale_before: float, replacing: str | None = None) -> Codebase | None:
        values = _values(codebase)
        free = [codebases.c.status != "indexing", codebases.c.heartbeat < stale_before]
        if replacing is not None:  # a run whose process is gone: taken only while it still holds the codebase
            free.append(codebases.c.run == replacing)
        with self._write() as conn:  # type: ignore[attr-defined]
            taken = conn.execute(update(codebases).where(codebases.c.id == codebase.id, or_(*free)).values(**values))
            if taken.rowcount == 0:
                if conn.execute(select(codebases.c.id).where(codebases.c.id == codebase.id)).first() is not None:
                    return None
                try:
                    with conn.begin_nested():
                        conn.execute(insert(codebases).values(id=codebase.id, **values))
                except IntegrityError:  # another process inserted it first: its run is live
                    return None
        return codebase

    def update_run(self, codebase: Codebase) -> None:
        values = _values(codebase)
        with self._write() as conn:  # type: ignore[attr-defined]
            conn.execute(update(codebases).where(codebases.c.id == codebase.id, codebases.c.run == codebase.run)
                         .values(**values))

    def get_codebase(self, codebase_id: str) -> Codebase | None:
        with self._read() as conn:  # type: ignore[attr-defined]
            row = conn.execute(select(codebases).where(codebases.c.id == codebase_id)).mappings().first()
        return None if row is None else _codebase(row)

    def list_codebases(self) -> list[Codebase]:
        with self._read() as conn:  # type: ignore[attr-defined]
            return [_codebase(r) for r in conn.execute(select(codebases).order_by(codebases.c.root)).mappings()]

    def code_files(self, codebase_id: str) -> dict[str, CodeFile]:
        with self._read() as conn:  # type: ignore[attr-defined]
            rows = conn.execute(select(code_files).where(code_files.c.codebase == codebase_id)).mappings()
            return {r["path"]: _file(r) for r in rows}

    def put_code_file(self, file: CodeFile, records: Sequence[str]) -> None:
        if len(records) != len(file.symbols):
            raise StorageError(f"{len(file.symbols)} symbols but {len(records)} records holding them")
        key = (code_files.c.codebase == file.codebase, code_files.c.path == file.path)
        with self._write() as conn:  # type: ignore[attr-defined]
            conn.execute(delete(code_files).where(*key))
            conn.execute(delete(code_symbols).where(code_symbols.c.codebase == file.codebase,
                                                    code_symbols.c.path == file.path))
            conn.execute(insert(code_files).values(
                codebase=file.codebase, path=file.path, language=file.language, content_hash=file.content_hash,
                size=file.size, artifact_id=file.artifact_id,
                imports=json.dumps([[i.module, list(i.names), i.line] for i in file.imports])))
            if file.symbols:
                conn.execute(insert(code_symbols), [
                    {"codebase": file.codebase, "path": file.path, "ordinal": n, "kind": s.kind, "name": s.name,
                     "qualified_name": s.qualified_name, "signature": s.signature, "start_line": s.start_line,
                     "end_line": s.end_line, "folded_name": folded(s.name)[:255],
                     "folded_qualified": folded(s.qualified_name)[:255], "record": record}
                    for n, (s, record) in enumerate(zip(file.symbols, records))])

    def drop_code_files(self, codebase_id: str, paths: Sequence[str]) -> None:
        if not paths:
            return
        with self._write() as conn:  # type: ignore[attr-defined]
            for start in range(0, len(paths), 500):
                batch = list(paths[start:start + 500])
                conn.execute(delete(code_symbols).where(code_symbols.c.codebase == codebase_id,
                                                        code_symbols.c.path.in_(batch)))
                conn.execute(delete(code_files).where(code_files.c.codebase == codebase_id,
                                                      code_files.c.path.in_(batch)))

    def drop_codebase(self, codebase_id: str) -> None:
        with self._write() as conn:  # type: ignore[attr-defined]
            conn.execute(delete(code_symbols).where(code_symbols.c.codebase == codebase_id))
            conn.execute(delete(code_files).where(code_files.c.codebase == codebase_id))
            conn.execute(delete(codebases).where(codebases.c.id == codebase_id))

    def find_symbols(self, keys: Sequence[str], codebases_in: Sequence[str] | None, limit: int) -> list[SymbolHit]:
        if not keys:
            return []
        wanted = list(keys)
        query = select(code_symbols).where(or_(code_symbols.c.folded_qualified.in_(wanted),
                                               code_symbols.c.folded_name.in_(wanted)))
        if codebases_in is not None:
            query = query.where(code_symbols.c.codebase.in_(list(codebases_in)))
        with self._read() as conn:  # type: ignore[attr-defined]
            rows = list(conn.execute(query.limit(limit * 4)).mappings())
        hits = [SymbolHit(r["codebase"], r["path"], r["kind"], r["qualified_name"], int(r["start_line"]),
                          int(r["end_line"]), r["record"], r["folded_qualified"] in keys) for r in rows]
        hits.sort(key=lambda h: (not h.exact, h.codebase, h.path, h.start_line))
        return hits[:limit]

    def file_symbols(self, codebase_id: str, path: str) -> CodeFile | None:
        with self._read() as conn:  # type: ignore[attr-defined]
            row = conn.execute(select(code_files).where(code_files.c.codebase == codebase_id,
                                                        code_files.c.path == path)).mappings().first()
            if row is None:
                return None
            symbols = [Symbol(r["kind"], r["name"], r["qualified_name"], r["signature"], int(r["start_line"]),
                              int(r["end_line"])) for r in conn.execute(
                select(code_symbols).where(code_symbols.c.codebase == codebase_id, code_symbols.c.path == path)
                .order_by(code_symbols.c.ordinal)).mappings()]
        return _file(row, symbols)
