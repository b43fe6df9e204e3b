"""The page's timeline at /ui/timeline, without a browser: the HTTP app `memtrove serve --transport http`
serves (the local owner's on loopback, no token), called in process. Events build_graph read from a
conversation, a memory and a chunked document are listed in date order under their month, each opening
where it was read; kinds narrow the list; a page is followed by its cursor; a bad date is refused with
the tool's own message beside the form; before any build, the page says how events are made."""

from __future__ import annotations

import asyncio
import html
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from config.settings import Settings
from domain.access.principal import local_principal
from entrypoints.http import build_http_app
from entrypoints.mcp.server import build_server
from entrypoints.runtime import Runtime
from entrypoints.web import views_timeline
from entrypoints.web.caller import ToolCaller, ToolFailed

FILLER = " ".join(f"Step {i}: rinse the cup, warm the pot and keep the lid on while it rests." for i in range(12))
NOTES = (f"# Release notes\n\nWhere the plan stood. {FILLER}\n\n## Billing\n\n"
         "We agreed on 12 February 2024 to keep the old invoice format.\n\n"
         f"## Other\n\nMore notes. {FILLER}\n")
# In date order: the memory's date is the one it writes, the launch decision's "Friday" is the one before
# its turn (4 March 2024, a Monday), Tom's action has no date of its own (its turn's time).
IN_ORDER = ["Lena completed the security review on 2 January 2024.",
            "We agreed on 12 February 2024 to keep the old invoice format.",
            "We decided to move the launch to Friday.",
            "Tom will schedule the load test."]
EVENT = re.compile(r'<li class="hit event kind-(\w+)">(.*?)</li>', re.S)


class Page:
    def __init__(self, client: TestClient, runtime: Runtime, before_build: str) -> None:
        self.client, self.runtime, self.before_build = client, runtime, before_build

    def get(self, url: str, status: int = 200) -> str:
        answer = self.client.get(url)
        assert answer.status_code == status, answer.text
        return answer.text


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    runtime = Runtime(Settings(memtrove_data_dir=tmp_path_factory.mktemp("web-timeline") / "data",
                               memtrove_warmup=False))
    runtime.start()
    try:
        client = TestClient(build_http_app(build_server(runtime), runtime, "127.0.0.1"),
                            base_url="http://127.0.0.1:3000")
        before_build = client.get("/ui/timeline").text
        asyncio.run(seed(runtime))
        yield Page(client, runtime, before_build)
    finally:
        runtime.shutdown()


async def seed(runtime: Runtime) -> None:
    call, owner = ToolCaller(runtime), local_principal(runtime.settings.memtrove_local_clearance)
    for index, (text, ts) in enumerate([("Priya: We decided to move the launch to Friday.", "2024-03-04T09:00:00Z"),
                                        ("Tom: Tom will schedule the load test.", "2024-03-06T09:00:00Z")]):
        await call(owner, "history_append", conversation_id="launch", role="user", content=text,
                   turn_index=index, ts=ts)
    await call(owner, "memory_store", content=IN_ORDER[0], type="fact", confidence=0.9)
    made = await call(owner, "artifact_ingest", artifact_type="doc", source_system="notes", source_id="release.md",
                      content=NOTES, ts="2024-02-10T10:00:00Z")
    assert made["is_chunked"]  # so its event names a chunk, and the link opens that passage
    built = await call(owner, "build_graph")
    assert built["status"] == "success", built


def events(text: str) -> list[dict[str, Any]]:
    """Each event on a page: kind, date, summary, source link."""
    found = []
    for kind, body in EVENT.findall(text):
        date = re.search(r'<time(?: datetime="([^"]*)")?>', body)
        summary = re.search(r'<p class="snippet summary">(.*?)</p>', body, re.S)
        link = re.search(r'<a href="([^"]*)">Open source</a>', body)
        found.append({"kind": kind, "date": date and date.group(1), "summary": html.unescape(summary.group(1)),
                      "link": link and html.unescape(link.group(1))})
    return found


