"""The transparency-log commands: keygen, checkpoint, prove, consistency, verify-proof and
verify --checkpoint, with the two attacks a hash chain alone misses (a log rewritten from
event 44 on with every later hash recomputed; a log cut by its last 5 rows) and hostile
files. Expected roots come from an in-memory tree rebuilt from the exported chain hashes.
"""

from __future__ import annotations

import base64
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from cladelog.core.canonical import canonical_bytes
from cladelog.core.cli import main
from cladelog.core.events import chain_hash, encode_body
from cladelog.core.store.tree import rebuild_rows
from cladelog.core.transparency.merkle import MerkleTree, leaf_hash
from click.testing import CliRunner

ORIGIN = "example.org/cladelog/test"


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CLADELOG_ACTOR", "tlog-test")
    monkeypatch.delenv("CLADELOG_CONFIG", raising=False)
    runner = CliRunner()

    def invoke(*args: str) -> Any:
        return runner.invoke(main, list(args), catch_exceptions=False, prog_name="cladelog")

    return invoke


def _notes(tmp_path: Path, n: int, start: int = 0) -> str:
    path = tmp_path / f"notes-{start}.jsonl"
    path.write_text("".join(json.dumps({"stream": f"s{i % 3}", "type": "notes.note_added",
                                        "data": {"text": f"note {i}", "tags": []}}) + "\n"
                            for i in range(start, start + n)), encoding="utf-8")
    return str(path)


@pytest.fixture
def log(run: Any, tmp_path: Path) -> Any:
    """A deployment with a log name, a log key and 60 events."""
    (tmp_path / "cladelog.toml").write_text(
        f'store = "log.sqlite3"\nplugins = ["notes"]\nlog_name = "{ORIGIN}"\n', encoding="utf-8")
    assert run("init").exit_code == 0
    r = run("keygen", ORIGIN, "--out", "log")
    assert r.exit_code == 0, r.output
    assert run("append", _notes(tmp_path, 59)).exit_code == 0  # + the plugin record: 60
    return run


def _one_error(r: Any, code: int) -> str:
    assert r.exit_code == code, r.output
    lines = [x for x in r.stderr.splitlines() if x.startswith("error:")]
    assert len(lines) == 1, r.stderr
    return lines[0]


def _hashes(tmp_path: Path) -> list[str]:
    db = sqlite3.connect(tmp_path / "log.sqlite3")
    try:
        return [r[0] for r in db.execute("SELECT hash FROM events ORDER BY position")]
    finally:
        db.close()


def _rebuilt(hashes: list[str]) -> MerkleTree:
    return MerkleTree(leaf_hash(bytes.fromhex(h)) for h in hashes)


def _sign(run: Any, tmp_path: Path, name: str, *extra: str) -> Path:
    out = tmp_path / name
    r = run("checkpoint", "--key", "log.key", "--out", str(out), *extra)
    assert r.exit_code == 0, r.output
    return out


# -- the two attacks, done as an adversary with the database file would ------------------


def _unprotect(db: sqlite3.Connection) -> None:
    for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'"
                              ).fetchall():
        db.execute(f"DROP TRIGGER {name}")


