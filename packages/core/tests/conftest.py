from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from cladelog.core.store.sqlite import SQLiteStore


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``cladelog`` run in this process (click's CliRunner), with ``tmp_path`` as the
    working folder, ``cli-test`` as the actor and no deployment file named by the
    environment: ``cli(*args, input=None)`` returns click's result; an exception the CLI
    did not turn into an error line fails the test."""
    from cladelog.core.cli import main
    from click.testing import CliRunner

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CLADELOG_ACTOR", "cli-test")
    monkeypatch.delenv("CLADELOG_CONFIG", raising=False)
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None) -> Any:
        return runner.invoke(main, list(args), input=input, catch_exceptions=False,
                             prog_name="cladelog")

    return invoke


class SQLiteHarness:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.n = 0

    def new(self) -> SQLiteStore:
        self.n += 1
        return SQLiteStore(self.root / f"store{self.n}.sqlite3", create=True)

    def reopen(self, store: Any) -> SQLiteStore:
        return SQLiteStore(store.path)

    def raw_execute(self, store: Any, sql: str) -> None:
        db = sqlite3.connect(store.path, isolation_level=None)
        try:
            db.execute(sql)
        finally:
            db.close()

    def tamper(self, store: Any, position: int, column: str, value: Any) -> None:
        db = sqlite3.connect(store.path, isolation_level=None)
        try:
            db.execute("DROP TRIGGER IF EXISTS events_no_update")
            if column in ("data_byte", "meta_byte"):
                name = column.removesuffix("_byte")
                stored = bytearray(db.execute(f"SELECT {name} FROM events WHERE position = ?",
                                              (position,)).fetchone()[0])
                stored[len(stored) // 2] ^= 0x01
                db.execute(f"UPDATE events SET {name} = ? WHERE position = ?",
                           (bytes(stored), position))
            else:
                db.execute(f"UPDATE events SET {column} = ? WHERE position = ?",
                           (value, position))
        finally:
            db.close()


    def unprotected(self, store: Any, sql: str) -> None:
        db = sqlite3.connect(store.path, isolation_level=None)
        try:
            for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'"
                                      ).fetchall():
                db.execute(f"DROP TRIGGER {name}")
            db.execute(sql)
        finally:
            db.close()

    def cut_tail(self, store: Any, keep: int) -> None:
        self.unprotected(store, f"DELETE FROM events WHERE position > {int(keep)}")
        self.unprotected(store, f"DELETE FROM batches WHERE last_position > {int(keep)}")
        self.unprotected(store, f"DELETE FROM tree_nodes WHERE ((idx + 1) << level) > {int(keep)}")


@pytest.fixture
def sqlite_harness(tmp_path: Path) -> SQLiteHarness:
    return SQLiteHarness(tmp_path)


# -- test plugins ---------------------------------------------------------------------------
import types  # noqa: E402

import attrs  # noqa: E402
from cladelog.core import EventType, PluginInfo, Projection, Vote, hookimpl  # noqa: E402


@attrs.frozen
class Counted:
    n: int
    label: str = ""


@attrs.frozen
class CountedV1:
    value: int


def _v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    return {"n": data["value"], "label": "from-v1"}


COUNTED = EventType("counter.counted", Counted, schema_version=2, upcasters={1: _v1_to_v2})


def _count(state: dict[str, Any], event: Any) -> dict[str, Any]:
    state["events"] += 1
    state["total"] += event.data["n"]
    state["labels"].append(event.data["label"])
    return state


COUNTER = Projection("counter.totals", 1, frozenset({"counter.counted"}),
                     {"events": 0, "total": 0, "labels": []}, _count,
                     summary=lambda s: f"{s['events']} events, total {s['total']}")


def make_plugin(
    name: str = "counter",
    *,
    version: str = "1.0.0",
    requires: tuple[str, ...] = (),
    hookspec_version: int = 1,
    settings: type | None = None,
    event_types: tuple[Any, ...] = (COUNTED,),
    projections: tuple[Any, ...] = (COUNTER,),
    vote: Any = None,
) -> Any:
    """A plugin object as a plugin author would write it, built per test."""
    plugin = types.SimpleNamespace()
    plugin.PLUGIN = PluginInfo(name=name, version=version, requires=requires,
                               hookspec_version=hookspec_version, settings=settings)

    @hookimpl
    def cladelog_event_types() -> tuple[Any, ...]:
        return event_types

    @hookimpl
    def cladelog_projections() -> tuple[Any, ...]:
        return projections

    plugin.cladelog_event_types = cladelog_event_types
    plugin.cladelog_projections = cladelog_projections
    if vote is not None:
        @hookimpl
        def cladelog_gate_vote(candidate: str, states: Any, deployment: Any) -> Any:
            decision, reason = vote(candidate, states)
            return Vote(name, decision, reason)

        plugin.cladelog_gate_vote = cladelog_gate_vote
    return plugin


@pytest.fixture
def counter_plugin() -> Any:
    return make_plugin()


@pytest.fixture
def deployment(tmp_path: Path, counter_plugin: Any) -> Any:
    from cladelog.core import Deployment, DeploymentConfig
    from cladelog.core.testing import fixed_clock

    cfg = DeploymentConfig.from_dict({"store": "log.sqlite3", "actor": "tester"},
                                     path=tmp_path / "cladelog.toml")
    dep = Deployment(cfg, plugins=[counter_plugin], clock=fixed_clock(), create=True)
    yield dep
    dep.close()


@pytest.fixture
def plugin_factory() -> Any:
    """``make_plugin``: build a test plugin object (see its docstring)."""
    return make_plugin


@pytest.fixture
def counter_projection() -> Any:
    return COUNTER


# -- PostgreSQL -----------------------------------------------------------------------------
import contextlib  # noqa: E402
import os  # noqa: E402
import uuid  # noqa: E402

PG_URL = os.environ.get("CLADELOG_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


class PostgresHarness:
    """Each store gets its own schema in the test database; all are dropped afterwards."""

    def __init__(self) -> None:
        import psycopg

        self.psycopg = psycopg
        self.base_url = PG_URL
        self.schemas: list[str] = []
        self.stores: list[Any] = []
        try:
            with psycopg.connect(PG_URL, connect_timeout=5):
                pass
        except psycopg.Error as exc:  # fail loudly: CI must not skip these silently
            raise RuntimeError(
                f"PostgreSQL is not reachable at {PG_URL} ({exc}); start it with "
                "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start"
            ) from None

    def url(self, schema: str | None = None) -> str:
        if schema is None:
            schema = f"cl_test_{uuid.uuid4().hex[:12]}"
            self.schemas.append(schema)
        return f"{PG_URL}?schema={schema}"

    def new(self) -> Any:
        from cladelog.core.store.postgres import PostgresStore

        store = PostgresStore(self.url(), create=True)
        self.stores.append(store)
        return store

    def reopen(self, store: Any) -> Any:
        from cladelog.core.store.postgres import PostgresStore

        other = PostgresStore(store.url)
        self.stores.append(other)
        return other

    def _conn(self, store: Any) -> Any:
        return self.psycopg.connect(PG_URL, autocommit=True,
                                    options=f"-c search_path={store.schema}")

    def raw_execute(self, store: Any, sql: str) -> None:
        with self._conn(store) as conn:
            conn.execute(sql)

    def tamper(self, store: Any, position: int, column: str, value: Any) -> None:
        with self._conn(store) as conn:
            conn.execute("ALTER TABLE events DISABLE TRIGGER events_no_update")
            try:
                if column in ("data_byte", "meta_byte"):
                    name = column.removesuffix("_byte")
                    row = conn.execute(f"SELECT {name} FROM events WHERE position = %s",
                                       (position,)).fetchone()
                    stored = bytearray(row[0])
                    stored[len(stored) // 2] ^= 0x01
                    conn.execute(f"UPDATE events SET {name} = %s WHERE position = %s",
                                 (bytes(stored), position))
                else:
                    conn.execute(f"UPDATE events SET {column} = %s WHERE position = %s",
                                 (value, position))
            finally:
                conn.execute("ALTER TABLE events ENABLE TRIGGER events_no_update")

    def unprotected(self, store: Any, sql: str) -> None:
        with self._conn(store) as conn:
            # a superuser's switch: ordinary triggers (and rules) do not fire
            conn.execute("SET session_replication_role = replica")
            conn.execute(sql)

    def cut_tail(self, store: Any, keep: int) -> None:
        with self._conn(store) as conn, conn.transaction():
            conn.execute("SET LOCAL session_replication_role = replica")
            conn.execute("DELETE FROM events WHERE position > %s", (keep,))
            conn.execute("DELETE FROM batches WHERE last_position > %s", (keep,))
            conn.execute("DELETE FROM tree_nodes WHERE ((idx + 1) << level::int) > %s", (keep,))
            conn.execute("UPDATE cladelog_head SET position = %s, hash = COALESCE((SELECT "
                         "hash FROM events WHERE position = %s), hash) WHERE id = 1",
                         (keep, keep))

    def drop_all(self) -> None:
        for store in self.stores:
            with contextlib.suppress(Exception):
                store.close()
        with self.psycopg.connect(PG_URL, autocommit=True) as conn:
            for schema in self.schemas:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture(scope="session")
def pg_session() -> Any:
    harness = PostgresHarness()
    yield harness
    harness.drop_all()


@pytest.fixture
def pg_harness(pg_session: Any) -> Any:
    # the stores a test opened are closed after it (each holds pool connections, and the
    # server's slots are shared with every other test run on it); their schemas are
    # dropped when the session ends
    opened = len(pg_session.stores)
    yield pg_session
    for store in pg_session.stores[opened:]:
        with contextlib.suppress(Exception):
            store.close()
