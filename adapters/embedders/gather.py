"""Concurrent requests to one embedder, embedded together: while a model call runs, the texts that
arrive wait, and the next call takes many of them at once. Queries, short documents (a memory, a
turn) and long ones (an artifact's chunks) each have a line of their own: a model may embed queries
and documents differently, and a short text must not wait behind a long document's call.

There is no fixed delay: a caller who finds its line idle calls the model at once, so a lone caller
waits for nothing; only callers who would have queued for the model anyway are gathered. A call's
size is bounded twice: by ``max_texts`` and by ``max_tokens`` of padded input (texts in a call are
padded to its longest, estimated here from characters); the shortest waiting texts go first, and a
request passed over twice goes first in the next call, so a long document still moves on.

The calling thread does the work: whoever finds the line free runs the next call, for whichever
requests it serves, and hands back. Each caller gets its own vectors, in order, or the error of its
own texts: a failed call that served several requests is run again request by request, so one
request's bad text fails only that request.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from domain.errors import EmbeddingError
from domain.model import EmbeddingProfile, Vector
from domain.ports import Embedder

PATIENCE = 2  # calls a request may be passed over before it goes first
CHARS_PER_TOKEN = 4
SHORT = 64  # estimated tokens: a request whose texts are all this short goes to the short documents' line


def estimate(text: str, ceiling: int) -> int:
    """Tokens the model reads for ``text``, roughly (it reads ``ceiling`` at most)."""
    return min(ceiling, 2 + len(text) // CHARS_PER_TOKEN)


@dataclass(eq=False)
class Request:
    """One caller's texts: how many a call has taken, their vectors so far, or its error."""

    texts: Sequence[str]
    sizes: list[int]
    vectors: list[Vector | None] = field(init=False)
    taken: int = 0
    filled: int = 0
    passed_over: int = 0
    error: BaseException | None = None

    def __post_init__(self) -> None:
        self.vectors = [None] * len(self.texts)

    @property
    def done(self) -> bool:
        return self.error is not None or self.filled == len(self.texts)


class Line:
    """Requests of one kind, served one model call at a time."""

    def __init__(self, run: Callable[[list[str]], list[Vector]], max_texts: int, max_tokens: int,
                 ceiling: int) -> None:
        self._run = run
        self.max_texts = max(1, max_texts)
        self.max_tokens = max(1, max_tokens)
        self._ceiling = ceiling  # tokens the model reads at most: a longer text costs no more
        self._changed = threading.Condition()
        self._waiting: list[Request] = []  # requests with texts no call has taken yet, oldest first
        self._busy = False
        self.calls = 0

    def embed(self, texts: Sequence[str], sizes: list[int] | None = None) -> list[Vector]:
        if not texts:
            return []
        request = Request(texts, sizes or [estimate(t, self._ceiling) for t in texts])
        with self._changed:
            self._waiting.append(request)
        while True:
            with self._changed:
                while self._busy and not request.done:
                    self._changed.wait()
                if request.done:
                    break
                self._busy = True  # while no call runs, every text not filled is waiting: some to take
                batch = self._take()
            try:
                self._call(batch)
            finally:
                with self._changed:
                    self._busy = False
                    self._changed.notify_all()
        if request.error is not None:
            raise request.error
        return request.vectors  # type: ignore[return-value] - every one filled

    def _take(self) -> list[tuple[Request, int]]:
        """The next call's texts: long-passed-over requests first, then the shortest texts, one per
        request per round, while the padded size stays within the budget (at least one text)."""
        overdue = [r for r in self._waiting if r.passed_over >= PATIENCE]
        rest = sorted((r for r in self._waiting if r.passed_over < PATIENCE), key=lambda r: r.sizes[r.taken])
        batch: list[tuple[Request, int]] = []
        longest, added = 0, True
        while added and len(batch) < self.max_texts:
            added = False
            for request in overdue + rest:
                if request.taken == len(request.texts) or len(batch) == self.max_texts:
                    continue
                size = request.sizes[request.taken]
                if batch and (len(batch) + 1) * max(longest, size) > self.max_tokens:
                    continue
                batch.append((request, request.taken))
                request.taken += 1
                longest, added = max(longest, size), True
        served = {id(r) for r, _ in batch}
        for request in self._waiting:
            request.passed_over = 0 if id(request) in served else request.passed_over + 1
        self._waiting = [r for r in self._waiting if r.taken < len(r.texts)]
        return batch

    def _call(self, batch: list[tuple[Request, int]]) -> None:
        try:
            self._fill(batch)
        except Exception as exc:  # noqa: BLE001 - handed to the callers whose texts failed
            requests = list(dict.fromkeys(r for r, _ in batch))
            if len(requests) == 1:
                self._fail(requests[0], exc)
                return
            for request in requests:  # whose text failed? each alone, as if it had called alone
                try:
                    self._fill([(r, i) for r, i in batch if r is request])
                except Exception as alone:  # noqa: BLE001
                    self._fail(request, alone)
        except BaseException as exc:  # an interrupt: no caller of this call may wait for ever
            for request, _ in batch:
                self._fail(request, exc)
            raise

    def _fill(self, batch: list[tuple[Request, int]]) -> None:
        self.calls += 1
        vectors = self._run([r.texts[i] for r, i in batch])
        if len(vectors) != len(batch):
            raise EmbeddingError(f"Failed to generate embeddings: the model returned {len(vectors)} vectors "
                                 f"for {len(batch)} texts")
        with self._changed:
            for (request, index), vector in zip(batch, vectors, strict=True):
                if request.error is None:
                    request.vectors[index] = vector
                    request.filled += 1

    def _fail(self, request: Request, error: BaseException) -> None:
        with self._changed:
            if request.error is None:
                request.error = error
            request.taken = len(request.texts)  # its other texts are not embedded for nothing
            self._waiting = [r for r in self._waiting if r is not request]


