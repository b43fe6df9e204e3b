"""Graph facts that change: a relation of a kind that holds one value at a time (where someone lives or
works, whom they are married to) ends when a later record gives the same subject another value. Nothing
is deleted or rewritten: validity is read off the evidence (each edge's records and their times), so it
follows the records as they come and go, and the history stays readable."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from domain.graph.model import Evidence, Relation
from domain.errors import ValidationError
from domain.validation import epoch

# Relation kinds (verb, then preposition) a subject has one value of at a time, as extractors name them
# ("live_in"; an LLM's "lives_in" reads the same).
SINGLE_VALUED = frozenset({"live_in", "work_at", "work_for", "move_to", "relocate_to", "study_at", "marry",
                           "be_married_to", "date", "has_husband", "has_wife", "has_partner", "has_boyfriend",
                           "has_girlfriend", "has_boss", "report_to", "be_based_in", "stay_in", "reside_in"})


def single_valued(kind: str) -> bool:
    words = kind.lower().replace(" ", "_").split("_")
    if words and len(words[0]) > 3 and words[0].endswith("s") and not words[0].endswith("ss"):
        words[0] = words[0][:-1]  # lives_in -> live_in
    return "_".join(words) in SINGLE_VALUED


def _dated(evidence: Sequence[Evidence]) -> list[tuple[float, str]]:
    found = []
    for e in evidence:
        try:
            found += [(epoch(e.when), e.when)] if e.when else []
        except (ValueError, ValidationError):
            continue
    return found


def ended(relations: Sequence[Relation], evidence: Mapping[Relation, Sequence[Evidence]]
          ) -> dict[Relation, tuple[str, Relation]]:
    """Of single-valued relations, those a later one replaced: (when it ended, the one that replaced it).
    Per subject and kind, values are ordered by when their records last said them; each ends when the
    next one was first said. A value with no dated evidence is left as it is."""
    groups: dict[tuple[str, str], list[tuple[float, float, str, Relation]]] = {}
    for r in dict.fromkeys(relations):
        if not single_valued(r.relation_type):
            continue
        dated = _dated(evidence.get(r, ()))
        if dated:
            groups.setdefault((r.source, r.relation_type), []).append((max(dated)[0], min(dated)[0], min(dated)[1], r))
    found: dict[Relation, tuple[str, Relation]] = {}
    for values in groups.values():
        values.sort(key=lambda v: (v[0], v[3].target))
        for (_, _, _, old), (_, _, started, new) in zip(values, values[1:]):
            found[old] = (started, new)
    return found
