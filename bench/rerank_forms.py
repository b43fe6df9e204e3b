"""Model forms compared by bench/rerank_compare.py: each is trained with numpy on questions' feature tables
(padded to DEPTH candidates) and returns a function scoring one question's candidates.

- pairwise (RankNet): every (answering, not answering) pair of a question, each question alike within its kind
  of store, each kind alike (as bench/rerank_model.py);
- lambda: the same pairs weighted by how much swapping the two would change the question's NDCG@10 at the
  current scores (LambdaRank), recomputed each step;
- hidden > 0: one hidden layer (tanh or relu) of that width; 0: linear;
- relative: each feature also as its difference to the question's best candidate on it (max over the
  candidates), a per-question normalisation the stage's scorer can compute from the rows it is given.
Deterministic: fixed seed, full-batch Adam.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from bench.rerank_compare import Table
from domain.search.rerank import DEPTH


def padded(ts: list[Table], relative: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = DEPTH
    x = np.zeros((len(ts), n, ts[0].x.shape[1] * (2 if relative else 1)))
    y = np.zeros((len(ts), n))
    mask = np.zeros((len(ts), n), dtype=bool)
    for k, t in enumerate(ts):
        m = len(t.y)
        x[k, :m] = expand(t.x, relative)
        y[k, :m] = t.y
        mask[k, :m] = True
    return x, y, mask


def expand(x: np.ndarray, relative: bool) -> np.ndarray:
    return np.hstack([x, x - x.max(axis=0)]) if relative else x


def fit(ts: list[Table], hidden: int = 0, act: str = "tanh", lam: bool = False, relative: bool = False,
        l2: float = 1e-3, steps: int = 300, rate: float = 0.05, seed: int = 0) -> Callable[[Table], np.ndarray]:
    ts = [t for t in ts if 0 < t.y.sum() < len(t.y)]
    x, y, mask = padded(ts, relative)
    flat = x[mask]
    mean, scale = flat.mean(axis=0), flat.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = np.where(mask[..., None], (x - mean) / scale, 0.0)
    kinds = sorted({t.dataset for t in ts})
    per_kind = {k: sum(t.dataset == k for t in ts) for k in kinds}
    qw = np.array([1.0 / per_kind[t.dataset] / len(kinds) for t in ts])
    pairs = (y[:, :, None] > y[:, None, :]) & mask[:, :, None] & mask[:, None, :]
    count = pairs.sum(axis=(1, 2))
    base = pairs * (qw / np.maximum(count, 1))[:, None, None]
    discount = 1.0 / np.log2(np.arange(DEPTH) + 2.0)
    ideal = np.array([discount[: int(t.y.sum())][:10].sum() for t in ts])
    rng = np.random.default_rng(seed)
    width = z.shape[2]
    if hidden:
        params = [rng.normal(0, 1.0 / np.sqrt(width), (width, hidden)), np.zeros(hidden),
                  rng.normal(0, 1.0 / np.sqrt(hidden), hidden), np.zeros(1)]
    else:
        params = [np.zeros(width), np.zeros(1)]
    moments = [(np.zeros_like(p), np.zeros_like(p)) for p in params]

    def forward(p: list[np.ndarray], zz: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        if not hidden:
            return zz @ p[0] + p[1][0], None
        pre = zz @ p[0] + p[1]
        h = np.tanh(pre) if act == "tanh" else np.maximum(pre, 0.0)
        return h @ p[2] + p[3][0], h

    for step in range(1, steps + 1):
        s, h = forward(params, z)
        s = np.where(mask, s, -1e9)
        diff = s[:, :, None] - s[:, None, :]
        w = base
        if lam:
            rank = np.argsort(np.argsort(-s, axis=1, kind="stable"), axis=1)
            d = np.where(rank < 10, discount[np.minimum(rank, DEPTH - 1)], 0.0)
            delta = np.abs(y[:, :, None] - y[:, None, :]) * np.abs(d[:, :, None] - d[:, None, :])
            w = pairs * delta * (qw / np.maximum(ideal, 1e-9))[:, None, None]
        coef = np.where(pairs, -w / (1.0 + np.exp(np.clip(diff, -30, 30))), 0.0)
        ds = coef.sum(axis=2) - coef.sum(axis=1)
        if not hidden:
            grads = [np.einsum("qn,qnf->f", ds, z) + 2 * l2 * params[0], np.zeros(1)]
        else:
            assert h is not None
            dh = ds[..., None] * params[2]
            dpre = dh * ((1 - h * h) if act == "tanh" else (h > 0))
            grads = [np.einsum("qnh,qnf->fh", dpre, z) + 2 * l2 * params[0], dpre.sum(axis=(0, 1)),
                     np.einsum("qn,qnh->h", ds, h) + 2 * l2 * params[2], np.zeros(1)]
        for k, (p, g) in enumerate(zip(params, grads)):
            m, v = moments[k]
            m[:] = 0.9 * m + 0.1 * g
            v[:] = 0.999 * v + 0.001 * g * g
            p -= rate * (m / (1 - 0.9 ** step)) / (np.sqrt(v / (1 - 0.999 ** step)) + 1e-8)

    def score(t: Table) -> np.ndarray:
        zz = (expand(t.x, relative) - mean) / scale
        return forward(params, zz)[0]

    score.model = lambda: exported(params, mean, scale, relative or act != "tanh")  # type: ignore[attr-defined]
    return score


def exported(params: list[np.ndarray], mean: np.ndarray, scale: np.ndarray, unsupported: bool) -> dict[str, object]:
    """The model in the shipped file's format (adapters/rerank/learned.py: plain features, tanh between layers)."""
    from adapters.rerank.learned import FORMAT
    from domain.search.rerank import FEATURES

    if unsupported:
        raise SystemExit("adapters/rerank/learned.py reads neither relative features nor relu layers")
    layers = ([{"weights": params[0].T.tolist(), "bias": params[1].tolist()},
               {"weights": [params[2].tolist()], "bias": params[3].tolist()}] if len(params) == 4
              else [{"weights": [params[0].tolist()], "bias": params[1].tolist()}])
    return {"format": FORMAT, "features": list(FEATURES), "mean": mean.tolist(), "scale": scale.tolist(),
            "layers": layers}


FORMS: dict[str, Callable[[list[Table]], Callable[[Table], np.ndarray]]] = {
    "linear pairwise": partial(fit),
    "linear lambda": partial(fit, lam=True),
    "linear pairwise relative": partial(fit, relative=True),
    "mlp16 tanh pairwise": partial(fit, hidden=16),
    "mlp16 tanh lambda": partial(fit, hidden=16, lam=True),
    "mlp16 tanh pairwise relative": partial(fit, hidden=16, relative=True),
    "mlp16 tanh lambda relative": partial(fit, hidden=16, lam=True, relative=True),
    "mlp32 relu lambda relative": partial(fit, hidden=32, act="relu", lam=True, relative=True),
    "mlp16 tanh pairwise l2=1e-2 slow": partial(fit, hidden=16, l2=1e-2, rate=0.01),
    "mlp16 relu lambda l2=1e-2 slow": partial(fit, hidden=16, act="relu", lam=True, l2=1e-2, rate=0.01),
    "linear lambda relative": partial(fit, lam=True, relative=True),
    "mlp16 tanh lambda l2=1e-2 slow": partial(fit, hidden=16, lam=True, l2=1e-2, rate=0.01),
}
