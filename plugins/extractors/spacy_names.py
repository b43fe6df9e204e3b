"""Which of spaCy's named entities the offline extractor keeps, and with which type.

The small English pipeline gives no score with an entity (a greedy parse; its beam run on a greedy
model gives no calibrated one either), so confidence is judged by rules over what it does give:
the tokens, their tags and the parse.

- A name is kept only when it reads as one: a proper-noun head (NORP and LANGUAGE may be adjectives:
  "Swedish"), a capital letter, words of letters, none of the punctuation markup and code are made of
  (``= Perm``, ``Color'>``, ``Description |``, ``Path.is_dir``, ``UPPER_CASE``), not a quantity's unit
  ("4 GiB"). A single word is not a name when the text also writes it in lower case ("Logging" beside
  "logging"), nor, in a document, when it only starts a sentence or a list item ("Size of the file").
- Its type is kept only when the name and its place in the sentence agree with it; otherwise it is
  ``unknown``. A person: words in title case ("Barry Warsaw", "O'Brien"), not an acronym, not inner
  capitals ("GiB"); a single word only outside documents (in documentation a lone capitalised word is
  nearly always a class, a module or a product: "Enum", "Python"; there it is a person when the text
  gives the whole name too: "Tom" beside "Tom Okafor"). A
  place: where something is, comes from or goes to ("in Berlin", "from Sweden"), not a name that does
  something ("Marta keeps bees"). An organisation: several words, the last such as Inc, University or
  Foundation ("Acme Foundation"; an acronym may be anything: "API", "GIL"). An event, a work or a
  product: several words in title case. Groups (NORP) and languages keep theirs.
"""

from __future__ import annotations

import re
from typing import Any

from domain.graph.extraction import UNKNOWN

_MARKUP = re.compile(r"[=|<>{}\[\]`*#\\/_~^@$%&+;:\"()]|\.[a-z_]|'(?!s$)(?=\W|$)")
_PARTICLES = {"de", "van", "von", "der", "den", "da", "di", "du", "la", "le", "bin", "al", "del", "dos", "ter"}
_WORD = re.compile(r"[^\W\d_]+(?:['’.-][^\W\d_]+)*\.?")  # letters, maybe joined by ' - . ("O'Brien", "Jean-Luc")
_ACRONYM = re.compile(r"[A-Z]{2,5}s?")
PLACE_PREPOSITIONS = {"in", "at", "from", "to", "into", "near", "across", "around", "throughout", "within", "outside",
                      "inside", "toward", "towards", "via", "through", "between", "beyond", "over", "under",
                      "along", "past", "off", "onto", "out", "by", "of", "behind", "beside", "above", "below"}
ORG_WORDS = {"inc", "corp", "corporation", "ltd", "llc", "plc", "gmbh", "co", "company", "university", "college",
             "school", "institute", "foundation", "association", "society", "group", "bank", "agency", "committee",
             "council", "department", "ministry", "club", "team", "labs", "lab", "technologies", "systems",
             "software", "party", "union", "federation", "organization", "organisation", "hospital", "church",
             "museum", "library", "press", "times", "news", "airlines", "motors", "partners", "capital",
             "consortium", "network", "project", "trust", "board", "commission", "office", "service", "services"}
SEVERAL_WORDS = {"EVENT": "event", "WORK_OF_ART": "work", "LAW": "work", "PRODUCT": "thing"}
KEPT = {"NORP": "group", "LANGUAGE": "language"}
ADJECTIVE_LABELS = ("NORP", "LANGUAGE")


