"""A stand-in embedding service: OpenAI's POST /v1/embeddings answering bag-of-words vectors.

Each word (lower-cased ``\\w+``) adds ±1 to one dimension picked by its CRC-32, and the sum is
scaled to unit length: deterministic, a few microseconds a text, and texts that share words are
near each other. It exists so that a benchmark measures memtrove's storage and search path, not a
model: it runs on 127.0.0.1 in a process the benchmark starts (``StandinEmbeddings``).
"""

from __future__ import annotations

import json
import math
import re
import multiprocessing
import multiprocessing.process
import zlib
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_WORD = re.compile(r"\w+")


class BagOfWords:
    """Text → unit vector of ``dimensions`` floats; word → (dimension, sign) is cached."""

    def __init__(self, dimensions: int):
        self.dimensions = dimensions
        self._slots: dict[str, tuple[int, float]] = {}

    def _slot(self, word: str) -> tuple[int, float]:
        slot = self._slots.get(word)
        if slot is None:
            code = zlib.crc32(word.encode("utf-8"))
            slot = self._slots[word] = (code % self.dimensions, 1.0 if code >> 31 else -1.0)
        return slot

    def embed(self, text: str) -> list[float]:
        vector = [0.0] * self.dimensions
        for word, count in Counter(_WORD.findall(text.lower())).items():
            index, sign = self._slot(word)
            vector[index] += sign * count
        norm = math.sqrt(sum(x * x for x in vector))
        if not norm:
            vector[0], norm = 1.0, 1.0  # no words: any fixed unit vector
        return [x / norm for x in vector]


class StandinEmbeddings:
    """Serves ``/v1/embeddings`` from a process of its own (the benchmark's client keeps its own
    interpreter lock); ``url`` is its OpenAI base URL."""

    def __init__(self, dimensions: int = 256):
        self.dimensions = dimensions
        self.port = 0
        self._process: multiprocessing.process.BaseProcess | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> StandinEmbeddings:
        context = multiprocessing.get_context("spawn")
        ours, theirs = context.Pipe()
        self._process = context.Process(target=_serve, args=(self.dimensions, theirs), name="standin-embeddings",
                                        daemon=True)
        self._process.start()
        if not ours.poll(60):
            raise RuntimeError("the stand-in embedding service did not start within 60 s")
        self.port = ours.recv()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.join(10)


def _serve(dimensions: int, pipe: Any) -> None:
    model = BagOfWords(dimensions)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(model))
    httpd.daemon_threads = True
    pipe.send(httpd.server_address[1])
    httpd.serve_forever()


def answer(model: BagOfWords, body: dict[str, Any]) -> dict[str, Any]:
    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
    data = [{"object": "embedding", "index": i, "embedding": model.embed(t)} for i, t in enumerate(texts)]
    return {"object": "list", "data": data, "model": body.get("model", "standin"),
            "usage": {"prompt_tokens": 0, "total_tokens": 0}}


def _handler(model: BagOfWords) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body are two writes: Nagle + delayed ACK would add 40 ms

        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if not self.path.rstrip("/").endswith("/embeddings") or "input" not in body:
                self.send_error(404)
                return
            payload = json.dumps(answer(model, body)).encode("utf-8")
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler
