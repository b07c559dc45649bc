from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from cladelog.core.store.sqlite import SQLiteStore


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
            db.execute("DROP TRIGGER events_no_update")
            if column == "body_byte":
                body = bytearray(db.execute("SELECT body FROM events WHERE position = ?",
                                            (position,)).fetchone()[0])
                body[len(body) // 2] ^= 0x01
                db.execute("UPDATE events SET body = ? WHERE position = ?",
                           (bytes(body), position))
            else:
                db.execute(f"UPDATE events SET {column} = ? WHERE position = ?",
                           (value, position))
        finally:
            db.close()


@pytest.fixture
def sqlite_harness(tmp_path: Path) -> SQLiteHarness:
    return SQLiteHarness(tmp_path)
