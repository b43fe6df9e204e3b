"""The page at /ui in a real browser: Debian's chromium, headless, driven by Playwright, against a real
``memtrove serve --transport http`` on the embedded default. Search and open a passage, edit a memory
(a bad field refused beside it, nothing changed), delete, upload with progress, refused without a
token, refused from another principal, a token revoked from the page. Each test saves a screenshot
(MEMTROVE_SCREENSHOTS names the folder: the README's come from there)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.ui_support import browser, call, page_of, shots  # noqa: F401 - fixtures
from tests.support.mcp_procs import blocking, http_server, http_session, run_cli

pytestmark = pytest.mark.slow

FILLER = " ".join(f"Step {i}: rinse the cup, warm the pot and keep the lid on while it rests." for i in range(12))
GUIDE = (f"# Kettle guide\n\nFill the kettle with fresh water. {FILLER}\n\n## Green tea\n\n"
         "Brew green tea at eighty degrees for two minutes; boiling water makes it bitter.\n\n"
         f"## Black tea\n\nBlack tea wants boiling water and four minutes. {FILLER}\n")


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A loopback server with no token: the local owner's, through a session cookie."""
    data = tmp_path_factory.mktemp("ui-local") / "data"
    with http_server(data, {"MEMTROVE_TOOLSETS": "all"}) as server:
        with blocking(http_session(server.mcp_url)) as client:
            call(client, "memory_store", content="Alice prefers green tea over coffee", type="preference",
                        confidence=0.9)
            call(client, "memory_store", content="The team standup moved to 9:30", type="fact", confidence=0.8)
            call(client, "artifact_ingest", artifact_type="doc", source_system="wiki", source_id="kettle.md",
                        title="Kettle guide", content=GUIDE)
            for i, text in enumerate(("Which kettle should we buy?", "The steel one with a thermostat.")):
                call(client, "history_append", conversation_id="kitchen/kettle", role=("user", "assistant")[i],
                     content=text, turn_index=i, ts=f"2026-03-0{i + 1}T09:00:00Z")
            call(client, "create_entities", entities=[
                {"name": "Kettle", "entityType": "appliance", "observations": ["steel, with a thermostat"]},
                {"name": "Kitchen", "entityType": "room", "observations": []}])
            call(client, "create_relations", relations=[{"from": "Kettle", "to": "Kitchen", "relationType": "sits in"}])
            call(client, "canonical_upsert", canonicalKey="kettle", docClass="app_spec", title="Kettle spec",
                 contentMarkdown="# Kettle\n\nBoils at 100 degrees.", idempotencyKey="k1")
            call(client, "canonical_upsert", canonicalKey="kettle", docClass="app_spec", title="Kettle spec",
                 contentMarkdown="# Kettle\n\nBoils at 100 degrees, keeps warm at 80.", idempotencyKey="k2")
        yield server


def test_search_opens_the_passage_highlighted(browser, local, shots: Path) -> None:
    page = page_of(browser, local.base_url)
    page.goto("/ui/search")
    assert page.locator("#whoami").inner_text() == "local"  # the owner, by the cookie the first page set
    page.get_by_label("Query").fill("how hot for green tea")
    page.get_by_role("button", name="Search").click()
    hits = page.locator("li.hit")
    assert hits.count() >= 2  # the guide's passage and the memory
    assert "green" in page.locator("li.hit mark").first.inner_text().lower()
    assert hits.filter(has_text="Alice prefers green tea").count() == 1
    page.screenshot(path=str(shots / "search.png"), full_page=True)
    hits.filter(has_text="eighty degrees").first.get_by_role("link", name="Open").click()
    passage = page.locator("[aria-current=true] mark")
    assert "eighty degrees" in passage.inner_text()
    assert page.locator("[aria-current=true] .heading").inner_text().endswith("Green tea")
    page.screenshot(path=str(shots / "artifact.png"), full_page=True)


