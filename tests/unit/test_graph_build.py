"""build_graph on the fakes with a stand-in extractor (capitalised words are entities, the first related
to the others): incremental by digest, errors recorded and read again, records gone forgotten, what a
caller may not read never read; and entity resolution's order and thresholds."""

from __future__ import annotations

import re

import pytest

from domain.access.principal import Principal, RequestContext
from domain.errors import ConfigurationError, ValidationError
from domain.graph.build import BuildGraph, GraphStatus
from domain.graph.extraction import Extracted, FoundObservation, FoundRelation, Mention, Passage
from domain.graph.model import Alias
from domain.graph.resolve import Resolver, normal
from domain.memories.usecases import DeleteMemory, StoreMemory, StoreMemoryRequest
from domain.access.privacy import Privacy

ME, OTHER = RequestContext(Principal("local")), RequestContext(Principal("bob"))
NAME = re.compile(r"\b[A-Z][a-z]+\b")


class Capitals:
    name, version = "capitals", "1"

    def __init__(self) -> None:
        self.read: list[str] = []
        self.fail = False

    def extract(self, passages: list[Passage]) -> list[Extracted]:
        if self.fail:
            raise RuntimeError("the model is down")
        self.read += [p.record_id for p in passages]
        found = []
        for p in passages:
            names = list(dict.fromkeys(NAME.findall(p.text)))
            found.append(Extracted(tuple(Mention(n, "thing") for n in names),
                                   tuple(FoundRelation(names[0], "with", n, p.text[:50]) for n in names[1:]),
                                   tuple(FoundObservation(names[0], p.text) for _ in names[:1])))
        return found


def remember(world, text: str, who: RequestContext = ME, privacy: Privacy = Privacy()) -> str:
    store = StoreMemory(world.embedder, world.store, world.split, world.tokenizer, identity=lambda: who)
    return store(StoreMemoryRequest(content=text, type="fact", confidence=1.0, privacy=privacy)).id


def builder(world, extractor: Capitals, who: RequestContext = ME) -> BuildGraph:
    return BuildGraph(world.store, world.store, world.store, world.store, {"capitals": extractor}, "capitals",
                      identity=lambda: who)


def test_a_build_reads_what_changed_and_forgets_what_went(world) -> None:
    extractor = Capitals()
    first = remember(world, "Alice met Bob in Paris.")
    remember(world, "Carol lives in Rome.")
    build = builder(world, extractor)
    done = build()
    assert (done.state, done.total, done.done, done.skipped) == ("done", 2, 2, 0)
    assert {e.name for e in world.store.entities("local")} == {"Alice", "Bob", "Paris", "Carol", "Rome"}
    again = build()
    assert (again.total, again.skipped) == (0, 2) and len(extractor.read) == 2  # nothing read twice
    DeleteMemory(world.store, identity=lambda: ME)(first)
    assert {e.name for e in world.store.entities("local")} == {"Carol", "Rome"}
    assert GraphStatus(world.store, identity=lambda: ME)()[0].id == again.id


def test_an_extractor_error_is_recorded_and_read_again(world) -> None:
    extractor = Capitals()
    remember(world, "Alice met Bob.")
    extractor.fail = True
    failed = builder(world, extractor)()
    assert failed.state == "failed" and "RuntimeError: the model is down" in failed.errors[0]
    extractor.fail = False
    assert builder(world, extractor)().done == 1 and world.store.relations("local")


def test_another_callers_private_record_is_never_read(world) -> None:
    extractor = Capitals()
    remember(world, "Zed keeps a secret.", who=OTHER)
    remember(world, "Yara shares a note.", who=OTHER, privacy=Privacy(visibility_scope="custom", visible_to=["local"]))
    builder(world, extractor)()
    assert {e.name for e in world.store.entities("local")} == {"Yara"}
    assert world.store.entities("bob") == []  # bob has built nothing


def test_bad_input_and_a_missing_extractor() -> None:
    from adapters.memory.scopes import InMemoryStore

    store = InMemoryStore()
    build = BuildGraph(store, store, store, store, {}, "spacy", identity=lambda: ME)
    with pytest.raises(ConfigurationError, match="No extractor named 'spacy'"):
        build()
    build = BuildGraph(store, store, store, store, {"capitals": Capitals()}, "capitals", identity=lambda: ME)
    for arguments, field in (({"kinds": ["mail"]}, "kinds"), ({"kinds": []}, "kinds"),
                             ({"since": "yesterday"}, "since"), ({"source": ""}, "source")):
        with pytest.raises(ValidationError) as refused:
            build(**arguments)
        assert refused.value.field == field


