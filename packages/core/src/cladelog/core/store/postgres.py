"""The scale-out store: one gap-free, hash-chained log in PostgreSQL (psycopg 3).

How order and the chain are serialised: every append locks the single row of
``cladelog_head`` (``SELECT ... FOR UPDATE``) for the length of its
transaction, reads the head position and hash, inserts its batch at the next
positions, moves the head and commits. Appends therefore commit strictly in
position order: a reader can never see position n+1 while n is still
uncommitted, because whoever holds n holds the lock that n+1 waits for. The
lock is held from the head read to the commit — for a batch of 1,000 events a
few milliseconds — and that is the throughput cost: one writer at a time,
however many hosts append (see benchmarks/README.md for the figures).

Triggers refuse UPDATE, DELETE and TRUNCATE on ``events`` and any INSERT that
does not extend the log by one linked position. A commit sends ``NOTIFY
cladelog_events`` so followers wake up without polling.

Connection failures: if the connection drops during an append, the batch is
either entirely committed or entirely absent. The store retries once on a new
connection under the same idempotency key (one is generated when the caller
gives none), so a batch whose commit was acknowledged by the server but not
seen by the client is not appended twice. Every other call that talks to the server
(reads, LISTEN, checkpoints) turns a driver error — a dropped connection, a
terminated backend, a server shutting down — into a one-line :class:`StoreError`
naming what failed and the server's message.

URL: ``postgresql://user@host:port/dbname[?schema=NAME]`` — ``schema`` (default
``public``) selects the PostgreSQL schema holding the tables, so several
deployments (or test runs) can share one database.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..canonical import CanonicalError, canonical_bytes
from ..errors import ChainError, ConcurrencyError, ImportConflictError, InputError, StoreError
from ..events import GENESIS_HASH, RecordedEvent, utc_now
from ..transparency.merkle import peak_nodes
from . import tree
from .base import (
    ROW_COLUMNS,
    BatchRecord,
    BatchResult,
    Checkpoint,
    CheckpointMark,
    Chunk,
    EncodedBatch,
    EventStore,
    Head,
    ImportResult,
    PreparedEvent,
    build_rows,
    check_import,
    check_versions,
    digest_chunks,
    encode_batch,
    paged_rows,
    split_body,
    stream_rows,
    write_chunks,
)

__all__ = ["CHANNEL", "SCHEMA_VERSION", "PostgresStore"]

# 2: data and meta columns instead of the whole body (as SQLite's); 3: the idempotency
# records are protected as the events are; 4: the log's Merkle tree (store/tree.py);
# 5: an append is one call of the server-side function cladelog_append
# (postgres_append.sql), the tree's peaks kept in the head row; 6: the extends-log trigger
# probes the index for the first row only (5's scanned the table on every append); 7: the
# tree is stored every 6th level instead of every 4th (tree.STRIDE; the upgrade rebuilds
# tree_nodes), and the guards do the same checks in fewer statements (the extends-log
# trigger one query, the head's trigger one index probe): ~20 us of the backend's CPU
# per batch-1 append; 8: an append commits without holding the head lock through the WAL
# flush, and returns once flushed (the procedure cladelog_append_durably), and every read
# waits until what its snapshot shows is flushed (cladelog_durable); 9: an append holds
# the lock through its flush only when no other append came since its connection's
# previous one (and it did not wait for the lock), and the procedure says which way it
# committed
SCHEMA_VERSION = 9
CHANNEL = "cladelog_events"
_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_COLUMNS = ROW_COLUMNS

_DDL = f"""
CREATE TABLE IF NOT EXISTS cladelog_schema (
    version INTEGER PRIMARY KEY,
    applied_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    position BIGINT PRIMARY KEY,
    stream TEXT NOT NULL,
    stream_version BIGINT NOT NULL,
    type TEXT NOT NULL,
    schema_version INTEGER NOT NULL,
    recorded_at TEXT NOT NULL,
    data BYTEA NOT NULL,
    meta BYTEA NOT NULL,
    hash TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    UNIQUE (stream, stream_version)
);
CREATE INDEX IF NOT EXISTS events_by_type ON events (type, position);
CREATE TABLE IF NOT EXISTS cladelog_head (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    position BIGINT NOT NULL,
    hash TEXT NOT NULL
);
-- schema 5: the Merkle tree's peaks at the head (32 bytes each, largest first) and the
-- head hash they belong to; a head moved without them (an older writer, a repair) makes
-- tree_for differ from hash, and the next append reads the peaks from the tree again
ALTER TABLE cladelog_head ADD COLUMN IF NOT EXISTS tree_peaks BYTEA,
    ADD COLUMN IF NOT EXISTS tree_for TEXT;
INSERT INTO cladelog_head (id, position, hash) VALUES (1, 0, '{GENESIS_HASH}')
    ON CONFLICT (id) DO NOTHING;
CREATE TABLE IF NOT EXISTS batches (
    key TEXT PRIMARY KEY,
    digest TEXT NOT NULL,
    first_position BIGINT NOT NULL,
    last_position BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS checkpoints (
    name TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    position BIGINT NOT NULL,
    head_hash TEXT NOT NULL,
    state BYTEA NOT NULL,
    digest TEXT NOT NULL
);
-- every table's refusal of UPDATE, DELETE and TRUNCATE (schema 9: one function, the
-- trigger naming what is append-only; before, one near-copy per table)
CREATE OR REPLACE FUNCTION cladelog_refuse_rewrite() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'cladelog: % (% refused)',
        coalesce(TG_ARGV[0], 'the event log is append-only'), TG_OP;
END $$ LANGUAGE plpgsql;
CREATE OR REPLACE FUNCTION cladelog_extend_only() RETURNS trigger AS $$
BEGIN
    -- once per statement (schema 5; a row trigger before it cost ~40 us per event): every
    -- row inserted links to the event one position before it, which positions being
    -- unique makes a chain from the head. The statement's rows, in position order, are
    -- checked against each other, and only the first against the table (one index probe;
    -- schema 6: schema 5's NOT EXISTS became a hashed subplan over the whole table, a scan
    -- on every append). Schema 7: one query, not a query and an expression with a subquery
    IF EXISTS (
        SELECT 1
        FROM (SELECT n.position, n.prev_hash, row_number() OVER w AS rn,
                     lag(n.position) OVER w AS lag_position, lag(n.hash) OVER w AS lag_hash
              FROM cladelog_added n WINDOW w AS (ORDER BY n.position)) l
        WHERE CASE WHEN l.rn > 1
                   THEN l.lag_position <> l.position - 1 OR l.lag_hash <> l.prev_hash
                   ELSE l.prev_hash IS DISTINCT FROM
                        CASE WHEN l.position = 1 THEN '{GENESIS_HASH}'
                             ELSE (SELECT e.hash FROM events e
                                   WHERE e.position = l.position - 1) END
              END) THEN
        RAISE EXCEPTION 'cladelog: an event must extend the log by one linked position';
    END IF;
    RETURN NULL;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS events_no_update ON events;