def test_browse_a_conversation_and_a_documents_versions(browser, local, shots: Path) -> None:
    page = page_of(browser, local.base_url)
    page.goto("/ui/conversations")
    row = page.locator("#conversations tr", has_text="kitchen/kettle")
    assert row.locator("td").nth(1).inner_text() == "2"
    row.get_by_role("link", name="kitchen/kettle").click()
    assert page.locator(".turn").all_inner_texts()[1].endswith("The steel one with a thermostat.")
    page.screenshot(path=str(shots / "conversation.png"), full_page=True)
    page.goto("/ui/documents")
    page.locator("#documents").get_by_role("link", name="Kettle spec").click()
    page.get_by_label("Compare with").select_option("1")
    page.get_by_role("button", name="Show").click()
    assert "+Boils at 100 degrees, keeps warm at 80." in page.locator("pre.diff").inner_text()
    page.screenshot(path=str(shots / "document.png"), full_page=True)
    page.goto("/ui/graph")
    assert page.locator("#relations tbody tr").first.inner_text().split("\t") == ["Kettle", "sits in", "Kitchen"]
    page.get_by_label("Find entities (name, type or observation)").fill("THERMOSTAT")
    page.get_by_role("button", name="Find").click()
    assert page.locator("#entities tbody tr").all_inner_texts()[0].startswith("Kettle\tappliance")
    page.screenshot(path=str(shots / "graph.png"), full_page=True)


def test_edit_a_memory_and_a_bad_field_is_refused_beside_it(browser, local, shots: Path) -> None:
    page = page_of(browser, local.base_url)
    page.goto("/ui/memories")
    page.get_by_role("link", name="The team standup moved to 9:30").click()
    page.get_by_label("Confidence (0.0–1.0)").fill("1.7")
    page.get_by_label("Content").fill("The team standup moved to 10:00")
    page.get_by_role("button", name="Save").click()
    error = page.locator("#edit-error")
    assert "confidence" in error.inner_text() and "Nothing was changed" in error.inner_text()
    page.screenshot(path=str(shots / "memory-refused.png"), full_page=True)
    page.goto(page.url)  # read back: unchanged
    assert page.locator(".memory-content").inner_text() == "The team standup moved to 9:30"
    page.get_by_label("Content").fill("The team standup moved to 10:00")
    page.get_by_label("Confidence (0.0–1.0)").fill("0.6")
    page.get_by_label("Sensitivity").select_option("sensitive")
    page.get_by_role("button", name="Save").click()
    assert page.get_by_role("status").inner_text() == "Saved (confidence, content, privacy changed)."
    assert page.locator(".memory-content").inner_text() == "The team standup moved to 10:00"
    page.screenshot(path=str(shots / "memory.png"), full_page=True)
    page.goto("/ui/search?q=standup+10:00")
    assert page.locator("li.hit").filter(has_text="10:00").count() == 1  # searchable at once, as edited
    page.goto("/ui/audit?action=edit")
    assert page.locator("#audit tbody tr").first.inner_text().split("\t")[1:4] == ["local", "edited", "memory"]
    page.screenshot(path=str(shots / "audit.png"), full_page=True)


def test_delete_asks_first_then_the_memory_is_gone(browser, local, shots: Path) -> None:
    page = page_of(browser, local.base_url)
    page.goto("/ui/memories")
    page.get_by_role("link", name="Alice prefers green tea over coffee").click()
    url = page.url
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.get_by_role("button", name="Delete memory").click()
    assert page.url == url  # dismissed: nothing sent
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete memory").click()
    page.wait_for_url(re.compile(r"/ui/memories\?deleted="))
    assert page.get_by_text("Alice prefers green tea").count() == 0
    page.goto(url)
    # Not "Refused ... Nothing was changed": nothing was asked to change; it is gone.
    assert page.locator("h1").inner_text() == "Not found" and "not found" in page.locator(".error").inner_text()
    assert "may have been deleted" in page.locator("main").inner_text()
    assert "Nothing was changed" not in page.locator("main").inner_text()
    page.screenshot(path=str(shots / "memories.png"), full_page=True)


