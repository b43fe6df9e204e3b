"""The local ONNX MiniLM embedder: shipped weights, checked hashes, 256 word pieces, lazy load."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from adapters.embedders.local import MAX_WORD_PIECES, OnnxMiniLMEmbedder
from domain.errors import ConfigurationError

EMBEDDER = OnnxMiniLMEmbedder()


def cos(a, b) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_construction_loads_nothing() -> None:
    fresh = OnnxMiniLMEmbedder()
    assert fresh.describe()["model_loaded"] is False
    assert fresh.profile.dimensions == 384 and fresh.profile.max_tokens == MAX_WORD_PIECES


def test_vectors_are_unit_length_and_meaningful() -> None:
    dark, theme, cat = EMBEDDER.embed_documents(
        ["User prefers dark mode", "I like a dark theme in my editor", "The cat sat on the mat"])
    assert np.linalg.norm(dark) == pytest.approx(1.0, abs=1e-5)
    assert cos(dark, theme) > cos(dark, cat) + 0.3


def test_reads_past_128_word_pieces() -> None:
    # The shipped tokenizer.json truncates at 128; the model reads 256. Words past 128 must count.
    base = " ".join(["alpha"] * 150)
    one = EMBEDDER.embed_query(base + " " + " ".join(["rocket launch orbit"] * 30))
    two = EMBEDDER.embed_query(base + " " + " ".join(["banana bread recipe"] * 30))
    assert EMBEDDER.count_tokens(base) > 128
    assert cos(one, two) < 0.98


def test_batching_and_padding_do_not_change_vectors() -> None:
    texts = ["short", " ".join(["medium length text"] * 10), " ".join(["long"] * 200)] * 15
    batched = EMBEDDER.embed_documents(texts)
    single = [EMBEDDER.embed_query(t) for t in texts[:3]]
    for a, b in zip(batched[:3], single, strict=True):
        assert cos(a, b) > 0.9999


def test_count_tokens_is_not_truncated() -> None:
    assert EMBEDDER.count_tokens("hello world") == 4  # [CLS] hello world [SEP]
    assert EMBEDDER.count_tokens(" ".join(["word"] * 1000)) == 1002


def test_a_tampered_model_file_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(ConfigurationError, match="SHA-256"):
        OnnxMiniLMEmbedder(model_path=bad).embed_query("x")
