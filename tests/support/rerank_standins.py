"""Real local HTTP servers standing in for the rerank APIs memtrove calls (issue 43.4), with scriptable failures.

Each serves its API's real path, request body and answer shape on 127.0.0.1 (a free port) from a thread: Cohere
``/v2/rerank``, Jina and Voyage ``/v1/rerank``, vLLM and llama.cpp ``/v1/rerank``, text-embeddings-inference
``/rerank``. A request is checked as the API checks it (its bearer key, its required fields) and answered with
scores from ``score_of(query, document)``, sorted best first as the APIs sort them.
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from tests.support.fake_embedding_apis import (
    _Server,  # a threading server quiet about clients that hang up
)
from tests.support.fake_openai import RecordedRequest

# Outcomes: an HTTP status; "ok"; "slow" (answers after slow_seconds); "malformed" (200, not JSON); "too_few"
# (the last result left out); "bad_index" (an index past the documents); "twice" (one index twice); "nan" (a
# score NaN); "no_results" (200, an object without results); "retry_after:<s>" (429 with that Retry-After);
# "trickle" (200, a long answer sent a byte every 50 ms).
Outcome = int | str
Answer = tuple[int, Any, dict[str, str]]  # status, a JSON payload (bytes: sent as they are), extra headers


def word_overlap(query: str, document: str) -> float:
    """The default score: the share of the query's words the document holds."""
    words = set(re.findall(r"\w+", query.lower()))
    return len(words & set(re.findall(r"\w+", document.lower()))) / (len(words) or 1)


def preferring(*markers: str) -> Callable[[str, str], float]:
    """Scores that put documents holding ``markers[0]`` first, then ``markers[1]``..., then the rest."""
    def score(query: str, document: str) -> float:
        found = [i for i, marker in enumerate(markers) if marker.lower() in document.lower()]
        return 0.95 - 0.1 * found[0] if found else 0.01
    return score


