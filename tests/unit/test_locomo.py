"""The benchmarks' reading and scoring (LoCoMo turns and facts, passages), on small data written here."""

from __future__ import annotations

import json
from pathlib import Path

from bench.common import Scores, recall_at
from bench.facts import facts_of, session_date
from bench.passages import PassageScores, Question, WindowBM25, answers
from bench.turns import load_conversation, table


def write(tmp_path: Path) -> Path:
    data = {
        "speaker_a": "Ann", "speaker_b": "Bob",
        "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "later"}],
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "hi"},
                      {"speaker": "Bob", "dia_id": "D1:2", "text": "hello"}],
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_2_date_time": "10:00 am on 9 June, 2023",
        "session_2_observation": {"Ann": [["Ann moved to Lisbon.", ["D2:1", "D1:2"]]]},
        "session_1_observation": {"Ann": [["Ann said hi.", "D1:1"], ["", "D1:1"], "junk"],
                                  "Bob": [["Bob answered; twice.", "D1:2; D1:1"]]},
        "qa": [
            {"question": "q1", "answer": "a", "evidence": ["D1:2", "D2:1"], "category": 1},
            {"question": "q2", "answer": "a", "evidence": ["D1:1", "D:11:26", "D9:9"], "category": 4},
            {"question": "q3", "answer": "a", "evidence": ["D"], "category": 2},
            {"question": "q4", "evidence": ["D1:1"], "category": 5, "adversarial_answer": "x"},
        ],
    }
    path = tmp_path / "conv-1.json"
    path.write_text(json.dumps(data))
    return path


def test_sessions_in_order_category_5_out_bad_evidence_counted(tmp_path: Path) -> None:
    conv = load_conversation(write(tmp_path))
    assert conv.conversation_id == "locomo-conv-1"
    assert [t[0] for t in conv.turns] == ["D1:1", "D1:2", "D2:1"]  # session 1 before 2, whatever the key order
    assert [(q.text, q.evidence) for q in conv.questions] == [("q1", ("D1:2", "D2:1")), ("q2", ("D1:1",))]
    assert conv.malformed_evidence == 3 and conv.skipped_questions == 1


def test_recall_and_scores() -> None:
    one = lambda *ids: [frozenset({i}) for i in ids]  # noqa: E731
    assert recall_at(one("a", "b", "c"), ["c", "z"], 2) == 0.0
    assert recall_at(one("a", "b", "c"), ["c", "z"], 3) == 0.5
    assert recall_at([frozenset({"c", "z"})], ["c", "z"], 1) == 1.0  # a fact naming two evidence turns

    scores = Scores()
    scores.add(one("x", "e1"), one("x", "e1", "e2"), ("e1", "e2"), 1)
    scores.latency_ms += [10.0, 20.0]
    summary = scores.summary()
    assert summary["recall@1"] == 0.0 and summary["recall@5"] == 0.5 and summary["recall@20"] == 1.0
    assert summary["hit@10"] == 1.0 and summary["by_category"]["1"]["questions"] == 1
    report = {"turns": 3, "malformed_evidence": 0, "questions_without_valid_evidence": 0,
              "history_append_ms": {"p50": 1.0, "p95": 2.0}, "turns_per_second": 9.5, "server_peak_rss_mb": 400.0,
              "results": {"memtrove hybrid": summary}}
    assert "memtrove hybrid" in table(report) and "0.500" in table(report)
    assert "9.5 turns/s stored in this run; server peak RSS 400.0 MB" in table(report)


def test_facts_carry_their_session_date_and_the_turns_they_point_at(tmp_path: Path) -> None:
    assert session_date("1:56 pm on 8 May, 2023") == "8 May 2023"
    facts = facts_of(load_conversation(write(tmp_path)))
    assert facts == [("[8 May 2023] Ann said hi.", frozenset({"D1:1"})),
                     ("[8 May 2023] Bob answered; twice.", frozenset({"D1:2", "D1:1"})),
                     ("[9 June 2023] Ann moved to Lisbon.", frozenset({"D2:1", "D1:2"}))]


def test_a_passage_answers_when_it_holds_the_quote_or_half_of_it() -> None:
    quote = "The quick brown fox jumps over the lazy dog while the farmer sleeps in the barn."
    assert answers("Intro.\n The quick brown fox jumps over\nthe lazy dog while the farmer sleeps in the barn. End", quote)
    assert answers("Intro. The quick brown fox jumps over the lazy dog while", quote)  # cut by a chunk end
    assert answers("jumps over the lazy dog while the farmer sleeps in the barn. More text", quote)
    assert not answers("The quick brown fox", quote) and not answers("unrelated", quote)
    scores = PassageScores()
    question = Question("p1", "a.rst.txt", "q", quote, "dev")
    scores.add([("b.rst.txt", "nothing"), ("a.rst.txt", quote)], question)
    scores.add([("b.rst.txt", "nothing")], question)
    summary = scores.summary()
    assert summary["hit@1"] == 0.0 and summary["hit@5"] == 0.5 and summary["mrr@10"] == 0.25
    assert summary["document@5"] == 0.5


def test_window_bm25_finds_the_window_with_the_rare_words() -> None:
    docs = {"a": "common words " * 200 + "the zeppelin hangar is cold " + "common words " * 200,
            "b": "common words " * 300}
    top = WindowBM25(docs).search("zeppelin hangar")
    assert top and top[0][0] == "a" and "zeppelin hangar" in top[0][1]


def test_the_shipped_passage_questions_pass_their_checker() -> None:
    """Quotes found once in their document and nowhere else, no identifiers in questions, 50/50 splits."""
    import pytest

    from bench.passages import DOCS, QUESTIONS
    from bench.data import check_questions

    if not DOCS.is_dir():
        pytest.skip("Debian's python3-doc is not installed (apt-get install python3-doc)")
    assert check_questions.main(["check_questions", str(QUESTIONS)]) == 0
