"""The artifact end-to-end scenario every transport must pass (artifact_*, hybrid_search).

Plain async functions taking a connected ``mcp.Client`` and the ``Corpus`` that ``seed`` ingested.
A module runs them in order against one server (one data directory). Every check looks at items it
(or ``seed``) created and compares relative to what was there before, never to absolute totals.

The documents are small on purpose: the local profile embeds ~10 chunks a second on a 2-core box,
and the whole module ingests fewer than ~30 chunks.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from tests.e2e.scenario import call_ok, ok, text_of

ARTIFACT_TOOLS = {"artifact_ingest", "artifact_search", "artifact_get", "artifact_delete", "hybrid_search"}
ARTIFACT_ID = re.compile(r"^art_[0-9a-f]{32}$")
UTC_TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z$")
BOUNDARY = "[CHUNK BOUNDARY]"
ELLIPSIS = "…"
LISTED_CHUNK_IDS = 3  # artifact_ingest's stored_ids: the artifact and its first chunk ids
DEFAULT_WEIGHTS = {"lexical": 0.55, "semantic": 0.3, "contextual": 0.1, "exact": 0.1}  # the default profile, "recall"
DEFAULT_K = 10


SPEC_DEFAULT_WEIGHTS, SPEC_K = {"lexical": 0.4, "semantic": 0.5, "exact": 0.1}, 60  # spec 004's "default" profile


def check_fused_score(r: dict[str, Any], weights: dict[str, float] = DEFAULT_WEIGHTS, k: int = DEFAULT_K,
                      reranked: bool = True) -> None:
    """A hit names the ranks of the signals that found it, and its score is on their weighted RRF's scale.

    Without the rerank stage (spec 004's profiles) the score is exactly the weighted RRF of its own ranks;
    with it (memtrove's default profile) a hit the stage moved shows the fused score of the place it took,
    so scores still fall down a page."""
    assert r["signals"] and set(r["signals"]) <= set(weights), r
    assert 0 < r["score"] <= sum(weights.values()) / (k + 1), r
    if not reranked:
        expected = sum(weights[s] / (k + rank) for s, rank in r["signals"].items())
        assert abs(r["score"] - expected) < 2e-6, r
    assert (r["similarity"] is not None) == ("semantic" in r["signals"]), r


# What "searched" / "collections" call the two artifact collections, and the optional ones.
WHOLE, CHUNKS, MEMORY, HISTORY = "artifacts", "artifact_chunks", "memory", "history"  # the spec's names
ENTITIES = "entities"  # the graph tools' entities, searched with include_memory
LOCAL_PROFILE = {"embedding_provider": "local", "embedding_model": "all-MiniLM-L6-v2", "embedding_dimensions": 384}
SINGLE_PIECE_MAX_TOKENS = 200  # the local profile: artifacts of at most this many cl100k tokens stay whole
CHUNK_TARGET_TOKENS = 200
SEARCH_ALL = 50  # the largest limit; the module holds fewer artifacts, so a search with it returns every one


def chunk_id_pattern(artifact_id: str, index: int) -> re.Pattern[str]:
    return re.compile(rf"^{re.escape(artifact_id)}::chunk::{index:03d}::[0-9a-f]{{8}}$")


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# ------------------------------------------------------------------------------------- documents

# A handbook of unrelated paragraphs (~1,100 cl100k tokens: 6 chunks) with one planted fact.
HANDBOOK_PARAGRAPHS = [
    "Welcome to the Northwind operations handbook. This document collects the practical rules that keep our "
    "offices, warehouses and remote teams running smoothly. It is revised every quarter by the operations "
    "group, and every employee is expected to read the sections that apply to their role before their first "
    "week is over.",
    "Travel requests must be submitted at least ten working days before departure. Economy class is the default "
    "for flights shorter than six hours; longer flights may be booked in premium economy with the approval of a "
    "department head. Hotel bookings go through the travel desk so that the negotiated corporate rates apply.",
    "Expense reports are filed monthly through the finance portal. Every receipt above twenty euros needs a "
    "scanned copy, and meals with clients must list the names of all attendees. Reports submitted more than "
    "sixty days after the expense are reimbursed only with written approval from the controller.",
    "Security badges are personal and must be worn visibly inside every building. A lost badge is reported to "
    "the front desk the same day, which deactivates it within the hour. Visitors sign in at reception, receive "
    "a temporary pass and are accompanied by their host at all times.",
    "The parking garage under the Leipzig office has forty spaces, twelve of them with chargers for electric "
    "cars. Spaces are assigned weekly by lottery; employees who cycle to work can use the locked bicycle room "
    "and the showers on the ground floor.",
    "New laptops are ordered through the IT service catalogue and arrive preconfigured with disk encryption, "
    "the password manager and the endpoint protection agent. Software outside the approved list requires a "
    "ticket with a short justification and is reviewed by the security team within three working days.",
    "Our cafeteria serves breakfast from seven until nine and lunch from half past eleven until two. A "
    "vegetarian dish is offered every day, and allergens are labelled on the menu board next to each meal. "
    "Feedback about the food can be left on the cards at the cashier.",
    "Facilities update for the northern region: after the winter storms the old backup generator at the "
    "Tromsø cold-storage warehouse was decommissioned, and a new 400 kW diesel standby unit from Caterpillar "
    "was installed there on 14 February 2025 by the contractor Nordkraft Service.",
    "Meeting rooms are booked in the shared calendar. Bookings longer than four hours need a reason, and rooms "
    "left unused for fifteen minutes after the start are released automatically. Please leave the whiteboards "
    "clean and switch off the projector when you are done.",
    "The annual performance review runs from October to December. Each employee writes a short self-assessment, "
    "collects feedback from two peers and meets their manager to agree on goals for the coming year. Salary "
    "adjustments take effect on the first of April.",
    "Hybrid work is the norm: teams agree on at least two shared office days per week. Working from another "
    "country for more than twenty days a year requires a tax check by human resources before the trip, because "
    "of social security and permanent establishment rules.",
    "Waste is separated into paper, plastics, glass, organic and residual bins on every floor. Old electronics "
    "go back to the IT depot so that the disks can be wiped and the devices recycled by a certified partner.",
    "In case of fire, leave the building by the nearest marked exit, do not use the elevators and gather at "
    "the assembly point in the courtyard. Floor wardens check that every room is empty and report to the "
    "incident lead wearing the orange vest.",
    "Questions about this handbook go to the operations mailbox. Suggestions for improvements are welcome and "
    "are collected in the quarterly revision, which is announced on the intranet together with a summary of "
    "what changed.",
]
HANDBOOK = "\n\n".join(HANDBOOK_PARAGRAPHS) + "\n"
PLANTED_FACT = ("a new 400 kW diesel standby unit from Caterpillar was installed there on 14 February 2025 by the "
                "contractor Nordkraft Service")
PLANTED_QUERY = "when did the Tromsø site get its replacement emergency power generator?"
assert PLANTED_FACT in HANDBOOK

# Unicode that a careless transport or store would alter: emoji (ZWJ sequences, flags, skin tones), CJK,
# combining marks (NFD, not NFC), right-to-left text, CRLF and lone CR line ends, tabs, trailing and
# non-breaking spaces, a zero-width joiner and a BOM-like character in the middle.
UNICODE_NOTE = (
    "Team offsite ✈️ 🇯🇵 — notes\r\n"
    "Attendees: Zoë, José, Łukasz, 山田太郎, محمد, 👩‍👩‍👧‍👦 family table\t\r\n"
    "Decisions:  \r\n"
    "  • Cafe\u0301 budget (NFD: e + U+0301) stays at ¥12,000 per head 👍🏽   \r\n"
    "  • 会議は午前九時に始まります。日本語のメモも残します。\r\n"
    "  • Ünïcödé ﬁ ligature, non\u00a0breaking space, zero\u200dwidth joiner, \ufeffinner BOM\r"
    "lone CR above, trailing spaces here →   \n"
    "End of notes 🏁  "
)
UNICODE_LINES = [
    "Kapitel {n}: Die Überprüfung der Lieferkette 📦 — Straße Nº{n}\r\n",
    "第{n}章：供应链审查。仓库位于东京都港区，负责人是山田さん。\r\n",
    "Ligne {n} : café, crème brûlée, naïve façade\u0301 (combining acute), 🧑🏿‍💻 au travail.\t \r\n",
    "שורה {n}: טקסט מימין לשמאל · Строка {n}: проверка поставок · 🇧🇷🇳🇴🏳️‍🌈\r\n",
]
UNICODE_DOC = "".join(line.format(n=n) for n in range(1, 5) for line in UNICODE_LINES) + "Ende.   \r\n\r\n"


# The scenario stores items up to highly_sensitive: its servers run as an owner cleared for them
# (MEMTROVE_LOCAL_CLEARANCE); the default clearance, sensitive, is tested with the access rule.
OWNER_ENV = {"MEMTROVE_LOCAL_CLEARANCE": "highly_sensitive"}


@dataclass(frozen=True)
class Member:
    """One small artifact of the filter family: everything about a harbour lighthouse renovation."""

    key: str
    artifact_type: str
    source_system: str
    sensitivity: str
    visibility_scope: str
    ts: str | None
    ts_utc: str | None  # what the server must report
    content: str
    retention_policy: str = "forever"
    title: str | None = None
    author: str | None = None
    participants: tuple[str, ...] | None = None
    source_url: str | None = None

    def arguments(self, run: str) -> dict[str, Any]:
        args: dict[str, Any] = {
            "artifact_type": self.artifact_type, "source_system": self.source_system, "content": self.content,
            "source_id": f"{run}-{self.key}", "sensitivity": self.sensitivity,
            "visibility_scope": self.visibility_scope, "retention_policy": self.retention_policy,
        }
        for name in ("ts", "title", "author", "source_url"):
            if getattr(self, name) is not None:
                args[name] = getattr(self, name)
        if self.participants is not None:
            args["participants"] = list(self.participants)
        return args


FAMILY = [
    Member("kickoff", "email", "gmail", "normal", "me", "2023-02-01T09:00:00Z", "2023-02-01T09:00:00Z",
           "Kickoff for the harbour lighthouse renovation: the lantern room glass will be replaced and the "
           "tower repainted white and red before the summer season.",
           title="Lighthouse renovation kickoff", author="ines@harbour.example",
           participants=("ines@harbour.example", "tom@harbour.example"),
           source_url="https://mail.example.com/msg/lighthouse-kickoff"),
    Member("budget", "doc", "drive", "sensitive", "team", "2024-01-01T00:00:00Z", "2024-01-01T00:00:00Z",
           "Lighthouse renovation budget: scaffolding 48,000 euros, lantern glass 22,000 euros, paint and "
           "corrosion treatment 15,500 euros, contingency ten percent.",
           # (1y from 2024 has run out: retention is enforced, test_principals_http checks an expired item)
           retention_policy="custom", title="Renovation budget v3", author="Marta Kowalska",
           source_url="https://drive.example.com/d/lighthouse-budget"),
    Member("standup", "chat", "slack", "highly_sensitive", "org", "2024-06-15T12:00:00+02:00",
           "2024-06-15T10:00:00Z",
           "Standup in #lighthouse: the scaffolding crew found rust under the gallery railing of the lighthouse; "
           "the structural engineer will inspect it on Thursday.",
           retention_policy="until_resolved", participants=("tom", "marta", "lee")),
    Member("call", "transcript", "zoom", "normal", "custom", "2024-12-31T23:59:59Z", "2024-12-31T23:59:59Z",
           "Call transcript with the heritage office about the lighthouse: they approved the original red "
           "colour for the tower and asked for photos of the old Fresnel lens before it is moved.",
           retention_policy="custom", title="Heritage office call"),
    Member("reminder", "note", "manual", "sensitive", "me", "2025-03-01T08:30:00Z", "2025-03-01T08:30:00Z",
           "Personal note: order the replacement bulbs for the lighthouse lantern and check the warranty of the "
           "new rotating motor."),
    Member("invoice", "email", "gmail", "normal", "team", "2025-07-04T16:45:00.250-04:00",
           "2025-07-04T20:45:00.250000Z",
           "Invoice from the painters for the lighthouse tower: two coats of marine paint on the whole "
           "exterior, payable within thirty days.",
           title="Invoice LH-2025-07", author="billing@painters.example"),
    Member("spec", "doc", "confluence", "highly_sensitive", "me", "2022-11-11T11:11:11Z", "2022-11-11T11:11:11Z",
           "Technical specification of the lighthouse lantern: LED array, 18 nautical mile range, one white flash "
           "every ten seconds, backup battery for twelve hours.",
           title="Lantern specification", source_url="https://wiki.example.com/lighthouse/lantern"),
    Member("thread", "chat", "slack", "normal", "org", None, None,
           "Thread in #lighthouse: the renovation finished two days early and the reopening party is on the pier "
           "next Saturday."),
]
FAMILY_QUERY = "harbour lighthouse renovation"


def crowd_document() -> str:
    """~1,350 tokens (8 chunks), every sentence about the same lighthouse logbook."""
    sentences = []
    for day in range(1, 29):
        sentences.append(
            f"Day {day} of the keeper's logbook at Skerry Point lighthouse: the keeper wound the clockwork, "
            f"trimmed the lamp wick and cleaned the lens of the Skerry Point light before dusk."
        )
    return " ".join(sentences)


OTHER_CROWD_DOCUMENT = " ".join(
    f"Recipe card {n}: knead the sourdough for {n + 5} minutes, let it rest overnight in the fridge, then bake "
    f"at 240 degrees with steam for the first twenty minutes."
    for n in range(1, 9)
)  # ~300 tokens: 2 chunks, nothing about lighthouses
CROWD_QUERY = "Skerry Point lighthouse keeper logbook lamp and lens"


def replaced_versions() -> tuple[str, str, str]:
    """Three versions of one source: chunked (2), chunked (3, all different), small (whole)."""
    first = " ".join(
        f"Draft {n} of the vendor contract with Blue Fjord Logistics: the old pallet rate of {90 + n} kroner "
        f"applies to the Bergen route." for n in range(1, 13))
    second = " ".join(
        f"Final clause {n} of the agreement with Blue Fjord Logistics: refrigerated transport to Stavanger "
        f"costs {140 + n} kroner per pallet, invoiced monthly, with penalties for late delivery." for n in range(1, 14))
    third = "Blue Fjord Logistics contract terminated by mutual agreement; no rates apply any more."
    return first, second, third


OLD_ONLY_QUERY = "old pallet rate for the Bergen route in the draft contract"


def deletable_document() -> str:
    return " ".join(
        f"Incident {n} in the Zephyr payment gateway: card authorisations timed out for {n * 3} minutes after "
        f"the certificate rotation on the load balancer." for n in range(1, 11))  # ~250 tokens: 2 chunks


DELETE_QUERY = "Zephyr payment gateway card authorisation timeouts after certificate rotation"


# ---------------------------------------------------------------------------------------- helpers

def error_of(result: Any) -> dict[str, Any]:
    assert result.is_error, f"expected an error, got {result.structured_content!r}"
    error = (result.structured_content or {}).get("error")
    assert isinstance(error, dict), f"no structured error: {result.structured_content!r} {text_of(result)!r}"
    return error


async def ingest(client: Any, **arguments: Any) -> dict[str, Any]:
    return await call_ok(client, "artifact_ingest", arguments)


async def get(client: Any, artifact_id: str, **flags: Any) -> dict[str, Any]:
    return await call_ok(client, "artifact_get", {"artifact_id": artifact_id, **flags})


async def artifact_search(client: Any, query: str, **options: Any) -> dict[str, Any]:
    found = await call_ok(client, "artifact_search", {"query": query, **options})
    assert found["count"] == len(found["results"]), found
    return found


async def hybrid(client: Any, query: str, **options: Any) -> dict[str, Any]:
    found = await call_ok(client, "hybrid_search", {"query": query, **options})
    assert found["count"] == len(found["results"]), found
    return found


def artifact_ids(found: dict[str, Any]) -> list[str]:
    return [r["artifact_id"] for r in found["results"] if r["type"] in ("artifact", "chunk")]


def result_ids(found: dict[str, Any]) -> list[str]:
    return [r["id"] for r in found["results"]]


async def chunk_ids(client: Any, artifact_id: str) -> set[str]:
    """Every chunk id of an artifact (artifact_ingest lists only the first few)."""
    return {c["chunk_id"] for c in (await get(client, artifact_id, include_chunks=True)).get("chunks") or []}


def cut_from(snippet: str, text: str) -> bool:
    """Is ``snippet`` a piece of ``text``, with an ellipsis exactly where it leaves text out?"""
    body = snippet.removeprefix(ELLIPSIS).removesuffix(ELLIPSIS)
    at = text.find(body)
    return bool(body) and at >= 0 and (snippet.startswith(ELLIPSIS) or at == 0) \
        and (snippet.endswith(ELLIPSIS) or at + len(body) == len(text))


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def text_of_hit(hit: dict[str, Any]) -> str:
    """The one text a hit carries: the passage with neighbours when asked for, else the snippet."""
    return hit["content"] if "content" in hit else hit["snippet"]


def containing_chunks(chunks: list[dict[str, Any]], content: str, needle: str) -> list[dict[str, Any]]:
    """The chunks whose span holds every character of ``needle``."""
    start = content.index(needle)
    return [c for c in chunks if c["start_char"] <= start and start + len(needle) <= c["end_char"]]


def unique_run() -> str:
    return uuid.uuid4().hex[:8]


def expected_artifact_id_without_source(content: str) -> str:
    return "art_" + sha256(content)[:32]


# ------------------------------------------------------------------------------------------ seed

@dataclass
class Corpus:
    """What ``seed`` ingested: responses by key, and the original texts."""

    run: str
    family: dict[str, dict[str, Any]] = field(default_factory=dict)  # key -> ingest response
    handbook: dict[str, Any] = field(default_factory=dict)
    unicode_note: dict[str, Any] = field(default_factory=dict)
    unicode_doc: dict[str, Any] = field(default_factory=dict)

    def known(self) -> dict[str, str]:
        """artifact id -> original content of everything seeded."""
        out = {self.family[m.key]["artifact_id"]: m.content for m in FAMILY}
        out[self.handbook["artifact_id"]] = HANDBOOK
        out[self.unicode_note["artifact_id"]] = UNICODE_NOTE
        out[self.unicode_doc["artifact_id"]] = UNICODE_DOC
        return out


async def seed(client: Any) -> Corpus:
    corpus = Corpus(run=unique_run())
    for member in FAMILY:
        corpus.family[member.key] = await ingest(client, **member.arguments(corpus.run))
    corpus.handbook = await ingest(
        client, artifact_type="doc", source_system="drive", source_id=f"{corpus.run}-handbook", content=HANDBOOK,
        title="Northwind operations handbook", author="Operations group", ts="2025-01-15T09:00:00Z",
        source_url="https://drive.example.com/d/northwind-handbook")
    corpus.unicode_note = await ingest(
        client, artifact_type="note", source_system="manual", source_id=f"{corpus.run}-unicode-note",
        content=UNICODE_NOTE, title="Offsite notes ✈️ 会議", author="Zoë Ünal", participants=["山田太郎", "José", "محمد"])
    corpus.unicode_doc = await ingest(
        client, artifact_type="doc", source_system="drive", source_id=f"{corpus.run}-unicode-doc",
        content=UNICODE_DOC, title="Lieferkette / 供应链")
    return corpus


# --------------------------------------------------------------------------------------- checks

async def check_tools_listed(client: Any, corpus: Corpus) -> None:
    listed = await client.list_tools()
    schemas = {tool.name: tool.input_schema for tool in listed.tools}
    assert ARTIFACT_TOOLS <= set(schemas), sorted(schemas)
    assert set(schemas["artifact_ingest"]["required"]) == {"artifact_type", "source_system", "content"}
    assert schemas["artifact_search"]["required"] == ["query"]
    assert schemas["artifact_get"]["required"] == ["artifact_id"]
    assert schemas["artifact_delete"]["required"] == ["artifact_id"]
    assert schemas["hybrid_search"]["required"] == ["query"]
    properties = schemas["artifact_ingest"]["properties"]
    assert {"source_id", "source_url", "title", "author", "participants", "ts", "sensitivity",
            "visibility_scope", "retention_policy"} <= set(properties)
    assert {"limit", "artifact_type", "source_system", "sensitivity", "visibility_scope", "time_range_start",
            "time_range_end", "expand_neighbors"} <= set(schemas["artifact_search"]["properties"])
    assert {"limit", "include_memory", "expand_neighbors", "filters"} <= set(schemas["hybrid_search"]["properties"])


async def check_whole_artifact_responses(client: Any, corpus: Corpus) -> None:
    for member in FAMILY:
        response = corpus.family[member.key]
        art = response["artifact_id"]
        assert ARTIFACT_ID.match(art), response
        assert response["status"] == "ingested", response
        assert response["is_chunked"] is False and response["num_chunks"] == 0, response
        assert response["stored_ids"] == [art], response
        assert response["content_hash"] == sha256(member.content), response
        assert 0 < response["token_count"] <= SINGLE_PIECE_MAX_TOKENS, response
        assert {k: response[k] for k in LOCAL_PROFILE} == LOCAL_PROFILE, response
    assert len({corpus.family[m.key]["artifact_id"] for m in FAMILY}) == len(FAMILY), "ids collide"
    art = corpus.unicode_note["artifact_id"]
    assert corpus.unicode_note["stored_ids"] == [art] and corpus.unicode_note["is_chunked"] is False
    result = await client.call_tool("artifact_ingest", {**FAMILY[0].arguments(corpus.run)})
    assert text_of(result).startswith(f"Unchanged (same content) artifact {corpus.family['kickoff']['artifact_id']}")


async def check_chunked_artifact_response(client: Any, corpus: Corpus) -> None:
    for response, content in ((corpus.handbook, HANDBOOK), (corpus.unicode_doc, UNICODE_DOC)):
        art = response["artifact_id"]
        assert ARTIFACT_ID.match(art), response
        assert response["status"] == "ingested"
        assert response["is_chunked"] is True, response
        assert response["token_count"] > SINGLE_PIECE_MAX_TOKENS
        n = response["num_chunks"]
        listed = min(n, LISTED_CHUNK_IDS)  # a 10 MB document has thousands: artifact_get lists them
        assert n >= 2 and len(response["stored_ids"]) == listed + 1, response
        assert response["stored_ids_omitted"] == n - listed, response
        assert response["stored_ids"][0] == art
        for index, cid in enumerate(response["stored_ids"][1:]):
            assert chunk_id_pattern(art, index).match(cid), (index, cid)
        assert response["content_hash"] == sha256(content)
    # 200-token windows overlapping by 32 tokens: n windows cover more than (n - 1) * 168 tokens
    n, tokens = corpus.handbook["num_chunks"], corpus.handbook["token_count"]
    assert (n - 1) * (CHUNK_TARGET_TOKENS - 32) < tokens <= n * CHUNK_TARGET_TOKENS, corpus.handbook
    assert n >= 5, corpus.handbook


async def check_token_threshold(client: Any, corpus: Corpus) -> None:
    """At most 200 cl100k tokens stays whole; one more token is chunked (into two windows)."""
    from adapters.text.tokenizers import cl100k_encoding

    encoding = cl100k_encoding()
    words = [f" {w}" for w in ("harbour", "ferry", "anchor", "buoy", "tide", "pier", "boat", "dock")]
    text = "Threshold"
    while len(encoding.encode_ordinary(text)) < SINGLE_PIECE_MAX_TOKENS:
        text += words[len(text) % len(words)]
    assert len(encoding.encode_ordinary(text)) == SINGLE_PIECE_MAX_TOKENS, "could not build a 200-token text"
    longer = text + " light"
    assert len(encoding.encode_ordinary(longer)) == SINGLE_PIECE_MAX_TOKENS + 1
    whole = await ingest(client, artifact_type="note", source_system="threshold", content=text)
    assert whole["token_count"] == SINGLE_PIECE_MAX_TOKENS and whole["is_chunked"] is False, whole
    assert whole["stored_ids"] == [whole["artifact_id"]]
    chunked = await ingest(client, artifact_type="note", source_system="threshold", content=longer)
    assert chunked["token_count"] == SINGLE_PIECE_MAX_TOKENS + 1 and chunked["is_chunked"] is True, chunked
    assert chunked["num_chunks"] == 2 and len(chunked["stored_ids"]) == 3 and chunked["stored_ids_omitted"] == 0
    view = await get(client, chunked["artifact_id"], include_content=True, include_chunks=True)
    assert view["content"] == longer
    assert [c["token_count"] for c in view["chunks"]][0] == CHUNK_TARGET_TOKENS, view["chunks"]


async def check_metadata_round_trip(client: Any, corpus: Corpus) -> None:
    for member in FAMILY:
        response = corpus.family[member.key]
        result = await client.call_tool("artifact_get", {"artifact_id": response["artifact_id"]})
        view = ok(result)
        assert view["artifact_id"] == response["artifact_id"]
        assert "content" not in view and not view.get("chunks"), view
        meta = view["metadata"]
        expected = {
            "artifact_type": member.artifact_type, "source_system": member.source_system,
            "source_id": f"{corpus.run}-{member.key}", "source_url": member.source_url, "title": member.title,
            "author": member.author, "participants": list(member.participants or ()),
            "sensitivity": member.sensitivity, "visibility_scope": member.visibility_scope,
            "retention_policy": member.retention_policy, "content_hash": sha256(member.content),
            "token_count": response["token_count"], "is_chunked": False, "num_chunks": 0, **LOCAL_PROFILE,
        }
        assert {k: meta.get(k) for k in expected} == expected, (member.key, meta)
        if member.ts_utc is not None:
            assert meta["ts"] == member.ts_utc, (member.key, meta["ts"])
        else:
            assert UTC_TS.match(meta["ts"]), meta["ts"]
        assert UTC_TS.match(meta["ingested_at"]), meta
        assert response["artifact_id"] in text_of(result)
    defaults = (await get(client, corpus.unicode_doc["artifact_id"]))["metadata"]
    assert (defaults["sensitivity"], defaults["visibility_scope"], defaults["retention_policy"]) == (
        "normal", "me", "forever"), defaults
    assert defaults["source_url"] is None and defaults["author"] is None and defaults["participants"] == []
    assert UTC_TS.match(defaults["ts"]), defaults


async def check_get_content_is_exact(client: Any, corpus: Corpus) -> None:
    for response, content in ((corpus.unicode_note, UNICODE_NOTE), (corpus.unicode_doc, UNICODE_DOC),
                              (corpus.handbook, HANDBOOK)):
        result = await client.call_tool("artifact_get", {"artifact_id": response["artifact_id"],
                                                         "include_content": True})
        view = ok(result)
        assert view["content"] == content, (response["artifact_id"], view["content"][:200])
        assert view["content"].encode("utf-8") == content.encode("utf-8")
        assert sha256(view["content"]) == view["metadata"]["content_hash"]
        assert text_of(result).endswith(content), "the text rendering must carry the exact content too"
        assert "chunks" not in view or view["chunks"] in (None, []), "chunks were not asked for"


async def check_get_chunks_cover_the_content(client: Any, corpus: Corpus) -> None:
    for response, content in ((corpus.handbook, HANDBOOK), (corpus.unicode_doc, UNICODE_DOC)):
        art = response["artifact_id"]
        view = await get(client, art, include_chunks=True)
        chunks = view["chunks"]
        assert "content" not in view, "content was not asked for"
        assert [c["chunk_id"] for c in chunks][:LISTED_CHUNK_IDS] == response["stored_ids"][1:]
        assert [c["chunk_index"] for c in chunks] == list(range(response["num_chunks"]))
        assert chunks[0]["start_char"] == 0 and chunks[-1]["end_char"] == len(content), chunks
        for before, after in zip(chunks, chunks[1:]):
            assert before["start_char"] < after["start_char"] < before["end_char"], (before, after)
            assert after["start_char"] <= before["end_char"], "a gap between chunks"
        for c in chunks:
            piece = content[c["start_char"]:c["end_char"]]
            assert c["chunk_id"].rsplit("::", 1)[1] == sha256(piece)[:8], c
            assert c.get("content_hash", sha256(piece)) == sha256(piece), c
            assert 0 < c["token_count"] <= CHUNK_TARGET_TOKENS, (
                f"chunk {c['chunk_index']} holds {c['token_count']} cl100k tokens, above the profile's "
                f"{CHUNK_TARGET_TOKENS}-token target: {c}")
        assert sum(c["token_count"] for c in chunks) >= response["token_count"]
    whole = await get(client, corpus.unicode_note["artifact_id"], include_chunks=True)
    assert not whole.get("chunks"), "an artifact stored whole has no chunks"


async def check_same_source_same_content_is_unchanged(client: Any, corpus: Corpus) -> None:
    before = await get(client, corpus.handbook["artifact_id"], include_chunks=True)
    again = await ingest(
        client, artifact_type="doc", source_system="drive", source_id=f"{corpus.run}-handbook", content=HANDBOOK,
        title="Northwind operations handbook", author="Operations group", ts="2025-01-15T09:00:00Z",
        source_url="https://drive.example.com/d/northwind-handbook")
    assert again["status"] == "unchanged", again
    for key in ("artifact_id", "stored_ids", "num_chunks", "is_chunked", "content_hash", "token_count"):
        assert again[key] == corpus.handbook[key], key
    after = await get(client, corpus.handbook["artifact_id"], include_chunks=True)
    # nothing rewritten: the same row (ingested_at) and the same chunks
    assert after == before
    member = FAMILY[1]
    whole = await ingest(client, **member.arguments(corpus.run))
    assert whole["status"] == "unchanged" and whole["stored_ids"] == corpus.family[member.key]["stored_ids"]
    found = await artifact_search(client, PLANTED_QUERY, limit=SEARCH_ALL, per_artifact=1)
    assert artifact_ids(found).count(corpus.handbook["artifact_id"]) == 1


async def check_id_from_content_hash_without_source_id(client: Any, corpus: Corpus) -> None:
    content = f"Loose note {corpus.run}: buy a new kettle for the third-floor kitchen."
    first = await ingest(client, artifact_type="note", source_system="manual", content=content)
    assert first["artifact_id"] == expected_artifact_id_without_source(content), first
    assert first["status"] == "ingested"
    second = await ingest(client, artifact_type="note", source_system="manual", content=content)
    assert second["status"] == "unchanged" and second["artifact_id"] == first["artifact_id"], second
    assert second["stored_ids"] == first["stored_ids"]
    other = await ingest(client, artifact_type="note", source_system="manual", content=content + " Urgent.")
    assert other["artifact_id"] != first["artifact_id"] and other["status"] == "ingested"
    assert (await get(client, first["artifact_id"], include_content=True))["content"] == content


async def check_id_from_source(client: Any, corpus: Corpus) -> None:
    source_id = f"{corpus.run}-shared-id"
    slack = await ingest(client, artifact_type="chat", source_system="slack", source_id=source_id,
                         content="Slack message about the quarterly all-hands agenda.")
    gmail = await ingest(client, artifact_type="email", source_system="gmail", source_id=source_id,
                         content="Slack message about the quarterly all-hands agenda.")
    assert slack["artifact_id"] != gmail["artifact_id"], "the source system is part of the identity"
    assert slack["artifact_id"] != expected_artifact_id_without_source(
        "Slack message about the quarterly all-hands agenda."), "with a source_id the id comes from the source"
    assert gmail["status"] == "ingested"
    for response in (slack, gmail):
        assert (await call_ok(client, "artifact_delete", {"artifact_id": response["artifact_id"]}))["deleted"]


async def check_replace_with_new_content(client: Any, corpus: Corpus) -> None:
    first, second, third = replaced_versions()
    source = {"artifact_type": "doc", "source_system": "contracts", "source_id": f"{corpus.run}-blue-fjord"}
    v1 = await ingest(client, **source, content=first, ts="2024-05-01T00:00:00Z")
    assert v1["status"] == "ingested" and v1["is_chunked"] is True, v1
    old_chunks = await chunk_ids(client, v1["artifact_id"])
    hit = await artifact_search(client, OLD_ONLY_QUERY, limit=1)
    assert result_ids(hit)[0] in old_chunks, hit  # findable before the replace

    v2 = await ingest(client, **source, content=second, ts="2024-06-01T00:00:00Z")
    assert v2["status"] == "replaced", v2
    art = v1["artifact_id"]
    assert v2["artifact_id"] == art and v2["stored_ids"][0] == art
    assert v2["is_chunked"] is True and v2["num_chunks"] >= 3, v2
    new_chunks = await chunk_ids(client, art)
    assert len(new_chunks) == v2["num_chunks"] and set(v2["stored_ids"][1:]) <= new_chunks, v2
    assert not old_chunks & new_chunks, "every chunk of the new version differs"
    view = await get(client, art, include_content=True, include_chunks=True)
    assert view["content"] == second
    assert [c["chunk_id"] for c in view["chunks"]][:LISTED_CHUNK_IDS] == v2["stored_ids"][1:]
    assert view["metadata"]["content_hash"] == sha256(second) and view["metadata"]["ts"] == "2024-06-01T00:00:00Z"
    for found in (await artifact_search(client, OLD_ONLY_QUERY, limit=SEARCH_ALL, per_artifact=1),
                  await hybrid(client, OLD_ONLY_QUERY, limit=SEARCH_ALL, per_artifact=1),
                  await artifact_search(client, OLD_ONLY_QUERY, limit=SEARCH_ALL, expand_neighbors=True,
                                        per_artifact=1)):
        assert not old_chunks & set(result_ids(found)), "a search returned a chunk of the replaced version"
        assert artifact_ids(found).count(art) == 1
        mine = [r for r in found["results"] if r["artifact_id"] == art]
        assert mine[0]["id"] in new_chunks and "old pallet rate" not in text_of_hit(mine[0]), mine

    v3 = await ingest(client, **source, content=third)
    assert v3["status"] == "replaced" and v3["is_chunked"] is False and v3["stored_ids"] == [art], v3
    view = await get(client, art, include_content=True, include_chunks=True)
    assert view["content"] == third and not view.get("chunks"), view
    found = await hybrid(client, "Blue Fjord Logistics refrigerated transport pallet rates", limit=SEARCH_ALL)
    mine = [r for r in found["results"] if r["artifact_id"] == art]
    assert [(r["id"], r["type"]) for r in mine] == [(art, "artifact")], mine
    assert not (old_chunks | new_chunks) & set(result_ids(found))
    again = await ingest(client, **source, content=third)
    assert again["status"] == "unchanged"


async def check_search_finds_the_planted_passage(client: Any, corpus: Corpus) -> None:
    art = corpus.handbook["artifact_id"]
    chunks = (await get(client, art, include_chunks=True))["chunks"]
    holders = {c["chunk_id"] for c in containing_chunks(chunks, HANDBOOK, PLANTED_FACT)}
    assert holders, "test setup: no chunk holds the whole planted fact"
    result = await client.call_tool("artifact_search", {"query": PLANTED_QUERY, "limit": 5, "per_artifact": 1})
    found = ok(result)
    assert found["results"], found
    top = found["results"][0]
    assert top["id"] in holders, (top["id"], holders, [r["id"] for r in found["results"]])
    assert top["type"] == "chunk" and top["artifact_id"] == art
    by_id = {c["chunk_id"]: c for c in chunks}
    span = by_id[top["id"]]
    assert "content" not in top, "a hit carries its text once: the snippet"
    assert top["chunk_index"] == span["chunk_index"]
    assert cut_from(top["snippet"], HANDBOOK[span["start_char"]:span["end_char"]]), top["snippet"]
    assert {"generator", "tromsø"} <= set(words(top["snippet"])), ("the snippet shows the match", top["snippet"])
    assert top["provenance"]["title"] == "Northwind operations handbook"
    assert top["provenance"]["source_url"] == "https://drive.example.com/d/northwind-handbook"
    assert len(set(artifact_ids(found))) == len(found["results"]), "one result per artifact"
    scores = [r["score"] for r in found["results"]]
    assert scores == sorted(scores, reverse=True), scores
    assert text_of(result).startswith(f"Found {found['count']} results")
    assert top["id"] in text_of(result)


async def check_search_one_result_per_artifact(client: Any, corpus: Corpus) -> None:
    # every handbook chunk matches this; with per_artifact=1 the handbook appears once, by its best chunk
    for found in (await artifact_search(client, "office rules for employees and teams", limit=SEARCH_ALL,
                                        per_artifact=1),
                  await hybrid(client, "office rules for employees and teams", limit=SEARCH_ALL, per_artifact=1)):
        owners = artifact_ids(found)
        assert len(owners) == len(set(owners)), owners
        assert corpus.handbook["artifact_id"] in owners
        assert_above_the_floor(found)
    # by default a document may give up to three passages (MEMTROVE_PER_ARTIFACT)
    for found in (await artifact_search(client, "office rules for employees and teams", limit=SEARCH_ALL),
                  await hybrid(client, "office rules for employees and teams", limit=SEARCH_ALL)):
        owners = artifact_ids(found)
        assert 2 <= owners.count(corpus.handbook["artifact_id"]) <= 3, owners
        assert max(owners.count(o) for o in owners) <= 3 and len(result_ids(found)) == len(set(result_ids(found)))
        assert_above_the_floor(found)


def assert_above_the_floor(found: dict[str, Any], floor: float = 0.1) -> None:
    """A hit found by its vectors alone is at least as similar as the lowest default relevance floor."""
    for hit in found["results"]:
        if set(hit["signals"]) <= {"semantic", "contextual"}:
            assert hit["similarity"] is not None and hit["similarity"] >= floor, hit


async def check_a_search_for_something_never_stored_finds_nothing(client: Any, corpus: Corpus) -> None:
    """No padding with unrelated records: nothing shares a word, and no vector is near enough."""
    for found in (await hybrid(client, "peanut allergy epinephrine", limit=10, include_memory=True),
                  await artifact_search(client, "peanut allergy epinephrine", limit=10)):
        assert found["count"] == 0, [(h["id"], h["signals"], h["similarity"]) for h in found["results"]]


FILTER_CASES: list[tuple[str, dict[str, Any], Any]] = [
    ("artifact_type", {"artifact_type": "email"}, lambda m: m.artifact_type == "email"),
    ("artifact_type", {"artifact_type": "chat"}, lambda m: m.artifact_type == "chat"),
    ("source_system", {"source_system": "slack"}, lambda m: m.source_system == "slack"),
    ("source_system", {"source_system": "confluence"}, lambda m: m.source_system == "confluence"),
    ("sensitivity", {"sensitivity": "sensitive"}, lambda m: m.sensitivity == "sensitive"),
    ("sensitivity", {"sensitivity": "highly_sensitive"}, lambda m: m.sensitivity == "highly_sensitive"),
    ("visibility_scope", {"visibility_scope": "team"}, lambda m: m.visibility_scope == "team"),
    ("visibility_scope", {"visibility_scope": "custom"}, lambda m: m.visibility_scope == "custom"),
    ("time_range_start", {"time_range_start": "2024-01-01T00:00:00Z"},  # inclusive: "budget" is exactly then
     lambda m: m.ts_utc is None or m.ts_utc >= "2024-01-01T00:00:00Z"),
    ("time_range_end", {"time_range_end": "2024-12-31T23:59:59Z"},  # inclusive: "call" is exactly then
     lambda m: m.ts_utc is not None and m.ts_utc <= "2024-12-31T23:59:59Z"),
    ("combined", {"artifact_type": "email", "sensitivity": "normal", "visibility_scope": "team"},
     lambda m: m.key == "invoice"),
    ("combined-with-time", {"source_system": "gmail", "time_range_start": "2024-01-01T00:00:00Z"},
     lambda m: m.key == "invoice"),
]
# Both ends of a time range at once (inclusive at both ends; the start given with an offset).
TIME_RANGE_CASES: list[tuple[str, dict[str, Any], Any]] = [
    ("time_range", {"time_range_start": "2024-06-15T12:00:00+02:00", "time_range_end": "2025-03-01T08:30:00Z"},
     lambda m: m.key in ("standup", "call", "reminder")),
    ("time_range-one-instant", {"time_range_start": "2024-12-31T23:59:59Z", "time_range_end": "2024-12-31T23:59:59Z"},
     lambda m: m.key == "call"),
]


def _satisfies(result: dict[str, Any], filters: dict[str, Any]) -> bool:
    from datetime import datetime

    def epoch(ts: str) -> float:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()

    prov = result["provenance"]
    checks = {
        "artifact_type": lambda v: result["artifact_type"] == v,
        "source_system": lambda v: prov["source_system"] == v,
        "sensitivity": lambda v: result["sensitivity"] == v,
        "visibility_scope": lambda v: result["visibility_scope"] == v,
        "time_range_start": lambda v: epoch(prov["ts"]) >= epoch(v),
        "time_range_end": lambda v: epoch(prov["ts"]) <= epoch(v),
    }
    return all(checks[name](value) for name, value in filters.items())


async def _check_filter_cases(client: Any, corpus: Corpus, cases: list[tuple[str, dict[str, Any], Any]]) -> None:
    failures = []
    for label, filters, wanted in cases:
        expected = {corpus.family[m.key]["artifact_id"] for m in FAMILY if wanted(m)}
        excluded = {corpus.family[m.key]["artifact_id"] for m in FAMILY if not wanted(m)}
        assert expected, f"test setup: filter {label} matches no family member"
        for tool, arguments in (
            ("artifact_search", {"query": FAMILY_QUERY, "limit": SEARCH_ALL, **filters}),
            ("hybrid_search", {"query": FAMILY_QUERY, "limit": SEARCH_ALL, "filters": filters}),
        ):
            result = await client.call_tool(tool, arguments)
            if result.is_error:
                failures.append(f"{tool} {filters}: refused: {text_of(result)}")
                continue
            found = result.structured_content
            got = set(artifact_ids(found))
            wrong = [r["artifact_id"] for r in found["results"] if not _satisfies(r, filters)]
            if wrong or not expected <= got or excluded & got:
                failures.append(f"{tool} {filters}: violating={wrong} missing={sorted(expected - got)} "
                                f"leaked={sorted(excluded & got)}")
    assert not failures, "\n".join(failures)


async def check_search_filters_restrict(client: Any, corpus: Corpus) -> None:
    await _check_filter_cases(client, corpus, FILTER_CASES)


async def check_search_time_range_with_both_bounds(client: Any, corpus: Corpus) -> None:
    await _check_filter_cases(client, corpus, TIME_RANGE_CASES)


async def check_expand_neighbors(client: Any, corpus: Corpus) -> None:
    art = corpus.handbook["artifact_id"]
    chunks = (await get(client, art, include_chunks=True))["chunks"]
    text = {c["chunk_index"]: HANDBOOK[c["start_char"]:c["end_char"]] for c in chunks}
    by_index = {c["chunk_index"]: c for c in chunks}
    plain = await artifact_search(client, PLANTED_QUERY, limit=3)
    top = plain["results"][0]
    index = top["chunk_index"]
    assert 0 < index < len(chunks) - 1, "test setup: the planted chunk must have two neighbours"
    for tool, found in (
        ("artifact_search", await artifact_search(client, PLANTED_QUERY, limit=3, expand_neighbors=True)),
        ("hybrid_search", await hybrid(client, PLANTED_QUERY, limit=3, expand_neighbors=True)),
    ):
        expanded = next(r for r in found["results"] if r["artifact_id"] == art)
        assert expanded["id"] == top["id"], (tool, expanded["id"], top["id"])
        parts = expanded["content"].split(f"\n{BOUNDARY}\n")
        assert len(parts) == 3, (tool, expanded["content"][:300])
        # the hit chunk between the markers; the neighbours add only what lies outside it (no overlap twice)
        assert parts[1] == text[index], (tool, parts[1][:120])
        span = by_index[index - 1]["start_char"], by_index[index + 1]["end_char"]
        assert "".join(parts) == HANDBOOK[span[0]:span[1]], (tool, "the window's text, each part once")
        assert parts[0] == HANDBOOK[span[0]:by_index[index]["start_char"]], tool
        assert parts[2] == HANDBOOK[by_index[index]["end_char"]:span[1]], tool
        for r in found["results"]:
            if r["type"] == "artifact":
                assert "content" not in r and BOUNDARY not in r["snippet"], "an artifact stored whole has no neighbours"
    result = await client.call_tool("artifact_search", {"query": PLANTED_QUERY, "limit": 1,
                                                        "expand_neighbors": True})
    assert text_of(result).count(BOUNDARY) >= 2, text_of(result)
    edge = await artifact_search(client, HANDBOOK_PARAGRAPHS[0][:200], limit=1, source_system="drive",
                                 artifact_type="doc", expand_neighbors=True)
    first = edge["results"][0]
    if first["artifact_id"] == art and first["chunk_index"] == 0:
        parts = first["content"].split(f"\n{BOUNDARY}\n")
        assert len(parts) == 2 and parts[0] == text[0], "the first chunk has only a following neighbour"


async def check_hybrid_defaults_and_scores(client: Any, corpus: Corpus) -> None:
    result = await client.call_tool("hybrid_search", {"query": FAMILY_QUERY})
    found = ok(result)
    assert found["searched"] == [WHOLE, CHUNKS], found["searched"]
    assert found["count"] == 5, "the default limit is 5"
    assert text_of(result).startswith(f"Found 5 results (searched: {WHOLE}, {CHUNKS})")
    known = corpus.known()
    metadata: dict[str, dict[str, Any]] = {}
    for r in found["results"]:
        assert r["type"] in ("artifact", "chunk"), r
        assert r["collections"] and set(r["collections"]) <= set(found["searched"]), r
        assert r["collections"] == [WHOLE if r["type"] == "artifact" else CHUNKS], r
        check_fused_score(r)
        prov = r["provenance"]
        assert set(prov) >= {"source_system", "source_id", "source_url", "title", "ts", *LOCAL_PROFILE}, prov
        assert {k: prov[k] for k in LOCAL_PROFILE} == LOCAL_PROFILE
        if r["artifact_id"] not in metadata:
            metadata[r["artifact_id"]] = (await get(client, r["artifact_id"]))["metadata"]
        meta = metadata[r["artifact_id"]]
        assert {k: prov[k] for k in ("source_system", "source_id", "source_url", "title", "ts")} == {
            k: meta[k] for k in ("source_system", "source_id", "source_url", "title", "ts")}, (prov, meta)
        assert r["snippet"] and "content" not in r, r
        if r["artifact_id"] in known and r["type"] == "artifact":
            assert cut_from(r["snippet"], known[r["artifact_id"]]), r
    scores = [r["score"] for r in found["results"]]
    assert scores == sorted(scores, reverse=True), scores
    assert found["results"][0]["signals"].get("semantic") == 1 or found["results"][0]["signals"].get("lexical") == 1
    widest = await hybrid(client, FAMILY_QUERY, limit=SEARCH_ALL, include_memory=True, include_history=True)
    for r in widest["results"]:
        check_fused_score(r)
    assert len(widest["searched"]) <= 5  # documents, chunks, memories, conversations, graph entities
    plain = await hybrid(client, FAMILY_QUERY, limit=SEARCH_ALL, profile="default")
    for r in plain["results"]:
        check_fused_score(r, SPEC_DEFAULT_WEIGHTS, SPEC_K, reranked=False)
    assert [r["score"] for r in plain["results"]] == sorted((r["score"] for r in plain["results"]), reverse=True)


async def check_hybrid_memory_and_history(client: Any, corpus: Corpus) -> None:
    conversation = f"e2e-art-{corpus.run}"
    memory = await call_ok(client, "memory_store", {
        "content": "The lighthouse renovation is the user's favourite harbour project", "type": "project",
        "confidence": 0.9})
    await call_ok(client, "history_append", {
        "conversation_id": conversation, "role": "user", "content": "How is the harbour lighthouse renovation going?",
        "turn_index": 0})
    turn_id = f"{conversation}_turn_0"
    plain = await hybrid(client, FAMILY_QUERY, limit=SEARCH_ALL)
    assert plain["searched"] == [WHOLE, CHUNKS]
    assert {r["type"] for r in plain["results"]} <= {"artifact", "chunk"}, "memory and history are opt-in"
    with_memory = await hybrid(client, FAMILY_QUERY, limit=10, include_memory=True)
    # include_memory brings the caller's graph entities too (the graph tools' own records)
    assert with_memory["searched"] == [WHOLE, CHUNKS, MEMORY, ENTITIES], with_memory["searched"]
    mine = [r for r in with_memory["results"] if r["id"] == memory["id"]]
    assert mine and mine[0]["type"] == "memory" and mine[0]["collections"] == [MEMORY], with_memory
    assert not [r for r in with_memory["results"] if r["type"] == "history"]
    with_history = await hybrid(client, FAMILY_QUERY, limit=10, include_history=True)
    assert with_history["searched"] == [WHOLE, CHUNKS, HISTORY], with_history["searched"]
    turns = [r for r in with_history["results"] if r["id"] == turn_id]
    assert turns and turns[0]["type"] == "history" and turns[0]["collections"] == [HISTORY], with_history
    assert turns[0]["snippet"] == "How is the harbour lighthouse renovation going?"  # short: shown whole
    assert not [r for r in with_history["results"] if r["type"] == "memory"]
    both = await hybrid(client, FAMILY_QUERY, limit=10, include_memory=True, include_history=True)
    assert both["searched"] == [WHOLE, CHUNKS, MEMORY, ENTITIES, HISTORY], both["searched"]
    assert {memory["id"], turn_id} <= set(result_ids(both))
    assert {"artifact", "chunk"} & {r["type"] for r in both["results"]}


async def check_hybrid_hits_of_every_type_carry_snippet_and_provenance(client: Any, corpus: Corpus) -> None:
    """Spec 003 §8.2: every hit has type, id, score, a snippet and provenance (embedding profile, ts)."""
    conversation = f"e2e-art-prov-{corpus.run}"
    memory = await call_ok(client, "memory_store", {
        "content": "The Skerry Point lighthouse keeper retires next spring", "type": "fact", "confidence": 0.8})
    await call_ok(client, "history_append", {
        "conversation_id": conversation, "role": "assistant", "turn_index": 0,
        "content": "The Skerry Point lighthouse keeper retires next spring, says the harbour office."})
    found = await hybrid(client, "Skerry Point lighthouse keeper retires", limit=10, include_memory=True,
                         include_history=True)
    by_type = {r["type"]: r for r in reversed(found["results"])}
    assert {"memory", "history"} <= set(by_type), found
    assert memory["id"] in result_ids(found)
    problems = []
    for kind, r in by_type.items():
        missing = [k for k in ("id", "type", "score", "collections", "snippet", "provenance") if k not in r]
        if missing:
            problems.append(f"{kind} hit lacks {missing}: {sorted(r)}")
            continue
        prov = r["provenance"] or {}
        lacking = [k for k in ("ts", *LOCAL_PROFILE) if k not in prov]
        if lacking:
            problems.append(f"{kind} hit provenance lacks {lacking}: {prov}")
        if not r["snippet"] or "content" in r:
            problems.append(f"{kind} hit does not carry its text once, as its snippet: {r}")
    assert not problems, "\n".join(problems)


async def check_hybrid_conversation_filter(client: Any, corpus: Corpus) -> None:
    mine, other = f"e2e-art-conv-a-{corpus.run}", f"e2e-art-conv-b-{corpus.run}"
    lines = ["Can we repaint the lighthouse tower in red?", "Yes, the heritage office approved the red colour.",
             "Then book the painters for the lighthouse."]
    for index, content in enumerate(lines):
        await call_ok(client, "history_append", {"conversation_id": mine, "role": ("user", "assistant")[index % 2],
                                                  "content": content, "turn_index": index})
    await call_ok(client, "history_append", {"conversation_id": other, "role": "user", "turn_index": 0,
                                              "content": "Can we repaint the lighthouse tower in blue?"})
    memory_mine = await call_ok(client, "memory_store", {"content": "Lighthouse tower colour is red",
                                                         "type": "decision", "confidence": 0.9,
                                                         "conversation_id": mine})
    memory_other = await call_ok(client, "memory_store", {"content": "Lighthouse tower colour might be blue",
                                                          "type": "decision", "confidence": 0.4,
                                                          "conversation_id": other})
    result = await client.call_tool("hybrid_search", {
        "query": "repaint the lighthouse tower", "limit": SEARCH_ALL, "include_history": True,
        "filters": {"conversation_id": mine}})
    found = ok(result)
    assert HISTORY in found["searched"] and WHOLE not in found["searched"], found["searched"]
    assert found["results"], found
    assert all(r["type"] == "history" and r["conversation_id"] == mine for r in found["results"]), found
    assert set(result_ids(found)) == {f"{mine}_turn_{i}" for i in range(len(lines))}
    both = await hybrid(client, "repaint the lighthouse tower", limit=SEARCH_ALL, include_history=True,
                        include_memory=True, filters={"conversation_id": mine})
    assert set(result_ids(both)) == {f"{mine}_turn_{i}" for i in range(len(lines))} | {memory_mine["id"]}, both
    assert memory_other["id"] not in result_ids(both)


async def check_hybrid_returns_limit_distinct_results(client: Any, corpus: Corpus) -> None:
    for limit in (1, 3, 5, 8):
        for found in (await hybrid(client, FAMILY_QUERY, limit=limit, per_artifact=1),
                      await artifact_search(client, FAMILY_QUERY, limit=limit, per_artifact=1)):
            owners = artifact_ids(found)
            assert len(owners) == limit and len(set(owners)) == limit, (limit, owners)
    # the handbook's six matching chunks must not crowd other artifacts out (nothing else is related
    # enough to pass the relevance floor: the handbook once, nothing padded in)
    for found in (await hybrid(client, "company policy for employees", limit=5, per_artifact=1),
                  await artifact_search(client, "company policy for employees", limit=5, per_artifact=1)):
        owners = artifact_ids(found)
        assert owners[0] == corpus.handbook["artifact_id"] and len(set(owners)) == len(owners), owners
        assert_above_the_floor(found)


async def check_long_document_does_not_crowd_the_limit(client: Any, corpus: Corpus) -> None:
    system = f"crowd-{corpus.run}"
    crowd = await ingest(client, artifact_type="doc", source_system=system, source_id="logbook",
                         content=crowd_document(), title="Skerry Point logbook")
    other = await ingest(client, artifact_type="doc", source_system=system, source_id="recipes",
                         content=OTHER_CROWD_DOCUMENT, title="Recipe cards")
    assert crowd["num_chunks"] >= 7 and other["num_chunks"] >= 2, (crowd["num_chunks"], other["num_chunks"])
    expected = {crowd["artifact_id"], other["artifact_id"]}
    top = await hybrid(client, CROWD_QUERY, limit=1, filters={"source_system": system})
    assert artifact_ids(top) == [crowd["artifact_id"]], top
    mixed = CROWD_QUERY + " and sourdough"  # the recipes share a word with it, the logbook many
    for found in (await hybrid(client, mixed, limit=2, filters={"source_system": system}, per_artifact=1),
                  await artifact_search(client, mixed, limit=2, source_system=system, per_artifact=1),
                  await hybrid(client, mixed, limit=5, filters={"source_system": system}, per_artifact=1),
                  await artifact_search(client, mixed, limit=5, source_system=system, per_artifact=1)):
        assert set(artifact_ids(found)) == expected and found["count"] == 2, result_ids(found)
        assert found["results"][0]["artifact_id"] == crowd["artifact_id"]
    # the default cap: the logbook gives three passages, and the recipes still get their place
    for found in (await hybrid(client, mixed, limit=5, filters={"source_system": system}),
                  await artifact_search(client, mixed, limit=5, source_system=system)):
        owners = artifact_ids(found)
        assert owners.count(crowd["artifact_id"]) == 3 and other["artifact_id"] in owners, result_ids(found)
    two = await hybrid(client, mixed, limit=10, filters={"source_system": system}, per_artifact=2)
    assert artifact_ids(two).count(crowd["artifact_id"]) == 2, result_ids(two)
    # the recipes say nothing of lighthouses: without a shared word they are no answer (relevance floor)
    alone = await hybrid(client, CROWD_QUERY, limit=5, filters={"source_system": system})
    assert other["artifact_id"] not in artifact_ids(alone), result_ids(alone)
    unfiltered = await hybrid(client, CROWD_QUERY, limit=5, per_artifact=1)
    assert len(set(artifact_ids(unfiltered))) == 5, result_ids(unfiltered)


async def check_delete(client: Any, corpus: Corpus) -> None:
    content = deletable_document()
    doomed = await ingest(client, artifact_type="transcript", source_system="pagerduty",
                          source_id=f"{corpus.run}-zephyr", content=content)
    art, n = doomed["artifact_id"], doomed["num_chunks"]
    assert doomed["is_chunked"] and n >= 2, doomed
    doomed_ids = {art} | await chunk_ids(client, art)
    assert artifact_ids(await artifact_search(client, DELETE_QUERY, limit=1)) == [art]
    result = await client.call_tool("artifact_delete", {"artifact_id": art})
    assert ok(result)["deleted"] is True
    assert text_of(result) == f"Deleted artifact {art} and {n} chunks", text_of(result)
    gone = await client.call_tool("artifact_get", {"artifact_id": art})
    error = error_of(gone)
    assert error["type"] == "not_found" and error["message"] == f"Artifact {art} not found", error
    assert text_of(gone) == f"Artifact {art} not found"
    again = error_of(await client.call_tool("artifact_delete", {"artifact_id": art}))
    assert again["type"] == "not_found" and again["message"] == f"Artifact {art} not found", again
    for found in (await artifact_search(client, DELETE_QUERY, limit=SEARCH_ALL),
                  await hybrid(client, DELETE_QUERY, limit=SEARCH_ALL, include_memory=True, include_history=True),
                  await artifact_search(client, DELETE_QUERY, limit=SEARCH_ALL, expand_neighbors=True)):
        assert art not in artifact_ids(found) and not doomed_ids & set(result_ids(found))
    whole = await ingest(client, artifact_type="note", source_system="manual", source_id=f"{corpus.run}-tiny",
                         content="A tiny note that is about to be deleted.")
    result = await client.call_tool("artifact_delete", {"artifact_id": whole["artifact_id"]})
    assert text_of(result) == f"Deleted artifact {whole['artifact_id']} and 0 chunks"
    # a deleted source can be ingested again from scratch
    back = await ingest(client, artifact_type="transcript", source_system="pagerduty",
                        source_id=f"{corpus.run}-zephyr", content=content)
    assert back["status"] == "ingested" and back["stored_ids"] == doomed["stored_ids"], back
    await call_ok(client, "artifact_delete", {"artifact_id": art})


async def check_search_modes_and_exact_tokens(client: Any, corpus: Corpus) -> None:
    """Words find what meaning misses: a rare identifier is found by the lexical and exact signals."""
    code = (f"Runbook {corpus.run}: when the deploy fails with ERR_QUOTA_{corpus.run.upper()} restart the "
            "scheduler via scripts/ops/restart_scheduler.sh and page the on-call engineer.")
    planted = (await ingest(client, artifact_type="doc", source_system="wiki", source_id=f"{corpus.run}-runbook",
                            content=code))["artifact_id"]
    token = f"ERR_QUOTA_{corpus.run.upper()}"
    lexical = await hybrid(client, f"what to do about {token}", limit=3, mode="lexical")
    assert artifact_ids(lexical)[0] == planted, lexical
    top = lexical["results"][0]
    assert set(top["signals"]) <= {"lexical", "exact"} and top["similarity"] is None, top
    assert "exact" in top["signals"], "a code-like token is matched verbatim"
    vector = await hybrid(client, "restarting the job scheduler after a failed deploy", limit=5, mode="vector")
    assert all(set(r["signals"]) == {"semantic"} for r in vector["results"]), vector
    fused = await hybrid(client, f"{token} scheduler restart", limit=3)
    assert artifact_ids(fused)[0] == planted and {"semantic", "lexical"} <= set(fused["results"][0]["signals"])
    for profile in ("default", "technical", "conversational", "code"):
        assert artifact_ids(await hybrid(client, token, limit=1, profile=profile)) == [planted], profile
    assert artifact_ids(await artifact_search(client, token, limit=1, mode="lexical")) == [planted]
    path = await hybrid(client, "restart_scheduler.sh", limit=1, mode="lexical")
    assert artifact_ids(path) == [planted] and "exact" in path["results"][0]["signals"], path


def guide_markdown(run: str) -> str:
    sections = []
    for name, topic in (("Install", "pip and wheels"), ("Configure", "environment variables"),
                        ("Token refresh", f"rotating credential {run} every hour")):
        body = " ".join(f"This paragraph explains {topic} in detail, sentence {i}." for i in range(25))
        sections.append(f"## {name}\n\n{body}\n\n```bash\necho {name.lower()} step\n```\n")
    return f"# Guide {run}\n\nIntro text for the guide.\n\n" + "\n".join(sections)


def email_thread(run: str) -> str:
    first = "\n".join(f"The quarterly plan for project {run} needs item {i} reviewed by Friday." for i in range(12))
    return (f"From: Ana <ana@example.com>\nTo: Bo <bo@example.com>\nSubject: Plan {run}\n"
            f"Date: Mon, 3 Mar 2025 10:00:00 +0000\nMessage-ID: <1-{run}@example.com>\n\n{first}\n\n-- \nAna\n\n"
            f"From: Bo <bo@example.com>\nTo: Ana <ana@example.com>\nSubject: Re: Plan {run}\n"
            f"Date: Mon, 3 Mar 2025 12:00:00 +0000\nMessage-ID: <2-{run}@example.com>\n\n"
            f"Agreed, the zeppelin budget for {run} is approved as well.\n\n"
            "On Mon, 3 Mar 2025 at 10:00, Ana <ana@example.com> wrote:\n"
            + "\n".join(f"> {line}" for line in first.splitlines()) + "\n")


async def check_chunkers_by_type_and_by_name(client: Any, corpus: Corpus) -> None:
    """Markdown and email are cut by their own chunkers, exactly; the choice is stored; re-chunking replaces."""
    guide = guide_markdown(corpus.run)
    md = await ingest(client, artifact_type="doc", source_system="wiki", source_id=f"{corpus.run}-guide",
                      title="guide.md", content=guide)
    assert md["chunker"] == "markdown" and md["is_chunked"], md
    got = await get(client, md["artifact_id"], include_content=True, include_chunks=True)
    assert got["content"] == guide and got["metadata"]["chunker"] == "markdown"
    paths = [c["metadata"].get("heading_path") for c in got["chunks"]]
    assert [f"Guide {corpus.run}", "Token refresh"] in paths, paths
    found = await artifact_search(client, f"rotating credential {corpus.run}", limit=1)
    hit = found["results"][0]
    assert hit["artifact_id"] == md["artifact_id"] and hit["structure"]["heading_path"][-1] == "Token refresh", hit
    again = await ingest(client, artifact_type="doc", source_system="wiki", source_id=f"{corpus.run}-guide",
                         title="guide.md", content=guide, chunker="token-window")
    assert (again["status"], again["chunker"]) == ("replaced", "token-window"), again
    same = await ingest(client, artifact_type="doc", source_system="wiki", source_id=f"{corpus.run}-guide",
                        title="guide.md", content=guide, chunker="token-window")
    assert same["status"] == "unchanged"
    thread = email_thread(corpus.run)
    mail = await ingest(client, artifact_type="email", source_system="gmail", source_id=f"{corpus.run}-thread",
                        content=thread)
    assert mail["chunker"] == "email", mail
    chunks = (await get(client, mail["artifact_id"], include_chunks=True))["chunks"]
    quoted = [c for c in chunks if c["metadata"].get("part") == "quoted"]
    assert quoted and all(c["metadata"].get("indexed") is False for c in quoted), chunks
    assert (await get(client, mail["artifact_id"], include_content=True))["content"] == thread
    hits = await artifact_search(client, f"quarterly plan project {corpus.run} item reviewed", limit=10, mode="lexical")
    assert not {r["id"] for r in hits["results"]} & {c["chunk_id"] for c in quoted}, "quoted history is not indexed"


CHECKS = [
    check_chunkers_by_type_and_by_name,
    check_search_modes_and_exact_tokens,
    check_tools_listed, check_whole_artifact_responses, check_chunked_artifact_response, check_token_threshold,
    check_metadata_round_trip, check_get_content_is_exact, check_get_chunks_cover_the_content,
    check_same_source_same_content_is_unchanged, check_id_from_content_hash_without_source_id,
    check_id_from_source, check_replace_with_new_content, check_search_finds_the_planted_passage,
    check_search_one_result_per_artifact, check_search_filters_restrict, check_search_time_range_with_both_bounds,
    check_expand_neighbors,
    check_hybrid_defaults_and_scores, check_hybrid_memory_and_history,
    check_hybrid_hits_of_every_type_carry_snippet_and_provenance, check_hybrid_conversation_filter,
    check_hybrid_returns_limit_distinct_results, check_long_document_does_not_crowd_the_limit, check_delete,
    check_a_search_for_something_never_stored_finds_nothing,
]


# ------------------------------------------------------------------------------------ bad input

@dataclass(frozen=True)
class BadInput:
    """One bad call: the error it must return, the field it must name, what the message must say."""

    id: str
    tool: str
    arguments: dict[str, Any]
    field: str | None
    kind: str = "validation_error"
    mentions: tuple[str, ...] = ()
    exact: str | None = None  # the whole message, where the spec fixes it


_INGEST = {"artifact_type": "note", "source_system": "manual",
           "content": "A perfectly fine note about the bad-input checks."}
_SEARCH = {"query": "lighthouse renovation"}
UNKNOWN_ARTIFACT = "art_" + "0" * 32
_TYPES = "email, doc, chat, transcript, note"


def _without(arguments: dict[str, Any], name: str) -> dict[str, Any]:
    return {k: v for k, v in arguments.items() if k != name}


BAD_INPUTS = [
    BadInput("ingest-empty-content", "artifact_ingest", {**_INGEST, "content": ""}, "content"),
    BadInput("ingest-whitespace-content", "artifact_ingest", {**_INGEST, "content": " \r\n\t \u200b "}, "content"),
    BadInput("ingest-missing-content", "artifact_ingest", _without(_INGEST, "content"), "content",
             exact="Missing required field: content"),
    BadInput("ingest-missing-artifact-type", "artifact_ingest", _without(_INGEST, "artifact_type"), "artifact_type",
             exact="Missing required field: artifact_type"),
    BadInput("ingest-missing-source-system", "artifact_ingest", _without(_INGEST, "source_system"),
             "source_system", exact="Missing required field: source_system"),
    BadInput("ingest-unknown-artifact-type", "artifact_ingest", {**_INGEST, "artifact_type": "pdf"},
             "artifact_type", exact=f"Invalid artifact_type: pdf. Must be one of: {_TYPES}"),
    BadInput("ingest-source-system-101", "artifact_ingest", {**_INGEST, "source_system": "s" * 101},
             "source_system", mentions=("100",)),
    BadInput("ingest-empty-source-system", "artifact_ingest", {**_INGEST, "source_system": ""}, "source_system"),
    BadInput("ingest-source-id-501", "artifact_ingest", {**_INGEST, "source_id": "i" * 501}, "source_id",
             mentions=("500",)),
    BadInput("ingest-title-501", "artifact_ingest", {**_INGEST, "title": "t" * 501}, "title", mentions=("500",)),
    BadInput("ingest-empty-title", "artifact_ingest", {**_INGEST, "title": ""}, "title"),
    BadInput("ingest-author-201", "artifact_ingest", {**_INGEST, "author": "a" * 201}, "author", mentions=("200",)),
    BadInput("ingest-101-participants", "artifact_ingest",
             {**_INGEST, "participants": [f"p{i}" for i in range(101)]}, "participants", mentions=("100",)),
    BadInput("ingest-participants-not-strings", "artifact_ingest", {**_INGEST, "participants": ["ann", 7]},
             "participants"),
    BadInput("ingest-participants-a-string", "artifact_ingest", {**_INGEST, "participants": "ann, bob"},
             "participants"),
    BadInput("ingest-bad-ts", "artifact_ingest", {**_INGEST, "ts": "last Tuesday"}, "ts",
             mentions=("last Tuesday",)),
    BadInput("ingest-bad-sensitivity", "artifact_ingest", {**_INGEST, "sensitivity": "secret"}, "sensitivity",
             exact="Invalid sensitivity: secret. Must be one of: normal, sensitive, highly_sensitive"),
    BadInput("ingest-bad-visibility-scope", "artifact_ingest", {**_INGEST, "visibility_scope": "world"},
             "visibility_scope", exact="Invalid visibility_scope: world. Must be one of: me, team, org, custom"),
    BadInput("ingest-bad-retention-policy", "artifact_ingest", {**_INGEST, "retention_policy": "5y"},
             "retention_policy",
             exact="Invalid retention_policy: 5y. Must be one of: forever, 1y, until_resolved, custom"),
    BadInput("ingest-source-url-not-a-url", "artifact_ingest", {**_INGEST, "source_url": "not a url"},
             "source_url"),
    BadInput("ingest-source-url-no-scheme", "artifact_ingest", {**_INGEST, "source_url": "://example.com/doc"},
             "source_url"),
    BadInput("ingest-source-url-no-host", "artifact_ingest", {**_INGEST, "source_url": "https://"}, "source_url"),
    BadInput("get-without-prefix", "artifact_get", {"artifact_id": "9f2ca8b1"}, "artifact_id",
             exact="Invalid artifact_id: must start with 'art_'"),
    BadInput("get-wrong-form", "artifact_get", {"artifact_id": "art_9f2ca8b1"}, "artifact_id"),
    BadInput("get-uppercase-hex", "artifact_get", {"artifact_id": "art_" + "AB" * 16}, "artifact_id"),
    BadInput("get-include-content-yes", "artifact_get", {"artifact_id": UNKNOWN_ARTIFACT, "include_content": "yes"},
             "include_content"),
    BadInput("get-unknown-id", "artifact_get", {"artifact_id": UNKNOWN_ARTIFACT}, None, kind="not_found",
             exact=f"Artifact {UNKNOWN_ARTIFACT} not found"),
    BadInput("get-missing-id", "artifact_get", {}, "artifact_id", exact="Missing required field: artifact_id"),
    BadInput("delete-without-prefix", "artifact_delete", {"artifact_id": "doc-123"}, "artifact_id",
             exact="Invalid artifact_id: must start with 'art_'"),
    BadInput("delete-wrong-form", "artifact_delete", {"artifact_id": "art_xyz"}, "artifact_id"),
    BadInput("delete-unknown-id", "artifact_delete", {"artifact_id": UNKNOWN_ARTIFACT}, None, kind="not_found",
             exact=f"Artifact {UNKNOWN_ARTIFACT} not found"),
    BadInput("delete-missing-id", "artifact_delete", {}, "artifact_id", exact="Missing required field: artifact_id"),
    BadInput("search-query-501", "artifact_search", {"query": "q" * 501}, "query",
             mentions=("Query exceeds maximum length of 500 characters",)),
    BadInput("search-empty-query", "artifact_search", {"query": "  "}, "query"),
    BadInput("ingest-unknown-chunker", "artifact_ingest", {**_INGEST, "chunker": "fancy"}, "chunker",
             mentions=("auto", "token-window", "markdown")),
    BadInput("search-bad-mode", "artifact_search", {**_SEARCH, "mode": "fuzzy"}, "mode",
             exact="Invalid mode: fuzzy. Must be one of: hybrid, vector, lexical"),
    BadInput("hybrid-bad-profile", "hybrid_search", {**_SEARCH, "profile": "legal"}, "profile",
             mentions=("default", "technical", "conversational", "code")),
    BadInput("hybrid-mode-not-string", "hybrid_search", {**_SEARCH, "mode": 3}, "mode"),
    BadInput("search-missing-query", "artifact_search", {}, "query", exact="Missing required field: query"),
    BadInput("search-limit-0", "artifact_search", {**_SEARCH, "limit": 0}, "limit",
             mentions=("Limit must be between 1 and 50",)),
    BadInput("search-limit-51", "artifact_search", {**_SEARCH, "limit": 51}, "limit",
             mentions=("Limit must be between 1 and 50",)),
    BadInput("search-limit-string", "artifact_search", {**_SEARCH, "limit": "5"}, "limit"),
    BadInput("search-bad-artifact-type", "artifact_search", {**_SEARCH, "artifact_type": "pdf"}, "artifact_type",
             exact=f"Invalid artifact_type: pdf. Must be one of: {_TYPES}"),
    BadInput("search-bad-sensitivity", "artifact_search", {**_SEARCH, "sensitivity": "secret"}, "sensitivity"),
    BadInput("search-bad-visibility-scope", "artifact_search", {**_SEARCH, "visibility_scope": "public"},
             "visibility_scope"),
    BadInput("search-source-system-101", "artifact_search", {**_SEARCH, "source_system": "s" * 101},
             "source_system"),
    BadInput("search-bad-time-range-start", "artifact_search", {**_SEARCH, "time_range_start": "last week"},
             "time_range_start"),
    BadInput("search-bad-time-range-end", "artifact_search", {**_SEARCH, "time_range_end": "2025-13-01T00:00:00Z"},
             "time_range_end"),
    BadInput("search-start-after-end", "artifact_search",
             {**_SEARCH, "time_range_start": "2025-02-01T00:00:00Z", "time_range_end": "2025-01-01T00:00:00Z"},
             "time_range_start"),
    BadInput("search-expand-neighbors-yes", "artifact_search", {**_SEARCH, "expand_neighbors": "yes"},
             "expand_neighbors"),
    BadInput("hybrid-query-501", "hybrid_search", {"query": "q" * 501}, "query",
             mentions=("Query exceeds maximum length of 500 characters",)),
    BadInput("hybrid-missing-query", "hybrid_search", {"limit": 5}, "query", exact="Missing required field: query"),
    BadInput("hybrid-limit-0", "hybrid_search", {**_SEARCH, "limit": 0}, "limit",
             mentions=("Limit must be between 1 and 50",)),
    BadInput("hybrid-limit-51", "hybrid_search", {**_SEARCH, "limit": 51}, "limit",
             mentions=("Limit must be between 1 and 50",)),
    BadInput("hybrid-limit-true", "hybrid_search", {**_SEARCH, "limit": True}, "limit"),
    BadInput("hybrid-unknown-filter-key", "hybrid_search", {**_SEARCH, "filters": {"colour": "red"}}, "filters",
             mentions=("colour",)),
    BadInput("hybrid-filters-not-an-object", "hybrid_search", {**_SEARCH, "filters": "artifact_type=doc"},
             "filters"),
    BadInput("hybrid-bad-filter-artifact-type", "hybrid_search", {**_SEARCH, "filters": {"artifact_type": "pdf"}},
             "artifact_type", exact=f"Invalid artifact_type: pdf. Must be one of: {_TYPES}"),
    BadInput("hybrid-bad-filter-sensitivity", "hybrid_search", {**_SEARCH, "filters": {"sensitivity": "top"}},
             "sensitivity"),
    BadInput("hybrid-bad-filter-visibility", "hybrid_search", {**_SEARCH, "filters": {"visibility_scope": "all"}},
             "visibility_scope"),
    BadInput("hybrid-start-after-end", "hybrid_search", {**_SEARCH, "filters": {
        "time_range_start": "2025-02-01T00:00:00+00:00", "time_range_end": "2025-01-31T23:59:59Z"}},
        "time_range_start"),
    BadInput("hybrid-bad-time-range-end", "hybrid_search", {**_SEARCH, "filters": {"time_range_end": "soon"}},
             "time_range_end"),
    BadInput("hybrid-expand-neighbors-yes", "hybrid_search", {**_SEARCH, "expand_neighbors": "yes"},
             "expand_neighbors"),
    BadInput("hybrid-include-memory-yes", "hybrid_search", {**_SEARCH, "include_memory": "yes"}, "include_memory"),
    BadInput("hybrid-include-history-1", "hybrid_search", {**_SEARCH, "include_history": 1}, "include_history"),
]


def _distinct_content(case: BadInput) -> BadInput:
    """Each refused ingest gets its own content, so one wrongly accepted call cannot mask the next."""
    if case.tool == "artifact_ingest" and case.arguments.get("content") == _INGEST["content"]:
        arguments = {**case.arguments, "content": f"{_INGEST['content']} Case {case.id}."}
        return BadInput(case.id, case.tool, arguments, case.field, case.kind, case.mentions, case.exact)
    return case


BAD_INPUTS = [_distinct_content(case) for case in BAD_INPUTS]


async def snapshot(client: Any, corpus: Corpus) -> dict[str, Any]:
    """What a bad call could have changed: every seeded artifact (row, chunks) and what a search sees."""
    rows = {}
    for art in sorted(corpus.known()):
        view = await get(client, art, include_chunks=True)
        rows[art] = (view["metadata"], view.get("chunks"))
    everything = await hybrid(client, FAMILY_QUERY, limit=SEARCH_ALL, include_memory=True, include_history=True)
    assert len(set(artifact_ids(everything))) < SEARCH_ALL, "too many artifacts for a complete snapshot"
    return {"rows": rows, "found": sorted((r["type"], r["id"]) for r in everything["results"])}


async def check_bad_input(client: Any, corpus: Corpus, case: BadInput) -> None:
    """The call is refused with a structured error naming the field, and nothing changed."""
    before = await snapshot(client, corpus)
    result = await client.call_tool(case.tool, case.arguments)
    text = text_of(result)
    assert result.is_error, f"{case.id}: accepted: {result.structured_content!r}"
    error = error_of(result)
    assert error.get("type") == case.kind, error
    message = error.get("message", "")
    assert message and message in text, (error, text)
    if case.exact is not None:
        assert message == case.exact, f"{case.id}: message {message!r}, the spec says {case.exact!r}"
    if case.field is not None:
        assert error.get("field") == case.field, error
        names = {case.field, case.field.replace("_", " "), case.field.removesuffix("s")}  # "Invalid filter: ..."
        assert any(name in message.lower() for name in names), f"message does not name {case.field!r}: {message!r}"
    for needle in case.mentions:
        assert needle in message, f"message does not mention {needle!r}: {message!r}"
    assert "Traceback" not in text
    if case.tool == "artifact_ingest" and isinstance(case.arguments.get("content"), str):
        would_be = expected_artifact_id_without_source(case.arguments["content"])
        if "source_id" not in case.arguments:
            missing = await client.call_tool("artifact_get", {"artifact_id": would_be})
            assert missing.is_error and error_of(missing)["type"] == "not_found", f"{case.id}: it was stored"
    assert await snapshot(client, corpus) == before, f"{case.id}: a refused call changed something"
