"""The behaviour every LexicalIndex shares (it lives in the store: writes index, deletes unindex).

Subclass LexicalIndexContract as ``Test...`` and override ``store`` with a fresh, empty store that
is a MetadataStore, an ArtifactStore and a LexicalIndex at once.
"""

from __future__ import annotations

import dataclasses

import pytest

from domain.model import AuditEntry, EmbeddingProfile, Memory, Turn
from tests.contract.artifact_store_contract import artifact, entry, job

PROFILE = EmbeddingProfile("fake", "hash", 64, 64)
AUDIT = AuditEntry("stored", "memory", ("x",), "test", "2025-01-01T00:00:00Z")


def memory(mid: str, content: str, conversation: str | None = None, confidence: float = 0.9,
           ts: str = "2025-01-01T00:00:00Z") -> Memory:
    return Memory(mid, content, "fact", confidence, ts, conversation, 5, PROFILE)


def turn(conversation: str, index: int, content: str, ts: str = "2025-01-01T00:00:00Z") -> Turn:
    return Turn(f"{conversation}_turn_{index}", conversation, "user", content, index, ts, 5,
                str(hash(content) & 0xFFFFFFFF).rjust(64, "0"), PROFILE)


def ids(matches: list) -> list[str]:
    return [m.record_id for m in matches]


