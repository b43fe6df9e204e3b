"""Real local HTTP servers speaking Voyage's and Jina's embeddings APIs, with scriptable failures.

Vectors are deterministic: hashed words, normalised. A query and a document of the same text
differ slightly (the input type leans the vector a little), and a chunk embedded in the context
of its document (Voyage's contextualized endpoint, Jina's late chunking) leans towards the whole
document's vector, so the same chunk in two documents gets two different vectors.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.fake_openai import RecordedRequest

# Outcomes: an HTTP status, "ok", "slow" (answers after slow_seconds), "malformed" (200, not JSON),
# "wrong_count" (one embedding missing), "wrong_dimensions" (one float too many), "shuffled".
Outcome = int | str
Answer = tuple[int, Any]  # status and a JSON payload (bytes: sent as they are)
KIND_LEAN = 0.05  # how far the input type moves a vector
CONTEXT_LEAN = 0.5  # how far the whole document moves a chunk's vector
VOYAGE_DIMENSIONS = (256, 512, 1024, 2048)
VOYAGE_CONTEXT_MODELS = ("voyage-context-3",)
JINA_TASKS = ("retrieval.query", "retrieval.passage", "text-matching", "classification", "separation")
ERRORS = {
    400: "Bad request.", 404: "Not found.", 429: "You have exceeded your rate limit. Please slow down.",
    500: "Internal server error.", 502: "Bad gateway.", 503: "Service temporarily unavailable.",
}


def word_vector(text: str, dimensions: int) -> list[float]:
    """A unit vector of the text's hashed words (two signed buckets per word)."""
    raw = [0.0] * dimensions
    for word in re.findall(r"\w+", text.lower()) or [text]:
        digest = hashlib.sha256(word.encode("utf-8")).digest()
        for at in (0, 8):
            bucket = int.from_bytes(digest[at:at + 4], "big") % dimensions
            raw[bucket] += 1.0 if digest[at + 4] & 1 else -1.0
    return _unit(raw)


def lean(vector: list[float], towards: list[float], weight: float) -> list[float]:
    return _unit([a + weight * b for a, b in zip(vector, towards, strict=True)])


def kind_vector(text: str, kind: str | None, dimensions: int) -> list[float]:
    """What the fakes answer for ``text`` embedded as ``kind`` (input_type or task; None: plain)."""
    base = word_vector(text, dimensions)
    return base if kind is None else lean(base, word_vector(f"kind {kind}", dimensions), KIND_LEAN)


def context_vectors(chunks: list[str], kind: str | None, dimensions: int) -> list[list[float]]:
    """What the fakes answer for the chunks of one document embedded in its context."""
    whole = word_vector(" ".join(chunks), dimensions)
    return [lean(kind_vector(chunk, kind, dimensions), whole, CONTEXT_LEAN) for chunk in chunks]


def _unit(raw: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in raw)) or 1.0
    return [x / norm for x in raw]


class FakeEmbeddingApi:
    """Serves on 127.0.0.1 (a free port) from a background thread; records every request."""

    name = "fake-embedding-api"

    def __init__(self, api_key: str = "test-key", slow_seconds: float = 2.0) -> None:
        self.api_key = api_key  # any other bearer token gets a 401
        self.slow_seconds = slow_seconds
        self._lock = threading.Lock()
        self._planned: deque[Outcome] = deque()
        self._fail_on: dict[int, Outcome] = {}
        self._requests: list[RecordedRequest] = []
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> FakeEmbeddingApi:
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

    def __enter__(self) -> FakeEmbeddingApi:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def script(self, *outcomes: Outcome) -> None:
        """Queue how the next requests answer; once the queue is empty they succeed."""
        with self._lock:
            self._planned.extend(outcomes)

    def fail_on(self, n: int, outcome: Outcome) -> None:
        """Make the n-th request (1-based, over the server's life) answer ``outcome``."""
        with self._lock:
            self._fail_on[n] = outcome

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def bodies(self, path: str = "/v1/embeddings") -> list[Any]:
        return [r.body for r in self.requests if r.method == "POST" and r.path == path]

    def answer(self, request: RecordedRequest) -> Answer:
        with self._lock:
            self._requests.append(request)
            n = len(self._requests)
            outcome = self._fail_on.pop(n) if n in self._fail_on else (
                self._planned.popleft() if self._planned else "ok")
        if outcome == "slow":
            if self._stopping.wait(self.slow_seconds):
                return 503, {"detail": ERRORS[503]}
            outcome = "ok"
        if isinstance(outcome, int):
            return outcome, {"detail": ERRORS.get(outcome, f"HTTP {outcome}")}
        token = request.headers.get("authorization", "")
        if token != f"Bearer {self.api_key}":  # echoes the key it got: clients must never show it
            return 401, {"detail": f"Provided API key {token.removeprefix('Bearer ')!r} is invalid."}
        if outcome == "malformed":
            return 200, b'{"data": [{"embedding": [0.1, '
        if not isinstance(request.body, dict) or request.method != "POST":
            return 400, {"detail": "Body must be a JSON object."}
        answer = self.route(request.path, request.body)
        status, payload = answer
        if status == 200:
            _spoil(payload["data"], outcome)
        return answer

    def route(self, path: str, body: dict[str, Any]) -> Answer:
        raise NotImplementedError


