"""The offline extractor against the extractor contract, and its rules on sentences of each kind."""

from __future__ import annotations

import pytest

from domain.graph.extraction import Passage
from plugins.extractors.spacy_rules import SpacyExtractor
from plugins.testing_extractors import ExtractorContract

SHARED = SpacyExtractor()  # the pipeline loads once for the module


class TestSpacyExtractor(ExtractorContract):
    @pytest.fixture
    def extractor(self) -> SpacyExtractor:
        return SHARED


def relations(text: str, speaker: str | None = None) -> set[tuple[str, str, str]]:
    found = SHARED.extract([Passage("turn", "t", text, speaker=speaker)])[0]
    return {(r.source, r.relation_type, r.target) for r in found.relations}


def test_subject_verb_and_prepositional_objects() -> None:
    assert relations("Alice works at Google and lives in Paris.") >= {("Alice", "work_at", "Google"),
                                                                    ("Alice", "live_in", "Paris")}


def test_first_person_is_the_speaker_and_family_is_named_or_owned() -> None:
    said = relations("My sister Anna lives in Boston. My kids love the beach.", speaker="Melanie")
    assert {("Melanie", "has_sister", "Anna"), ("Anna", "live_in", "Boston"),
            ("Melanie", "has_kid", "Melanie's kids")} <= said
    assert ("Caroline", "go_to", "LGBTQ support group") in relations(
        "I went to the LGBTQ support group yesterday.", speaker="Caroline")


def test_a_role_is_not_a_name_and_a_greeting_is_not_a_mention() -> None:
    assert relations("I went to the charity race.", speaker="user") == set()
    assert not any(kind == "mentions" for _, kind, _ in relations("Hey Mel! Good to see you!", speaker="Caroline"))


def test_we_in_a_turn_counts_the_speaker_among_who_decided() -> None:
    found = SHARED.extract([Passage("turn", "t", "We decided to move the launch to Friday with Omar.",
                                    speaker="Priya")])[0]
    assert [(e.kind, e.who) for e in found.events] == [("decision", ("Priya", "Omar"))]
    alone = SHARED.extract([Passage("doc", "d", "We decided to move the launch to Friday with Omar.")])[0]
    assert [(e.kind, e.who) for e in alone.events] == [("decision", ("Omar",))]
