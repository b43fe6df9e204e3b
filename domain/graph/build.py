"""build_graph and graph_status (spec 002 phase 2): the caller's graph built from what it may read.

A build walks the caller's readable records (domain/graph/records.py), skips those whose digest is the
one read last time, and has the extractor read the rest in batches; names are resolved against the
graph (domain/graph/resolve.py) and each record's facts replace what it said before, one transaction
per batch. A whole build (no filter) also forgets records gone since the last one (deleted, or no
longer readable). The run is kept (state, counts, progress, errors) for graph_status; an extractor
error is recorded against its records and the build goes on. One build per caller at a time.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from domain.access.principal import Identity
from domain.artifacts.progress import Progress, Silent
from domain.common import Clock, audit, utc_now
from domain.errors import ConfigurationError, NotFoundError, ValidationError
from domain.graph.extraction import KINDS, UNKNOWN, Extracted, Extractor, Passage, excerpt, extraction_problem
from domain.graph.model import Alias, Derived, Entity, Event, Evidence, GraphBuild, Relation
from domain.graph.records import Readable, Scope, Source
from domain.graph.resolve import Embed, Resolver
from domain.graph.usecases import COLLECTION
from domain.model import RequestContext
from domain.ports import ArtifactScopes, ChunkerCatalog, MetadataStore, PrivacyPolicy
from domain.ports.graph import DerivedGraph, GraphStore
from domain.ports.processes import UNKNOWN_PROCESSES, Processes
from domain.validation import epoch, optional_choices, optional_span, require_text

BATCH = 32  # passages an extractor reads at once
# (text, the record's ISO time, "past" or "future": which a date without a year prefers) -> an ISO date, or None
Dates = Callable[[str, str | None, str], str | None]
STALE = 120.0  # seconds without news after which a running build is reported interrupted
_running: dict[str, str] = {}  # owner -> build id, in this process
_running_lock = threading.Lock()
_writing: dict[str, threading.Lock] = {}  # owner -> held while a build or the background writes their graph


def owner_lock(owner: str) -> threading.Lock:
    """The lock a build and the background graph (domain/graph/follow.py) hold while they read records into
    ``owner``'s graph: one at a time, each resolving names against what the other wrote."""
    with _running_lock:
        return _writing.setdefault(owner, threading.Lock())


def scope_of(kinds: object, source: object, since: object, until: object) -> Scope:
    given = optional_choices("kinds", kinds, KINDS)
    chosen = KINDS if given is None else tuple(k for k in KINDS if k in given)
    if source is not None:
        require_text("source", source, 500, label="source")
    return Scope(chosen, source, *optional_span(since, until))


def release(build: GraphBuild) -> None:
    """The caller's build slot, when ``build`` holds it (a second release does nothing)."""
    with _running_lock:
        if _running.get(build.owner) == build.id:
            del _running[build.owner]


@dataclass(frozen=True, slots=True)
class Started:
    """A build recorded as running, not yet run (BuildGraph.start)."""

    build: GraphBuild
    scope: Scope
    extractor: Extractor
    context: RequestContext


