"""``GET /metrics``: what the server does, in Prometheus' text format (prometheus-client, a registry per
process): tool calls by tool and status with their latency, searches by tool and mode, writes, the
vector outbox's backlog. Behind the same authentication as the rest of HTTP."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

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
        self.writes = Counter("memtrove_writes", "Successful writes by tool", ["tool"], registry=self.registry)
        self.errors = Counter("memtrove_tool_errors", "Failed tool calls by tool and error kind", ["tool", "kind"],
                              registry=self.registry)
        backlog_gauge = Gauge("memtrove_outbox_backlog", "Vector outbox items waiting for the index (upper bound)",
                              registry=self.registry)
        if backlog is not None:
            backlog_gauge.set_function(backlog)

    def observe_tool_call(self, tool: str, status: str, seconds: float, arguments: dict[str, Any], writes: bool) -> None:
        self.calls.labels(tool, status).inc()
        self.latency.labels(tool).observe(seconds)
        if status != "ok":
            self.errors.labels(tool, status).inc()
        elif writes:
            self.writes.labels(tool).inc()
        if tool in SEARCH_TOOLS:
            mode = arguments.get("mode") or arguments.get("granularity") or "hybrid"
            self.searches.labels(tool, str(mode)[:20]).inc()

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


def outbox_backlog(store: Any) -> float:
    """How many outbox items at most wait (sequence span; 0 when none)."""
    oldest = store.oldest_queued()
    return 0.0 if oldest is None else float(store.last_queued() - oldest + 1)
