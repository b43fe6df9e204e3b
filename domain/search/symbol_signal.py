"""The symbol signal: definitions an indexed codebase holds whose name the query writes, in any
spelling (``getUserById``, ``get_user_by_id``, ``GetUserByID``, "get user by id"), ranked before the
other signals' hits are fused with them.

Keys are folded (case and separators gone: domain.code.model.folded): each identifier of the query
(a dotted path whole and its last part), and in a short query (a name written in words) each run of
2-4 plain words. A definition whose
qualified name matches ranks first, then one whose name does; a name a plain word run spells counts
less than one written as code. Records pass the search's filters and access rule before they rank.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from domain.artifacts.usecases import CHUNKS, WHOLE, vector_metadata
from domain.code.model import folded, identifiers, words_of
from domain.ids import artifact_of
from domain.model import LexicalMatch
from domain.ports import ArtifactStore, Filter
from domain.ports.code import CodeStore
from domain.search.graph_signal import passing
from domain.search.lexical import STOPWORDS

MAX_SYMBOLS = 200  # definitions read per query
MAX_NAME_WORDS = 5  # a query of more content words than this is read for identifiers only
_CODE_LIKE = re.compile(r"[_.$]|::|->|[a-z][A-Z]|[A-Za-z]\d")
_PLAIN = re.compile(r"[A-Za-z]+")


def symbol_keys(query: str) -> dict[str, float]:
    """Folded key -> weight: an identifier written as code 1.0 (its last part 0.7), a run of plain words 0.5."""
    keys: dict[str, float] = {}

    def add(key: str, weight: float) -> None:
        if len(key) >= 3:
            keys[key] = max(keys.get(key, 0.0), weight)

    for token in identifiers(query):
        if _CODE_LIKE.search(token):
            add(folded(token), 1.0)
            last = re.split(r"\.|::|->|/", token)[-1]
            if last != token and len(words_of(last)) > 0:
                add(folded(last), 0.7)
    plain = _PLAIN.findall(query)
    if len([w for w in plain if w.lower() not in STOPWORDS]) > MAX_NAME_WORDS:
        return keys  # a sentence, not a name written in words: its runs would name whatever shares them
    for n in (2, 3, 4):
        for i in range(len(plain) - n + 1):
            run = plain[i:i + n]
            if run[0].lower() in STOPWORDS or run[-1].lower() in STOPWORDS:
                continue
            add("".join(w.lower() for w in run), 0.5)
    return keys


@dataclass(frozen=True, slots=True)
class SymbolSignal:
    code: CodeStore
    artifacts: ArtifactStore

    def ranked(self, query: str, wheres: Mapping[str, Filter]) -> dict[str, list[tuple[str, float]]]:
        """Per collection (chunks, or whole artifacts), (record id, score) best first; empty when the
        query names no definition."""
        keys = symbol_keys(query)
        if not keys or not ({WHOLE, CHUNKS} & set(wheres)):
            return {}
        scores: dict[str, float] = {}
        for hit in self.code.find_symbols(sorted(keys), codebases_in(wheres), MAX_SYMBOLS):
            key = folded(hit.qualified_name) if hit.exact else folded(hit.qualified_name.split(".")[-1])
            score = keys.get(key, 0.5) * (1.0 if hit.exact else 0.8)
            scores[hit.record] = max(scores.get(hit.record, 0.0), score)
        found: dict[str, list[tuple[str, float]]] = {}
        for record, score in sorted(scores.items(), key=lambda item: (-item[1], item[0])):
            found.setdefault(CHUNKS if "::chunk::" in record else WHOLE, []).append((record, score))
        return found

    def matches(self, collection: str, ranked: list[tuple[str, float]], where: Filter | None,
                depth: int) -> list[LexicalMatch]:
        return passing(self._metadata, ranked, where, depth)

    def _metadata(self, ids: list[str]) -> Mapping[str, dict[str, Any]]:
        owners = self.artifacts.get_artifacts(sorted({artifact_of(i) for i in ids}))
        return {i: vector_metadata(a) for i in ids if (a := owners.get(artifact_of(i))) is not None}


def codebases_in(wheres: Mapping[str, Filter]) -> Sequence[str] | None:
    """The codebases a search's filters name (None: any)."""
    for where in wheres.values():
        named = (where or {}).get("codebase")
        if isinstance(named, str):
            return [named]
        if isinstance(named, dict) and isinstance(named.get("$in"), list):
            return list(named["$in"])
    return None
