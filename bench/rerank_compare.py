"""Compare model forms for the learned rerank stage on the SAME collected candidates, by leave-one-out only.

    python -m bench.rerank_compare [--root /tmp/memtrove-rerank] [--only NAME ...]
    python -m bench.rerank_compare --only "linear lambda" --write /tmp/rerank-lambda.json  (a model learned.py loads)

Each question's features (domain/search/rerank.py, exactly what the stage computes) are read once and cached
beside the candidates (tables-<hash of rerank.py>.pkl). Each form is judged as bench/rerank_train.py judges the shipped one: the
five leave-one-out models (a conversation's turns and facts, a fifth of the passages dev questions held out),
and the passages test split scored by the model trained on all DEV (never trained or tuned on). A question's
order is the stage's (its top ``DEPTH`` by score, ties in fused order), then the per-artifact cap and the limit
of 10, as a search does.
"""

from __future__ import annotations

import argparse
import pickle
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.common import recall_at
from bench.rerank_train import FOLDS, ROOT, _passage_fold, collect

Fit = Callable[[list["Table"]], Callable[["Table"], np.ndarray]]  # trained on tables -> scores a table


@dataclass
class Table:
    """One question's candidates as numbers: features (DEPTH rows), labels, and what a search's cut needs."""

    dataset: str
    group: str
    fold: int
    x: np.ndarray
    y: np.ndarray
    keys: list[str | None]  # every fused hit's artifact (chunks, artifacts) for the cap; None: no cap
    names: list[frozenset[str]]  # every fused hit's evidence names
    evidence: tuple[str, ...]
    cap: int


def tables(root: Path) -> list[Table]:
    """Every collected question's table; cached under a name of the stage's source (new features: new cache)."""
    import hashlib

    import domain.search.rerank as stage

    digest = hashlib.sha256(Path(stage.__file__).read_bytes()).hexdigest()[:12]
    path = root / f"tables-{digest}.pkl"
    if path.is_file():
        return pickle.loads(path.read_bytes())
    from bench.rerank_model import table

    questions = collect(root)
    conversations = sorted({q.group for q in questions if q.dataset == "turns"})
    found = []
    for q in questions:
        x, y = table(q)
        fold = _passage_fold(q) if q.dataset == "passages" else conversations.index(q.group)
        keys = [h.fields.get("artifact_id") if h.type in ("artifact", "chunk") else None for h in q.hits]
        found.append(Table(q.dataset, q.group, fold, x, y, keys, [frozenset(q.names.get(h.id, ())) for h in q.hits],
                           q.evidence, q.cap))
    path.write_bytes(pickle.dumps(found))
    return found


def cut(t: Table, scores: np.ndarray | None, limit: int = 10) -> list[frozenset[str]]:
    """The names of what the search returns when the stage orders the top candidates by ``scores``."""
    n = len(t.y)
    order = list(range(n)) if scores is None else sorted(range(n), key=lambda i: (-scores[i], i))
    order += list(range(n, len(t.names)))
    seen: dict[str, int] = {}
    kept: list[frozenset[str]] = []
    for i in order:
        key = t.keys[i]
        if key is not None:
            if seen.get(key, 0) >= t.cap:
                continue
            seen[key] = seen.get(key, 0) + 1
        kept.append(t.names[i])
        if len(kept) == limit:
            break
    return kept


def figures(scored: Sequence[tuple[Table, np.ndarray | None]]) -> dict[str, float]:
    sums: dict[str, list[float]] = {}
    for t, scores in scored:
        named = cut(t, scores)
        if t.dataset == "passages":
            first = next((r for r, n in enumerate(named, 1) if "answer" in n), None)
            for k in (1, 5):
                sums.setdefault(f"passages {t.group} hit@{k}", []).append(float(first is not None and first <= k))
            sums.setdefault(f"passages {t.group} MRR@10", []).append(1.0 / first if first else 0.0)
            continue
        for k in ((1, 5, 10) if t.dataset == "turns" else (10,)):
            sums.setdefault(f"{t.dataset} R@{k}", []).append(recall_at(named, t.evidence, k))
    return {name: round(sum(v) / len(v), 4) for name, v in sorted(sums.items())}


def judge(all_tables: list[Table], fit: Fit) -> dict[str, float]:
    """Leave-one-out over DEV, and the passages test split by the model trained on all DEV."""
    dev = [t for t in all_tables if not (t.dataset == "passages" and t.group == "test")]
    test = [t for t in all_tables if t.dataset == "passages" and t.group == "test"]
    scored: list[tuple[Table, np.ndarray | None]] = []
    for held in range(FOLDS):
        score = fit([t for t in dev if t.fold != held])
        scored += [(t, score(t)) for t in dev if t.fold == held]
    score = fit(dev)
    return {**figures(scored), **figures([(t, score(t)) for t in test])}


SHOWN = ("turns R@1", "turns R@5", "turns R@10", "facts R@10", "passages dev hit@5", "passages dev MRR@10",
         "passages test hit@5", "passages test MRR@10")


def line(name: str, figs: dict[str, float]) -> str:
    return f"{name:<34}" + "".join(f"{figs.get(n, float('nan')):>9.3f}" for n in SHOWN)


def header() -> str:
    short = [n.replace("passages ", "p").replace("turns ", "t").replace("facts ", "f") for n in SHOWN]
    return f"{'form':<34}" + "".join(f"{n[-9:]:>9}" for n in short)


def main(argv: Sequence[str] | None = None, say: Callable[[str], None] = print) -> int:
    from bench.rerank_forms import FORMS
    from bench.rerank_trees import TREE_FORMS

    parser = argparse.ArgumentParser(prog="python -m bench.rerank_compare")
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--write", type=Path, default=None,
                        help="write the model of the one form named by --only, trained on all DEV, to this file")
    args = parser.parse_args(argv)
    found = tables(args.root)
    say(header())
    say(line("off (fused order)", figures([(t, None) for t in found])))
    forms = {**FORMS, **TREE_FORMS}
    for name, fit in forms.items():
        if args.only and name not in args.only:
            continue
        figs = judge(found, fit)
        say(line(name, figs))
        if args.write and args.only == [name]:
            import json

            dev = [t for t in found if not (t.dataset == "passages" and t.group == "test")]
            model = fit(dev).model()  # type: ignore[attr-defined]
            model["trained_on"] = {"questions": len(dev), "form": name, "passages": "dev split",
                                   "leave_one_out_and_test": figs}
            args.write.write_text(json.dumps(model, separators=(",", ":")) + "\n", encoding="utf-8")
            say(f"wrote {args.write}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