CREATE TRIGGER events_no_update BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW
    EXECUTE FUNCTION cladelog_refuse_rewrite('the event log is append-only');
DROP TRIGGER IF EXISTS events_no_truncate ON events;
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
    FOR EACH STATEMENT
    EXECUTE FUNCTION cladelog_refuse_rewrite('the event log is append-only');
DROP TRIGGER IF EXISTS events_extend_only ON events;
CREATE TRIGGER events_extend_only AFTER INSERT ON events REFERENCING NEW TABLE AS cladelog_added
    FOR EACH STATEMENT EXECUTE FUNCTION cladelog_extend_only();
CREATE OR REPLACE FUNCTION cladelog_head_follows_log() RETURNS trigger AS $$
DECLARE
    last_position BIGINT;
    last_hash TEXT;
BEGIN
    -- the head row names the last event: it moves only with the events it names (an
    -- append or import updates it in the transaction that inserts them); schema 7: the
    -- last event's position and hash in one index probe, not two
    SELECT e.position, e.hash INTO last_position, last_hash
        FROM events e ORDER BY e.position DESC LIMIT 1;
    IF NEW.position <> COALESCE(last_position, 0)
       OR NEW.hash <> COALESCE(last_hash, '{GENESIS_HASH}') THEN
        RAISE EXCEPTION 'cladelog: the head must name the last event of the log';
    END IF;
    -- the tree's peaks kept for the head change only when the head moves, or when they
    -- were not for it (schema 5)
    IF NEW.tree_for IS NOT NULL AND NEW.tree_for = NEW.hash
       AND length(NEW.tree_peaks) IS DISTINCT FROM 32 * bit_count(NEW.position::bit(64)) THEN
        RAISE EXCEPTION 'cladelog: the head must keep one tree peak per bit of its size';
    END IF;
    IF NEW.position = OLD.position AND NEW.hash = OLD.hash AND OLD.tree_for = OLD.hash
       AND (NEW.tree_peaks IS DISTINCT FROM OLD.tree_peaks
            OR NEW.tree_for IS DISTINCT FROM OLD.tree_for) THEN
        RAISE EXCEPTION 'cladelog: the head must name the last event of the log (peaks)';
    END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS head_follows_log ON cladelog_head;
CREATE TRIGGER head_follows_log BEFORE UPDATE ON cladelog_head
    FOR EACH ROW EXECUTE FUNCTION cladelog_head_follows_log();
DROP TRIGGER IF EXISTS head_no_delete ON cladelog_head;
CREATE TRIGGER head_no_delete BEFORE DELETE ON cladelog_head
    FOR EACH ROW
    EXECUTE FUNCTION cladelog_refuse_rewrite('the event log is append-only');
CREATE OR REPLACE FUNCTION cladelog_batch_with_its_events() RETURNS trigger AS $$
BEGIN
    -- a record is written in the transaction that appends its batch: it ends at the head
    IF NOT (NEW.first_position >= 1 AND NEW.first_position <= NEW.last_position
            AND NEW.last_position = (SELECT MAX(position) FROM events)) THEN
        RAISE EXCEPTION
            'cladelog: an idempotency record is written once, with the batch it covers';
    END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS batches_no_rewrite ON batches;
CREATE TRIGGER batches_no_rewrite BEFORE UPDATE OR DELETE ON batches
    FOR EACH ROW
    EXECUTE FUNCTION cladelog_refuse_rewrite('idempotency records are append-only');
DROP TRIGGER IF EXISTS batches_no_truncate ON batches;
CREATE TRIGGER batches_no_truncate BEFORE TRUNCATE ON batches
    FOR EACH STATEMENT
    EXECUTE FUNCTION cladelog_refuse_rewrite('idempotency records are append-only');
DROP TRIGGER IF EXISTS batches_with_their_batch ON batches;
CREATE TRIGGER batches_with_their_batch BEFORE INSERT ON batches
    FOR EACH ROW EXECUTE FUNCTION cladelog_batch_with_its_events();
CREATE TABLE IF NOT EXISTS tree_nodes (
    level SMALLINT NOT NULL,
    idx BIGINT NOT NULL,
    hash BYTEA NOT NULL,
    PRIMARY KEY (level, idx)
);
CREATE OR REPLACE FUNCTION cladelog_tree_within_log() RETURNS trigger AS $$
BEGIN
    -- a complete subtree at a stored level (every {tree.STRIDE}th above the leaves), over
    -- leaves the log holds (the primary key makes it written once)
    IF NOT (NEW.level BETWEEN 1 AND 60 AND NEW.level % {tree.STRIDE} = 0 AND NEW.idx >= 0
            AND length(NEW.hash) = 32
            AND ((NEW.idx + 1) << NEW.level::int)
                <= COALESCE((SELECT MAX(position) FROM events), 0)) THEN
        RAISE EXCEPTION 'cladelog: a tree node is written once, over leaves the log holds';
    END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS tree_no_rewrite ON tree_nodes;
CREATE TRIGGER tree_no_rewrite BEFORE UPDATE OR DELETE ON tree_nodes
    FOR EACH ROW
    EXECUTE FUNCTION cladelog_refuse_rewrite('the Merkle tree is append-only');
DROP TRIGGER IF EXISTS tree_no_truncate ON tree_nodes;
CREATE TRIGGER tree_no_truncate BEFORE TRUNCATE ON tree_nodes
    FOR EACH STATEMENT
    EXECUTE FUNCTION cladelog_refuse_rewrite('the Merkle tree is append-only');
DROP TRIGGER IF EXISTS tree_within_log ON tree_nodes;
CREATE TRIGGER tree_within_log BEFORE INSERT ON tree_nodes
    FOR EACH ROW EXECUTE FUNCTION cladelog_tree_within_log();
