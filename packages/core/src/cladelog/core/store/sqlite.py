"""The embedded store: one SQLite file in WAL mode, no server.

Writers serialise on SQLite's write lock (``BEGIN IMMEDIATE``), so positions
and the hash chain are assigned inside the transaction that inserts them:
no gaps, no forks. Triggers refuse UPDATE and DELETE on events and refuse an
INSERT that does not extend the log by one linked position (its predecessor
must exist with the hash it names; with positions unique, only the head
qualifies), so even a hand-written SQL statement cannot rewrite history. ``synchronous=NORMAL``
keeps every committed batch across a process crash; a power cut may lose
the last commits but never leaves a partial batch.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ..canonical import canonical_bytes
from ..errors import ChainError, CladelogError, ImportConflictError, InputError, StoreError
from ..events import GENESIS_HASH, RecordedEvent, utc_now
from . import tree
from .base import (
    ROW_COLUMNS,
    BatchRecord,
    BatchResult,
    Checkpoint,
    CheckpointMark,
    Chunk,
    EventStore,
    Head,
    ImportResult,
    PreparedEvent,
    build_rows,
    check_import,
    digest_chunks,
    encode_batch,
    paged_rows,
    split_body,
    write_chunks,
)

__all__ = ["SCHEMA_VERSION", "SQLiteStore"]

#: How much of the database file a read maps into memory (SQLite's ``mmap_size``; beyond
#: it, pages are copied out as without a map). Mapped pages are the page cache's, shared
#: and reclaimable, but they count in the reading process's RSS while the read lasts, so
#: the map is kept small: a read of a larger log adds at most this much to its RSS.
READ_MMAP_BYTES = 64 << 20

SCHEMA_VERSION = 5
WAL_AUTOCHECKPOINT_PAGES = 10_000

# INSERT OR REPLACE deletes the rows it collides with without firing DELETE triggers
# (recursive triggers are off): a BEFORE INSERT trigger still sees them, and refuses.
_NO_REPLACE = """CREATE TRIGGER IF NOT EXISTS events_no_replace BEFORE INSERT ON events
    WHEN EXISTS (SELECT 1 FROM events WHERE position = NEW.position)
      OR EXISTS (SELECT 1 FROM events
                 WHERE stream = NEW.stream AND stream_version = NEW.stream_version)
    BEGIN SELECT RAISE(ABORT, 'cladelog: the event log is append-only (REPLACE refused)');
    END"""

# Version 2 stores the canonical bytes of data and meta and the body's other members as
# columns (version 1 stored the whole body beside copies of its members).
_TRIGGERS = [
    """CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
    BEGIN SELECT RAISE(ABORT, 'cladelog: the event log is append-only (UPDATE refused)'); END""",
    """CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
    BEGIN SELECT RAISE(ABORT, 'cladelog: the event log is append-only (DELETE refused)'); END""",
    f"""CREATE TRIGGER IF NOT EXISTS events_extend_only BEFORE INSERT ON events
    WHEN NOT (
        (NEW.position = 1 AND NEW.prev_hash = '{GENESIS_HASH}')
        OR EXISTS (SELECT 1 FROM events
                   WHERE position = NEW.position - 1 AND hash = NEW.prev_hash)
    )
    BEGIN SELECT RAISE(ABORT, 'cladelog: an event must extend the log by one linked position');
    END""",
    _NO_REPLACE,
]

# Version 3 protects the idempotency records as the events are protected: a record deleted
# would let a retried append add its batch twice. A record is written only with its batch,
# in the same transaction, so it must end at the log's last position; REPLACE is refused
# as for events (it would delete the old record without firing the DELETE trigger).
_BATCH_TRIGGERS = [
    """CREATE TRIGGER IF NOT EXISTS batches_no_update BEFORE UPDATE ON batches
    BEGIN SELECT RAISE(ABORT, 'cladelog: idempotency records are append-only (UPDATE refused)');
    END""",
    """CREATE TRIGGER IF NOT EXISTS batches_no_delete BEFORE DELETE ON batches
    BEGIN SELECT RAISE(ABORT, 'cladelog: idempotency records are append-only (DELETE refused)');
    END""",
    """CREATE TRIGGER IF NOT EXISTS batches_with_their_batch BEFORE INSERT ON batches
    WHEN EXISTS (SELECT 1 FROM batches WHERE key = NEW.key)
      OR NOT (NEW.first_position >= 1 AND NEW.first_position <= NEW.last_position
              AND NEW.last_position = (SELECT MAX(position) FROM events))
    BEGIN SELECT RAISE(ABORT,
        'cladelog: an idempotency record is written once, with the batch it covers');
    END""",
]


# Version 4 keeps the log's Merkle tree (store/tree.py): one row per complete subtree at
# every tree.STRIDE-th level above the leaves, written in the append's transaction, as
# append-only as the events; a node may only cover leaves the log holds. Version 5 stores
# every 6th level instead of every 4th (the upgrade rebuilds the table).
_TREE = [
    """CREATE TABLE IF NOT EXISTS tree_nodes (
        level INTEGER NOT NULL,
        idx INTEGER NOT NULL,
        hash BLOB NOT NULL,
        PRIMARY KEY (level, idx)
    ) WITHOUT ROWID""",
    """CREATE TRIGGER IF NOT EXISTS tree_no_update BEFORE UPDATE ON tree_nodes
    BEGIN SELECT RAISE(ABORT, 'cladelog: the Merkle tree is append-only (UPDATE refused)'); END""",
    """CREATE TRIGGER IF NOT EXISTS tree_no_delete BEFORE DELETE ON tree_nodes
    BEGIN SELECT RAISE(ABORT, 'cladelog: the Merkle tree is append-only (DELETE refused)'); END""",
    f"""CREATE TRIGGER IF NOT EXISTS tree_within_log BEFORE INSERT ON tree_nodes
    WHEN NEW.level < 1 OR NEW.level > 60 OR NEW.level % {tree.STRIDE} != 0 OR NEW.idx < 0
      OR typeof(NEW.hash) != 'blob' OR length(NEW.hash) != 32
      OR ((NEW.idx + 1) << NEW.level) > COALESCE((SELECT MAX(position) FROM events), 0)
      OR EXISTS (SELECT 1 FROM tree_nodes WHERE level = NEW.level AND idx = NEW.idx)
    BEGIN SELECT RAISE(ABORT,
        'cladelog: a tree node is written once, over leaves the log holds');
    END""",
]
_INSERT_NODE = "INSERT INTO tree_nodes (level, idx, hash) VALUES (?, ?, ?)"


def _events_table(name: str) -> str:
    return f"""CREATE TABLE IF NOT EXISTS {name} (
        position INTEGER PRIMARY KEY,
        stream TEXT NOT NULL,
        stream_version INTEGER NOT NULL,
        type TEXT NOT NULL,
        schema_version INTEGER NOT NULL,
        recorded_at TEXT NOT NULL,
        data BLOB NOT NULL,
        meta BLOB NOT NULL,
        hash TEXT NOT NULL,
        prev_hash TEXT NOT NULL,
        UNIQUE (stream, stream_version)
    )"""


_INDEXES = ["CREATE INDEX IF NOT EXISTS events_by_type ON events (type, position)"]

_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS cladelog_schema (
        version INTEGER PRIMARY KEY,
        applied_at TEXT NOT NULL
    )""",
    _events_table("events"),
    *_INDEXES,
    *_TRIGGERS,
    """CREATE TABLE IF NOT EXISTS batches (
        key TEXT PRIMARY KEY,
        digest TEXT NOT NULL,
        first_position INTEGER NOT NULL,
        last_position INTEGER NOT NULL
    )""",
    *_BATCH_TRIGGERS,
    *_TREE,
    """CREATE TABLE IF NOT EXISTS checkpoints (
        name TEXT PRIMARY KEY,
        version INTEGER NOT NULL,
        position INTEGER NOT NULL,
        head_hash TEXT NOT NULL,
        state BLOB NOT NULL,
        digest TEXT NOT NULL
    )""",
]

