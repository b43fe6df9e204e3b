"""The Claude.ai and ChatGPT data exports read by ``memtrove import --from claude|chatgpt`` (importers_claude.py,
importers_chat.py), on fixtures in the exports' real shapes (tests/fixtures/imports): each conversation's
name kept as its first turn, attachments' extracted text and Claude's artifacts as artifacts, a line for
each thing left out (thinking, tool calls, files the export does not hold), ChatGPT's ``parts`` given as
one string read as text; and what ``memtrove import`` says a file looks like (import_detect.py)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from entrypoints.console.import_detect import hint, looks_like
from entrypoints.console.import_file import header, split
from entrypoints.console.importers import digest
from entrypoints.console.importers_chat import is_title
from domain.errors import ValidationError
from tests.unit.test_importers import FIXTURES, PRIVACY, maker, read, refused, turn

CLAUDE = FIXTURES / "claude" / "conversations.json"
CHATGPT = FIXTURES / "chatgpt" / "conversations.json"
REPLICA, SWEDISH, LISBON = "5f2c1b9e-8d4a-4c3e-9a71-0b6e2d9c4f10", "a3d04e2b-77c1-4f0e-b5d2-9e8f7a6b5c4d", \
    "7b3f9c2e-1d4a-4e8b-9c6d-2f0a1b3c4d5e"


def doc(source_id: str, title: str, ts: str, content: str, uuid: str) -> dict[str, Any]:
    return {"kind": "artifact", "id": None, "artifact_type": "doc", "source_system": "claude", "source_id": source_id,
            "source_url": f"https://claude.ai/chat/{uuid}", "title": title, "author": None, "participants": [],
            "ts": ts, "chunker": None, "chunked": True, "labels": {"tags": [], "source": "claude"}, **PRIVACY,
            "content": content}


def claude_export(tmp_path: Path, *messages: dict[str, Any], name: object = "") -> Path:
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([{"uuid": "u1", "name": name, "created_at": "2025-01-01T00:00:00Z",
                                 "chat_messages": list(messages)}]), encoding="utf-8")
    return path


def said(sender: str, second: int, text: str = "", **more: Any) -> dict[str, Any]:
    return {"uuid": f"m{second}", "sender": sender, "created_at": f"2025-01-01T00:00:0{second}Z", "text": text, **more}


# ---- claude -----------------------------------------------------------------------------------------------

def test_claude_names_attachments_and_artifacts_are_kept_and_the_rest_said() -> None:
    records, report = read("claude", CLAUDE)
    data = json.loads(CLAUDE.read_text())
    answer, budget = data[0]["chat_messages"][1]["content"][3]["text"], data[3]["chat_messages"][1]["content"][1]
    replica, swedish, lisbon = f"claude-{REPLICA}", f"claude-{SWEDISH}", f"claude-{LISBON}"
    version = digest("2025-08-14T18:20:30.500000Z", budget["input"]["content"])[:16]
    assert records == [
        turn(replica, 0, "system", "2025-05-06T08:00:01.123456Z", "Title: Postgres replica lagging"),
        turn(replica, 1, "user", "2025-05-06T08:00:02.345678Z",
             "Why is my Postgres replica lagging behind the primary by several minutes?"),
        turn(replica, 2, "assistant", "2025-05-06T08:00:19.654321Z", answer),  # its text block alone
        turn(replica, 3, "user", "2025-05-06T08:07:30Z",  # "text" empty: the content's text block
             "Replay was the problem. Raising max_standby_streaming_delay to 30s fixed it \u2014 thanks!"),
        turn(replica, 4, "user", "2025-05-06T08:09:12Z", "[attached: postgresql.conf]"),  # a file, no words
        doc(f"{REPLICA}/0196a3c1-1111-7000-8000-000000000004/0", "postgresql.conf", "2025-05-06T08:09:12Z",
            "max_wal_size = 4GB\nhot_standby_feedback = on\n", REPLICA),
        turn(swedish, 0, "user", "2024-03-01T12:00:00Z", "Translate 'good morning' into Swedish."),  # no name
        turn(swedish, 1, "assistant", "2024-03-01T12:00:04.500000Z", "God morgon!"),  # no content: its text
        turn(lisbon, 0, "system", "2025-08-14T18:20:00Z", "Title: Lisbon trip: budget for 4 days"),
        turn(lisbon, 1, "user", "2025-08-14T18:20:05Z", "Here is what I have spent so far. Can you make me a budget "
             "for the remaining days?\n\n[attached: spending.csv]\n[attached: receipt.jpg]"),
        doc(f"{LISBON}/0198a1b2-2222-7000-8000-000000000001/0", "spending.csv", "2025-08-14T18:20:05Z",
            data[3]["chat_messages"][0]["attachments"][0]["extracted_content"], LISBON),
        turn(lisbon, 2, "assistant", "2025-08-14T18:20:30.500000Z",
             data[3]["chat_messages"][1]["content"][3]["text"] + "\n\n[artifact: Lisbon budget]"),
        turn(lisbon, 3, "user", "2025-08-14T18:30:00Z",
             "And this is the list from my sister, add what is missing:\n\n[attached: pasted text]"),
        doc(f"{LISBON}/0198a1b2-2222-7000-8000-000000000003/0", "pasted text", "2025-08-14T18:30:00Z",
            data[3]["chat_messages"][2]["attachments"][0]["extracted_content"], LISBON),
        doc(f"{LISBON}/artifact/lisbon-budget/{version}", "Lisbon budget", "2025-08-14T18:20:30.500000Z",
            budget["input"]["content"], LISBON),
    ]
    thinking = "(the model's reasoning and its tool use, not what was said)"
    assert report.skipped == [
        ("line 2: conversation 0, message 1",
         f"left out of the turn: 1 thinking block, 1 web_search call, 1 web_search result {thinking}"),
        ("line 186: conversation 2", "a conversation without messages"),  # named "Untitled": no turn, no title
        ("line 196: conversation 3, message 0, file 'receipt.jpg'", "the export holds only its name, not its content"),
        ("line 196: conversation 3, message 1", f"left out of the turn: 1 thinking block {thinking}"),
        ("line 196: conversation 3, message 3", "no text (only 1 thinking block)"),
    ]
    assert read("claude", CLAUDE)[0] == records  # the same records, ids and all, on every read
    assert [is_title(r) for r in records].count(True) == 2 and not is_title(records[1])


def test_claude_text_without_content_blocks_loses_its_placeholders(tmp_path) -> None:
    placeholder = "```\nThis block is not supported on your current device yet.\n```"
    path = claude_export(
        tmp_path, said("assistant", 1, f"Let me look.\n{placeholder}\n\nFound it."),
        said("assistant", 2, placeholder, content=[{"type": "tool_use", "name": "web_search", "input": {}}]),
        said("system", 3, "x"), said("human", 4, "y" * 50_001))
    records, report = read("claude", path)
    assert records == [turn("claude-u1", 0, "assistant", "2025-01-01T00:00:01Z", "Let me look.\n\nFound it.")]
    assert report.skipped == [("line 1: conversation 0, message 1", "no text (only 1 web_search call)"),
                              ("line 1: conversation 0, message 2", "sender 'system' is neither human nor assistant"),
                              ("line 1: conversation 0, message 3", "50001 characters, over the 50000 a turn holds")]


def test_claude_a_name_is_the_first_turn_only_of_a_conversation_with_turns(tmp_path) -> None:
    records, _ = read("claude", claude_export(tmp_path, said("human", 1, "hi"), name="  Weekend\n plans "))
    assert [r["content"] for r in records] == ["Title: Weekend plans", "hi"]
    assert records[0]["ts"] == "2025-01-01T00:00:00Z"  # the conversation's created_at
    for name in ("", "  \u200b ", None, 42):
        unnamed = read("claude", claude_export(tmp_path, said("human", 1, "hi"), name=name))[0]
        assert [r["role"] for r in unnamed] == ["user"]
    records, report = read("claude", claude_export(tmp_path, said("assistant", 1, content=[{"type": "thinking"}]),
                                                   name="Only thoughts"))
    assert records == []
    assert report.skipped == [("line 1: conversation 0, message 0", "no text (only 1 thinking block)")]


def test_claude_artifacts_are_taken_as_the_conversation_left_them(tmp_path) -> None:
    def call(command: str, **given: Any) -> dict[str, Any]:
        return {"type": "tool_use", "name": "artifacts", "input": {"id": "plan", "command": command, **given}}

    done = {"type": "tool_result", "name": "artifacts", "content": [{"text": "OK"}]}
    path = claude_export(
        tmp_path, said("assistant", 1, content=[{"type": "text", "text": "Here."},
                                                call("create", title="Plan", content="a b c"), done]),
        said("assistant", 2, content=[call("update", old_str="b", new_str="B"),
                                      call("update", old_str="zzz", new_str="")]),  # not in it: said
        said("assistant", 3, content=[call("rewrite", title="Plan v2", content="a B c d")]))
    records, report = read("claude", path)
    assert [r["content"] for r in records] == ["Here.\n\n[artifact: Plan]", "[artifact: Plan]",
                                               "[artifact: Plan v2]", "a B c d"]
    assert (records[3]["title"], records[3]["ts"]) == ("Plan v2", "2025-01-01T00:00:03Z")
    assert records[3]["source_id"].startswith("u1/artifact/plan/") and records[3]["source_url"] is None  # not a uuid
    assert report.skipped == [("line 1: conversation 0, message 1", "an artifacts call ('update' of 'plan') that "
                                                                    "could not be applied: the artifact stays as it "
                                                                    "was before it")]
    grown = claude_export(tmp_path / "later", *json.loads(path.read_text())[0]["chat_messages"],
                          said("assistant", 4, content=[call("update", old_str="d", new_str="e")]))
    later = [r for r in read("claude", grown)[0] if r["kind"] == "artifact"]
    assert later[0]["content"] == "a B c e" and later[0]["source_id"] != records[3]["source_id"]  # beside, no clash


def test_claude_an_attachment_too_large_or_empty_is_said(tmp_path) -> None:
    big = "x" * 10_000_001
    records, report = read("claude", claude_export(tmp_path, said("human", 1, "see", attachments=[
        {"file_name": "big.log", "extracted_content": big}, {"file_name": "empty.txt", "extracted_content": " "},
        {"file_name": "scan.pdf"}])))
    assert records == [turn("claude-u1", 0, "user", "2025-01-01T00:00:01Z",
                            "see\n\n[attached: big.log]\n[attached: empty.txt]\n[attached: scan.pdf]")]
    where = "line 1: conversation 0, message 0, file"
    assert report.skipped == [(f"{where} 'big.log'", "over 10 MB of UTF-8, more than an artifact holds"),
                              (f"{where} 'empty.txt'", "empty"),
                              (f"{where} 'scan.pdf'", "the export holds only its name, not its content")]


@pytest.mark.parametrize("text, where, field", [
    ('{"uuid": "u1"}', "line 1", "conversations"),  # an object, not the array
    ('[\n  {"name": "x", "chat_messages": []}\n]', "line 2: conversation 0", "uuid"),
    ('[\n  {"uuid": "u1", "chat_messages": {}}\n]', "line 2: conversation 0", "chat_messages"),
    ('[{"uuid": "u0", "chat_messages": []},\n {"uuid": "u1", "chat_messages": [{"sender": "human", "text": "hi", '
     '"created_at": "yesterday"}]}]', "line 2: conversation 1, message 0", "created_at"),
    ('[\n  {"uuid": "u1", "chat_messages": []},\n  {"uuid": "u2", "chat_mess', "line 3", "conversations"),  # cut
    ('[\n  "just text"\n]', "line 2: conversation 0", "conversation"),
    ('[{"uuid": "u1", "chat_messages": [{"sender": "human", "text": "hi", "created_at": "2025-01-01T00:00:00Z", '
     '"attachments": "notes.txt"}]}]', "line 1: conversation 0, message 0", "attachments"),
])
def test_claude_a_malformed_export_is_refused_with_its_place_and_field(tmp_path, text, where, field) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(text, encoding="utf-8")
    refused("claude", path, where, field)


# ---- chatgpt ----------------------------------------------------------------------------------------------

CHATGPT_A, CHATGPT_B = "chatgpt-67a1c2d3-0e4f-8001-9a2b-3c4d5e6f7a8b", "chatgpt-6801f3a2-5b6c-8002-a1b2-c3d4e5f6a7b8"
CHATGPT_C, CHATGPT_D = "chatgpt-6813a0b1-2c3d-8003-9e4f-5a6b7c8d9e0f", "chatgpt-6813b000-0000-8003-9e4f-000000000001"


def test_chatgpt_the_kept_branch_is_turns_after_the_title_and_the_rest_is_said() -> None:
    records, report = read("chatgpt", CHATGPT)
    regex = json.loads(CHATGPT.read_text())[0]["mapping"]["0f9e8d7c-6b5a-4938-8271-605f4e3d2c1b"]["message"]
    assert records == [
        turn(CHATGPT_A, 0, "system", "2025-02-04T14:40:00.123456Z", "Title: Regex for ISO dates"),
        turn(CHATGPT_A, 1, "user", "2025-02-04T14:40:01.500000Z",
             "Write a regex that matches ISO 8601 dates like 2025-02-04."),
        turn(CHATGPT_A, 2, "assistant", "2025-02-04T14:40:20.750000Z", regex["content"]["parts"][0]),  # regenerated
        turn(CHATGPT_A, 3, "user", "2025-02-04T14:41:40Z",
             "Does it also match the dates in this screenshot?\n\n[attached: dates.png]"),
        turn(CHATGPT_A, 4, "assistant", "2025-02-04T14:41:50Z",
             "Yes: 2025-02-04 and 2024-12-31 match; 2025-13-01 does not (there is no month 13)."),
        turn(CHATGPT_B, 0, "system", "2025-04-18T07:10:00Z", "Title: Cycling weather"),
        turn(CHATGPT_B, 1, "user", "2025-04-18T07:10:01Z", "What's the weather like for cycling tomorrow morning?"),
        turn(CHATGPT_B, 2, "assistant", "2025-04-18T07:10:03Z",  # no create_time: the message before it
             "Dry until about 9, then light rain. Leave before 8:30 and you stay dry."),
        turn(CHATGPT_C, 0, "system", "2025-05-01T09:00:00Z", "Title: Sourdough starter smells like acetone"),
        turn(CHATGPT_C, 1, "user", "2025-05-01T09:00:01Z",  # parts given as one string: its text
             "My starter smells like acetone after three days. Is it dead?"),
        turn(CHATGPT_C, 2, "assistant", "2025-05-01T09:00:12Z", "Not dead, just hungry: the acetone smell means it "
             "ran out of food. Feed it twice a day at 1:1:1 for a few days."),
        turn(CHATGPT_D, 0, "user", "2025-05-01T11:46:40Z", "Remind me: the bike lock code is on the fridge note."),
    ]
    assert not any("\\d{4}-\\d{2}-\\d{2}`." in r["content"] for r in records)  # the first answer, off the branch
    here, beside = "line 1: conversation 0", "(the export keeps images, audio and files beside conversations.json, " \
                                             "not in it)"
    assert report.skipped == [
        (here, "1 message off the current branch (edited or regenerated), not taken"),
        (f"{here}, node b1f0c6a2-6f3e-4c55-9d0e-0a1b2c3d4e5f", "a system message"),
        (f"{here}, node aaa2f1e0-9d8c-4b7a-8695-a4b3c2d1e0f9",
         f"left out of the turn: the content of dates.png {beside}"),
        (f"{here}, node 3c4d5e6f-7a8b-4c9d-8e0f-a1b2c3d4e5f6", "addressed to python (a tool call)"),
        (f"{here}, node 4d5e6f70-8a9b-4cad-9e0f-b1c2d3e4f5a6", "a tool message"),
        ("line 1: conversation 1, node e1a2b3c4-0000-4000-8000-000000000002", "custom instructions, not a turn"),
        ("line 1: conversation 1, node e1a2b3c4-0000-4000-8000-000000000003",
         f"left out of the turn: 1 audio recording {beside}"),
        ("line 1: conversation 1, node e1a2b3c4-0000-4000-8000-000000000004",
         "content type thoughts, not text (the model's reasoning)"),
    ]
    assert read("chatgpt", CHATGPT)[0] == records


def chatgpt_export(tmp_path: Path, **change: Any) -> Path:
    """A one-conversation export: root -> user "hi" (u) -> assistant "hello" (a), changed by ``change``."""
    mapping = {"root": {"id": "root", "message": None, "parent": None, "children": ["u"]},
               "u": {"id": "u", "parent": "root", "children": ["a"], "message": {
                   "author": {"role": "user"}, "create_time": 1700000000.0, "recipient": "all",
                   "content": {"content_type": "text", "parts": ["hi", {"content_type": "image_asset_pointer"}]}}},
               "a": {"id": "a", "parent": "u", "children": [], "message": {
                   "author": {"role": "assistant"}, "create_time": 1700000001.0, "recipient": "all",
                   "content": {"content_type": "text", "parts": ["hello"]}}}}
    conversation = {"id": "c1", "title": None, "create_time": 1700000000.0, "current_node": "a", "mapping": mapping}
    for key, value in change.items():
        if key in ("u", "a"):
            mapping[key]["message"].update(value)
        else:
            conversation[key] = value
    path = tmp_path / "conversations.json"
    path.write_text("[\n" + json.dumps(conversation) + "\n]\n", encoding="utf-8")
    return path


def test_chatgpt_parts_are_text_whether_a_list_or_one_string_and_the_rest_is_named(tmp_path) -> None:
    records, report = read("chatgpt", chatgpt_export(tmp_path))
    assert [r["content"] for r in records] == ["hi", "hello"]
    assert report.skipped == [("line 2: conversation 0, node u", "left out of the turn: 1 image (the export keeps "
                                                                 "images, audio and files beside conversations.json, "
                                                                 "not in it)")]
    one = {"content_type": "text", "parts": "hi there"}
    records, report = read("chatgpt", chatgpt_export(tmp_path, u={"content": one}))
    assert [r["content"] for r in records] == ["hi there", "hello"] and report.skipped == []  # was "no text"
    records, report = read("chatgpt", chatgpt_export(tmp_path, u={"content": {
        "content_type": "multimodal_text", "parts": [{"content_type": "image_asset_pointer"}] * 2}}))
    assert [r["content"] for r in records] == ["hello"] and records[0]["turn_index"] == 0
    assert report.skipped == [("line 2: conversation 0, node u", "no text (only 2 images)")]
    records, _ = read("chatgpt", chatgpt_export(tmp_path, title=" Greetings ", create_time=1699999999.5))
    assert records[0] == turn("chatgpt-c1", 0, "system", "2023-11-14T22:13:19.500000Z", "Title: Greetings")


@pytest.mark.parametrize("change, where, field", [
    ({"current_node": "gone"}, "line 2: conversation 0", "current_node"),
    ({"mapping": [1, 2]}, "line 2: conversation 0", "mapping"),
    ({"id": None}, "line 2: conversation 0", "id"),
    ({"a": {"create_time": "2023-11-14"}}, "line 2: conversation 0, node a", "create_time"),
])
def test_chatgpt_a_malformed_export_is_refused_with_its_place_and_field(tmp_path, change, where, field) -> None:
    refused("chatgpt", chatgpt_export(tmp_path, **change), where, field)


def test_chatgpt_a_broken_parent_chain_is_refused(tmp_path) -> None:
    path = chatgpt_export(tmp_path)
    data = json.loads(path.read_text())
    data[0]["mapping"]["u"]["parent"] = "lost"
    path.write_text(json.dumps(data))
    assert "'lost' is missing" in str(refused("chatgpt", path, "line 1: conversation 0", "parent"))
    data[0]["mapping"]["u"]["parent"] = "a"  # a cycle
    path.write_text(json.dumps(data))
    assert "its own ancestor" in str(refused("chatgpt", path, "line 1: conversation 0", "parent"))


# ---- what a file looks like ------------------------------------------------------------------------------

def test_each_format_is_recognised_by_its_marks(tmp_path) -> None:
    export = tmp_path / "backup.jsonl"
    export.write_text('{"memtrove_export": 1}\n{"kind": "memory"}\n', encoding="utf-8")
    compact = tmp_path / "compact.json"  # the exports as they come: the whole array on one line
    compact.write_text(json.dumps(json.loads(CLAUDE.read_text())), encoding="utf-8")
    legacy = tmp_path / "memory.json"
    legacy.write_text('{"type":"relation","from":"a","to":"b","relationType":"knows"}\n', encoding="utf-8")
    empty = tmp_path / "empty"
    empty.mkdir()
    seen = {"memtrove": export, "reference": FIXTURES / "memory.jsonl", "claude": CLAUDE, "chatgpt": CHATGPT,
            "markdown": FIXTURES / "vault", "mcp-memory-service": maker().build(tmp_path / "sqlite_vec.db")}
    assert {fmt: looks_like(path) for fmt, path in seen.items()} == {fmt: fmt for fmt in seen}
    assert (looks_like(compact), looks_like(legacy)) == ("claude", "reference")
    sqlite3.connect(tmp_path / "other.db").execute("CREATE TABLE notes (x)").connection.commit()
    talk = tmp_path / "talk.json"  # a ChatGPT export that quotes a Claude export's key inside a message
    talk.write_text(CHATGPT.read_text().replace("Write a regex", 'Parse \\"chat_messages\\": [ with'), encoding="utf-8")
    odd = [empty, tmp_path / "other.db", tmp_path / "nowhere", talk.with_name("x.txt")]
    talk.with_name("x.txt").write_text("[1, 2]\n", encoding="utf-8")
    assert [looks_like(p) for p in odd] == [None] * 4 and looks_like(talk) == "chatgpt"


def test_a_file_of_another_format_is_named_with_the_command_that_imports_it(tmp_path) -> None:
    path = str(CLAUDE)
    assert hint(path, None) == (f"{path} looks like a Claude export (conversations.json), not a memtrove export: "
                                f"run memtrove import --from claude {path}")
    assert hint(path, "chatgpt") == (f"{path} looks like a Claude export (conversations.json), not a ChatGPT export "
                                     f"(conversations.json): run memtrove import --from claude {path}")
    export = tmp_path / "my backup.jsonl"
    export.write_text('{"memtrove_export": 1}\n', encoding="utf-8")
    assert hint(str(export), "reference") == (f"{export} looks like a memtrove export, not the MCP reference memory "
                                              f"server's memory.jsonl: run memtrove import '{export}'")
    assert hint(str(FIXTURES / "vault"), None).endswith(f"run memtrove import --from markdown {FIXTURES / 'vault'}")
    assert hint(path, "claude") is None and hint(str(export), None) is None and hint(str(tmp_path / "x"), None) is None


def test_an_export_file_names_its_first_line_when_it_is_no_export() -> None:
    with pytest.raises(ValidationError, match=r"f:1: not a memtrove export .*--from reference, mcp-memory-service"):
        header("f", b"[")
    with pytest.raises(ValidationError, match=r"f:1: a memtrove export of version 2; this memtrove reads version 1"):
        header("f", b'{"memtrove_export": 2}')
    header("f", b'\xef\xbb\xbf{"memtrove_export": 1}')  # a byte order mark is no matter


def test_a_batch_is_split_around_the_records_left_out() -> None:
    records = [{"n": n} for n in range(10, 16)]
    assert split(10, records, set()) == [(10, records)]
    assert split(10, records, {10, 12, 13, 99}) == [(11, records[1:2]), (14, records[4:])]
    assert split(10, records, {15}) == [(10, records[:5])] and split(10, records[:1], {10}) == []


def test_a_path_of_the_wrong_kind_is_refused_before_the_server_is_asked(tmp_path) -> None:
    import anyio

    from entrypoints.console.progress import Progress
    from entrypoints.console.transfer import restore

    note = tmp_path / "note.md"
    note.write_text("# A note\n", encoding="utf-8")
    (tmp_path / "empty").mkdir()
    for path, fmt, said in [(note, "markdown", f"{note} is a file: --from markdown reads a folder of notes"),
                            (tmp_path / "empty", None, f"{tmp_path / 'empty'} is a folder: name the file to import"),
                            (tmp_path / "gone.json", "claude", f"no such file: {tmp_path / 'gone.json'}"),
                            (CHATGPT, "claude", f"{CHATGPT} looks like a ChatGPT export")]:
        with pytest.raises(ValidationError) as caught:  # no client: nothing reached a server
            anyio.run(restore, None, str(path), Progress(quiet=True), fmt)
        assert caught.value.field == "path" and caught.value.message.startswith(said), caught.value.message
