"""Documents searchable fast on the local model (issue 29), through ``memtrove-bench ingest``: Python's
library documents through artifact_ingest over MCP stdio on a fresh server of the default model.

Under ./scripts/bench all 90 documents (2.7 MB) go in and the issue's target is held: at most 120 s
per MB to fully embedded with MiniLM (300 with MEMTROVE_LOCAL_MODEL=e5-small). The smoke run ingests
two documents and checks the figures are there and sane: every chunk has its vectors, both cores'
shares are read, the calls are timed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bench import ingest
from bench.passages import DOCS
from tests.benchmarks.conftest import FULL, assert_timing

pytestmark = pytest.mark.slow
TARGET_SECONDS_PER_MB = {"minilm": 120, "e5-small": 300}


@pytest.mark.skipif(not DOCS.is_dir(), reason="needs Python's documentation sources (Debian: python3-doc)")
def test_documents_are_embedded_within_the_target_per_mb(tmp_path: Path, report) -> None:
    out = tmp_path / "ingest.json"
    assert ingest.main(None if FULL else 2, 2, None, 1, out) == 0
    run = json.loads(out.read_text())["runs"][0]
    assert run["documents"] == (90 if FULL else 2) and run["chunks"] > 0
    assert run["pieces"] >= run["chunks"]  # a chunk's vectors: one piece or more
    assert len(run["core_busy"]) >= 1 and all(0 <= share <= 1 for share in run["core_busy"])
    assert run["call_seconds"]["calls"] == run["documents"] and run["peak_rss_mb"] > 0
    report(**run)
    model = os.environ.get("MEMTROVE_LOCAL_MODEL", "minilm")
    assert_timing(run["seconds_per_mb"] <= TARGET_SECONDS_PER_MB[model],
                  f"{run['seconds_per_mb']} s per MB > {TARGET_SECONDS_PER_MB[model]} with {model}")
