"""The gathering wrapper on a fake model: concurrent callers share calls, each gets its own vectors
in order or its own error, calls stay within their bounds, queries and documents stay apart."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from adapters.embedders.gather import GatheringEmbedder
from adapters.memory.basics import HashEmbedder
from domain.errors import EmbeddingError
from domain.model import Vector


class GatedModel(HashEmbedder):
    """A fake model whose first call waits for ``release`` (so others queue meanwhile), that refuses
    any call holding a text with "bad" in it, and embeds queries in batches when asked to."""

    def __init__(self, queries: bool = True) -> None:
        super().__init__(max_tokens=512)  # texts past 64 tokens (~250 characters) are long documents
        self.release = threading.Event()
        self.entered = threading.Event()
        self.document_calls: list[list[str]] = []
        self.query_calls: list[list[str]] = []
        if not queries:
            self.embed_queries = None  # type: ignore[assignment]

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        return self._call(self.document_calls, texts, self._vector)

    def embed_queries(self, texts: Sequence[str]) -> list[Vector]:  # type: ignore[no-redef]
        return self._call(self.query_calls, texts, lambda t: [-x for x in self._vector(t)])

    def _call(self, calls: list[list[str]], texts: Sequence[str], vector: Callable[[str], Vector]) -> list[Vector]:
        calls.append(list(texts))
        if len(calls) == 1:
            self.entered.set()
            assert self.release.wait(30)
        if any("bad" in text for text in texts):
            raise EmbeddingError("Failed to generate embeddings: the model refused a bad text")
        return [vector(text) for text in texts]


class Caller(threading.Thread):
    def __init__(self, action: Callable[[], Any]) -> None:
        super().__init__(daemon=True)
        self.action, self.result, self.error = action, None, None
        self.start()

    def run(self) -> None:
        try:
            self.result = self.action()
        except Exception as exc:  # noqa: BLE001 - the test reads it
            self.error = exc

    def outcome(self) -> Any:
        self.join(30)
        assert not self.is_alive()
        return self.result if self.error is None else self.error


def waiting_texts(embedder: GatheringEmbedder, line: str = "_short") -> int:
    return sum(len(r.texts) - r.taken for r in getattr(embedder, line)._waiting)


def queue_behind_first(embedder: GatheringEmbedder, model: GatedModel, first: Callable[[], Any],
                       others: list[Callable[[], Any]], line: str = "_short") -> tuple[Caller, list[Caller]]:
    """``first`` runs and holds the model; ``others`` queue behind it; then the model is released."""
    leader = Caller(first)
    assert model.entered.wait(30)
    callers = []
    for action in others:
        before = waiting_texts(embedder, line)
        callers.append(Caller(action))
        while waiting_texts(embedder, line) == before:  # this caller has queued
            time.sleep(0.001)
    model.release.set()
    return leader, callers


def test_a_lone_caller_gets_one_call_with_its_texts_in_order() -> None:
    model = GatedModel()
    model.release.set()
    embedder = GatheringEmbedder(model)
    texts = ["one apple", "two pears", "three plums"]
    assert embedder.embed_documents(texts) == [model._vector(t) for t in texts]
    assert model.document_calls == [texts]
    assert embedder.embed_documents([]) == []


def test_callers_who_wait_for_the_model_share_its_next_call() -> None:
    model = GatedModel()
    embedder = GatheringEmbedder(model)
    others = [[f"memory {n}"] if n % 2 else [f"turn {n} a", f"turn {n} b"] for n in range(6)]
    leader, callers = queue_behind_first(embedder, model, lambda: embedder.embed_documents(["first"]),
                                         [lambda texts=texts: embedder.embed_documents(texts) for texts in others])
    assert leader.outcome() == [model._vector("first")]
    for texts, caller in zip(others, callers, strict=True):
        assert caller.outcome() == [model._vector(t) for t in texts]
    assert len(model.document_calls) == 2
    assert sorted(model.document_calls[1]) == sorted(t for texts in others for t in texts)


def test_queries_are_gathered_apart_from_documents() -> None:
    model = GatedModel()
    embedder = GatheringEmbedder(model)
    leader, callers = queue_behind_first(
        embedder, model, lambda: embedder.embed_query("first question"),
        [lambda n=n: embedder.embed_query(f"question {n}") for n in range(4)], line="_queries")
    document = embedder.embed_documents(["a document"])
    assert leader.outcome() == [-x for x in model._vector("first question")]
    for n, caller in enumerate(callers):
        assert caller.outcome() == [-x for x in model._vector(f"question {n}")]
    assert len(model.query_calls) == 2 and document == [model._vector("a document")]
    assert model.document_calls == [["a document"]]


def test_without_batched_queries_a_query_goes_straight_to_the_model() -> None:
    model = GatedModel(queries=False)
    model.release.set()
    embedder = GatheringEmbedder(model)
    assert embedder.embed_query("alone") == model._vector("alone")  # HashEmbedder's own embed_query
    assert model.query_calls == [] and embedder.describe()["gathering"]["queries"] is False


def test_a_failed_text_fails_its_own_caller_only() -> None:
    model = GatedModel()
    embedder = GatheringEmbedder(model)
    others = [["fine one"], ["fine two", "bad apple", "fine three"], ["fine four"]]
    leader, callers = queue_behind_first(embedder, model, lambda: embedder.embed_documents(["first"]),
                                         [lambda texts=texts: embedder.embed_documents(texts) for texts in others])
    assert leader.outcome() == [model._vector("first")]
    good, bad, other = (caller.outcome() for caller in callers)
    assert good == [model._vector("fine one")] and other == [model._vector("fine four")]
    assert isinstance(bad, EmbeddingError) and "bad text" in str(bad)


def test_a_lone_callers_failure_is_its_own() -> None:
    model = GatedModel()
    model.release.set()
    embedder = GatheringEmbedder(model)
    with pytest.raises(EmbeddingError, match="bad text"):
        embedder.embed_documents(["bad one", "good one"])
    assert embedder.embed_documents(["good one"]) == [model._vector("good one")]  # nothing left over


def test_a_model_answering_the_wrong_count_is_an_error_not_a_shifted_result() -> None:
    class Short(HashEmbedder):
        def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
            return super().embed_documents(texts)[:-1]

    with pytest.raises(EmbeddingError, match="returned 1 vectors for 2 texts"):
        GatheringEmbedder(Short()).embed_documents(["a", "b"])


def test_a_short_document_does_not_wait_behind_a_long_call() -> None:
    model = GatedModel()
    embedder = GatheringEmbedder(model)
    long_call = Caller(lambda: embedder.embed_documents(["long " + "x" * 400]))
    assert model.entered.wait(30)
    assert embedder.embed_documents(["a short memory"]) == [model._vector("a short memory")]
    assert long_call.is_alive()  # still held in the model
    model.release.set()
    assert long_call.outcome() == [model._vector("long " + "x" * 400)]


def test_long_calls_keep_within_their_token_budget() -> None:
    model = GatedModel()
    embedder = GatheringEmbedder(model, max_tokens=250)  # two ~100-token texts a call
    first, five, three = (["first " + "x" * 400], [f"long {n} " + "x" * 400 for n in range(5)],
                          [f"other {n} " + "y" * 400 for n in range(3)])
    leader, callers = queue_behind_first(embedder, model, lambda: embedder.embed_documents(first),
                                         [lambda t=t: embedder.embed_documents(t) for t in (five, three)],
                                         line="_documents")
    assert leader.outcome() == [model._vector(t) for t in first]
    assert callers[0].outcome() == [model._vector(t) for t in five]
    assert callers[1].outcome() == [model._vector(t) for t in three]
    later = model.document_calls[1:]
    assert all(len(call) <= 2 for call in later) and len(later) == 4
    assert sorted(t for call in later for t in call) == sorted(five + three)


def test_short_calls_take_the_shortest_texts_first_up_to_max_texts() -> None:
    model = GatedModel()
    embedder = GatheringEmbedder(model, max_texts=4)
    short = [["s" * 4 * (30 - n)] for n in range(9)]  # the later, the shorter (by four characters: a token)
    leader, callers = queue_behind_first(embedder, model, lambda: embedder.embed_documents(["first"]),
                                         [lambda t=t: embedder.embed_documents(t) for t in short])
    leader.outcome()
    for texts, caller in zip(short, callers, strict=True):
        assert caller.outcome() == [model._vector(t) for t in texts]
    later = model.document_calls[1:]
    assert [len(call) for call in later] == [4, 4, 1]
    assert later[0] == [t for texts in short[:-5:-1] for t in texts]  # the four shortest


def test_a_longer_request_is_not_passed_over_for_ever() -> None:
    model = GatedModel()
    embedder = GatheringEmbedder(model, max_texts=2)
    longer = ["longer " + "x" * 200]  # still a short document: ~52 tokens
    short = [[f"short {n}"] for n in range(10)]
    leader, callers = queue_behind_first(
        embedder, model, lambda: embedder.embed_documents(["first"]),
        [lambda: embedder.embed_documents(longer)] + [lambda t=t: embedder.embed_documents(t) for t in short])
    leader.outcome()
    [caller.outcome() for caller in callers]
    turn = next(n for n, call in enumerate(model.document_calls[1:]) if longer[0] in call)
    assert turn == 2  # passed over twice, then first, though shorter texts were still waiting


def test_the_local_model_is_gathered_when_turned_on(tmp_path) -> None:
    from config.embedders import gathered
    from config.settings import Settings

    model = HashEmbedder()
    wrapped = gathered(model, Settings(memtrove_data_dir=tmp_path, memtrove_local_call_tokens=512))
    assert isinstance(wrapped, GatheringEmbedder) and wrapped.describe()["gathering"]["max_tokens"] == 512
    assert gathered(model, Settings(memtrove_data_dir=tmp_path)) is model  # off by default
