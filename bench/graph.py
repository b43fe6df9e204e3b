"""``memtrove-bench graph``: get_related's walk on a big graph. A SQLite store is loaded with
``--entities`` entities and ``--relations`` random relations between them (straight into its tables:
the figure is the walk, not the writes), then ``KnowledgeGraph.related`` runs from random entities at
depth 1, 2 and 3; p50/p95 per depth, and the store's size on disk."""

from __future__ import annotations

import json
import random
import tempfile
import time
from pathlib import Path

from bench.common import latency

KINDS = ("knows", "owns", "near", "part of")


def main(entities: int, relations: int, walks: int, out: Path) -> int:
    from sqlalchemy import insert

    from adapters.sql.graph import graph_entities, graph_relations
    from adapters.sql.ledger import SqlStore
    from adapters.sql.store import make_engine
    from domain.access.principal import Principal, RequestContext
    from domain.graph.usecases import KnowledgeGraph

    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="memtrove-graph-") as scratch:
        path = Path(scratch) / "graph.sqlite3"
        engine = make_engine(f"sqlite:///{path}")
        store = SqlStore(engine)
        started = time.perf_counter()
        with engine.begin() as conn:
            conn.execute(insert(graph_entities), [{"owner": "local", "name": f"e{i}", "entity_type": "thing"}
                                                  for i in range(entities)])
            seen: set[tuple[int, int, str]] = set()
            while len(seen) < relations:
                batch = []
                while len(batch) < 100_000 and len(seen) < relations:
                    edge = (rng.randrange(entities), rng.randrange(entities), rng.choice(KINDS))
                    if edge not in seen:
                        seen.add(edge)
                        batch.append({"owner": "local", "source": f"e{edge[0]}", "target": f"e{edge[1]}",
                                      "relation_type": edge[2]})
                conn.execute(insert(graph_relations), batch)
        report = {"entities": entities, "relations": relations, "load_seconds": round(time.perf_counter() - started, 1),
                  "disk_mb": round(path.stat().st_size / 2**20, 1)}
        graph = KnowledgeGraph(store, identity=lambda: RequestContext(Principal("local")))
        for depth in (1, 2, 3):
            ms, reached = [], []
            for _ in range(walks):
                begun = time.perf_counter()
                found = graph.related(f"e{rng.randrange(entities)}", depth, None, 20)
                ms.append((time.perf_counter() - begun) * 1000)
                reached.append(len(found))
            report[f"depth_{depth}_ms"] = latency(ms)
        store.close()
    out.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))
    return 0
