"""The file ``memtrove import`` reads (entrypoints/console/import_file.py, jsonlines.py): every value JSON
cannot carry, every line too long or too deep, refused naming the line and the field, never a traceback;
a line read only up to its cap; the links of a file checked across its batches (issue 41.5, 41.10, 41.14)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from domain.errors import ValidationError
from entrypoints.console import import_file
from entrypoints.console.import_file import FileScan, batches
from entrypoints.console.importers import ImportFormatError, Report, read_foreign

HEADER = '{"memtrove_export": 1}'
A, B, C = ("mem_" + ch * 32 for ch in "abc")


def memory(memory_id: str, **more: object) -> dict[str, object]:
    return {"kind": "memory", "id": memory_id, "type": "fact", "confidence": 0.9, "ts": "2025-01-01T00:00:00Z",
            "content": "Text.", **more}


def read(path: Path, *lines: str) -> list:
    path.write_text("\n".join([HEADER, *lines]) + "\n", encoding="utf-8")
    return list(batches(path))


@pytest.mark.parametrize("value, field, words", [
    ("NaN", "confidence", "confidence is not a finite number (NaN)"),
    ("-Infinity", "confidence", "confidence is not a finite number (-Infinity)"),
    ("1e400", "confidence", "confidence is not a finite number (1e400)"),
    ("1" * 5001, "confidence", "confidence is an integer of 5,001 digits, past the 4,300 a number may have "
                               "(111111111111...)"),
])
def test_a_number_json_cannot_carry_is_named(tmp_path, value, field, words) -> None:
    with pytest.raises(ValidationError) as refused:
        read(tmp_path / "f.jsonl", json.dumps(memory(A)).replace("0.9", value))
    assert refused.value.field == field
    assert refused.value.message == f"line 2: {words} (field {field}): nothing was imported"


def test_a_number_deep_in_a_record_is_named_by_its_path(tmp_path) -> None:
    line = json.dumps({"kind": "document", "meta": {"scores": [1, "x"]}}).replace('"x"', "Infinity")
    with pytest.raises(ValidationError) as refused:
        read(tmp_path / "f.jsonl", line)
    assert refused.value.field == "meta.scores.1" and "not a finite number" in refused.value.message


@pytest.mark.parametrize("depth", [198, 3000, 100_000])
def test_nesting_past_what_the_transport_carries_is_refused(tmp_path, depth) -> None:
    line = json.dumps(memory(A, labels="X")).replace('"X"', "[" * depth + "]" * depth)
    with pytest.raises(ValidationError) as refused:
        read(tmp_path / "f.jsonl", line)
    assert refused.value.message.endswith(":2: nested deeper than 197 levels") or \
        "labels is nested deeper than 197 levels" in refused.value.message


def test_nesting_the_transport_carries_is_read(tmp_path) -> None:
    line = json.dumps(memory(A, labels="X")).replace('"X"', "[" * 196 + "]" * 196)
    assert read(tmp_path / "f.jsonl", line)[0][1][0]["id"] == A


def test_a_line_past_its_cap_is_refused_having_read_only_the_cap(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(import_file, "MAX_LINE", 1000)
    path = tmp_path / "f.jsonl"
    path.write_text(HEADER + "\n" + json.dumps(memory(A)) + "\n" + '{"content": "' + "a" * 5000 + '"}\n')
    seen: list[int] = []
    original = open

    def counting(file, mode="r", *args, **kwargs):  # the stream the reader gets: what it reads is counted
        stream = original(file, mode, *args, **kwargs)
        read_line = stream.readline

        def readline(size=-1):
            line = read_line(size)
            seen.append(len(line))
            return line
        stream.readline = readline
        return stream
    monkeypatch.setattr("builtins.open", counting)
    with pytest.raises(ValidationError) as refused:
        list(batches(path))
    assert refused.value.message == (f"{path}:3: the line is over 1,000 bytes, longer than any record: it was not "
                                     "read further")
    assert max(seen) == 1001  # the cap and one byte more, never the whole line


def test_a_line_not_utf8_or_not_json_names_its_line(tmp_path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(HEADER.encode() + b"\n" + b'{"content": "caf\xe9"}\n')
    with pytest.raises(ValidationError, match=r":2: not UTF-8 text \(byte 17 of the line\)"):
        list(batches(path))
    with pytest.raises(ValidationError, match=r":2: not a JSON object \(Expecting value, column 1\)"):
        read(path, "nope")
    with pytest.raises(ValidationError, match=r":2: not a JSON object \(more after the value, column 3\)"):
        read(path, "{} {}")
    path.write_bytes(b"\xef\xbb\xbf" + HEADER.encode() + b"\n")  # a byte order mark before the header is fine
    assert list(batches(path)) == []


def test_the_files_links_are_checked_across_its_batches() -> None:
    scan = FileScan()
    scan.add([memory(B, supersedes=A)], 2)
    scan.add([memory(C), memory(A, superseded_by=B, valid_to="2025-02-01T00:00:00Z")], 3)
    assert scan.linked([memory(B, supersedes=A)]) == [A] and scan.linked([memory(C)]) is None
    scan.check_links()  # B and A name each other
    broken = FileScan()
    broken.add([memory(B, supersedes=C)], 2)
    broken.add([memory(C), memory(A, superseded_by=B, valid_to="2025-02-01T00:00:00Z")], 3)
    with pytest.raises(ValidationError) as refused:
        broken.check_links()
    assert refused.value.field == "supersedes" and refused.value.message.startswith(f"line 2: supersedes names {C}")
    with pytest.raises(ValidationError, match="line 3: names the same memory as line 2 with other content"):
        scan.add([memory(B, supersedes=A, content="Other.")], 3)


def test_a_reference_file_too_deep_or_with_a_long_integer_is_refused(tmp_path) -> None:
    path = tmp_path / "memory.jsonl"
    path.write_text('{"type":"entity","name":"A","entityType":"t","observations":' + "[" * 3000 + "]" * 3000 + "}\n")
    with pytest.raises(ImportFormatError) as refused:
        list(read_foreign("reference", path, Report()))
    assert refused.value.field == "line" and "line 1: the line is nested deeper than 197 levels" in str(refused.value)
    path.write_text('{"type":"entity","name":"A","entityType":"t","observations":[],"n":' + "9" * 5001 + "}\n")
    with pytest.raises(ImportFormatError) as refused:
        list(read_foreign("reference", path, Report()))
    assert refused.value.field == "n" and "integer of 5,001 digits" in str(refused.value)


@pytest.mark.parametrize("fmt", ["claude", "chatgpt"])
def test_a_chat_export_too_deep_is_refused_with_its_conversation(tmp_path, fmt) -> None:
    path = tmp_path / "conversations.json"
    path.write_text('[{"uuid": "x", "chat_messages": ' + "[" * 3000 + "]" * 3000 + "}]")
    with pytest.raises(ImportFormatError) as refused:
        list(read_foreign(fmt, path, Report()))
    assert "line 1: conversation 0: the conversation is nested deeper than 197 levels" in str(refused.value)
