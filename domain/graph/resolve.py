"""Entity resolution: a name read in a record is matched to an entity the owner's graph already holds,
in Graphiti's order without its LLM step: the same name; the same name normalised (case, accents,
punctuation, a leading "the", a possessive); a fuzzy match of the normalised names (same type, or
one of them unknown; sharing a word, similarity at least ``fuzzy``); a person's first name alone for the one person of that first
name; then, when an embedder is given, the meaning of the name in its
sentence against the candidate's name in its own (same type or unknown, cosine at least ``semantic``). A merge
is recorded as an alias (how, how sure); an unmerged pair is never merged again. Never across owners:
a resolver is made per owner's graph."""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher

from domain.graph.extraction import UNKNOWN
from domain.graph.model import Alias

_WORD = re.compile(r"\w+", re.UNICODE)
Embed = Callable[[Sequence[str]], list[list[float]]]


def normal(name: str) -> str:
    name = name.replace("’", "'")
    text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode() or name
    text = text.casefold()
    text = re.sub(r"'s\b", "", text)
    words = _WORD.findall(text)
    if words and words[0] == "the" and len(words) > 1:
        words = words[1:]
    return " ".join(words)


@dataclass
class Resolver:
    """Names to entities for one owner's graph; learns the entities it is told about as a build goes."""

    known: dict[str, str] = field(default_factory=dict)  # entity name -> type
    aliases: Iterable[Alias] = ()
    embed: Embed | None = None
    fuzzy: float = 0.88
    semantic: float = 0.9
    context: dict[str, str] = field(default_factory=dict)  # entity name -> a sentence naming it

    def __post_init__(self) -> None:
        self.by_normal: dict[str, str] = {}
        self.by_word: dict[str, set[str]] = {}
        self.merged: dict[str, str] = {}
        self.blocked: set[tuple[str, str]] = set()
        for alias in self.aliases:
            if alias.blocked:
                self.blocked.add((alias.alias, alias.name))
            else:
                self.merged.setdefault(alias.alias, alias.name)
        for name, kind in list(self.known.items()):
            self.learn(name, kind)

    def learn(self, name: str, kind: str, sentence: str = "") -> None:
        self.known.setdefault(name, kind)
        key = normal(name)
        self.by_normal.setdefault(key, name)
        for word in key.split():
            self.by_word.setdefault(word, set()).add(name)
        if sentence and name not in self.context:
            self.context[name] = sentence

    def resolve(self, name: str, kind: str, sentence: str = "") -> tuple[str, Alias | None]:
        """The entity ``name`` stands for (itself when new: learnt), and the merge made, if any."""
        if name in self.known:
            return name, None
        if name in self.merged and (name, self.merged[name]) not in self.blocked:
            return self.merged[name], None
        found = self._match(name, kind, sentence)
        if found is None:
            self.learn(name, kind, sentence)
            return name, None
        target, method, score = found
        self.merged[name] = target
        self.by_normal.setdefault(normal(name), target)
        return target, Alias(name, target, method, round(score, 4))

    def _match(self, name: str, kind: str, sentence: str) -> tuple[str, str, float] | None:
        key = normal(name)
        same = self.by_normal.get(key)
        if same is not None and self._allowed(name, same):
            return same, "normalized", 1.0
        candidates = sorted({c for w in key.split() for c in self.by_word.get(w, ())
                             if same_type(self.known.get(c), kind) and self._allowed(name, c)})
        scored = sorted(((SequenceMatcher(None, key, normal(c)).ratio(), c) for c in candidates), reverse=True)
        if scored and scored[0][0] >= self.fuzzy:
            return scored[0][1], "fuzzy", scored[0][0]
        if kind in ("person", UNKNOWN) and " " not in key:  # "Tom" for the one person whose first name it is
            firsts = [c for c in candidates if normal(c).split()[0] == key and " " in normal(c)
                      and self.known.get(c) == "person"]
            if len(firsts) == 1:
                return firsts[0], "first_name", 0.9
        if self.embed is None or not scored or not sentence:
            return None
        near = [c for score, c in scored[:5] if score >= 0.5]
        if not near:
            return None
        vectors = self.embed([f"{name}: {sentence}", *(f"{c}: {self.context.get(c, c)}" for c in near)])
        best = max(((_cosine(vectors[0], v), c) for v, c in zip(vectors[1:], near)), default=(0.0, ""))
        return (best[1], "embedding", best[0]) if best[0] >= self.semantic else None

    def _allowed(self, alias: str, name: str) -> bool:
        return alias != name and (alias, name) not in self.blocked


def same_type(held: str | None, kind: str) -> bool:
    """Whether two types may name one entity: equal, or one of them unknown (the extractor could not tell)."""
    return held == kind or UNKNOWN in (held, kind)


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0
