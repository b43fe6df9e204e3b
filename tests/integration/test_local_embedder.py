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


def test_a_documents_calls_are_cut_by_tokens_and_give_each_text_its_own_vector_alone_or_together() -> None:
    # Long and short texts, some twice: the vectors are those of each text embedded alone, whichever
    # call (and worker) a text ran in and however its call was padded.
    longs = [f"section {i} " + " ".join(["the event loop runs coroutines"] * 60) for i in range(6)]
    texts = [*longs, "short note", longs[2], "another short note", "short note"]
    together = np.array(EMBEDDER.embed_documents(texts))
    alone = np.array([EMBEDDER.embed_query(t) for t in texts])
    assert np.abs(together - alone).max() < 1e-5
    assert np.array_equal(together[1 + 5 + 1], together[2]) and np.array_equal(together[6], together[9])


def test_a_documents_calls_run_on_the_workers_and_a_query_on_its_callers_thread() -> None:
    import threading

    seen: list[str] = []
    embedder = OnnxMiniLMEmbedder(workers=2)
    run = embedder._run

    def spy(session, encodings):
        seen.append(threading.current_thread().name)
        return run(session, encodings)

    embedder._run = spy  # type: ignore[method-assign]
    embedder.embed_documents([f"part {i} " + "words " * 250 for i in range(8)])
    assert len(seen) >= 2 and all(name.startswith("minilm") for name in seen)
    seen.clear()
    embedder.embed_query("where is the loop")
    embedder.embed_documents(["a short memory"])
    assert seen == [threading.current_thread().name] * 2
