"""The artifact scenario (ingest, search in every mode, filters, delete) with PostgreSQL as the store, its
vectors in Chroma and in pgvector (rows, lexical index and vectors in one database)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.e2e import artifact_scenario as scenario
from tests.support.mcp_procs import BlockingClient, blocking, stdio_session
from tests.support.postgres import fresh_database

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=["chroma", "pgvector"])
def client(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
           postgres_url: str) -> Iterator[BlockingClient]:
    root = tmp_path_factory.mktemp(f"e2e-postgres-{request.param}")
    database = fresh_database(postgres_url)
    if request.param == "pgvector" and not pgvector_available(database):
        pytest.skip("the pgvector extension is not installed (apt-get install postgresql-<major>-pgvector)")
    env = {"MEMTROVE_DATABASE_URL": database, "MEMTROVE_VECTOR_STORE": request.param, **scenario.OWNER_ENV}
    with blocking(stdio_session(root / "data", env=env, stderr_path=root / "stderr.log")) as connected:
        yield connected


def pgvector_available(url: str) -> bool:
    from sqlalchemy import text

    from adapters.sql.store import make_engine

    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            return conn.execute(text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")).first() is not None
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def corpus(client: BlockingClient) -> scenario.Corpus:
    return client.run(scenario.seed)


@pytest.mark.parametrize("check", scenario.CHECKS, ids=lambda check: check.__name__.removeprefix("check_"))
def test_artifact_scenario_on_postgres(client: BlockingClient, corpus: scenario.Corpus,
                                       check: Callable[..., Any]) -> None:
    client.run(check, corpus)