class GatheringEmbedder(Embedder):
    """Any embedder, with concurrent requests gathered into shared model calls. Queries are gathered
    only when the embedder embeds several at once (``embed_queries``); otherwise they pass through.
    The lines run side by side: an embedder that must run one call at a time keeps its own lock."""

    def __init__(self, inner: Any, max_texts: int = 32, max_tokens: int = 512) -> None:
        self._inner = inner
        self.profile: EmbeddingProfile = inner.profile
        self._ceiling = ceiling = inner.profile.max_tokens
        self._documents = Line(inner.embed_documents, max_texts, max_tokens, ceiling)
        self._short = Line(inner.embed_documents, max_texts, max_tokens, ceiling)
        queries = getattr(inner, "embed_queries", None)
        self._queries = Line(queries, max_texts, max_tokens, ceiling) if queries is not None else None

    def __getattr__(self, name: str) -> Any:  # what else the embedder offers (e.g. contextual chunks)
        return getattr(self._inner, name)

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        sizes = [estimate(t, self._ceiling) for t in texts]
        line = self._short if max(sizes, default=0) <= SHORT else self._documents
        return line.embed(texts, sizes)

    def embed_query(self, text: str) -> Vector:
        if self._queries is None:
            return self._inner.embed_query(text)  # type: ignore[no-any-return]
        return self._queries.embed([text])[0]

    def embed_queries(self, texts: Sequence[str]) -> list[Vector]:
        if self._queries is None:
            return [self._inner.embed_query(text) for text in texts]
        return self._queries.embed(texts)

    def count_tokens(self, text: str) -> int:
        return self._inner.count_tokens(text)  # type: ignore[no-any-return]

    def token_ceiling(self, text: str) -> int:
        return self._inner.token_ceiling(text)  # type: ignore[no-any-return]

    def describe(self) -> dict[str, Any]:
        facts: dict[str, Any] = self._inner.describe()
        return {**facts, "gathering": {"max_texts": self._documents.max_texts,
                                       "max_tokens": self._documents.max_tokens,
                                       "queries": self._queries is not None}}
