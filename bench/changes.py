"""``memtrove-bench changes``: memory_changes on a big change log. A SQLite store's log is filled with
``--events`` changes over a year (memories, turns and artifacts of 50 conversations and 20 sources, a
tenth of them another caller's and private; straight into the table: the figure is the read), then
``MemoryChanges`` answers windows of a day and a week, by conversation, by source and by kind, each
``--queries`` times; p50/p95 per question, and the log's size on disk."""

from __future__ import annotations

import json
import random
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from bench.common import latency

START = datetime(2025, 1, 1, tzinfo=timezone.utc)


def main(events: int, queries: int, out: Path) -> int:
    from sqlalchemy import insert

    from adapters.sql.changes import changes
    from adapters.sql.ledger import SqlStore
    from adapters.sql.store import make_engine
    from domain.access.principal import Principal, RequestContext
    from domain.changes.usecases import MemoryChanges

    rng = random.Random(11)
    kinds, collections = ("added", "changed", "superseded", "deleted"), ("memory", "turn", "artifact")
    mine, theirs = json.dumps({"acl": ["u:local"], "sensitivity": "normal", "expires_epoch": 1e18}), \
        json.dumps({"acl": ["u:bob"], "sensitivity": "normal", "expires_epoch": 1e18})
    with tempfile.TemporaryDirectory(prefix="memtrove-changes-") as scratch:
        path = Path(scratch) / "changes.sqlite3"
        engine = make_engine(f"sqlite:///{path}")
        store = SqlStore(engine)
        started = time.perf_counter()
        step = 365 * 86400 / events
        with engine.begin() as conn:
            for first in range(0, events, 50_000):
                rows = []
                for n in range(first, min(events, first + 50_000)):
                    at = START + timedelta(seconds=n * step)
                    collection = rng.choice(collections)
                    rows.append({"ts": at.strftime("%Y-%m-%dT%H:%M:%SZ"), "ts_epoch": at.timestamp(),
                                 "kind": rng.choice(kinds), "collection": collection, "item_id": f"item{n}",
                                 "actor": "local", "conversation_id": f"c{rng.randrange(50)}"
                                 if collection != "artifact" else None,
                                 "source": f"s{rng.randrange(20)}" if collection == "artifact" else None,
                                 "access": theirs if rng.random() < 0.1 else mine, "detail": "{}"})
                conn.execute(insert(changes), rows)
        report: dict = {"events": events, "load_seconds": round(time.perf_counter() - started, 1),
                        "disk_mb": round(path.stat().st_size / 2**20, 1)}
        ask = MemoryChanges(store, identity=lambda: RequestContext(Principal("local")))
        questions = {
            "a day, 50 a page": lambda day: ask(_iso(day), _iso(day + timedelta(days=1)), limit=50),
            "a week, 500 a page": lambda day: ask(_iso(day), _iso(day + timedelta(days=7)), limit=500),
            "a week, one conversation": lambda day: ask(_iso(day), _iso(day + timedelta(days=7)),
                                                        conversation_id="c7"),
            "a month, one source, deletions": lambda day: ask(_iso(day), _iso(day + timedelta(days=30)),
                                                              source="s3", kinds=["deleted"]),
        }
        for name, question in questions.items():
            ms, counts = [], []
            for _ in range(queries):
                day = START + timedelta(days=rng.randrange(330))
                begun = time.perf_counter()
                found, _ = question(day)
                ms.append((time.perf_counter() - begun) * 1000)
                counts.append(len(found))
            report[name] = {**latency(ms), "changes_p50": sorted(counts)[len(counts) // 2]}
        store.close()
    out.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))
    return 0


def _iso(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")
