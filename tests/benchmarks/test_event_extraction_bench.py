"""Event extraction offline (spec 000 §13.3): the spaCy extractor over LoCoMo turns, in passages a second,
against spaCy's pipeline alone on the same texts (the parse every reading needs) measured in the same run:
the ratio is what the rules (relations, observations, events) cost on top. The events found are counted by
kind; each must quote a sentence of its passage. Full size: every turn of the five conversations; smoke:
150 turns of one."""

from __future__ import annotations

import statistics
import time

import pytest

from bench.turns import load
from domain.graph.extraction import Passage
from plugins.extractors.spacy_rules import BATCH, SpacyExtractor
from tests.benchmarks.conftest import FULL, size
from tests.benchmarks.test_facts_passages_bench import LOCOMO


def test_event_extraction_throughput(benchmark, report) -> None:
    if not LOCOMO.is_dir():
        pytest.skip(f"no LoCoMo data at {LOCOMO}")
    conversations = load(LOCOMO, [] if FULL else ["conv-26"])
    passages = [Passage("turn", f"{c.sample_id}-{i}", text, speaker=speaker, when=c.times[i] if c.times else None)
                for c in conversations for i, (_, speaker, text) in enumerate(c.turns)][:size(100_000, 150)]
    extractor = SpacyExtractor()
    extractor.extract(passages[:50])  # loads the pipeline and warms it
    nlp = extractor._pipeline()
    texts = [p.text for p in passages]
    list(nlp.pipe(texts[:50], batch_size=BATCH))
    rounds = size(3, 1)
    parse_s: list[float] = []
    extract_s: list[float] = []
    found = []
    for _ in range(rounds):  # alternating, so both see the same machine
        started = time.perf_counter()
        list(nlp.pipe(texts, batch_size=BATCH))
        parse_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        found = extractor.extract(passages)
        extract_s.append(time.perf_counter() - started)
    if not benchmark.disabled:
        benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    events = [(p, e) for p, got in zip(passages, found) for e in got.events]
    kinds = {k: sum(1 for _, e in events if e.kind == k) for k in ("decision", "action", "milestone")}
    parse, extract = statistics.median(parse_s), statistics.median(extract_s)
    report(passages=len(passages), rounds=rounds, extract_passages_per_s=round(len(passages) / extract, 1),
           parse_only_passages_per_s=round(len(passages) / parse, 1), ratio_to_parse=round(extract / parse, 2),
           events=len(events), events_by_kind=kinds, events_dated_in_text=sum(1 for _, e in events if e.when_text))
    assert events and all(e.summary in p.text or e.summary.rstrip(".…") in p.text for p, e in events)
    assert kinds["milestone"] and kinds["action"]
