"""The SQL copy of a vector: half precision with a marker, read back as float32; float32 copies of
stores written before still read as they are."""

from __future__ import annotations

import numpy as np

from adapters.vectors.blobs import HALF, decode, decode_rows, encode


def test_a_copy_is_half_the_bytes_and_reads_back_within_half_precision() -> None:
    vector = np.random.default_rng(1).normal(0, 0.05, 384).astype(np.float32)
    blob = encode(vector.tolist())
    assert len(blob) == 1 + 2 * 384 and blob[:1] == HALF
    back = decode(blob)
    assert back.dtype == np.float32 and back.shape == (384,)
    assert np.allclose(back, vector, rtol=1e-3, atol=1e-6)
    assert not np.array_equal(back, vector)  # really rounded


def test_a_float32_copy_of_an_older_store_reads_exactly() -> None:
    vector = np.array([0.9, -0.1234567, 1.0, 0.0], dtype=np.float32)
    assert np.array_equal(decode(vector.tobytes()), vector)
    assert np.array_equal(decode(memoryview(vector.tobytes())), vector)


def test_values_beyond_half_precision_are_clipped_not_infinite() -> None:
    back = decode(encode([1e6, -1e6, 3.0]))
    assert np.isfinite(back).all() and back[0] == 65504.0 and back[1] == -65504.0


def test_rows_of_either_precision_make_one_matrix() -> None:
    old = np.array([1.0, 0.0, 0.5], dtype=np.float32).tobytes()
    found = decode_rows([old, encode([0.0, 1.0, 0.25])])
    assert found.shape == (2, 3) and found.dtype == np.float32
    assert found.tolist() == [[1.0, 0.0, 0.5], [0.0, 1.0, 0.25]]
    assert decode_rows([]).shape == (0, 0)
