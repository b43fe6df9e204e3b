"""Core toolset: the embedding provider's health and re-embedding into another profile."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.types import CallToolResult
from pydantic import Field

from domain.upkeep.health import EmbeddingHealth
from domain.upkeep.reembed import Reembed
from entrypoints.mcp import render
from entrypoints.mcp.toolkit import READ_ONLY, Toolbox, tool
from entrypoints.mcp.toolsets.artifacts import enum


class UpkeepTools(Toolbox):
    toolset = "core"

    @tool("Check the embedding provider: configuration, reachability, latency.", annotations=READ_ONLY)
    def embedding_health(self) -> CallToolResult:
        report: dict[str, Any] = self.use(EmbeddingHealth)()()
        switch = self.runtime.switch
        if switch is not None:
            report["model_switch"] = switch.status(switch.progress(self.runtime.app.adapters.store()))
        return render.ok(report, render.as_json(report))

    @tool("Re-embed one artifact, or everything (artifacts, memories, history), with another embedder into "
          "that profile's own index. Searches keep using the active profile; once everything is re-embedded, "
          "restart with MEMTROVE_EMBEDDER set to the target to switch.")
    def artifact_reembed(
        self,
        target_embedder: Annotated[str, Field(description="local, openai, openai-compatible, voyage or jina (model "
                                                          "settings from the OPENAI_*, VOYAGE_*, JINA_* variables)",
                                              json_schema_extra=enum(("local", "openai", "openai-compatible",
                                                                      "voyage", "jina")))],
        artifact_id: Annotated[str | None, Field(description="Only this artifact (default: everything)")] = None,
    ) -> CallToolResult:
        report = self.use(Reembed)(target_embedder=target_embedder)(artifact_id)
        p = report.target
        body = {"target_profile": {"provider": p.provider, "model": p.model, "dimensions": p.dimensions},
                "artifacts": report.artifacts, "memories": report.memories, "turns": report.turns,
                "skipped_unchanged": report.skipped, "complete": report.complete}
        text = (f"Re-embedded {report.artifacts} artifacts, {report.memories} memories and {report.turns} "
                f"turns into {p.provider}/{p.model}/{p.dimensions}d ({report.skipped} already current).")
        if report.complete:
            body["next_step"] = f"restart with MEMTROVE_EMBEDDER={target_embedder} to search with it"
            text += " Complete: " + body["next_step"] + "."
        return render.ok(body, text)
