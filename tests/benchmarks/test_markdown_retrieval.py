"""Does structure-aware chunking find the right section? Markdown chunker vs token-window, section recall@5.

Corpus: Python's library documentation from Debian's python3-doc (its reStructuredText sources,
headings turned into Markdown `#` headings, the rest left as written). For every section with
enough text, two questions whose answer section is known: its first sentence (where does this
passage live?) and "<document title>: <heading>" (navigation). Each corpus is stored twice through
the real ingest (SQLite, Chroma, local model), once per chunker; a question scores when a chunk of
its section is among the first five of artifact_search over that document set. A token-window
chunk belongs to the section holding most of its characters.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass
from pathlib import Path

import pytest

from config.settings import Settings
from domain.artifacts.input import IngestRequest
from entrypoints.runtime import Runtime
from tests.benchmarks.conftest import FULL

SOURCES = Path("/usr/share/doc/python3.11/html/_sources/library")
FILES = ["json", "csv", "pathlib", "functools", "itertools", "datetime", "argparse", "logging", "collections",
         "sqlite3", "subprocess", "re", "string", "shutil", "tempfile", "heapq", "bisect", "zipfile"]
UNDERLINE = re.compile(r"^([=\-~^\"'`#*+.:_])\1{2,}\s*$")
ROLE = re.compile(r":[\w:]+:`([^`<]*)(?:<[^>]*>)?`")


def rst_to_markdown(text: str) -> str:
    """reST section titles (text over an underline, optional overline) become `#` headings."""
    lines = text.split("\n")
    levels: list[str] = []
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        below = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() and not UNDERLINE.match(line) and UNDERLINE.match(below) and len(below.strip()) >= len(line.strip()):
            char = below.strip()[0]
            if out and UNDERLINE.match(out[-1]) and out[-1].strip()[0] == char:
                out.pop()  # an overline
                char = "o" + char
            if char not in levels:
                levels.append(char)
            out.append("#" * min(6, levels.index(char) + 1) + " " + ROLE.sub(r"\1", line.strip()))
            i += 2
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


@dataclass(frozen=True)
class Section:
    doc: str
    path: tuple[str, ...]
    start: int
    end: int
    first_sentence: str


def sections(doc: str, text: str) -> list[Section]:
    heads = [(m.start(), len(m.group(1)), m.group(2).strip()) for m in re.finditer(r"^(#{1,6}) (.+)$", text, re.M)]
    found: list[Section] = []
    stack: list[tuple[int, str]] = []
    for n, (start, level, title) in enumerate(heads):
        stack = [s for s in stack if s[0] < level] + [(level, title)]
        end = heads[n + 1][0] if n + 1 < len(heads) else len(text)
        body = text[start:end].split("\n", 1)[1] if "\n" in text[start:end] else ""
        prose = " ".join(p for p in re.split(r"\n\s*\n", body) if p.strip() and not p.lstrip().startswith(".."))
        words = prose.split()
        if len(words) < 40:
            continue
        sentence = re.split(r"(?<=[.!?])\s", " ".join(words))[0]
        found.append(Section(doc, tuple(t for _, t in stack), start, end, " ".join(sentence.split()[:30])))
    return found


def store(tmp: Path, chunker: str, docs: dict[str, str]) -> Runtime:
    rt = Runtime(Settings(memtrove_data_dir=tmp / chunker, memtrove_warmup=False, memtrove_chunker=chunker))
    rt.start()
    rt.ensure_ready()
    ingest = rt.app.use_cases.ingest_artifact()
    for name, text in docs.items():
        ingest(IngestRequest("doc", "python-docs", text, source_id=name, title=f"{name}.md"))
    return rt


def section_of(chunk_start: int, chunk_end: int, secs: list[Section]) -> Section | None:
    best, overlap = None, 0
    for sec in secs:
        share = min(chunk_end, sec.end) - max(chunk_start, sec.start)
        if share > overlap:
            best, overlap = sec, share
    return best


def recall(rt: Runtime, secs: dict[str, list[Section]], questions: list[tuple[str, Section]]) -> float:
    search, get = rt.app.use_cases.artifact_search(), rt.app.use_cases.get_artifact()
    chunks: dict[str, tuple[int, int]] = {}
    ids = {}
    for doc in secs:
        art = rt.app.adapters.store().get_artifact(_artifact_id(doc))
        ids[art.id] = doc
        for c in get(art.id, False, True).chunks or []:
            chunks[c.id] = (c.start_char, c.end_char)
    found = []
    for query, answer in questions:
        hits = search(query[:500], 5)
        located = [section_of(*chunks[h.id], secs[ids[h.fields["artifact_id"]]]) for h in hits if h.id in chunks]
        found.append(float(any(s == answer for s in located)))
    return statistics.fmean(found)


def _artifact_id(doc: str) -> str:
    from domain.ids import artifact_id

    return artifact_id("python-docs", doc, "")


@pytest.mark.slow
def test_markdown_chunking_finds_the_section_more_often_than_token_windows(report, tmp_path: Path) -> None:
    if not SOURCES.exists():
        pytest.skip("Debian's python3-doc is not installed (apt-get install python3-doc): no corpus")
    names = [n for n in (FILES if FULL else FILES[:2]) if (SOURCES / f"{n}.rst.txt").exists()]
    docs = {n: rst_to_markdown((SOURCES / f"{n}.rst.txt").read_text(encoding="utf-8")) for n in names}
    secs = {n: sections(n, t) for n, t in docs.items()}
    passage = [(s.first_sentence, s) for n in names for s in secs[n]]
    navigation = [(f"{s.path[0]}: {s.path[-1]}", s) for n in names for s in secs[n] if len(s.path) > 1]
    figures = {}
    for chunker in ("markdown", "token-window"):
        rt = store(tmp_path, chunker, docs)
        figures[chunker] = {"passage_recall@5": round(recall(rt, secs, passage), 3),
                            "navigation_recall@5": round(recall(rt, secs, navigation), 3)}
        rt.shutdown()
    report(documents=len(docs), passage_questions=len(passage), navigation_questions=len(navigation), **figures)
    md, tw = figures["markdown"], figures["token-window"]
    assert md["passage_recall@5"] + md["navigation_recall@5"] > tw["passage_recall@5"] + tw["navigation_recall@5"]
