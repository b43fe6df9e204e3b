"""Small gradient-boosted trees for the rerank stage (LambdaMART-style), fitted with numpy, compared by
bench/rerank_compare.py. Each tree is a depth-limited regression tree on a feature's quantile thresholds,
fitted by Newton steps to the pairwise (RankNet) or NDCG-weighted (LambdaRank) gradients of each question's
(answering, not answering) pairs; each kind of store weighs the same, each of its questions alike.
Deterministic (no sampling). A tree is a list of nodes: [feature, threshold, left, right] or [value].
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from bench.rerank_compare import Table
from bench.rerank_forms import DEPTH, expand, padded


def fit(ts: list[Table], trees: int = 100, depth: int = 3, rate: float = 0.1, lam: bool = True,
        relative: bool = False, bins: int = 32, reg: float = 1.0, min_hess: float = 1e-3
        ) -> Callable[[Table], np.ndarray]:
    ts = [t for t in ts if 0 < t.y.sum() < len(t.y)]
    x, y, mask = padded(ts, relative)
    rows = x[mask]
    qi, pi = np.nonzero(mask)
    kinds = sorted({t.dataset for t in ts})
    per_kind = {k: sum(t.dataset == k for t in ts) for k in kinds}
    qw = np.array([1.0 / per_kind[t.dataset] / len(kinds) for t in ts])
    pairs = (y[:, :, None] > y[:, None, :]) & mask[:, :, None] & mask[:, None, :]
    count = pairs.sum(axis=(1, 2))
    base = pairs * (qw / np.maximum(count, 1))[:, None, None]
    discount = 1.0 / np.log2(np.arange(DEPTH) + 2.0)
    ideal = np.array([discount[: int(t.y.sum())][:10].sum() for t in ts])
    edges = [np.unique(np.quantile(rows[:, f], np.linspace(0, 1, bins + 1)[1:-1])) for f in range(rows.shape[1])]
    binned = np.stack([np.searchsorted(edges[f], rows[:, f], side="right") for f in range(rows.shape[1])], axis=1)
    s_flat = np.zeros(len(rows))
    forest: list[list[list[float]]] = []
    for _ in range(trees):
        s = np.full(mask.shape, -1e9)
        s[qi, pi] = s_flat
        diff = s[:, :, None] - s[:, None, :]
        w = base
        if lam:
            rank = np.argsort(np.argsort(-s, axis=1, kind="stable"), axis=1)
            d = np.where(rank < 10, discount[np.minimum(rank, DEPTH - 1)], 0.0)
            delta = np.abs(y[:, :, None] - y[:, None, :]) * np.abs(d[:, :, None] - d[:, None, :])
            w = pairs * (delta + 1e-3) * (qw / np.maximum(ideal, 1e-9))[:, None, None]
        rho = np.where(pairs, 1.0 / (1.0 + np.exp(np.clip(diff, -30, 30))), 0.0)
        lam_ij = w * rho
        hij = w * rho * (1 - rho)
        g = -(lam_ij.sum(axis=2) - lam_ij.sum(axis=1))  # d loss / d s
        hh = hij.sum(axis=2) + hij.sum(axis=1)
        grad, hess = g[qi, pi], hh[qi, pi]
        tree: list[list[float]] = []
        _grow(tree, np.arange(len(rows)), binned, edges, grad, hess, depth, reg, min_hess, rate)
        forest.append(tree)
        s_flat += _apply(tree, rows)

    def score(t: Table) -> np.ndarray:
        xx = expand(t.x, relative)
        return np.sum([_apply(tree, xx) for tree in forest], axis=0)

    score.forest = forest  # type: ignore[attr-defined]
    return score


def _grow(tree: list[list[float]], idx: np.ndarray, binned: np.ndarray, edges: list[np.ndarray], grad: np.ndarray,
          hess: np.ndarray, depth: int, reg: float, min_hess: float, rate: float) -> int:
    at = len(tree)
    g, h = grad[idx].sum(), hess[idx].sum()
    tree.append([float(-rate * g / (h + reg))])
    if depth == 0 or len(idx) < 2:
        return at
    best = (0.0, -1, -1)
    parent = g * g / (h + reg)
    for f in range(binned.shape[1]):
        nb = len(edges[f]) + 1
        if nb < 2:
            continue
        gb = np.bincount(binned[idx, f], weights=grad[idx], minlength=nb)
        hb = np.bincount(binned[idx, f], weights=hess[idx], minlength=nb)
        gl, hl = np.cumsum(gb)[:-1], np.cumsum(hb)[:-1]
        gr, hr = g - gl, h - hl
        gain = gl * gl / (hl + reg) + gr * gr / (hr + reg) - parent
        gain[(hl < min_hess) | (hr < min_hess)] = 0.0
        k = int(np.argmax(gain))
        if gain[k] > best[0]:
            best = (float(gain[k]), f, k)
    if best[1] < 0:
        return at
    f, k = best[1], best[2]
    left = binned[idx, f] <= k
    tree[at] = [float(f), float(edges[f][k]), 0.0, 0.0]
    tree[at][2] = _grow(tree, idx[left], binned, edges, grad, hess, depth - 1, reg, min_hess, rate)
    tree[at][3] = _grow(tree, idx[~left], binned, edges, grad, hess, depth - 1, reg, min_hess, rate)
    return at


def _apply(tree: list[list[float]], x: np.ndarray) -> np.ndarray:
    out = np.zeros(len(x))

    def walk(node: int, idx: np.ndarray) -> None:
        n = tree[node]
        if len(n) == 1:
            out[idx] = n[0]
            return
        go_left = x[idx, int(n[0])] < n[1]
        walk(int(n[2]), idx[go_left])
        walk(int(n[3]), idx[~go_left])

    walk(0, np.arange(len(x)))
    return out


TREE_FORMS: dict[str, Callable[[list[Table]], Callable[[Table], np.ndarray]]] = {
    "trees100 d3 lambda": fit,
    "trees100 d3 pairwise": lambda ts: fit(ts, lam=False),
    "trees100 d3 lambda relative": lambda ts: fit(ts, relative=True),
    "trees200 d4 lambda relative": lambda ts: fit(ts, trees=200, depth=4, rate=0.05, relative=True),
}
