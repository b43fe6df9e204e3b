"""The spec 001 ("Vector Memory MCP") end-to-end scenario: the ``sessions`` toolset over any transport.

Plain async functions taking a connected ``mcp.Client`` and the ``World`` that ``seed`` stored: an
orchestrator (``main-orchestrator``: session contexts and input prompts) and two sub-agents (reports,
working memory, system memory, report observations) across two sessions with two iterations each
("v2" and "v10", to see the natural order), plus knowledge-base entries. Each check looks at what
``seed`` stored or stores its own items in a session of its own, so a failure names what broke and
no check depends on another one having run. ``check_cleanup_deletes_session_memories`` deletes every
session memory: a module runs it last.

The contract (decided with the implementer): ids are ``art_`` + 32 hex, chunk ids start with
``<memory id>::chunk::``; a success carries ``success: true`` and ``error: None``; an error is a tool
error whose structured content is ``{"success": False, "error": <type>, "message": ..., ...}``
with ``"field"`` for a ``ValidationError``.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio

from tests.e2e.scenario import text_of

MEMORY_ID = re.compile(r"^art_[0-9a-f]{32}$")
CONTENT_HASH = re.compile(r"^[0-9a-f]{16}$")
UNKNOWN_ID = "art_" + "0" * 32
ORCHESTRATOR = "main-orchestrator"
EXPLORER = "code-explorer-agent"
ANALYST = "perf-analyst-agent"
S1, TASK1 = "payments-audit-7731", "pay-audit"
S2, TASK2 = "search-latency-4410", "search-latency"
MAX_CONTENT = 500_000
SCOPED_SIMILARITY = 2.0

SESSION_TOOLS = {
    "store_session_context", "store_input_prompt", "store_system_memory", "store_report",
    "store_report_observation", "store_working_memory", "store_knowledge_base",
    "search_session_context", "search_input_prompts", "search_system_memory",
    "search_reports_specific_chunks", "search_reports_section_context", "search_reports_full_documents",
    "search_working_memory_specific_chunks", "search_working_memory_section_context",
    "search_working_memory_full_documents",
    "search_knowledge_base_specific_chunks", "search_knowledge_base_section_context",
    "search_knowledge_base_full_documents",
    "load_session_context_for_task", "expand_chunk_context", "reconstruct_document", "get_memory_by_id",
    "get_session_stats", "list_sessions", "write_document_to_file", "delete_memory", "cleanup_old_memories",
}
ZAPOMNI_TOOLS = {"add_memory", "search_memory", "get_stats", "get_related", "build_graph", "graph_status",
                 "unmerge_entity"}
assert len(SESSION_TOOLS) == 28

MEMORY_FIELDS = {"id", "memory_type", "agent_id", "session_id", "session_iter", "task_code", "content", "title",
                 "description", "tags", "metadata", "content_hash", "created_at", "updated_at", "accessed_at",
                 "access_count"}
SCOPED_FIELDS = MEMORY_FIELDS | {"similarity", "source_type"}
FINE_FIELDS = {"chunk_id", "memory_id", "chunk_index", "chunk_content", "chunk_type", "header_path", "level",
               "similarity", "source", "granularity"}
MEDIUM_FIELDS = {"memory_id", "section_header", "section_content", "header_path", "chunks_in_section",
                 "matched_chunks", "match_ratio", "auto_merged", "similarity", "source", "granularity"}
EXPANDED_CHUNK_FIELDS = {"chunk_id", "chunk_index", "content", "chunk_type", "header_path", "level"}
STORE_FIELDS = {"success", "memory_id", "memory_type", "agent_id", "session_id", "content_hash", "chunks_created",
                "created_at", "message", "error"}

# ------------------------------------------------------------------------------------- documents

AUDIT_INTRO = (
    "This audit reviews the payment service that authorises, captures and refunds card payments for the web "
    "shop and the mobile apps. It was commissioned after three incidents in the first quarter, and it covers "
    "the database access layer, the retry behaviour between the services and the card network, and the caching "
    "of merchant fee schedules. Each section describes what we observed in production, why it happened, and "
    "what we recommend.")
AUDIT_SECTIONS: dict[str, list[str]] = {
    "Database Connection Pool": [
        "The checkout API talks to the primary PostgreSQL cluster through a HikariCP pool capped at ten "
        "connections per pod. During the Friday evening peak every one of those ten connections was checked out "
        "for seconds at a time, and request threads queued behind them: the pending-acquisition gauge climbed "
        "past 180 waiting threads and the median connection checkout wait reached 4.2 seconds. Because the pool "
        "sits in front of every write, one exhausted pool stalls authorisations, captures and refunds alike.",
        "The root cause is long-lived transactions. The settlement exporter opens a transaction, streams two "
        "hundred thousand ledger rows to object storage and only then commits, holding its connection for up to "
        "forty seconds. pg_stat_activity showed dozens of sessions in the state idle in transaction, each pinning "
        "a pool slot while doing no database work at all. HikariCP's leak detection threshold was disabled, so "
        "none of this was ever logged.",
        "On the database side, max_connections on the primary is 200 and the fleet runs twenty-two pods, so the "
        "theoretical demand of 220 connections already exceeds what PostgreSQL accepts. PgBouncer is deployed "
        "but configured in session pooling mode, which gives each client a dedicated server connection for its "
        "whole lifetime and therefore multiplexes nothing.",
        "We recommend switching PgBouncer to transaction pooling, moving the settlement export to a read replica "
        "with a server-side cursor committed in batches of five thousand rows, setting "
        "idle_in_transaction_session_timeout to thirty seconds, and enabling leak detection at ten seconds so "
        "that any connection held longer is reported with the stack trace of the code that borrowed it.",
    ],
    "Retry Storms": [
        "The second incident pattern is a retry storm against the card network gateway. When the acquirer's "
        "endpoint slows down, the gateway client times out after two seconds and retries three times; the "
        "payment orchestrator above it also retries three times, and so do the checkout API and the mobile "
        "client. Four layers of three retries amplify a single customer tap into as many as sixty-four attempts, "
        "and the acquirer saw our traffic jump twenty-fold within a minute of its first slow response.",
        "None of these layers uses jitter. Every retry fires on the same fixed one-second schedule, so the "
        "retries of thousands of requests arrive in synchronised waves \u2014 a thundering herd that peaked at "
        "02:00 when the nightly settlement batch started and pushed the gateway's error rate from 0.3 % to 41 %. "
        "The waves continued for eleven minutes after the acquirer had recovered, because each wave produced new "
        "timeouts that scheduled the next one.",
        "Retries are also unsafe here: the authorisation call carries no idempotency key, so a retried request "
        "whose first attempt actually succeeded creates a second authorisation hold on the customer's card. "
        "Support received 312 complaints about duplicate holds of \u20ac1 to \u20ac4,900 after the March incident.",
        "We recommend retrying in exactly one layer, the gateway client, with exponential backoff and full "
        "jitter, a retry budget of ten percent of live traffic, a circuit breaker that opens after twenty "
        "consecutive gateway failures, and an idempotency key on every authorisation so that the acquirer "
        "deduplicates any retry that slips through.",
    ],
    "Cache Invalidation": [
        "Merchant fee schedules are cached in Redis under the key fees:{merchant_id} with a time-to-live of "
        "twenty-four hours. The admin console writes a new fee schedule to PostgreSQL and then publishes an "
        "invalidation message on a Redis pub/sub channel; every checkout pod subscribes to that channel and "
        "deletes its local copy of the key when the message arrives.",
        "Pub/sub delivery is fire-and-forget. During the Redis Sentinel failover on 9 April the subscribers were "
        "disconnected for about forty seconds, the invalidation messages published in that window were lost, "
        "and for the rest of the day checkout kept charging twelve merchants the old interchange-plus fee of "
        "1.9 % instead of their renegotiated 1.4 %. Finance later refunded the difference by hand.",
        "A related problem appears when a popular key expires: hundreds of pods miss the cache at the same "
        "instant and all of them rebuild the fee schedule from PostgreSQL, a cache stampede that adds about nine "
        "hundred identical queries in one second. The stampede is harmless for small merchants but noticeable "
        "for the marketplace account, whose fee schedule has forty thousand rows.",
        "We recommend versioned cache keys (fees:{merchant_id}:v{schedule_version}) so that a stale entry can "
        "never be read after an update, write-through on the admin path, a short random extension of each TTL "
        "to spread expiries, and a single-flight lock so that only one pod rebuilds an expired schedule while "
        "the others wait for it.",
    ],
}
# Queries naming each section's distinctive content (in other words than the section's own).
SECTION_QUERIES = {
    "Database Connection Pool": "requests queue waiting for a free PostgreSQL connection because the pool is "
                                "exhausted by transactions left idle",
    "Retry Storms": "retries multiplied across layers without jitter caused a thundering herd at the card gateway",
    "Cache Invalidation": "stale merchant fee schedule served from Redis after the pub/sub invalidation message "
                          "was lost",
}


def markdown(title: str, intro: str, sections: dict[str, list[str]]) -> str:
    parts = [f"# {title}", intro]
    for heading, paragraphs in sections.items():
        parts.append(f"## {heading}")
        parts.extend(paragraphs)
    return "\n\n".join(parts) + "\n"


PAYMENT_AUDIT = markdown("Payment Service Audit", AUDIT_INTRO, AUDIT_SECTIONS)

REFUND_SECTIONS = {
    "Ledger Mismatch": [
        "Daily reconciliation between the refund service and the general ledger is off by a small but growing "
        "amount. On 14 May the ledger showed 1,204 refunds totalling \u20ac86,311.40 while the refund service "
        "reported 1,206 refunds totalling \u20ac86,379.15. The two missing entries were partial refunds issued "
        "through the support console, which posts to the ledger only after a manual approval that nobody gave.",
        "The reconciliation job matches records by refund reference, but partial refunds reuse the reference of "
        "the original payment with a numeric suffix, and the matcher strips the suffix before comparing. Two "
        "partial refunds of one payment therefore collapse into a single ledger line, and the job reports a "
        "missing refund instead of an amount difference.",
        "The support console makes this worse: an agent can split a refund into several partial refunds to "
        "stay under the approval threshold of \u20ac500, and each part waits separately for a supervisor. On "
        "busy days the approval queue holds more than forty partial refunds, some of them older than a week, "
        "and every one of them shows up in the reconciliation report as a missing ledger entry.",
        "A sample of thirty mismatched days shows the same pattern every time: the refund service is ahead of "
        "the ledger by exactly the partial refunds still waiting for approval, plus the ones whose references "
        "collided in the matcher. No refund was lost and no customer was paid twice; the mismatch is purely a "
        "reporting artefact, but finance cannot close the month while it is open.",
        "Next step: teach the matcher to keep the suffix and to flag approvals that have been pending for more "
        "than one business day.",
    ],
    "Currency Rounding": [
        "Refunds in Japanese yen and Kuwaiti dinar come out wrong by one minor unit. The refund service stores "
        "every amount with two decimals, so a yen amount, which has no minor unit, is multiplied by one hundred "
        "on the way in, and a dinar amount, which has three decimals, loses its last digit. Half-up rounding is "
        "applied at each conversion, so the error can appear twice in one refund.",
        "The ledger uses banker's rounding (round half to even) on the ISO 4217 exponent of each currency, which "
        "is correct. The fix is to carry the currency exponent with every amount in the refund service and to "
        "round once, at the end, with the same half-even rule the ledger uses.",
        "Three more currencies are affected in principle: the Bahraini dinar and the Omani rial also use three "
        "decimals, and the Icelandic kr\u00f3na, like the yen, uses none. None of them had refunds in the sample "
        "period, but the same conversion path would corrupt them in exactly the same way.",
        "The test suite never caught this because every fixture amount is in euros or US dollars. Adding one "
        "property-based test that round-trips random amounts in every ISO 4217 currency through the refund "
        "service and the ledger would have found the bug on the first run.",
        "Open question: the card network sends chargeback amounts for dinar with two decimals. Ask the acquirer "
        "whether that is expected before changing the parser.",
    ],
}
REFUND_NOTES = markdown("Refund Reconciliation Notes",
                        "Working notes for iteration v10, while the audit fixes are being load-tested.",
                        REFUND_SECTIONS)
LEDGER_QUERY = "partial refunds collapse into one ledger line because the matcher strips the reference suffix"
ROUNDING_QUERY = "yen and dinar refunds off by one minor unit because of rounding and the currency exponent"

LOAD_TEST_REPORT = (
    "# Checkout Load Test\n\nAt a sustained 800 requests per second the checkout flow kept its p99 latency under "
    "300 ms once PgBouncer ran in transaction pooling mode. The gateway client's retry budget held retries at 6 % "
    "of traffic during an injected acquirer slowdown, and no duplicate authorisation holds were created.\n")

SEARCH_SECTIONS = {
    "Tokenizer Warmup": [
        "The product search API answers in 40 ms at the median, but the first queries after every deployment "
        "take up to nine seconds. Each new pod loads the multilingual tokenizer and its 300 MB vocabulary "
        "lazily, on the first request that needs it, so the unlucky first customers wait for a disk read and a "
        "model initialisation before their query even starts.",
        "The readiness probe only checks that the HTTP port is open, so Kubernetes sends traffic to pods that "
        "have not loaded the tokenizer yet. We recommend loading the tokenizer during start-up and making the "
        "readiness probe run one real query through it.",
    ],
    "Shard Rebalancing": [
        "Every night at 03:00 the cluster rebalances shards after the catalogue reindex. While a shard "
        "relocates, queries routed to the old node compete with the recovery traffic for disk bandwidth, so p99 "
        "latency rises from 180 ms to 2.4 seconds for about twenty minutes.",
        "The recovery throttle is set to the default of 40 MB per second, and the reindex produces shards of "
        "55 GB, nearly three times the recommended size. Smaller shards of about 20 GB would keep each "
        "relocation short.",
    ],
}
SEARCH_REVIEW = markdown("Search Latency Review",
                         "This review looks at the latency of the product search API over the last six weeks.",
                         SEARCH_SECTIONS)
SHARD_NOTES = ("# Shard Sizing Scratchpad\n\nCandidate layout: 24 primary shards of about 20 GB each, one replica, "
               "routing by category id. Measure the reindex time with the smaller shards before proposing it.\n")

PAYMENTS_COMMANDS = (
    "psql -h payments-primary.internal -U auditor -c \"SELECT state, count(*) FROM pg_stat_activity GROUP BY state\"\n"
    "kubectl -n payments rollout restart deployment/checkout-api\n"
    "redis-cli -h fees-cache PUBSUB NUMSUB fee-invalidation\n")
SEARCH_COMMANDS = (
    "curl -s 'http://search-es-0:9200/_cat/recovery?active_only=true&v'\n"
    "curl -s 'http://search-es-0:9200/_cluster/settings?include_defaults=true' | jq '.defaults.indices.recovery'\n")
SYSTEM_QUERY = "count the PostgreSQL sessions grouped by state with psql"

KB_IDEMPOTENCY_TITLE = "Idempotency Keys for Payment APIs"
KB_IDEMPOTENCY = markdown(KB_IDEMPOTENCY_TITLE, "A short guide for every team that exposes a payment endpoint.", {
    "Why Keys Matter": [
        "A payment API must tolerate retries from clients, load balancers and its own workers without charging "
        "a customer twice. The standard technique is an idempotency key: the client generates a unique key for "
        "each logical operation and sends it with every attempt, and the server records the outcome of the "
        "first attempt under that key.",
        "When a later attempt arrives with a key that is already recorded, the server returns the stored "
        "response instead of performing the operation again. Keys must be scoped to the merchant account so "
        "that two merchants cannot collide, and a request that reuses a key with a different body must be "
        "rejected with a conflict error.",
        "Without keys, every retry is a gamble: a request that timed out may have succeeded on the server, and "
        "the client cannot tell whether repeating it will charge the customer again. Keys turn that uncertainty "
        "into a simple rule that clients can follow blindly: retry with the same key until an answer arrives.",
        "Keys also make asynchronous workers safe. A message queue delivers at least once, so a capture worker "
        "may see the same capture request twice after a rebalance; with the key stored, the second delivery "
        "finds the first outcome and acknowledges the message without calling the card network again.",
    ],
    "Storing Keys": [
        "Store each key together with a fingerprint of the request body, the response status and body, and a "
        "lock flag that marks an attempt still in progress. A second attempt that finds the lock set waits or "
        "returns a retry-later answer rather than running concurrently.",
        "Keep keys for at least twenty-four hours, longer than any client's retry window, and expire them with "
        "a background sweep instead of on read, so that expiry never races a retry.",
        "Put the key table in the same database as the payment records and write the key in the same "
        "transaction as the payment itself. A key stored in a separate cache can survive a rolled-back payment "
        "or vanish while the payment stays, and either way the guarantee is gone.",
        "Finally, log every replayed response with the key and the age of the original attempt. A sudden rise "
        "in replays is an early sign of a client retrying in a tight loop or of a load balancer that resends "
        "requests after its own timeout.",
    ],
})
KB_QUERY = "a message queue delivers the same capture request twice to a worker after a rebalance"
KB_SHARDS = ("Keep Elasticsearch shards between 10 and 50 GB; aim for about 20 GB for latency-sensitive search "
             "indices, and keep fewer than 20 shards per GB of JVM heap on a node.")
KB_GENERAL = "Every runbook names an owner team and a paging rotation, and is reviewed after each incident."

CONTEXTS = {
    (S1, "v2"): "Session context v2: the user asked for an audit of the payment service after three production "
                "incidents; focus on the database pool, retries and caching.",
    (S1, "v10"): "Session context v10: the audit report is done; the user now wants the refund reconciliation "
                 "mismatch investigated and a load test of the fixes.",
    (S2, "v2"): "Session context v2: the user reports slow product search after deployments and at night.",
    (S2, "v10"): "Session context v10: the tokenizer warm-up fix shipped; continue with shard sizing.",
}
PROMPTS = {  # verbatim, odd whitespace included
    (S1, "v2"): "Please audit our payment service.  We had three incidents in Q1 \u2014 see the postmortems.\n"
                "  Focus on DB pool, retries, caching.\n",
    (S1, "v10"): "Now look at why refunds don't reconcile with the ledger (off by ~\u20ac68), and load-test "
                 "the fixes.\t\n",
    (S2, "v2"): "Search is slow right after deploys and around 3am. Why?\n",
    (S2, "v10"): "OK the warm-up fix works. What shard size should we use?  \n",
}
OBSERVATIONS = {
    S1: "Observation on the payment audit: the pool exhaustion and the retry storm of 9 April were one incident "
        "seen from two sides \u2014 retried requests held connections while waiting for the gateway.",
    S2: "Observation on the search review: the nine-second first queries only happen on pods scheduled onto "
        "nodes without a warm page cache.",
}

# (key, tool, arguments): the multi-agent story, in the order it happens.
SEED: list[tuple[str, str, dict[str, Any]]] = [
    ("s1_ctx_v2", "store_session_context",
     {"session_id": S1, "session_iter": "v2", "content": CONTEXTS[S1, "v2"], "task_code": TASK1}),
    ("s1_prompt_v2", "store_input_prompt",
     {"session_id": S1, "session_iter": "v2", "content": PROMPTS[S1, "v2"], "task_code": TASK1}),
    ("s1_sys", "store_system_memory", {"agent_id": EXPLORER, "session_id": S1, "content": PAYMENTS_COMMANDS,
                                       "session_iter": "v2", "task_code": TASK1}),
    ("s1_audit", "store_report", {"agent_id": EXPLORER, "session_id": S1, "content": PAYMENT_AUDIT,
                                  "session_iter": "v2", "task_code": TASK1}),
    ("s1_ctx_v10", "store_session_context",
     {"session_id": S1, "session_iter": "v10", "content": CONTEXTS[S1, "v10"], "task_code": TASK1}),
    ("s1_prompt_v10", "store_input_prompt",
     {"session_id": S1, "session_iter": "v10", "content": PROMPTS[S1, "v10"], "task_code": TASK1}),
    ("s1_wm", "store_working_memory", {"agent_id": EXPLORER, "session_id": S1, "content": REFUND_NOTES,
                                       "session_iter": "v10", "task_code": TASK1}),
    ("s1_obs", "store_report_observation", {"agent_id": EXPLORER, "session_id": S1, "content": OBSERVATIONS[S1],
                                            "session_iter": "v10", "task_code": TASK1}),
    ("s1_loadtest", "store_report", {"agent_id": ANALYST, "session_id": S1, "content": LOAD_TEST_REPORT,
                                     "session_iter": "v10", "task_code": TASK1}),
    ("s2_ctx_v2", "store_session_context",
     {"session_id": S2, "session_iter": "v2", "content": CONTEXTS[S2, "v2"], "task_code": TASK2}),
    ("s2_prompt_v2", "store_input_prompt",
     {"session_id": S2, "session_iter": "v2", "content": PROMPTS[S2, "v2"], "task_code": TASK2}),
    ("s2_review", "store_report", {"agent_id": ANALYST, "session_id": S2, "content": SEARCH_REVIEW,
                                   "session_iter": "v2", "task_code": TASK2}),
    ("s2_obs", "store_report_observation", {"agent_id": ANALYST, "session_id": S2, "content": OBSERVATIONS[S2],
                                            "session_iter": "v2", "task_code": TASK2}),
    ("s2_ctx_v10", "store_session_context",
     {"session_id": S2, "session_iter": "v10", "content": CONTEXTS[S2, "v10"], "task_code": TASK2}),
    ("s2_prompt_v10", "store_input_prompt",
     {"session_id": S2, "session_iter": "v10", "content": PROMPTS[S2, "v10"], "task_code": TASK2}),
    ("s2_wm", "store_working_memory", {"agent_id": ANALYST, "session_id": S2, "content": SHARD_NOTES,
                                       "session_iter": "v10", "task_code": TASK2}),
    ("s2_sys", "store_system_memory", {"agent_id": ANALYST, "session_id": S2, "content": SEARCH_COMMANDS,
                                       "session_iter": "v10", "task_code": TASK2}),
    ("kb_idempotency", "store_knowledge_base", {"agent_id": EXPLORER, "title": KB_IDEMPOTENCY_TITLE,
                                                "content": KB_IDEMPOTENCY, "category": "payments"}),
    ("kb_shards", "store_knowledge_base", {"agent_id": ANALYST, "title": "Elasticsearch Shard Sizing",
                                           "content": KB_SHARDS, "category": "search-infra"}),
    ("kb_general", "store_knowledge_base", {"agent_id": ANALYST, "title": "Runbook Ownership",
                                            "content": KB_GENERAL}),
]
MEMORY_TYPE_OF_TOOL = {
    "store_session_context": "session_context", "store_input_prompt": "input_prompt",
    "store_system_memory": "system_memory", "store_report": "report",
    "store_report_observation": "report_observation", "store_working_memory": "working_memory",
    "store_knowledge_base": "knowledge_base",
}
UNCHUNKED_TYPES = {"session_context", "input_prompt", "system_memory", "report_observation"}


# ------------------------------------------------------------------------------------- helpers

def sha16(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def flat(text: str) -> str:
    return " ".join(text.split())


def parse_ts(value: Any) -> datetime:
    assert isinstance(value, str) and value, f"not an ISO-8601 timestamp: {value!r}"
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed


def ok(result: Any) -> dict[str, Any]:
    """Spec 001's success: not a tool error, structured content with success true and error None."""
    body = result.structured_content
    assert not result.is_error, f"unexpected tool error: {text_of(result)!r} {body!r}"
    assert isinstance(body, dict), f"no structured content: {text_of(result)!r}"
    assert body.get("success") is True, body
    assert "error" in body and body["error"] is None, f"a success must carry error: None: {body!r}"
    return body


