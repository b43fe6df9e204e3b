"""A rerank model behind an HTTP API (issue 43.4): one POST per search, every failure one clean RerankerError.

The providers (adapters/rerank/remote_providers.py) differ only in the request body and where the answer keeps
its scores; this module sends, checks and explains. A search waits for the answer, so there is one attempt
and a short timeout; the one retry is a 429 whose Retry-After is short enough to wait for within that timeout
(a refused key, a server error, a timeout: the search falls back to the learned stage at once, with a warning).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
from loguru import logger

from adapters.http_detail import api_detail

from domain.ports.reranking import RerankerError, TextReranker

MAX_DOCUMENTS = 50  # the stage's depth: what one search asks the model to read at most
MAX_QUERY_CHARS = 2_000
MAX_RETRY_AFTER = 1.0  # seconds: a longer rate-limit pause is not waited for inside a search
MAX_ANSWER_BYTES = 4_000_000  # 50 scores take a few KB; an API that echoes the documents, ~200 KB


def clipped(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, at a space when one is near the end (a cross-encoder reads a few
    hundred tokens of each document; sending a 30-page chunk whole costs the call's time and the API's quota)."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ", limit - 200)
    return cut[:space] if space > 0 else cut


def shown_url(url: str) -> str:
    """A URL fit for a message: no user:password, no query string."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class HttpTextReranker(TextReranker):
    """A ``TextReranker`` behind a provider's rerank endpoint; subclasses build the body and read the scores.

    Constructing never touches the network; the client is built on first use and shared by every search
    (httpx.Client is safe across threads).
    """

    provider = ""  # the MEMTROVE_RERANKER value
    display = ""  # how messages name the API
    default_base_url = ""
    default_model: str | None = None
    path = "rerank"  # POSTed under the base URL
    max_document_chars = 4_000  # the hosted APIs truncate by tokens themselves; this bounds what is sent

    def __init__(self, *, api_key: str | None, model: str | None = None, base_url: str | None = None,
                 timeout: float = 5.0, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if timeout <= 0:
            raise ValueError(f"timeout must be above 0, got {timeout}")
        self._api_key = api_key or None
        self.model = model or self.default_model
        self._base_url = (base_url or self.default_base_url).rstrip("/")
        self._timeout = timeout
        self._sleep = sleep
        self._clock = clock
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return f"{self.provider}/{self.model}" if self.model else self.provider

    @property
    def url(self) -> str:
        return f"{self._base_url}/{self.path}"

    # -- what a provider says --------------------------------------------------------------------
    def body(self, query: str, documents: list[str]) -> dict[str, Any]:
        raise NotImplementedError

    def results(self, payload: Any) -> Any:
        """The answer's list of per-document results (each a dict holding ``index`` and a score)."""
        raise NotImplementedError

    score_key = "relevance_score"

    # -- the call --------------------------------------------------------------------------------
    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        texts = [clipped(str(d), self.max_document_chars) for d in documents]
        if not texts:
            return []
        if len(texts) > MAX_DOCUMENTS:
            raise RerankerError(f"{self.display} reranker: asked to rerank {len(texts)} documents; "
                                f"at most {MAX_DOCUMENTS} are sent")
        try:
            return self._scores(self._post(self.body(clipped(query, MAX_QUERY_CHARS), texts)), len(texts))
        except RerankerError as error:  # the search falls back; searches with no warnings to show log it only here
            logger.warning("rerank_failed provider={provider} model={model} documents={documents} reason={reason}",
                           provider=self.provider, model=self.model, documents=len(texts), reason=str(error))
            raise

    def _post(self, body: dict[str, Any]) -> Any:
        client = self._client_once()
        started, attempt = self._clock(), 1
        while True:
            try:
                response = self._answer(client, body, started)
            except httpx.TimeoutException:  # before TransportError, its base class
                raise self._error(f"no answer within {self._timeout:g}s (MEMTROVE_RERANKER_TIMEOUT)") from None
            except httpx.ConnectError as exc:
                raise self._error(f"cannot connect to {shown_url(self.url)} ({self._reason(exc)})") from None
            except httpx.TransportError as exc:
                raise self._error(f"the connection to {shown_url(self.url)} failed ({self._reason(exc)})") from None
            status = response.status_code
            if status < 300:
                return self._json(response)
            wait = retry_after(response)
            if status == 429 and attempt == 1 and wait is not None and wait <= MAX_RETRY_AFTER \
                    and self._clock() - started + wait < self._timeout:
                self._sleep(wait)
                attempt += 1
                continue
            raise self._refused(response)

    def _answer(self, client: httpx.Client, body: dict[str, Any], started: float) -> httpx.Response:
        """The whole answer, read within the timeout counted from the first request: httpx's timeout bounds each
        wait for a byte, so a server sending its answer a byte at a time would otherwise hold the search."""
        with client.stream("POST", self.url, json=body) as response:
            data = bytearray()
            for piece in response.iter_bytes():
                data += piece
                if self._clock() - started > self._timeout:
                    raise httpx.ReadTimeout("the answer came too slowly")
                if len(data) > MAX_ANSWER_BYTES:
                    raise self._error(f"the answer is longer than {MAX_ANSWER_BYTES:,} bytes")
            kept = {k: v for k, v in response.headers.items() if k.lower() in ("content-type", "retry-after")}
            return httpx.Response(response.status_code, headers=kept, content=bytes(data))

    def _scores(self, payload: Any, expected: int) -> list[float]:
        """One finite score per document, in the documents' order, or an error saying what is wrong."""
        items = self.results(payload)
        if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
            raise self._error("the answer holds no list of results")
        scores: dict[int, float] = {}
        for item in items:
            index, score = item.get("index"), item.get(self.score_key)
            if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < expected:
                raise self._error(f"the answer scores a document at index {index!r} of {expected} sent")
            if index in scores:
                raise self._error(f"the answer scores the document at index {index} twice")
            if not isinstance(score, (int, float)) or isinstance(score, bool) or not math.isfinite(score):
                raise self._error(f"the answer's score for document {index} is {score!r}, not a finite number")
            scores[index] = float(score)
        if len(scores) != expected:
            raise self._error(f"the answer scores {len(scores)} of the {expected} documents sent")
        return [scores[i] for i in range(expected)]

    # -- internals -------------------------------------------------------------------------------
    def _client_once(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                headers = {"Accept": "application/json"}
                if self._api_key:
                    headers["Authorization"] = f"Bearer {self._api_key}"
                self._client = httpx.Client(timeout=self._timeout, headers=headers)
            return self._client

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def _error(self, what: str) -> RerankerError:
        line = " ".join(f"{self.display} reranker ({self.name}): {what}".split())
        return RerankerError(line.replace(self._api_key, "***") if self._api_key else line)

    def _json(self, response: httpx.Response) -> Any:
        try:
            return response.json()
        except ValueError:
            raise self._error(f"the answer (HTTP {response.status_code}) is not JSON") from None

    def _refused(self, response: httpx.Response) -> RerankerError:
        status, detail = response.status_code, self._detail(response)
        said = f"HTTP {status}: {detail}" if detail else f"HTTP {status}"
        if status in (401, 403):
            return self._error(f"the API key was refused ({said}); check MEMTROVE_RERANKER_API_KEY")
        if status == 429:
            return self._error(f"rate limited ({said})")
        if status >= 500:
            return self._error(f"the server failed ({said})")
        return self._error(f"the request was refused ({said})")

    def _detail(self, response: httpx.Response) -> str:
        """The API's own explanation, short, on one line, without the key."""
        text = api_detail(response, ("message", "detail", "error"))
        if self._api_key:
            text = text.replace(self._api_key, "***")
        return text if len(text) <= 160 else text[:157] + "..."

    @staticmethod
    def _reason(exc: Exception) -> str:
        text = " ".join(str(exc).split()) or type(exc).__name__
        return "connection refused" if "refused" in text.lower() else text[:120]


def retry_after(response: httpx.Response) -> float | None:
    """The seconds a 429's Retry-After asks for (a number; an HTTP date is not waited for)."""
    try:
        wait = float(response.headers.get("retry-after", ""))
    except ValueError:
        return None
    return wait if math.isfinite(wait) and wait >= 0 else None
