"""The ChatGPT data export (``conversations.json``) as memtrove conversation turns, and what the chat
exports share (the array of conversations, a turn, a conversation's title); the readers behind
``read_foreign("claude" | "chatgpt", ...)`` in importers.py (Claude's in importers_claude.py).

Both files are one JSON array of conversations; a place is named by the line its conversation starts on,
the conversation's position in the array, and the message (its position, or its node id). A conversation's
name (Claude's name, ChatGPT's title) is its first turn, role system, ``Title: <name>``, at the time the
conversation began: memtrove's conversations have no title of their own.

- chatgpt: Settings > Data controls > Export. Each conversation has id (and conversation_id), title,
  create_time (epoch seconds), current_node and mapping {node id: {id, message, parent, children}};
  a message has author.role (user, assistant, system, tool), content {content_type, parts}, create_time,
  recipient and metadata (is_visually_hidden_from_conversation, is_user_system_message, attachments:
  the files uploaded with it, by name; their content is not in conversations.json). Taken from the
  export's own chat.html (getConversationMessages: current_node up the parent links, reversed; roles
  other than system; content_type text or multimodal_text; string parts and audio_transcription texts),
  quoted in public repositories, and mitkury/chatgpt-export-parser docs/chatgpt-data-export-format.md
  (branches left by edits and regenerations stay in mapping, off the current_node chain). Some exports
  give ``parts`` as one string rather than a list of them: it is the message's text.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from entrypoints.console.importers import (PRIVACY, TURN_CHARS, ImportFormatError, Report, decode, visible,
                                           when)
from entrypoints.console.jsonlines import JsonProblem, raw_decode

SPACE = re.compile(r"[ \t\n\r]*")
TITLE = "Title: "  # a title turn's text before the conversation's name
PARTS = {"image_asset_pointer": "image", "audio_asset_pointer": "audio recording",
         "real_time_user_audio_video_asset_pointer": "audio or video recording"}  # what a part left out is
REASONING = ("thoughts", "reasoning_recap")  # content types of the model's reasoning


def conversations(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each conversation of the array in ``path``, with where it is ("line 12: conversation 3")."""
    text = decode(path, path.read_bytes())
    pos = SPACE.match(text).end()  # type: ignore[union-attr]
    if not text.startswith("[", pos):
        raise ImportFormatError(path, "line 1", "conversations", "not a JSON array of conversations")
    pos, line, counted, n = SPACE.match(text, pos + 1).end(), 1, 0, 0  # type: ignore[union-attr]
    while not text.startswith("]", pos):
        line, counted = line + text.count("\n", counted, pos), pos
        where = f"line {line}: conversation {n}"
        try:
            value, end = raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise ImportFormatError(path, f"line {exc.lineno}", "conversations",
                                    f"the conversations are not JSON ({exc.msg}, column {exc.colno})") from None
        except JsonProblem as exc:
            field = "conversation" if exc.field == "record" else exc.field.split(".")[0]
            said = f"the conversation is {exc.problem}" if exc.field == "record" else exc.problem
            raise ImportFormatError(path, where, field, said) from None
        if not isinstance(value, dict):
            raise ImportFormatError(path, where, "conversation", "a conversation must be a JSON object")
        yield where, value
        pos, n = SPACE.match(text, end).end(), n + 1  # type: ignore[union-attr]
        if text.startswith(",", pos):
            pos = SPACE.match(text, pos + 1).end()  # type: ignore[union-attr]
        elif not text.startswith("]", pos):
            raise ImportFormatError(path, f"line {text.count(chr(10), 0, pos) + 1}", "conversations",
                                    "the array of conversations ends badly: expected , or ]")
    if text[pos + 1:].strip():
        raise ImportFormatError(path, f"line {text.count(chr(10), 0, pos) + 1}", "conversations",
                                "more after the array of conversations")


def turn(conversation_id: str, index: int, role: str, ts: str, content: str) -> dict[str, Any]:
    return {"kind": "turn", "conversation_id": conversation_id[:100], "turn_index": index, "role": role,
            "ts": ts, **PRIVACY, "content": content}


