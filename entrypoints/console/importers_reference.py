"""The MCP reference memory server's file as records of memtrove's export format: its knowledge graph.

@modelcontextprotocol/server-memory's memory.jsonl (memory.json before 2025.8) per
github.com/modelcontextprotocol/servers src/memory/index.ts @76d64c82 (loadGraph, saveGraph,
createRelations, ensureMemoryFilePath) and its issues #3074, #3144 (lines with extra properties).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from entrypoints.console.importers import MEMORY_CHARS, ImportFormatError, Report, decode, visible
from entrypoints.console.jsonlines import MAX_LINE, JsonProblem, LineTooLong, lines, loads

KEYS = {"entity": ("name", "entityType"), "relation": ("from", "relationType", "to")}  # what loadGraph keeps


def read_reference(path: Path, report: Report) -> Iterator[dict[str, Any]]:
    """memory.jsonl into memtrove's knowledge graph: its entities (with their observations), then its
    relations. Lines naming an entity again add its observations to the first (as the file's reader
    would find it by name); a relation given twice is taken once."""
    entities: dict[str, dict[str, Any]] = {}
    relations: dict[tuple[str, str, str], int] = {}
    for number, line in _lines(path):
        if not line.strip():
            continue  # the server skips blank lines too
        where = f"line {number}"
        try:
            item = loads(line)
        except JsonProblem as exc:
            if exc.field == "record":
                raise ImportFormatError(path, where, "line", f"the line is {exc.problem}") from None
            raise ImportFormatError(path, where, exc.field.split(".")[0], exc.problem) from None
        if not isinstance(item, dict):
            raise ImportFormatError(path, where, "type", "the line is not a JSON object with a type")
        kind = item.get("type")
        keys = KEYS.get(kind) if isinstance(kind, str) else None
        if keys is None:
            report.skip(where, f"type {kind!r} is neither entity nor relation (the server ignores the line)")
            continue
        for bad in (k for k in keys if not isinstance(item.get(k), str) or not visible(item[k])):
            raise ImportFormatError(path, where, bad, f"field {bad} must be a non-empty string (got {item.get(bad)!r})")
        if kind == "relation":
            triple = (item["from"], item["to"], item["relationType"])
            if triple in relations:
                report.skip(where, f"the same relation as line {relations[triple]}")
            else:
                relations[triple] = number
            continue
        said = item.get("observations", [])
        if not isinstance(said, list) or not all(isinstance(o, str) for o in said):
            raise ImportFormatError(path, where, "observations", "field observations must be a list of strings")
        name = item["name"]
        held = entities.setdefault(name, {"kind": "entity", "name": name, "entity_type": item["entityType"],
                                          "observations": [], "line": number, "seen": {}})
        if held["line"] != number and held["entity_type"] != item["entityType"]:
            report.skip(where, f"type {item['entityType']!r} of {name!r}: line {held['line']} gave it "
                               f"{held['entity_type']!r} (its observations are kept)")
        for text in said:
            seen = held["seen"].get(text)
            why = (f"an empty observation of {name}" if not visible(text) else
                   f"an observation of {name} over {MEMORY_CHARS} characters, more than memtrove keeps"
                   if len(text) > MEMORY_CHARS else f"the same observation as line {seen}" if seen else None)
            if why:
                report.skip(where, why)
                continue
            held["seen"][text] = number
            held["observations"].append(text)
    for entity in entities.values():
        yield {k: v for k, v in entity.items() if k not in ("line", "seen")}
    for source, target, relation_type in relations:
        yield {"kind": "relation", "from": source, "to": target, "relation_type": relation_type}




def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(number, text) of each line, read up to jsonlines.MAX_LINE bytes (a longer one is refused unread)."""
    offset = 0
    with open(path, "rb") as stream:
        try:
            for number, raw in lines(stream, MAX_LINE):
                try:
                    yield number, decode(path, raw) if number == 1 else raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise ImportFormatError(path, f"line {number}", "content",
                                            f"content is not UTF-8 (byte {offset + exc.start})") from None
                offset += len(raw) + 1
        except LineTooLong as exc:
            raise ImportFormatError(path, f"line {exc.number}", "line",
                                    f"the line is over {MAX_LINE:,} bytes, longer than any line the server writes: "
                                    "it was not read further") from None