def test_events_in_date_order_by_month_each_opening_its_source(page: Page) -> None:
    text = page.get("/ui/timeline")
    shown = events(text)
    assert [e["summary"] for e in shown] == IN_ORDER
    assert [e["date"][:10] for e in shown] == sorted(e["date"][:10] for e in shown)
    assert [e["kind"] for e in shown] == ["milestone", "decision", "decision", "action"]
    assert re.findall(r"<h2>(.*?)</h2>", text) == ["January 2024", "February 2024", "March 2024"]
    assert '<a href="/ui/timeline">Timeline</a>' in text  # in the navigation
    memory, notes, decided, action = (e["link"] for e in shown)
    assert re.fullmatch(r"/ui/memories/mem_[0-9a-f]{32}", memory) and IN_ORDER[0] in page.get(memory)
    assert (decided, action) == ("/ui/conversations/launch#turn-0", "/ui/conversations/launch#turn-1")
    assert 'id="turn-1"' in page.get("/ui/conversations/launch")
    found = re.fullmatch(r"/ui/artifacts/(art_[0-9a-f]{32})\?chunk=(\d+)#chunk-(\d+)", notes)
    assert found and found.group(2) == found.group(3)
    passage = re.search(r'aria-current="true">(.*?)</li>', page.get(notes), re.S)
    assert passage and f'id="chunk-{found.group(2)}"' in passage.group(1)
    assert IN_ORDER[1] in passage.group(1) and "passage-text" in passage.group(1)  # that chunk, marked
    by_day = re.findall(r"<h2>(.*?)</h2>", page.get("/ui/timeline?group=day"))
    assert by_day == ["2 January 2024", "12 February 2024", "1 March 2024", "6 March 2024"]


def test_kinds_and_a_conversation_narrow_the_timeline(page: Page) -> None:
    decisions = events(page.get("/ui/timeline?kinds=decision"))
    assert [e["summary"] for e in decisions] == [IN_ORDER[1], IN_ORDER[2]]
    two = events(page.get("/ui/timeline?kinds=decision&kinds=action&conversation_id=launch"))
    assert [e["summary"] for e in two] == IN_ORDER[2:]
    assert 'value="action" checked' in page.get("/ui/timeline?kinds=action")
    assert "No events match these filters" in page.get("/ui/timeline?conversation_id=elsewhere")


def test_the_next_page_follows_the_cursor_with_the_filters(page: Page, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(views_timeline, "PAGE", 2)
    first = page.get("/ui/timeline?kinds=decision&kinds=milestone&kinds=action")
    more = re.search(r'<a rel="next" href="([^"]*)">Next page</a>', first)
    assert [e["summary"] for e in events(first)] == IN_ORDER[:2] and more
    second = page.get(html.unescape(more.group(1)))
    assert [e["summary"] for e in events(second)] == IN_ORDER[2:]
    assert "kinds=action" in more.group(1) and 'rel="next"' not in second


def test_a_bad_date_is_refused_beside_the_form_with_the_tools_message(page: Page) -> None:
    with pytest.raises(ToolFailed) as refused:
        asyncio.run(ToolCaller(page.runtime)(local_principal(), "timeline", since="not a date"))
    text = page.get("/ui/timeline?since=not+a+date&kinds=decision", status=400)
    error = re.search(r'<p class="error" role="alert" id="timeline-error">(.*?)</p>', text, re.S)
    assert error and html.unescape(error.group(1)) == f"<strong>since</strong>: {refused.value.message}"
    assert 'id="since" name="since" value="not a date"' in text and 'aria-invalid="true"' in text
    assert events(text) == []


def test_an_empty_timeline_says_to_run_build_graph(page: Page) -> None:
    assert events(page.before_build) == [] and "No events yet" in page.before_build
    said = " ".join(html.unescape(re.sub(r"<[^>]+>", "", page.before_build)).split())
    assert "No events yet. Events are made when build_graph" in said  # two sentences, not "yet.Events"
    assert "<code>build_graph</code>" in page.before_build