class Titled:
    """The turns of one conversation, numbered from 0, its title (if it has one) the first of them, at
    ``started`` (else at its first turn's time)."""

    def __init__(self, conversation_id: str, name: object, started: str | None) -> None:
        self.conversation_id, self.started, self.index = conversation_id, started, 0
        self.name = " ".join(name.split()) if isinstance(name, str) and visible(name) else None

    def turn(self, role: str, ts: str, content: str) -> Iterator[dict[str, Any]]:
        if self.index == 0 and self.name is not None and not too_long(TITLE + self.name):
            yield turn(self.conversation_id, 0, "system", self.started or ts, TITLE + self.name)
            self.index = 1
        yield turn(self.conversation_id, self.index, role, ts, content)
        self.index += 1


def is_title(record: dict[str, Any]) -> bool:
    """Whether the record is a conversation's title turn (made by Titled)."""
    return record.get("kind") == "turn" and record.get("turn_index") == 0 and record.get("role") == "system" \
        and str(record.get("content")).startswith(TITLE)


def text_field(path: Path, where: str, item: dict[str, Any], name: str) -> str:
    value = item.get(name)
    if not isinstance(value, str) or not visible(value):
        raise ImportFormatError(path, where, name, f"field {name} must be a non-empty string (got {value!r})")
    return value


def with_files(text: str, names: Iterable[str], made: Iterable[str] = ()) -> str:
    """A message's text, then a line ``[attached: <name>]`` for each file that came with it and one
    ``[artifact: <title>]`` for each artifact it made or changed (imported as artifacts of their own)."""
    said = [f"[attached: {name}]" for name in names] + [f"[artifact: {title}]" for title in made]
    return "\n\n".join(t for t in (text, "\n".join(said)) if t)


def counted(things: list[str]) -> str:
    """``1 thinking block, 2 web_search calls``: each kind of thing with how many, in order of appearance."""
    return ", ".join(f"{n} {thing}{'s' if n > 1 else ''}" for thing, n in Counter(things).items())


def too_long(text: str) -> str | None:
    return f"{len(text)} characters, over the {TURN_CHARS} a turn holds" if len(text) > TURN_CHARS else None


def read_chatgpt(path: Path, report: Report) -> Iterator[dict[str, Any]]:
    """The messages on the kept branch (current_node up to the root) as turns of "chatgpt-<id>"."""
    for here, conversation in conversations(path):
        ident = conversation.get("conversation_id") or conversation.get("id")
        conversation_id = f"chatgpt-{text_field(path, here, {'id': ident}, 'id')}"
        mapping, last = conversation.get("mapping"), conversation.get("create_time")
        if not isinstance(mapping, dict):
            raise ImportFormatError(path, here, "mapping", "field mapping must be an object of message nodes")
        branch = _branch(path, here, mapping, conversation.get("current_node"))
        off = sum(1 for k, v in mapping.items() if k not in branch and isinstance(v, dict) and v.get("message"))
        if off:
            report.skip(here, f"{off} message{'s' if off > 1 else ''} off the current branch (edited or "
                              "regenerated), not taken")
        started = when(last) if isinstance(last, (int, float)) else None
        titled = Titled(conversation_id, conversation.get("title"), started)
        for node_id, node in branch.items():
            message, where = node.get("message"), f"{here}, node {node_id}"
            if message is None:
                continue  # the root holds no message
            if not isinstance(message, dict):
                raise ImportFormatError(path, where, "message", "field message must be an object or null")
            last = message.get("create_time") if message.get("create_time") is not None else last  # else the last
            ts = when(last) if isinstance(last, (int, float)) else None
            if ts is None:
                raise ImportFormatError(path, where, "create_time", f"create_time is not seconds since 1970 ({last!r})")
            role = _role(message)
            if why := _hidden(message, role):
                report.skip(where, why)
                continue
            files = _attached(message)
            text, left = _parts(message, files)
            content = with_files(text, files.values())
            why = (f"no text (only {counted(left)})" if left else "no text") if not visible(content) \
                else too_long(content)
            if why:
                report.skip(where, why)
                continue
            yield from titled.turn(role, ts, content)
            if left or files:
                named = [counted(left)] if left else []
                named += [f"the content of {', '.join(files.values())}"] if files else []
                report.skip(where, f"left out of the turn: {'; '.join(named)} (the export keeps images, audio and "
                                   "files beside conversations.json, not in it)")


