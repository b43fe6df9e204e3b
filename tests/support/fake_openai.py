"""A real local HTTP server speaking OpenAI's POST /v1/embeddings and POST /v1/chat/completions (with
structured output: a knowledge graph read from numbered passages), with scriptable failures."""

from __future__ import annotations

import base64
import hashlib
import json
import math
import random
import re
import struct
import threading
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# OpenAI-shaped error bodies for the statuses tests script; anything else gets a generic one.
ERRORS: dict[int, tuple[str, str, str | None]] = {
    400: ("'$.input' is invalid. Please check the API reference.", "invalid_request_error", None),
    401: ("Incorrect API key provided.", "invalid_request_error", "invalid_api_key"),
    404: ("The model does not exist or you do not have access to it.", "invalid_request_error", "model_not_found"),
    429: ("Rate limit reached for requests. Please try again later.", "requests", "rate_limit_exceeded"),
    500: ("The server had an error while processing your request. Sorry about that!", "server_error", None),
    502: ("Bad gateway.", "server_error", None),
    503: ("The engine is currently overloaded, please try again later.", "server_error", None),
}

Outcome = int | str  # an HTTP status, "ok", "slow", "wrong_dimensions" or "shuffled"


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


def fake_embedding(text: str, dimensions: int) -> list[float]:
    """A deterministic unit vector seeded by the text's SHA-256."""
    rng = random.Random(hashlib.sha256(text.encode("utf-8")).digest())
    raw = [rng.gauss(0.0, 1.0) for _ in range(dimensions)]
    norm = math.sqrt(sum(x * x for x in raw)) or 1.0
    return [x / norm for x in raw]


class FakeOpenAIServer:
    """Serves embeddings on 127.0.0.1 (a free port) from a background thread; records every request."""

    def __init__(self, default_dimensions: int = 16, slow_seconds: float = 2.0, api_key: str | None = None,
                 names: str = r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)*\b"):
        self.default_dimensions = default_dimensions
        self.slow_seconds = slow_seconds
        self.api_key = api_key  # when set, any other bearer token gets a 401
        self.names = re.compile(names)  # what the chat answer calls entities
        self._lock = threading.Lock()
        self._planned: deque[Outcome] = deque()
        self._fail_on: dict[int, Outcome] = {}
        self._requests: list[RecordedRequest] = []
        self._stopping = threading.Event()  # wakes "slow" handlers so stop() never waits on them
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> FakeOpenAIServer:
        self._httpd = _Server(("127.0.0.1", 0), _handler_for(self))
        # A short poll interval keeps stop() fast: shutdown() waits for the next poll.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting and inspection -----------------------------------------------------------
    def script(self, *outcomes: Outcome) -> None:
        """Queue how the next requests answer: a status (429, 500, 401, 400, ...), "slow" (answers
        after ``slow_seconds``), "wrong_dimensions" (one extra float), "shuffled" (data listed in
        reverse, indices intact) or "ok"; once the queue is empty requests succeed."""
        with self._lock:
            self._planned.extend(outcomes)

    def fail_on(self, n: int, outcome: Outcome) -> None:
        """Make the n-th request (1-based, counted over the server's life) answer ``outcome``."""
        with self._lock:
            self._fail_on[n] = outcome

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def embedding_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == "POST" and r.path == "/v1/embeddings"]

    # -- request handling (called from handler threads) ---------------------------------------
    def _record_and_plan(self, request: RecordedRequest) -> Outcome:
        with self._lock:
            self._requests.append(request)
            n = len(self._requests)
            if n in self._fail_on:
                return self._fail_on.pop(n)
            return self._planned.popleft() if self._planned else "ok"

    def _answer(self, request: RecordedRequest) -> tuple[int, dict[str, Any]]:
        if request.path not in ("/v1/embeddings", "/v1/chat/completions") or request.method != "POST":
            with self._lock:
                self._requests.append(request)
            return 404, _error(404, f"Unknown route {request.method} {request.path}")
        outcome = self._record_and_plan(request)
        if outcome == "slow":
            if self._stopping.wait(self.slow_seconds):
                return 503, _error(503)
            outcome = "ok"
        if isinstance(outcome, int) and outcome != 200:
            return outcome, _error(outcome)
        if self.api_key is not None and request.headers.get("authorization") != f"Bearer {self.api_key}":
            return 401, _error(401)
        if request.path == "/v1/chat/completions":
            return _chat(request.body, outcome, self.names)
        return self._embeddings(request.body, outcome)

    def _embeddings(self, body: Any, outcome: Outcome) -> tuple[int, dict[str, Any]]:
        if not isinstance(body, dict) or "model" not in body:
            return 400, _error(400, "You must provide a model parameter.")
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) and t for t in texts):
            return 400, _error(400)
        dimensions = body.get("dimensions") or self.default_dimensions
        if outcome == "wrong_dimensions":
            dimensions += 1
        data = []
        for i, text in enumerate(texts):
            vector = fake_embedding(text, dimensions)
            if body.get("encoding_format") == "base64":
                vector = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")
            data.append({"object": "embedding", "index": i, "embedding": vector})
        if outcome == "shuffled":  # the API does not promise order; clients must sort by index
            data.reverse()
        tokens = sum(max(1, len(t.split())) for t in texts)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        return 200, {"object": "list", "data": data, "model": body["model"], "usage": usage}