class FakeVoyageServer(FakeEmbeddingApi):
    """POST /v1/embeddings and /v1/contextualizedembeddings as Voyage answers them."""

    name = "fake-voyage"

    def route(self, path: str, body: dict[str, Any]) -> Answer:
        model, kind, dims = body.get("model"), body.get("input_type"), body.get("output_dimension") or 1024
        if kind not in (None, "query", "document"):
            return 400, {"detail": f"Value {kind!r} is not a valid input_type."}
        if dims not in VOYAGE_DIMENSIONS:
            return 400, {"detail": f"output_dimension {dims} is not supported for model {model}."}
        contextual = path == "/v1/contextualizedembeddings"
        if path not in ("/v1/embeddings", "/v1/contextualizedembeddings"):
            return 404, {"detail": "Not Found"}
        if (model in VOYAGE_CONTEXT_MODELS) != contextual:
            return 400, {"detail": f"Model {model} is not supported by {path}."}
        documents = body.get("inputs") if contextual else [[text] for text in body.get("input") or [None]]
        if (not isinstance(documents, list) or not documents or len(documents) > 1000
                or not all(isinstance(d, list) and d and all(isinstance(t, str) and t for t in d)
                           for d in documents)):
            return 400, {"detail": "Input must be a non-empty list of at most 1000 non-empty texts."}
        texts = [t for d in documents for t in d]
        usage = {"total_tokens": sum(len(t.split()) for t in texts)}
        if not contextual:
            data = [_item(i, kind_vector(t, kind, dims)) for i, t in enumerate(texts)]
            return 200, {"object": "list", "data": data, "model": model, "usage": usage}
        data = [{"object": "list", "index": i,
                 "data": [_item(j, v) for j, v in enumerate(context_vectors(chunks, kind, dims))]}
                for i, chunks in enumerate(documents)]
        return 200, {"object": "list", "data": data, "model": model, "usage": usage}


class FakeJinaServer(FakeEmbeddingApi):
    """POST /v1/embeddings as Jina answers it, late chunking included."""

    name = "fake-jina"

    def route(self, path: str, body: dict[str, Any]) -> Answer:
        if path != "/v1/embeddings":
            return 404, {"detail": "Not Found"}
        texts, task, dims = body.get("input"), body.get("task"), body.get("dimensions") or 1024
        if task is not None and task not in JINA_TASKS:
            return 422, {"detail": [{"loc": ["body", "task"], "msg": f"Input should be one of {JINA_TASKS}"}]}
        if not isinstance(dims, int) or not 32 <= dims <= 1024:
            return 422, {"detail": [{"loc": ["body", "dimensions"], "msg": "dimensions must be 32 to 1024"}]}
        if (not isinstance(texts, list) or not texts or len(texts) > 2048
                or not all(isinstance(t, str) and t for t in texts)):
            return 400, {"detail": "input must be a non-empty list of at most 2048 non-empty texts"}
        vectors = (context_vectors(texts, task, dims) if body.get("late_chunking") is True
                   else [kind_vector(t, task, dims) for t in texts])
        tokens = sum(len(t.split()) for t in texts)
        return 200, {"model": body.get("model"), "object": "list",
                     "usage": {"total_tokens": tokens, "prompt_tokens": tokens},
                     "data": [_item(i, v) for i, v in enumerate(vectors)]}


def _item(index: int, vector: list[float]) -> dict[str, Any]:
    return {"object": "embedding", "index": index, "embedding": vector}


def _spoil(data: list[dict[str, Any]], outcome: Outcome) -> None:
    """Damage a good answer as scripted (for contextualized answers: the last document's chunks)."""
    items = data[-1]["data"] if data and "data" in data[-1] else data
    if outcome == "wrong_count":
        items.pop()
    elif outcome == "wrong_dimensions":
        for item in items:
            item["embedding"].append(0.0)
    elif outcome == "shuffled":
        data.reverse()
        for entry in data:
            entry.get("data", []).reverse()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that time out hang up; that is expected


def _handler_for(fake: FakeEmbeddingApi) -> type[BaseHTTPRequestHandler]:
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
            status, payload = fake.answer(RecordedRequest("POST", self.path, headers, body))
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
