"""`replay --follow` against a PostgreSQL server that restarts or stays away.

Each test module run creates a PRIVATE cluster (initdb in a temporary directory, its own
port), restarts and stops it, and removes it at the end: the shared server on 5432 is never
touched.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PrivateCluster:
    """A throw-away PostgreSQL cluster on its own port and socket directory."""

    def __init__(self, *settings: str) -> None:
        self.settings = " ".join(f"-c {setting}" for setting in settings)
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
        if not bins:
            raise RuntimeError("no PostgreSQL server binaries in /usr/lib/postgresql/*/bin")
        self.bin = Path(bins[-1])
        self.dir = Path(tempfile.mkdtemp(prefix="cladelog-pg-"))
        self.data = self.dir / "data"
        self.port = _free_port()
        # the server refuses to run as root: then it runs as the postgres user
        self.user = None if os.geteuid() != 0 else "postgres"
        if self.user:
            pw = pwd.getpwnam(self.user)
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres",
                  "-E", "UTF8", "--no-sync")
        self.start()

    def _run(self, tool: str, *args: str) -> None:
        cmd = [str(self.bin / tool), *args]
        if self.user:
            cmd = ["runuser", "-u", self.user, "--", *cmd]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed: {done.stdout}{done.stderr}")

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.dir / "server.log"), "-w",
                  "-o", f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 "
                        f"-c fsync=off {self.settings}", "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def url(self, schema: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres?schema={schema}"

    def crash(self) -> None:
        """Stop the server as a crash would: no checkpoint, and the WAL not yet written
        out of its buffers is lost (the files the server wrote stay: fsync is off, but
        the kernel keeps what the server wrote)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def drop(self) -> None:
        with contextlib.suppress(RuntimeError):  # unless already stopped
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster() -> Iterator[PrivateCluster]:
    c = PrivateCluster()
    try:
        yield c
    finally:
        c.drop()


@pytest.fixture
def running(cluster: PrivateCluster) -> PrivateCluster:
    """The private cluster, up (a test before may have left it stopped)."""
    with contextlib.suppress(RuntimeError):  # unless it was running
        cluster.start()
    return cluster


CLADELOG = str(Path(sys.executable).with_name("cladelog"))


def _cladelog(cfg: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLADELOG, "--config", str(cfg), *args], capture_output=True,
                          text=True, timeout=120)


def _deployment(tmp_path: Path, url: str, extra: str = "") -> Path:
    cfg = tmp_path / "cladelog.toml"
    cfg.write_text(f'store = "{url}"\nplugins = ["notes"]\nactor = "t"\n{extra}')
    done = _cladelog(cfg, "init")
    assert done.returncode == 0, done.stderr
    return cfg


def _note(cfg: Path, text: str) -> None:
    done = _cladelog(cfg, "notes", "add", text)
    assert done.returncode == 0, done.stderr


def _read_until(stream: IO[str], head: int, seconds: float) -> list[dict[str, Any]]:
    """The follower's replay documents up to the one reaching ``head``."""
    docs: list[dict[str, Any]] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        docs.append(json.loads(line))
        if docs[-1]["head"]["position"] >= head:
            return docs
    raise AssertionError(f"the follower did not reach {head}: {docs}")


