"""What a client's context pays for the tool list: the default toolset stays within 4,000 cl100k tokens.

Measured on the JSON of tools/list with the usual separators (``", "`` and ``": "``, as most clients
put the tools into a model's context), per toolset and for all.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from adapters.text.tokenizers import cl100k_encoding
from config.settings import TOOLSETS, Settings
from entrypoints.mcp.server import build_server
from entrypoints.runtime import Runtime

DEFAULT_BUDGET = 4_000


def listed(tmp: Path, toolsets: tuple[str, ...]) -> list[dict]:
    from mcp.client import Client

    async def run() -> list[dict]:
        runtime = Runtime(Settings(memtrove_data_dir=tmp, memtrove_warmup=False))
        async with Client(build_server(runtime, toolsets)) as client:
            tools = (await client.list_tools()).tools
        return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]
    return asyncio.run(run())


def tokens(tools: list[dict]) -> int:
    return len(cl100k_encoding().encode_ordinary(json.dumps({"tools": tools})))


@pytest.fixture(scope="module")
def sizes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, int, list[str]]]:
    found = {}
    for name, toolsets in [*((t, (t,)) for t in TOOLSETS), ("all", TOOLSETS)]:
        tools = listed(tmp_path_factory.mktemp(name), toolsets)
        found[name] = (len(tools), tokens(tools), [t["name"] for t in tools])
    print("\n[tools/list] " + ", ".join(f"{k}: {n} tools, {t} tokens" for k, (n, t, _) in found.items()))
    return found


def test_the_default_tool_list_stays_within_its_budget(sizes) -> None:
    count, size, _ = sizes[Settings().toolsets[0]]
    assert Settings().toolsets == ("core",) and count == 16
    assert size <= DEFAULT_BUDGET, f"core tools/list is {size} tokens (budget {DEFAULT_BUDGET})"


def test_every_toolset_is_listed_and_names_are_portable_and_unique(sizes) -> None:
    assert (sizes["sessions"][0], sizes["zapomni"][0], sizes["documents"][0], sizes["console"][0],
            sizes["graph"][0], sizes["code"][0]) == (28, 7, 8, 6, 9, 4)
    names = sizes["all"][2]
    assert len(names) == len(set(names)) == sum(sizes[t][0] for t in TOOLSETS)
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", n) for n in names)


def test_schemas_carry_no_generated_titles_or_null_branches(tmp_path: Path) -> None:
    """What pydantic adds that tells a model nothing is left out; optional stays optional."""
    tools = {t["name"]: t for t in listed(tmp_path, ("core",))}
    for tool in tools.values():
        schema = tool["inputSchema"]
        assert "title" not in schema
        for name, prop in schema["properties"].items():
            assert "title" not in prop and {"type": "null"} not in prop.get("anyOf", []), (tool["name"], name, prop)
    store = tools["memory_store"]["inputSchema"]
    assert store["properties"]["conversation_id"] == {"description": "Optional context, up to 100 characters",
                                                      "type": "string"}
    assert "conversation_id" not in store["required"] and "content" in store["required"]


def test_near_duplicate_names_say_which_to_prefer(tmp_path: Path) -> None:
    """With every toolset on, each of the other toolsets' twins of a core tool names the core one."""
    tools = {t["name"]: t["description"] for t in listed(tmp_path, TOOLSETS)}
    for twin, core in [("delete_memory", "memory_delete"), ("get_memory_by_id", "memory_get"),
                       ("search_memory", "memory_search"), ("get_stats", "store_stats")]:
        assert core in tools and core in tools[twin], (twin, tools[twin])
