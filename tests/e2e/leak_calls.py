"""The leak test's randomized reads: a read tool of any toolset with random arguments aimed at one item."""

from __future__ import annotations

import random
from typing import Any

SENSITIVITIES = ("normal", "sensitive", "highly_sensitive")


def random_call(rng: random.Random, items: list[dict[str, Any]],
                people: list[str]) -> tuple[str, dict[str, Any], str | None]:
    """A read tool with random arguments, and the project its client declares (None: no roots)."""
    target = rng.choice(items)
    query = rng.choice([target["key"], "lighthouse keeper lamp", f"{target['key']} keeper", "keeper notes"])
    limit = rng.choice([1, 5, 20])
    mode = rng.choice(["hybrid", "lexical", "vector"])
    tool = rng.choice(["hybrid_search", "memory_search", "memory_list", "history_get", "artifact_search",
                       "artifact_get", "search_memory", "get_stats", "search_session_context", "get_memory_by_id",
                       "reconstruct_document", "list_sessions", "get_session_stats", "search_system_memory",
                       "project_search", "canonical_get", "memory_restore", "artifact_list", "store_stats",
                       "search_nodes", "open_nodes", "read_graph", "get_related", "graph_status", "memory_changes",
                       "conversation_list"])
    name = target["word"]
    project = rng.choice(["atlas", "zeus"])
    session = f"s-{rng.choice(people)}"
    arguments: dict[str, Any] = {
        "hybrid_search": {"query": rng.choice([query, f"{target['word']} keeper"]), "limit": limit, "mode": mode,
                          "include_memory": rng.random() < 0.5,
                          "include_history": rng.random() < 0.5, "expand_neighbors": rng.random() < 0.3,
                          **({"filters": {"sensitivity": rng.choice(SENSITIVITIES)}} if rng.random() < 0.3 else {})},
        "memory_search": {"query": query, "limit": min(limit, 20), "mode": mode},
        "memory_list": {"limit": rng.choice([5, 50, 100])},
        # A conversation id is each caller's own: the reader's own of that id, or (owner) the writer's.
        "history_get": {"conversation_id": target.get("conversation") or f"{target['key']}-c",
                        **({"owner": rng.choice([target["writer"], *people])} if rng.random() < 0.6 else {})},
        "artifact_search": {"query": query, "limit": limit, "mode": mode},
        "artifact_get": {"artifact_id": target.get("id") if str(target.get("id", "")).startswith("art_")
                         else "art_" + "0" * 32, "include_content": True, "include_chunks": True},
        "search_memory": {"query": query, "limit": limit},
        "get_stats": {},
        "search_session_context": {"session_id": session},
        "get_memory_by_id": {"memory_id": target.get("id") or "art_" + "0" * 32},
        "reconstruct_document": {"memory_id": target.get("id") or "art_" + "0" * 32},
        "list_sessions": {},
        "get_session_stats": {"session_id": session},
        "search_system_memory": {"query": query},
        "project_search": {"query": query, "limit": limit},
        "canonical_get": {"canonicalKey": f"{project}-spec"},
        "memory_restore": {"goal": query},
        "artifact_list": {"limit": rng.choice([1, 50, 500]),
                          **({"source_system": rng.choice(["wiki", "sessions"])} if rng.random() < 0.5 else {})},
        "store_stats": {},
        "search_nodes": {"query": rng.choice([name, target["key"], "lighthouse keeper"])},
        "open_nodes": {"names": [name, rng.choice(items)["word"]]},
        "read_graph": rng.choice([{}, {"limit": 5}]),
        "get_related": {"entity": name, "depth": rng.choice([1, 2, 3])},
        "graph_status": {},
        "memory_changes": {"since": "2000-01-01", "limit": rng.choice([5, 500]),
                           **({"kinds": ["added"]} if rng.random() < 0.3 else {})},
        "conversation_list": {"limit": rng.choice([5, 100])},
    }[tool]
    return tool, arguments, project if tool in ("project_search", "canonical_get", "memory_restore") else None
