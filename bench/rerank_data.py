"""The learned rerank stage's data: real stores built once (over MCP, as the benches build them) and kept.

Three kinds of store under one folder (default /tmp/memtrove-rerank), each built by a real ``memtrove serve``
(SQLite + embedded Chroma + the local model) and kept, so a rerun only searches:
  - ``turns``: every LoCoMo conversation's turns (``history_append`` with the session's time, as bench/turns.py),
    and the caller's graph from them (``build_graph``, as the turns bench does);
  - ``facts/<conversation>``: its ``session_N_observation`` facts as memories (as bench/facts.py), one store each;
  - ``passages``: the passages set's documents (as bench/passages.py), with each chunk's text by its offsets.
Each store's labels (which record answers what) are written beside it as JSON.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import call, server
from bench.facts import facts_of
from bench.passages import DOCS, QUESTIONS, load_questions
from bench.turns import Conversation, load

ROOT = Path("/tmp/memtrove-rerank")
LOCOMO = Path("/work/shared/locomo")


async def build_turns(conversations: Sequence[Conversation], folder: Path, say: Any = print) -> dict[str, str]:
    """The turns store; returns turn id -> dia_id (evidence name)."""
    labels = folder / "turn-ids.json"
    if labels.is_file():
        return json.loads(labels.read_text(encoding="utf-8"))
    index_of: dict[str, str] = {}
    async with server(folder, {"MEMTROVE_TOOLSETS": "core,zapomni"}) as client:
        for conv in conversations:
            for index, (dia_id, speaker, text) in enumerate(conv.turns):
                index_of[f"{conv.conversation_id}_turn_{index}"] = dia_id
                role = "user" if speaker == conv.speakers[0] else "assistant"
                dated = {"ts": conv.times[index]} if index < len(conv.times) and conv.times[index] else {}
                await call(client, "history_append", conversation_id=conv.conversation_id, role=role,
                           content=f"{speaker}: {text}", turn_index=index, **dated)
            await call(client, "build_graph", kinds=["turn"], source=conv.conversation_id)
            say(f"turns: {conv.sample_id} stored, graph built")
    labels.write_text(json.dumps(index_of), encoding="utf-8")
    return index_of


async def build_facts(conv: Conversation, folder: Path, say: Any = print) -> dict[str, list[str]]:
    """One conversation's facts store; returns memory id -> the evidence turns it points at."""
    labels = folder / "fact-ids.json"
    if labels.is_file():
        return json.loads(labels.read_text(encoding="utf-8"))
    points: dict[str, set[str]] = {}
    async with server(folder) as client:
        for content, turns in facts_of(conv):
            memory = await call(client, "memory_store", content=content, type="fact", confidence=1.0,
                                conversation_id=conv.conversation_id)
            points.setdefault(memory["id"], set()).update(turns)
    found = {i: sorted(t) for i, t in points.items()}
    labels.write_text(json.dumps(found), encoding="utf-8")
    say(f"facts: {conv.sample_id} stored ({len(found)})")
    return found


async def build_passages(folder: Path, docs_dir: Path = DOCS, questions: Path = QUESTIONS,
                         say: Any = print) -> dict[str, Any]:
    """The passages store; returns {"doc_of": id -> document, "text_of": id -> the text it stands for}."""
    labels = folder / "passage-ids.json"
    if labels.is_file():
        return json.loads(labels.read_text(encoding="utf-8"))
    corpus, _ = load_questions(questions)
    doc_of: dict[str, str] = {}
    text_of: dict[str, str] = {}
    async with server(folder) as client:
        for name in corpus:
            text = (docs_dir / name).read_text(encoding="utf-8")
            stored = await call(client, "artifact_ingest", artifact_type="doc", source_system="python-docs",
                                source_id=f"library/{name}", title=name.removesuffix(".rst.txt"), content=text)
            doc_of[stored["artifact_id"]] = name
            text_of[stored["artifact_id"]] = text
            view = await call(client, "artifact_get", artifact_id=stored["artifact_id"], include_chunks=True)
            for chunk in view.get("chunks") or []:
                text_of[chunk["chunk_id"]] = text[chunk["start_char"]:chunk["end_char"]]
                doc_of[chunk["chunk_id"]] = name
    found = {"doc_of": doc_of, "text_of": text_of}
    labels.write_text(json.dumps(found), encoding="utf-8")
    say(f"passages: {len(corpus)} documents stored")
    return found


async def build_all(root: Path = ROOT, locomo: Path = LOCOMO) -> None:
    conversations = load(locomo, ())
    await build_turns(conversations, root / "turns")
    for conv in conversations:
        await build_facts(conv, root / "facts" / conv.sample_id)
    await build_passages(root / "passages")


if __name__ == "__main__":
    import anyio

    anyio.run(build_all)
