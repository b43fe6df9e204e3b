"""What the server does, for ``GET /metrics`` in Prometheus' text format (prometheus-client, a registry
per process): tool calls by tool and status with their latency, searches by tool and mode with their
result counts and withheld hits, refusals, writes, ingests and chunks, embedding calls, failures,
latency and characters, vector index operations and errors, background job rounds, the vector
outbox's backlog. HTTP serves it behind the same authentication as the rest; a caller other than the
server's owner gets the per-client series of its own clients only (``exposition(clients=...)``)."""

from __future__ import annotations

import time
from collections.abc import Collection, Iterator, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.metrics_core import Metric

SEARCH_TOOLS = {"memory_search", "artifact_search", "hybrid_search", "project_search", "search_memory",
                "search_session_context", "search_reports_specific_chunks"}
CONTENT_TYPE = CONTENT_TYPE_LATEST
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class Metrics:
    def __init__(self, backlog: Any = None) -> None:
        self.registry = CollectorRegistry()
        self.calls = Counter("memtrove_tool_calls", "Tool calls by tool and outcome", ["tool", "status"],
                             registry=self.registry)
        self.latency = Histogram("memtrove_tool_latency_seconds", "Tool call latency", ["tool"], buckets=BUCKETS,
                                 registry=self.registry)
        self.searches = Counter("memtrove_searches", "Searches by tool and mode", ["tool", "mode"],
                                registry=self.registry)
        self.search_latency = Histogram("memtrove_search_latency_seconds", "Search latency by tool and mode",
                                        ["tool", "mode"], buckets=BUCKETS, registry=self.registry)
        self.writes = Counter("memtrove_writes", "Successful writes by tool", ["tool"], registry=self.registry)
        self.errors = Counter("memtrove_tool_errors", "Failed tool calls by tool and error kind", ["tool", "kind"],
                              registry=self.registry)
        self.ingested = Counter("memtrove_artifacts_ingested", "Artifacts ingested or replaced", ["status"],
                                registry=self.registry)
        self.chunks = Counter("memtrove_artifact_chunks", "Chunks written by ingests", registry=self.registry)
        self.results = Histogram("memtrove_search_results", "Results per search", ["tool"],
                                 buckets=(0, 1, 3, 5, 10, 20, 50, 100), registry=self.registry)
        self.embeddings = Counter("memtrove_embeddings", "Texts embedded by kind (document, query)", ["kind"],
                                  registry=self.registry)
        self.embedding_failures = Counter("memtrove_embeddings_failed", "Failed embedding calls by error",
                                          ["error"], registry=self.registry)
        self.embedding_latency = Histogram("memtrove_embedding_latency_seconds", "Embedding call latency", ["kind"],
                                           buckets=BUCKETS, registry=self.registry)
        self.embedding_chars = Counter("memtrove_embedding_characters", "Characters embedded",
                                       registry=self.registry)
        self.backlog = Gauge("memtrove_outbox_backlog", "Vector outbox items waiting for the index (upper bound)",
                             registry=self.registry)
        self.withheld = Counter("memtrove_search_withheld_hits", "Records a search fetched and withheld from its "
                                "caller (the access rule on rows, privacy policies)", ["tool"], registry=self.registry)
        self.denials = Counter("memtrove_access_denials", "Refusals a caller could notice, by action and reason",
                               ["action", "reason"], registry=self.registry)
        self.jobs = Histogram("memtrove_job_duration_seconds", "Background job rounds that did work, by job",
                              ["job"], buckets=BUCKETS, registry=self.registry)
        self.job_failures = Counter("memtrove_job_failures", "Background job rounds that failed, by job", ["job"],
                                    registry=self.registry)
        self.vector_ops = Counter("memtrove_vector_operations", "Vector index operations by operation and outcome",
                                  ["operation", "status"], registry=self.registry)
        self.vector_latency = Histogram("memtrove_vector_operation_seconds", "Vector index operation latency",
                                        ["operation"], buckets=BUCKETS, registry=self.registry)
        self.clients = Counter("memtrove_client_calls", "Tool calls by client (its token's id, or the page) and "
                               "kind (read, write, refused)", ["client", "kind"], registry=self.registry)
        self.last_seen: dict[str, float] = {}  # client -> epoch of its last call (the page shows it)
        if backlog is not None:
            self.backlog.set_function(backlog)

    def watch_backlog(self, backlog: Any) -> None:
        self.backlog.set_function(backlog)

    def observe_tool_call(self, tool: str, status: str, seconds: float, arguments: dict[str, Any], writes: bool,
                          body: dict[str, Any] | None = None) -> None:
        self.calls.labels(tool, status).inc()
        self.latency.labels(tool).observe(seconds)
        if status != "ok":
            self.errors.labels(tool, status).inc()
        elif writes:
            self.writes.labels(tool).inc()
        if tool in SEARCH_TOOLS:
            mode = arguments.get("mode") or arguments.get("granularity") or "hybrid"
            self.searches.labels(tool, str(mode)[:20]).inc()
            self.search_latency.labels(tool, str(mode)[:20]).observe(seconds)
            if status == "ok" and isinstance((body or {}).get("results"), list):
                self.results.labels(tool).observe(len(body["results"]))  # type: ignore[index]
        if tool == "artifact_ingest" and status == "ok" and (body or {}).get("status") in ("ingested", "replaced"):
            self.ingested.labels(body["status"]).inc()  # type: ignore[index]
            self.chunks.inc(int(body.get("num_chunks") or 0))  # type: ignore[union-attr]

    def observe_access(self, tool: str, withheld: int, denials: Sequence[tuple[str, str]]) -> None:
        if withheld:
            self.withheld.labels(tool).inc(withheld)
        for action, reason in denials:
            self.denials.labels(action, reason).inc()

    def observe_client(self, client: str, writes: bool, status: str) -> None:
        """A call through ``client`` (a token's id, "shared token" or "page"), as a read, write or refusal."""
        self.clients.labels(client[:40], "refused" if status != "ok" else "write" if writes else "read").inc()
        self.last_seen[client[:40]] = time.time()

    def client_calls(self) -> dict[str, dict[str, int]]:
        """Calls per client since the server started: {client: {"read": n, "write": n, "refused": n}}."""
        found: dict[str, dict[str, int]] = {}
        for family in self.clients.collect():
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    found.setdefault(sample.labels["client"], {})[sample.labels["kind"]] = int(sample.value)
        return found

    def observe_job(self, job: str, seconds: float, failed: bool = False) -> None:
        if failed:
            self.job_failures.labels(job).inc()
        else:
            self.jobs.labels(job).observe(seconds)

    def exposition(self, clients: Collection[str] | None = None) -> bytes:
        """Every series; with ``clients``, the per-client series of those clients only (the rest whole)."""
        if clients is None:
            return generate_latest(self.registry)
        return generate_latest(_ClientsOnly(self.registry, self.clients.describe()[0].name, set(clients)))


