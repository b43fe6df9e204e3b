"""Graph toolset: the MCP reference memory server's nine tools (same names, input schemas and result
shapes: the text is the result as JSON indented by 2, the structured content the same object), so a
client or a prompt written for it works unchanged against memtrove. Each caller has its own graph.
``read_graph`` returns everything, as the reference does, unless given ``limit`` (then pages)."""

from __future__ import annotations

import json
from typing import Annotated, Any

from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from domain.graph.model import Entity, Graph, Relation
from domain.graph.usecases import KnowledgeGraph
from entrypoints.mcp import render
from entrypoints.mcp.toolkit import READ_ONLY, Toolbox, tool
from mcp.types import ToolAnnotations

WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
DELETE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)


class EntityIn(BaseModel):
    name: str = Field(description="The name of the entity")
    entityType: str = Field(description="The type of the entity")
    observations: list[str] = Field(description="An array of observation contents associated with the entity")


class RelationIn(BaseModel):
    from_: str = Field(alias="from", description="The name of the entity where the relation starts")
    to: str = Field(description="The name of the entity where the relation ends")
    relationType: str = Field(description="The type of the relation")


class ObservationsIn(BaseModel):
    entityName: str = Field(description="The name of the entity to add the observations to")
    contents: list[str] = Field(description="An array of observation contents to add")


class DeletionIn(BaseModel):
    entityName: str = Field(description="The name of the entity containing the observations")
    observations: list[str] = Field(description="An array of observations to delete")


def entity(e: Entity) -> dict[str, Any]:
    return {"name": e.name, "entityType": e.entity_type, "observations": list(e.observations)}


def relation(r: Relation) -> dict[str, Any]:
    return {"from": r.source, "to": r.target, "relationType": r.relation_type}


def graph(g: Graph) -> dict[str, Any]:
    return {"entities": [entity(e) for e in g.entities], "relations": [relation(r) for r in g.relations]}


def answer(shown: Any, structured: dict[str, Any]) -> CallToolResult:
    """The reference's result: the JSON of the result, indented by 2, and the structured content."""
    return render.ok(structured, json.dumps(shown, indent=2, ensure_ascii=False))


def done(message: str) -> CallToolResult:
    return render.ok({"success": True, "message": message}, message)


class GraphTools(Toolbox):
    toolset = "graph"

    def _graph(self) -> KnowledgeGraph:
        return self.use(KnowledgeGraph)()

    @tool("Create multiple new entities in the knowledge graph", annotations=WRITE, writes=True)
    def create_entities(self, entities: list[EntityIn]) -> CallToolResult:
        made = [entity(e) for e in self._graph().create_entities(entities)]
        return answer(made, {"entities": made})

    @tool("Create multiple new relations between entities in the knowledge graph. Relations should be in "
          "active voice", annotations=WRITE, writes=True)
    def create_relations(self, relations: list[RelationIn]) -> CallToolResult:
        made = [relation(r) for r in self._graph().create_relations(relations)]
        return answer(made, {"relations": made})

    @tool("Add new observations to existing entities in the knowledge graph", annotations=WRITE, writes=True)
    def add_observations(self, observations: list[ObservationsIn]) -> CallToolResult:
        added = [{"entityName": name, "addedObservations": new}
                 for name, new in self._graph().add_observations(observations)]
        return answer(added, {"results": added})

    @tool("Delete multiple entities and their associated relations from the knowledge graph", annotations=DELETE,
          writes=True)
    def delete_entities(self, entityNames: Annotated[list[str], Field(
            description="An array of entity names to delete")]) -> CallToolResult:
        self._graph().delete_entities(entityNames)
        return done("Entities deleted successfully")

    @tool("Delete specific observations from entities in the knowledge graph", annotations=DELETE, writes=True)
    def delete_observations(self, deletions: list[DeletionIn]) -> CallToolResult:
        self._graph().delete_observations(deletions)
        return done("Observations deleted successfully")

    @tool("Delete multiple relations from the knowledge graph", annotations=DELETE, writes=True)
    def delete_relations(self, relations: Annotated[list[RelationIn], Field(
            description="An array of relations to delete")]) -> CallToolResult:
        self._graph().delete_relations(relations)
        return done("Relations deleted successfully")

    @tool("Read the entire knowledge graph (or, given limit, a page of its entities with their relations; "
          "next_offset reads on)", annotations=READ_ONLY)
    def read_graph(self, offset: Annotated[int, Field(description="Entities to skip (a page's next_offset)")] = 0,
                   limit: Annotated[int | None, Field(description="Entities a page, 1-1000 (default: all)")] = None,
                   ) -> CallToolResult:
        found, next_offset = self._graph().read_graph(offset, limit)
        shown = graph(found)
        return answer(shown, {**shown, "next_offset": next_offset} if limit is not None else shown)

    @tool("Search for nodes in the knowledge graph based on a query", annotations=READ_ONLY)
    def search_nodes(self, query: Annotated[str, Field(
            description="The search query to match against entity names, types, and observation content")],
                     ) -> CallToolResult:
        shown = graph(self._graph().search_nodes(query))
        return answer(shown, shown)

    @tool("Open specific nodes in the knowledge graph by their names", annotations=READ_ONLY)
    def open_nodes(self, names: Annotated[list[str], Field(description="An array of entity names to retrieve")],
                   ) -> CallToolResult:
        shown = graph(self._graph().open_nodes(names))
        return answer(shown, shown)
