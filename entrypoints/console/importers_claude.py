"""The Claude.ai data export (``conversations.json``) as memtrove conversation turns and artifacts; the
reader behind ``read_foreign("claude", ...)`` in importers.py.

Settings > Privacy > Export data. Each conversation has uuid, name, created_at and chat_messages, in
order: uuid, sender ("human" or "assistant"), text, content (blocks of type text, thinking, tool_use,
tool_result, each with start/stop timestamps), created_at ("...Z", microseconds), attachments (file_name,
file_size, file_type, extracted_content: the text Claude read from the file), files (file_name only) and,
in newer exports, parent_message_uuid. Taken from exports quoted in public repositories: echomine's
"Research: Claude Export Adapter" (feature 004, from a real data/anthropic/conversations.json, 2025-12), a
JSON schema "Claude.ai conversations.json Export Format", and verbatim message dumps (2026-03) showing that
``text`` runs every block together, thinking included, with "This block is not supported on your current
device yet." fenced in place of each tool block.

What each becomes (README, "Export and import"):
- a conversation: turns of "claude-<uuid>"; its name, if it has one, the first turn (role system,
  ``Title: <name>``, at created_at), since memtrove's conversations have no title of their own;
- a message: a turn of its text blocks joined (``text``, placeholders cut, only if it has none), then one
  ``[attached: <file name>]`` line per file and one ``[artifact: <title>]`` per artifact it made or changed;
  its thinking and other tool blocks are left out, said in one line;
- an artifact Claude made (tool_use ``artifacts``): a ``doc`` artifact of its text as the conversation
  left it (class Made);
- an attachment's extracted_content: a ``doc`` artifact titled with the file name, source claude, source
  id ``<conversation uuid>/<message uuid>/<n>``, source_url the conversation's claude.ai address; a file
  whose content the export does not hold (an image, a PDF uploaded as such) is named and said left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from entrypoints.console.importers import (ImportFormatError, Report, artifact_record, digest, unfit, visible,
                                           when)
from entrypoints.console.importers_chat import (Titled, conversations, counted, text_field, too_long,
                                                with_files)

PLACEHOLDER = re.compile(r"\n*```\nThis block is not supported on your current device yet\.\n```\n*")
ROLES = {"human": "user", "assistant": "assistant"}
SOURCE, ADDRESS = "claude", "https://claude.ai/chat/{}"
UUID = re.compile(r"[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")  # Claude's ids: an address is made of one
PASTED = "pasted text"  # an attachment without a file name: text pasted into the message
ARTIFACTS = "artifacts"  # the tool by which Claude makes and edits an artifact (a document, code)


def read_claude(path: Path, report: Report) -> Iterator[dict[str, Any]]:
    """Each message with text or files as a turn of "claude-<uuid>" (after its title), its attachments'
    text as artifacts, in the export's order."""
    for here, conversation in conversations(path):
        uuid = text_field(path, here, conversation, "uuid")
        messages, last = conversation.get("chat_messages"), conversation.get("created_at")
        if not isinstance(messages, list):
            raise ImportFormatError(path, here, "chat_messages", "field chat_messages must be a list")
        if not messages:
            report.skip(here, "a conversation without messages")
        titled = Titled(f"claude-{uuid}", conversation.get("name"), when(last))
        made = Made(uuid)
        for m, message in enumerate(messages):
            where = f"{here}, message {m}"
            if not isinstance(message, dict):
                raise ImportFormatError(path, where, "chat_messages", "each of chat_messages must be a JSON object")
            last = message.get("created_at") if message.get("created_at") is not None else last  # else the last
            ts = when(last)
            if ts is None:
                raise ImportFormatError(path, where, "created_at", f"created_at is not an ISO-8601 time ({last!r})")
            role = ROLES.get(str(message.get("sender")))
            if role is None:
                report.skip(where, f"sender {message.get('sender')!r} is neither human nor assistant")
                continue
            text, left, changed = _text(message, made, ts, where, report)
            files = _files(path, where, message)
            content = with_files(text, (name for name, _ in files), changed)
            why = _no_text(left) if not visible(content) else too_long(content)
            if why:
                report.skip(where, why)
            else:
                yield from titled.turn(role, ts, content)
                if left:
                    report.skip(where, f"left out of the turn: {counted(left)} (the model's reasoning and its tool "
                                       "use, not what was said)")
            yield from _attachments(uuid, message, m, ts, files, where, report)
        yield from made.records(here, report)


def _text(message: dict[str, Any], made: Made, ts: str, where: str,
          report: Report) -> tuple[str, list[str], list[str]]:
    """The message's text blocks joined (else its ``text``, placeholders cut), what else its blocks hold
    (left out), and the titles of the artifacts it made or changed (taken by ``made``)."""
    blocks = [b for b in message.get("content") or () if isinstance(b, dict)] \
        if isinstance(message.get("content"), list) else []
    texts = [b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)
             and visible(b["text"])]
    left: list[str] = []
    changed: list[str] = []
    for block in blocks:
        if block.get("type") == "text" or (block.get("type") == "tool_result" and block.get("name") == ARTIFACTS):
            continue  # an artifacts call's result says only that it was done
        title = made.change(block.get("input"), ts, where, report) \
            if block.get("type") == "tool_use" and block.get("name") == ARTIFACTS else None
        if title is None:
            left.append(_block(block))
        elif title not in changed:
            changed.append(title)
    text = message.get("text")
    fallback = PLACEHOLDER.sub("\n\n", text).strip() if isinstance(text, str) else ""
    return ("\n\n".join(texts) if texts else fallback).replace("\x00", ""), left, changed