class RerankStandIn:
    """A rerank API on 127.0.0.1; subclasses give the path, the checks and the answer's shape."""

    name = "rerank-stand-in"
    prefix = "/v1"  # the base URL's path (the client appends /rerank)
    errors_key = "detail"  # where the API's error body says what went wrong
    refusal_status = 400  # what a body the API refuses gets

    def __init__(self, api_key: str | None = "test-key", slow_seconds: float = 3.0,
                 score_of: Callable[[str, str], float] = word_overlap) -> None:
        self.api_key = api_key  # None: no key asked (a local server started without one)
        self.slow_seconds = slow_seconds
        self.score_of = score_of
        self._lock = threading.Lock()
        self._planned: deque[Outcome] = deque()
        self._requests: list[RecordedRequest] = []
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- life --------------------------------------------------------------------------------------
    def start(self) -> RerankStandIn:
        self._httpd = _Server(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        name=self.name, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes "slow" handlers
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}{self.prefix}"

    def script(self, *outcomes: Outcome) -> None:
        """Queue how the next requests answer; once the queue is empty they succeed."""
        with self._lock:
            self._planned.extend(outcomes)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def bodies(self) -> list[Any]:
        return [r.body for r in self.requests if r.method == "POST"]

    # -- answering ---------------------------------------------------------------------------------
    def answer(self, request: RecordedRequest) -> Answer:
        with self._lock:
            self._requests.append(request)
            outcome = self._planned.popleft() if self._planned else "ok"
        if outcome == "trickle":  # a good answer, a byte every 50 ms
            return 200, json.dumps(self.payload(request.body, [(0, 0.5)])).encode() * 20, {"_trickle": "0.05"}
        if outcome == "slow":
            if self._stopping.wait(self.slow_seconds):
                return 503, self.error("shutting down"), {}
            outcome = "ok"
        if isinstance(outcome, str) and outcome.startswith("retry_after:"):
            return 429, self.error("Too many requests."), {"Retry-After": outcome.split(":", 1)[1]}
        if isinstance(outcome, int):
            return outcome, self.error(f"scripted failure {outcome}"), {}
        token = request.headers.get("authorization", "")
        if self.api_key is not None and token != f"Bearer {self.api_key}":
            # echoes the key it got, as some APIs do: clients must never show it
            return 401, self.error(f"invalid api token {token.removeprefix('Bearer ')!r}"), {}
        if request.path != f"{self.prefix}/rerank":
            return 404, self.error("Not Found"), {}
        if not request.headers.get("content-type", "").startswith("application/json"):
            return 415, self.error("Content-Type must be application/json"), {}
        if outcome == "malformed":
            return 200, b'{"results": [{"index": 0, "relevance_score": 0.5}, ', {}
        if outcome == "no_results":
            return 200, {"id": "x", "meta": {}}, {}
        body = request.body if isinstance(request.body, dict) else None
        problem = self.refusal(body) if body is not None else "body must be a JSON object"
        if problem:
            return self.refusal_status, self.error(problem), {}
        assert body is not None
        query, documents = body["query"], self.documents(body)
        ranked = sorted(((i, float(self.score_of(query, d))) for i, d in enumerate(documents)),
                        key=lambda pair: -pair[1])
        ranked = ranked[:self.top(body) or len(ranked)]
        if outcome == "too_few":
            ranked = ranked[:-1]
        elif outcome == "bad_index":
            ranked[0] = (len(documents), ranked[0][1])
        elif outcome == "twice":
            ranked[-1] = (ranked[0][0], ranked[-1][1])
        elif outcome == "nan":
            ranked[0] = (ranked[0][0], float("nan"))  # json.dumps writes NaN, as a careless server does
        return 200, self.payload(body, ranked), {}

    def error(self, message: str) -> Any:
        return {self.errors_key: message}

    def refusal(self, body: dict[str, Any]) -> str | None:
        """What the API says of a body it refuses (None: accepted)."""
        if not isinstance(body.get("query"), str) or not body["query"].strip():
            return "query must be a non-empty string"
        documents = self.documents(body)
        if not isinstance(documents, list) or not documents or not all(isinstance(d, str) for d in documents):
            return "documents must be a non-empty list of strings"
        top = self.top(body)
        if top is not None and (not isinstance(top, int) or top < 1):
            return "top_n must be a positive integer"
        return None

    def documents(self, body: dict[str, Any]) -> Any:
        return body.get("documents")

    def top(self, body: dict[str, Any]) -> Any:
        return body.get("top_n")

    def payload(self, body: dict[str, Any], ranked: list[tuple[int, float]]) -> Any:
        return {"results": [{"index": i, "relevance_score": s} for i, s in ranked]}


class CohereStandIn(RerankStandIn):
    """Cohere's v2 rerank: model required; answers ``{id, results, meta}``; errors ``{"message": ...}``."""

    name, prefix, errors_key = "cohere-stand-in", "/v2", "message"

    def refusal(self, body: dict[str, Any]) -> str | None:
        if not isinstance(body.get("model"), str) or not body["model"]:
            return "invalid request: model must be specified"
        return super().refusal(body)

    def payload(self, body: dict[str, Any], ranked: list[tuple[int, float]]) -> Any:
        return {"id": "07734bd2-2473-4f07-94e1-0d9f0e6843cf", **super().payload(body, ranked),
                "meta": {"api_version": {"version": "2"}, "billed_units": {"search_units": 1}}}


class JinaStandIn(RerankStandIn):
    """Jina's rerank: model required; answers ``{model, usage, results}``."""

    name = "jina-stand-in"

    def refusal(self, body: dict[str, Any]) -> str | None:
        if not isinstance(body.get("model"), str) or not body["model"]:
            return "model is required"
        return super().refusal(body)

    def payload(self, body: dict[str, Any], ranked: list[tuple[int, float]]) -> Any:
        results = [{"index": i, "relevance_score": s} if body.get("return_documents") is False else
                   {"index": i, "document": {"text": _text(body, i)}, "relevance_score": s} for i, s in ranked]
        return {"model": body["model"], "usage": {"total_tokens": 42}, "results": results}