def _stderr_lines(text: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Structured (JSON) lines and ``error:`` lines; anything else fails the test."""
    logs, errors = [], []
    for line in text.splitlines():
        if line.startswith("error: "):
            errors.append(line)
        else:
            logs.append(json.loads(line))  # an unstructured line fails here
    return logs, errors


def test_follow_survives_a_server_restart(running: PrivateCluster, tmp_path: Path) -> None:
    cfg = _deployment(tmp_path, running.url("follow_restart"))
    for k in range(3):
        _note(cfg, f"before {k}")
    env = {**os.environ, "CLADELOG_LOG_JSON": "1"}
    proc = subprocess.Popen([CLADELOG, "--config", str(cfg), "replay", "--follow", "--json",
                             "--reconnect-timeout", "120"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    try:
        docs = _read_until(proc.stdout, 4, 60)  # the enablement and three notes
        running.stop()
        time.sleep(2.5)  # the follower notices and retries meanwhile
        running.start()
        for k in range(3):
            _note(cfg, f"after {k}")
        docs += _read_until(proc.stdout, 7, 120)
        running.stop()  # and once more, with events appended while it is away
        running.start()
        _note(cfg, "last")
        docs += _read_until(proc.stdout, 8, 120)
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    logs, errors = _stderr_lines(err)
    assert errors == []
    events = [log["event"] for log in logs]
    assert "follow.reconnecting" in events and events.count("follow.reconnected") == 2
    waits = [log["retry_in"] for log in logs if log["event"] == "follow.reconnecting"]
    assert waits[0] == 0.5 and all(w <= 30 for w in waits)
    # every note applied exactly once over all the follower's replays, and the state it
    # reached is the one a replay from position 0 gives
    applied = sum(p["applied"] for d in docs for p in d["projections"]
                  if p["name"] == "notes.index")
    assert applied == 7
    final = {p["name"]: p["digest"] for p in docs[-1]["projections"]}
    rebuilt = _cladelog(cfg, "replay", "--rebuild", "--json")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert {p["name"]: p["digest"] for p in json.loads(rebuilt.stdout)["projections"]} == final


def test_follow_gives_up_after_the_reconnect_timeout(running: PrivateCluster,
                                                     tmp_path: Path) -> None:
    """The deployment file's follow_reconnect_timeout bounds the retrying."""
    cfg = _deployment(tmp_path, running.url("follow_gives_up"),
                      "follow_reconnect_timeout = 4\n")
    _note(cfg, "one")
    env = {**os.environ, "CLADELOG_LOG_JSON": "1"}
    proc = subprocess.Popen([CLADELOG, "--config", str(cfg), "replay", "--follow", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    try:
        _read_until(proc.stdout, 2, 60)
        running.stop()
        t0 = time.monotonic()
        _out, err = proc.communicate(timeout=90)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 2, err
    logs, errors = _stderr_lines(err)
    assert len(errors) == 1 and "gave up following after" in errors[0]
    assert errors[0].startswith("error: store: ")
    waits = [log["retry_in"] for log in logs if log["event"] == "follow.reconnecting"]
    assert waits[:3] == [0.5, 1.0, 2.0]  # doubling, cut to what is left of the 4 s
    assert sum(waits) <= 4 + 1e-6
    assert took >= 3  # not long before the timeout (the outage began during the stop)


# -- durability: schema 8 releases the head lock before the WAL flush ---------------------

@pytest.fixture(scope="module")
def lazy_wal() -> Iterator[PrivateCluster]:
    """A private cluster whose WAL writer flushes asynchronous commits only every 3 s:
    whatever an append or a read does not flush itself is still in the server's buffers
    when the test crashes it."""
    c = PrivateCluster("wal_writer_delay=3s", "wal_writer_flush_after=1GB")
    try:
        yield c
    finally:
        c.drop()


@pytest.mark.parametrize("batch,count,async_after",
                         [(1, 150, None), (1, 150, -1), (300, 3, None)],
                         ids=["function-alone", "function-contended", "copy"])
def test_every_acknowledged_append_survives_a_crash(lazy_wal: PrivateCluster, batch: int,
                                                    count: int, async_after: int | None
                                                    ) -> None:
    """An append is acknowledged only once flushed, whether it committed synchronously
    (alone: the function's path when it did not wait for the lock) or without waiting for
    the flush, the head lock free at once (the function's path when contended, forced
    here by cladelog.async_after_us = -1; COPY's always): a crash right after the last
    acknowledgement keeps every acknowledged event, chained and with its tree."""
    import psycopg
    from cladelog.core.store.postgres import PostgresStore
    from cladelog.core.testing.conformance import prepared

    with contextlib.suppress(RuntimeError):  # unless it was running
        lazy_wal.start()
    setting = ("RESET cladelog.async_after_us" if async_after is None
               else f"SET cladelog.async_after_us = '{async_after}'")
    with psycopg.connect(lazy_wal.url("x").split("?")[0], autocommit=True) as conn:
        conn.execute(f"ALTER DATABASE postgres {setting}")  # the sessions opened below
    name = f"acked_durable_{batch}_{'forced' if async_after is not None else 'default'}"
    url = lazy_wal.url(name)
    try:
        with PostgresStore(url, create=True) as store:
            for i in range(count):
                last = store.append(prepared("a", batch, start=i * batch))[-1]
            # no read before the crash: a read would flush the WAL itself
        lazy_wal.crash()
        lazy_wal.start()
    finally:
        with contextlib.suppress(Exception), psycopg.connect(
                lazy_wal.url("x").split("?")[0], autocommit=True) as conn:
            conn.execute("ALTER DATABASE postgres RESET cladelog.async_after_us")
    n = batch * count
    with PostgresStore(url) as store:
        head = store.head()
        assert (head.position, head.hash) == (last.position, last.hash) == (n, head.hash)
        assert store.verify().ok
        more = store.append(prepared("a", 1, start=n), expected_versions={"a": n})
        assert more[0].position == n + 1 and more[0].prev_hash == head.hash


def test_a_read_shows_only_what_a_crash_keeps(lazy_wal: PrivateCluster) -> None:
    """A writer that dies between its commit and its flush leaves events that a crash can
    still erase; a read does not hand them out before they are flushed, so whatever it
    returned is still there after a crash."""
    from cladelog.core.store.postgres import PostgresStore
    from cladelog.core.testing.conformance import prepared

    with contextlib.suppress(RuntimeError):  # unless it was running
        lazy_wal.start()
    url = lazy_wal.url("read_durable")
    with PostgresStore(url, create=True) as store, PostgresStore(url) as dying:
        store.append(prepared("a", 3))
        # the dying writer's append: the function in its own transaction, committed
        # without waiting for the flush and never flushed by its writer
        dying._before_commit = lambda conn: conn.execute(
            "SET LOCAL synchronous_commit = off")
        for i in range(3, 40):
            dying.append(prepared("a", 1, start=i))
        head = store.head()
        events = list(store.read())
        proof = store.inclusion_proof(head.position)
    lazy_wal.crash()
    lazy_wal.start()
    with PostgresStore(url) as store:
        assert head.position == 40 and store.head() == head
        assert [e.hash for e in store.read()] == [e.hash for e in events]
        assert store.inclusion_proof(head.position) == proof

