"""The LLM extractor (``llm``): an OpenAI or OpenAI-compatible chat endpoint reads passages and answers
with structured output (a JSON schema): entities, relations and observations per passage. Registered
only when a chat model is configured (MEMTROVE_EXTRACTOR_MODEL, with MEMTROVE_EXTRACTOR_BASE_URL and
MEMTROVE_EXTRACTOR_API_KEY, else OPENAI_BASE_URL and OPENAI_API_KEY).

Up to ``BATCH`` passages go in one request, each numbered; the answer names each passage's number.
An error of the endpoint (HTTP status, timeout, refused connection) or an answer that is not the JSON
asked for raises, naming the endpoint and what went wrong: the build records it against those records.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from domain.graph.extraction import (
    EVENT_KINDS, Extracted, Extractor, FoundEvent, FoundObservation, FoundRelation, Mention, Passage, excerpt,
)
from plugins.hookspecs import hookimpl

BATCH = 8
_NAME = {"type": "string"}
SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["passages"],
    "properties": {"passages": {"type": "array", "items": {
        "type": "object", "additionalProperties": False,
        "required": ["passage", "entities", "relations", "observations", "events"],
        "properties": {
            "passage": {"type": "integer"},
            "entities": {"type": "array", "items": {"type": "object", "additionalProperties": False,
                                                     "required": ["name", "type"],
                                                     "properties": {"name": _NAME, "type": _NAME}}},
            "relations": {"type": "array", "items": {"type": "object", "additionalProperties": False,
                                                      "required": ["source", "relation", "target", "evidence"],
                                                      "properties": {"source": _NAME, "relation": _NAME,
                                                                     "target": _NAME, "evidence": _NAME}}},
            "observations": {"type": "array", "items": {"type": "object", "additionalProperties": False,
                                                         "required": ["entity", "text"],
                                                         "properties": {"entity": _NAME, "text": _NAME}}},
            "events": {"type": "array", "items": {"type": "object", "additionalProperties": False,
                                                   "required": ["kind", "summary", "who", "date_text"],
                                                   "properties": {"kind": {"type": "string", "enum": list(EVENT_KINDS)},
                                                                  "summary": _NAME,
                                                                  "who": {"type": "array", "items": _NAME},
                                                                  "date_text": {"type": ["string", "null"]}}}}}}}},
}
PROMPT = ("Extract a knowledge graph from each numbered passage. Entities: people, organisations, places, "
          "events, works and things named in it, each with a short lowercase type (person, organization, place, "
          "event, ...); the speaker, when given, is who 'I' and 'my' refer to. Relations: facts between two of "
          "the passage's entities, the relation in snake_case active voice (works_at, lives_in, has_sister), "
          "evidence the sentence that says it. Observations: short facts about one entity. Events: decisions, "
          "actions (to be done) and milestones (done) it tells, a one-line summary, the entities taking part "
          "and the date as written (null if none). Answer for every passage by its number; empty lists when "
          "it names nothing.")


class LlmExtractor(Extractor):
    name = "llm"

    def __init__(self, model: str, base_url: str | None, api_key: str | None, timeout: float = 60.0,
                 client: Any = None) -> None:
        self.model = model
        self.version = f"llm-{model}-1"
        self.endpoint = base_url or "https://api.openai.com/v1"
        if client is None:
            from openai import OpenAI

            client = OpenAI(base_url=base_url, api_key=api_key or "none", timeout=timeout, max_retries=1)
        self._client = client

    def extract(self, passages: Sequence[Passage]) -> list[Extracted]:
        found: list[Extracted] = []
        for start in range(0, len(passages), BATCH):
            found += self._ask(passages[start:start + BATCH])
        return found

    def _ask(self, passages: Sequence[Passage]) -> list[Extracted]:
        import openai

        numbered = "\n\n".join(f"[{i}]" + (f" (speaker: {p.speaker})" if p.speaker else "") + f"\n{p.text}"
                               for i, p in enumerate(passages))
        try:
            answer = self._client.chat.completions.create(
                model=self.model, temperature=0,
                messages=[{"role": "system", "content": PROMPT}, {"role": "user", "content": numbered}],
                response_format={"type": "json_schema",
                                 "json_schema": {"name": "knowledge_graph", "strict": True, "schema": SCHEMA}})
        except openai.APIStatusError as exc:
            raise RuntimeError(f"LLM extractor at {self.endpoint}: HTTP {exc.status_code}: {_message(exc)}") from exc
        except openai.APITimeoutError as exc:
            raise RuntimeError(f"LLM extractor at {self.endpoint}: no answer in time") from exc
        except openai.APIConnectionError as exc:
            raise RuntimeError(f"LLM extractor at {self.endpoint}: cannot connect ({exc})") from exc
        try:
            text = answer.choices[0].message.content
            items = {int(item["passage"]): item for item in json.loads(text)["passages"]}
        except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:
            raise RuntimeError(f"LLM extractor at {self.endpoint}: the answer is not the JSON asked for "
                               f"({type(exc).__name__}: {exc})") from exc
        return [_extracted(items.get(i, {})) for i in range(len(passages))]


def _message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return str(getattr(exc, "message", exc))[:300]


def _clean(value: object) -> str:
    text = " ".join(str(value).split()) if isinstance(value, str) else ""
    return text if len(text) <= 200 else ""


def _extracted(item: Mapping[str, Any]) -> Extracted:
    types: dict[str, str] = {}
    for entity in item.get("entities", []):
        name, kind = _clean(entity.get("name")), _clean(entity.get("type")).lower()
        if name:
            types.setdefault(name, kind or "thing")
    relations = []
    for r in item.get("relations", []):
        source, kind, target = _clean(r.get("source")), _clean(r.get("relation")), _clean(r.get("target"))
        if source and kind and target and source != target:
            types.setdefault(source, "thing")
            types.setdefault(target, "thing")
            relations.append(FoundRelation(source, kind.replace(" ", "_"), target, excerpt(str(r.get("evidence", "")))))
    observations = [FoundObservation(name, " ".join(str(o.get("text", "")).split())[:2000])
                    for o in item.get("observations", []) if (name := _clean(o.get("entity"))) in types
                    and str(o.get("text", "")).strip()]
    events = []
    for e in item.get("events", []):
        summary, who = excerpt(str(e.get("summary", ""))), [_clean(w) for w in e.get("who", []) if _clean(w)]
        if e.get("kind") in EVENT_KINDS and summary.strip():
            for name in who:
                types.setdefault(name, "thing")
            date = e.get("date_text")
            events.append(FoundEvent(e["kind"], summary, tuple(dict.fromkeys(who)),
                                     str(date)[:100] if isinstance(date, str) and date.strip() else None))
    return Extracted(tuple(Mention(n, t) for n, t in types.items()), tuple(dict.fromkeys(relations)),
                     tuple(dict.fromkeys(observations)), tuple(dict.fromkeys(events)))


@hookimpl
def memtrove_register_extractors(register: Callable[[Extractor], None], options: Mapping[str, Any]) -> None:
    model = options.get("model")
    if model:
        register(LlmExtractor(model, options.get("base_url"), options.get("api_key"),
                              float(options.get("timeout") or 60.0)))
