"""The scale benchmark's text: Python's documentation and LoCoMo's conversations, varied into as many
distinct artifacts as a store size needs, and the queries asked of it.

Copy 0 of a document is the document itself; copy n > 0 has its paragraphs in another order (seeded
by n and the document's name) under a line naming the copy, so every artifact is distinct and the
text stays real text. The sequence is deterministic: a store can be grown in steps (10k, then
100k, then 1M chunks) by skipping the documents already stored.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from domain.search.lexical import STOPWORDS

DOCS = Path("/usr/share/doc/python3.11/html/_sources")
_PARAGRAPHS = re.compile(r"\n\s*\n")
_CODE_TOKEN = re.compile(r"\b[a-z_]{2,}(?:\.[a-z_]{2,})+\(")  # a dotted call: os.path.join(
_WORD = re.compile(r"[A-Za-z]{4,}")
# Queries of common words only: every word is held by far more records than one query may score.
COMMON = ("return the value of the function", "the following example shows how to use the module",
          "this function returns a new object", "the default value is none", "if the file does not exist",
          "an error is raised when the argument is not valid", "see the section below for details",
          "the list of all the items in the current version")


@dataclass(frozen=True, slots=True)
class Document:
    name: str
    artifact_type: str  # doc or transcript
    text: str


def originals(docs: Path, locomo: Path | None) -> list[Document]:
    """Every reStructuredText source under ``docs`` and every LoCoMo session, in a fixed order."""
    found = [Document(str(p.relative_to(docs)), "doc", p.read_text(encoding="utf-8", errors="replace"))
             for p in sorted(docs.rglob("*.txt"))]
    for path in sorted(locomo.glob("*.json")) if locomo else []:
        data = json.loads(path.read_text(encoding="utf-8"))
        for key in sorted((k for k in data if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k[8:])):
            when = data.get(f"{key}_date_time", "")
            lines = [f"{t['speaker']}: {t['text']}" for t in data[key]]
            found.append(Document(f"{path.stem}/{key}", "transcript", f"{when}\n\n" + "\n\n".join(lines)))
    return [d for d in found if d.text.strip()]


def copies(documents: list[Document], skip: int = 0) -> Iterator[tuple[int, Document]]:
    """(position, artifact) for ever: copy 0 of every document, then copy 1 of every document, ..."""
    position = skip
    while True:
        copy, index = divmod(position, len(documents))
        yield position, vary(documents[index], copy)
        position += 1


def vary(document: Document, copy: int) -> Document:
    if copy == 0:
        return document
    paragraphs = [p for p in _PARAGRAPHS.split(document.text) if p.strip()]
    random.Random(f"{copy}:{document.name}").shuffle(paragraphs)
    return Document(f"{document.name}#copy{copy}", document.artifact_type,
                    f"Copy {copy} of {document.name}\n\n" + "\n\n".join(paragraphs))


def queries(documents: list[Document], locomo: Path | None, count: int, seed: int = 14) -> list[str]:
    """``count`` queries: a quarter LoCoMo questions, half five words from a paragraph of a document,
    an eighth a dotted name from the documentation (an exact token), an eighth common words only."""
    rng = random.Random(seed)
    asked: list[str] = []
    for path in sorted(locomo.glob("*.json")) if locomo else []:
        asked += [qa["question"] for qa in json.loads(path.read_text(encoding="utf-8"))["qa"] if qa.get("question")]
    docs = [d for d in documents if d.artifact_type == "doc"]
    names = sorted({m.group(0)[:-1] for d in docs for m in _CODE_TOKEN.finditer(d.text)})
    out: list[str] = []
    for i in range(count):
        kind = i % 8
        if kind in (0, 4) and asked:
            out.append(rng.choice(asked))
        elif kind == 6 and names:
            out.append(f"how is {rng.choice(names)} used")
        elif kind == 7:
            out.append(rng.choice(COMMON))
        else:
            paragraph = rng.choice([p for p in _PARAGRAPHS.split(rng.choice(docs).text) if _WORD.search(p)])
            words = [w.lower() for w in _WORD.findall(paragraph) if w.lower() not in STOPWORDS]
            out.append(" ".join(rng.sample(words, min(5, len(words)))) or "python")
    return out