def _rewrite_event_44(tmp_path: Path, *, tree_too: bool) -> None:
    """Change event 44's data and recompute every later chain hash (and, if ``tree_too``,
    the whole Merkle tree table): the chain links again, `verify` alone passes."""
    db = sqlite3.connect(tmp_path / "log.sqlite3", isolation_level=None)
    _unprotect(db)
    rows = db.execute("SELECT position, stream, stream_version, type, schema_version, "
                      "recorded_at, data, meta, hash, prev_hash FROM events WHERE position >= 44 "
                      "ORDER BY position").fetchall()
    prev = rows[0][9]
    for r in rows:
        data = json.loads(r[6])
        if r[0] == 44:
            data["text"] = "history, as the adversary prefers it"
        body = encode_body(position=r[0], stream=r[1], stream_version=r[2], type=r[3],
                           schema_version=r[4], data=data, meta=json.loads(r[7]),
                           recorded_at=r[5], prev_hash=prev)
        new = chain_hash(prev, body)
        db.execute("UPDATE events SET data = ?, hash = ?, prev_hash = ? WHERE position = ?",
                   (canonical_bytes(data), new, prev, r[0]))
        prev = new
    if tree_too:
        db.execute("DELETE FROM tree_nodes")
        hashes = [x[0] for x in db.execute("SELECT hash FROM events ORDER BY position")]
        for chunk in rebuild_rows(hashes):
            db.executemany("INSERT INTO tree_nodes VALUES (?, ?, ?)", chunk)
    db.close()


def _cut_last_5(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "log.sqlite3", isolation_level=None)
    _unprotect(db)
    db.execute("DELETE FROM events WHERE position > (SELECT MAX(position) - 5 FROM events)")
    db.close()


@pytest.mark.parametrize("tree_too", [False, True])
def test_verify_checkpoint_catches_a_rewritten_history(log: Any, tmp_path: Path,
                                                       tree_too: bool) -> None:
    cp = _sign(log, tmp_path, "cp.txt")  # at 60, recorded at 61
    assert log("append", _notes(tmp_path, 10, 100)).exit_code == 0
    assert log("verify", "--checkpoint", str(cp), "--key", "log.pub").exit_code == 0
    _rewrite_event_44(tmp_path, tree_too=tree_too)
    if tree_too:
        assert log("verify").exit_code == 0  # the chain and the tree agree again
    err = _one_error(log("verify", "--checkpoint", str(cp), "--key", "log.pub"), 1)
    assert f"checkpoint {cp} (size 60): not extended: the log was rewritten" in err
    assert _rebuilt(_hashes(tmp_path)).root(60).hex() in err
    if tree_too:  # the quick check reads the stored tree: rebuilt, so it sees it too
        err = _one_error(log("verify", "--checkpoint", str(cp), "--quick"), 1)
        assert "the log was rewritten" in err
    # and the deployment refuses to sign a checkpoint inconsistent with the one it signed
    err = _one_error(log("checkpoint", "--key", "log.key"), 1)
    assert "not consistent with the last checkpoint signed (size 60" in err
    assert "refusing to sign" in err


@pytest.mark.parametrize("quick", [False, True])
def test_verify_checkpoint_catches_a_cut_log(log: Any, tmp_path: Path, quick: bool) -> None:
    assert log("append", _notes(tmp_path, 10, 100)).exit_code == 0
    cp = _sign(log, tmp_path, "cp.txt")  # at 70, recorded at 71
    _cut_last_5(tmp_path)
    args = ["verify", "--checkpoint", str(cp), "--key", "log.pub"] + (["--quick"] if quick
                                                                        else [])
    err = _one_error(log(*args), 1)
    assert f"checkpoint {cp} (size 70): not extended: the log was cut: it holds 66 " \
           "event(s), the checkpoint 70" in err


def test_the_first_checkpoint_not_extended_is_named(log: Any, tmp_path: Path) -> None:
    early = _sign(log, tmp_path, "early.txt", "--size", "30")
    late = _sign(log, tmp_path, "late.txt")
    _cut_last_5(tmp_path)
    r = log("verify", "--checkpoint", str(early), "--checkpoint", str(late), "--json")
    err = _one_error(r, 1)
    assert f"checkpoint {late}" in err
    doc = json.loads(r.stdout)
    assert [c["verdict"] for c in doc["checkpoints"]] == ["extended", "cut"]
    assert doc["signatures_checked"] is False


# -- checkpoints, proofs, offline verification ---------------------------------------------


