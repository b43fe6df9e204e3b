"""The graph built from records, in memory: evidence per fact (keyed by what the fact is), the records
read, merged names and builds. The fake of DerivedGraph beside InMemoryGraph (same contract suite)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from domain.graph.extraction import UNKNOWN
from domain.graph.model import NO_DATE, Alias, Derived, Entity, Event, Evidence, GraphBuild, Relation
from domain.validation import epoch
from domain.model import AuditEntry
from domain.ports.graph import Origin

TOOL = ("tool", "")
Fact = tuple  # ("e", name) | ("o", name, content) | ("r", Relation)


class InMemoryDerivedGraph:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.graph_evidence: dict[str, list[tuple[Fact, Origin, Evidence, str | None]]] = {}
        self.graph_sources: dict[str, dict[Origin, str]] = {}
        self.graph_aliases: dict[str, dict[tuple[str, str], Alias]] = {}
        self.graph_builds: dict[str, list[GraphBuild]] = {}
        self.graph_events: dict[str, list[tuple[int, float, Event]]] = {}

    def source_digests(self, owner: str, origins: Sequence[Origin] | None = None) -> dict[Origin, str]:
        with self._graph_lock:  # type: ignore[attr-defined]
            held = self.graph_sources.get(owner, {})
            return dict(held) if origins is None else {o: held[o] for o in origins if o in held}

    def apply_sources(self, owner: str, items: Sequence[tuple[Origin, str, Derived]], entry: AuditEntry) -> None:
        with self._graph_lock:  # type: ignore[attr-defined]
            for origin, digest, derived in items:
                self._forget(owner, [origin])
                self._write(owner, origin, derived)
                self.graph_sources.setdefault(owner, {})[origin] = digest
                for alias in derived.aliases:
                    self.graph_aliases.setdefault(owner, {}).setdefault((alias.alias, alias.name), alias)
            self._log(entry)  # type: ignore[attr-defined]

    def forget_sources(self, owner: str | None, origins: Sequence[Origin], entry: AuditEntry | None) -> int:
        with self._graph_lock:  # type: ignore[attr-defined]
            gone = sum(self._forget(o, origins) for o in ([owner] if owner is not None else list(self.graph_sources)))
            if entry is not None:
                self._log(entry)  # type: ignore[attr-defined]
            return gone

    def evidence(self, owner: str, relations: Sequence[Relation]) -> dict[Relation, list[Evidence]]:
        with self._graph_lock:  # type: ignore[attr-defined]
            rows = self.graph_evidence.get(owner, [])
            return {rel: [ev for fact, origin, ev, _ in rows if fact == ("r", rel) and origin != TOOL]
                    for rel in dict.fromkeys(relations)}

    def linked_records(self, owner: str, names: Sequence[str], limit: int) -> list[tuple[str, Origin, int]]:
        wanted = set(names)
        with self._graph_lock:  # type: ignore[attr-defined]
            rows = self.graph_evidence.get(owner, [])
            found = [(fact[1], origin, ev.part) for fact, origin, ev, _ in reversed(rows)
                     if fact[0] == "e" and fact[1] in wanted and origin != TOOL]
        return found[:limit]

    def named_by(self, owner: str, origins: Sequence[Origin],
                 parts: Mapping[Origin, set[int]] | None = None) -> dict[Origin, list[str]]:
        wanted = set(origins)
        found: dict[Origin, list[str]] = {}
        with self._graph_lock:  # type: ignore[attr-defined]
            for fact, origin, ev, _ in self.graph_evidence.get(owner, []):
                if fact[0] != "e" or origin not in wanted or parts and origin in parts and ev.part not in parts[origin]:
                    continue
                if fact[1] not in found.setdefault(origin, []):
                    found[origin].append(fact[1])
        return found

    def events(self, owner: str, since: float | None = None, until: float | None = None,
               kinds: Sequence[str] | None = None, who: str | None = None, origins: Sequence[Origin] | None = None,
               conversation_id: str | None = None, limit: int = 100, after: tuple[float, int] | None = None
               ) -> list[tuple[int, float, Event]]:
        wanted = set(origins) if origins is not None else None
        with self._graph_lock:  # type: ignore[attr-defined]
            held = sorted(self.graph_events.get(owner, []), key=lambda e: (e[1], e[0]))
        return [e for e in held if (since is None or e[1] >= since) and (until is None or e[1] <= until)
                and (kinds is None or e[2].kind in kinds) and (who is None or who in e[2].who)
                and (wanted is None or (e[2].evidence.kind, e[2].evidence.record_id) in wanted)
                and (conversation_id is None or e[2].evidence.kind == "turn"
                     and e[2].evidence.record_id.startswith(f"{conversation_id}_turn_"))
                and (after is None or (e[1], e[0]) > after)][:limit]

    def aliases(self, owner: str) -> list[Alias]:
        with self._graph_lock:  # type: ignore[attr-defined]
            return sorted(self.graph_aliases.get(owner, {}).values(), key=lambda a: (a.alias, a.name))

    def unmerge(self, owner: str, alias: str, name: str, entry: AuditEntry) -> int | None:
        with self._graph_lock:  # type: ignore[attr-defined]
            held = self.graph_aliases.get(owner, {}).get((alias, name))
            if held is None or held.blocked:
                return None
            rows = self.graph_evidence.get(owner, [])
            kind = next((e.entity_type for e in self.graph_entities.get(owner, []) if e.name == name), None)  # type: ignore[attr-defined]
            moved, touched = 0, set()
            for i, (fact, origin, ev, target_mention) in enumerate(rows):
                new: Fact | None = None
                if fact == ("e", name) and ev.mention == alias:
                    new = ("e", alias)
                elif fact[0] == "o" and fact[1] == name and ev.mention == alias:
                    new = ("o", alias, fact[2])
                elif fact[0] == "r" and fact[1].source == name and ev.mention == alias:
                    new = ("r", replace(fact[1], source=alias))
                elif fact[0] == "r" and fact[1].target == name and target_mention == alias:
                    new = ("r", replace(fact[1], target=alias))
                if new is not None and kind is not None:
                    self._ensure(owner, new, kind)
                    rows[i] = (new, origin, ev, target_mention)
                    touched.add(fact)
                    moved += 1
            for fact in touched:
                if fact[0] != "e" and not any(f == fact for f, *_ in rows):
                    self._remove(owner, fact)
            self.graph_aliases[owner][(alias, name)] = replace(held, blocked=True)
            self._log(entry)  # type: ignore[attr-defined]
            return moved

    def save_build(self, build: GraphBuild) -> None:
        with self._graph_lock:  # type: ignore[attr-defined]
            held = self.graph_builds.setdefault(build.owner, [])
            held[:] = [b for b in held if b.id != build.id] + [build] if any(b.id == build.id for b in held) \
                else held + [build]

    def builds(self, owner: str, build_id: str | None = None, limit: int = 1) -> list[GraphBuild]:
        with self._graph_lock:  # type: ignore[attr-defined]
            held = sorted(self.graph_builds.get(owner, []), key=lambda b: b.started, reverse=True)
        return [b for b in held if build_id is None or b.id == build_id][:limit]

    # A record deleted or replaced: what every owner's graph read from it goes (the SQL store does it in
    # the delete's transaction; these wrap the fake store's methods, which come after this class).
    def delete_memory(self, memory_id: str, entry: AuditEntry) -> bool:
        gone = super().delete_memory(memory_id, entry)  # type: ignore[misc]
        self.forget_sources(None, [("memory", memory_id)], None) if gone else None
        return gone

    def replace_memory(self, memory: Any, entry: AuditEntry, vectors: Sequence[Any] = ()) -> bool:
        done = super().replace_memory(memory, entry, vectors)  # type: ignore[misc]
        self.forget_sources(None, [("memory", memory.id)], None) if done else None
        return done

    def delete_turn(self, turn_id: str, entry: AuditEntry) -> bool:
        gone = super().delete_turn(turn_id, entry)  # type: ignore[misc]
        self.forget_sources(None, [("turn", turn_id)], None) if gone else None
        return gone

    def put_turn(self, turn: Any, entry: AuditEntry, vectors: Any = None) -> None:
        old = self.get_turn(turn.owner, turn.conversation_id, turn.turn_index)  # type: ignore[attr-defined]
        super().put_turn(turn, entry, vectors)  # type: ignore[misc]
        self.forget_sources(None, [("turn", turn.id)] + ([("turn", old.id)] if old is not None else []), None)

    def delete_artifact(self, artifact_id: str, entry: AuditEntry) -> int | None:
        gone = super().delete_artifact(artifact_id, entry)  # type: ignore[misc]
        self.forget_sources(None, [("artifact", artifact_id)], None) if gone is not None else None
        return gone

    # Graph tools' writes and deletes (called by InMemoryGraph under its lock).
    def _tool_wrote(self, owner: str, facts: Sequence[Fact]) -> None:
        rows = self.graph_evidence.get(owner, [])
        cited = {f for f, *_ in rows}
        rows += [(f, TOOL, Evidence("tool", ""), None) for f in dict.fromkeys(facts)
                 if f in cited and (f, TOOL) not in {(g, o) for g, o, *_ in rows}]

    def _tool_dropped(self, owner: str, drop: Any) -> None:
        self.graph_evidence[owner] = [row for row in self.graph_evidence.get(owner, []) if not drop(row[0])]

    def _write(self, owner: str, origin: Origin, derived: Derived) -> None:
        types = {e.name: e.entity_type for e in derived.entities}
        rows = self.graph_evidence.setdefault(owner, [])
        cited = {fact for fact, *_ in rows}

        def cite(fact: Fact, kind: str, ev: Evidence, target_mention: str | None = None) -> None:
            if self._ensure(owner, fact, kind) and fact not in cited:  # there already, from no record: a tool's
                rows.append((fact, TOOL, Evidence("tool", ""), None))
            cited.add(fact)
            rows.append((fact, origin, ev, target_mention))

        for name, ev in derived.mentions:
            cite(("e", name), types[name], ev)
        for name, text, ev in derived.observations:
            cite(("o", name, text), types[name], ev)
        for rel, ev, target_mention in derived.relations:
            cite(("r", rel), "", ev, target_mention)
        held = self.graph_events.setdefault(owner, [])
        for event in derived.events:
            held.append((len(held) + 1 + max((i for i, _, _ in held), default=0), epoch(event.date) if event.date
                         else NO_DATE, event))

    def _ensure(self, owner: str, fact: Fact, entity_type: str) -> bool:
        """The fact written when missing; whether it was there already."""
        entities = self.graph_entities.setdefault(owner, [])  # type: ignore[attr-defined]
        if fact[0] == "r":
            relations = self.graph_relations.setdefault(owner, [])  # type: ignore[attr-defined]
            there = fact[1] in relations
            if not there:
                relations.append(fact[1])
            return there
        at = next((i for i, e in enumerate(entities) if e.name == fact[1]), None)
        there = at is not None and (fact[0] == "e" or fact[2] in entities[at].observations)
        if at is None:
            entities.append(Entity(fact[1], entity_type))
            at = len(entities) - 1
        elif entities[at].entity_type == UNKNOWN and entity_type != UNKNOWN:  # a confident type replaces it
            entities[at] = replace(entities[at], entity_type=entity_type)
        if fact[0] == "o" and fact[2] not in entities[at].observations:
            e = entities[at]
            entities[at] = Entity(e.name, e.entity_type, (*e.observations, fact[2]))
        return there

    def _remove(self, owner: str, fact: Fact) -> None:
        entities = self.graph_entities.get(owner, [])  # type: ignore[attr-defined]
        if fact[0] == "r":
            self.graph_relations[owner] = [r for r in self.graph_relations.get(owner, []) if r != fact[1]]  # type: ignore[attr-defined]
        elif fact[0] == "o":
            entities[:] = [Entity(e.name, e.entity_type, tuple(o for o in e.observations if o != fact[2]))
                           if e.name == fact[1] else e for e in entities]
        else:
            entities[:] = [e for e in entities if e.name != fact[1]]
            self._unindex(owner, [fact[1]])  # type: ignore[attr-defined]  # defensive: records never take a tool's
            self.graph_evidence[owner] = [row for row in self.graph_evidence.get(owner, [])
                                          if not (row[0][0] == "o" and row[0][1] == fact[1])]

    def _forget(self, owner: str, origins: Sequence[Origin]) -> int:
        wanted = set(origins)
        rows = self.graph_evidence.get(owner, [])
        facts = {fact for fact, origin, *_ in rows if origin in wanted}
        rows[:] = [row for row in rows if row[1] not in wanted]
        cited = {fact for fact, *_ in rows}
        for fact in sorted(facts - cited, key=lambda f: f[0] == "e"):  # an entity last: its observations first
            self._remove(owner, fact)
        self.graph_events[owner] = [e for e in self.graph_events.get(owner, [])
                                    if (e[2].evidence.kind, e[2].evidence.record_id) not in wanted]
        held = self.graph_sources.get(owner, {})
        return sum(held.pop(origin, None) is not None for origin in wanted)
