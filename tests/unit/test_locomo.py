"""The LoCoMo benchmark's reading and scoring, on a small conversation written here."""

from __future__ import annotations

import json
from pathlib import Path

from entrypoints.locomo import Scores, load_conversation, recall_at, table


def write(tmp_path: Path) -> Path:
    data = {
        "speaker_a": "Ann", "speaker_b": "Bob",
        "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "later"}],
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "hi"},
                      {"speaker": "Bob", "dia_id": "D1:2", "text": "hello"}],
        "session_1_date_time": "1:56 pm on 8 May, 2023",
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
    assert recall_at(["a", "b", "c"], ["c", "z"], 2) == 0.0
    assert recall_at(["a", "b", "c"], ["c", "z"], 3) == 0.5
    from entrypoints.locomo import Question

    scores = Scores()
    scores.add(["x", "e1"], ["x", "e1", "e2"], Question("q", 1, ("e1", "e2")))
    scores.latency_ms += [10.0, 20.0]
    summary = scores.summary()
    assert summary["recall@1"] == 0.0 and summary["recall@5"] == 0.5 and summary["recall@20"] == 1.0
    assert summary["hit@10"] == 1.0 and summary["by_category"]["1"]["questions"] == 1
    report = {"turns": 3, "malformed_evidence": 0, "questions_without_valid_evidence": 0,
              "history_append_ms": {"p50": 1.0, "p95": 2.0}, "results": {"memtrove hybrid": summary}}
    assert "memtrove hybrid" in table(report) and "0.500" in table(report)