def _branch(path: Path, here: str, mapping: dict[str, Any], current: object) -> dict[str, dict[str, Any]]:
    """The nodes from the root down to ``current``, by id: the branch the user kept."""
    if not isinstance(current, str) or current not in mapping:
        raise ImportFormatError(path, here, "current_node", f"current_node {current!r} is not a node of mapping")
    chain: dict[str, dict[str, Any]] = {}
    node_id: object = current
    while node_id is not None:
        node = mapping.get(node_id) if isinstance(node_id, str) else None
        if not isinstance(node, dict) or node_id in chain:
            raise ImportFormatError(path, here, "parent", f"the parent node {node_id!r} is missing from mapping"
                                    if not isinstance(node, dict) else f"the parent links loop: node {node_id!r} is "
                                    "its own ancestor")
        chain[node_id] = node  # type: ignore[index]
        node_id = node.get("parent")
    return dict(reversed(chain.items()))


def _role(message: dict[str, Any]) -> str:
    author = message.get("author")
    return str(author.get("role")) if isinstance(author, dict) else "unknown"


def _hidden(message: dict[str, Any], role: str) -> str | None:
    """Why the export's own viewer would not show the message as a user or assistant turn, if so."""
    meta = message.get("metadata") if isinstance(message.get("metadata"), dict) else {}
    content = message.get("content") if isinstance(message.get("content"), dict) else {}
    recipient = message.get("recipient", "all")
    if meta.get("is_user_system_message"):
        return "custom instructions, not a turn"
    if role not in ("user", "assistant"):
        return f"a {role} message"
    if meta.get("is_visually_hidden_from_conversation"):
        return "hidden from the conversation"
    if recipient not in (None, "all"):
        return f"addressed to {recipient} (a tool call)"
    if content.get("content_type") not in ("text", "multimodal_text"):
        kind = content.get("content_type")
        return f"content type {kind}, not text" + (" (the model's reasoning)" if kind in REASONING else "")
    return None


def _parts(message: dict[str, Any], files: dict[str, str]) -> tuple[str, list[str]]:
    """The text parts (and voice transcriptions) of the message, one after another, and what its other
    parts are (images, recordings: left out; not those of ``files``, named already). ``parts`` given as one
    string is that text."""
    content = message.get("content") if isinstance(message.get("content"), dict) else {}
    parts = content.get("parts")
    parts = [parts] if isinstance(parts, str) else parts if isinstance(parts, list) else []
    texts: list[str] = []
    left: list[str] = []
    for part in parts:
        kind = part.get("content_type") if isinstance(part, dict) else None
        if isinstance(part, str) or (kind == "audio_transcription" and isinstance(part.get("text"), str)):
            texts.append(part if isinstance(part, str) else part["text"])
        elif isinstance(part, dict) and any(str(part.get("asset_pointer")).endswith(f"/{i}") for i in files):
            continue  # an uploaded file's part: the file is named
        elif part is not None:
            left.append(PARTS.get(kind, f"{kind if isinstance(kind, str) else type(part).__name__} part"))
    return "\n".join(t for t in texts if visible(t)).replace("\x00", ""), left


def _attached(message: dict[str, Any]) -> dict[str, str]:
    """The files uploaded with the message (metadata.attachments): their names by id."""
    meta = message.get("metadata") if isinstance(message.get("metadata"), dict) else {}
    items = meta.get("attachments") if isinstance(meta.get("attachments"), list) else []
    return {str(i.get("id")): " ".join(i["name"].split())[:200] for i in items
            if isinstance(i, dict) and isinstance(i.get("name"), str) and visible(i["name"])}
