"""What the page's browser tests share: Debian's chromium driven by Playwright (module-scoped), the folder
screenshots go to (MEMTROVE_SCREENSHOTS, the README's), a tool call over MCP, a fresh page, and a watch on
the browser's console (errors, CSP refusals) and on every answer of 400 or more (a favicon's 404 too)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

playwright = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip("Debian's chromium is not installed (./scripts/test installs it with apt-get as root)",
                allow_module_level=True)


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = Path(os.environ.get("MEMTROVE_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with playwright.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield launched
        launched.close()


def call(client, tool: str, **arguments: object) -> dict:
    result = client.call(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content


def page_of(browser: object, base: str):
    context = browser.new_context(base_url=base)  # type: ignore[attr-defined]
    return context.new_page()


class Watched:
    """A page whose console errors, uncaught script errors and failed answers (status >= 400) are kept."""

    def __init__(self, browser: object, base: str) -> None:
        self.page = page_of(browser, base)
        self.problems: list[str] = []
        self.page.on("console", lambda m: self.problems.append(f"console {m.type}: {m.text}")
                     if m.type in ("error", "warning") else None)
        self.page.on("pageerror", lambda e: self.problems.append(f"script error: {e}"))
        self.page.on("response", lambda r: self.problems.append(f"HTTP {r.status} {r.url}") if r.status >= 400 else None)
        self.page.on("requestfailed", lambda r: self.problems.append(f"failed {r.url}: {r.failure}"))

    def visit(self, path: str) -> list[str]:
        """Open ``path``, let its scripts run (and the browser ask for its icon); the problems it caused."""
        before = len(self.problems)
        self.page.goto(path)
        self.page.wait_for_load_state("networkidle")
        return self.problems[before:]
