"""The SQLite store runs the shared store conformance suite."""

from __future__ import annotations

import pytest
from cladelog.core.errors import StoreError
from cladelog.core.store import open_store
from cladelog.core.store.sqlite import SQLiteStore
from cladelog.core.testing.conformance import StoreConformance


class TestSQLiteConformance(StoreConformance):
    @pytest.fixture
    def store_harness(self, sqlite_harness):  # type: ignore[no-untyped-def]
        return sqlite_harness


def test_missing_file_is_a_clear_error(tmp_path):  # type: ignore[no-untyped-def]
    with pytest.raises(StoreError, match="does not exist"):
        SQLiteStore(tmp_path / "nope.sqlite3")
    assert not (tmp_path / "nope.sqlite3").exists()


def test_a_file_that_is_not_a_log_is_refused(tmp_path):  # type: ignore[no-untyped-def]
    junk = tmp_path / "junk.sqlite3"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a usable SQLite database"):
        SQLiteStore(junk)


def test_schema_creation_is_safe_to_repeat(tmp_path):  # type: ignore[no-untyped-def]
    path = tmp_path / "log.sqlite3"
    with SQLiteStore(path, create=True) as s:
        s.append([], clock=None)
        assert s.schema_version() == 1
    with SQLiteStore(path, create=True) as s:
        assert s.schema_version() == 1
        assert s.head().position == 0


def test_open_store_urls(tmp_path):  # type: ignore[no-untyped-def]
    p = tmp_path / "a.sqlite3"
    with open_store(f"sqlite:///{p}", create=True) as s:
        assert isinstance(s, SQLiteStore)
    with pytest.raises(StoreError, match="unsupported URL"):
        open_store("mysql://x/y")
