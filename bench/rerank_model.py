"""Fitting the learned rerank stage's model with numpy: a pairwise (RankNet) loss over each question's candidates.

A model is a dict in the shipped file's format (adapters/rerank/learned.py): features, their standardisation and
dense layers with tanh between them. ``hidden=0`` is a linear model; otherwise one hidden layer of that width.
Every question with an answering and a non-answering candidate gives pairs (answering above not); each kind of
store (turns, facts, passages) weighs the same in the loss, each of its questions alike. Deterministic: a fixed
seed, full-batch Adam.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from adapters.rerank.learned import FORMAT
from domain.search.rerank import DEPTH, FEATURES, features

from bench.rerank_collect import Question


def table(question: Question) -> tuple[np.ndarray, np.ndarray]:
    """The question's candidates' features (rows in FEATURES' order) and labels."""
    rows = features(question.hits[:DEPTH], question.ranked, question.evidence_of)
    return np.array([[r[f] for f in FEATURES] for r in rows], dtype=float), np.array(question.labels())


def fit(questions: Sequence[Question], hidden: int = 0, l2: float = 1e-3, steps: int = 300, rate: float = 0.05,
        seed: int = 0, cache: dict[int, tuple[np.ndarray, np.ndarray]] | None = None) -> dict[str, Any]:
    """A model trained on ``questions``' candidates."""
    cache = {} if cache is None else cache
    blocks, first, second, weight = [], [], [], []
    per_kind: dict[str, int] = {}
    usable = []
    for q in questions:
        x, y = cache.setdefault(id(q), table(q))
        if 0 < y.sum() < len(y):
            usable.append((q, x, y))
            per_kind[q.dataset] = per_kind.get(q.dataset, 0) + 1
    offset = 0
    for q, x, y in usable:
        pos, neg = np.nonzero(y > 0)[0], np.nonzero(y == 0)[0]
        a, b = np.meshgrid(pos, neg, indexing="ij")
        first.append(a.ravel() + offset)
        second.append(b.ravel() + offset)
        weight.append(np.full(a.size, 1.0 / a.size / per_kind[q.dataset] / len(per_kind)))
        blocks.append(x)
        offset += len(x)
    x_all = np.vstack(blocks)
    mean, scale = x_all.mean(axis=0), x_all.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = (x_all - mean) / scale
    i, j, w = np.concatenate(first), np.concatenate(second), np.concatenate(weight)
    rng = np.random.default_rng(seed)
    width = z.shape[1]
    params = ([rng.normal(0, 0.3 / np.sqrt(width), (hidden, width)), np.zeros(hidden),
               rng.normal(0, 0.3 / np.sqrt(hidden), (1, hidden)), np.zeros(1)] if hidden
              else [np.zeros((1, width)), np.zeros(1)])
    moments = [(np.zeros_like(p), np.zeros_like(p)) for p in params]
    for step in range(1, steps + 1):
        grads = _gradients(params, z, i, j, w, l2)
        for k, (p, g) in enumerate(zip(params, grads)):
            m, v = moments[k]
            m[:] = 0.9 * m + 0.1 * g
            v[:] = 0.999 * v + 0.001 * g * g
            p -= rate * (m / (1 - 0.9 ** step)) / (np.sqrt(v / (1 - 0.999 ** step)) + 1e-8)
    layers = [{"weights": params[0].tolist(), "bias": params[1].tolist()}]
    if hidden:
        layers.append({"weights": params[2].tolist(), "bias": params[3].tolist()})
    return {"format": FORMAT, "features": list(FEATURES), "mean": mean.tolist(), "scale": scale.tolist(),
            "layers": layers, "hidden": hidden, "l2": l2, "steps": steps}


def _gradients(params: list[np.ndarray], z: np.ndarray, i: np.ndarray, j: np.ndarray, w: np.ndarray,
               l2: float) -> list[np.ndarray]:
    """Gradients of sum w * log(1 + exp(-(s_i - s_j))) + l2 * |weights|^2."""
    if len(params) == 2:
        s = z @ params[0][0] + params[1][0]
    else:
        h = np.tanh(z @ params[0].T + params[1])
        s = h @ params[2][0] + params[3][0]
    diff = s[i] - s[j]
    coef = -w / (1.0 + np.exp(np.clip(diff, -30, 30)))  # d loss / d diff
    ds = np.bincount(i, weights=coef, minlength=len(z)) - np.bincount(j, weights=coef, minlength=len(z))
    if len(params) == 2:
        return [(ds @ z)[None, :] + 2 * l2 * params[0], np.array([0.0])]
    dh = np.outer(ds, params[2][0]) * (1 - h * h)
    return [dh.T @ z + 2 * l2 * params[0], dh.sum(axis=0), (ds @ h)[None, :] + 2 * l2 * params[2], np.array([0.0])]


class ArrayScorer:
    """A model dict scoring features with numpy (the bench's fast path; the shipped scorer is pure Python)."""

    def __init__(self, model: Mapping[str, Any]) -> None:
        self.version = "bench"
        self.names = model["features"]
        self.mean, self.scale = np.array(model["mean"]), np.array(model["scale"])
        self.layers = [(np.array(layer["weights"]), np.array(layer["bias"])) for layer in model["layers"]]

    def score(self, rows: Sequence[Mapping[str, float]]) -> list[float]:
        values = (np.array([[r.get(n, 0.0) for n in self.names] for r in rows]) - self.mean) / self.scale
        for k, (weights, bias) in enumerate(self.layers):
            values = values @ weights.T + bias
            if k < len(self.layers) - 1:
                values = np.tanh(values)
        return values[:, 0].tolist()