def _block(block: dict[str, Any]) -> str:
    kind, name = str(block.get("type")), block.get("name")
    tool = name if isinstance(name, str) and name.strip() else "tool"
    return {"thinking": "thinking block", "tool_use": f"{tool} call", "tool_result": f"{tool} result"}.get(
        kind, f"{kind} block")


def _no_text(left: list[str]) -> str:
    return f"no text (only {counted(left)})" if left else "no text"


def _files(path: Path, where: str, message: dict[str, Any]) -> list[tuple[str, str | None]]:
    """(name, extracted text or None) of each file of the message: its attachments, then the files
    whose content the export does not hold (named in ``files`` and in no attachment)."""
    found: list[tuple[str, str | None]] = []
    for field in ("attachments", "files"):
        items = message.get(field)
        if items is None:
            continue
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise ImportFormatError(path, where, field, f"field {field} must be a list of objects")
        for item in items:
            name = item.get("file_name")
            name = " ".join(name.split())[:200] if isinstance(name, str) and visible(name) else PASTED
            text = item.get("extracted_content") if field == "attachments" else None
            if field == "attachments" or all(name != n for n, _ in found):
                found.append((name, text.replace("\x00", "") if isinstance(text, str) else None))
    return found


def _attachments(uuid: str, message: dict[str, Any], m: int, ts: str, files: list[tuple[str, str | None]],
                 where: str, report: Report) -> Iterator[dict[str, Any]]:
    """Each attachment's text as a doc artifact; a file whose text the export lacks said left out."""
    key = message.get("uuid") if isinstance(message.get("uuid"), str) and visible(message["uuid"]) else f"m{m}"
    for n, (name, text) in enumerate(files):
        why = "the export holds only its name, not its content" if text is None else unfit(text)
        if why:
            report.skip(f"{where}, file {name!r}", why)
            continue
        yield artifact_record(SOURCE, f"{uuid}/{key}/{n}"[:500], name, ts, text,  # type: ignore[arg-type]
                              {"tags": [], "source": SOURCE}, artifact_type="doc",
                              source_url=ADDRESS.format(uuid) if UUID.fullmatch(uuid) else None)


class Made:
    """The artifacts Claude made in one conversation (tool_use ``artifacts``: command create or rewrite
    with the whole content, update replacing old_str by new_str once), each as it was last: a doc
    artifact at the time of its last change, source id ``<conversation uuid>/artifact/<its id>/<version>``
    (16 hex characters of SHA-256 over that time and text: the conversation continued and the artifact
    changed, a newer export adds the new version beside the old instead of clashing with it)."""

    def __init__(self, uuid: str) -> None:
        self.uuid = uuid
        self.made: dict[str, dict[str, str]] = {}  # its id -> title, content, ts

    def change(self, given: object, ts: str, where: str, report: Report) -> str | None:
        """The title of the artifact the call makes or changes; None if it is not such a call."""
        ident = given.get("id") if isinstance(given, dict) else None
        if not isinstance(ident, str) or not visible(ident):
            return None
        held, command = self.made.get(ident), given.get("command")  # type: ignore[union-attr]
        title = given.get("title")  # type: ignore[union-attr]
        title = " ".join(title.split())[:500] if isinstance(title, str) and visible(title) else \
            held["title"] if held else ident
        content = given.get("content")  # type: ignore[union-attr]
        old, new = given.get("old_str"), given.get("new_str")  # type: ignore[union-attr]
        if command in ("create", "rewrite") and isinstance(content, str):
            self.made[ident] = {"title": title, "content": content.replace("\x00", ""), "ts": ts}
        elif command == "update" and held and isinstance(old, str) and old and isinstance(new, str) \
                and old in held["content"]:
            self.made[ident] = {"title": title, "content": held["content"].replace(old, new, 1), "ts": ts}
        else:
            report.skip(where, f"an artifacts call ({command!r} of {ident!r}) that could not be applied: the "
                               "artifact stays as it was before it")
        return title

    def records(self, here: str, report: Report) -> Iterator[dict[str, Any]]:
        for ident, held in self.made.items():
            if why := unfit(held["content"]):
                report.skip(f"{here}, artifact {ident!r}", why)
                continue
            version = digest(held["ts"], held["content"])[:16]  # a later change is another artifact, never a clash
            yield artifact_record(SOURCE, f"{self.uuid[:60]}/artifact/{ident[:400]}/{version}", held["title"],
                                  held["ts"], held["content"], {"tags": [], "source": SOURCE}, artifact_type="doc",
                                  source_url=ADDRESS.format(self.uuid) if UUID.fullmatch(self.uuid) else None)
