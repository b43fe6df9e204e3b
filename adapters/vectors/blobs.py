"""The SQL store's copy of each vector, as bytes: half precision (float16), read back as float32.

The copy exists so an index can be rebuilt without embedding again; half precision rebuilds an index
with the same top 10 (README "Disk per chunk") at half the bytes. A float16 copy starts with one
marker byte, so its length is odd; a float32 copy (stores written before) is a multiple of 4 bytes
and is still read as it is.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

HALF = b"\x01"
_FLOAT16_MAX = 65_504.0


def encode(vector: Sequence[float]) -> bytes:
    """A vector's copy: the marker, then float16 values (beyond float16's range, clipped to it)."""
    values = np.clip(np.asarray(vector, dtype=np.float32), -_FLOAT16_MAX, _FLOAT16_MAX)
    return HALF + values.astype("<f2").tobytes()


def decode(blob: bytes) -> np.ndarray:
    """A copy as float32 values, whichever precision it was written in."""
    data = bytes(blob)
    if len(data) % 2 == 1 and data[:1] == HALF:
        return np.frombuffer(data, dtype="<f2", offset=1).astype(np.float32)
    return np.frombuffer(data, dtype=np.float32)


def decode_rows(blobs: Sequence[bytes]) -> np.ndarray:
    """Copies of one dimension as a float32 matrix, a row each."""
    return np.vstack([decode(b) for b in blobs]) if blobs else np.zeros((0, 0), dtype=np.float32)
