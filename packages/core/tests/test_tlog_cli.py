"""The transparency-log commands: keygen, checkpoint, prove, consistency, verify-proof and
verify --checkpoint, with the two attacks a hash chain alone misses (a log rewritten from
event 44 on with every later hash recomputed; a log cut by its last 5 rows) and hostile
files. Expected roots come from an in-memory tree rebuilt from the exported chain hashes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from cladelog.core.canonical import canonical_bytes
from cladelog.core.events import chain_hash, encode_body
from cladelog.core.store.tree import rebuild_rows
from cladelog.core.transparency.merkle import MerkleTree, leaf_hash

ORIGIN = "example.org/cladelog/test"


@pytest.fixture
def run(cli: Any) -> Any:
    return cli


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
        r = log("verify")
        assert r.exit_code == 0, r.output  # the chain and the tree agree again
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


# -- witnesses ------------------------------------------------------------------------------


def _witnesses(log: Any) -> None:
    for name in ("w1.example", "w2.example", "w3.example"):
        assert log("keygen", name, "--witness").exit_code == 0


def _cosign(log: Any, cp: Path, witness: str, out: Path, *extra: str) -> Any:
    return log("witness", "cosign", str(cp), "--key", f"{witness}.key", "--state",
               f"state-{witness}", "--log-key", "log.pub", "--out", str(out), *extra)


def test_witness_cosigns_only_checkpoints_that_extend_its_last(log: Any, tmp_path: Path) -> None:
    _witnesses(log)
    a = _sign(log, tmp_path, "a.txt", "--size", "30")
    assert _cosign(log, a, "w1.example", tmp_path / "a.w1").exit_code == 0  # first: trusted
    b = _sign(log, tmp_path, "b.txt")  # 61
    # a later checkpoint needs a consistency proof from the size it last cosigned
    err = _one_error(_cosign(log, b, "w1.example", tmp_path / "b.w1"), 1)
    assert "refused: unproved: this witness last cosigned size 30" in err
    assert log("consistency", "30", "61", "--out", "c.proof").exit_code == 0
    r = _cosign(log, b, "w1.example", tmp_path / "b.w1", "--proof", "c.proof")
    assert r.exit_code == 0, r.output
    # rolled back: the older checkpoint again
    err = _one_error(_cosign(log, a, "w1.example", tmp_path / "x"), 1)
    assert "refused: rolled back: size 30 is smaller than the size 61" in err
    # the same size with another root: a fork signed by the same log key
    fork = tmp_path / "fork"
    fork.mkdir()
    (fork / "cladelog.toml").write_text(
        f'store = "log.sqlite3"\nplugins = ["notes"]\nlog_name = "{ORIGIN}"\n')
    for f in ("log.key", "log.pub"):
        (fork / f).write_bytes((tmp_path / f).read_bytes())
    assert log("--config", str(fork / "cladelog.toml"), "init").exit_code == 0
    assert log("--config", str(fork / "cladelog.toml"), "append",
               _notes(tmp_path, 60, 500)).exit_code == 0
    r = log("--config", str(fork / "cladelog.toml"), "checkpoint", "--key", "log.key",
            "--size", "61", "--out", str(fork / "f.txt"))
    assert r.exit_code == 0, r.output
    err = _one_error(_cosign(log, fork / "f.txt", "w1.example", tmp_path / "x"), 1)
    assert "refused: inconsistent: size 61 has root" in err
    # a larger forked checkpoint with the fork's own (valid) proof from 30 does not fit
    # the root this witness cosigned at 30
    r = log("--config", str(fork / "cladelog.toml"), "checkpoint", "--key", "log.key",
            "--out", str(fork / "g.txt"))
    assert r.exit_code == 0
    assert log("--config", str(fork / "cladelog.toml"), "consistency", "61", "62",
               "--out", str(fork / "g.proof")).exit_code == 0
    err = _one_error(_cosign(log, fork / "g.txt", "w1.example", tmp_path / "x", "--proof",
                             str(fork / "g.proof")), 1)
    assert "refused: inconsistent" in err


def test_verify_with_a_witness_quorum_and_recorded_cosignatures(log: Any,
                                                                 tmp_path: Path) -> None:
    _witnesses(log)
    cp = _sign(log, tmp_path, "cp.txt")
    assert _cosign(log, cp, "w1.example", tmp_path / "c1").exit_code == 0
    assert _cosign(log, tmp_path / "c1", "w2.example", tmp_path / "c2").exit_code == 0
    ws = ["--witnesses", "w1.example.pub", "--witnesses", "w2.example.pub",
          "--witnesses", "w3.example.pub"]
    base = ["verify", "--checkpoint", str(tmp_path / "c2"), "--key", "log.pub", *ws]
    assert log(*base, "--quorum", "2").exit_code == 0
    err = _one_error(log(*base, "--quorum", "3"), 1)
    assert "2 valid witness cosignature(s) (w1.example, w2.example), the quorum is 3" in err
    err = _one_error(log("verify", "--checkpoint", str(cp), "--key", "log.pub", *ws,
                         "--quorum", "1"), 1)
    assert "0 valid witness cosignature(s)" in err
    err = _one_error(log("verify", "--checkpoint", str(cp), *ws, "--quorum", "1"), 2)
    assert "--witnesses: give the log's public key too" in err
    # the deployment records the cosignatures it received; replay knows the witnessed size
    r = log("witness", "add", str(tmp_path / "c2"), "--key", "log.pub", *ws)
    assert r.exit_code == 0, r.output
    assert r.stdout.count("recorded the cosignature of") == 2
    doc = json.loads(log("replay", "--json").stdout)
    state = next(p for p in doc["projections"] if p["name"] == "core.tlog")
    assert "witnessed to 60 by 2" in json.dumps(state)


def test_an_ed25519_key_acts_as_a_witness(log: Any, tmp_path: Path) -> None:
    # one key for both jobs (a consensus validator's): witness cosign takes an Ed25519
    # (0x01) private key and cosigns with its 0x04 form; its .pub counts as a witness key
    assert log("keygen", "validator-1.example").exit_code == 0
    cp = _sign(log, tmp_path, "cp.txt")
    r = log("witness", "cosign", str(cp), "--key", "validator-1.example.key", "--state",
            "state-v1", "--log-key", "log.pub", "--out", str(tmp_path / "c1"))
    assert r.exit_code == 0, r.output
    line = (tmp_path / "c1").read_text().rstrip("\n").split("\n")[-1]
    vkey = (tmp_path / "validator-1.example.pub").read_text().strip()
    pub = base64.b64decode(vkey.split("+", 2)[2])[1:]
    kid = hashlib.sha256(b"validator-1.example\n\x04" + pub).digest()[:4]
    assert base64.b64decode(line.split(" ")[2])[:4] == kid   # the 0x04 key ID
    base = ["verify", "--checkpoint", str(tmp_path / "c1"), "--key", "log.pub",
            "--witnesses", "validator-1.example.pub", "--quorum", "1"]
    assert log(*base).exit_code == 0
    r = log("witness", "add", str(tmp_path / "c1"), "--key", "log.pub", "--witnesses",
            "validator-1.example.pub")
    assert r.exit_code == 0 and "recorded the cosignature of validator-1.example" in r.stdout


# -- static tiles (c2sp.org/tlog-tiles) -----------------------------------------------------


@pytest.mark.parametrize(("level", "index", "width", "path"), [
    (0, 0, 256, "tile/0/000"),
    (0, 999, 256, "tile/0/999"),
    (0, 1000, 256, "tile/0/x001/000"),
    (1, 1234067, 256, "tile/1/x001/x234/067"),
    (2, 5, 17, "tile/2/005.p/17"),
    ("entries", 1234067, 3, "tile/entries/x001/x234/067.p/3"),
    ("cladelog-events", 7, 256, "cladelog-events/007"),
])
def test_tile_paths_follow_the_spec(level: Any, index: int, width: int, path: str) -> None:
    from cladelog.core.tlog import tile_path

    assert tile_path(level, index, width) == path


def _audit(root: Path, vkey: str) -> int:
    """What an auditor does with the published files alone (plain reads, no cladelog
    store): verify the checkpoint, recompute each event's chain hash from its export line
    (docs/events.md's rule, via the conformance suite's independent encoder), match it with
    the entry bundles, rebuild every hash tile and the root. Returns the events checked."""
    from cladelog.core.tlog import tile_path
    from cladelog.core.transparency import open_note, parse_checkpoint, parse_verifier_key

    note = (root / "checkpoint").read_text()
    cp = parse_checkpoint(open_note(note, [parse_verifier_key(vkey)]).text)
    size, chain, prev = cp.size, [], "0" * 64
    for n in range((size + 255) // 256):
        width = min(256, size - 256 * n)
        entries = (root / tile_path("entries", n, width)).read_bytes()
        lines = (root / tile_path("cladelog-events", n, width)).read_text().splitlines()
        assert len(lines) == width and len(entries) == 34 * width
        for k, line in enumerate(lines):
            doc = json.loads(line)
            assert doc["position"] == 256 * n + k + 1 and doc["prev_hash"] == prev
            body = encode_body(position=doc["position"], stream=doc["stream"],
                               stream_version=doc["stream_version"], type=doc["type"],
                               schema_version=doc["schema_version"], data=doc["data"],
                               meta=doc["meta"], recorded_at=doc["recorded_at"], prev_hash=prev)
            h = chain_hash(prev, body)
            assert h == doc["hash"]
            assert entries[34 * k: 34 * k + 2] == b"\x00\x20"
            assert entries[34 * k + 2: 34 * k + 34].hex() == h
            chain.append(h)
            prev = h
    tree = _rebuilt(chain)
    assert tree.root() == cp.root_hash
    level = 0
    while size >> (8 * level):
        count = size >> (8 * level)
        for n in range((count + 255) // 256):
            width = min(256, count - 256 * n)
            data = (root / tile_path(level, n, width)).read_bytes()
            assert data == b"".join(tree.node(8 * level, 256 * n + k) for k in range(width))
        level += 1
    return size


def test_publish_tiles_and_audit_every_event_from_the_files(log: Any, tmp_path: Path) -> None:
    err = _one_error(log("publish", "pub"), 2)
    assert "no signed checkpoint yet" in err
    assert log("append", _notes(tmp_path, 600, 1000)).exit_code == 0  # 660 events
    _sign(log, tmp_path, "a.txt")
    r = log("publish", "pub")
    assert r.exit_code == 0, r.output
    pub = tmp_path / "pub"
    vkey = (tmp_path / "log.pub").read_text().strip()
    assert _audit(pub, vkey) == 660
    # the layout: 2 full level-0 tiles and a partial one of 148; level 1 has 2 nodes
    assert (pub / "tile/0/000").stat().st_size == 256 * 32
    assert (pub / "tile/0/002.p/148").stat().st_size == 148 * 32
    assert (pub / "tile/1/000.p/2").stat().st_size == 2 * 32
    assert not (pub / "tile/2").exists()
    assert (pub / "tile/entries/002.p/148").exists()
    assert (pub / "cladelog-events/002.p/148").exists()
    # incrementally: a later publication writes only what is new
    full = (pub / "tile/0/000").stat().st_mtime_ns
    assert log("append", _notes(tmp_path, 200, 5000)).exit_code == 0
    _sign(log, tmp_path, "b.txt")  # at 861
    r = log("publish", "pub")
    assert r.exit_code == 0 and "already there" in r.stdout
    assert (pub / "tile/0/000").stat().st_mtime_ns == full
    assert _audit(pub, vkey) == 861
    # a tampered event line is caught from the files alone
    lines = (pub / "cladelog-events/001").read_text().splitlines()
    doc = json.loads(lines[3])
    doc["data"]["text"] = "rewritten"
    lines[3] = json.dumps(doc)
    (pub / "cladelog-events/001").write_text("\n".join(lines) + "\n")
    with pytest.raises(AssertionError):
        _audit(pub, vkey)