class VoyageStandIn(RerankStandIn):
    """Voyage's rerank: model required, ``top_k`` (not top_n); answers ``{object, data, model, usage}``."""

    name = "voyage-stand-in"

    def refusal(self, body: dict[str, Any]) -> str | None:
        if not isinstance(body.get("model"), str) or not body["model"]:
            return "Field 'model' is required."
        if "top_n" in body:
            return "Unexpected field 'top_n'."
        if body.get("truncation") is False and any(len(str(d)) > 4_000 for d in body.get("documents") or []):
            return "A document exceeds the context length."
        return super().refusal(body)

    def top(self, body: dict[str, Any]) -> Any:
        return body.get("top_k")

    def payload(self, body: dict[str, Any], ranked: list[tuple[int, float]]) -> Any:
        return {"object": "list", "data": [{"relevance_score": s, "index": i} for i, s in ranked],
                "model": body["model"], "usage": {"total_tokens": 42}}


class VllmStandIn(RerankStandIn):
    """vLLM's Jina-style ``/v1/rerank`` (model optional); errors ``{"object": "error", "message": ...}``."""

    name, errors_key = "vllm-stand-in", "message"

    def payload(self, body: dict[str, Any], ranked: list[tuple[int, float]]) -> Any:
        return {"id": "rerank-1", "model": body.get("model") or "BAAI/bge-reranker-base",
                "usage": {"total_tokens": 42},
                "results": [{"index": i, "document": {"text": _text(body, i)}, "relevance_score": s}
                            for i, s in ranked]}


class LlamaCppStandIn(VllmStandIn):
    """llama.cpp's ``/v1/rerank``: ``{model, object, usage, results}``."""

    name = "llama-cpp-stand-in"

    def payload(self, body: dict[str, Any], ranked: list[tuple[int, float]]) -> Any:
        return {"model": body.get("model") or "bge-reranker-v2-m3", "object": "list",
                "usage": {"prompt_tokens": 42, "total_tokens": 42},
                "results": [{"index": i, "relevance_score": s} for i, s in ranked]}


class TeiStandIn(RerankStandIn):
    """text-embeddings-inference's ``/rerank``: ``{query, texts, truncate}`` -> ``[{index, score}]``; a text
    longer than the model reads is refused (422) unless ``truncate`` is true."""

    name, prefix, errors_key, refusal_status = "tei-stand-in", "", "error", 422
    max_words = 512

    def documents(self, body: dict[str, Any]) -> Any:
        return body.get("texts")

    def top(self, body: dict[str, Any]) -> Any:
        return None

    def refusal(self, body: dict[str, Any]) -> str | None:
        problem = super().refusal(body)
        if problem is None and body.get("truncate") is not True and any(
                len(t.split()) > self.max_words for t in body["texts"]):
            return f"Input validation error: `inputs` must have less than {self.max_words} tokens"
        return problem

    def payload(self, body: dict[str, Any], ranked: list[tuple[int, float]]) -> Any:
        return [{"index": i, "score": s} for i, s in ranked]


def _text(body: dict[str, Any], index: int) -> str:
    documents = body["documents"]
    return documents[index] if 0 <= index < len(documents) else ""


def _handler_for(fake: RerankStandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 10

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, payload, extra = fake.answer(RecordedRequest("POST", self.path, headers, body))
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
            trickle = float(extra.pop("_trickle", 0))
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in extra.items():
                self.send_header(name, value)
            self.end_headers()
            for at in range(0, len(data), 1 if trickle else len(data) or 1):
                self.wfile.write(data[at:at + (1 if trickle else len(data))])
                self.wfile.flush()
                if trickle and fake._stopping.wait(trickle):
                    return

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
