"""The rerank stage's candidates: the real search run in this process over the stores bench/rerank_data.py built.

Each question goes through the use case a client's call reaches (``hybrid_search`` with the conversation as
filter for LoCoMo turns, ``memory_search`` for its facts, ``hybrid_search`` for the passages), with the stage's
entry point wrapped: what it is given (the fused candidates, each signal's ranking, the query's evidence) is kept,
and the fused order goes on unchanged. Every candidate is labelled (does it answer the question), so that any
model can be scored offline exactly as the stage would order the same candidates (``Question.ranked``).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import domain.search.retrieve as retrieve_module
from domain.model import Hit
from domain.search.rerank import DEPTH, Evidence, rerank
from domain.search.retrieve import best_per_artifact


@dataclass
class Question:
    """One question's candidates, fused best first, as the stage saw them, and what answers it."""

    dataset: str  # "turns", "facts", "passages"
    group: str  # the conversation, or the passages split
    text: str
    category: int
    evidence: tuple[str, ...]  # what recall counts (turns' dia_ids; for passages: the answer's id "answer")
    hits: list[Hit]
    ranked: dict[str, list[Hit]]
    words: tuple[str, ...]
    idf: dict[str, float]
    spans: tuple[tuple[float, float], ...]
    cap: int
    names: dict[str, list[str]] = field(default_factory=dict)  # hit id -> the evidence it names

    @property
    def evidence_of(self) -> Evidence:
        return Evidence(self.words, self.idf, self.spans)

    def labels(self) -> list[float]:
        return [float(bool(set(self.names.get(h.id, ())) & set(self.evidence))) for h in self.hits[:DEPTH]]

    def ranked_ids(self, scorer: Any | None, limit: int = 10) -> list[str]:
        """The ids a search returns: the stage's order (by ``scorer``; None: the fused order), cap, limit."""
        hits = rerank(self.text, self.hits, self.ranked, self.evidence_of, scorer) if scorer else self.hits
        return [h.id for h in best_per_artifact(hits, self.cap)[:limit]]


@contextmanager
def captured() -> Iterator[list[tuple[str, list[Hit], dict[str, list[Hit]], Evidence]]]:
    """What every search in the block hands the rerank stage; the stage itself leaves the fused order."""
    seen: list[tuple[str, list[Hit], dict[str, list[Hit]], Evidence]] = []
    original = retrieve_module.rerank

    def keep(query: str, hits: list[Hit], ranked: Any, evidence: Evidence, *_: Any, **__: Any) -> list[Hit]:
        slim = [h if i < DEPTH else Hit(h.id, h.type, h.score, "", {k: v for k, v in h.fields.items()
                                                                    if k in ("artifact_id", "signals")})
                for i, h in enumerate(hits)]
        seen.append((query, slim, {s: [Hit(h.id, h.type, h.score, "") for h in found] for s, found in ranked.items()},
                     evidence))
        return hits

    retrieve_module.rerank = keep  # type: ignore[assignment]
    try:
        yield seen
    finally:
        retrieve_module.rerank = original  # type: ignore[assignment]


def application(folder: Path) -> Any:
    """The server's composition root over a kept store (SQLite + embedded Chroma + the local model)."""
    from config.container import Application
    from config.settings import Settings

    return Application(settings=Settings(memtrove_data_dir=folder))


Asked = tuple[str, int, tuple[str, ...], Callable[[str], list[str]]]  # text, category, evidence, hit id -> names


def ask(search: Callable[[str], object], asked: Sequence[Asked], dataset: str, group: str, cap: int) -> list[Question]:
    """Each question searched once; its candidates as the stage saw them."""
    questions: list[Question] = []
    for text, category, evidence, names in asked:
        with captured() as seen:
            search(text)
        if not seen:
            continue  # nothing found at all
        query, hits, ranked, ev = seen[-1]
        questions.append(Question(dataset, group, query, category, evidence, hits, ranked, ev.words, dict(ev.idf),
                                  tuple(ev.spans), cap, {h.id: names(h.id) for h in hits}))
    return questions


def cached(path: Path, make: Callable[[], list[Question]]) -> list[Question]:
    if path.is_file():
        return pickle.loads(path.read_bytes())  # noqa: S301 (our own cache, written below)
    found = make()
    path.write_bytes(pickle.dumps(found))
    return found


def turns(root: Path, conversations: Sequence[Any]) -> list[Question]:
    """LoCoMo questions over the turns store, each filtered to its conversation (as bench/turns.py asks)."""
    import json

    from domain.search.usecases import SearchRequest

    index_of = json.loads((root / "turns" / "turn-ids.json").read_text(encoding="utf-8"))
    app = application(root / "turns")
    search, cap = app.use_cases.hybrid_search(), app.use_cases.retrieval().per_artifact
    found: list[Question] = []
    for conv in conversations:
        asked = [(q.text[:500], q.category, q.evidence, lambda i: [index_of[i]] if i in index_of else [])
                 for q in conv.questions]
        found += ask(lambda text: search(SearchRequest(query=text, limit=10, include_history=True,
                                                       filters={"conversation_id": conv.conversation_id})),
                     asked, "turns", conv.sample_id, cap)
    app.shutdown_resources()
    return found


def facts(root: Path, conversations: Sequence[Any]) -> list[Question]:
    """LoCoMo questions over each conversation's facts store (``memory_search``, as bench/facts.py asks)."""
    import json

    from domain.search.usecases import SearchMemoriesRequest

    found: list[Question] = []
    for conv in conversations:
        folder = root / "facts" / conv.sample_id
        points = json.loads((folder / "fact-ids.json").read_text(encoding="utf-8"))
        app = application(folder)
        search = app.use_cases.search_memories()
        asked = [(q.text[:500], q.category, q.evidence, lambda i: list(points.get(i, []))) for q in conv.questions]
        found += ask(lambda text: search(SearchMemoriesRequest(query=text, limit=10)), asked, "facts", conv.sample_id,
                     app.use_cases.retrieval().per_artifact)
        app.shutdown_resources()
    return found


def passages(root: Path, questions: Sequence[Any]) -> list[Question]:
    """The passages set's questions (each split its group) over its documents (``hybrid_search``, limit 10)."""
    import json

    from bench.passages import answers
    from domain.search.usecases import SearchRequest

    text_of = json.loads((root / "passages" / "passage-ids.json").read_text(encoding="utf-8"))["text_of"]
    app = application(root / "passages")
    search, cap = app.use_cases.hybrid_search(), app.use_cases.retrieval().per_artifact
    found: list[Question] = []
    for q in questions:
        namer = (lambda answer: lambda i: ["answer"] if answers(text_of.get(i, ""), answer) else [])(q.answer)
        found += ask(lambda text: search(SearchRequest(query=text, limit=10)), [(q.text[:500], 0, ("answer",), namer)],
                     "passages", q.split, cap)
    app.shutdown_resources()
    return found