def test_resolution_order() -> None:
    assert normal("The Northwind-Traders’s") == "northwind traders"
    r = Resolver({"Northwind Traders": "organization", "Melanie": "person"})
    assert r.resolve("Melanie", "person") == ("Melanie", None)
    assert r.resolve("northwind traders", "organization")[1] == Alias("northwind traders", "Northwind Traders",
                                                                      "normalized", 1.0)
    name, alias = r.resolve("Northwind Traders Inc", "organization")
    assert name == "Northwind Traders" and alias.method == "fuzzy" and alias.score >= 0.88
    assert r.resolve("Northwind Traders Inc", "place")[0] == "Northwind Traders"  # once merged, merged
    assert r.resolve("Northwind Tradeshow", "event") == ("Northwind Tradeshow", None)  # another type: new
    assert r.resolve("Mel", "person") == ("Mel", None)  # too far for fuzzy, and no embedder


def test_resolution_by_meaning_and_a_blocked_pair() -> None:
    same = lambda texts: [[1.0, 0.0] for _ in texts]  # noqa: E731 - every name in context means the same
    r = Resolver({"Melanie Smith": "person"}, embed=same)
    r.learn("Melanie Smith", "person", "Melanie Smith paints.")
    name, alias = r.resolve("Melanie Smyth-Jones", "person", "Melanie paints sunsets.")
    assert name == "Melanie Smith" and alias.method == "embedding"
    blocked = Resolver({"Northwind Traders": "organization"},
                       [Alias("Northwind Traders Inc", "Northwind Traders", "fuzzy", 0.9, blocked=True)])
    assert blocked.resolve("Northwind Traders Inc", "organization") == ("Northwind Traders Inc", None)


def test_a_single_valued_fact_ends_when_a_later_record_gives_another_value() -> None:
    from domain.graph.model import Evidence, Relation
    from domain.graph.validity import ended, single_valued

    assert single_valued("live_in") and single_valued("lives_in") and not single_valued("like")
    vienna, graz, paris = (Relation("Ilse", city, "live_in") for city in ("Vienna", "Graz", "Paris"))
    liked = Relation("Ilse", "tea", "like")
    said = {vienna: [Evidence("memory", "m1", when="2021-03-01"), Evidence("turn", "t9", when="2022-01-01")],
            graz: [Evidence("memory", "m2", when="2023-09-01")], paris: [Evidence("memory", "m3")],  # undated
            liked: [Evidence("memory", "m4", when="2020-01-01")]}
    assert ended([vienna, graz, paris, liked], said) == {vienna: ("2023-09-01", graz)}


class Recorded:
    """Processes whose holders are names: ``gone`` for those listed dead."""

    def __init__(self, me: str, dead: set[str]) -> None:
        self._me, self.dead = me, dead

    def me(self) -> str:
        return self._me

    def gone(self, holder: str) -> bool:
        return holder in self.dead


def test_a_build_whose_process_is_gone_is_interrupted_at_once(world) -> None:
    """A build left 'running' by a killed server: graph_status says interrupted straight away when its
    holder process is gone, not only after STALE seconds without progress; a live or unknown one stays."""
    from dataclasses import replace

    remember(world, "Alice met Bob in Paris.")
    done = BuildGraph(world.store, world.store, world.store, world.store, {"capitals": Capitals()}, "capitals",
                      identity=lambda: ME, processes=Recorded("server-1", set()))()
    assert done.holder == "server-1"
    world.store.save_build(replace(done, state="running", finished=None))  # as a kill -9 mid-build leaves it
    alive = GraphStatus(world.store, identity=lambda: ME, processes=Recorded("server-2", set()))()[0]
    assert alive.state == "running"  # its process may still be at work (another replica): wait for STALE
    dead = GraphStatus(world.store, identity=lambda: ME, processes=Recorded("server-2", {"server-1"}))()[0]
    assert dead.state == "interrupted"
    again = builder(world, Capitals())()  # and a new build runs
    assert again.state == "done"
