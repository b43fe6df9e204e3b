"""The code toolset on every store, over stdio with the official client: a small tree in five languages
(Python by ast; Go, TypeScript, Rust, Java by tree-sitter) indexed and searched on SQLite with a real
``chroma run`` server, and on PostgreSQL with a Chroma server and with pgvector: definitions found in
another spelling, folder and language filters held inside every index, an edit re-read alone, a clear."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_postgres_stdio import pgvector_available
from tests.support.chroma_server import chroma_server
from tests.support.mcp_procs import BlockingClient, blocking, stdio_session
from tests.support.postgres import fresh_database

pytestmark = pytest.mark.slow

TREE = {
    "api/users.py": 'def fetch_account_balance(account_id):\n    """Read the balance of one account."""\n'
                    '    return LEDGER[account_id]\n',
    "server/router.go": 'package server\n\nimport "net/http"\n\n// Router sends requests to handlers.\n'
                        'type Router struct{ routes map[string]http.Handler }\n\n'
                        'func (r *Router) RegisterRoute(path string, h http.Handler) {\n\tr.routes[path] = h\n}\n',
    "web/cart.ts": 'import { Item } from "./item";\n\nexport interface Cart { items: Item[] }\n\n'
                   'export function computeCartTotal(cart: Cart): number {\n'
                   '  return cart.items.reduce((sum, item) => sum + item.price, 0);\n}\n',
    "engine/physics.rs": 'use std::f64;\n\npub struct Body { pub mass: f64 }\n\nimpl Body {\n'
                         '    pub fn apply_gravity_force(&mut self, dt: f64) -> f64 {\n        self.mass * 9.81 * dt\n    }\n}\n',
    "app/Invoice.java": 'package app;\n\nimport java.util.List;\n\npublic class Invoice {\n'
                        '    public double sumLineItems(List<Double> lines) {\n'
                        '        return lines.stream().mapToDouble(Double::doubleValue).sum();\n    }\n}\n',
}


def call(client: BlockingClient, tool: str, **arguments: Any) -> dict[str, Any]:
    result = client.call(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content


@pytest.fixture(params=["sqlite+chroma-server", "postgres+chroma-server", "postgres+pgvector"])
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[BlockingClient, Path]]:
    root = tmp_path / "roots" / "shop"
    for path, text in TREE.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    env = {"MEMTROVE_TOOLSETS": "core,code", "MEMTROVE_CODE_ROOTS": str(tmp_path / "roots")}
    with ExitStack() as stack:
        if request.param.startswith("postgres"):
            postgres_url = request.getfixturevalue("postgres_url")
            database = fresh_database(postgres_url)
            env["MEMTROVE_DATABASE_URL"] = database
            if request.param.endswith("pgvector"):
                if not pgvector_available(database):
                    pytest.skip("the pgvector extension is not installed")
                env["MEMTROVE_VECTOR_STORE"] = "pgvector"
        if request.param.endswith("chroma-server"):
            env.update(stack.enter_context(chroma_server(tmp_path / "chroma", tmp_path / "chroma.log")).env())
        client = stack.enter_context(blocking(stdio_session(tmp_path / "data", env, tmp_path / "stderr.log")))
        yield client, root


def test_every_language_indexed_searched_and_kept_current(world) -> None:
    client, root = world
    done = call(client, "index_codebase", path=str(root))
    assert (done["status"], done["files"], done["indexed"], done["failed"]) == ("indexed", 5, 5, 0)
    for query, path, symbol, language in [
            ("fetchAccountBalance", "api/users.py", "fetch_account_balance", "python"),
            ("register_route", "server/router.go", "Router.RegisterRoute", "go"),
            ("compute cart total", "web/cart.ts", "computeCartTotal", "typescript"),
            ("ApplyGravityForce", "engine/physics.rs", "Body.apply_gravity_force", "rust"),
            ("sum_line_items", "app/Invoice.java", "Invoice.sumLineItems", "java")]:
        top = call(client, "search_code", query=query, limit=3)["results"][0]
        assert (top["path"], top["symbol"], top["language"]) == (path, symbol, language), query
        only = call(client, "search_code", query=query, language=language, limit=10)["results"]
        assert {h["language"] for h in only} == {language}
    folder = call(client, "search_code", query="total", path=str(root / "web"), limit=10)["results"]
    assert {h["path"] for h in folder} == {"web/cart.ts"}

    (root / "web/cart.ts").write_text(TREE["web/cart.ts"] + "\nexport const applyCoupon = (total: number) => total * 0.9;\n")
    again = call(client, "index_codebase", path=str(root))
    assert (again["indexed"], again["unchanged"]) == (1, 4)
    coupon = call(client, "search_code", query="apply_coupon", limit=1)["results"][0]
    assert (coupon["path"], coupon["symbol"], coupon["symbol_kind"]) == ("web/cart.ts", "applyCoupon", "function")

    assert call(client, "clear_index", path=str(root))["files_removed"] == 5
    assert client.call("search_code", {"query": "apply_coupon"}).is_error