def test_checkpoint_body_is_the_rebuilt_root(log: Any, tmp_path: Path) -> None:
    r = log("checkpoint")
    assert r.exit_code == 0
    hashes = _hashes(tmp_path)
    assert r.stdout == (f"{ORIGIN}\n60\n"
                        + base64.b64encode(_rebuilt(hashes).root()).decode() + "\n")
    r = log("checkpoint", "--size", "7")
    assert r.stdout.split("\n")[2] == base64.b64encode(_rebuilt(hashes).root(7)).decode()


def test_signed_checkpoints_are_recorded_and_replayed(log: Any, tmp_path: Path) -> None:
    _sign(log, tmp_path, "a.txt")
    _sign(log, tmp_path, "b.txt")
    r = log("replay", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    tlog = next(p for p in doc["projections"] if p["name"] == "core.tlog")
    assert "signed to 61" in json.dumps(tlog)


def test_prove_consistency_and_verify_proof_offline(log: Any, tmp_path: Path) -> None:
    _sign(log, tmp_path, "a.txt", "--size", "20")  # recorded at 61
    _sign(log, tmp_path, "b.txt")  # at 61
    assert log("export", "export.jsonl").exit_code == 0
    lines = (tmp_path / "export.jsonl").read_text().splitlines()
    for position in (1, 7, 20, 44, 61):
        (tmp_path / "e.json").write_text(lines[position - 1] + "\n")
        r = log("prove", str(position), "--out", "p.proof")
        assert r.exit_code == 0, r.output
        r = log("verify-proof", "p.proof", "--key", "log.pub", "--event", "e.json")
        assert r.exit_code == 0, r.output
        assert f"ok: position {position} is in {ORIGIN} at size 61" in r.stdout
    # a proof for one event does not prove another
    (tmp_path / "e.json").write_text(lines[7] + "\n")
    err = _one_error(log("verify-proof", "p.proof", "--key", "log.pub", "--event", "e.json"), 1)
    assert "the proof is for position 61, the event is at position 8" in err
    h = json.loads(lines[7])["hash"]
    err = _one_error(log("verify-proof", "p.proof", "--key", "log.pub", "--hash", h), 1)
    assert "inclusion" in err
    # consistency between the two signed checkpoints
    assert log("consistency", "20", "61", "--out", "c.proof").exit_code == 0
    r = log("verify-proof", "c.proof", "--key", "log.pub")
    assert r.exit_code == 0 and f"{ORIGIN} at size 61 extends size 20" in r.stdout
    # sizes without a signed checkpoint need --key
    err = _one_error(log("consistency", "10", "61"), 2)
    assert "OLD: no signed checkpoint of size 10 (signed sizes: [20, 61])" in err
    assert log("consistency", "10", "61", "--key", "log.key", "--out", "c2.proof").exit_code == 0
    assert log("verify-proof", "c2.proof", "--key", "log.pub").exit_code == 0
    # another key is not trusted
    assert log("keygen", ORIGIN, "--out", "rogue").exit_code == 0
    err = _one_error(log("verify-proof", "c.proof", "--key", "rogue.pub"), 1)
    assert "no signature by a trusted key" in err


def test_a_tampered_proof_fails(log: Any, tmp_path: Path) -> None:
    _sign(log, tmp_path, "a.txt")
    assert log("export", "export.jsonl").exit_code == 0
    (tmp_path / "e.json").write_text((tmp_path / "export.jsonl").read_text().splitlines()[9])
    assert log("prove", "10", "--out", "p.proof").exit_code == 0
    text = (tmp_path / "p.proof").read_text()
    lines = text.split("\n")
    raw = bytearray(base64.b64decode(lines[2]))
    raw[0] ^= 1
    lines[2] = base64.b64encode(bytes(raw)).decode()
    (tmp_path / "t.proof").write_text("\n".join(lines))
    err = _one_error(log("verify-proof", "t.proof", "--key", "log.pub", "--event", "e.json"), 1)
    assert "inclusion" in err
    # an edited event no longer hashes to its own hash
    doc = json.loads((tmp_path / "e.json").read_text())
    doc["data"]["text"] = "edited"
    (tmp_path / "e2.json").write_text(json.dumps(doc))
    err = _one_error(log("verify-proof", "p.proof", "--key", "log.pub", "--event", "e2.json"), 1)
    assert "its content hashes to" in err


def test_keygen_and_key_rules(run: Any, log: Any, tmp_path: Path) -> None:
    assert (tmp_path / "log.key").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "log.pub").read_text().startswith(f"{ORIGIN}+")
    err = _one_error(log("keygen", ORIGIN, "--out", "log"), 2)
    assert "exists; refusing to overwrite" in err
    r = log("keygen", "witness.example", "--witness")
    assert r.exit_code == 0
    vkey = (tmp_path / "witness.example.pub").read_text().strip()
    assert base64.b64decode(vkey.split("+", 2)[2])[0] == 0x04
    assert log("keygen", "other.example", "--out", "other").exit_code == 0
    err = _one_error(log("checkpoint", "--key", "other.key"), 2)
    assert "--key: the key is named 'other.example'" in err
    err = _one_error(log("checkpoint", "--key", "witness.example.key"), 2)
    assert "unsupported algorithm 0x04" in err
    err = _one_error(log("keygen", "bad name"), 2)
    assert "NAME" in err


