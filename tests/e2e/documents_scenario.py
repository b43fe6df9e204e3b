"""Spec 004's documents toolset as a client sees it (any transport): commits, canonical versions, outline,
sections, context packs, restore bundles, resources."""

from __future__ import annotations

import uuid
from typing import Any

from tests.e2e.scenario import call_ok, text_of

SPEC_V1 = """# Checkout Service

The checkout service takes orders and charges cards.

## Payments

Cards are charged through the payment gateway with idempotency keys; a declined card is retried once.

### Refunds

Refunds go back to the original card within five business days.

## Inventory

Stock is reserved when the order is placed and released after thirty minutes without payment.
"""
SPEC_V2 = SPEC_V1 + """
## Observability

Every charge emits a trace with the order id; dashboards alert on a decline rate above four percent.
"""


def key() -> str:
    return str(uuid.uuid4())


async def error_of(client: Any, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} should have failed: {text_of(result)}"
    return result.structured_content["error"]


async def check_commit_is_idempotent(client: Any) -> None:
    k = key()
    entries = [{"kind": "decision", "title": "Queue choice", "content": "We use SQS for order events."},
               {"kind": "troubleshooting", "title": "Stuck orders", "content": "Restart the reaper when orders stick."}]
    first = await call_ok(client, "memory_commit", {"idempotencyKey": k, "entries": entries, "sessionId": "s-1"})
    again = await call_ok(client, "memory_commit", {"idempotencyKey": k, "entries": entries, "sessionId": "s-1"})
    assert (first["replayed"], again["replayed"]) == (False, True) and again["items"] == first["items"]
    assert [i["versionNum"] for i in first["items"]] == [1, 1]
    refused = await error_of(client, "memory_commit", {"idempotencyKey": k, "entries": entries[:1]})
    assert refused["field"] == "idempotencyKey" and k in refused["message"]


async def check_canonical_versions_outline_and_sections(client: Any) -> None:
    one = await call_ok(client, "canonical_upsert", {"canonicalKey": "feature/checkout", "docClass": "feature_spec",
                                                     "title": "Checkout", "contentMarkdown": SPEC_V1,
                                                     "idempotencyKey": key()})
    two = await call_ok(client, "canonical_upsert", {"canonicalKey": "feature/checkout", "docClass": "feature_spec",
                                                     "title": "Checkout", "contentMarkdown": SPEC_V2,
                                                     "idempotencyKey": key()})
    assert (one["versionNum"], two["versionNum"]) == (1, 2)
    old = await call_ok(client, "canonical_get", {"canonicalKey": "feature/checkout", "versionNum": 1})
    new = await call_ok(client, "canonical_get", {"canonicalKey": "feature/checkout"})
    assert (old["contentMarkdown"], new["contentMarkdown"]) == (SPEC_V1, SPEC_V2)
    outline = await call_ok(client, "canonical_outline", {"canonicalKey": "feature/checkout"})
    anchors = [s["anchor"] for s in outline["sections"]]
    assert anchors == ["h1:checkout-service", "h2:checkout-service.payments", "h3:checkout-service.payments.refunds",
                       "h2:checkout-service.inventory", "h2:checkout-service.observability"]
    section = await call_ok(client, "canonical_get_section", {"canonicalKey": "feature/checkout",
                                                              "sectionAnchor": "h3:checkout-service.payments.refunds"})
    assert section["contentMarkdown"] == SPEC_V1[SPEC_V1.index("### Refunds"):SPEC_V1.index("## Inventory")]
    missing = await error_of(client, "canonical_get_section", {"canonicalKey": "feature/checkout",
                                                               "sectionAnchor": "h2:nothing"})
    assert missing["type"] == "not_found"


async def check_context_pack_and_restore(client: Any) -> None:
    pack = await call_ok(client, "canonical_context_pack", {"canonicalKey": "feature/checkout",
                                                            "goal": "refund to the original card", "maxChars": 300})
    assert pack["totalChars"] <= 300 and any("Refunds" in s["contentMarkdown"] for s in pack["sections"])
    again = await call_ok(client, "canonical_context_pack", {"canonicalKey": "feature/checkout",
                                                             "goal": "refund to the original card", "maxChars": 300})
    assert again == pack
    bundle = await call_ok(client, "memory_restore", {"goal": "stuck orders", "maxChars": 3000, "maxTokens": 800})
    reasons = {e["title"]: e["reason"] for e in bundle["entries"]}
    # The troubleshooting entry was the session's latest commit: it comes once, as the snapshot.
    assert bundle["entries"][0]["reason"] == "pinned_canonical" and reasons.get("Stuck orders") == "latest_snapshot"
    assert reasons.get("Queue choice") in (None, "goal_match") and len(reasons) == len(bundle["entries"])
    assert bundle["totalChars"] <= 3000 and bundle["totalTokens"] <= 800
    assert all(e["provenance"]["uri"].startswith("memtrove://items/") for e in bundle["entries"])
    assert await call_ok(client, "memory_restore", {"goal": "stuck orders", "maxChars": 3000, "maxTokens": 800}) == bundle


async def check_search_boost_and_core_view(client: Any) -> None:
    found = await call_ok(client, "project_search", {"query": "charge cards payment gateway"})
    assert found["results"] and found["results"][0]["canonicalKey"] == "feature/checkout"
    hybrid = await call_ok(client, "hybrid_search", {"query": "charge cards payment gateway",
                                                     "filters": {"source_system": "documents", "kind": "spec"}})
    assert hybrid["count"] >= 1


async def check_resources(client: Any) -> None:
    resources = client.server_capabilities.resources  # the server says it sends list_changed, as it does
    assert resources is not None and resources.list_changed is True, resources
    listed = await client.list_resources()
    uris = [str(r.uri) for r in listed.resources]
    assert uris and all(u.startswith("memtrove://items/") for u in uris)
    read = await client.read_resource(uris[0])
    assert read.contents and read.contents[0].mime_type == "text/markdown" and read.contents[0].text
    templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
    assert {"memtrove://items/{item_id}", "memtrove://canonical/{+key}", "memtrove://section/{anchor}/{+key}"} <= templates
    doc = await client.read_resource("memtrove://canonical/feature/checkout")
    assert doc.contents[0].text == SPEC_V2
    part = await client.read_resource("memtrove://section/h2:checkout-service.inventory/feature/checkout")
    assert part.contents[0].text.startswith("## Inventory")


CHECKS = [check_commit_is_idempotent, check_canonical_versions_outline_and_sections, check_context_pack_and_restore,
          check_search_boost_and_core_view, check_resources]
