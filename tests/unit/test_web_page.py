"""The page's parts that need no browser: sessions (token, local owner, revocation, CSRF), the search form
read as hybrid_search's arguments, highlighting that escapes, latency percentiles off the metrics."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, Histogram

from domain.access.principal import Principal
from domain.errors import ValidationError
from entrypoints.auth import Who
from entrypoints.web.app import filesize, highlight, linkable
from entrypoints.web import session as session_module
from entrypoints.web.session import FAILED_LOGINS, LOGIN_WINDOW, SESSIONS_PER_CLIENT, Sessions, Throttled
from entrypoints.web.views_admin import bar_chart, latency_rows
from entrypoints.web.views_search import opened, search_arguments

BOB, LOCAL = Principal("bob"), Principal("local", clearance="sensitive")


class Tokens:
    def __init__(self) -> None:
        self.live = {"bob-secret": BOB, "carol-secret": Principal("carol")}
        self.owner_open = True

    def authenticate(self, secret: str) -> Who | None:
        found = self.live.get(secret)
        return None if found is None else Who(found, "tok_" + secret[:4])

    def anonymous(self) -> Principal | None:
        return LOCAL if self.owner_open else None


def test_a_token_session_ends_when_its_token_is_revoked() -> None:
    tokens = Tokens()
    sessions = Sessions(tokens.authenticate, None)
    assert sessions.login("wrong") is None and sessions.resolve(None, None) is None
    session_id, principal = sessions.login("bob-secret")
    caller = sessions.resolve(None, session_id)
    assert principal == BOB and caller is not None and caller.principal == BOB and not caller.new
    assert caller.via == "tok_bob-"  # the token it signed in with: its writes are audited as through it
    del tokens.live["bob-secret"]
    assert sessions.resolve(None, session_id) is None
    assert sessions.resolve(None, session_id) is None  # ended, not only refused once


def test_the_local_owner_gets_a_session_until_tokens_exist() -> None:
    tokens = Tokens()
    sessions = Sessions(tokens.authenticate, tokens.anonymous)
    first = sessions.resolve(None, None)
    assert first is not None and first.new and first.principal == LOCAL and first.csrf
    again = sessions.resolve(None, first.session_id)
    assert again is not None and not again.new and again.csrf == first.csrf
    assert sessions.resolve("bob-secret", first.session_id).principal == BOB  # a bearer header names its own
    tokens.owner_open = False
    assert sessions.resolve(None, first.session_id) is None


def test_csrf_is_required_of_a_cookie_session_only() -> None:
    tokens = Tokens()
    sessions = Sessions(tokens.authenticate, tokens.anonymous)
    by_cookie = sessions.resolve(None, None)
    assert sessions.csrf_ok(by_cookie, by_cookie.csrf)
    assert not sessions.csrf_ok(by_cookie, None) and not sessions.csrf_ok(by_cookie, "forged")
    assert sessions.csrf_ok(sessions.resolve("bob-secret", None), None)


def test_a_flood_of_one_tokens_sign_ins_ends_only_its_own_oldest_sessions() -> None:
    """10,050 sign-ins with bob's token (past the old global cap of 10,000): carol stays signed in, and bob
    keeps his SESSIONS_PER_CLIENT most recently used sessions."""
    sessions = Sessions(Tokens().authenticate, None)
    carol, _ = sessions.login("carol-secret")
    bobs = [sessions.login("bob-secret")[0] for _ in range(10_050)]
    assert sessions.resolve(None, carol).principal.user_id == "carol"
    assert sessions.resolve(None, bobs[-SESSIONS_PER_CLIENT]) is not None
    assert sessions.resolve(None, bobs[-SESSIONS_PER_CLIENT - 1]) is None
    assert len(sessions._sessions) == SESSIONS_PER_CLIENT + 1  # memory stays bounded per client


def test_failed_sign_ins_are_throttled_by_address(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(session_module.time, "monotonic", lambda: now[0])
    sessions = Sessions(Tokens().authenticate, None)
    for n in range(FAILED_LOGINS):
        assert sessions.login(f"wrong{n}", "10.0.0.1") is None
        now[0] += 1.0
    with pytest.raises(Throttled) as caught:
        sessions.login("bob-secret", "10.0.0.1")  # refused before the secret is even looked at
    assert caught.value.seconds == pytest.approx(LOGIN_WINDOW - FAILED_LOGINS)
    assert sessions.login("bob-secret", "10.0.0.2") is not None  # another address is not held back
    now[0] += LOGIN_WINDOW - FAILED_LOGINS  # the oldest failure ages out: one more try
    assert sessions.login("bob-secret", "10.0.0.1") is not None


def form(**given: str) -> dict[str, str]:
    base = {"q": "tea", "mode": "hybrid", "limit": "10", "memory": "on", "history": "off", "filter": "",
            "artifact_type": "", "source_system": "", "sensitivity": "", "conversation_id": ""}
    return {**base, **given}


def test_the_search_form_becomes_hybrid_search_arguments() -> None:
    arguments = search_arguments(form(source_system="wiki", filter="session_id = s1\n\n tags=a,b"))
    assert arguments == {"query": "tea", "mode": "hybrid", "limit": 10, "include_memory": True,
                         "include_history": False, "filters": {"source_system": "wiki", "session_id": "s1",
                                                               "tags": "a,b"}}
    assert search_arguments(form())["filters"] is None


@pytest.mark.parametrize(("given", "field"), [({"limit": "ten"}, "limit"), ({"limit": "2.5"}, "limit"),
                                              ({"filter": "colour"}, "filters"), ({"filter": "=red"}, "filters")])
def test_a_malformed_form_field_is_refused_by_name(given: dict[str, str], field: str) -> None:
    with pytest.raises(ValidationError) as refused:
        search_arguments(form(**given))
    assert refused.value.field == field


def test_hits_open_where_they_came_from() -> None:
    assert opened({"id": "mem_1", "type": "memory", "content": "x"})["link"] == "/ui/memories/mem_1"
    chunk = opened({"id": "art_1_chunk_2", "type": "chunk", "artifact_id": "art_1", "snippet": "s"})
    assert chunk["link"] == "/ui/artifacts/art_1?passage=art_1_chunk_2#art_1_chunk_2" and chunk["text"] == "s"
    assert opened({"id": "art_1", "type": "artifact", "artifact_id": "art_1"})["link"] == "/ui/artifacts/art_1"
    turn = opened({"id": "c_turn_3", "type": "history", "conversation_id": "c", "turn_index": 3, "content": "t"})
    assert turn["link"] == "/ui/conversations/c#turn-3"  # no provenance (a timeline event): the caller's own
    # A conversation id is each owner's own: a hit opens its owner's conversation (the local owner's unnamed).
    local = opened({"id": "c_turn_3", "type": "history", "conversation_id": "c", "turn_index": 3,
                    "provenance": {"ts": "2026-01-01T00:00:00Z"}})
    bobs = opened({"id": "c_turn_3~x", "type": "history", "conversation_id": "c d", "turn_index": 3,
                   "provenance": {"owner": "bob@acme"}})
    assert (local["link"], bobs["link"]) == ("/ui/conversations/c?owner=local#turn-3",
                                             "/ui/conversations/c%20d?owner=bob%40acme#turn-3")


def test_highlight_escapes_the_text_and_marks_the_query_words() -> None:
    shown = str(highlight("<b>Green</b> tea & greens", "green TEA"))
    assert shown == "&lt;b&gt;<mark>Green</mark>&lt;/b&gt; <mark>tea</mark> &amp; <mark>greens</mark>"
    assert str(highlight("<i>", "")) == "&lt;i&gt;"
    assert str(highlight("a<script>", "<script>")) == "a&lt;<mark>script</mark>&gt;"


def test_latency_percentiles_come_from_the_histogram_buckets() -> None:
    registry = CollectorRegistry()
    latency = Histogram("memtrove_tool_latency_seconds", "latency", ["tool"], buckets=(0.01, 0.1, 1),
                        registry=registry)
    for seconds in [0.005] * 10 + [0.05] * 9 + [0.5]:
        latency.labels("memory_search").observe(seconds)
    assert latency_rows(registry) == [{"name": "memory_search", "calls": 20, "p50_ms": 10.0, "p95_ms": 100.0,
                                       "p50_over": False, "p95_over": False}]
    bars = bar_chart(latency_rows(registry))["bars"]
    assert [(b["label"], b["ms"]) for b in bars] == [("memory_search", 100.0)]
    assert (filesize(512), filesize(2048), filesize(3 * 1024 ** 3)) == ("512 bytes", "2.0 KB", "3.0 GB")


def test_only_web_and_mail_urls_become_links() -> None:
    assert linkable("https://example.org/a") and linkable("HTTP://x") and linkable("mailto:a@b.c")
    assert not any(linkable(u) for u in ("javascript:alert(1)", "JavaScript:x", "data:text/html,x", "vbscript:x",
                                         " javascript:x", None, 3))


def test_the_shipped_htmx_is_the_pinned_release() -> None:
    """htmx 2.0.4's dist/htmx.min.js from npm (htmx.org), as the README pins it."""
    import hashlib
    from pathlib import Path

    shipped = Path(__file__).parents[2] / "entrypoints" / "web" / "static" / "htmx.min.js"
    assert hashlib.sha256(shipped.read_bytes()).hexdigest() == \
        "e209dda5c8235479f3166defc7750e1dbcd5a5c1808b7792fc2e6733768fb447"
    assert "version:\"2.0.4\"" in shipped.read_text() or "2.0.4" in shipped.read_text()