class _ClientsOnly:
    """A registry's families as they are, but one family's samples only of the given clients."""

    def __init__(self, registry: CollectorRegistry, family: str, clients: set[str]) -> None:
        self.registry, self.family, self.clients = registry, family, clients

    def collect(self) -> Iterator[Metric]:
        for family in self.registry.collect():
            if family.name == self.family:
                kept = Metric(family.name, family.documentation, family.type, family.unit)
                kept.samples = [s for s in family.samples if s.labels.get("client") in self.clients]
                family = kept
            yield family


def outbox_backlog(store: Any) -> float:
    """How many outbox items at most wait (sequence span; 0 when none)."""
    oldest = store.oldest_queued()
    return 0.0 if oldest is None else float(store.last_queued() - oldest + 1)


class MeteredEmbedder:
    """An embedder whose calls are counted and timed; everything else is the embedder's own."""

    def __init__(self, inner: Any, metrics: Metrics) -> None:
        self._inner = inner
        self._metrics = metrics

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def _timed(self, kind: str, texts: Sequence[str], call: Any) -> Any:
        started = time.perf_counter()
        try:
            result = call()
        except Exception as exc:
            self._metrics.embedding_failures.labels(type(exc).__name__).inc()
            raise
        self._metrics.embedding_latency.labels(kind).observe(time.perf_counter() - started)
        self._metrics.embeddings.labels(kind).inc(len(texts))
        self._metrics.embedding_chars.inc(sum(len(t) for t in texts))
        return result

    def embed_documents(self, texts: Sequence[str]) -> Any:
        return self._timed("document", texts, lambda: self._inner.embed_documents(texts))

    def embed_query(self, text: str) -> Any:
        return self._timed("query", [text], lambda: self._inner.embed_query(text))


VECTOR_OPERATIONS = frozenset({"upsert", "query", "delete_records", "delete_vectors", "delete_where", "vectors_of",
                               "vector_ids", "count"})


class MeteredVectorIndex:
    """A vector index whose operations are counted (by outcome) and timed; everything else is its own."""

    def __init__(self, inner: Any, metrics: Metrics) -> None:
        self._inner = inner
        self._metrics = metrics

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._inner, name)
        if name not in VECTOR_OPERATIONS:
            return found

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                result = found(*args, **kwargs)
            except Exception:
                self._metrics.vector_ops.labels(name, "error").inc()
                raise
            self._metrics.vector_ops.labels(name, "ok").inc()
            self._metrics.vector_latency.labels(name).observe(time.perf_counter() - started)
            return result

        return timed
