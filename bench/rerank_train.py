"""Train the learned rerank stage on DEV, check it where it was not trained, and write the shipped model.

    python -m bench.rerank_train [--root /tmp/memtrove-rerank] [--write]

DEV is the five LoCoMo conversations (their turns, and their observations as memories) and the passages set's
dev split. The stores are built once by bench/rerank_data.py (real ``memtrove serve``: SQLite, embedded Chroma,
the local MiniLM model); the questions' candidates are collected once by the real search in this process
(bench/rerank_collect.py) and cached beside the stores. Then:
  - leave one out: five models, each trained without one conversation (its turns and facts) and without a fifth
    of the passages dev questions, each scoring only what it did not see; the figures gather the five;
  - DEV: the model trained on all of DEV, scored on DEV (what it was trained on);
  - the passages test split (documents and questions never trained or tuned on): the model trained on all DEV.
Each beside the fused order (the stage off), on the same candidates: the stage's own code orders them
(domain/search/rerank.py) and the per-artifact cap and the limit of 10 are applied as a search does.
The model's form (linear or one hidden layer, its width, its l2) is chosen by the leave-one-out figures alone.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.common import recall_at
from bench.rerank_collect import Question, cached
from bench.rerank_model import ArrayScorer, fit

ROOT = Path("/tmp/memtrove-rerank")
SHIPPED = Path(__file__).resolve().parents[1] / "adapters" / "rerank" / "models" / "rerank-v1.json"
# Other forms (LambdaRank weighting, one hidden layer, per-question relative features, boosted trees) are compared
# on the same candidates by bench/rerank_compare.py. None is clearly better: the best (linear, LambdaRank, relative
# features) gains 0.001-0.015 on LOO turns and facts, less than optimisation details alone move a linear model
# (for a linear model a feature minus the question's best ranks as the feature itself), and it put a long chunk
# above the only memory holding "heronpond" (tests/e2e/test_mixed_store_ranking.py). Not shipped.
CHOICES = [{"hidden": 0, "l2": 1e-3}]
FOLDS = 5
# What picks the model's form (leave-one-out figures only): the issue's targets.
AIMS = ("turns R@5", "turns R@10", "facts R@10", "passages dev hit@5", "passages dev MRR@10")


def collect(root: Path) -> list[Question]:
    from bench import rerank_collect as collecting
    from bench.passages import QUESTIONS, load_questions
    from bench.rerank_data import LOCOMO
    from bench.turns import load

    conversations = load(LOCOMO, ())
    _, asked = load_questions(QUESTIONS)
    return (cached(root / "cand-turns.pkl", lambda: collecting.turns(root, conversations))
            + cached(root / "cand-facts.pkl", lambda: collecting.facts(root, conversations))
            + (cached(root / "cand-passages.pkl", lambda: collecting.passages(root, asked))
               if (root / "passages" / "passage-ids.json").is_file() else []))


def figures(questions: Sequence[Question], scorer: Any | None) -> dict[str, float]:
    """turns R@1/5/10, facts R@10, passages hit@1/5 and MRR@10 (each only over the questions given)."""
    sums: dict[str, list[float]] = {}
    for q in questions:
        ids = q.ranked_ids(scorer)
        named = [frozenset(q.names.get(i, ())) for i in ids]
        if q.dataset == "passages":
            first = next((r for r, n in enumerate(named, 1) if "answer" in n), None)
            for k in (1, 5):
                sums.setdefault(f"passages {q.group} hit@{k}", []).append(float(first is not None and first <= k))
            sums.setdefault(f"passages {q.group} MRR@10", []).append(1.0 / first if first else 0.0)
            continue
        for k in ((1, 5, 10) if q.dataset == "turns" else (10,)):
            sums.setdefault(f"{q.dataset} R@{k}", []).append(recall_at(named, q.evidence, k))
    return {name: round(sum(v) / len(v), 4) for name, v in sorted(sums.items())}


def _passage_fold(q: Question) -> int:
    # Fixed folds by the question's text (stable across runs: a sum of its characters' codes).
    return sum(map(ord, q.text)) % FOLDS


def leave_one_out(dev: list[Question], folds: list[int], choice: dict[str, Any],
                  cache: dict[int, Any]) -> list[tuple[Question, Any]]:
    scored: list[tuple[Question, Any]] = []
    for held in range(FOLDS):
        model = fit([q for q, f in zip(dev, folds) if f != held], cache=cache, **choice)
        scorer = ArrayScorer(model)
        scored += [(q, scorer) for q, f in zip(dev, folds) if f == held]
    return scored


def gathered(pairs: list[tuple[Question, Any]]) -> dict[str, float]:
    """Figures where each question is ordered by its own scorer."""
    sums: dict[str, list[tuple[float, int]]] = {}
    for q, scorer in pairs:
        for name, value in figures([q], scorer).items():
            sums.setdefault(name, []).append((value, 1))
    return {name: round(sum(v for v, _ in values) / len(values), 4) for name, values in sorted(sums.items())}


def main(argv: Sequence[str] | None = None, say: Callable[[str], None] = print) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.rerank_train")
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--write", action="store_true", help=f"write the model trained on all DEV to {SHIPPED}")
    parser.add_argument("--report", type=Path, default=None)
    args = parser.parse_args(argv)
    questions = collect(args.root)
    conversations = sorted({q.group for q in questions if q.dataset == "turns"})
    dev = [q for q in questions if not (q.dataset == "passages" and q.group == "test")]
    test = [q for q in questions if q.dataset == "passages" and q.group == "test"]
    folds = [_passage_fold(q) if q.dataset == "passages" else conversations.index(q.group) for q in dev]
    say(f"{len(dev)} DEV questions ({', '.join(conversations)} and {sum(q.dataset == 'passages' for q in dev)} "
        f"passages dev), {len(test)} passages test")
    cache: dict[int, Any] = {}
    off = {**figures(dev, None), **figures(test, None)}
    report: dict[str, Any] = {"off": off, "choices": {}}
    best: tuple[float, dict[str, Any]] | None = None
    for choice in CHOICES:
        loo = gathered(leave_one_out(dev, folds, choice, cache))
        aimed = [loo[n] for n in AIMS if n in loo]
        aim = sum(aimed) / len(aimed)
        report["choices"][json.dumps(choice)] = {"leave-one-out": loo, "aim": round(aim, 4)}
        say(f"{choice}: leave-one-out {loo} (aim {aim:.4f})")
        if best is None or aim > best[0]:
            best = (aim, choice)
    assert best is not None
    chosen = best[1]
    model = fit(dev, cache=cache, **chosen)
    scorer = ArrayScorer(model)
    report["chosen"] = chosen
    report["on"] = {"dev": figures(dev, scorer), "leave-one-out": report["choices"][json.dumps(chosen)]["leave-one-out"],
                    "test": figures(test, scorer)}
    say(table(report))
    if args.write:
        model["trained_on"] = {"questions": len(dev), "conversations": conversations, "passages": "dev split",
                               "leave_one_out": report["on"]["leave-one-out"]}
        SHIPPED.parent.mkdir(parents=True, exist_ok=True)
        SHIPPED.write_text(json.dumps(model, separators=(",", ":")) + "\n", encoding="utf-8")
        say(f"wrote {SHIPPED}")
    if args.report:
        args.report.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


def table(report: dict[str, Any]) -> str:
    names = [n for n in report["off"]]
    on = {**report["on"]["dev"], **report["on"]["test"]}
    loo = report["on"]["leave-one-out"]
    # "all DEV": the model trained on all DEV (in-sample on DEV rows, never-seen on the passages test rows);
    # "LOO": each question ordered by the model trained without its conversation (or passages fold).
    lines = [f"{'figure':<26}{'off':>8}{'all DEV':>10}{'LOO':>10}", "-" * 54]
    for n in names:
        lines.append(f"{n:<26}{report['off'][n]:>8.3f}{on.get(n, float('nan')):>10.3f}"
                     + (f"{loo[n]:>10.3f}" if n in loo else f"{'-':>10}"))
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