_COLUMNS = ROW_COLUMNS
#: the columns of ``events`` after ``position``: any of them may hold TEXT in a damaged
#: file (SQLite stores any value in any column), which SQLite hands out decoded as UTF-8
_VALUE_COLUMNS = ("stream", "stream_version", "type", "schema_version", "recorded_at", "data",
                  "meta", "hash", "prev_hash")

F = TypeVar("F", bound=Callable[..., Any])


def _named_damage(method: F) -> F:
    """Turn what SQLite raises on a damaged file (a malformed page, a missing table, text
    that is not UTF-8) into a :class:`StoreError` or, where the row is known, a
    :class:`ChainError` at its position: never an unnamed internal error."""

    @functools.wraps(method)
    def wrapper(self: SQLiteStore, *args: Any, **kw: Any) -> Any:
        try:
            return method(self, *args, **kw)
        except sqlite3.DatabaseError as exc:
            raise self._damage(exc) from None

    return wrapper  # type: ignore[return-value]

_INSERT = f"INSERT INTO events ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"


class SQLiteStore(EventStore):
    """An :class:`EventStore` in one SQLite file.

    ``create=True`` creates the file and schema (safe to repeat); otherwise the
    file must exist and hold a cladelog schema.
    """

    def __init__(self, path: str | os.PathLike[str], *, create: bool = False) -> None:
        self.path = Path(path)
        self.url = f"sqlite:///{self.path}"
        self._tree_state: tree.TreeState | None = None
        #: False only in the benchmark that measures what the tree costs an append (the
        #: store is then not usable for proofs)
        self._keep_tree = True
        if not create and not self.path.exists():
            raise StoreError(f"store: {self.path} does not exist (run 'cladelog init' first)")
        if create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, timeout=60.0)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA busy_timeout=60000")
            # Checkpoint the WAL every ~40 MB instead of SQLite's ~4 MB: a checkpoint
            # copies each page changed since the last one once, and the pages at the end
            # of the log and of its indexes change in every batch; measured, appends get
            # about a third faster (benchmarks/README.md).
            self._db.execute(f"PRAGMA wal_autocheckpoint={WAL_AUTOCHECKPOINT_PAGES}")
            if create:
                self._create_schema()
            self._check_schema()
            with contextlib.suppress(sqlite3.OperationalError):  # a read-only file
                self._db.execute(_NO_REPLACE)  # a store created before this trigger existed
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"store: {self.path} is not a usable SQLite database ({exc})"
                + (": the store file is damaged, or is not a cladelog store"
                   if "malformed" in str(exc) or "not a database" in str(exc) else "")
            ) from None

    # -- schema -------------------------------------------------------------------------
    def _create_schema(self) -> None:
        # one transaction: a half-created (or half-upgraded) schema never exists
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute(_SCHEMA[0])
            version = db.execute("SELECT MAX(version) FROM cladelog_schema").fetchone()[0]
            if version == 1:
                self._upgrade_from_v1()
            if version is not None and 4 <= version < 5:
                # version 4 stored every 4th level: the table (and its triggers) is made
                # again below, and rebuilt from the events' chain hashes
                db.execute("DROP TABLE tree_nodes")
            # new, current (IF NOT EXISTS: then nothing changes), or version 2, which
            # lacks only the triggers on the idempotency records
            for statement in _SCHEMA[1:]:
                db.execute(statement)
            if version is not None and version < 5:
                self._build_tree()  # the events an older store holds get their tree
            if version is not None and version < SCHEMA_VERSION:
                self.upgraded_from = version
            db.execute("INSERT OR IGNORE INTO cladelog_schema (version, applied_at) "
                       "VALUES (?, ?)", (SCHEMA_VERSION, utc_now()))
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    def _upgrade_from_v1(self) -> None:
        """Version 1 -> 2, inside the caller's transaction: split each stored body into
        data and meta, check the new row rebuilds exactly the old body, swap the tables
        (the caller then creates what later versions add)."""
        db = self._db
        for name in ("events_no_update", "events_no_delete", "events_extend_only"):
            db.execute(f"DROP TRIGGER IF EXISTS {name}")
        db.execute("DROP INDEX IF EXISTS events_by_type")
        db.execute(_events_table("events_v2"))
        old = db.execute("SELECT position, stream, stream_version, type, schema_version, "
                         "recorded_at, body, hash, prev_hash FROM events ORDER BY position")
        while True:
            chunk = old.fetchmany(2048)
            if not chunk:
                break
            rows = []
            for r in chunk:
                event = RecordedEvent(r[0], r[1], r[2], r[3], r[4], None, {}, r[5], r[8], r[7],
                                      bytes(r[6]))
                try:
                    data, meta = split_body(event)
                except ChainError as exc:
                    raise StoreError(f"store: cannot upgrade {self.path} from schema 1: "
                                     f"{exc}; nothing was changed") from None
                rows.append((r[0], r[1], r[2], r[3], r[4], r[5], data, meta, r[7], r[8]))
            db.executemany(f"INSERT INTO events_v2 ({_COLUMNS}) "
                           "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        db.execute("DROP TABLE events")
        db.execute("ALTER TABLE events_v2 RENAME TO events")

    def _insert_nodes(self, nodes: Sequence[tree.NodeRow], size: int) -> None:
        if not nodes:  # 15 appends of 16 at batch 1 complete no stored node
            return
        try:
            self._db.executemany(_INSERT_NODE, nodes)
        except sqlite3.IntegrityError as exc:
            raise tree.damaged(size, exc) from None

    def _build_tree(self) -> None:
        """Schema 4 and 5, inside the caller's transaction: the tree over the events held."""
        db = self._db
        hashes = (r[0] for r in db.execute("SELECT hash FROM events ORDER BY position"))
        # read all hashes first: inserting while the SELECT is open is not allowed
        for rows in tree.rebuild_rows(list(hashes)):
            db.executemany(_INSERT_NODE, rows)

    def _check_schema(self) -> None:
        try:
            row = self._db.execute("SELECT MAX(version) FROM cladelog_schema").fetchone()
        except sqlite3.OperationalError:
            raise StoreError(
                f"store: {self.path} holds no cladelog log (run 'cladelog init')"
            ) from None
        if row[0] is not None and row[0] < SCHEMA_VERSION:
            raise StoreError(
                f"store: {self.path} has schema version {row[0]}; run 'cladelog init' to "
                f"upgrade it to {SCHEMA_VERSION}"
            )
        if row[0] is None or row[0] > SCHEMA_VERSION:
            raise StoreError(
                f"store: schema version {row[0]} is not supported (this cladelog knows "
                f"{SCHEMA_VERSION})"
            )

    @_named_damage
    def schema_version(self) -> int:
        return int(self._db.execute("SELECT MAX(version) FROM cladelog_schema").fetchone()[0])

    # -- writing ------------------------------------------------------------------------
    def _head(self) -> Head:
        row = self._db.execute(
            "SELECT position, hash FROM events ORDER BY position DESC LIMIT 1"
        ).fetchone()
        return Head(row[0], row[1]) if row else Head(0, GENESIS_HASH)

    @_named_damage
    def append(
        self,
        events: Sequence[PreparedEvent],
        *,
        expected_versions: Mapping[str, int] | None = None,
        idempotency_key: str | None = None,
        clock: Callable[[], str] | None = None,
    ) -> list[RecordedEvent]:
        if not events:
            return []
        # before the write lock: encoding is the slow part
        batch = encode_batch(events, digest=idempotency_key is not None)
        digest = batch.digest
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            if idempotency_key is not None:
                done = db.execute(
                    "SELECT digest, first_position, last_position FROM batches WHERE key = ?",
                    (idempotency_key,),
                ).fetchone()
                if done is not None:
                    db.execute("ROLLBACK")
                    if done[0] != digest:
                        raise InputError(
                            f"idempotency_key: {idempotency_key!r} was used for a different batch"
                        )
                    return list(self.read(done[1], done[2]))
            streams = {e.stream for e in events} | set(expected_versions or ())
            current = {}
            for s in streams:
                v = db.execute(
                    "SELECT MAX(stream_version) FROM events WHERE stream = ?", (s,)
                ).fetchone()[0]
                current[s] = v or 0
            head = self._head()
            digests: list[bytes] = []
            recorded, rows = build_rows(batch, head, current, expected_versions, clock,
                                        digests)
            db.executemany(_INSERT, rows)
            if self._keep_tree:
                nodes, state = tree.extension(head, digests, self._tree_state,
                                              self.tree_ranges, raw=True)
                self._insert_nodes(nodes, head.position)
            if idempotency_key is not None:
                db.execute(
                    "INSERT INTO batches (key, digest, first_position, last_position) "
                    "VALUES (?, ?, ?, ?)",
                    (idempotency_key, digest, recorded[0].position, recorded[-1].position),
                )
            db.execute("COMMIT")
            if self._keep_tree:
                self._tree_state = state
            return recorded
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    @_named_damage
    def append_chunks(
        self,
        chunks: Iterable[Chunk],
        *,
        idempotency_key: str | None = None,
        clock: Callable[[], str] | None = None,
        lead: Sequence[PreparedEvent] = (),
        lead_expected: Mapping[str, int] | None = None,
    ) -> BatchResult:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            if idempotency_key is not None:
                done = db.execute(
                    "SELECT digest, first_position, last_position FROM batches WHERE key = ?",
                    (idempotency_key,),
                ).fetchone()
                if done is not None:  # a retry: read the input through for its digest
                    digest = digest_chunks(chunks)
                    db.execute("ROLLBACK")
                    if done[0] != digest:
                        raise InputError(f"idempotency_key: {idempotency_key!r} was used for "
                                         "a different batch")
                    return BatchResult(done[1], done[2], self._head(), repeated=True)

            def lookup(streams: list[str]) -> dict[str, int]:
                return {s: db.execute("SELECT MAX(stream_version) FROM events WHERE "
                                      "stream = ?", (s,)).fetchone()[0] or 0 for s in streams}

            state: list[tree.TreeState | None] = [self._tree_state]

            def write(rows: list[Any]) -> None:
                db.executemany(_INSERT, rows)
                if self._keep_tree:  # the tree grows with each chunk, in the same transaction
                    before = Head(rows[0][0] - 1, rows[0][9])
                    nodes, state[0] = tree.extension(before, (r[8] for r in rows), state[0],
                                                     self.tree_ranges)
                    self._insert_nodes(nodes, before.position)

            head, first, digest = write_chunks(chunks, self._head(), lookup, write, clock,
                                               lead=lead, lead_expected=lead_expected,
                                               digest=idempotency_key is not None)
            if idempotency_key is not None and head.position >= first:
                db.execute(
                    "INSERT INTO batches (key, digest, first_position, last_position) "
                    "VALUES (?, ?, ?, ?)", (idempotency_key, digest, first, head.position),
                )
            db.execute("COMMIT")
            if self._keep_tree and state[0] is not None:
                self._tree_state = state[0]
            return BatchResult(first, head.position, head)
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    @_named_damage
    def import_events(self, events: Iterable[RecordedEvent]) -> ImportResult:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            head = self._head()
            position, prev = 0, GENESIS_HASH
            present = appended = 0
            added: list[str] = []
            for e in events:
                check_import(e, position, prev)
                if e.position <= head.position:
                    if self.hash_at(e.position) != e.hash:
                        raise ImportConflictError(
                            f"position {e.position}: the store holds a different event here; "
                            "nothing was imported"
                        )
                    present += 1
                else:
                    data, meta = split_body(e)
                    db.execute(_INSERT, (e.position, e.stream, e.stream_version, e.type,
                                         e.schema_version, e.recorded_at, data, meta, e.hash,
                                         e.prev_hash))
                    appended += 1
                    added.append(e.hash)
                position, prev = e.position, e.hash
            nodes, _ = tree.extension(head, added, None, self.tree_ranges)
            self._insert_nodes(nodes, head.position)
            db.execute("COMMIT")
            return ImportResult(present, appended, self._head())
        except sqlite3.IntegrityError as exc:
            db.execute("ROLLBACK")
            raise ImportConflictError(f"import refused by the store: {exc}") from None
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    # -- reading ------------------------------------------------------------------------
    _mark = "?"  # the driver's parameter placeholder, for row_filter

    @contextlib.contextmanager
    def _rows(self, sql: str, args: list[Any]) -> Iterator[Iterator[Any]]:
        """The rows of a read, on a private connection open meanwhile."""
        # a separate cursor on a private connection: appends elsewhere never disturb it
        reader = sqlite3.connect(self.path, isolation_level=None, timeout=60.0)
        # the file read through a memory map, not copied out page by page (a graph
        # session's full replay: ~8 ms less of ~50 for 30 MB); the log only grows, so no
        # mapped page is ever cut off under a reader
        reader.execute(f"PRAGMA mmap_size={READ_MMAP_BYTES}")
        last = [0]  # the position of the last row read: damage is after it
        failed: list[CladelogError] = []

        def fetch(size: int) -> list[Any]:
            if failed:
                raise failed[0]
            try:
                page = cursor.fetchmany(size)
            except sqlite3.DatabaseError as exc:
                error = self._damage(exc, after=last[0])
                if not isinstance(error, ChainError):
                    raise error from None
                # the page is lost with the row SQLite could not decode: read the rows
                # before that one again, hand them out, and fail on the next page
                failed.append(error)
                page = list(reader.execute(
                    f"SELECT * FROM ({sql}) WHERE position > ? AND position < ? "
                    "ORDER BY position", [*args, last[0], error.position]))
            if page:
                last[0] = page[-1][0]
            elif failed:
                raise failed[0]
            return page

        try:
            try:
                cursor = reader.execute(sql, args)
            except sqlite3.DatabaseError as exc:
                raise self._damage(exc) from None
            # pages by bytes (measured faster than iterating the cursor row by row)
            yield paged_rows(fetch)
        finally:
            reader.close()

    @_named_damage
    def head(self) -> Head:
        return self._head()

    def tree_ranges(self, ranges: Sequence[tuple[int, int, int]]) -> list[list[bytes]]:
        db = self._db
        out = []
        for level, lo, hi in ranges:
            if level == 0:
                rows = db.execute("SELECT hash FROM events WHERE position > ? AND position <= ? "
                                  "ORDER BY position", (lo, hi))
                out.append([tree.chain_leaf(r[0]) for r in rows])
            else:
                rows = db.execute("SELECT hash FROM tree_nodes WHERE level = ? AND idx >= ? "
                                  "AND idx < ? ORDER BY idx", (level, lo, hi))
                out.append([bytes(r[0]) for r in rows])
            self.tree_rows_read += len(out[-1])
        return out

    @_named_damage
    def hash_at(self, position: int) -> str | None:
        row = self._db.execute("SELECT hash FROM events WHERE position = ?", (position,)).fetchone()
        return row[0] if row else None

    @_named_damage
    def stream_version(self, stream: str) -> int:
        row = self._db.execute(
            "SELECT MAX(stream_version) FROM events WHERE stream = ?", (stream,)
        ).fetchone()
        return int(row[0] or 0)

    @_named_damage
    def batch_records(self) -> list[BatchRecord]:
        return [BatchRecord(*r) for r in self._db.execute(
            "SELECT key, digest, first_position, last_position FROM batches "
            "ORDER BY first_position")]

    @_named_damage
    def streams(self) -> list[tuple[str, int]]:
        return list(self._db.execute(
            "SELECT stream, MAX(stream_version) FROM events GROUP BY stream ORDER BY stream"
        ))

    # -- checkpoints --------------------------------------------------------------------
    @_named_damage
    def load_checkpoint(self, name: str) -> Checkpoint | None:
        row = self._db.execute(
            "SELECT name, version, position, head_hash, state, digest FROM checkpoints "
            "WHERE name = ?", (name,),
        ).fetchone()
        if row is None:
            return None
        return Checkpoint(row[0], row[1], row[2], row[3], json.loads(row[4]), row[5])

    @_named_damage
    def save_checkpoint(self, checkpoint: Checkpoint) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO checkpoints (name, version, position, head_hash, state, "
            "digest) VALUES (?, ?, ?, ?, ?, ?)",
            (checkpoint.name, checkpoint.version, checkpoint.position, checkpoint.head_hash,
             canonical_bytes(checkpoint.state), checkpoint.digest),
        )

    @_named_damage
    def delete_checkpoint(self, name: str) -> None:
        self._db.execute("DELETE FROM checkpoints WHERE name = ?", (name,))

    @_named_damage
    def checkpoints(self) -> list[Checkpoint]:
        names = [r[0] for r in self._db.execute("SELECT name FROM checkpoints ORDER BY name")]
        return [c for c in map(self.load_checkpoint, names) if c is not None]

    @_named_damage
    def checkpoint_marks(self) -> list[CheckpointMark]:
        return [CheckpointMark(*r) for r in self._db.execute(
            "SELECT c.name, c.position, c.head_hash, e.hash FROM checkpoints c "
            "LEFT JOIN events e ON e.position = c.position ORDER BY c.name")]

    def size_bytes(self) -> int | None:
        total = 0
        for suffix in ("", "-wal"):
            p = Path(str(self.path) + suffix)
            if p.exists():
                total += p.stat().st_size
        return total

    def close(self) -> None:
        self._db.close()

    # -- damage -------------------------------------------------------------------------
    def _damage(self, exc: sqlite3.DatabaseError, after: int = 0) -> CladelogError:
        """What SQLite's ``exc`` means for an operator, in one line."""
        text = str(exc)
        if isinstance(exc, sqlite3.OperationalError) and "decode" in text \
                and "UTF-8" in text:
            found = self._bad_text(after)
            if found is not None:
                return ChainError(found[0], f"column {found[1]!r} holds text that is not "
                                            "valid UTF-8 (the store file is damaged)")
        if isinstance(exc, sqlite3.IntegrityError):
            return StoreError(f"store: {self.path}: the database refused the write ({text})")
        if isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
            return StoreError(f"store: {self.path} is busy ({text}); try again")
        return StoreError(f"store: the store file {self.path} is damaged ({text}); restore "
                          "it from a backup or an export")

    def _bad_text(self, after: int) -> tuple[int, str] | None:
        """The first row after position ``after`` with a TEXT value that is not UTF-8, and
        the column's name (read as bytes, which SQLite does not decode)."""
        typed = ", ".join(f"typeof({c}), {c}" for c in _VALUE_COLUMNS)
        with contextlib.suppress(sqlite3.DatabaseError), \
                contextlib.closing(sqlite3.connect(self.path, timeout=60.0)) as db:
            db.text_factory = bytes
            rows = db.execute(f"SELECT position, {typed} FROM events WHERE position > ? "
                              "ORDER BY position", (after,))
            for row in rows:
                for i, name in enumerate(_VALUE_COLUMNS):
                    kind, value = row[1 + 2 * i], row[2 + 2 * i]
                    if kind == b"text":
                        try:
                            value.decode("utf-8")
                        except UnicodeDecodeError:
                            return int(row[0]), name
        return None