def test_upload_shows_progress_and_the_file_is_searchable(browser, local, shots: Path, tmp_path: Path) -> None:
    notes = tmp_path / "espresso.md"
    notes.write_text("# Espresso\n\n" + "\n\n".join(f"## Shot {i}\n\nPull shot {i} at nine bar for "
                                                  f"{20 + i} seconds with a fine grind." for i in range(40)))
    page = page_of(browser, local.base_url)
    page.goto("/ui/ingest")
    page.get_by_label("Files (UTF-8 text").set_input_files(str(notes))
    page.get_by_role("button", name="Ingest").click()  # htmx: the upload's progress, then the result
    result = page.locator("#ingest-results li")
    result.wait_for()
    assert "espresso.md" in result.inner_text()
    page.locator("#ingest-results").get_by_text("indexed: searchable now").wait_for(timeout=60_000)
    assert page.locator("body").get_attribute("data-uploaded") == "100"  # the upload's bar reached its end
    page.screenshot(path=str(shots / "ingest.png"), full_page=True)
    page.goto("/ui/search?q=nine+bar+fine+grind")
    assert page.locator("li.hit").filter(has_text="nine bar").count() >= 1
    page.goto("/ui/health")
    assert "Artifacts" in page.locator("dl.facts").inner_text()
    page.screenshot(path=str(shots / "health.png"), full_page=True)
    page.goto("/ui/ingest")
    page.get_by_role("button", name="Ingest").click()  # nothing chosen: refused, named
    assert "content" in page.locator("#ingest-error").inner_text()


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[object, dict[str, str]]]:
    """A server with tokens: bob's and carol's, and the owner's shared token."""
    data = tmp_path_factory.mktemp("ui-guarded") / "data"
    secrets = {"owner": "owners-shared-token"}
    for user in ("bob", "carol"):
        made = run_cli(["token", "create", "--user", user, "--team", "eng"], data)
        assert made.returncode == 0, made.stderr
        secrets[user] = re.search(r"secret:\s+(\S+)", made.stdout).group(1)
        secrets[user + "_id"] = re.search(r"token_id:\s+(\S+)", made.stdout).group(1)
    with http_server(data, token=secrets["owner"]) as server:
        with blocking(http_session(server.mcp_url, token=secrets["bob"])) as bob:
            stored = call(bob, "memory_store", content="Bob's salary review is in March", type="fact", confidence=1.0)
        secrets["bob_memory"] = stored["id"]
        yield server, secrets


def sign_in(page, secret: str) -> None:
    page.goto("/ui/search")
    assert "/ui/login" in page.url
    page.get_by_label("Token").fill(secret)
    page.get_by_role("button", name="Sign in").click()


def test_refused_without_a_token(browser, guarded, shots: Path) -> None:
    server, _ = guarded
    assert httpx.get(f"{server.base_url}/ui/memories", follow_redirects=False).status_code == 303
    assert httpx.post(f"{server.base_url}/ui/ingest", data={"content": "x"}).status_code == 401
    page = page_of(browser, server.base_url)
    sign_in(page, "not-a-token")
    assert page.get_by_role("alert").inner_text() == "That token is missing, wrong or revoked."
    page.screenshot(path=str(shots / "login.png"), full_page=True)
    page.goto("/ui/memories")
    assert "/ui/login" in page.url  # still nobody


