"""Entities the graph tools write are records of their own (domain/graph/entities.py): search_nodes and
hybrid_search (with include_memory) find them by meaning and by words through the one retrieval engine,
the caller's alone, and not once deleted. The fakes, with the bag-of-words embedder."""

from __future__ import annotations

from domain.access.principal import Principal, RequestContext
from domain.graph.entities import EntityVectors
from domain.graph.usecases import KnowledgeGraph
from domain.search.ranking import Ranker
from domain.search.retrieval import RetrievalConfig
from domain.search.retrieve import Retriever
from domain.search.usecases import HybridSearch, SearchRequest
from tests.conftest import syncer

ME, BOB = RequestContext(Principal("local")), RequestContext(Principal("bob"))


def retriever(world, who: RequestContext) -> Retriever:
    ranker = Ranker(world.vectors, world.store, world.store, world.store, world.policies, graph=world.store)
    # A floor as a real model's (the bag-of-words vectors of unrelated texts still share a slot or two).
    return Retriever(world.embedder, ranker, RetrievalConfig(min_similarity=0.3), catch_up=syncer(world).catch_up,
                     identity=lambda: who)


def graph(world, who: RequestContext = ME) -> KnowledgeGraph:
    return KnowledgeGraph(EntityVectors(world.store, world.embedder), world.store, retriever(world, who),
                          identity=lambda: who)


def search(world, query: str, include_memory: bool, who: RequestContext = ME):
    return HybridSearch(retriever(world, who), world.store)(SearchRequest(query, 5, include_memory=include_memory))


def test_an_entity_is_found_by_its_observations_and_gone_once_deleted(world) -> None:
    graph(world).create_entities([{"name": "Ada_Quill", "entityType": "person",
                                   "observations": ["Keeps bees on the roof"]}])
    graph(world).create_entities([{"name": "Tom", "entityType": "person", "observations": ["Plays chess"]}])
    assert graph(world).store.match_entities("local", "bees roof") == []  # no name or observation holds it
    assert [e.name for e in graph(world).search_nodes("bees roof").entities] == ["Ada_Quill"]
    found = search(world, "who keeps bees", include_memory=True)
    assert found.hits[0].type == "entity" and found.hits[0].fields["name"] == "Ada_Quill"
    assert "entities" in found.searched and "Keeps bees on the roof" in found.hits[0].content
    assert search(world, "who keeps bees", include_memory=False).hits == []  # entities are the caller's memory
    assert search(world, "who keeps bees", include_memory=True, who=BOB).hits == []  # and the caller's alone
    assert graph(world, BOB).search_nodes("bees roof").entities == ()

    graph(world).add_observations([{"entityName": "Tom", "contents": ["Sells honey at the market"]}])
    assert [e.name for e in graph(world).search_nodes("honey market").entities] == ["Tom"]
    graph(world).delete_observations([{"entityName": "Tom", "observations": ["Sells honey at the market"]}])
    assert graph(world).search_nodes("honey market").entities == ()
    graph(world).delete_entities(["Ada_Quill"])
    assert graph(world).search_nodes("bees roof").entities == ()
    assert search(world, "who keeps bees", include_memory=True).hits == []


def test_a_node_search_takes_the_names_of_the_chunk_found_not_of_its_whole_document(aworld) -> None:
    """"Priya" found in one chunk of a document: the names read from that chunk, not Tom and Python of
    another (they were listed for her: issue 42)."""
    from domain.artifacts.ingest import IngestArtifact
    from domain.artifacts.input import IngestRequest
    from domain.graph.build import BuildGraph
    from domain.model import ChunkSpec
    from plugins.chunkers.token_window import TokenWindowChunker
    from tests.conftest import catalog
    from tests.unit.test_graph_build import Capitals

    filler = " ".join(f"word{i}" for i in range(40))
    text = f"Priya drafts the migration plan. {filler} Tom writes Python scripts all day. {filler}"
    IngestArtifact(aworld.embedder, aworld.store, aworld.store, catalog(TokenWindowChunker()), aworld.tokenizer,
                   ChunkSpec(30, 5, 30), aworld.split)(IngestRequest("doc", "notes", text))
    BuildGraph(aworld.store, aworld.store, aworld.store, aworld.store, {"capitals": Capitals()}, "capitals",
               identity=lambda: ME)()
    assert {"Priya", "Tom", "Python"} <= {e.name for e in aworld.store.entities("local")}
    assert [e.name for e in graph(aworld).search_nodes("Priya").entities] == ["Priya"]
