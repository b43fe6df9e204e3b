"""The Claude.ai and ChatGPT data exports (``conversations.json``) as memtrove conversation turns; the
readers behind ``read_foreign("claude" | "chatgpt", ...)`` in importers.py.

Both files are one JSON array of conversations; a place is named by the line its conversation starts on,
the conversation's position in the array, and the message (its position, or its node id).

- claude: Settings > Privacy > Export data. Each conversation has uuid, name, created_at and
  chat_messages, in order: uuid, sender ("human" or "assistant"), text, content (blocks of type text,
  thinking, tool_use, tool_result, each with start/stop timestamps), created_at ("...Z", microseconds),
  attachments, files, and in newer exports parent_message_uuid. Taken from exports quoted in public
  repositories: echomine's "Research: Claude Export Adapter" (feature 004, from a real
  data/anthropic/conversations.json, 2025-12), a JSON schema "Claude.ai conversations.json Export Format",
  and verbatim message dumps (2026-03) showing that ``text`` runs every block together, thinking
  included, with "This block is not supported on your current device yet." fenced in place of each tool
  block. So a turn is the message's text blocks joined; ``text`` (placeholders cut) only if it has none.
- chatgpt: Settings > Data controls > Export. Each conversation has id (and conversation_id), title,
  create_time (epoch seconds), current_node and mapping {node id: {id, message, parent, children}};
  a message has author.role (user, assistant, system, tool), content {content_type, parts}, create_time,
  recipient and metadata (is_visually_hidden_from_conversation, is_user_system_message). Taken from the
  export's own chat.html (getConversationMessages: current_node up the parent links, reversed; roles
  other than system; content_type text or multimodal_text; string parts and audio_transcription texts),
  quoted in public repositories, and mitkury/chatgpt-export-parser docs/chatgpt-data-export-format.md
  (branches left by edits and regenerations stay in mapping, off the current_node chain).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from entrypoints.console.importers import (PRIVACY, TURN_CHARS, ImportFormatError, Report, decode, visible,
                                           when)
from entrypoints.console.jsonlines import JsonProblem, raw_decode

SPACE = re.compile(r"[ \t\n\r]*")
PLACEHOLDER = re.compile(r"\n*```\nThis block is not supported on your current device yet\.\n```\n*")
CLAUDE_ROLES = {"human": "user", "assistant": "assistant"}


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


def _text_field(path: Path, where: str, item: dict[str, Any], name: str) -> str:
    value = item.get(name)
    if not isinstance(value, str) or not visible(value):
        raise ImportFormatError(path, where, name, f"field {name} must be a non-empty string (got {value!r})")
    return value


def read_claude(path: Path, report: Report) -> Iterator[dict[str, Any]]:
    """Each message with text as a turn of conversation "claude-<uuid>", in the export's order."""
    for here, conversation in conversations(path):
        conversation_id = f"claude-{_text_field(path, here, conversation, 'uuid')}"
        messages, last = conversation.get("chat_messages"), conversation.get("created_at")
        if not isinstance(messages, list):
            raise ImportFormatError(path, here, "chat_messages", "field chat_messages must be a list")
        if not messages:
            report.skip(here, "a conversation without messages")
        index = 0
        for m, message in enumerate(messages):
            where = f"{here}, message {m}"
            if not isinstance(message, dict):
                raise ImportFormatError(path, where, "chat_messages", "each of chat_messages must be a JSON object")
            last = message.get("created_at") if message.get("created_at") is not None else last  # else the last
            ts = when(last)
            if ts is None:
                raise ImportFormatError(path, where, "created_at", f"created_at is not an ISO-8601 time ({last!r})")
            role, text = CLAUDE_ROLES.get(str(message.get("sender"))), _claude_text(message)
            why = f"sender {message.get('sender')!r} is neither human nor assistant" if role is None else \
                _no_text(message) if not visible(text) else too_long(text)
            if why:
                report.skip(where, why)
                continue
            yield turn(conversation_id, index, role, ts, text)  # type: ignore[arg-type]
            index += 1


def _claude_text(message: dict[str, Any]) -> str:
    blocks = message.get("content")
    texts = [b["text"] for b in blocks if isinstance(b, dict) and b.get("type") == "text"
             and isinstance(b.get("text"), str) and visible(b["text"])] if isinstance(blocks, list) else []
    text = message.get("text")
    fallback = PLACEHOLDER.sub("\n\n", text).strip() if isinstance(text, str) else ""
    return ("\n\n".join(texts) if texts else fallback).replace("\x00", "")


def _no_text(message: dict[str, Any]) -> str:
    blocks = message.get("content") if isinstance(message.get("content"), list) else []
    kinds = sorted({str(b.get("type")) for b in blocks if isinstance(b, dict)} - {"text"})
    kinds += ["attachments"] if message.get("attachments") or message.get("files") else []
    return "no text" + (f" (only {', '.join(kinds)})" if kinds else "")


def too_long(text: str) -> str | None:
    return f"{len(text)} characters, over the {TURN_CHARS} a turn holds" if len(text) > TURN_CHARS else None


def read_chatgpt(path: Path, report: Report) -> Iterator[dict[str, Any]]:
    """The messages on the kept branch (current_node up to the root) as turns of "chatgpt-<id>"."""
    for here, conversation in conversations(path):
        ident = conversation.get("conversation_id") or conversation.get("id")
        conversation_id = f"chatgpt-{_text_field(path, here, {'id': ident}, 'id')}"
        mapping, last = conversation.get("mapping"), conversation.get("create_time")
        if not isinstance(mapping, dict):
            raise ImportFormatError(path, here, "mapping", "field mapping must be an object of message nodes")
        branch = _branch(path, here, mapping, conversation.get("current_node"))
        off = sum(1 for k, v in mapping.items() if k not in branch and isinstance(v, dict) and v.get("message"))
        if off:
            report.skip(here, f"{off} message{'s' if off > 1 else ''} off the current branch (edited or "
                              "regenerated), not taken")
        index = 0
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
            role, text = _role(message), _parts(message)
            why = _hidden(message, role) or (None if visible(text) else "no text (e.g. only an image or a file)") \
                or too_long(text)
            if why:
                report.skip(where, why)
                continue
            yield turn(conversation_id, index, role, ts, text)
            index += 1


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
        return f"content type {content.get('content_type')}, not text"
    return None


def _parts(message: dict[str, Any]) -> str:
    """The string parts (and voice transcriptions) of the message, one after another; images left out."""
    content = message.get("content") if isinstance(message.get("content"), dict) else {}
    parts = content.get("parts") if isinstance(content.get("parts"), list) else []
    texts = [p if isinstance(p, str) else p.get("text") for p in parts if isinstance(p, str) or (
        isinstance(p, dict) and p.get("content_type") == "audio_transcription" and isinstance(p.get("text"), str))]
    return "\n".join(t for t in texts if visible(t)).replace("\x00", "")