-- schema 8's per-table copies, no trigger uses them any more
DROP FUNCTION IF EXISTS cladelog_refuse_batch_rewrite();
DROP FUNCTION IF EXISTS cladelog_refuse_tree_rewrite();
"""


#: the versions of a list of streams (0 for a stream with no event)
_VERSIONS = ("SELECT s, (SELECT MAX(stream_version) FROM events WHERE stream = s) "
             "FROM unnest(%s::text[]) AS s")

#: batches of this many events or more are appended by COPY, chained in this process
#: (:meth:`PostgresStore._append_copy`), smaller ones by the function
#: (docs/benchmarks-history.md, postgres, issue 23)
COPY_FROM = 256

#: the one statement of an append (see postgres_append.sql); binary parameters
def _append_call(arguments: Sequence[str], *, in_transaction: bool = False) -> str:
    """The statement appending with these 15 argument expressions: the procedure
    ``cladelog_append_durably`` (schema 8: its own two transactions, the head lock released
    before the flush; schema 9: it reports how it committed), or with ``in_transaction`` a
    call of the function
    ``cladelog_append`` that commits with the caller's transaction (the test hooks)."""
    if in_transaction:  # the transaction is the caller's: no flush of the procedure's
        return ("SELECT status, head_position, head_hash, first_position, last_position, "
                "hashes, versions, conflict_stream, conflict_actual, held_us, NULL AS flush "
                "FROM cladelog_append(" + ", ".join(arguments) + ")")
    # the eleven INOUT parameters: the procedure's results, as one row
    return "CALL cladelog_append_durably(" + ", ".join([*arguments, *["NULL"] * 11]) + ")"


_APPEND = _append_call(["%b"] * 15)
_APPEND_IN_TRANSACTION = _append_call(["%b"] * 15, in_transaction=True)
#: a read's barrier (postgres_append.sql), in the read's own autocommit statement or in
#: one after it: that statement completes once every commit the read saw is flushed.
#: Nothing leaves the store before it is durable (schema 8: appends release the head lock
#: before their flush)
_DURABLE = "SELECT cladelog_durable()"

#: batches of up to this many events (naming up to this many expected versions) send each
#: array element as a parameter of its own, and the statement builds the arrays
#: (:func:`_append_sql`): psycopg adapts a Python list in Python, ~60 us per batch-1
#: append for the function's nine arrays, a scalar in C
SCALAR_UPTO = 4

#: the element types of cladelog_append's array parameters 5..13, in order
_ARRAY_TYPES = ("text", "bytea", "text", "bytea", "integer", "bytea", "bytea", "text",
                "bigint")


@functools.lru_cache(maxsize=64)
def _append_sql(events: int, expected: int, in_transaction: bool = False) -> str:
    """The call of ``cladelog_append`` for a batch of ``events`` events naming ``expected``
    expected versions, with the arrays' elements as parameters of their own (the order of
    :func:`_scalar_params`)."""
    arrays = [
        "ARRAY[" + ", ".join([f"%b::{t}"] * count) + "]" if count else f"'{{}}'::{t}[]"
        for t, count in zip(_ARRAY_TYPES, [events] * 7 + [expected] * 2, strict=True)
    ]
    return _append_call(["%b"] * 4 + arrays + ["%b"] * 2, in_transaction=in_transaction)


def _scalar_params(args: list[Any]) -> list[Any]:
    """The parameters of :func:`_append_sql` from :func:`_call_args`'s (the arrays' elements
    in their place), without the peaks."""
    flat = args[:4]
    for array in args[4:13]:
        flat.extend(array)
    return flat


def _function_sql() -> str:
    from importlib.resources import files

    text = files(__package__).joinpath("postgres_append.sql").read_text(encoding="utf-8")
    return text.replace("__STRIDE__", str(tree.STRIDE))  # the stored levels (store/tree.py)


def _call_args(batch: EncodedBatch, expected_versions: Mapping[str, int] | None, key: str,
               now: str) -> list[Any]:
    """The parameters of ``cladelog_append`` but the peaks: the batch as arrays, and the
    JSON strings of each stream and type and of ``now`` (the body's other string members)
    from the one canonical encoder. Raises :class:`InputError` for a string that has no
    canonical form (a lone surrogate), before anything is sent."""
    events = batch.events
    quoted: dict[str, bytes] = {}

    def q(value: str, i: int, name: str) -> bytes:
        got = quoted.get(value)
        if got is None:
            try:
                got = quoted[value] = canonical_bytes(value, path="$")
            except CanonicalError as exc:
                where = (name if i < 0 else f"events[{i}].{name}" if len(events) > 1
                         else f"event.{name}")  # named only when refused: 1,000 f-strings
                raise InputError(f"{where}: {str(exc).removeprefix('$: ')}") from None
        return got

    streams = [e.stream for e in events]
    types = [e.type for e in events]
    expected = dict(expected_versions or {})
    for stream, version in expected.items():
        if stream.__class__ is not str or version.__class__ is not int:
            raise InputError(f"expected_versions: {stream!r}: must map a stream name to an "
                             "integer version")
    return [
        key, batch.digest, now, q(now, -1, "recorded_at"),
        streams, [q(s, i, "stream") for i, s in enumerate(streams)],
        types, [q(t, i, "type") for i, t in enumerate(types)],
        [e.schema_version for e in events],
        [d for d, _ in batch.parts], [m for _, m in batch.parts],
        list(expected), list(expected.values()),
    ]


def _kept_peaks(head_row: Sequence[Any]) -> tree.TreeState | None:
    """The tree's peaks the head row ``(position, hash, tree_peaks, tree_for)`` keeps, if
    they are for that head."""
    position, hash_, peaks, kept_for = head_row
    if peaks is None or kept_for != hash_:
        return None
    raw = bytes(peaks)
    return tree.TreeState(Head(int(position), hash_),
                          [raw[k:k + 32] for k in range(0, len(raw), 32)])


def _move_head(conn: Any, head: Head, grown: tree.TreeState | None) -> None:
    """Move the head row to ``head`` with the tree's peaks there (when known)."""
    if grown is not None and grown.head == head:
        conn.execute("UPDATE cladelog_head SET position = %s, hash = %s, tree_peaks = %s, "
                     "tree_for = %s WHERE id = 1",
                     (head.position, head.hash, b"".join(grown.peaks), head.hash))
    else:
        conn.execute("UPDATE cladelog_head SET position = %s, hash = %s WHERE id = 1",
                     (head.position, head.hash))


