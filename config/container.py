"""The composition root: the one place that decides which adapter serves which port."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from dependency_injector import containers, providers
from adapters import request_scope
from adapters.vectors.chroma import ChromaVectorIndex
from adapters.metrics import MeteredEmbedder, MeteredVectorIndex, Metrics
from config.faults import crash_checkpoint
from config.embedders import (
    EMBEDDERS, embedder_of_kind, gathered, jina_embedder, local_embedder, openai_embedder, voyage_embedder,
)
from adapters.text.dates import read_spans, resolve_date
from adapters.files.source_tree import SourceDirs
from adapters.processes import LocalProcesses
from adapters.rerank.learned import LearnedCandidateScorer
from config import factories
from config.settings import Settings
from config.settings_rerank import text_reranker
from domain.access.guard import GuardedStore
from domain.access.principal import RequestContext
from domain.pieces import PieceSplitter
from domain.validation import require_choice
from domain.upkeep.health import EmbeddingHealth
from domain.upkeep.retention import ExpireItems, ResolveArtifact
from domain.history.usecases import AppendTurn, GetHistory
from domain.artifacts.catalog import ListArtifacts, StoreCounts
from domain.artifacts.usecases import DeleteArtifact, GetArtifact
from domain.artifacts.ingest import IngestArtifact
from domain.artifacts.resume import ResumeIngests
from domain.upkeep.maintenance import CheckProfile
from domain.upkeep.vector_sync import AdoptIndexedVectors, RebuildVectors, SyncVectors
from domain.changes.usecases import MemoryChanges
from domain.code.index import IndexCodebase
from domain.code.usecases import ClearIndex, Codebases, IndexStatus, SearchCode
from domain.graph.build import BuildGraph, GraphStatus
from domain.graph.events import EventSearch, Timeline
from domain.graph.follow import FollowGraph, background_principal
from domain.graph.entities import EntityVectors
from domain.graph.usecases import KnowledgeGraph
from domain.history.listing import ListConversations
from domain.memories.edit import EditMemory
from domain.memories.usecases import DeleteMemory, GetMemory, ListMemories, MemoryHistory, StoreMemory
from domain.search.ranking import Ranker
from domain.search.passages import PassageSearch
from domain.search.retrieve import Retriever
from domain.search.graph_signal import GraphSignal
from domain.search.symbol_signal import SymbolSignal
from domain.search.usecases import ArtifactSearch, HybridSearch, SearchMemories
from domain.documents.bundles import ContextPack, ProjectSearch, Restore
from domain.documents.idempotency import Idempotent
from domain.documents.usecases import CommitEntries, ItemWriter, ReadCanonical, UpsertCanonical
from domain.sessions.search import FineSearch, Memories, MemorySearch, ScopedLookup, SectionSearch
from domain.sessions.store import StoreSessionMemory
from domain.sessions.upkeep import CleanupOldMemories, DeleteSessionMemory, ExportDocument
from domain.sessions.utility import (ExpandChunk, GetSessionMemory, GetSessionStats, ListSessions, LoadTaskContext,
                                     Reconstruct)
from domain.transfer.usecases import ExportPage, ImportRecords
from domain.zapomni.usecases import AddMemory, GetStats, LatencyMeter, SearchMemory
from plugins.chunkers.code_tree import outline
from plugins.manager import collect, plugin_manager

if TYPE_CHECKING:
    from domain.upkeep.reembed import Reembed


def _vector_index(settings: Settings, profile: object, store: object) -> object:
    """The configured vector store for a profile (another embedder's, when re-embedding); a Chroma
    collection whose HNSW files are lost is rebuilt from the store's copy, as the active one's is."""
    if settings.memtrove_vector_store == "pgvector":
        return factories.pgvector(profile, settings.database_url)
    return ChromaVectorIndex(profile, path=settings.chroma_path, host=settings.chroma_host,  # type: ignore[arg-type]
                             port=settings.chroma_port, source=store.stored_vectors)  # type: ignore[attr-defined]


def _reembed(target_embedder: object, settings: Settings, active: object, store: object, chunker: object,
             tokenizer: object, identity: object) -> Reembed:
    """Re-embedding into the profile of another embedder kind, into that profile's own collections."""
    from domain.upkeep.reembed import Reembed

    kind = require_choice("target_embedder", target_embedder, EMBEDDERS)
    target = embedder_of_kind(kind, settings)
    profile = target.profile  # type: ignore[attr-defined]
    index = _vector_index(settings, profile, store)
    spec = settings.model_copy(update={"memtrove_embedder": kind}).chunk_spec(profile)
    return Reembed(active=active, target=target, target_vectors=index, store=store, artifacts=store,  # type: ignore[arg-type]
                   ledger=store, audit_log=store, split=PieceSplitter(target, chunker, tokenizer, spec),  # type: ignore[arg-type]
                   identity=identity)  # type: ignore[arg-type]


def reembed_into(settings: Settings, active: object, store: object, chunker: object, tokenizer: object) -> Reembed:
    """Re-embedding the whole store into the local model ``settings`` configure (a model switch)."""
    return _reembed("local", settings, active, store, chunker, tokenizer, RequestContext)


class Adapters(containers.DeclarativeContainer):
    """Clients and engines: built once, on first use (nothing heavy at import or start)."""

    settings = providers.Dependency(instance_of=Settings)

    tokenizer = providers.ThreadSafeSingleton(factories.tokenizer)
    metrics = providers.ThreadSafeSingleton(Metrics)  # one registry per process (GET /metrics)
    model = providers.Selector(
        settings.provided.embedder_key,
        local=providers.ThreadSafeSingleton(
            gathered, providers.ThreadSafeSingleton(local_embedder, settings=settings), settings=settings),
        openai=providers.ThreadSafeSingleton(openai_embedder, settings=settings, provider="openai"),
        openai_compatible=providers.ThreadSafeSingleton(openai_embedder, settings=settings, provider="openai-compatible"),
        voyage=providers.ThreadSafeSingleton(voyage_embedder, settings=settings),
        jina=providers.ThreadSafeSingleton(jina_embedder, settings=settings),
    )
    embedder = providers.ThreadSafeSingleton(MeteredEmbedder, inner=model, metrics=metrics)
    engine = providers.Resource(factories.engine, settings.provided.database_url)
    store = providers.ThreadSafeSingleton(factories.sql_store, engine)
    vector_index = providers.Selector(
        settings.provided.memtrove_vector_store,
        chroma=providers.ThreadSafeSingleton(
            ChromaVectorIndex,
            profile=embedder.provided.profile,
            path=settings.provided.chroma_path,
            host=settings.provided.chroma_host,
            port=settings.provided.chroma_port,
            source=store.provided.stored_vectors,  # a collection whose HNSW files are lost is rebuilt from it
        ),
        pgvector=providers.ThreadSafeSingleton(factories.pgvector, profile=embedder.provided.profile, engine=engine),
    )
    vectors = providers.ThreadSafeSingleton(MeteredVectorIndex, inner=vector_index, metrics=metrics)
    exporter = providers.ThreadSafeSingleton(factories.exporter, settings.provided.export_dir)
    processes = providers.ThreadSafeSingleton(LocalProcesses)  # a long run's holder: is its process gone?
    text_reranker = providers.ThreadSafeSingleton(text_reranker, settings)  # MEMTROVE_RERANKER (None: off)


class Plugins(containers.DeclarativeContainer):
    """The plugin manager and what its plugins registered."""

    settings = providers.Dependency(instance_of=Settings)
    manager = providers.ThreadSafeSingleton(plugin_manager, allowed=settings.provided.allowed_plugins)
    registry = providers.ThreadSafeSingleton(collect, manager, required_policies=settings.provided.required_policies,
                                             extractor_options=settings.provided.extractor_options)
    chunker = providers.Callable(lambda registry: registry.chunker("token-window"), registry)
    privacy_policies = registry.provided.privacy_policies


class UseCases(containers.DeclarativeContainer):
    """Each use case gets its ports; none ever sees this container."""

    settings = providers.Dependency(instance_of=Settings)
    adapters = providers.DependenciesContainer()
    plugins = providers.DependenciesContainer()

    chunk_spec = providers.ThreadSafeSingleton(
        lambda settings, profile: settings.chunk_spec(profile), settings, adapters.embedder.provided.profile)
    split = providers.ThreadSafeSingleton(
        PieceSplitter, embedder=adapters.embedder, chunker=plugins.chunker, tokenizer=adapters.tokenizer,
        spec=chunk_spec)

    check_profile = providers.Factory(CheckProfile, store=adapters.store, profile=adapters.embedder.provided.profile,
                                      ledger=adapters.store)
    # The vector index follows the store: one syncer per process (its worker and the searches share it).
    sync_vectors = providers.ThreadSafeSingleton(
        SyncVectors, outbox=adapters.store, vectors=adapters.vectors, batch=settings.provided.memtrove_outbox_batch)
    rebuild_vectors = providers.Factory(RebuildVectors, outbox=adapters.store, vectors=adapters.vectors)
    adopt_vectors = providers.Factory(AdoptIndexedVectors, outbox=adapters.store, vectors=adapters.vectors,
                                      profile=adapters.embedder.provided.profile)
    identity = providers.Object(request_scope.current)  # who is calling: the transport's answer per call
    store_memory = providers.Factory(
        StoreMemory, embedder=adapters.embedder, store=adapters.store, split=split, tokenizer=adapters.tokenizer,
        identity=identity)
    list_memories = providers.Factory(ListMemories, store=adapters.store, policies=plugins.privacy_policies,
                                     identity=identity)
    get_memory = providers.Factory(GetMemory, store=adapters.store, policies=plugins.privacy_policies,
                                   identity=identity)
    delete_memory = providers.Factory(DeleteMemory, store=adapters.store, identity=identity)
    memory_history = providers.Factory(MemoryHistory, store=adapters.store, policies=plugins.privacy_policies,
                                       identity=identity)
    build_graph = providers.Factory(
        BuildGraph, store=adapters.store, scopes=adapters.store, graph=adapters.store, derived=adapters.store,
        extractors=plugins.registry.provided.extractors, extractor=settings.provided.memtrove_extractor,
        policies=plugins.privacy_policies, chunkers=plugins.registry, identity=identity,
        dates=providers.Object(resolve_date), embed=providers.Callable(
            lambda on, embedder: embedder.embed_documents if on else None,
            settings.provided.memtrove_resolve_by_meaning, adapters.embedder), processes=adapters.processes)
    # The graph follows writes in the background (entrypoints/graph_worker.py): one follower per process.
    follow_graph = providers.ThreadSafeSingleton(
        FollowGraph, build=build_graph, feed=adapters.store, documents=settings.provided.memtrove_graph_documents,
        principal=providers.Callable(background_principal, settings.provided.memtrove_local_clearance))
    graph_status = providers.Factory(GraphStatus, derived=adapters.store, identity=identity,
                                     processes=adapters.processes)
    memory_changes = providers.Factory(MemoryChanges, log=adapters.store, graph=adapters.store, identity=identity)
    timeline = providers.Factory(Timeline, derived=adapters.store, identity=identity)
    edit_memory = providers.Factory(
        EditMemory, embedder=adapters.embedder, store=adapters.store, split=split, tokenizer=adapters.tokenizer,
        identity=identity)
    append_turn = providers.Factory(
        AppendTurn, embedder=adapters.embedder, store=adapters.store, locks=adapters.store, split=split,
        tokenizer=adapters.tokenizer, identity=identity)
    get_history = providers.Factory(GetHistory, store=adapters.store, policies=plugins.privacy_policies,
                                   identity=identity)
    list_conversations = providers.Factory(ListConversations, store=adapters.store,
                                           policies=plugins.privacy_policies, identity=identity)
    embedding_health = providers.Factory(EmbeddingHealth, embedder=adapters.embedder, vectors=adapters.vectors,
                                         catch_up=sync_vectors.provided.catch_up, identity=identity)

    ingest_artifact = providers.ThreadSafeSingleton(
        IngestArtifact, embedder=adapters.embedder, store=adapters.store, locks=adapters.store,
        chunkers=plugins.registry, tokenizer=adapters.tokenizer, spec=chunk_spec, split=split,
        checkpoint=providers.Callable(crash_checkpoint, settings.provided.memtrove_crash_at),
        default_chunker=settings.provided.memtrove_chunker, lease_seconds=settings.provided.memtrove_job_lease,
        identity=identity, copies=adapters.store)
    # SQLite serves one process (the owner of the data dir): its open jobs are orphans at start.
    resume_ingests = providers.Factory(
        ResumeIngests, ingest=ingest_artifact, store=adapters.store,
        exclusive=providers.Callable(lambda url: url.startswith("sqlite"), settings.provided.database_url))
    get_artifact = providers.Factory(GetArtifact, store=adapters.store, identity=identity)
    delete_artifact = providers.Factory(DeleteArtifact, store=adapters.store, locks=adapters.store, identity=identity)
    # The console's reads: the access rule is part of their queries (no guarded view needed).
    list_artifacts = providers.Factory(ListArtifacts, scopes=adapters.store, identity=identity)
    store_counts = providers.Factory(StoreCounts, scopes=adapters.store, identity=identity)
    resolve_artifact = providers.Factory(ResolveArtifact, store=adapters.store, locks=adapters.store, identity=identity)
    expire_items = providers.Factory(ExpireItems, store=adapters.store, locks=adapters.store)
    ranker = providers.Factory(Ranker, vectors=adapters.vectors, store=adapters.store, artifacts=adapters.store,
                               lexical=adapters.store, policies=plugins.privacy_policies, outbox=adapters.store,
                               graph=adapters.store)
    retrieval = providers.ThreadSafeSingleton(lambda settings: settings.retrieval(), settings)
    rerank_scorer = providers.ThreadSafeSingleton(LearnedCandidateScorer)  # the model shipped in the package
    retrieve = providers.Factory(Retriever, embedder=adapters.embedder, ranker=ranker, config=retrieval, identity=identity,
                                 scorer=rerank_scorer, text_reranker=adapters.text_reranker,
                                 graph=providers.Factory(GraphSignal, graph=adapters.store, derived=adapters.store,
                                                         store=adapters.store, artifacts=adapters.store),
                                 dates=providers.Object(read_spans),
                                 symbols=providers.Factory(SymbolSignal, code=adapters.store, artifacts=adapters.store))
    search_memories = providers.Factory(SearchMemories, retrieve=retrieve)
    # What the graph tools (and an import) write an entity through: its name and observations embedded first.
    entity_vectors = providers.Factory(EntityVectors, store=adapters.store, embedder=adapters.embedder, split=split)
    knowledge_graph = providers.Factory(KnowledgeGraph, store=entity_vectors, derived=adapters.store, retrieve=retrieve,
                                        identity=identity)
    event_search = providers.Factory(EventSearch, derived=adapters.store, retrieve=retrieve, identity=identity)
    # The store as the caller may see it: what the views (neighbour expansion, the toolsets) read through.
    guarded = providers.Factory(GuardedStore, store=adapters.store, identity=identity)
    artifact_search = providers.Factory(ArtifactSearch, retrieve=retrieve, artifacts=guarded)
    reembed = providers.Factory(_reembed, settings=settings, active=adapters.embedder.provided.profile,
                                store=adapters.store, chunker=plugins.chunker, tokenizer=adapters.tokenizer,
                                identity=identity)
    hybrid_search = providers.Factory(HybridSearch, retrieve=retrieve, artifacts=guarded)

    # Spec 001's session memory: views over the artifacts (one store, one retrieval), read as the caller may see them.
    store_session_memory = providers.Factory(StoreSessionMemory, ingest=ingest_artifact)
    session_memories = providers.Factory(Memories, store=guarded, scopes=guarded)
    scoped_lookup = providers.Factory(ScopedLookup, scopes=guarded, memories=session_memories)
    passage_search = providers.Factory(PassageSearch, retrieve=retrieve, store=guarded,
                                       embedder=adapters.embedder, vectors=adapters.store)
    fine_search = providers.Factory(FineSearch, search=passage_search)
    section_search = providers.Factory(SectionSearch, fine=fine_search, store=guarded)
    session_memory_search = providers.Factory(MemorySearch, fine=fine_search, store=guarded, memories=session_memories)
    expand_chunk = providers.Factory(ExpandChunk, store=guarded)
    reconstruct_memory = providers.Factory(Reconstruct, store=guarded, identity=identity)
    get_session_memory = providers.Factory(GetSessionMemory, store=guarded, scopes=guarded, identity=identity)
    session_stats = providers.Factory(GetSessionStats, scopes=guarded)
    list_sessions = providers.Factory(ListSessions, scopes=guarded)
    load_task_context = providers.Factory(LoadTaskContext, scopes=guarded, memories=session_memories)
    export_document = providers.Factory(ExportDocument, store=guarded, exporter=adapters.exporter, identity=identity)
    delete_session_memory = providers.Factory(DeleteSessionMemory, store=guarded, delete=delete_artifact)
    # Spec 002's Zapomni tools: the same artifacts and retrieval; one latency meter per process.
    zapomni_meter = providers.ThreadSafeSingleton(LatencyMeter)
    add_memory = providers.Factory(AddMemory, ingest=ingest_artifact)
    search_memory = providers.Factory(SearchMemory, search=passage_search, meter=zapomni_meter)
    zapomni_stats = providers.Factory(GetStats, scopes=guarded, meter=zapomni_meter, vectors=adapters.vectors)
    # Spec 004's project documents: items and their versions in the store, current versions as artifacts.
    projects = providers.ThreadSafeSingleton(factories.projects)
    item_writer = providers.Factory(ItemWriter, documents=adapters.store, ingest=ingest_artifact)
    idempotent = providers.Factory(Idempotent, store=adapters.store)
    commit_entries = providers.Factory(CommitEntries, writer=item_writer, idempotent=idempotent)
    upsert_canonical = providers.Factory(UpsertCanonical, writer=item_writer, idempotent=idempotent)
    read_canonical = providers.Factory(ReadCanonical, documents=adapters.store, chunkers=plugins.registry,
                                       spec=chunk_spec, tokenizer=adapters.tokenizer)
    project_search = providers.Factory(ProjectSearch, search=passage_search,
                                       boost=settings.provided.memtrove_canonical_boost)
    context_pack = providers.Factory(ContextPack, read=read_canonical, search=passage_search)
    restore = providers.Factory(Restore, documents=adapters.store, search=project_search, tokenizer=adapters.tokenizer)
    # Export and import (the console's): pages of records the caller may see; records written back as theirs.
    export_page = providers.Factory(ExportPage, store=adapters.store, scopes=adapters.store,
                                    documents=adapters.store, graph=adapters.store, policies=plugins.privacy_policies,
                                    identity=identity)
    import_records = providers.Factory(ImportRecords, store=adapters.store, scopes=adapters.store,
                                       store_memory=store_memory, append_turn=append_turn, ingest=ingest_artifact,
                                       documents=adapters.store, writer=item_writer, graph=entity_vectors,
                                       identity=identity)
    # Code indexing (spec 002 phase 3): a codebase's files as artifacts, their symbol table in the store.
    source_tree = providers.Singleton(SourceDirs)
    index_codebase = providers.Factory(IndexCodebase, code=adapters.store, tree=source_tree, outline=providers.Object(outline),
                                       ingest=ingest_artifact, delete=delete_artifact, artifacts=adapters.store,
                                       identity=identity, processes=adapters.processes)
    codebases = providers.Factory(Codebases, code=adapters.store, tree=source_tree, identity=identity,
                                  processes=adapters.processes)
    index_status = providers.Factory(IndexStatus, codebases=codebases)
    clear_index = providers.Factory(ClearIndex, codebases=codebases, code=adapters.store, delete=delete_artifact,
                                    identity=identity)
    search_code = providers.Factory(SearchCode, retrieve=retrieve, codebases=codebases, code=adapters.store)
    cleanup_old_memories = providers.Factory(CleanupOldMemories, scopes=guarded, delete=delete_artifact,
                                             audit_log=adapters.store, identity=identity)


class Application(containers.DeclarativeContainer):
    """Gathers the small containers; tests override single providers with fakes."""

    settings = providers.Dependency(instance_of=Settings)
    adapters = providers.Container(Adapters, settings=settings)
    plugins = providers.Container(Plugins, settings=settings)
    use_cases = providers.Container(UseCases, settings=settings, adapters=adapters, plugins=plugins)