@dataclass(frozen=True, slots=True)
class BuildGraph:
    store: MetadataStore
    scopes: ArtifactScopes
    graph: GraphStore
    derived: DerivedGraph
    extractors: dict[str, Extractor]
    extractor: str = "spacy"
    policies: Sequence[PrivacyPolicy] = ()
    chunkers: ChunkerCatalog | None = None  # a document's chunker tells its prose from its markup
    embed: Embed | None = None
    dates: Dates | None = None  # "last Friday" in a record of (ISO time) -> an ISO date, or None
    clock: Clock = utc_now
    identity: Identity = RequestContext
    now: Callable[[], float] = time.time
    processes: Processes = UNKNOWN_PROCESSES  # recorded with the build: graph_status sees a dead one at once

    def __call__(self, kinds: object = None, source: object = None, since: object = None, until: object = None,
                 progress: Progress | None = None) -> GraphBuild:
        return self.run(self.start(kinds, source, since, until), progress)

    def start(self, kinds: object = None, source: object = None, since: object = None,
              until: object = None) -> Started:
        """Check the request, claim the caller's one build and record it as running: its id is known (and
        graph_status answers for it) before any record is read. ``run`` does the work and releases it."""
        scope = scope_of(kinds, source, since, until)
        extractor = self.extractors.get(self.extractor)
        if extractor is None:
            raise ConfigurationError(f"No extractor named {self.extractor!r} (MEMTROVE_EXTRACTOR); available: "
                                     f"{', '.join(sorted(self.extractors)) or 'none'}")
        context = self.identity()
        owner = context.actor
        stamp = self.clock()
        build = GraphBuild(uuid.uuid4().hex, owner, "running", stamp, stamp,
                           {"kinds": list(scope.kinds), "source": scope.source, "since": since, "until": until,
                            "extractor": extractor.name}, holder=self.processes.me())
        with _running_lock:
            if owner in _running:
                raise ValidationError("build_graph", f"A build of your graph is running ({_running[owner]}): "
                                                     "see graph_status")
            _running[owner] = build.id
        try:
            self.derived.save_build(build)
        except BaseException:
            release(build)
            raise
        return Started(build, scope, extractor, context)

    def run(self, started: Started, progress: Progress | None = None) -> GraphBuild:
        try:
            with owner_lock(started.build.owner):
                return self._run(started.build, started.scope, started.extractor, started.context,
                                 progress or Silent())
        finally:
            release(started.build)

    def _run(self, build: GraphBuild, scope: Scope, extractor: Extractor, context: RequestContext,
             progress: Progress) -> GraphBuild:
        owner = build.owner
        readable = Readable(self.store, self.scopes, self.policies, context, self.now(), extractor.version,
                            self.chunkers)
        held = self.derived.source_digests(owner)
        sources = list(readable.sources(scope))
        todo = sorted((s for s in sources if held.get((s.kind, s.record_id)) != s.digest), key=lambda s: s.ts)
        build = replace(build, total=len(todo), skipped=len(sources) - len(todo))
        resolver = Resolver({e.name: e.entity_type for e in self.graph.entities(owner)},
                            self.derived.aliases(owner), self.embed)
        errors: list[str] = []
        for start in range(0, len(todo), BATCH):
            batch = todo[start:start + BATCH]
            build = self.read_batch(build, batch, extractor, resolver, context, errors)
            progress(build.id, build.done, build.total)
            self.derived.save_build(build)
        if scope.whole:
            seen = {(s.kind, s.record_id) for s in sources}
            gone = [origin for origin in held if origin not in seen]
            if gone:
                build = replace(build, forgotten=self.derived.forget_sources(
                    owner, gone, audit("build_graph", COLLECTION, [i for _, i in gone][:50], self.clock(), context,
                                       forgotten=len(gone))))
        state = "failed" if errors and len(errors) >= build.total and build.total else "done"
        build = replace(build, state=state, updated=self.clock(), finished=self.clock(), errors=tuple(errors[:100]))
        self.derived.save_build(build)
        return build

    def read_batch(self, build: GraphBuild, batch: list[Source], extractor: Extractor, resolver: Resolver,
                   context: RequestContext, errors: list[str], **detail: object) -> GraphBuild:
        """``batch`` read by ``extractor`` into the caller's graph (one transaction); ``build``'s counts added."""
        passages: dict[tuple[str, str], list[Passage]] = {}
        for source in batch:
            try:
                passages[(source.kind, source.record_id)] = source.read()
            except Exception as exc:  # noqa: BLE001 - e.g. a chunker's prose reader failed: read again next time
                errors.append(f"{source.kind} {source.record_id}: {type(exc).__name__}: {exc}"[:500])
        read = [s for s in batch if (s.kind, s.record_id) in passages]
        flat = [p for ps in passages.values() for p in ps]
        try:
            found = extractor.extract(flat) if flat else []
            problem = extraction_problem(flat, found)
            if problem:
                raise RuntimeError(f"extractor {extractor.name} answered wrongly: {problem}")
        except Exception as exc:  # noqa: BLE001 - recorded against these records; the build goes on
            errors += [f"{s.kind} {s.record_id}: {type(exc).__name__}: {exc}"[:500] for s in read]
            return replace(build, done=build.done + len(batch), updated=self.clock())
        results = dict(zip(((p.kind, p.record_id, p.part) for p in flat), found))
        items = []
        counts = [0, 0, 0]
        for source in read:
            derived = _derive(resolver, [(p, results[(p.kind, p.record_id, p.part)])
                                         for p in passages[(source.kind, source.record_id)]], self.dates)
            counts = [counts[0] + len(derived.entities), counts[1] + len(derived.relations),
                      counts[2] + len(derived.observations)]
            items.append(((source.kind, source.record_id), source.digest, derived))
        self.derived.apply_sources(build.owner, items, audit(
            "build_graph", COLLECTION, [s.record_id for s in read], self.clock(), context, items=len(read), **detail))
        return replace(build, done=build.done + len(batch), entities=build.entities + counts[0],
                       relations=build.relations + counts[1], observations=build.observations + counts[2],
                       updated=self.clock())