async def call(client: Any, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    return ok(await client.call_tool(tool, arguments or {}))


def refused(result: Any, kind: str, field: str | None = None, what: str = "") -> dict[str, Any]:
    """Spec 001's error: a tool error, ``{"success": False, "error": kind, "message": ...}`` (+ ``field``)."""
    body = result.structured_content
    assert result.is_error, f"{what}: accepted: {body!r}"
    assert isinstance(body, dict), f"{what}: no structured error; text={text_of(result)!r}"
    assert body.get("success") is False, f"{what}: {body!r}"
    assert body.get("error") == kind, f"{what}: expected error {kind!r}: {body!r}"
    message = body.get("message")
    assert isinstance(message, str) and message.strip(), f"{what}: no message: {body!r}"
    if field is not None:
        assert body.get("field") == field, f"{what}: expected field {field!r}: {body!r}"
        assert field.lower() in message.lower(), f"{what}: message does not name {field!r}: {message!r}"
    assert "Traceback" not in text_of(result)
    return body


async def list_all_tools(client: Any) -> list[Any]:
    tools: list[Any] = []
    cursor = None
    while True:
        page = await client.list_tools(cursor=cursor) if cursor else await client.list_tools()
        tools.extend(page.tools)
        cursor = getattr(page, "next_cursor", None)
        if not cursor:
            return tools


def result_ids(body: dict[str, Any]) -> list[str]:
    return [r["id"] for r in body["results"]]


def memory_ids(body: dict[str, Any]) -> list[str]:
    return [r["memory_id"] for r in body["results"]]


def is_chunk_of(chunk_id: Any, memory_id: str) -> bool:
    return isinstance(chunk_id, str) and chunk_id.startswith(f"{memory_id}::chunk::")


def files_under(directory: Path) -> set[str]:
    """Every path under ``directory`` (symlinks listed, not followed); empty when it does not exist."""
    if not directory.exists():
        return set()
    found: set[str] = set()
    for root, dirs, files in os.walk(directory, followlinks=False):
        for name in dirs + files:
            found.add(str(Path(root, name).relative_to(directory)))
    return found


@dataclass
class World:
    """What ``seed`` stored (store results by key), and the directories the export checks look at."""

    data_dir: Path
    export_dir: Path
    outside_dir: Path  # a directory outside the export dir (and outside the data dir)
    stored: dict[str, dict[str, Any]] = field(default_factory=dict)
    arguments: dict[str, dict[str, Any]] = field(default_factory=dict)
    audit_chunk_id: str | None = None

    def id(self, key: str) -> str:
        return str(self.stored[key]["memory_id"])

    def content(self, key: str) -> str:
        return str(self.arguments[key]["content"])


async def seed(client: Any, data_dir: Path, export_dir: Path, outside_dir: Path) -> World:
    world = World(data_dir=data_dir, export_dir=export_dir, outside_dir=outside_dir)
    for key, tool, arguments in SEED:
        result = await client.call_tool(tool, arguments)
        body = result.structured_content
        assert not result.is_error and isinstance(body, dict) and body.get("success") is True, (
            f"seed: {tool} ({key}) failed: {text_of(result)!r} {body!r}")
        world.stored[key] = body
        world.arguments[key] = arguments
    # A real chunk id for the bad-input cases of expand_chunk_context (best effort: checks test the search).
    found = await client.call_tool("search_reports_specific_chunks",
                                   {"query": SECTION_QUERIES["Retry Storms"], "session_id": S1, "limit": 3})
    if not found.is_error and isinstance(found.structured_content, dict):
        chunks = [r["chunk_id"] for r in found.structured_content.get("results", [])
                  if is_chunk_of(r.get("chunk_id"), world.id("s1_audit"))]
        world.audit_chunk_id = chunks[0] if chunks else None
    return world


def keys_of(session: str) -> list[str]:
    return [key for key, _, arguments in SEED if arguments.get("session_id") == session]


def tool_of(key: str) -> str:
    return next(tool for k, tool, _ in SEED if k == key)


# --------------------------------------------------------------------------------------- checks

_STORE_ORCHESTRATOR = ({"session_id", "session_iter", "content", "task_code"},
                       {"session_id", "session_iter", "content"})
_STORE_AGENT = ({"agent_id", "session_id", "content", "session_iter", "task_code"},
                {"agent_id", "session_id", "content"})
_SCOPED_SEARCH = ({"session_id", "session_iter", "limit", "latest_first"}, {"session_id"})
_QUERY_SEARCH = {"query", "agent_id", "session_id", "session_iter", "task_code", "limit"}
# tool -> (exact properties, exact required, defaults); None: checked separately
SCHEMAS: dict[str, tuple[set[str], set[str] | None, dict[str, Any]]] = {
    "store_session_context": (*_STORE_ORCHESTRATOR, {}),
    "store_input_prompt": (*_STORE_ORCHESTRATOR, {}),
    "store_system_memory": (*_STORE_AGENT, {}),
    "store_report": (*_STORE_AGENT, {}),
    "store_report_observation": (*_STORE_AGENT, {}),
    "store_working_memory": (*_STORE_AGENT, {}),
    # category: str | None in the spec, "general" when left out (check_knowledge_base looks at the behaviour)
    "store_knowledge_base": ({"agent_id", "title", "content", "category"}, {"agent_id", "title", "content"}, {}),
    "search_session_context": (*_SCOPED_SEARCH, {"limit": 5, "latest_first": True}),
    "search_input_prompts": (*_SCOPED_SEARCH, {"limit": 5, "latest_first": True}),
    # Whole memories in scope order (no query, or COARSE) newest first unless latest_first=false (the issue's).
    "search_system_memory": (_QUERY_SEARCH | {"latest_first"}, None, {"limit": 10, "latest_first": True}),
    **{f"search_{kind}_{granularity}": (_QUERY_SEARCH, None, {"limit": limit})
       for kind in ("reports", "working_memory")
       for granularity, limit in (("specific_chunks", 10), ("section_context", 5))},
    **{f"search_{kind}_full_documents": (_QUERY_SEARCH | {"latest_first"}, None, {"limit": 3, "latest_first": True})
       for kind in ("reports", "working_memory")},
    "load_session_context_for_task": ({"session_id", "session_iter"}, {"session_id", "session_iter"}, {}),
    "expand_chunk_context": ({"chunk_id", "surrounding_chunks"}, {"chunk_id"}, {"surrounding_chunks": 2}),
    "reconstruct_document": ({"memory_id"}, {"memory_id"}, {}),
    "get_memory_by_id": ({"memory_id"}, {"memory_id"}, {}),
    "get_session_stats": ({"session_id"}, {"session_id"}, {}),
    "list_sessions": ({"limit", "agent_id"}, set(), {"limit": 20}),
    "write_document_to_file": ({"memory_id", "output_path"}, {"memory_id", "output_path"}, {}),
    "delete_memory": ({"memory_id"}, {"memory_id"}, {}),
    "cleanup_old_memories": ({"days_old", "dry_run"}, set(), {"days_old": 90, "dry_run": True}),
}
KB_SEARCH_LIMITS = {"specific_chunks": 10, "section_context": 5, "full_documents": 3}


async def check_tools(client: Any, world: World) -> None:
    """All 28 tools of spec 001, with the spec's parameter names, required ones and defaults."""
    tools = await list_all_tools(client)
    names = [t.name for t in tools]
    assert len(names) == len(set(names)), f"duplicate tool names: {names}"
    assert SESSION_TOOLS <= set(names), f"missing: {sorted(SESSION_TOOLS - set(names))}"
    assert not ZAPOMNI_TOOLS & set(names), f"MEMTROVE_TOOLSETS=sessions lists zapomni tools: {names}"
    schemas = {t.name: t.input_schema for t in tools}
    problems: list[str] = []
    for name, (properties, required, defaults) in SCHEMAS.items():
        schema = schemas[name]
        got = set(schema.get("properties", {}))
        if got != properties:
            problems.append(f"{name}: parameters {sorted(got)} != {sorted(properties)}")
        got_required = set(schema.get("required", []))
        if required is not None and got_required != required:
            problems.append(f"{name}: required {sorted(got_required)} != {sorted(required)}")
        if required is None and not got_required <= {"query"}:
            problems.append(f"{name}: only query may be required, not {sorted(got_required)}")
        for parameter, default in defaults.items():
            got_default = schema.get("properties", {}).get(parameter, {}).get("default", "<none>")
            if got_default != default:
                problems.append(f"{name}: {parameter} default {got_default!r} != {default!r}")
    for granularity, limit in KB_SEARCH_LIMITS.items():
        name = f"search_knowledge_base_{granularity}"
        got = set(schemas[name].get("properties", {}))
        if not {"query", "category", "limit"} <= got or {"session_id", "session_iter"} & got:
            problems.append(f"{name}: parameters {sorted(got)} (want query, category, limit; no session filters)")
        got_default = schemas[name].get("properties", {}).get("limit", {}).get("default", "<none>")
        if got_default != limit:
            problems.append(f"{name}: limit default {got_default!r} != {limit}")
    assert not problems, "\n".join(problems)


async def check_store_results(client: Any, world: World) -> None:
    """Every store answered with spec 001's fields: ids, type, agent, session, hash, chunks, time."""
    problems: list[str] = []
    for key, tool, arguments in SEED:
        body = world.stored[key]
        memory_type = MEMORY_TYPE_OF_TOOL[tool]
        expected_agent = arguments.get("agent_id", ORCHESTRATOR)
        missing = STORE_FIELDS - set(body)
        checks = {
            "fields": not missing,
            "memory_id": isinstance(body.get("memory_id"), str) and bool(MEMORY_ID.match(body["memory_id"])),
            "memory_type": body.get("memory_type") == memory_type,
            "agent_id": body.get("agent_id") == expected_agent,
            "session_id": body.get("session_id") == arguments.get("session_id"),
            "content_hash": body.get("content_hash") == sha16(arguments["content"]),
            "chunks_created": isinstance(body.get("chunks_created"), int) and not isinstance(
                body.get("chunks_created"), bool) and body["chunks_created"] >= 0,
            "unchunked type": memory_type not in UNCHUNKED_TYPES or body.get("chunks_created") == 0,
            "created_at": _is_iso(body.get("created_at")),
        }
        bad = [name for name, passed in checks.items() if not passed]
        if bad:
            problems.append(f"{key} ({tool}): {bad} missing={sorted(missing)} {body!r}")
    assert not problems, "\n".join(problems)
    ids = [world.id(key) for key, _, _ in SEED]
    assert len(set(ids)) == len(ids), f"two stores share an id: {ids}"
    assert world.stored["s1_audit"]["chunks_created"] > 0, f"the report was not chunked: {world.stored['s1_audit']}"
    assert world.stored["s1_wm"]["chunks_created"] > 0, "the Markdown working notes were not chunked"
    assert world.stored["kb_idempotency"]["chunks_created"] > 0, "the knowledge-base guide was not chunked"


def _is_iso(value: Any) -> bool:
    try:
        parse_ts(value)
    except (AssertionError, ValueError):
        return False
    return True


async def check_duplicate_content(client: Any, world: World) -> None:
    """The same content, type and scope again returns the first memory; another scope or type a new one."""
    session = "duplicate-check-2207"
    content = ("# Duplicate Probe\n\nThe fraud rules engine scores each card transaction between 0 and 1000 and "
               "declines above 870.\n")
    report = {"agent_id": EXPLORER, "session_id": session, "content": content, "session_iter": "v1"}
    first = await call(client, "store_report", report)
    again = await call(client, "store_report", report)
    assert again["memory_id"] == first["memory_id"], (first, again)
    assert again.get("duplicate") is True, again
    assert "already stored" in again["message"], again["message"]
    assert again["content_hash"] == first["content_hash"] == sha16(content)
    stats = await call(client, "get_session_stats", {"session_id": session})
    assert stats["total_memories"] == 1, f"the duplicate was stored twice: {stats}"
    other_session = await call(client, "store_report", {**report, "session_id": session + "-b"})
    assert other_session["memory_id"] != first["memory_id"], "another session must give another memory"
    other_type = await call(client, "store_working_memory", report)
    assert other_type["memory_id"] != first["memory_id"], "another memory type must give another memory"
    context = {"session_id": session, "session_iter": "v1", "content": "Duplicate probe context."}
    context_first = await call(client, "store_session_context", context)
    context_again = await call(client, "store_session_context", context)
    assert context_again["memory_id"] == context_first["memory_id"] and context_again.get("duplicate") is True, (
        context_first, context_again)


def _scoped_result(result: dict[str, Any], what: str) -> None:
    missing = SCOPED_FIELDS - set(result)
    assert not missing, f"{what}: missing {sorted(missing)}: {result!r}"
    assert result["similarity"] == SCOPED_SIMILARITY and result["source_type"] == "scoped", (what, result)
    assert MEMORY_ID.match(result["id"]), (what, result["id"])


async def check_session_iter_natural_order(client: Any, world: World) -> None:
    """search_session_context: v10 before v2 (newest first), reversed with latest_first=false, filtered by iter."""
    body = await call(client, "search_session_context", {"session_id": S1})
    assert result_ids(body) == [world.id("s1_ctx_v10"), world.id("s1_ctx_v2")], (
        f"v10 must come before v2: {[(r['session_iter'], r['id']) for r in body['results']]}")
    for r in body["results"]:
        _scoped_result(r, "search_session_context")
        assert r["memory_type"] == "session_context" and r["agent_id"] == ORCHESTRATOR and r["session_id"] == S1, r
        assert r["task_code"] == TASK1, r
    assert [r["session_iter"] for r in body["results"]] == ["v10", "v2"], body["results"]
    assert [r["content"] for r in body["results"]] == [CONTEXTS[S1, "v10"], CONTEXTS[S1, "v2"]]
    assert body["query"] is None and body["limit"] == 5 and body["latest_first"] is True, body
    assert body["total_results"] >= len(body["results"]), body
    oldest_first = await call(client, "search_session_context", {"session_id": S1, "latest_first": False})
    assert result_ids(oldest_first) == [world.id("s1_ctx_v2"), world.id("s1_ctx_v10")], oldest_first["results"]
    assert oldest_first["latest_first"] is False
    only_v2 = await call(client, "search_session_context", {"session_id": S1, "session_iter": "v2"})
    assert result_ids(only_v2) == [world.id("s1_ctx_v2")], only_v2["results"]
    other = await call(client, "search_session_context", {"session_id": S2})
    assert result_ids(other) == [world.id("s2_ctx_v10"), world.id("s2_ctx_v2")], other["results"]
    nothing = await call(client, "search_session_context", {"session_id": "no-such-session-0000"})
    assert nothing["results"] == [], nothing


async def check_scoped_search_limit_and_order(client: Any, world: World) -> None:
    """Six iterations stored out of order come back v11, v10, v9, v3, v2, v1; the default limit is 5."""
    session = "iteration-order-3090"
    stored: dict[str, str] = {}
    for iteration in ("v3", "v11", "v1", "v10", "v2", "v9"):
        body = await call(client, "store_session_context", {
            "session_id": session, "session_iter": iteration,
            "content": f"Context of iteration {iteration} of {session}."})
        stored[iteration] = body["memory_id"]
    natural = ["v11", "v10", "v9", "v3", "v2", "v1"]
    default = await call(client, "search_session_context", {"session_id": session})
    assert [r["session_iter"] for r in default["results"]] == natural[:5], default["results"]
    assert result_ids(default) == [stored[i] for i in natural[:5]]
    everything = await call(client, "search_session_context", {"session_id": session, "limit": 100,
                                                               "latest_first": False})
    assert [r["session_iter"] for r in everything["results"]] == natural[::-1], everything["results"]
    two = await call(client, "search_session_context", {"session_id": session, "limit": 2})
    assert result_ids(two) == [stored["v11"], stored["v10"]], two["results"]
    one = await call(client, "search_session_context", {"session_id": session, "limit": 1, "latest_first": False})
    assert result_ids(one) == [stored["v1"]], one["results"]


async def check_search_input_prompts_verbatim(client: Any, world: World) -> None:
    body = await call(client, "search_input_prompts", {"session_id": S1})
    assert result_ids(body) == [world.id("s1_prompt_v10"), world.id("s1_prompt_v2")], body["results"]
    assert [r["content"] for r in body["results"]] == [PROMPTS[S1, "v10"], PROMPTS[S1, "v2"]], (
        "input prompts must come back verbatim")
    for r in body["results"]:
        _scoped_result(r, "search_input_prompts")
        assert r["memory_type"] == "input_prompt" and r["agent_id"] == ORCHESTRATOR, r
    reverse = await call(client, "search_input_prompts", {"session_id": S1, "latest_first": False})
    assert result_ids(reverse) == [world.id("s1_prompt_v2"), world.id("s1_prompt_v10")]
    v10 = await call(client, "search_input_prompts", {"session_id": S2, "session_iter": "v10"})
    assert result_ids(v10) == [world.id("s2_prompt_v10")], v10["results"]


async def check_search_system_memory(client: Any, world: World) -> None:
    body = await call(client, "search_system_memory", {"query": SYSTEM_QUERY, "session_id": S1})
    assert body["results"] and body["results"][0]["id"] == world.id("s1_sys"), body["results"]
    top = body["results"][0]
    assert top["content"] == PAYMENTS_COMMANDS and top["memory_type"] == "system_memory", top
    assert top["agent_id"] == EXPLORER and top["session_id"] == S1 and top["session_iter"] == "v2", top
    assert isinstance(top["similarity"], float), top
    assert all(r["memory_type"] == "system_memory" and r["session_id"] == S1 for r in body["results"]), body
    other_agent = await call(client, "search_system_memory", {"query": SYSTEM_QUERY, "agent_id": ANALYST})
    assert world.id("s1_sys") not in result_ids(other_agent), "agent_id filter ignored"
    assert all(r["agent_id"] == ANALYST for r in other_agent["results"]), other_agent
    other_task = await call(client, "search_system_memory", {"query": SYSTEM_QUERY, "task_code": TASK2})
    assert world.id("s1_sys") not in result_ids(other_task), "task_code filter ignored"
    other_iter = await call(client, "search_system_memory", {"query": SYSTEM_QUERY, "session_id": S1,
                                                             "session_iter": "v10"})
    assert world.id("s1_sys") not in result_ids(other_iter), "session_iter filter ignored"
    scoped = await call(client, "search_system_memory", {"session_id": S1})  # no query: a scoped listing
    assert world.id("s1_sys") in result_ids(scoped), scoped["results"]
    assert all(r["similarity"] == 2.0 and r["memory_type"] == "system_memory" for r in scoped["results"]), scoped
    assert scoped["query"] is None and scoped["latest_first"] is True, scoped
    reverse = await call(client, "search_system_memory", {"session_id": S1, "latest_first": False})
    assert result_ids(reverse) == result_ids(scoped)[::-1] and reverse["latest_first"] is False, reverse


def _fine_result(r: dict[str, Any], what: str) -> None:
    missing = FINE_FIELDS - set(r)
    assert not missing, f"{what}: missing {sorted(missing)}: {r!r}"
    # A memory kept whole (an unchunked short report) is its own single piece: its chunk_id is its id.
    assert MEMORY_ID.match(r["memory_id"]) and (
        is_chunk_of(r["chunk_id"], r["memory_id"]) or r["chunk_id"] == r["memory_id"]), (what, r)
    assert isinstance(r["chunk_index"], int) and r["chunk_index"] >= 0, (what, r)
    assert isinstance(r["chunk_content"], str) and r["chunk_content"].strip(), (what, r)
    assert isinstance(r["chunk_type"], str) and r["chunk_type"], (what, r)
    assert isinstance(r["header_path"], str), (what, r)
    assert isinstance(r["level"], int) and not isinstance(r["level"], bool), (what, r)
    assert isinstance(r["similarity"], float) and 0.0 <= r["similarity"] <= 1.0, (what, r)
    assert r["source"] == "chunk" and r["granularity"] == "fine", (what, r)


async def check_fine_finds_each_section(client: Any, world: World) -> None:
    """A query naming a section's content finds a chunk of that section of the audit first."""
    audit = world.id("s1_audit")
    failures: list[str] = []
    for heading, query in SECTION_QUERIES.items():
        body = await call(client, "search_reports_specific_chunks", {"query": query, "session_id": S1, "limit": 5})
        top = body["results"][0] if body["results"] else None
        if top is None or top["memory_id"] != audit or f"## {heading}" not in top["header_path"] \
                or not is_chunk_of(top["chunk_id"], audit):
            failures.append(f"{heading}: got {[(r['memory_id'][-6:], r['header_path']) for r in body['results']]}")
    assert not failures, "\n".join(failures)


async def check_fine_result_fields(client: Any, world: World) -> None:
    audit = world.stored["s1_audit"]
    body = await call(client, "search_reports_specific_chunks", {"query": SECTION_QUERIES["Cache Invalidation"]})
    assert body["granularity"] == "fine" and body["total_results"] >= len(body["results"]), body
    assert 0 < len(body["results"]) <= 10, "the default limit is 10"
    for r in body["results"]:
        _fine_result(r, "search_reports_specific_chunks")
    top = body["results"][0]
    assert top["memory_id"] == audit["memory_id"], body["results"]
    assert top["header_path"].startswith("# Payment Service Audit"), top["header_path"]
    assert " > " in top["header_path"] and top["level"] >= 2, top
    assert top["chunk_index"] < audit["chunks_created"], (top, audit)
    assert "Redis" in top["chunk_content"] or "fee" in top["chunk_content"], top["chunk_content"]
    two = await call(client, "search_reports_specific_chunks", {"query": SECTION_QUERIES["Retry Storms"], "limit": 2})
    assert len(two["results"]) <= 2, two
    chunk_ids = [r["chunk_id"] for r in body["results"]]
    assert len(chunk_ids) == len(set(chunk_ids)), f"a chunk appears twice: {chunk_ids}"


async def check_fine_filters(client: Any, world: World) -> None:
    """session_id, session_iter, agent_id and task_code filter the chunks (the audit is S1, v2, explorer)."""
    audit = world.id("s1_audit")
    query = SECTION_QUERIES["Retry Storms"]
    failures: list[str] = []
    for filters, included in (
        ({"session_id": S1}, True), ({"session_id": S2}, False),
        ({"session_id": S1, "session_iter": "v2"}, True), ({"session_id": S1, "session_iter": "v10"}, False),
        ({"agent_id": EXPLORER}, True), ({"agent_id": ANALYST}, False),
        ({"task_code": TASK1}, True), ({"task_code": TASK2}, False),
    ):
        body = await call(client, "search_reports_specific_chunks", {"query": query, "limit": 10, **filters})
        found = audit in memory_ids(body)
        if found != included:
            failures.append(f"{filters}: audit {'missing' if included else 'leaked'}: {memory_ids(body)}")
        if filters.get("session_id") == S2 and any(m != world.id("s2_review") for m in memory_ids(body)):
            failures.append(f"{filters}: results outside S2's report: {memory_ids(body)}")
    assert not failures, "\n".join(failures)


async def check_searches_keep_to_their_memory_type(client: Any, world: World) -> None:
    reports = await call(client, "search_reports_specific_chunks", {"query": LEDGER_QUERY, "session_id": S1})
    assert world.id("s1_wm") not in memory_ids(reports), "a report search returned working memory"
    working = await call(client, "search_working_memory_specific_chunks",
                         {"query": SECTION_QUERIES["Retry Storms"], "session_id": S1})
    assert world.id("s1_audit") not in memory_ids(working), "a working-memory search returned a report"
    knowledge = await call(client, "search_knowledge_base_specific_chunks", {"query": SECTION_QUERIES["Retry Storms"]})
    assert world.id("s1_audit") not in memory_ids(knowledge), "a knowledge-base search returned a report"
    coarse = await call(client, "search_reports_full_documents", {"query": "payment", "session_id": S1, "limit": 100})
    assert all(r["memory_type"] == "report" for r in coarse["results"]), coarse


def _medium_result(r: dict[str, Any], what: str) -> None:
    missing = MEDIUM_FIELDS - set(r)
    assert not missing, f"{what}: missing {sorted(missing)}: {r!r}"
    assert MEMORY_ID.match(r["memory_id"]), (what, r)
    total, matched = r["chunks_in_section"], r["matched_chunks"]
    assert isinstance(total, int) and isinstance(matched, int) and 1 <= matched <= total, (what, r)
    assert abs(r["match_ratio"] - matched / total) < 1e-6, (what, r)
    assert r["auto_merged"] is (r["match_ratio"] >= 0.6), (what, r)
    assert isinstance(r["similarity"], float) and 0.0 <= r["similarity"] <= 1.0, (what, r)
    assert r["source"] == "expanded_section" and r["granularity"] == "medium", (what, r)
    assert isinstance(r["section_content"], str) and r["section_content"].strip(), (what, r)


async def check_medium_section_context(client: Any, world: World) -> None:
    """The whole H1 > H2 section that matched, with match_ratio and auto_merged, best section first."""
    body = await call(client, "search_reports_section_context",
                      {"query": SECTION_QUERIES["Cache Invalidation"], "session_id": S1})
    assert body["granularity"] == "medium" and 0 < len(body["results"]) <= 5, body
    for r in body["results"]:
        _medium_result(r, "search_reports_section_context")
    similarities = [r["similarity"] for r in body["results"]]
    assert similarities == sorted(similarities, reverse=True), f"not sorted by average similarity: {similarities}"
    keys = [(r["memory_id"], r["header_path"]) for r in body["results"]]
    assert len(keys) == len(set(keys)), f"a section appears twice: {keys}"
    top = body["results"][0]
    assert top["memory_id"] == world.id("s1_audit"), body["results"]
    assert "Cache Invalidation" in top["section_header"], top["section_header"]
    assert "# Payment Service Audit" in top["header_path"] and "## Cache Invalidation" in top["header_path"], top
    section = flat(top["section_content"])
    missing = [p[:60] for p in AUDIT_SECTIONS["Cache Invalidation"] if flat(p) not in section]
    assert not missing, f"section_content is not the whole section; missing paragraphs: {missing}"
    leaked = [p[:60] for p in AUDIT_SECTIONS["Retry Storms"] + AUDIT_SECTIONS["Database Connection Pool"]
              if flat(p) in section]
    assert not leaked, f"section_content holds other sections: {leaked}"


async def check_coarse_full_documents(client: Any, world: World) -> None:
    """Whole reports, scoped (similarity 2.0), newest iteration first, content exactly as stored."""
    body = await call(client, "search_reports_full_documents", {"query": "checkout", "session_id": S1})
    assert result_ids(body) == [world.id("s1_loadtest"), world.id("s1_audit")], (
        f"v10 report then v2 report: {[(r['session_iter'], r['id']) for r in body['results']]}")
    for r in body["results"]:
        _scoped_result(r, "search_reports_full_documents")
        assert r["memory_type"] == "report" and r["session_id"] == S1, r
    assert body["results"][1]["content"] == PAYMENT_AUDIT, "the full document is not the stored text"
    assert body["results"][0]["content"] == LOAD_TEST_REPORT
    assert body["results"][1]["agent_id"] == EXPLORER and body["results"][1]["task_code"] == TASK1
    assert body["results"][1]["content_hash"] == sha16(PAYMENT_AUDIT)
    by_iter = await call(client, "search_reports_full_documents", {"query": "audit", "session_id": S1,
                                                                   "session_iter": "v2"})
    assert result_ids(by_iter) == [world.id("s1_audit")], by_iter["results"]
    by_agent = await call(client, "search_reports_full_documents", {"query": "latency", "agent_id": ANALYST})
    assert world.id("s1_audit") not in result_ids(by_agent)
    assert {world.id("s1_loadtest"), world.id("s2_review")} <= set(result_ids(by_agent)), by_agent["results"]
    one = await call(client, "search_reports_full_documents", {"query": "checkout", "session_id": S1, "limit": 1})
    assert result_ids(one) == [world.id("s1_loadtest")]
    assert (body["granularity"], body["total_results"], body["query"], body["limit"], body["latest_first"]) == (
        "coarse", 2, "checkout", 3, True), {k: v for k, v in body.items() if k != "results"}
    assert body["filters"] == {"memory_type": "report", "session_id": S1}, body["filters"]
    oldest = await call(client, "search_reports_full_documents", {"session_id": S1, "latest_first": False})
    assert result_ids(oldest) == [world.id("s1_audit"), world.id("s1_loadtest")], "latest_first=false: v2 then v10"
    assert oldest["query"] is None and oldest["latest_first"] is False, oldest


async def check_working_memory_granularities(client: Any, world: World) -> None:
    notes = world.id("s1_wm")
    fine = await call(client, "search_working_memory_specific_chunks", {"query": LEDGER_QUERY, "session_id": S1})
    assert fine["results"], fine
    for r in fine["results"]:
        _fine_result(r, "search_working_memory_specific_chunks")
    assert fine["results"][0]["memory_id"] == notes, fine["results"]
    assert "## Ledger Mismatch" in fine["results"][0]["header_path"], fine["results"][0]["header_path"]
    medium = await call(client, "search_working_memory_section_context", {"query": ROUNDING_QUERY, "session_id": S1})
    assert medium["results"], medium
    for r in medium["results"]:
        _medium_result(r, "search_working_memory_section_context")
    top = medium["results"][0]
    assert top["memory_id"] == notes and "Currency Rounding" in top["section_header"], medium["results"]
    section = flat(top["section_content"])
    assert all(flat(p) in section for p in REFUND_SECTIONS["Currency Rounding"]), top["section_content"]
    coarse = await call(client, "search_working_memory_full_documents", {"query": "refund notes", "session_id": S1})
    assert result_ids(coarse) == [notes] and coarse["results"][0]["content"] == REFUND_NOTES, coarse["results"]
    _scoped_result(coarse["results"][0], "search_working_memory_full_documents")
    other = await call(client, "search_working_memory_full_documents", {"query": "shards", "session_id": S2})
    assert result_ids(other) == [world.id("s2_wm")], other["results"]


async def check_knowledge_base(client: Any, world: World) -> None:
    """Knowledge-base entries are not session-scoped, filter by category (default "general")."""
    for key in ("kb_idempotency", "kb_shards", "kb_general"):
        stored = world.stored[key]
        assert stored["memory_type"] == "knowledge_base" and stored["session_id"] is None, stored
        assert stored["agent_id"] == world.arguments[key]["agent_id"], stored
    guide = world.id("kb_idempotency")
    fine = await call(client, "search_knowledge_base_specific_chunks", {"query": KB_QUERY, "category": "payments"})
    assert fine["results"] and fine["results"][0]["memory_id"] == guide, fine["results"]
    assert set(memory_ids(fine)) == {guide}, f"category filter leaked: {memory_ids(fine)}"
    for r in fine["results"]:
        _fine_result(r, "search_knowledge_base_specific_chunks")
    elsewhere = await call(client, "search_knowledge_base_specific_chunks", {"query": KB_QUERY,
                                                                            "category": "search-infra"})
    assert guide not in memory_ids(elsewhere), "category filter ignored"
    medium = await call(client, "search_knowledge_base_section_context", {"query": KB_QUERY, "category": "payments"})
    assert medium["results"] and medium["results"][0]["memory_id"] == guide, medium["results"]
    assert "Why Keys Matter" in medium["results"][0]["section_header"], medium["results"][0]
    for r in medium["results"]:
        _medium_result(r, "search_knowledge_base_section_context")
    coarse = await call(client, "search_knowledge_base_full_documents", {"query": "idempotency",
                                                                        "category": "payments"})
    assert result_ids(coarse) == [guide], coarse["results"]
    top = coarse["results"][0]
    _scoped_result(top, "search_knowledge_base_full_documents")
    assert top["content"] == KB_IDEMPOTENCY and top["title"] == KB_IDEMPOTENCY_TITLE, top
    general = await call(client, "search_knowledge_base_full_documents", {"query": "runbook", "category": "general"})
    assert result_ids(general) == [world.id("kb_general")], f"the default category is 'general': {general}"


async def check_expand_chunk_context(client: Any, world: World) -> None:
    audit = world.stored["s1_audit"]
    total = audit["chunks_created"]
    found = await call(client, "search_reports_specific_chunks",
                       {"query": SECTION_QUERIES["Retry Storms"], "session_id": S1, "limit": 1})
    assert found["results"], found
    hit = found["results"][0]
    index = hit["chunk_index"]
    for surrounding, arguments in ((1, {"surrounding_chunks": 1}), (2, {}), (0, {"surrounding_chunks": 0}),
                                   (20, {"surrounding_chunks": 20})):
        body = await call(client, "expand_chunk_context", {"chunk_id": hit["chunk_id"], **arguments})
        what = f"surrounding_chunks={surrounding}"
        assert body["memory_id"] == audit["memory_id"] and body["target_chunk_index"] == index, (what, body)
        assert body["context_window"] == surrounding, (what, body)
        expected = list(range(max(0, index - surrounding), min(total, index + surrounding + 1)))
        got = [c["chunk_index"] for c in body["chunks"]]
        assert got == expected, (what, got, expected)
        assert body["chunks_returned"] == len(body["chunks"]), (what, body)
        for c in body["chunks"]:
            assert not EXPANDED_CHUNK_FIELDS - set(c), (what, c)
            assert is_chunk_of(c["chunk_id"], audit["memory_id"]), (what, c)
        target = next(c for c in body["chunks"] if c["chunk_index"] == index)
        assert target["chunk_id"] == hit["chunk_id"], (what, target)
        middle = flat(target["content"])[len(flat(target["content"])) // 3:][:60]
        assert middle and middle in flat(body["expanded_content"]), (what, middle)
        assert target["header_path"].startswith("# ") and target["level"] >= 1, (what, target)
    # A memory kept whole is its own single chunk: expanding it gives the memory itself.
    whole = await call(client, "expand_chunk_context", {"chunk_id": world.id("s1_sys")})
    assert (whole["memory_id"], whole["target_chunk_index"], whole["chunks_returned"]) == (
        world.id("s1_sys"), 0, 1), whole
    assert whole["expanded_content"] == PAYMENTS_COMMANDS and whole["chunks"][0]["chunk_id"] == world.id("s1_sys")
    assert (whole["chunks"][0]["header_path"], whole["chunks"][0]["level"]) == ("", 0), whole  # no heading, no title


async def check_reconstruct_document(client: Any, world: World) -> None:
    audit = world.stored["s1_audit"]
    body = await call(client, "reconstruct_document", {"memory_id": audit["memory_id"]})
    assert body["content"] == PAYMENT_AUDIT, "the reconstructed report differs from what was stored"
    assert body["memory_id"] == audit["memory_id"] and body["memory_type"] == "report", body
    assert body["chunk_count"] == audit["chunks_created"], (body["chunk_count"], audit["chunks_created"])
    assert "title" in body, body
    for key in ("s1_prompt_v2", "s1_wm", "kb_idempotency", "s2_sys"):
        rebuilt = await call(client, "reconstruct_document", {"memory_id": world.id(key)})
        assert rebuilt["content"] == world.content(key), f"{key}: not byte-exact"
        assert rebuilt["memory_type"] == world.stored[key]["memory_type"], (key, rebuilt)


async def check_get_memory_by_id(client: Any, world: World) -> None:
    """The whole record; each read counts one access."""
    key = "s1_obs"
    first = (await call(client, "get_memory_by_id", {"memory_id": world.id(key)}))["memory"]
    missing = MEMORY_FIELDS - set(first)
    assert not missing, f"missing {sorted(missing)}: {first!r}"
    assert first["id"] == world.id(key) and first["memory_type"] == "report_observation", first
    assert first["agent_id"] == EXPLORER and first["session_id"] == S1 and first["session_iter"] == "v10", first
    assert first["task_code"] == TASK1 and first["content"] == OBSERVATIONS[S1], first
    assert first["content_hash"] == sha16(OBSERVATIONS[S1]), first
    assert isinstance(first["tags"], list) and isinstance(first["metadata"], dict), first
    assert parse_ts(first["created_at"]) and parse_ts(first["updated_at"]), first
    second = (await call(client, "get_memory_by_id", {"memory_id": world.id(key)}))["memory"]
    assert second["access_count"] == first["access_count"] + 1, (first["access_count"], second["access_count"])
    assert second["accessed_at"] is not None and parse_ts(second["accessed_at"]), second
    kb = (await call(client, "get_memory_by_id", {"memory_id": world.id("kb_idempotency")}))["memory"]
    assert kb["session_id"] is None and kb["title"] == KB_IDEMPOTENCY_TITLE, kb


def _expected_counts(session: str) -> tuple[dict[str, int], dict[str, int]]:
    types: dict[str, int] = {}
    agents: dict[str, int] = {}
    for key in keys_of(session):
        memory_type = MEMORY_TYPE_OF_TOOL[tool_of(key)]
        agent = next(a.get("agent_id", ORCHESTRATOR) for k, _, a in SEED if k == key)
        types[memory_type] = types.get(memory_type, 0) + 1
        agents[agent] = agents.get(agent, 0) + 1
    return types, agents


def _nonzero(counts: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in counts.items() if v}


async def check_session_stats(client: Any, world: World) -> None:
    for session in (S1, S2):
        body = await call(client, "get_session_stats", {"session_id": session})
        types, agents = _expected_counts(session)
        keys = keys_of(session)
        assert body["session_id"] == session, body
        assert _nonzero(body["memory_counts"]) == types, (session, body["memory_counts"])
        assert _nonzero(body["agent_counts"]) == agents, (session, body["agent_counts"])
        assert body["total_memories"] == len(keys), (session, body)
        assert body["total_chunks"] == sum(world.stored[k]["chunks_created"] for k in keys), (session, body)
        created = sorted(parse_ts(world.stored[k]["created_at"]) for k in keys)
        assert parse_ts(body["earliest_created"]) == created[0], (session, body["earliest_created"])
        assert parse_ts(body["latest_created"]) == created[-1], (session, body["latest_created"])
    empty = await call(client, "get_session_stats", {"session_id": "no-such-session-0000"})
    assert empty["total_memories"] == 0 and not _nonzero(empty["memory_counts"]), empty


async def check_list_sessions(client: Any, world: World) -> None:
    body = await call(client, "list_sessions", {"limit": 100})
    sessions = body["sessions"]
    for entry in sessions:
        missing = {"session_id", "agent_id", "memory_count", "latest_activity", "memory_types"} - set(entry)
        assert not missing, f"missing {sorted(missing)}: {entry!r}"
    assert None not in [e["session_id"] for e in sessions], "knowledge-base entries are not a session"
    for session in (S1, S2):
        entries = [e for e in sessions if e["session_id"] == session]
        assert entries, f"{session} not listed"
        types, _ = _expected_counts(session)
        merged: dict[str, int] = {}
        for e in entries:
            for kind, count in e["memory_types"].items():
                merged[kind] = merged.get(kind, 0) + count
        assert sum(e["memory_count"] for e in entries) == len(keys_of(session)), (session, entries)
        assert _nonzero(merged) == types, (session, merged)
    order = [e["session_id"] for e in sessions]
    assert order.index(S2) < order.index(S1), f"most recent first: {order}"
    activity = [parse_ts(e["latest_activity"]) for e in sessions]
    assert activity == sorted(activity, reverse=True), f"not most recent first: {activity}"
    assert body["total_sessions"] >= len(set(order)), body["total_sessions"]
    explorer = await call(client, "list_sessions", {"agent_id": EXPLORER, "limit": 100})
    explorer_sessions = {e["session_id"] for e in explorer["sessions"]}
    assert S1 in explorer_sessions and S2 not in explorer_sessions, explorer_sessions
    analyst = {e["session_id"] for e in (await call(client, "list_sessions", {"agent_id": ANALYST,
                                                                               "limit": 100}))["sessions"]}
    assert {S1, S2} <= analyst, analyst


async def check_list_sessions_limits(client: Any, world: World) -> None:
    """21 more sessions: the default limit is 20, and the newest session comes first."""
    names = [f"limit-check-{i:02d}" for i in range(21)]
    for name in names:
        await call(client, "store_session_context", {"session_id": name, "session_iter": "v1",
                                                     "content": f"The session {name} holds one context."})
    default = await call(client, "list_sessions")
    assert len(default["sessions"]) == 20, f"the default limit is 20: {len(default['sessions'])}"
    three = await call(client, "list_sessions", {"limit": 3})
    assert len(three["sessions"]) == 3 and three["sessions"][0]["session_id"] == names[-1], three["sessions"]
    assert _nonzero(three["sessions"][0]["memory_types"]) == {"session_context": 1}, three["sessions"][0]
    assert three["sessions"][0]["memory_count"] == 1, three["sessions"][0]
    assert three["total_sessions"] >= 21, three["total_sessions"]


async def check_load_session_context_for_task(client: Any, world: World) -> None:
    body = await call(client, "load_session_context_for_task", {"session_id": S1, "session_iter": "v10"})
    context = body["session_context"]
    assert isinstance(context, dict) and context["id"] == world.id("s1_ctx_v10"), context
    assert context["content"] == CONTEXTS[S1, "v10"], context
    prompts = [p["id"] for p in body["input_prompts"]]
    assert world.id("s1_prompt_v10") in prompts, body["input_prompts"]
    s1_prompts = {world.id("s1_prompt_v2"), world.id("s1_prompt_v10")}
    assert set(prompts) <= s1_prompts, f"prompts of another session: {prompts}"
    reports = [r["id"] for r in body["recent_reports"]]
    assert world.id("s1_loadtest") in reports, body["recent_reports"]
    assert set(reports) <= {world.id("s1_loadtest"), world.id("s1_audit")} and len(reports) <= 5, reports
    working = [w["id"] for w in body["recent_working_memory"]]
    assert working == [world.id("s1_wm")], body["recent_working_memory"]
    assert all(item["session_id"] == S1 for item in body["input_prompts"] + body["recent_reports"]
               + body["recent_working_memory"])
    fresh = await call(client, "load_session_context_for_task", {"session_id": "no-such-session-0000",
                                                                 "session_iter": "v1"})
    assert fresh["session_context"] is None, fresh
    assert fresh["input_prompts"] == fresh["recent_reports"] == fresh["recent_working_memory"] == [], fresh


async def check_write_document_to_file(client: Any, world: World) -> None:
    audit = world.id("s1_audit")
    body = await call(client, "write_document_to_file", {"memory_id": audit, "output_path": "payment-audit.md"})
    written = Path(body["file_path"])
    assert written.is_absolute(), body
    export = world.export_dir.resolve()
    assert written.resolve().is_relative_to(export), f"{written} is not under the export dir {export}"
    assert written.resolve() == export / "payment-audit.md", written
    assert written.is_file(), written
    assert body["memory_id"] == audit and body["bytes_written"] == written.stat().st_size, body
    text = written.read_text(encoding="utf-8")
    assert text.startswith("---\n"), text[:200]
    end = text.index("\n---", 4)
    front = text[4:end]
    assert audit in front and "memory_id" in front, front
    assert "memory_type" in front and "report" in front, front
    assert PAYMENT_AUDIT in text[end:], "the file does not hold the report after its front matter"
    prompt = await call(client, "write_document_to_file", {"memory_id": world.id("s2_prompt_v2"),
                                                           "output_path": "prompt-s2.md"})
    assert PROMPTS[S2, "v2"] in Path(prompt["file_path"]).read_text(encoding="utf-8")


@dataclass(frozen=True)
class Escape:
    """A write_document_to_file output_path that leaves the export dir: refused, nothing written."""

    id: str
    path: Callable[[World], str]
    forbidden: Callable[[World], list[Path]]
    prepare: Callable[[World], None] = lambda world: None


def _link_dir(world: World) -> None:
    world.export_dir.mkdir(parents=True, exist_ok=True)
    link = world.export_dir / "link-out"
    if not link.is_symlink():
        link.symlink_to(world.outside_dir, target_is_directory=True)


def _link_file(world: World) -> None:
    world.export_dir.mkdir(parents=True, exist_ok=True)
    target = world.outside_dir / "victim.md"
    if not target.exists():
        target.write_text("outside the export dir: must stay as it is\n", encoding="utf-8")
    link = world.export_dir / "victim-link.md"
    if not link.is_symlink():
        link.symlink_to(target)


ESCAPES = [
    Escape("absolute", lambda w: str(w.outside_dir / "absolute.md"), lambda w: [w.outside_dir / "absolute.md"]),
    Escape("absolute-inside-export-dir", lambda w: str(w.export_dir / "absolute-inside.md"),
           lambda w: [w.export_dir / "absolute-inside.md"]),
    Escape("dotdot", lambda w: "../escaped-dotdot.md", lambda w: [w.export_dir.parent / "escaped-dotdot.md"]),
    Escape("nested-dotdot", lambda w: "reports/../../escaped-nested.md",
           lambda w: [w.export_dir.parent / "escaped-nested.md", w.export_dir / "reports"]),
    Escape("symlinked-dir", lambda w: "link-out/through-link.md", lambda w: [w.outside_dir / "through-link.md"],
           _link_dir),
    Escape("symlinked-file", lambda w: "victim-link.md", lambda w: [], _link_file),
    Escape("nul-byte", lambda w: "report\x00.md", lambda w: [w.export_dir / "report"]),
]


async def check_export_escape(client: Any, world: World, escape: Escape) -> None:
    escape.prepare(world)
    before = (files_under(world.export_dir), files_under(world.outside_dir))
    victim = world.outside_dir / "victim.md"
    victim_before = victim.read_bytes() if victim.exists() else None
    output_path = escape.path(world)
    result = await client.call_tool("write_document_to_file", {"memory_id": world.id("s1_audit"),
                                                               "output_path": output_path})
    refused(result, "ValidationError", "output_path", what=f"write_document_to_file({output_path!r})")
    for path in escape.forbidden(world):
        assert not os.path.lexists(path), f"{escape.id}: {path} was written"
    after = (files_under(world.export_dir), files_under(world.outside_dir))
    assert after == before, f"{escape.id}: files changed: {before} -> {after}"
    if victim_before is not None:
        assert victim.read_bytes() == victim_before, f"{escape.id}: the file behind the symlink was overwritten"


async def check_delete_memory(client: Any, world: World) -> None:
    session = "delete-check-5150"
    content = markdown("Chargeback Drill", "A drill for the disputes team.", {
        "Evidence Packets": ["Each chargeback drill assembles an evidence packet with the delivery scan, the "
                             "3-D Secure result and the customer's order history, then times the submission "
                             "to the scheme portal. " * 3],
        "Representment Deadlines": ["Visa allows thirty days for representment and Mastercard forty-five; the "
                                    "drill checks that the queue warns at day twenty. " * 3],
    })
    stored = await call(client, "store_report", {"agent_id": EXPLORER, "session_id": session, "content": content,
                                                 "session_iter": "v1"})
    memory_id = stored["memory_id"]
    query = "evidence packet with delivery scan and 3-D Secure result for a chargeback"
    listed = await call(client, "search_reports_full_documents", {"query": "drill", "session_id": session})
    assert result_ids(listed) == [memory_id], listed
    chunk_id = None
    if stored["chunks_created"]:
        fine = await call(client, "search_reports_specific_chunks", {"query": query, "session_id": session})
        assert memory_id in memory_ids(fine), fine
        chunk_id = fine["results"][0]["chunk_id"]
    deleted = await call(client, "delete_memory", {"memory_id": memory_id})
    assert deleted["memory_id"] == memory_id, deleted
    refused(await client.call_tool("get_memory_by_id", {"memory_id": memory_id}), "NotFoundError",
            what="get_memory_by_id after delete")
    refused(await client.call_tool("reconstruct_document", {"memory_id": memory_id}), "NotFoundError",
            what="reconstruct_document after delete")
    refused(await client.call_tool("delete_memory", {"memory_id": memory_id}), "NotFoundError",
            what="delete_memory twice")
    if chunk_id is not None:
        refused(await client.call_tool("expand_chunk_context", {"chunk_id": chunk_id}), "NotFoundError",
                what="expand_chunk_context of a deleted memory's chunk")
    gone = await call(client, "search_reports_full_documents", {"query": "drill", "session_id": session})
    assert gone["results"] == [], gone
    fine_after = await call(client, "search_reports_specific_chunks", {"query": query, "session_id": session})
    assert memory_id not in memory_ids(fine_after), fine_after
    stats = await call(client, "get_session_stats", {"session_id": session})
    assert stats["total_memories"] == 0 and stats["total_chunks"] == 0, stats


# A hang guard, not a time limit: embedding 500,000 characters may take minutes on a 2-core box.
LONG_CALL_SECONDS = 1800.0


async def check_content_limit_edge(client: Any, world: World) -> None:
    """500,000 characters are accepted and come back whole. The call answers within the server's call
    budget: stored, or (past it) its memory id with status "indexing" while the embedding goes on in
    the background; the memory is then found once complete."""
    content = ("Edge of the content limit. " * 20_000)[:MAX_CONTENT]
    assert len(content) == MAX_CONTENT
    stored = ok(await client.call_tool("store_session_context", {
        "session_id": "content-edge-8080", "session_iter": "v1", "content": content}))
    assert stored["content_hash"] == sha16(content) and stored["memory_id"].startswith("art_"), stored
    # A session context is kept whole: no chunks, whether stored yet or still being embedded.
    assert stored["chunks_created"] == 0, stored
    if stored.get("status") == "indexing":
        assert stored["chunks_total"] >= 1, stored
    deadline = time.monotonic() + LONG_CALL_SECONDS
    while True:
        back = await call(client, "search_session_context", {"session_id": "content-edge-8080"})
        if back["results"] or time.monotonic() > deadline:
            break
        await anyio.sleep(2.0)
    assert len(back["results"]) == 1 and back["results"][0]["content"] == content
    assert back["results"][0]["id"] == stored["memory_id"]


async def check_cleanup_dry_run(client: Any, world: World) -> None:
    """dry_run (the default) reports what would go and deletes nothing."""
    s1_before = await call(client, "get_session_stats", {"session_id": S1})
    default = await call(client, "cleanup_old_memories")
    assert default["dry_run"] is True, f"dry_run must default to true: {default}"
    assert default["memories_deleted"] == 0 and default["chunks_deleted"] == 0, (
        f"nothing here is 90 days old: {default}")
    everything = await call(client, "cleanup_old_memories", {"days_old": 0})
    assert everything["dry_run"] is True, everything
    session_keys = keys_of(S1) + keys_of(S2)
    assert everything["memories_deleted"] >= len(session_keys), everything
    assert everything["chunks_deleted"] >= sum(world.stored[k]["chunks_created"] for k in session_keys), everything
    explicit = await call(client, "cleanup_old_memories", {"days_old": 0, "dry_run": True})
    assert explicit["memories_deleted"] == everything["memories_deleted"], (explicit, everything)
    s1_after = await call(client, "get_session_stats", {"session_id": S1})
    assert s1_after == s1_before, "a dry run changed the session"
    await call(client, "get_memory_by_id", {"memory_id": world.id("s1_audit")})


CHECKS = [
    check_tools, check_store_results, check_duplicate_content, check_session_iter_natural_order,
    check_scoped_search_limit_and_order, check_search_input_prompts_verbatim, check_search_system_memory,
    check_fine_finds_each_section, check_fine_result_fields, check_fine_filters,
    check_searches_keep_to_their_memory_type, check_medium_section_context, check_coarse_full_documents,
    check_working_memory_granularities, check_knowledge_base, check_expand_chunk_context,
    check_reconstruct_document, check_get_memory_by_id, check_session_stats, check_list_sessions,
    check_list_sessions_limits, check_load_session_context_for_task, check_write_document_to_file,
    check_delete_memory, check_cleanup_dry_run,
]


async def check_cleanup_deletes_session_memories(client: Any, world: World) -> None:
    """days_old=0, dry_run=false deletes every session memory created before now: run last."""
    fresh = await call(client, "store_report", {"agent_id": ANALYST, "session_id": "cleanup-check-6060",
                                                "content": "A short report that the cleanup must delete.",
                                                "session_iter": "v1"})
    preview = await call(client, "cleanup_old_memories", {"days_old": 0, "dry_run": True})
    done = await call(client, "cleanup_old_memories", {"days_old": 0, "dry_run": False})
    assert done["dry_run"] is False, done
    session_memories = len([k for k in world.stored if not k.startswith("kb_")])
    assert done["memories_deleted"] >= session_memories + 1, done  # every session memory of the seed, and fresh
    assert (done["memories_deleted"], done["chunks_deleted"]) == (
        preview["memories_deleted"], preview["chunks_deleted"]), f"the dry run foretold otherwise: {preview} {done}"
    for memory_id, what in ((fresh["memory_id"], "fresh report"), (world.id("s1_audit"), "audit"),
                            (world.id("s2_ctx_v10"), "S2 context")):
        refused(await client.call_tool("get_memory_by_id", {"memory_id": memory_id}), "NotFoundError",
                what=f"{what} after cleanup")
    assert (await call(client, "search_session_context", {"session_id": S1}))["results"] == []
    fine = await call(client, "search_reports_specific_chunks", {"query": SECTION_QUERIES["Retry Storms"]})
    assert world.id("s1_audit") not in memory_ids(fine), "a deleted report is still found"
    listed = {e["session_id"] for e in (await call(client, "list_sessions", {"limit": 100}))["sessions"]}
    assert not {S1, S2, "cleanup-check-6060"} & listed, listed
    again = await call(client, "cleanup_old_memories", {"days_old": 0})
    assert again["memories_deleted"] == 0, f"a second cleanup finds more to delete: {again}"


# ------------------------------------------------------------------------------------ bad input

Arguments = dict[str, Any] | Callable[[World], dict[str, Any]]


@dataclass(frozen=True)
class BadInput:
    """One refused call: the error type and, for a ValidationError, the parameter it names."""

    id: str
    tool: str
    arguments: Arguments
    field: str | None
    kind: str = "ValidationError"

    def resolve(self, world: World) -> dict[str, Any]:
        return self.arguments(world) if callable(self.arguments) else dict(self.arguments)


def _chunk(world: World) -> str:
    return world.audit_chunk_id or f"{world.id('s1_audit')}::chunk::000"


_CTX = {"session_id": S1, "session_iter": "v3", "content": "A context that must not be stored."}
_REPORT = {"agent_id": EXPLORER, "session_id": S1, "content": "A report that must not be stored.", "session_iter": "v3"}
_TOO_LONG = "x" * (MAX_CONTENT + 1)
UNKNOWN_CHUNK = f"{UNKNOWN_ID}::chunk::000::00000000"

BAD_INPUTS = [
    BadInput("context-empty-session-id", "store_session_context", {**_CTX, "session_id": ""}, "session_id"),
    BadInput("prompt-empty-session-id", "store_input_prompt", {**_CTX, "session_id": ""}, "session_id"),
    BadInput("report-empty-session-id", "store_report", {**_REPORT, "session_id": ""}, "session_id"),
    BadInput("system-empty-session-id", "store_system_memory", {**_REPORT, "session_id": ""}, "session_id"),
    BadInput("context-content-500001", "store_session_context", {**_CTX, "content": _TOO_LONG}, "content"),
    BadInput("report-content-500001", "store_report", {**_REPORT, "content": _TOO_LONG}, "content"),
    BadInput("working-content-500001", "store_working_memory", {**_REPORT, "content": _TOO_LONG}, "content"),
    BadInput("observation-content-500001", "store_report_observation", {**_REPORT, "content": _TOO_LONG}, "content"),
    BadInput("knowledge-content-500001", "store_knowledge_base",
             {"agent_id": EXPLORER, "title": "Too long", "content": _TOO_LONG}, "content"),
    BadInput("report-missing-agent-id", "store_report",
             {k: v for k, v in _REPORT.items() if k != "agent_id"}, "agent_id"),
    BadInput("context-missing-content", "store_session_context",
             {k: v for k, v in _CTX.items() if k != "content"}, "content"),
    BadInput("context-limit-0", "search_session_context", {"session_id": S1, "limit": 0}, "limit"),
    BadInput("context-limit-101", "search_session_context", {"session_id": S1, "limit": 101}, "limit"),
    BadInput("prompts-limit-101", "search_input_prompts", {"session_id": S1, "limit": 101}, "limit"),
    BadInput("system-limit-0", "search_system_memory", {"query": SYSTEM_QUERY, "limit": 0}, "limit"),
    BadInput("fine-limit-101", "search_reports_specific_chunks", {"query": "retry storm", "limit": 101}, "limit"),
    BadInput("medium-limit-0", "search_reports_section_context", {"query": "retry storm", "limit": 0}, "limit"),
    BadInput("coarse-limit-101", "search_reports_full_documents", {"query": "retry storm", "limit": 101}, "limit"),
    BadInput("working-fine-limit-0", "search_working_memory_specific_chunks", {"query": "ledger", "limit": 0},
             "limit"),
    BadInput("knowledge-medium-limit-101", "search_knowledge_base_section_context", {"query": "keys", "limit": 101},
             "limit"),
    BadInput("list-sessions-limit-0", "list_sessions", {"limit": 0}, "limit"),
    BadInput("list-sessions-limit-101", "list_sessions", {"limit": 101}, "limit"),
    BadInput("expand-surrounding-minus-1", "expand_chunk_context",
             lambda w: {"chunk_id": _chunk(w), "surrounding_chunks": -1}, "surrounding_chunks"),
    BadInput("expand-surrounding-21", "expand_chunk_context",
             lambda w: {"chunk_id": _chunk(w), "surrounding_chunks": 21}, "surrounding_chunks"),
    BadInput("report-unknown-argument", "store_report",
             {**_REPORT, "sesion_id": S1},
             "sesion_id"),
    BadInput("context-search-unknown-argument", "search_session_context", {"session_id": S1, "limt": 3}, "limt"),
    BadInput("stats-unknown-argument", "get_session_stats", {"session_id": S1, "verbose": True}, "verbose"),
    BadInput("context-search-missing-session-id", "search_session_context", {}, "session_id"),
    BadInput("prompts-search-missing-session-id", "search_input_prompts", {"limit": 3}, "session_id"),
    BadInput("fine-missing-query", "search_reports_specific_chunks", {}, "query"),
    BadInput("medium-empty-query", "search_reports_section_context", {"query": ""}, "query"),
    BadInput("fine-query-1001", "search_working_memory_specific_chunks", {"query": "x" * 1001}, "query"),
    BadInput("context-missing-iter", "store_session_context",
             {k: v for k, v in _CTX.items() if k != "session_iter"}, "session_iter"),
    BadInput("prompt-empty-iter", "store_input_prompt", {**_CTX, "session_iter": ""}, "session_iter"),
    BadInput("load-missing-iter", "load_session_context_for_task", {"session_id": S1}, "session_iter"),
    BadInput("knowledge-missing-title", "store_knowledge_base",
             {"agent_id": EXPLORER, "content": "An entry without a title."}, "title"),
    BadInput("knowledge-blank-title", "store_knowledge_base",
             {"agent_id": EXPLORER, "title": "   ", "content": "An entry with a blank title."}, "title"),
    BadInput("coarse-latest-first-string", "search_reports_full_documents",
             {"session_id": S1, "latest_first": "false"}, "latest_first"),
    BadInput("cleanup-dry-run-string", "cleanup_old_memories", {"days_old": 0, "dry_run": "false"}, "dry_run"),
    BadInput("cleanup-days-minus-1", "cleanup_old_memories", {"days_old": -1}, "days_old"),
    BadInput("cleanup-days-36501", "cleanup_old_memories", {"days_old": 36501}, "days_old"),
    BadInput("context-limit-string", "search_session_context", {"session_id": S1, "limit": "5"}, "limit"),
    BadInput("fine-limit-float", "search_reports_specific_chunks", {"query": "retry storm", "limit": 2.5}, "limit"),
    BadInput("get-malformed-id", "get_memory_by_id", {"memory_id": "42"}, "memory_id"),
    BadInput("write-empty-path", "write_document_to_file",
             lambda w: {"memory_id": w.id("s1_audit"), "output_path": ""}, "output_path"),
    BadInput("stats-empty-session-id", "get_session_stats", {"session_id": ""}, "session_id"),
    BadInput("get-unknown-id", "get_memory_by_id", {"memory_id": UNKNOWN_ID}, None, "NotFoundError"),
    BadInput("reconstruct-unknown-id", "reconstruct_document", {"memory_id": UNKNOWN_ID}, None, "NotFoundError"),
    BadInput("delete-unknown-id", "delete_memory", {"memory_id": UNKNOWN_ID}, None, "NotFoundError"),
    BadInput("write-unknown-id", "write_document_to_file", {"memory_id": UNKNOWN_ID, "output_path": "ghost.md"},
             None, "NotFoundError"),
    BadInput("expand-unknown-chunk", "expand_chunk_context", {"chunk_id": UNKNOWN_CHUNK}, None, "NotFoundError"),
]


async def snapshot(client: Any, world: World) -> dict[str, Any]:
    """What a refused call could have changed: the seed session's stats, the sessions, the export dir."""
    stats = await call(client, "get_session_stats", {"session_id": S1})
    sessions = await call(client, "list_sessions", {"limit": 100})
    contexts = await call(client, "search_session_context", {"session_id": S1, "limit": 100})
    return {
        "stats": {k: v for k, v in stats.items() if k != "message"},
        "sessions": sessions["sessions"], "total_sessions": sessions["total_sessions"],
        "contexts": result_ids(contexts),
        "exports": files_under(world.export_dir),
    }


# Spec 001: an error response holds the tool's other result fields "set to None or default values".
_FOUND = {"results", "total_results"}
ERROR_FIELDS: dict[str, set[str]] = {
    "search_session_context": _FOUND, "search_input_prompts": _FOUND, "search_system_memory": _FOUND,
    "load_session_context_for_task": {"session_context", "input_prompts", "recent_reports", "recent_working_memory"},
    "expand_chunk_context": {"memory_id", "expanded_content", "chunks", "chunks_returned"},
    "reconstruct_document": {"memory_id", "content", "title", "memory_type", "chunk_count"},
    "get_memory_by_id": {"memory"}, "get_session_stats": {"total_memories", "total_chunks"},
    "list_sessions": {"sessions", "total_sessions"}, "write_document_to_file": {"file_path", "memory_id"},
    "delete_memory": {"memory_id"}, "cleanup_old_memories": {"memories_deleted", "chunks_deleted", "dry_run"},
}


def error_fields(tool: str) -> set[str]:
    if tool.startswith("store_"):
        return {"memory_id", "chunks_created", "created_at"}
    if tool.startswith("search_") and tool.endswith(("_specific_chunks", "_section_context", "_full_documents")):
        return _FOUND | {"granularity"}
    return ERROR_FIELDS[tool]


async def check_bad_input(client: Any, world: World, case: BadInput) -> None:
    before = await snapshot(client, world)
    result = await client.call_tool(case.tool, case.resolve(world))
    body = refused(result, case.kind, case.field, what=case.id)
    missing = error_fields(case.tool) - set(body)
    assert not missing, f"{case.id}: the error lacks the tool's result fields {sorted(missing)}: {body}"
    assert body.get("results", []) == [] and body.get("memory_id") is None, f"{case.id}: {body}"
    assert await snapshot(client, world) == before, f"{case.id}: a refused call changed something"