def test_another_principal_sees_nothing_of_bobs_and_cannot_change_it(browser, guarded, shots: Path) -> None:
    server, secrets = guarded
    bob = page_of(browser, server.base_url)
    sign_in(bob, secrets["bob"])
    bob.goto("/ui/memories")
    assert bob.get_by_text("Bob's salary review is in March").count() == 1
    carol = page_of(browser, server.base_url)
    sign_in(carol, secrets["carol"])
    assert carol.locator("#whoami").inner_text() == "carol"
    carol.goto("/ui/memories")
    assert carol.get_by_text("salary").count() == 0
    carol.goto("/ui/search?q=salary+review")
    assert carol.locator("li.hit").count() == 0
    carol.goto(f"/ui/memories/{secrets['bob_memory']}")
    assert "not found" in carol.locator(".error").inner_text()
    csrf = carol.locator("input[name=csrf]").first.get_attribute("value")
    answer = carol.request.post(f"/ui/memories/{secrets['bob_memory']}/delete", form={"csrf": csrf})
    assert answer.status == 404  # as for a memory that does not exist
    forged = carol.request.post(f"/ui/memories/{secrets['bob_memory']}/delete", form={"csrf": "forged"})
    assert forged.status == 403
    carol.goto("/ui/audit")
    assert carol.locator("#tokens").count() == 0  # tokens are the owner's business
    carol.screenshot(path=str(shots / "other-principal.png"), full_page=True)
    bob.goto("/ui/memories")
    assert bob.get_by_text("Bob's salary review is in March").count() == 1  # still there


def test_the_owner_revokes_a_token_from_the_page(browser, guarded, shots: Path) -> None:
    server, secrets = guarded
    carol = page_of(browser, server.base_url)
    sign_in(carol, secrets["carol"])
    owner = page_of(browser, server.base_url)
    sign_in(owner, secrets["owner"])
    owner.goto("/ui/audit")
    bobs = owner.locator("#tokens tr", has_text=secrets["bob_id"])
    reads, writes, refused = (int(n) for n in bobs.locator("td").nth(4).inner_text().split(" · "))
    assert writes >= 1 and bobs.locator("td").nth(5).inner_text() != "—"  # his memory_store, through his token
    bobs.get_by_role("link", name=secrets["bob_id"]).click()
    row = owner.locator("#audit tbody tr").first.inner_text().split("\t")
    assert row[1:4] == ["bob", "stored", "memory"] and row[5] == secrets["bob_id"]  # the client it came through
    owner.goto("/ui/audit")
    owner.once("dialog", lambda dialog: dialog.accept())
    owner.get_by_role("button", name=f"Revoke {secrets['carol_id']}").click()
    assert owner.get_by_role("status").inner_text() == f"Revoked {secrets['carol_id']}."
    owner.screenshot(path=str(shots / "tokens.png"), full_page=True)
    carol.goto("/ui/memories")
    assert "/ui/login" in carol.url  # her session ended with her token
    assert httpx.post(server.mcp_url, headers={"Authorization": f"Bearer {secrets['carol']}"},
                      json={}).status_code == 401


def test_the_page_refuses_what_another_site_or_a_stored_link_could_do(local, tmp_path: Path) -> None:
    """A javascript: source_url is shown, never linked; scripts only from the page's own files (CSP); a
    POST from another site's page (Origin) and a body over the page's limit are refused, nothing done."""
    with blocking(http_session(local.mcp_url)) as client:
        made = call(client, "artifact_ingest", artifact_type="note", source_system="web", source_id="trap",
                    source_url="javascript:alert(document.cookie)", content="A page an agent read.")
    with httpx.Client(base_url=local.base_url) as browser:
        page = browser.get(f"/ui/artifacts/{made['artifact_id']}")
        assert page.status_code == 200 and 'href="javascript:' not in page.text
        assert "<code>javascript:alert(document.cookie)</code>" in page.text
        assert "script-src 'self'" in page.headers["content-security-policy"]
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        foreign = browser.post(f"/ui/artifacts/{made['artifact_id']}/delete", data={"csrf": csrf},
                               headers={"Origin": "http://evil.example"})
        assert foreign.status_code == 403
        huge = browser.post("/ui/ingest", data={"csrf": csrf}, files={"files": ("big.txt", b"a" * 22_000_000)})
        assert huge.status_code == 413
        assert browser.get(f"/ui/artifacts/{made['artifact_id']}").status_code == 200  # still there
        assert browser.get("/ui/sessions?iter=%C2%B2").status_code == 400  # "²" is no number: refused, no 500
