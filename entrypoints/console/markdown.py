"""``memtrove export --format markdown``: export records as one Markdown file each, for people and other
tools: ``memories/<id>.md``, ``conversations/<id>.md`` (every turn, in order), ``artifacts/<source
system>/<name>.md``; front matter holds the record's fields (values as JSON), then the text."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from domain.errors import ValidationError

UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(text: str, keep: int = 60) -> str:
    """A file name from any text: its safe characters, and a short hash whenever anything was changed."""
    cleaned = UNSAFE.sub("-", text).strip("-.")[:keep] or "item"
    return cleaned if cleaned == text else f"{cleaned}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def front_matter(fields: dict[str, Any]) -> str:
    lines = [f"{key}: {json.dumps(value, ensure_ascii=False)}" for key, value in fields.items() if value is not None]
    return "---\n" + "\n".join(lines) + "\n---\n\n"


class MarkdownFolder:
    def __init__(self, root: Path) -> None:
        if root.exists() and (not root.is_dir() or any(root.iterdir())):
            raise ValidationError("PATH", f"{root} must be a new or empty folder for a Markdown export")
        root.mkdir(parents=True, exist_ok=True)
        self.root, self.files = root, 0
        self._conversation: tuple[str, Any] | None = None  # the conversation file being written
        self._relations: list[str] = []

    def add(self, record: dict[str, Any]) -> None:
        fields = {k: v for k, v in record.items() if k != "content"}
        if record["kind"] == "turn":
            self._turn(record)
            return
        if record["kind"] == "relation":  # all of them in graph/relations.md, written at the end
            self._relations.append(f"- {record['from']} --{record['relation_type']}--> {record['to']}")
            return
        if record["kind"] == "entity":
            text = "\n".join(f"- {o}" for o in record["observations"])
            self._write(self.root / "graph" / "entities" / f"{safe_name(record['name'])}.md",
                        front_matter({k: v for k, v in record.items() if k != "observations"}) + text + "\n")
            return
        if record["kind"] == "memory":
            path = self.root / "memories" / f"{record['id']}.md"
        elif record["kind"] == "document":  # one file per version: documents/<project>/<key or item>/v<n>.md
            name = record.get("canonical_key") or record["item_id"]
            path = (self.root / "documents" / safe_name(record["project"]) / safe_name(str(name))
                    / f"v{record['version_num']}.md")
        else:
            name = record.get("source_id") or record.get("title") or record["id"]
            path = self.root / "artifacts" / safe_name(record["source_system"]) / f"{safe_name(str(name))}.md"
            if path.exists():  # the same source id of another owner's: both kept
                path = path.with_name(f"{path.stem}-{record['id'][4:16]}.md")
        self._write(path, front_matter(fields) + record["content"].rstrip("\n") + "\n")

    def _turn(self, record: dict[str, Any]) -> None:
        conversation = record["conversation_id"]
        if self._conversation is None or self._conversation[0] != conversation:
            self.close()
            path = self.root / "conversations" / f"{safe_name(conversation)}.md"
            if path.exists():  # two ids one file name on a case-insensitive file system: both kept
                path = path.with_name(f"{path.stem}-{hashlib.sha256(conversation.encode()).hexdigest()[:8]}.md")
            path.parent.mkdir(parents=True, exist_ok=True)
            out = open(path, "w", encoding="utf-8", newline="\n")
            out.write(front_matter({"kind": "conversation", "conversation_id": conversation}))
            self._conversation = (conversation, out)
            self.files += 1
        turn = {k: v for k, v in record.items() if k not in ("kind", "conversation_id", "content")}
        out = self._conversation[1]
        out.write(f"## {record['turn_index']} {record['role']} ({record['ts']})\n\n<!-- {json.dumps(turn)} -->\n\n"
                  f"{record['content'].rstrip()}\n\n")

    def _write(self, path: Path, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
        self.files += 1

    def close(self) -> None:
        if self._conversation is not None:
            self._conversation[1].close()
            self._conversation = None
        if self._relations:
            self._write(self.root / "graph" / "relations.md", "\n".join(self._relations) + "\n")
            self._relations = []
