"""The learned rerank stage's model: a small network shipped as a JSON file in the package, evaluated in pure Python.

The file (adapters/rerank/models/*.json, written by bench/rerank_train.py) holds the feature names it reads,
their standardisation (mean, scale) and dense layers (``weights`` rows are a layer's outputs, ``bias`` one per
output) with ``tanh`` between them; the last layer has one output, the candidate's score. Its version is the
file's name and the first 12 hex digits of its SHA-256: a search that explains itself names the exact model.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from domain.errors import ConfigurationError
from domain.ports.reranking import CandidateScorer

MODELS = Path(__file__).resolve().parent / "models"
DEFAULT_MODEL = MODELS / "rerank-v1.json"
FORMAT = "memtrove-rerank/1"


class LearnedCandidateScorer(CandidateScorer):
    """Scores candidates' features with the shipped model; deterministic (no randomness, fixed order of sums)."""

    def __init__(self, path: Path = DEFAULT_MODEL) -> None:
        try:
            raw = path.read_bytes()
            model = json.loads(raw)
        except (OSError, ValueError) as error:
            raise ConfigurationError(f"the rerank model {path} cannot be read: {error}") from error
        if model.get("format") != FORMAT:
            raise ConfigurationError(f"the rerank model {path} is not of format {FORMAT!r}")
        self.version = f"{path.stem}@{hashlib.sha256(raw).hexdigest()[:12]}"
        self.names: tuple[str, ...] = tuple(model["features"])
        self._mean = [float(v) for v in model["mean"]]
        self._scale = [float(v) or 1.0 for v in model["scale"]]
        self._layers = [([[float(w) for w in row] for row in layer["weights"]], [float(b) for b in layer["bias"]])
                        for layer in model["layers"]]
        widths = [len(self.names)] + [len(bias) for _, bias in self._layers]
        shapes_ok = len(self._mean) == len(self._scale) == len(self.names) and widths[-1] == 1 and all(
            len(bias) == len(rows) and all(len(row) == widths[i] for row in rows)
            for i, (rows, bias) in enumerate(self._layers))
        if not shapes_ok:
            raise ConfigurationError(f"the rerank model {path} has layers that do not fit its features")

    def score(self, features: Sequence[Mapping[str, float]]) -> list[float]:
        """One score per candidate (a feature the model reads and the candidate lacks counts 0)."""
        return [self._one(row) for row in features]

    def _one(self, row: Mapping[str, float]) -> float:
        values = [(float(row.get(name, 0.0)) - m) / s for name, m, s in zip(self.names, self._mean, self._scale)]
        last = len(self._layers) - 1
        for i, (rows, bias) in enumerate(self._layers):
            values = [b + sum(w * v for w, v in zip(weights, values)) for weights, b in zip(rows, bias)]
            if i < last:
                values = [math.tanh(v) for v in values]
        return values[0]
