"""In-memory fake of the CodeStore port (the same contract as adapters/sql/code.py): codebases,
files and symbols in dicts behind one lock. A mixin: compose it first, e.g.
``class Store(InMemoryCode, InMemoryStore)``."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from domain.code.model import CodeFile, folded
from domain.errors import StorageError
from domain.ports.code import Codebase, CodeStore, SymbolHit


class InMemoryCode(CodeStore):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Past the Protocol's placeholder __init__, as InMemoryDocuments does.
        super(CodeStore, self).__init__(*args, **kwargs)
        self._code_lock = threading.RLock()
        self.codebase_rows: dict[str, Codebase] = {}
        self.code_file_rows: dict[tuple[str, str], tuple[CodeFile, tuple[str, ...]]] = {}

    def begin_run(self, codebase: Codebase, stale_before: float, replacing: str | None = None) -> Codebase | None:
        with self._code_lock:
            live = self.codebase_rows.get(codebase.id)
            if (live is not None and live.status == "indexing" and live.heartbeat >= stale_before
                    and (replacing is None or live.run != replacing)):
                return None
            self.codebase_rows[codebase.id] = codebase
            return codebase

    def update_run(self, codebase: Codebase) -> None:
        with self._code_lock:
            live = self.codebase_rows.get(codebase.id)
            if live is not None and live.run == codebase.run:
                self.codebase_rows[codebase.id] = replace(codebase, counts=dict(codebase.counts))

    def get_codebase(self, codebase_id: str) -> Codebase | None:
        with self._code_lock:
            return self.codebase_rows.get(codebase_id)

    def list_codebases(self) -> list[Codebase]:
        with self._code_lock:
            return sorted(self.codebase_rows.values(), key=lambda cb: (cb.root, cb.id))

    def code_files(self, codebase_id: str) -> dict[str, CodeFile]:
        with self._code_lock:
            return {path: replace(file, symbols=()) for (cb, path), (file, _) in self.code_file_rows.items()
                    if cb == codebase_id}

    def put_code_file(self, file: CodeFile, records: Sequence[str]) -> None:
        if len(records) != len(file.symbols):
            raise StorageError(f"{len(file.symbols)} symbols but {len(records)} records holding them")
        with self._code_lock:
            self.code_file_rows[(file.codebase, file.path)] = (
                replace(file, symbols=tuple(file.symbols), imports=tuple(file.imports)), tuple(records))

    def drop_code_files(self, codebase_id: str, paths: Sequence[str]) -> None:
        with self._code_lock:
            for path in paths:
                self.code_file_rows.pop((codebase_id, path), None)

    def drop_codebase(self, codebase_id: str) -> None:
        with self._code_lock:
            for key in [k for k in self.code_file_rows if k[0] == codebase_id]:
                del self.code_file_rows[key]
            self.codebase_rows.pop(codebase_id, None)

    def find_symbols(self, keys: Sequence[str], codebases_in: Sequence[str] | None, limit: int) -> list[SymbolHit]:
        wanted = set(keys)
        hits: list[SymbolHit] = []
        with self._code_lock:
            for (cb, path), (file, records) in self.code_file_rows.items():
                if codebases_in is not None and cb not in codebases_in:
                    continue
                for symbol, record in zip(file.symbols, records):
                    exact = folded(symbol.qualified_name)[:255] in wanted
                    if exact or folded(symbol.name)[:255] in wanted:
                        hits.append(SymbolHit(cb, path, symbol.kind, symbol.qualified_name, symbol.start_line,
                                              symbol.end_line, record, exact))
        hits.sort(key=lambda h: (not h.exact, h.codebase, h.path, h.start_line))
        return hits[:limit]

    def file_symbols(self, codebase_id: str, path: str) -> CodeFile | None:
        with self._code_lock:
            found = self.code_file_rows.get((codebase_id, path))
            return None if found is None else found[0]