def _derive(resolver: Resolver, read: list[tuple[Passage, Extracted]], dates: Dates | None = None) -> Derived:
    """What one record's passages say, each name resolved to the graph's entity; an event's date written
    in its sentence resolved against the record's time (``dates``), else the record's time."""
    entities: dict[str, Entity] = {}
    relations, observations, mentions, aliases, events = [], [], [], [], []
    for passage, found in read:
        sentence = {o.name: o.text for o in found.observations}
        for r in found.relations:
            sentence.setdefault(r.source, r.excerpt)
            sentence.setdefault(r.target, r.excerpt)
        names = {}
        for m in found.entities:
            name, alias = resolver.resolve(m.name, m.entity_type, sentence.get(m.name, ""))
            resolver.learn(name, m.entity_type, sentence.get(m.name, ""))
            if resolver.known.get(name) == UNKNOWN and m.entity_type != UNKNOWN:
                resolver.known[name] = m.entity_type  # a type read with confidence replaces "unknown"
                entities.pop(name, None)
            names[m.name] = name
            aliases += [alias] if alias is not None else []
            entities.setdefault(name, Entity(name, resolver.known.get(name, m.entity_type)))
            cite = excerpt(sentence.get(m.name) or passage.text)
            mentions.append((name, Evidence(passage.kind, passage.record_id, passage.part, m.name, cite, passage.when)))
        for o in found.observations:
            observations.append((names[o.name], o.text, Evidence(passage.kind, passage.record_id, passage.part, o.name,
                                                                  excerpt(o.text), passage.when)))
        for r in found.relations:
            relations.append((Relation(names[r.source], names[r.target], r.relation_type),
                              Evidence(passage.kind, passage.record_id, passage.part, r.source, r.excerpt,
                                       passage.when), r.target))
        for e in found.events:
            ahead = "future" if e.kind == "action" else "past"  # an action is to be done: "by Friday" is the next one
            written = dates(e.when_text, passage.when, ahead) if dates is not None and e.when_text else None
            date, by = (written, "text") if written else (passage.when, "record") if passage.when else (None, "none")
            events.append(Event(e.kind, e.summary, tuple(names[w] for w in e.who), date, by,
                                Evidence(passage.kind, passage.record_id, passage.part, "", excerpt(e.summary),
                                         passage.when), e.when_text))
    return Derived(tuple(entities.values()), tuple(relations), tuple(observations), tuple(mentions), tuple(aliases),
                   tuple(events))


@dataclass(frozen=True, slots=True)
class GraphStatus:
    derived: DerivedGraph
    identity: Identity = RequestContext
    now: Callable[[], float] = time.time
    processes: Processes = UNKNOWN_PROCESSES

    def __call__(self, build_id: object = None) -> tuple[GraphBuild, list[Alias]]:
        """The build (latest, or ``build_id``) and the names merged in the caller's graph (unmerged ones too)."""
        if build_id is not None and (not isinstance(build_id, str) or not 1 <= len(build_id) <= 64):
            raise ValidationError("build_id", "build_id must be 1-64 characters (a build_graph answer's build_id)")
        owner = self.identity().actor
        found = self.derived.builds(owner, build_id)
        if not found:
            raise NotFoundError(f"Build not found: {build_id}" if build_id else "No build of your graph yet: "
                                                                                "call build_graph",
                                field="build_id" if build_id else None)
        build = found[0]
        with _running_lock:
            here = _running.get(owner) == build.id
        # Not running here: interrupted once its process is surely gone (a kill, a crash), else once it
        # stopped reporting for STALE seconds (another machine, or a build from before holders).
        if build.state == "running" and not here and (self.processes.gone(build.holder)
                                                       or self.now() - epoch(build.updated) > STALE):
            build = replace(build, state="interrupted")
        return build, self.derived.aliases(owner)