class LexicalIndexContract:
    @pytest.fixture
    def store(self):
        raise NotImplementedError

    def test_a_word_finds_the_record_holding_it_and_ranks_rarer_words_higher(self, store) -> None:
        store.add_memory(memory("mem_a", "Caroline went to the pottery class on Sunday"), AUDIT)
        store.add_memory(memory("mem_b", "Caroline likes hiking with Melanie"), AUDIT)
        store.add_memory(memory("mem_c", "Melanie painted a sunset"), AUDIT)
        for i in range(5):
            store.add_memory(memory(f"mem_f{i}", f"Caroline talked about her day number {i}"), AUDIT)
        found = store.lexical_search("memory", ["caroline", "pottery"], 10)
        assert found[0].record_id == "mem_a"
        assert "mem_c" not in ids(found) and found[0].score > found[-1].score
        assert all(m.score > 0 for m in found)

    def test_words_are_stemmed_and_case_folded(self, store) -> None:
        store.add_memory(memory("mem_a", "She bought new Running SHOES"), AUDIT)
        store.add_memory(memory("mem_b", "A quiet evening"), AUDIT)
        assert ids(store.lexical_search("memory", ["shoe"], 5)) == ["mem_a"]

    def test_limit_is_honoured_and_no_match_is_empty(self, store) -> None:
        for i in range(6):
            store.add_memory(memory(f"mem_{i}", f"note about gardening {i}"), AUDIT)
        assert len(store.lexical_search("memory", ["gardening"], 4)) == 4
        assert store.lexical_search("memory", ["astronomy"], 4) == []
        assert store.lexical_search("memory", [], 4) == []

    def test_filters_apply_inside_the_query_before_the_limit(self, store) -> None:
        for i in range(30):
            store.add_memory(memory(f"mem_{i:02d}", "budget review meeting notes", conversation="busy"), AUDIT)
        store.add_memory(memory("mem_rare", "budget review for the quiet team", conversation="quiet"), AUDIT)
        found = store.lexical_search("memory", ["budget", "review"], 5, {"conversation_id": "quiet"})
        assert ids(found) == ["mem_rare"]

    def test_the_access_rule_applies_inside_the_query(self, store) -> None:
        """Access flags ($or), a sensitivity set and a strict expiry bound, on memories, turns and artifacts."""
        from domain.access.principal import Principal, RequestContext
        from domain.access.rules import restrict

        def mine(item, owner: str, acl: tuple[str, ...], sensitivity: str = "normal", expires: float = 9e15):
            return dataclasses.replace(item, owner=owner, acl=acl, sensitivity=sensitivity, expires_epoch=expires)

        store.add_memory(mine(memory("mem_a", "vault rotation plan"), "alice", ("u:alice",)), AUDIT)
        store.add_memory(mine(memory("mem_b", "vault rotation for eng"), "bob", ("t:eng", "u:bob")), AUDIT)
        store.add_memory(mine(memory("mem_c", "vault rotation secret"), "alice", ("u:alice",), "highly_sensitive"),
                         AUDIT)
        store.add_memory(mine(memory("mem_d", "vault rotation old"), "alice", ("u:alice",), expires=100.0), AUDIT)
        store.put_turn(mine(turn("c1", 0, "vault rotation talk"), "carol", ("u:carol",)), AUDIT)
        store.put_turn(mine(turn("c2", 0, "vault rotation chat"), "bob", ("o:acme", "u:bob")), AUDIT)
        alice = RequestContext(Principal("alice", teams=("eng",), org="acme", clearance="sensitive"))
        where = restrict({}, alice, 200.0)
        assert sorted(ids(store.lexical_search("memory", ["vault"], 10, where))) == ["mem_a", "mem_b"]
        assert ids(store.lexical_search("history", ["vault"], 10, where)) == ["c2_turn_0"]
        assert ids(store.lexical_search("memory", ["vault"], 10, {**where, "sensitivity": {"$in": []}})) == []

    def test_range_filters_on_time_and_confidence(self, store) -> None:
        store.add_memory(memory("mem_old", "tea ceremony", ts="2020-01-01T00:00:00Z", confidence=0.9), AUDIT)
        store.add_memory(memory("mem_new", "tea tasting", ts="2025-06-01T00:00:00Z", confidence=0.2), AUDIT)
        since_2024 = {"ts_epoch": {"$gte": 1704067200.0}}
        assert ids(store.lexical_search("memory", ["tea"], 5, since_2024)) == ["mem_new"]
        assert ids(store.lexical_search("memory", ["tea"], 5, {"confidence": {"$gte": 0.5}})) == ["mem_old"]

    def test_deleting_a_memory_removes_it_from_the_index(self, store) -> None:
        store.add_memory(memory("mem_a", "quarterly roadmap"), AUDIT)
        store.delete_memory("mem_a", AUDIT)
        assert store.lexical_search("memory", ["roadmap"], 5) == []

    def test_a_replaced_memory_is_found_by_its_new_words_only(self, store) -> None:
        store.add_memory(memory("mem_a", "quarterly roadmap"), AUDIT)
        assert store.replace_memory(memory("mem_a", "annual budget"), AUDIT)
        assert store.lexical_search("memory", ["roadmap"], 5) == []
        assert ids(store.lexical_search("memory", ["budget"], 5)) == ["mem_a"]

    def test_a_replaced_turn_is_found_by_its_new_words_only(self, store) -> None:
        store.put_turn(turn("c1", 0, "I adopted a golden retriever"), AUDIT)
        store.put_turn(turn("c1", 1, "what a lovely dog"), AUDIT)
        store.put_turn(turn("c1", 0, "I adopted a tabby cat"), AUDIT)
        assert store.lexical_search("history", ["retriever"], 5) == []
        assert ids(store.lexical_search("history", ["tabby"], 5))[0] == "c1_turn_0"
        assert ids(store.lexical_search("history", ["tabby"], 5, {"conversation_id": "c2"})) == []

    def test_a_turn_is_found_by_the_words_of_its_neighbours_below_its_own(self, store) -> None:
        lines = ["Did you ever visit the observatory?", "Yes, last spring, with my sister.",
                 "How was the weather that day?", "Rainy but fine.", "We also cooked pasta later.",
                 "Nice! Totally unrelated: my car broke down."]
        for i, line in enumerate(lines):
            store.put_turn(turn("c1", i, line), AUDIT)
        found = ids(store.lexical_search("history", ["observatory"], 10))
        assert found[0] == "c1_turn_0"  # its own word ranks first
        assert set(found) == {"c1_turn_0", "c1_turn_1", "c1_turn_2"}  # then the turns up to two after it
        store.put_turn(turn("c1", 0, "Did you ever visit the aquarium?"), AUDIT)  # neighbours re-indexed too
        assert store.lexical_search("history", ["observatory"], 10) == []
        assert ids(store.lexical_search("history", ["aquarium"], 10))[0] == "c1_turn_0"
        assert "c1_turn_4" not in ids(store.lexical_search("history", ["aquarium"], 10))
        store.put_turn(turn("c2", 0, "observatory"), AUDIT)  # another conversation is not context
        assert ids(store.lexical_search("history", ["observatory"], 10)) == ["c2_turn_0"]
        assert ids(store.lexical_search("history", ["aquarium"], 10, context_weight=0.0)) == ["c1_turn_0"]
        with_context = {m.record_id: m.score for m in store.lexical_search("history", ["aquarium"], 10)}
        heavier = {m.record_id: m.score for m in store.lexical_search("history", ["aquarium"], 10, None, 0.9)}
        assert heavier["c1_turn_1"] > with_context["c1_turn_1"]

    def test_a_turn_holds_only_the_words_of_neighbours_with_its_audience(self, store) -> None:
        """A turn open to a team is not found by the words of a private turn beside it (nor the reverse)."""
        team = {"acl": ("t:eng", "u:alice"), "visibility_scope": "team", "owner": "alice"}
        store.put_turn(dataclasses.replace(turn("c1", 0, "my private salary figure"), acl=("u:alice",),
                                           owner="alice"), AUDIT)
        store.put_turn(dataclasses.replace(turn("c1", 1, "the sprint review moved"), **team), AUDIT)
        store.put_turn(dataclasses.replace(turn("c1", 2, "to thursday afternoon"), **team), AUDIT)
        assert ids(store.lexical_search("history", ["salary"], 10)) == ["c1_turn_0"]
        assert ids(store.lexical_search("history", ["sprint"], 10)) == ["c1_turn_1", "c1_turn_2"]
        store.put_turn(dataclasses.replace(turn("c1", 0, "my private salary figure"), **team), AUDIT)
        assert set(ids(store.lexical_search("history", ["salary"], 10))) == {"c1_turn_0", "c1_turn_1", "c1_turn_2"}

    def test_a_deleted_turn_leaves_its_neighbours_entries(self, store) -> None:
        for i, line in enumerate(["we booked the ferry", "for the island trip", "in july"]):
            store.put_turn(turn("c1", i, line), AUDIT)
        store.delete_turn("c1_turn_0", AUDIT)
        assert store.lexical_search("history", ["ferry"], 10) == []
        assert ids(store.lexical_search("history", ["island"], 10)) == ["c1_turn_1", "c1_turn_2"]

    @pytest.mark.parametrize("events_from", [3, 10, 30])  # first-ranked passing record: early, mid shortlist, past it
    def test_a_filter_passing_few_of_the_best_matches_still_fills_the_limit_best_first(self, store,
                                                                                       events_from: int) -> None:
        for i in range(40):  # later records hold "ferry" more often among fewer other words: they rank higher
            content = " ".join(["ferry"] * (i + 1) + ["harbour"] * (39 - i))
            kind = "event" if 39 - i >= events_from and (39 - i) % 2 == 0 else "fact"
            store.add_memory(dataclasses.replace(memory(f"mem_{i:02d}", content), type=kind), AUDIT)
        found = ids(store.lexical_search("memory", ["ferry"], 2, {"type": "event"}))
        first = 39 - (events_from + events_from % 2)
        assert found == [f"mem_{first:02d}", f"mem_{first - 2:02d}"]

    def test_exact_tokens_match_code_like_substrings(self, store) -> None:
        store.add_memory(memory("mem_a", "The crash comes from get_user_by_id in src/app/users.py"), AUDIT)
        store.add_memory(memory("mem_b", "A user asked for an ID card"), AUDIT)
        assert ids(store.exact_search("memory", ["user_by_id"], 5)) == ["mem_a"]
        assert ids(store.exact_search("memory", ["APP/USERS.PY"], 5)) == ["mem_a"]
        assert store.exact_search("memory", ["zz"], 5) == []  # too short to match exactly
        assert store.exact_search("memory", ["getting_users"], 5) == []  # its words stem alike; it is not there

    def test_exact_matches_rank_by_how_often_they_hold_the_token_verbatim(self, store) -> None:
        store.add_memory(memory("mem_a", "see command-line flags and command-line docs here"), AUDIT)
        store.add_memory(memory("mem_b", "command line tools read the command-line and command line"), AUDIT)
        store.add_memory(memory("mem_c", "a command line without the hyphen"), AUDIT)
        assert ids(store.exact_search("memory", ["command-line"], 5)) == ["mem_a", "mem_b"]

    def test_an_exact_token_is_found_only_in_the_records_own_text(self, store) -> None:
        for i, line in enumerate(["the crash in parse_config_v2", "we looked at it", "fixed by noon"]):
            store.put_turn(turn("c1", i, line), AUDIT)
        assert ids(store.exact_search("history", ["parse_config_v2"], 5)) == ["c1_turn_0"]
        assert ids(store.exact_search("history", ["Parse_Config_V2"], 5)) == ["c1_turn_0"]

    def test_artifacts_and_chunks_are_searchable_only_once_committed(self, store) -> None:
        whole = dataclasses.replace(artifact("art_w", "1" * 64, 0), content="invoice from Acme for widgets",
                                    title="Acme invoice")
        store.begin_artifact(whole, [], entry("begin"), job(whole))
        assert store.lexical_search("artifact", ["acme"], 5) == []
        store.commit_artifact("art_w", whole.version, entry("ingested"))
        assert ids(store.lexical_search("artifact", ["widgets"], 5)) == ["art_w"]
        assert ids(store.lexical_search("artifact", ["invoice"], 5, {"source_system": "drive"})) == ["art_w"]
        assert store.lexical_search("artifact", ["invoice"], 5, {"source_system": "mail"}) == []

    def test_replacing_an_artifact_swaps_its_chunks_in_the_index(self, store) -> None:
        from domain.model import ArtifactChunk

        def chunk(aid: str, i: int, text: str) -> ArtifactChunk:
            return ArtifactChunk(f"{aid}::chunk::{i:03d}::{abs(hash(text)) % 10**8:08d}", aid, i, 0, len(text),
                                 text, 3, "0" * 64)

        v1 = artifact("art_c", "1" * 64, 2)
        store.begin_artifact(v1, [chunk("art_c", 0, "alpha release notes"), chunk("art_c", 1, "beta plans")],
                             entry("begin"), job(v1))
        store.commit_artifact("art_c", v1.version, entry("ingested"))
        assert len(store.lexical_search("chunk", ["alpha", "beta"], 5)) == 2
        v2 = artifact("art_c", "2" * 64, 1)
        store.begin_artifact(v2, [chunk("art_c", 0, "gamma rollout")], entry("begin"), job(v2))
        assert ids(store.lexical_search("chunk", ["gamma"], 5)) == []  # pending: invisible
        assert len(store.lexical_search("chunk", ["alpha", "beta"], 5)) == 2  # still the committed one
        store.commit_artifact("art_c", v2.version, entry("ingested"))
        assert store.lexical_search("chunk", ["alpha", "beta"], 5) == []
        assert len(store.lexical_search("chunk", ["gamma"], 5)) == 1
        store.delete_artifact("art_c", entry("deleted"))
        assert store.lexical_search("chunk", ["gamma"], 5) == []
        assert store.exact_search("chunk", ["rollout"], 5) == []

    def test_a_new_artifact_written_words_first_is_found_by_its_words_until_it_is_dropped(self, store) -> None:
        """Its words are searchable while its vectors are made; a failed job withdraws them; a replacement
        of a committed artifact is never shown early (the committed version serves until the commit)."""
        from domain.model import ArtifactChunk

        def chunk(aid: str, i: int, text: str) -> ArtifactChunk:
            return ArtifactChunk(f"{aid}::chunk::{i:03d}::{i:08d}", aid, i, 0, len(text), text, 3, "0" * 64)

        v1 = artifact("art_e", "1" * 64, 2)
        store.begin_artifact(v1, [chunk("art_e", 0, "zeppelin hangar lease"), chunk("art_e", 1, "helium supply")],
                             entry("begin"), job(v1), words_first=True)
        assert ids(store.lexical_search("chunk", ["zeppelin"], 5)) == ["art_e::chunk::000::00000000"]
        assert ids(store.exact_search("chunk", ["helium"], 5)) == ["art_e::chunk::001::00000001"]
        assert store.lexical_search("chunk", ["zeppelin"], 5, {"source_system": "mail"}) == []
        store.fail_job("art_e", v1.version, "embedding failed")
        assert store.lexical_search("chunk", ["zeppelin", "helium"], 5) == []
        store.begin_artifact(v1, [chunk("art_e", 0, "zeppelin hangar lease")], entry("begin"), job(v1),
                             words_first=True)
        store.commit_artifact("art_e", v1.version, entry("ingested"))
        v2 = artifact("art_e", "2" * 64, 1)
        store.begin_artifact(v2, [chunk("art_e", 0, "blimp mooring mast")], entry("begin"), job(v2))
        assert store.lexical_search("chunk", ["blimp"], 5) == []
        assert len(store.lexical_search("chunk", ["zeppelin"], 5)) == 1
        whole = dataclasses.replace(artifact("art_f", "3" * 64, 0), content="quarterly airship census", title="Census")
        store.begin_artifact(whole, [], entry("begin"), job(whole), words_first=True)
        assert ids(store.lexical_search("artifact", ["airship"], 5)) == ["art_f"]
        store.discard_pending("art_f", whole.version)
        assert store.lexical_search("artifact", ["airship"], 5) == []

    def test_unicode_text_is_searchable(self, store) -> None:
        store.add_memory(memory("mem_a", "Café crème with José in Zürich 😀"), AUDIT)
        store.add_memory(memory("mem_b", "東京で寿司を食べた"), AUDIT)
        assert ids(store.lexical_search("memory", ["zürich"], 5)) == ["mem_a"]
        assert ids(store.exact_search("memory", ["Zürich"], 5)) == ["mem_a"]

    # Word scores compare across collections (issue 43.1): given one idf over the collections a search
    # asks, a record holding the query's rarest word outranks another collection's records holding only
    # common words; and a word weighs more than nothing in a store of one or two records.

    @staticmethod
    def ops_talk(store) -> None:
        """A big collection of common words: 40 turns about deploys and servers, and a small one of memories."""
        for i in range(40):
            store.put_turn(turn("ops", i, ["we deploy the server again", "the server is slow after the deploy",
                                           "deploy finished", "server restarted"][i % 4]), AUDIT)
        store.add_memory(memory("mem_heron", "The heronpond staging database runs the deploy_v2 build"), AUDIT)
        store.add_memory(memory("mem_train", "The release train leaves on Thursday"), AUDIT)

    def test_a_rare_word_in_a_small_collection_outranks_common_words_of_a_big_one(self, store) -> None:
        from domain.search.lexical import shared_idf

        self.ops_talk(store)
        words = ["heronpond", "deploy", "server"]
        stats = [store.lexical_stats(c, words) for c in ("memory", "history")]
        assert [s.records for s in stats] == [2, 40]
        assert stats[0].words["heronpond"] == 1 and stats[1].words["heronpond"] == 0
        assert stats[1].words["deploy"] >= 30  # in a turn's own words or its neighbours'
        assert store.lexical_stats("history", ["finished"]).words["finished"] >= 10
        idf = shared_idf(stats, words)
        assert idf["heronpond"] > 2 * idf["deploy"] > 0
        found = [*store.lexical_search("memory", words, 10, idf=idf), *store.lexical_search("history", words, 10, idf=idf)]
        ranked = sorted(found, key=lambda m: -m.score)
        assert ranked[0].record_id == "mem_heron" and ranked[0].score > 2 * ranked[1].score
        # Each collection alone, as before: the memory weighs its words by two records (FTS5's idf gave
        # heronpond nothing there), the turns by forty; their scores then do not compare.
        alone = store.lexical_search("memory", words, 10)
        assert ids(alone) == ["mem_heron"] and alone[0].score < found[0].score

    def test_exact_tokens_weigh_one_idf_across_collections(self, store) -> None:
        from domain.search.lexical import shared_idf

        self.ops_talk(store)
        for i in range(12):
            store.put_turn(turn("builds", i, f"build {i} of deploy_v1 is green, deploy_v1 again"), AUDIT)
        tokens = ["deploy_v2", "deploy_v1"]
        stats = [store.lexical_stats(c, [], tokens) for c in ("memory", "history")]
        assert stats[0].tokens["deploy_v2"] == 1 and stats[1].tokens["deploy_v1"] >= 12
        idf = shared_idf(stats, tokens, exact=True)
        found = [*store.exact_search("memory", tokens, 10, idf=idf), *store.exact_search("history", tokens, 10, idf=idf)]
        assert max(found, key=lambda m: m.score).record_id == "mem_heron"

    def test_the_idf_given_is_the_weight_of_each_word(self, store) -> None:
        store.add_memory(memory("mem_a", "tea in Porto and more tea"), AUDIT)
        store.add_memory(memory("mem_b", "coffee in Lisbon"), AUDIT)
        store.add_memory(memory("mem_c", "tea and coffee"), AUDIT)
        once = {m.record_id: m.score for m in store.lexical_search("memory", ["tea", "coffee"], 5, idf={"tea": 1.0,
                                                                                                     "coffee": 1.0})}
        tea_heavy = store.lexical_search("memory", ["tea", "coffee"], 5, idf={"tea": 4.0, "coffee": 1.0})
        coffee_heavy = store.lexical_search("memory", ["tea", "coffee"], 5, idf={"tea": 1.0, "coffee": 4.0})
        assert ids(tea_heavy).index("mem_a") < ids(tea_heavy).index("mem_b")
        assert ids(coffee_heavy).index("mem_b") < ids(coffee_heavy).index("mem_a")
        doubled = {m.record_id: m.score for m in store.lexical_search("memory", ["tea", "coffee"], 5,
                                                                      idf={"tea": 2.0, "coffee": 2.0})}
        assert doubled == pytest.approx({k: 2 * v for k, v in once.items()}, rel=1e-9)

    def test_a_word_every_record_holds_weighs_the_idf_given(self, store) -> None:
        """FTS5's own idf of such a word is its floor (1e-6): the idf given still weighs it whole."""
        for i, text in enumerate(["ferry ferry ferry to the island", "ferry at noon", "the ferry"]):
            store.add_memory(memory(f"mem_{i}", text), AUDIT)
        found = {m.record_id: m.score for m in store.lexical_search("memory", ["ferry"], 5, idf={"ferry": 1.0})}
        assert set(found) == {"mem_0", "mem_1", "mem_2"} and all(score > 1e-2 for score in found.values())
        doubled = {m.record_id: m.score for m in store.lexical_search("memory", ["ferry"], 5, idf={"ferry": 2.0})}
        assert doubled == pytest.approx({k: 2 * v for k, v in found.items()}, rel=1e-9)
        assert all(m.score > 0 for m in store.lexical_search("memory", ["ferry"], 5))  # its own idf: Lucene's

    @pytest.mark.parametrize("others", [[], ["The release train leaves on Thursday"]])
    def test_a_store_of_one_or_two_records_scores_a_unique_word(self, store, others: list[str]) -> None:
        store.add_memory(memory("mem_heron", "The heronpond staging database"), AUDIT)
        for i, text in enumerate(others):
            store.add_memory(memory(f"mem_{i}", text), AUDIT)
        found = store.lexical_search("memory", ["heronpond"], 5)
        assert ids(found) == ["mem_heron"] and found[0].score > 1e-2  # FTS5's idf made it 1e-6 of that
        stats = store.lexical_stats("memory", ["heronpond", "thursday"])
        assert stats.records == 1 + len(others) and stats.words == {"heronpond": 1, "thursday": len(others)}

    def test_a_word_the_idf_given_leaves_out_is_not_matched(self, store) -> None:
        self.ops_talk(store)
        assert ids(store.lexical_search("memory", ["heronpond", "thursday"], 5, idf={"thursday": 1.0})) == ["mem_train"]
        assert store.lexical_search("history", ["deploy"], 5, idf={}) == []
        assert ids(store.exact_search("memory", ["deploy_v2"], 5, idf={"deploy_v2": 1.0})) == ["mem_heron"]
        assert store.exact_search("memory", ["deploy_v2"], 5, idf={}) == []