_PASSAGE = re.compile(r"^\[(\d+)\](?: \(speaker: ([^)]*)\))?\n(.*?)(?=\n\n\[\d+\]|\Z)", re.S | re.M)


def _chat(body: Any, outcome: Outcome, names: re.Pattern[str]) -> tuple[int, dict[str, Any]]:
    """The knowledge graph of each numbered passage: what ``names`` matches (by default capitalised words)
    are entities (type "thing"), each
    next one related to the first ("related_to", the passage as evidence), the passage an observation of
    the first. Outcomes: "not_json" (prose instead), "missing" (passage 0 left out of the answer)."""
    if not isinstance(body, dict) or "model" not in body or not body.get("messages"):
        return 400, _error(400, "You must provide a model parameter.")
    if body.get("response_format", {}).get("type") != "json_schema":
        return 400, _error(400, "response_format json_schema expected by this fake")
    answers = []
    for number, speaker, text in _PASSAGE.findall(body["messages"][-1]["content"]):
        found = list(dict.fromkeys(names.findall(text)))
        answers.append({"passage": int(number), "entities": [{"name": n, "type": "thing"} for n in found],
                        "relations": [{"source": found[0], "relation": "related_to", "target": n,
                                       "evidence": text[:200]} for n in found[1:]],
                        "observations": [{"entity": found[0], "text": text[:200]}] if found else [],
                        "events": [{"kind": "milestone", "summary": text[:200], "who": found[:1], "date_text": None}]
                        if found and " done " in f" {text} " else []})
    if outcome == "missing":
        answers = [a for a in answers if a["passage"] != 0]
    content = "Sorry, I cannot help with that." if outcome == "not_json" else json.dumps({"passages": answers})
    return 200, {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": body["model"],
                 "choices": [{"index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant", "content": content}}],
                 "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def _error(status: int, message: str | None = None) -> dict[str, Any]:
    default, kind, code = ERRORS.get(status, (f"HTTP {status}", "server_error" if status >= 500 else "error", None))
    return {"error": {"message": message or default, "type": kind, "param": None, "code": code}}


class _Server(ThreadingHTTPServer):
    """Quiet about clients that hang up (timed-out requests do exactly that)."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


def _handler_for(fake: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, like the real API
        timeout = 10  # idle keep-alive connections do not outlive a test run

        def do_POST(self) -> None:
            self._serve("POST")

        def do_GET(self) -> None:
            self._serve("GET")

        def _serve(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, payload = fake._answer(RecordedRequest(method, self.path, headers, body))
            data = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    return Handler