def test_log_name_is_required_to_sign(run: Any, tmp_path: Path) -> None:
    (tmp_path / "cladelog.toml").write_text('store = "log.sqlite3"\nplugins = ["notes"]\n')
    assert run("init").exit_code == 0
    assert run("append", _notes(tmp_path, 3)).exit_code == 0
    err = _one_error(run("checkpoint"), 2)
    assert "log_name: not set" in err
    (tmp_path / "cladelog.toml").write_text('store = "log.sqlite3"\nlog_name = ""\n')
    err = _one_error(run("checkpoint"), 2)
    assert "log_name: expected a non-empty one-line string" in err


# -- hostile files --------------------------------------------------------------------------

HOSTILE = {
    "empty": b"",
    "binary": b"\x00\xff\xfe garbage",
    "not utf-8": b"example.org/x\n1\n\xff\n\n",
    "no signatures": b"example.org/x\n1\nAAAA\n\n",
    "bad base64 signature": "example.org/x\n1\nAAAA\n\n\u2014 k !!!!\n".encode(),
    "control characters": b"example.org/x\r\n1\n\n\xe2\x80\x94 k AAAAAAA=\n",
    "huge": b"x" * (9 << 20),
    "deep json": b"[" * 100000,
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_files_exit_2_with_one_line(log: Any, tmp_path: Path, name: str) -> None:
    bad = tmp_path / "bad.file"
    bad.write_bytes(HOSTILE[name])
    _sign(log, tmp_path, "good.txt")
    for args in (
        ["verify", "--checkpoint", str(bad)],
        ["verify", "--checkpoint", str(bad), "--key", "log.pub"],
        ["verify-proof", str(bad), "--key", "log.pub", "--hash", "00" * 32],
        ["verify", "--checkpoint", "good.txt", "--key", str(bad)],
        ["checkpoint", "--key", str(bad)],
        ["verify-proof", "good.txt", "--key", str(bad)],
    ):
        _one_error(log(*args), 2)
    assert log("prove", "3", "--out", "p.proof").exit_code == 0
    _one_error(log("verify-proof", "p.proof", "--key", "log.pub", "--event", str(bad)), 2)
    # a proof file cut or spliced
    text = (tmp_path / "p.proof").read_text()
    for broken in (text[:40], text.replace("index 2", "index 02"),
                   text.replace("\n\n", "\n", 1), text + "\u2014 x y\n"):
        bad.write_text(broken)
        _one_error(log("verify-proof", str(bad), "--key", "log.pub", "--hash", "00" * 32), 2)
