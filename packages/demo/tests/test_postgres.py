"""``cladelog demo --store postgresql://...``: the same log as on SQLite, hash for hash.

Needs the PostgreSQL server (``$CLADELOG_TEST_PG``, default
``postgresql://postgres@127.0.0.1:5432/test``, which ``.ci/run`` starts); the
test is skipped when psycopg is not installed or the server does not answer.
Each run uses a schema of its own and drops it afterwards.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

PG_URL = os.environ.get("CLADELOG_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


@pytest.fixture
def pg_store() -> Iterator[str]:
    import psycopg  # the demo's environment installs it (requirements-dev)

    try:
        with psycopg.connect(PG_URL, connect_timeout=3):
            pass
    except psycopg.Error as exc:  # fail loudly, as core's and graph-engine's do: CI has it
        pytest.fail(f"PostgreSQL is not reachable at {PG_URL} ({exc}); start it with "
                    "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start")
    schema = f"cl_demo_{uuid.uuid4().hex[:12]}"
    yield f"{PG_URL}?schema={schema}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.mark.postgres
def test_demo_on_postgresql_writes_the_same_log_as_on_sqlite(
        pg_store: str, demo_dir: Path, tmp_path: Path, demo_runner: Callable[..., Result],
        replayed: Callable[[Path], dict[str, Any]],
        hashes: Callable[[Path, Path], list[str]],
        sizes: Callable[[Path], tuple[int, int]]) -> None:
    target = tmp_path / "pg"
    result = demo_runner(target, 1, "--store", pg_store)
    assert result.exit_code == 0, result.output
    assert not (target / "cladelog.sqlite3").exists()
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
    on_pg = hashes(target / "cladelog.toml", tmp_path / "a")
    on_sqlite = hashes(demo_dir / "cladelog.toml", tmp_path / "b")
    events, records = sizes(target / "cladelog.toml")  # the graph session's records packed
    assert len(on_pg) == events and records > 100 and on_pg == on_sqlite
    pg, lite = replayed(target / "cladelog.toml"), replayed(demo_dir / "cladelog.toml")
    assert pg["head"] == lite["head"]
    assert {p["name"]: p["digest"] for p in pg["projections"]} == {
        p["name"]: p["digest"] for p in lite["projections"]}