def readable(name: str, ent: Any, document: bool, lowered: set[str]) -> bool:
    """Whether the entity ``ent`` (cleaned to ``name``) reads as a name at all. A word alone is not one
    when the text also writes it in lower case ("Logging ... logging"), nor, in a document, when it only
    starts a sentence or a list item ("Size of the file", "Inherit from ...")."""
    if not name or not any(c.isupper() for c in name) or _MARKUP.search(name) or ent[0].like_num:
        return False  # no capital: "suffix", "max" (tagged proper nouns); "0.525 s"
    if any(not (t.is_punct or t.like_num or _WORD.fullmatch(t.text) or t.text in ("'s", "’s")) for t in ent):
        return False  # a token mixing letters with digits or symbols: an identifier, a version
    root = ent.root
    if root.pos_ != "PROPN" and not (ent.label_ in ADJECTIVE_LABELS and root.pos_ in ("ADJ", "NOUN")):
        return False  # no proper-noun head: "builtin exception", "larger than 4"
    before = ent.doc[ent.start - 1] if ent.start > 0 else None
    if before is not None and before.like_num and len(ent) == 1:
        return False  # "4 GiB", "20 MB": a unit
    if any(t.like_num for t in ent) and ent.label_ not in SEVERAL_WORDS:
        return False
    words = [t for t in ent if not t.is_punct]
    return len(words) != 1 or not (words[0].lower_ in lowered or document and ent.start == ent.sent.start)


def person_word(text: str) -> bool:
    """A word of a person's name: title case in each part ("Warsaw", "O'Brien", "Jean-Luc", "McKay"),
    an initial ("J."), or a particle ("van", "de"); not an acronym, not inner capitals ("GiB")."""
    if text in _PARTICLES or re.fullmatch(r"[^\W\d_]\.", text) and text[0].isupper():
        return True
    for part in re.split(r"['’-]", text):
        core = next((part[len(p):] for p in ("Mac", "Mc") if part.startswith(p) and part[len(p):][:1].isupper()), part)
        if not core or not core[0].isupper() or not core[1:].islower() and len(core) > 1 or not core.isalpha():
            return False
    return True


def confident_type(ent: Any, kind: str, document: bool, lowered: set[str]) -> str:
    """``kind`` (TYPES' name for ``ent.label_``) when the name and the sentence agree with it, else UNKNOWN.
    ``document``: the passage is a document's; ``lowered``: the words its text writes in lower case."""
    label = ent.label_
    words = [t for t in ent if not t.is_punct and t.text not in ("'s", "’s")]
    if label in KEPT:
        return kind
    if label == "PERSON":
        fine = (1 <= len(words) <= 4 and all(person_word(t.text) for t in words) and words[0].text[0].isupper()
                and not any(t.lower_ in lowered for t in words)  # "Enum ... an enum", "Logging ... logging"
                and (len(words) > 1 or not document))
        return kind if fine else UNKNOWN
    if label in ("GPE", "LOC", "FAC"):
        fine = _placed(ent) and all(t.is_title or t.is_stop for t in words) and not any(t.lower_ in lowered
                                                                                       for t in words)
        return kind if fine else UNKNOWN
    if label == "ORG":
        return kind if len(words) >= 2 and words[-1].text.lower().rstrip(".") in ORG_WORDS else UNKNOWN
    if label in SEVERAL_WORDS:
        return kind if len(words) >= 2 and all(t.is_title or t.is_stop for t in words) else UNKNOWN
    return UNKNOWN


def lowered(doc: Any) -> set[str]:
    """The words a text writes in lower case (not the commonest: "will" does not make "Will" a word)."""
    return {t.text for t in doc if t.is_lower and t.is_alpha and not t.is_stop}


def _placed(ent: Any) -> bool:
    """Whether the sentence puts ``ent`` where a place stands: after a preposition of place or
    direction, or beside a name placed so ("Paris, France"; "Berlin and Rome")."""
    root = ent.root
    for _ in range(3):  # through appositions, conjunctions and compounds: "in Paris, France"
        if root.dep_ == "pobj" and root.head.lower_ in PLACE_PREPOSITIONS:
            return True
        if root.dep_ in ("appos", "conj", "compound", "npadvmod") and root.head is not root:
            root = root.head
            continue
        return False
    return False


def clean_name(text: str) -> str:
    """A name as kept: whitespace folded, no surrounding punctuation, no leading "the", no possessive."""
    name = " ".join(text.split()).strip(" .,;:!?\"'()[]")
    name = name.removeprefix("the ").removeprefix("The ")
    if name.endswith(("'s", "’s")):
        name = name[:-2].rstrip()
    return name if 0 < len(name) <= 200 else ""