def _split_url(url: str) -> tuple[str, str]:
    """Separate cladelog's ``schema`` parameter from the libpq URL."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = "public"
    rest = []
    for key, value in query:
        if key == "schema":
            schema = value
        else:
            rest.append((key, value))
    if not _SCHEMA_NAME.match(schema):
        raise StoreError(f"store: schema {schema!r} must match {_SCHEMA_NAME.pattern}")
    return urlunsplit(parts._replace(query=urlencode(rest))), schema


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


@contextlib.contextmanager
def _server_call(psycopg: Any, what: str) -> Iterator[None]:
    """Turn a driver error inside the block into ``StoreError("store: WHAT failed (...)")``."""
    try:
        yield
    except psycopg.Error as exc:
        raise StoreError(f"store: {what} failed ({_describe(exc)})") from None


class PostgresStore(EventStore):
    """An :class:`EventStore` in a PostgreSQL database (see the module docstring)."""

    def __init__(self, url: str, *, create: bool = False, pool_size: int = 4) -> None:
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError:
            raise StoreError(
                "store: PostgreSQL needs psycopg; install cladelog-core[postgres]"
            ) from None
        self._psycopg = psycopg
        self.url = url
        self._conninfo, self.schema = _split_url(url)
        self._kwargs: dict[str, Any] = {"options": f"-c search_path={self.schema}",
                                        "connect_timeout": 10}
        # fail fast and clearly when the server is unreachable or refuses us
        try:
            with psycopg.connect(self._conninfo, autocommit=True, **self._kwargs) as conn:
                if create:
                    conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
        except psycopg.Error as exc:
            raise StoreError(f"store: cannot connect to PostgreSQL ({_describe(exc)})") from None
        # a connection is waited for as long as one takes to open (psycopg_pool's default,
        # 30 s, would hold a follower that retries a restarting server that long)
        # autocommit: an append is one statement, and its own transaction
        self._pool = ConnectionPool(self._conninfo, kwargs={**self._kwargs, "autocommit": True},
                                    min_size=1,
                                    max_size=pool_size, open=True, name="cladelog",
                                    timeout=self._kwargs["connect_timeout"])
        try:
            # wait for the first connection: a request made before it is ready queues, and a
            # queued request makes the pool open a second one. Connections are handed out
            # in turn, and a single-threaded writer alternating between two server
            # processes paid ~170 us per append for it (benchmarks/README.md, issue 23)
            with self._call("opening the connection pool"):  # PoolTimeout is a psycopg.Error
                self._pool.wait(timeout=self._kwargs["connect_timeout"])
            if create:
                with self._call(f"creating schema {self.schema!r}"):
                    self._create_schema()
            self._check_schema()
        except BaseException:
            self._pool.close()
            raise
        self._listener: Any = None
        self._idle_read: Any = None  # the connection the last read left (_read_connection)
        self._reads_lock = threading.Lock()
        self._closed = False
        #: seconds this object's appends held the head lock, and how many appends: by the
        #: function, from taking the lock to the end of its work in the server (the commit
        #: follows); by COPY, from the moment this process got the lock to the commit's end
        self.lock_held: tuple[float, int] = (0.0, 0)
        #: appends by the procedure, by the way they committed (schema 9): "alone"
        #: (synchronously, the head lock held through the flush: no other append since
        #: this connection's previous one, and no wait for the lock) or "shared" (the lock
        #: released before the flush, which the writer then waits for); COPY's are shared
        self.flushes: dict[str, int] = {"alone": 0, "shared": 0}
        #: batches of this many events or more are appended by COPY (see COPY_FROM)
        self.copy_from = COPY_FROM
        #: False only in a benchmark that measures what the tree costs an append in chunks
        self._keep_tree = True
        #: test hooks: called inside the append transaction, just before COMMIT / after it
        self._before_commit: Callable[[Any], None] | None = None
        self._after_commit: Callable[[], None] | None = None

    # -- schema -------------------------------------------------------------------------
    def _create_schema(self) -> None:
        with self._pool.connection() as conn, conn.transaction():
            # one creator at a time: concurrent `init`s must not race on CREATE ... IF NOT EXISTS
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('cladelog_schema'))")
            conn.execute("CREATE TABLE IF NOT EXISTS cladelog_schema (version INTEGER PRIMARY "
                         "KEY, applied_at TEXT NOT NULL)")
            row = conn.execute("SELECT MAX(version) FROM cladelog_schema").fetchone()
            version = row[0] if row is not None else None
            if version == 1:
                self._upgrade_from_v1(conn)
            if version is not None and 4 <= version < 7:
                # versions 4 to 6 stored every 4th level: the table (and its triggers) is
                # made again by the DDL, and rebuilt from the events' chain hashes below
                conn.execute("DROP TABLE tree_nodes")
            conn.execute(_DDL)  # version 2 lacks only the triggers on the batches table
            conn.execute(_function_sql())  # version 5: the append function
            if version is not None and version < 7:
                self._build_tree(conn)  # the events an older store holds get their tree
            if version is not None and version < SCHEMA_VERSION:
                self.upgraded_from = version
            conn.execute(
                "INSERT INTO cladelog_schema (version, applied_at) VALUES (%s, %s) "
                "ON CONFLICT (version) DO NOTHING", (SCHEMA_VERSION, utc_now()),
            )

    def _build_tree(self, conn: Any) -> None:
        """Schema 4 and 7, inside the caller's transaction: the tree over the events held."""

        def hashes() -> Iterator[str]:
            done = 0
            while True:
                page = conn.execute(
                    "SELECT position, hash FROM events WHERE position > %s ORDER BY position "
                    "LIMIT 8192", (done,)).fetchall()
                if not page:
                    return
                yield from (r[1] for r in page)
                done = int(page[-1][0])

        for nodes in tree.rebuild_rows(hashes()):
            self._copy_nodes(conn, nodes)

    @staticmethod
    def _copy_nodes(conn: Any, nodes: Sequence[tuple[int, int, bytes]]) -> None:
        if nodes:
            with conn.cursor() as cur, cur.copy(
                "COPY tree_nodes (level, idx, hash) FROM STDIN"
            ) as copy:
                for node in nodes:  # COPY fires the row triggers like INSERT
                    copy.write_row(node)

    def _upgrade_from_v1(self, conn: Any) -> None:
        """Version 1 -> 2 inside the caller's transaction: split each stored body into data
        and meta (checking the new row rebuilds exactly the old body), drop the body."""
        conn.execute("ALTER TABLE events DISABLE TRIGGER events_no_update")
        conn.execute("ALTER TABLE events ADD COLUMN data BYTEA, ADD COLUMN meta BYTEA")
        done = 0
        while True:
            rows = conn.execute(
                "SELECT position, stream, stream_version, type, schema_version, recorded_at, "
                "body, hash, prev_hash FROM events WHERE position > %s ORDER BY position "
                "LIMIT 2000", (done,),
            ).fetchall()
            if not rows:
                break
            updates = []
            for r in rows:
                event = RecordedEvent(int(r[0]), r[1], int(r[2]), r[3], r[4], None, {}, r[5],
                                      r[8], r[7], bytes(r[6]))
                try:
                    data, meta = split_body(event)
                except ChainError as exc:
                    raise StoreError(f"store: cannot upgrade schema {self.schema!r} from "
                                     f"version 1: {exc}; nothing was changed") from None
                updates.append((data, meta, event.position))
            with conn.cursor() as cur:
                cur.executemany("UPDATE events SET data = %s, meta = %s WHERE position = %s",
                                updates)
            done = int(rows[-1][0])
        conn.execute("ALTER TABLE events DROP COLUMN body, ALTER COLUMN data SET NOT NULL, "
                     "ALTER COLUMN meta SET NOT NULL")
        conn.execute("ALTER TABLE events ENABLE TRIGGER events_no_update")

    def _check_schema(self) -> None:
        psycopg = self._psycopg
        try:
            with self._pool.connection() as conn:
                row = conn.execute("SELECT MAX(version) FROM cladelog_schema").fetchone()
        except psycopg.errors.UndefinedTable:
            raise StoreError(
                f"store: schema {self.schema!r} holds no cladelog log (run 'cladelog init')"
            ) from None
        except psycopg.Error as exc:
            raise StoreError(f"store: {_describe(exc)}") from None
        version = row[0] if row else None
        if version is not None and version < SCHEMA_VERSION:
            raise StoreError(f"store: schema {self.schema!r} has schema version {version}; "
                             f"run 'cladelog init' to upgrade it to {SCHEMA_VERSION}")
        if version is None or version > SCHEMA_VERSION:
            raise StoreError(f"store: schema version {version} is not supported "
                             f"(this cladelog knows {SCHEMA_VERSION})")

    def schema_version(self) -> int:
        with self._call("reading the schema version"), self._pool.connection() as conn:
            row = conn.execute("SELECT MAX(version) FROM cladelog_schema").fetchone()
        return int(row[0]) if row else 0

    # -- writing ------------------------------------------------------------------------
    def append(
        self,
        events: Sequence[PreparedEvent],
        *,
        expected_versions: Mapping[str, int] | None = None,
        idempotency_key: str | None = None,
        clock: Callable[[], str] | None = None,
    ) -> list[RecordedEvent]:
        """One call of ``cladelog_append`` (one round trip): everything a writer can do
        without the head lock (validating, encoding, the batch's digest) is done before
        it; the server chains and inserts under the lock, and the hashes it returns are
        checked against this process's own computation of the same bodies."""
        if not events:
            return []
        key = idempotency_key or f"auto:{uuid.uuid4()}"
        batch = encode_batch(events)  # before the head lock: encoding is the slow part
        now = (clock or utc_now)()
        args = _call_args(batch, expected_versions, key, now)
        psycopg = self._psycopg
        if len(events) >= self.copy_from:
            # a large batch: chained here and sent by COPY (the function's per-event loop
            # in PL/pgSQL costs more than the few round trips this path adds)
            def once() -> list[RecordedEvent]:
                return self._append_copy(batch, dict(zip(args[11], args[12], strict=True)),
                                         key, now)
        else:
            def once() -> list[RecordedEvent]:
                return self._append_once(batch, args, key, now)
        try:
            return once()
        except psycopg.OperationalError:
            # the connection died: the batch is wholly committed or wholly absent;
            # retrying under the same key appends it exactly once
            try:
                self._pool.check()
                return once()
            except psycopg.Error as exc:
                raise StoreError(
                    f"store: append failed, connection lost ({_describe(exc)}); nothing was "
                    f"appended twice — retry with idempotency key {key!r}"
                ) from None
        except psycopg.Error as exc:
            # the server refused (a guard, a timeout, the flush barrier after the commit):
            # the batch may or may not be in the log, and its key tells
            raise StoreError(f"store: append failed ({_describe(exc)}); retry with "
                             f"idempotency key {key!r}: it appends the batch at most once"
                             ) from None

    def _append_once(self, batch: EncodedBatch, args: list[Any], key: str,
                     now: str) -> list[RecordedEvent]:
        psycopg = self._psycopg
        hooked = self._before_commit is not None
        if len(args[4]) <= SCALAR_UPTO and len(args[11]) <= SCALAR_UPTO:
            sql = _append_sql(len(args[4]), len(args[11]), hooked)
            params = _scalar_params(args)
        else:
            sql, params = (_APPEND_IN_TRANSACTION if hooked else _APPEND), args
        with self._pool.connection() as conn:
            peaks: list[Any] = [None, None]
            while True:
                try:
                    if self._before_commit is None:  # autocommit: the call commits itself
                        row = conn.execute(sql, [*params, *peaks]).fetchone()
                    else:
                        with conn.transaction():
                            row = conn.execute(sql, [*params, *peaks]).fetchone()
                            if row is not None and row[0] == "ok":
                                self._before_commit(conn)
                except psycopg.Error as exc:
                    if exc.sqlstate == "CLTRE":  # the tree table holds rows beyond the log
                        raise tree.damaged(int(exc.diag.message_detail or "0"), exc) from None
                    raise
                assert row is not None
                status = row[0]
                if status != "peaks":
                    break
                # the peaks kept in the head row are not for this head (it was moved by an
                # older writer, or this is the first append since the upgrade to schema 5):
                # read them from the stored tree (the nodes at a size never change)
                size = int(row[1])
                wanted = peak_nodes(size)
                got = tree.fetch(wanted, lambda r: self._read_ranges(conn, r))
                peaks = [b"".join(got[n] for n in wanted), row[2]]
            if self._after_commit is not None:
                self._after_commit()
        status, _, prev, first, last, hashes, versions, stream, actual, held, flush = row
        if status == "repeated":
            return list(self.read(int(first), int(last)))
        if status == "key":
            raise InputError(f"idempotency_key: {key!r} was used for a different batch")
        if status == "conflict":
            expected = dict(zip(args[11], args[12], strict=True))
            raise ConcurrencyError(stream, expected[stream], int(actual))
        self.lock_held = (self.lock_held[0] + held / 1e6, self.lock_held[1] + 1)
        if flush is not None:
            self.flushes[flush] += 1
        # the server chained by the rule of docs/events.md; so does this process, from the
        # same bodies: any difference is an error (the batch is in the log, and verify
        # names it)
        current: dict[str, int] = {}
        for event, v in zip(batch.events, versions, strict=True):
            current.setdefault(event.stream, int(v) - 1)
        recorded, _ = build_rows(batch, Head(int(first) - 1, prev), current, None,
                                 lambda: now)
        for e, h in zip(recorded, hashes, strict=True):
            if e.hash != h:
                raise StoreError(
                    f"store: the server chained position {e.position} to {h}, but its "
                    f"body hashes to {e.hash}: the function cladelog_append does not follow "
                    "the chain rule (run 'cladelog verify'; 'cladelog init' reinstalls it)")
        return recorded

    def append_chunks(
        self,
        chunks: Iterable[Chunk],
        *,
        idempotency_key: str | None = None,
        clock: Callable[[], str] | None = None,
        lead: Sequence[PreparedEvent] = (),
        lead_expected: Mapping[str, int] | None = None,
    ) -> BatchResult:
        """See :meth:`EventStore.append_chunks`. The input is read once, so a connection
        lost while the batch is written cannot be retried here: lost before the whole batch
        was sent, nothing was appended; lost at the commit, the batch's key (one is made up
        when the caller gives none) tells whether it landed, as for :meth:`append`."""
        psycopg = self._psycopg
        key = idempotency_key or f"auto:{uuid.uuid4()}"
        sent: list[str] = []  # the digest, once every chunk was written
        try:
            return self._append_chunks_once(chunks, key, clock, lead, lead_expected, sent)
        except psycopg.OperationalError as exc:
            lost = _describe(exc)
        except psycopg.Error as exc:  # refused inside the transaction: rolled back
            raise StoreError(f"store: append failed ({_describe(exc)}); nothing was "
                             "appended") from None
        if sent:  # the commit may have landed: look for the key
            try:
                self._pool.check()
                with self._pool.connection() as conn:
                    done = conn.execute("SELECT digest, first_position, last_position FROM "
                                        "batches WHERE key = %s", (key,)).fetchone()
            except psycopg.Error as exc:
                raise StoreError(
                    f"store: append failed, connection lost ({lost}) and the store cannot "
                    f"be asked whether it committed ({_describe(exc)}); retry with "
                    f"idempotency key {key!r}: it appends the batch at most once"
                ) from None
            if done is not None and done[0] == sent[0]:
                return BatchResult(int(done[1]), int(done[2]), self.head())
        raise StoreError(f"store: append failed, connection lost ({lost}); nothing was "
                         f"appended — retry with idempotency key {key!r}")

    def _append_chunks_once(
        self,
        chunks: Iterable[Chunk],
        key: str,
        clock: Callable[[], str] | None,
        lead: Sequence[PreparedEvent],
        lead_expected: Mapping[str, int] | None,
        sent: list[str],
    ) -> BatchResult:
        with self._pool.connection() as conn:
            with conn.transaction():
                head_row, done, _ = self._lock_head(conn, key)
                if done is not None:  # a retry: read the input through for its digest
                    if done[0] != digest_chunks(chunks):
                        raise InputError(f"idempotency_key: {key!r} was used for a different "
                                         "batch")
                    return BatchResult(int(done[1]), int(done[2]),
                                       Head(int(head_row[0]), head_row[1]), repeated=True)
                state: list[tree.TreeState | None] = [_kept_peaks(head_row)]

                def write(rows: list[Any]) -> None:
                    state[0] = self._write_rows(conn, rows, state[0], None)

                head, first, digest = write_chunks(
                    chunks, Head(int(head_row[0]), head_row[1]),
                    lambda streams: self._stream_versions(conn, streams), write, clock,
                    lead=lead, lead_expected=lead_expected)
                if head.position > int(head_row[0]):
                    self._finish_batch(conn, head, state[0], key, digest, first)
                sent.append(digest)
                if self._before_commit is not None:
                    self._before_commit(conn)
            if self._after_commit is not None:
                self._after_commit()
        return BatchResult(first, head.position, head)

    def _append_copy(self, batch: EncodedBatch, expected: Mapping[str, int], key: str,
                     now: str) -> list[RecordedEvent]:
        """:meth:`append` of a large batch: in one transaction, the head lock, the key and
        the streams' versions in one round trip, the chain computed here (the batch was
        encoded before the lock), the rows by COPY, the tree's nodes, the head moved. As
        the procedure does (schema 8), the transaction commits without waiting for the WAL
        flush, which releases the lock; the barrier then waits for it."""
        streams = sorted({e.stream for e in batch.events} | expected.keys())
        recorded: list[RecordedEvent] | None = None
        with self._pool.connection() as conn:
            with conn.transaction():
                head_row, done, current = self._lock_head(conn, key, streams,
                                                          flush_after=True)
                locked = time.perf_counter()
                if done is not None:
                    if done[0] != batch.digest:
                        raise InputError(f"idempotency_key: {key!r} was used for a different "
                                         "batch")
                else:
                    check_versions(current, expected)
                    head = Head(int(head_row[0]), head_row[1])
                    digests: list[bytes] = []
                    recorded = []
                    # chained while the rows go out: the server inserts the first ones
                    # while this process hashes the next
                    rows = stream_rows(batch, head, current, now, digests, recorded)
                    grown = self._write_rows(conn, rows, _kept_peaks(head_row), digests,
                                             before=head)
                    last = recorded[-1]
                    self._finish_batch(conn, Head(last.position, last.hash), grown, key,
                                       batch.digest, head.position + 1)
                    if self._before_commit is not None:
                        self._before_commit(conn)
            if recorded is not None:
                self.lock_held = (self.lock_held[0] + time.perf_counter() - locked,
                                  self.lock_held[1] + 1)
                self.flushes["shared"] += 1
                if self._after_commit is not None:
                    self._after_commit()
                conn.execute(_DURABLE)  # acknowledged once flushed
        if recorded is None:
            assert done is not None
            return list(self.read(int(done[1]), int(done[2])))
        return recorded

    @staticmethod
    def _lock_head(conn: Any, key: str, streams: Sequence[str] = (), *,
                   flush_after: bool = False
                   ) -> tuple[Sequence[Any], Sequence[Any] | None, dict[str, int]]:
        """In the caller's transaction and one round trip: lock the head row, and read the
        batch record of ``key`` and the versions of ``streams`` (after the lock). With
        ``flush_after`` the transaction will commit without waiting for the WAL flush (the
        caller runs the barrier after the commit)."""
        with conn.pipeline():
            if flush_after:
                conn.execute("SET LOCAL synchronous_commit = off")
            head_cur = conn.execute("SELECT position, hash, tree_peaks, tree_for FROM "
                                    "cladelog_head WHERE id = 1 FOR UPDATE")
            key_cur = conn.execute("SELECT digest, first_position, last_position FROM "
                                   "batches WHERE key = %s", (key,))
            versions_cur = conn.execute(_VERSIONS, (list(streams),)) if streams else None
        head_row = head_cur.fetchone()
        assert head_row is not None
        versions = ({s: int(v or 0) for s, v in versions_cur.fetchall()}
                    if versions_cur is not None else {})
        return head_row, key_cur.fetchone(), versions

    @staticmethod
    def _stream_versions(conn: Any, streams: list[str]) -> dict[str, int]:
        return {s: int(v or 0) for s, v in conn.execute(_VERSIONS, (streams,)).fetchall()}

    def _write_rows(self, conn: Any, rows: Iterable[Any], state: tree.TreeState | None,
                    digests: list[bytes] | None, *, before: Head | None = None
                    ) -> tree.TreeState | None:
        """COPY ``rows`` into events and grow the tree over them (in the caller's
        transaction); ``digests``: their chain hashes' raw bytes, when known (then
        ``rows`` may be an iterator, and ``before`` is the head they follow). Returns the
        tree's state after them."""
        with conn.cursor() as cur, cur.copy(f"COPY events ({_COLUMNS}) FROM STDIN") as copy:
            for r in rows:
                copy.write_row(r)
        if not self._keep_tree:
            return state
        if before is None:
            assert isinstance(rows, list)
            before = Head(rows[0][0] - 1, rows[0][9])
        nodes, grown = tree.extension(
            before, digests if digests is not None else (r[8] for r in rows), state,
            lambda ranges: self._read_ranges(conn, ranges), raw=digests is not None)
        try:
            self._copy_nodes(conn, nodes)
        except (self._psycopg.errors.IntegrityError,
                self._psycopg.errors.RaiseException) as exc:
            raise tree.damaged(before.position, exc) from None
        return grown

    def _finish_batch(self, conn: Any, head: Head, grown: tree.TreeState | None, key: str,
                      digest: str, first: int) -> None:
        """Move the head row to ``head`` (with the tree's peaks there, when known), record
        the batch under ``key`` (when it appended events) and notify, in one round trip."""
        with conn.pipeline():
            _move_head(conn, head, grown if self._keep_tree else None)
            if head.position >= first:
                conn.execute("INSERT INTO batches (key, digest, first_position, "
                             "last_position) VALUES (%s, %s, %s, %s)",
                             (key, digest, first, head.position))
            conn.execute(f"NOTIFY {CHANNEL}, '{head.position}'")

    def import_events(self, events: Iterable[RecordedEvent]) -> ImportResult:
        psycopg = self._psycopg
        present = appended = 0
        try:
            with self._pool.connection() as conn, conn.transaction():
                head_row = conn.execute(
                    "SELECT position, hash, tree_peaks, tree_for FROM cladelog_head "
                    "WHERE id = 1 FOR UPDATE"
                ).fetchone()
                assert head_row is not None
                head_pos = int(head_row[0])
                added: list[str] = []
                position, prev = 0, GENESIS_HASH
                for e in events:
                    check_import(e, position, prev)
                    if e.position <= head_pos:
                        row = conn.execute("SELECT hash FROM events WHERE position = %s",
                                           (e.position,)).fetchone()
                        if row is None or row[0] != e.hash:
                            raise ImportConflictError(
                                f"position {e.position}: the store holds a different event "
                                "here; nothing was imported"
                            )
                        present += 1
                    else:
                        data, meta = split_body(e)
                        conn.execute(
                            f"INSERT INTO events ({_COLUMNS}) "
                            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                            (e.position, e.stream, e.stream_version, e.type, e.schema_version,
                             e.recorded_at, data, meta, e.hash, e.prev_hash),
                        )
                        appended += 1
                        added.append(e.hash)
                    position, prev = e.position, e.hash
                nodes, grown = tree.extension(Head(head_pos, head_row[1]), added,
                                              _kept_peaks(head_row),
                                              lambda ranges: self._read_ranges(conn, ranges))
                self._copy_nodes(conn, nodes)
                if position > head_pos:
                    _move_head(conn, Head(position, prev), grown)
                    conn.execute(f"NOTIFY {CHANNEL}, '{position}'")
        except psycopg.errors.IntegrityError as exc:
            raise ImportConflictError(f"import refused by the store: {_describe(exc)}") from None
        except psycopg.Error as exc:
            raise StoreError(f"store: import failed ({_describe(exc)}); an import is all or "
                             "nothing, and repeating it is safe") from None
        return ImportResult(present, appended, self.head())

    # -- reading ------------------------------------------------------------------------
    _mark = "%s"  # the driver's parameter placeholder, for row_filter

    def _call(self, what: str) -> contextlib.AbstractContextManager[None]:
        """A block talking to the server: a driver error becomes a one-line StoreError."""
        return _server_call(self._psycopg, what)

    @contextlib.contextmanager
    def _read_connection(self) -> Iterator[Any]:
        """A connection for one read, held while its caller iterates (a follower: for
        hours), apart from the appends' pool. Opening one costs about 3 ms, which every
        read paid (a replay of 8,000 events takes ~50 ms), so the last one a read left
        in good order is kept and handed to the next read, after a round trip that shows
        the server still has it (``ConnectionPool.check_connection``); a read that fails
        closes its connection, as before, and concurrent reads each open their own."""
        with self._reads_lock:
            conn, self._idle_read = self._idle_read, None
        if conn is not None:
            from psycopg_pool import ConnectionPool

            try:
                ConnectionPool.check_connection(conn)
            except self._psycopg.Error:
                conn.close()
                conn = None
        if conn is None:
            conn = self._psycopg.connect(self._conninfo, autocommit=True, **self._kwargs)
        try:
            yield conn
        except BaseException:
            conn.close()
            raise
        idle = conn.info.transaction_status == self._psycopg.pq.TransactionStatus.IDLE
        with self._reads_lock:
            if idle and self._idle_read is None and not self._closed:
                self._idle_read, conn = conn, None
        if conn is not None:
            conn.close()

    @contextlib.contextmanager
    def _rows(self, sql: str, args: list[Any]) -> Iterator[Iterator[Any]]:
        """The rows of a read, on a connection of their own held meanwhile."""
        # a connection of its own with a server-side cursor: rows stream in pages,
        # and the snapshot only ever holds committed, gap-free positions. A driver
        # error while connecting, querying or fetching a page (the caller consumes
        # the rows inside this block, so it is thrown in here) becomes a StoreError;
        # any other error passes through unchanged.
        with (
            self._call("reading events from PostgreSQL"),
            self._read_connection() as conn,
            conn.transaction(),
            conn.cursor(name="cladelog_read", binary=True) as cur,
        ):
            cur.execute(sql, args)
            # after the cursor's snapshot, outside its transaction (the barrier's commit is
            # what waits for the flush): every row the cursor shows is durable
            with self._pool.connection() as barrier:
                barrier.execute(_DURABLE)
            # pages by bytes: iterating the cursor costs a Python frame per row
            yield paged_rows(cur.fetchmany)

    def head(self) -> Head:
        with self._call("reading the head"), self._pool.connection() as conn:
            row = conn.execute("SELECT position, hash, cladelog_durable() FROM cladelog_head "
                               "WHERE id = 1").fetchone()
        assert row is not None
        return Head(int(row[0]), row[1])

    def tree_ranges(self, ranges: Sequence[tuple[int, int, int]]) -> list[list[bytes]]:
        with self._call("reading the Merkle tree"), self._pool.connection() as conn:
            got = self._read_ranges(conn, ranges)
            conn.execute(_DURABLE)  # a later statement: after the read's snapshot
            return got

    def _read_ranges(self, conn: Any, ranges: Sequence[tuple[int, int, int]]
                     ) -> list[list[bytes]]:
        """One round trip: the leaves from ``events``, the stored levels from
        ``tree_nodes``."""
        if not ranges:
            return []
        rows = conn.execute(
            "SELECT w.k, e.position, e.hash, NULL::bytea "
            "FROM unnest(%s::int[], %s::bigint[], %s::bigint[]) "
            "WITH ORDINALITY AS w(level, lo, hi, k) JOIN events e "
            "ON w.level = 0 AND e.position > w.lo AND e.position <= w.hi "
            "UNION ALL SELECT w.k, t.idx, NULL, t.hash "
            "FROM unnest(%s::int[], %s::bigint[], %s::bigint[]) "
            "WITH ORDINALITY AS w(level, lo, hi, k) JOIN tree_nodes t "
            "ON w.level > 0 AND t.level = w.level AND t.idx >= w.lo AND t.idx < w.hi "
            "ORDER BY 1, 2",
            [[r[0] for r in ranges], [r[1] for r in ranges], [r[2] for r in ranges]] * 2,
        ).fetchall()
        out: list[list[bytes]] = [[] for _ in ranges]
        for k, _, chain, node in rows:
            out[int(k) - 1].append(tree.chain_leaf(chain) if chain is not None else bytes(node))
        self.tree_rows_read += len(rows)
        return out

    def hash_at(self, position: int) -> str | None:
        with self._call(f"reading the hash at position {position}"), \
                self._pool.connection() as conn:
            row = conn.execute("SELECT (SELECT hash FROM events WHERE position = %s), "
                               "cladelog_durable()", (position,)).fetchone()
        return row[0] if row else None

    def stream_version(self, stream: str) -> int:
        with self._call(f"reading the version of stream {stream!r}"), \
                self._pool.connection() as conn:
            row = conn.execute("SELECT MAX(stream_version), cladelog_durable() FROM events "
                               "WHERE stream = %s", (stream,)).fetchone()
        return int(row[0] or 0) if row else 0

    def batch_records(self) -> list[BatchRecord]:
        with self._call("reading the idempotency records"), self._pool.connection() as conn:
            rows = conn.execute("SELECT key, digest, first_position, last_position FROM "
                                "batches ORDER BY first_position").fetchall()
            conn.execute(_DURABLE)
        return [BatchRecord(k, d, int(f), int(la)) for k, d, f, la in rows]

    def wait_for_append(self, after: int, timeout: float) -> bool:
        """Block until the head passes ``after`` (LISTEN/NOTIFY) or ``timeout`` seconds pass.

        The listening connection stays open between calls, so a notification
        sent while the caller was busy is still queued on the next call. If it is
        lost, the call raises :class:`StoreError` and the next call listens anew.
        """
        try:
            with self._call("waiting for new events (LISTEN)"):
                if self._listener is None:
                    self._listener = self._psycopg.connect(self._conninfo, autocommit=True,
                                                           **self._kwargs)
                    self._listener.execute(f"LISTEN {CHANNEL}")
                if self.head().position > after:
                    return True
                for _ in self._listener.notifies(timeout=timeout, stop_after=1):
                    break
        except StoreError:
            self._drop_listener()
            raise
        return self.head().position > after

    def _drop_listener(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(Exception):
                listener.close()

    # -- checkpoints --------------------------------------------------------------------
    def load_checkpoint(self, name: str) -> Checkpoint | None:
        with self._call(f"reading checkpoint {name!r}"), self._pool.connection() as conn:
            row = conn.execute(
                "SELECT name, version, position, head_hash, state, digest FROM checkpoints "
                "WHERE name = %s", (name,),
            ).fetchone()
        if row is None:
            return None
        return Checkpoint(row[0], row[1], int(row[2]), row[3], json.loads(bytes(row[4])), row[5])

    def save_checkpoint(self, checkpoint: Checkpoint) -> None:
        with self._call(f"saving checkpoint {checkpoint.name!r}"), \
                self._pool.connection() as conn:
            conn.execute(
                "INSERT INTO checkpoints (name, version, position, head_hash, state, digest) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (name) DO UPDATE SET "
                "version = EXCLUDED.version, position = EXCLUDED.position, "
                "head_hash = EXCLUDED.head_hash, state = EXCLUDED.state, "
                "digest = EXCLUDED.digest",
                (checkpoint.name, checkpoint.version, checkpoint.position, checkpoint.head_hash,
                 canonical_bytes(checkpoint.state), checkpoint.digest),
            )

    def delete_checkpoint(self, name: str) -> None:
        with self._call(f"deleting checkpoint {name!r}"), self._pool.connection() as conn:
            conn.execute("DELETE FROM checkpoints WHERE name = %s", (name,))

    def checkpoints(self) -> list[Checkpoint]:
        with self._call("listing checkpoints"), self._pool.connection() as conn:
            names = [r[0] for r in conn.execute("SELECT name FROM checkpoints ORDER BY name")]
        return [c for c in map(self.load_checkpoint, names) if c is not None]

    def checkpoint_marks(self) -> list[CheckpointMark]:
        with self._call("reading the checkpoints' positions"), \
                self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT c.name, c.position, c.head_hash, e.hash FROM checkpoints c "
                "LEFT JOIN events e ON e.position = c.position ORDER BY c.name").fetchall()
        return [CheckpointMark(n, int(p), h, e) for n, p, h, e in rows]

    def size_bytes(self) -> int | None:
        with self._call("measuring the store's size"), self._pool.connection() as conn:
            row = conn.execute(
                "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s AND c.relkind = 'r'", (self.schema,),
            ).fetchone()
        return int(row[0]) if row else None

    def close(self) -> None:
        self._drop_listener()
        with self._reads_lock:
            idle, self._idle_read, self._closed = self._idle_read, None, True
        if idle is not None:
            idle.close()
        self._pool.close()
