"""The ``cladelog receipts`` command line: round trips, exit codes, hostile input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cladelog.receipts import Register, generate_key, verify_inclusion_proof
from cladelog.receipts.note import sign_note
from receipts_helpers import LOG_SEED, Chain, Keys, gain_test, register_events


@pytest.fixture
def keyfiles(files: Any, keys: Keys) -> dict[str, str]:
    return {"oracle": files("oracle.key", keys.oracle_skey + "\n"),
            "oracle_v": files("oracle.vkey", keys.oracle_vkey + "\n"),
            "log": files("log.key", keys.log_skey + "\n"),
            "log_v": files("log.vkey", keys.log_vkey + "\n")}


def _ok(result: Any) -> str:
    assert result.exit_code == 0, result.output
    return str(result.output)


def _setup(cladelog_env: Any, keyfiles: dict[str, str]) -> None:
    _ok(cladelog_env.cli("receipts", "key", "add", keyfiles["oracle_v"], "--role", "oracle"))
    _ok(cladelog_env.cli("receipts", "key", "add", keyfiles["log_v"], "--role", "log"))


def test_keygen_writes_a_pair_and_refuses_to_overwrite(cladelog_env: Any, tmp_path: Path) -> None:
    prefix = str(tmp_path / "k")
    out = _ok(cladelog_env.cli("receipts", "keygen", "oracle.test", "--out", prefix))
    vkey = (tmp_path / "k.vkey").read_text().strip()
    assert out.splitlines()[0] == vkey and vkey.startswith("oracle.test+")
    assert (tmp_path / "k.key").read_text().startswith("PRIVATE+KEY+oracle.test+")
    assert (tmp_path / "k.key").stat().st_mode & 0o077 == 0
    again = cladelog_env.cli("receipts", "keygen", "oracle.test", "--out", prefix)
    assert again.exit_code == 2 and "refusing to overwrite" in again.output


def test_full_round_trip(cladelog_env: Any, keyfiles: dict[str, str], keys: Keys, files: Any,
                         tmp_path: Path) -> None:
    _setup(cladelog_env, keyfiles)
    # sign fills seq and prev from the register when both are absent
    unsigned = {k: v for k, v in gain_test(0, "0" * 64).items() if k not in ("seq", "prev")}
    envelope = _ok(cladelog_env.cli("receipts", "sign", files("e0.json", unsigned),
                                    "--key", keyfiles["oracle"]))
    r0 = files("r0.json", envelope)
    assert "recorded 1 receipt(s), seq 0..0" in _ok(cladelog_env.cli("receipts", "add", r0))
    chain = Chain(keys)
    chain.next(gain_test(0, "0" * 64))  # advance the local chain past seq 0
    batch = "\n".join(json.dumps(chain.next()) for _ in range(3)) + "\n"
    assert "seq 1..3" in _ok(cladelog_env.cli("receipts", "add", files("b.jsonl", batch)))

    listed = _ok(cladelog_env.cli("receipts", "list", "--json")).splitlines()
    assert [json.loads(x)["seq"] for x in listed] == [0, 1, 2, 3]
    only = _ok(cladelog_env.cli("receipts", "list", "--candidate", "engine@1.2")).splitlines()
    assert len(only) == 2 and only[0].split()[0] == "SEQ" and only[1].split()[0] == "2"
    assert _ok(cladelog_env.cli("receipts", "list", "--kind", "reversion")) == ""
    shown = json.loads(_ok(cladelog_env.cli("receipts", "show", "2")))
    assert shown["seq"] == 2 and shown["entry"]["candidate"]["version"] == "1.2"

    _ok(cladelog_env.cli("receipts", "checkpoint", "--log-key", keyfiles["log"]))
    proof = tmp_path / "p2.proof"
    _ok(cladelog_env.cli("receipts", "prove", "2", "--out", str(proof)))
    leaf = files("leaf2.json", shown["envelope"])
    out = _ok(cladelog_env.cli("receipts", "verify-proof", str(proof), "--log-key",
                               keys.log_vkey, "--leaf", leaf, "--oracle-key", keys.oracle_vkey))
    assert out.startswith("ok: entry 2 is in log.example at size 4")
    # the same proof does not prove another entry
    other = files("leaf1.json", json.loads(_ok(cladelog_env.cli("receipts", "show",
                                                                "1")))["envelope"])
    bad = cladelog_env.cli("receipts", "verify-proof", str(proof), "--log-key", keys.log_vkey,
                           "--leaf", other)
    assert bad.exit_code == 1 and bad.output.startswith("error: inclusion:")

    # grow, checkpoint again, prove consistency 4 -> 6
    more = "\n".join(json.dumps(chain.next()) for _ in range(2)) + "\n"
    _ok(cladelog_env.cli("receipts", "add", files("m.jsonl", more)))
    _ok(cladelog_env.cli("receipts", "checkpoint", "--log-key", keyfiles["log"]))
    cons = tmp_path / "c.proof"
    _ok(cladelog_env.cli("receipts", "consistency", "4", "6", "--out", str(cons)))
    out = _ok(cladelog_env.cli("receipts", "verify-proof", str(cons), "--log-key",
                               keyfiles["log_v"]))
    assert out.startswith("ok: log.example size 6 extends size 4")
    assert "ok: 6 entries verified" in _ok(cladelog_env.cli("receipts", "verify"))

    # publish: the layout an auditor downloads verifies offline
    pub = tmp_path / "pub"
    _ok(cladelog_env.cli("receipts", "publish", str(pub)))
    index = json.loads((pub / "index.json").read_text())
    assert index["size"] == 6 and [e["seq"] for e in index["entries"]] == list(range(6))
    trusted = (pub / "keys" / "log.vkeys").read_text().split()
    for seq in range(6):
        leaf_bytes = (pub / "entries" / f"{seq}.json").read_bytes()
        got = verify_inclusion_proof((pub / "proofs" / f"{seq}.tlog-proof").read_text(),
                                     leaf_bytes, trusted)
        assert got.index == seq and got.checkpoint.size == 6
    assert (pub / "checkpoint").read_text().startswith("log.example\n6\n")


def test_tampered_proofs_fail(cladelog_env: Any, reg: Register, keys: Keys, chain: Chain,
                              files: Any) -> None:
    reg.record([chain.next() for _ in range(5)])
    reg.sign_checkpoint(keys.log)
    text = reg.inclusion_proof(3)
    leaf = files("leaf.json", register_events(cladelog_env)[3].data["envelope"])
    lines = text.split("\n")
    lines[2] = ("A" if lines[2][0] != "A" else "B") + lines[2][1:]  # first audit-path hash
    tampered = files("t.proof", "\n".join(lines))
    r = cladelog_env.cli("receipts", "verify-proof", tampered, "--log-key", keys.log_vkey,
                         "--leaf", leaf)
    assert r.exit_code == 1 and "inclusion" in r.output
    # a checkpoint re-signed by a key that is not the trusted log key
    body, _, _ = text.partition("\n\n")
    forged = body + "\n\n" + sign_note("log.example\n5\n" + "A" * 43 + "=\n", keys.other)
    r = cladelog_env.cli("receipts", "verify-proof", files("f.proof", forged),
                         "--log-key", keys.log_vkey, "--leaf", leaf)
    assert r.exit_code == 1 and "checkpoint" in r.output
    r = cladelog_env.cli("receipts", "verify-proof", files("junk.proof", "hello\n"),
                         "--log-key", keys.log_vkey)
    assert r.exit_code == 2 and r.output.startswith("error:")


def test_verify_exits_1_naming_the_first_failing_entry(cladelog_env: Any, reg: Register,
                                                       keys: Keys, chain: Chain) -> None:
    reg.record([chain.next() for _ in range(3)])
    data = register_events(cladelog_env)[2].data
    # a second copy of seq 2 appended raw: nothing the register would write
    cladelog_env.append("receipts.entry_recorded", data, stream="receipts.register")
    r = cladelog_env.cli("receipts", "verify")
    assert r.exit_code == 1 and r.output.startswith("error: seq 2 (position")


def test_never_signs_two_inconsistent_checkpoints(cladelog_env: Any, reg: Register, keys: Keys,
                                                  chain: Chain) -> None:
    reg.record([chain.next() for _ in range(3)])
    cp, new = reg.sign_checkpoint(keys.log)
    assert new and cp["size"] == 3
    assert reg.sign_checkpoint(keys.log)[1] is False  # nothing new: nothing signed
    # somebody records a checkpoint of size 3 with another root, signed by the log key
    fake_root = bytes(32)
    note = sign_note("log.example\n3\n" + "A" * 43 + "=\n", keys.log)
    cladelog_env.append("receipts.checkpoint_signed",
                        {"size": 3, "root": fake_root.hex(), "origin": "log.example",
                         "key_ref": keys.log.verifier().key_ref, "note": note},
                        stream="receipts.checkpoints")
    reg.record([chain.next()])
    before = len(cladelog_env.events())
    r = cladelog_env.cli("receipts", "checkpoint", "--log-key", _keyfile(cladelog_env, keys))
    assert r.exit_code == 1 and "not consistent with the register" in r.output
    assert len(cladelog_env.events()) == before
    report = reg.verify()
    assert not report.ok and "root does not match" in (report.failure or "")


def _keyfile(env: Any, keys: Keys) -> str:
    path = Path(env.root) / "log.key"
    path.write_text(keys.log_skey)
    return str(path)


class TestLogKeySetting:
    @pytest.fixture
    def cladelog_settings(self) -> dict[str, dict[str, Any]]:
        return {"receipts": {"log_key_file": "log-from-setting.key"}}

    def test_checkpoint_reads_the_key_file_setting(self, cladelog_env: Any, reg: Register,
                                                   keys: Keys, chain: Chain) -> None:
        reg.record([chain.next()])
        r = cladelog_env.cli("receipts", "checkpoint")
        assert r.exit_code == 2 and "log-from-setting.key" in r.output
        (Path(cladelog_env.root) / "log-from-setting.key").write_text(keys.log_skey)
        assert "signed: checkpoint log.example size 1" in _ok(
            cladelog_env.cli("receipts", "checkpoint"))
        assert keys.log_skey not in json.dumps([e.to_json() for e in cladelog_env.events()])


def test_checkpoint_refuses_an_unregistered_or_oracle_key(cladelog_env: Any, reg: Register,
                                                          keys: Keys, chain: Chain) -> None:
    reg.record([chain.next()])
    for signer in (keys.other, keys.oracle):
        path = Path(cladelog_env.root) / "k.key"
        path.write_text(signer.skey)
        r = cladelog_env.cli("receipts", "checkpoint", "--log-key", str(path))
        assert r.exit_code == 2 and "is not registered as a log key" in r.output
        assert r.output.startswith("error: --log-key: ")


def test_key_commands(cladelog_env: Any, keyfiles: dict[str, str], keys: Keys) -> None:
    _setup(cladelog_env, keyfiles)
    ref = keys.oracle.verifier().key_ref
    _ok(cladelog_env.cli("receipts", "key", "revoke", ref, "--from", "0", "--reason", "leak"))
    listed = [json.loads(x) for x in
              _ok(cladelog_env.cli("receipts", "key", "list", "--json")).splitlines()]
    by_ref = {k["key_ref"]: k for k in listed}
    assert by_ref[ref]["revoked_from"] == 0 and by_ref[ref]["role"] == "oracle"
    table = _ok(cladelog_env.cli("receipts", "key", "list")).splitlines()
    assert table[0].split() == ["ROLE", "KEY", "VALIDITY"] and len(table) == len(listed) + 1
    assert any(line.split()[:2] == ["oracle", ref] and "revoked from seq 0" in line
               for line in table[1:])
    r = cladelog_env.cli("receipts", "key", "revoke", "nobody+00000000")
    assert r.exit_code == 2 and "is not registered" in r.output


@pytest.mark.parametrize("content", [
    "", "{", "[1, 2]", '{"payload": 5}', "null", "[" * 10000, '{"a": NaN}',
    '{"payload": "", "payloadType": "x", "signatures": []}',
    '{"payload": "\\ud800", "payloadType": "application/vnd.in-toto+json", '
    '"signatures": [{"keyid": "a", "sig": "AA=="}]}',
    '{"payload": "AA==", "payloadType": "application/vnd.in-toto+json", '
    '"signatures": [{"keyid": 1e400, "sig": "AA=="}]}',
    b"\xff\xfe",
])
def test_hostile_add_exits_2_and_appends_nothing(cladelog_env: Any, reg: Register, files: Any,
                                                 content: Any) -> None:
    before = len(cladelog_env.events())
    r = cladelog_env.cli("receipts", "add", files("h.json", content))
    assert r.exit_code in (1, 2), r.output
    assert r.exit_code == 2 or "signature" in r.output
    assert r.output.startswith("error: ") and len(r.output.strip().splitlines()) == 1
    assert len(cladelog_env.events()) == before


@pytest.mark.parametrize("args", [
    ("show", "0"), ("show", "-1"), ("prove", "0"), ("consistency", "1", "2"),
    ("add", "/nonexistent/file.json"), ("publish", "/tmp/x"), ("checkpoint",),
    ("key", "add", "garbage", "--role", "oracle"), ("sign", "/nonexistent", "--key", "x"),
])
def test_bad_arguments_exit_2(cladelog_env: Any, reg: Register, args: tuple[str, ...]) -> None:
    before = len(cladelog_env.events())
    r = cladelog_env.cli("receipts", *args)
    assert r.exit_code == 2, r.output
    assert len(cladelog_env.events()) == before


def _signed_payload(keys: Keys, body: bytes) -> dict[str, Any]:
    """An envelope over arbitrary bytes, validly signed by the registered oracle key."""
    from cladelog.receipts.dsse import PAYLOAD_TYPE_INTOTO, sign_envelope

    return sign_envelope(body, PAYLOAD_TYPE_INTOTO, keys.oracle.sign,
                         keys.oracle.verifier().key_ref)


@pytest.mark.parametrize("body", [
    b'{"_type":"https://in-toto.io/Statement/v1","predicate":{"seq":123456789012345678901}}',
    b'{"_type":"https://in-toto.io/Statement/v1","predicate":' + b"[" * 5000 + b"]" * 5000
    + b"}",
    b'{"a":"\\ud800"}',
    b"\xff not utf-8",
    b'{"a":1,"a":1}',
])
def test_validly_signed_hostile_payloads_exit_2(cladelog_env: Any, reg: Register, keys: Keys,
                                                files: Any, body: bytes) -> None:
    before = len(cladelog_env.events())
    r = cladelog_env.cli("receipts", "add", files("s.json", _signed_payload(keys, body)))
    assert r.exit_code == 2, r.output
    assert r.output.startswith("error: receipt:") and len(r.output.strip().splitlines()) == 1
    assert len(cladelog_env.events()) == before


def test_signed_entry_breaking_the_schema_exits_2(cladelog_env: Any, reg: Register, keys: Keys,
                                                  files: Any) -> None:
    from cladelog.core.canonical import canonical_bytes

    doc = gain_test(0, "0" * 64)
    doc["stages"][0]["results"] = {"losses": 0, "draws": 0, "wins": 0}
    stmt = {"_type": "https://in-toto.io/Statement/v1",
            "subject": [{"name": "register-entry-0", "digest": {"sha256": "00"}}],
            "predicateType": "https://cladelog.dev/receipts/register-entry/v1",
            "predicate": doc}
    r = cladelog_env.cli("receipts", "add",
                         files("z.json", _signed_payload(keys, canonical_bytes(stmt))))
    assert r.exit_code == 2 and "stages[0].results: zero games" in r.output
    assert register_events(cladelog_env) == []
    # the sign command refuses the same entry before signing anything
    r = cladelog_env.cli("receipts", "sign", files("u.json", doc), "--key",
                         files("o.key", keys.oracle_skey))
    assert r.exit_code == 2 and "zero games" in r.output


def test_add_refusals_exit_1_with_the_reason_and_append_nothing(
        cladelog_env: Any, reg: Register, keys: Keys, chain: Chain, files: Any) -> None:
    before = len(cladelog_env.events())
    rogue = chain.next(signer=keys.other)  # signed by a key that was never registered
    r = cladelog_env.cli("receipts", "add", files("rogue.json", rogue))
    assert r.exit_code == 1 and "no signature by a trusted keyid" in r.output
    assert r.output.rstrip().endswith("; nothing was appended")  # an append was refused
    chain.seq, chain.prev = 0, "0" * 64
    wrong = gain_test(0, "0" * 64)
    wrong["stages"][1]["elo"] += 1.0  # one Elo off the value the games give
    r = cladelog_env.cli("receipts", "add", files("wrong.json", chain.next(wrong)))
    assert r.exit_code == 1 and r.output.startswith("error: receipt: seq 0: ELO_MISMATCH")
    assert len(r.output.strip().splitlines()) == 1
    assert len(cladelog_env.events()) == before


def test_list_filters_by_epoch_and_prints_a_table(cladelog_env: Any, reg: Register,
                                                  chain: Chain) -> None:
    reg.record([chain.next()])
    change = chain.entry("epoch_change", oracle={"name": "arena", "version": "4"}, epoch=1,
                         reason="new hardware")
    reg.record([chain.next(change), chain.next(epoch=1)])
    rows = [json.loads(x) for x in _ok(cladelog_env.cli("receipts", "list", "--epoch", "1",
                                                        "--json")).splitlines()]
    assert [(e["seq"], e["kind"]) for e in rows] == [(1, "epoch_change"), (2, "gain_test")]
    table = _ok(cladelog_env.cli("receipts", "list")).splitlines()
    assert len(table) == 4  # a header row, then one row per entry
    assert table[0].split() == ["SEQ", "KIND", "CANDIDATE", "DETAIL", "[FLAGS]"]
    assert table[1].split()[:3] == ["0", "gain_test", "engine@1.0"]
    assert "arena -> epoch 1" in table[2] and "epoch 1" in table[3]
    # the header's columns sit above the rows' (SEQ right-aligned on the numbers)
    assert table[0].index("SEQ") + 3 == table[1].index("0") + 1
    assert table[0].index("KIND") == table[1].index("gain_test")
    assert table[0].index("CANDIDATE") == table[1].index("engine@1.0")
    assert table[0].index("DETAIL") == table[1].index("short")
    filtered = _ok(cladelog_env.cli("receipts", "list", "--epoch", "1")).splitlines()
    assert filtered[0] == table[0] and filtered[1:] == table[2:]
    # no match: no header either; --json never has one
    assert _ok(cladelog_env.cli("receipts", "list", "--epoch", "7")) == ""
    as_json = _ok(cladelog_env.cli("receipts", "list", "--json")).splitlines()
    assert [json.loads(x)["seq"] for x in as_json] == [0, 1, 2]
    assert as_json[0].startswith('{"') and "SEQ" not in as_json[0]


class TestVerifyFlagged:
    @pytest.fixture
    def cladelog_settings(self) -> dict[str, dict[str, Any]]:
        return {"receipts": {"on_mismatch": "record"}}

    def test_flagged_entries_pass_verify_but_not_strict(self, cladelog_env: Any, reg: Register,
                                                        chain: Chain) -> None:
        reg.record([chain.next()])
        wrong = gain_test(1, chain.prev)
        wrong["stages"][0]["pass"] = not wrong["stages"][0]["pass"]  # the games say otherwise
        recorded = reg.record([chain.next(wrong)])
        assert recorded[0].data["flags"] == ["STAGE_VERDICT_MISMATCH"]
        report = json.loads(_ok(cladelog_env.cli("receipts", "verify", "--json")))
        assert report["ok"] is True and report["flagged"] == [1] and report["entries"] == 2
        r = cladelog_env.cli("receipts", "verify", "--strict")
        assert r.exit_code == 1 and r.output.startswith("error: seq 1: recorded with mismatch")


# -- verify-proof: malformed input exits 2, a failed verification exits 1 ------------------


@pytest.fixture
def proved(cladelog_env: Any, reg: Register, keys: Keys, chain: Chain,
           files: Any) -> dict[str, str]:
    """Three receipts, a checkpoint, the inclusion proof of seq 1, its leaf and a
    consistency proof 2 -> 3, as files."""
    reg.record([chain.next(), chain.next()])
    reg.sign_checkpoint(keys.log)
    reg.record([chain.next()])
    reg.sign_checkpoint(keys.log)
    return {"proof": files("p1.proof", reg.inclusion_proof(1)),
            "leaf": files("leaf1.json", register_events(cladelog_env)[1].data["envelope"]),
            "cons": files("c.proof", reg.consistency_proof(2, 3))}


def _one_line_error(r: Any, code: int) -> str:
    assert r.exit_code == code, r.output
    assert r.stdout == "" and r.stderr.startswith("error: ")
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    return str(r.stderr)


def test_verify_proof_accepts_the_good_inputs(cladelog_env: Any, proved: dict[str, str],
                                              keys: Keys) -> None:
    out = _ok(cladelog_env.cli("receipts", "verify-proof", proved["proof"], "--log-key",
                               keys.log_vkey, "--leaf", proved["leaf"], "--oracle-key",
                               keys.oracle_vkey))
    assert out.startswith("ok: entry 1 is in log.example at size 3")
    out = _ok(cladelog_env.cli("receipts", "verify-proof", proved["cons"], "--log-key",
                               keys.log_vkey, "--log-key", keys.log_vkey))  # twice: fine
    assert out.startswith("ok: log.example size 3 extends size 2")


@pytest.mark.parametrize("option", ["--log-key", "--oracle-key"])
@pytest.mark.parametrize(("value", "fragment"), [
    ("junk", "junk line 1: vkey: expected 3 '+'-separated fields, got 1"),  # a file
    ("a+b+c", "'a+b+c': vkey.key_id: 'b' is not 8 hex digits"),  # given inline
    ("private", "is a private signer key; give the public verifier key"),
])
def test_verify_proof_malformed_key_exits_2_naming_the_option(
        cladelog_env: Any, proved: dict[str, str], keys: Keys, files: Any, option: str,
        value: str, fragment: str) -> None:
    if value == "junk":
        value = files("junk", "hello\n")
    elif value == "private":
        value = files("log.key", keys.log_skey + "\n")
    good = {"--log-key": keys.log_vkey, "--oracle-key": keys.oracle_vkey}
    good[option] = value
    r = cladelog_env.cli("receipts", "verify-proof", proved["proof"], "--leaf", proved["leaf"],
                         "--log-key", good["--log-key"], "--oracle-key", good["--oracle-key"])
    err = _one_line_error(r, 2)
    assert err.startswith(f"error: {option}: ") and fragment in err
    assert keys.log_skey.split("+", 4)[4] not in err  # never echoes a private key
    if option == "--log-key":  # the consistency path parses its keys the same way
        r = cladelog_env.cli("receipts", "verify-proof", proved["cons"], "--log-key", value)
        assert _one_line_error(r, 2).startswith("error: --log-key: ")


def test_verify_proof_private_key_given_inline_is_not_echoed(
        cladelog_env: Any, proved: dict[str, str], keys: Keys) -> None:
    for given in (keys.log_skey, f"  {keys.log_skey}\n"):
        r = cladelog_env.cli("receipts", "verify-proof", proved["cons"], "--log-key", given)
        err = _one_line_error(r, 2)
        assert "private signer key" in err and keys.log_skey.split("+", 4)[4] not in err


def _edit(path: str, old: str, new: str, files: Any, name: str) -> str:
    text = Path(path).read_text()
    assert old in text
    return str(files(name, text.replace(old, new, 1)))


def test_verify_proof_malformed_files_exit_2(cladelog_env: Any, proved: dict[str, str],
                                             keys: Keys, files: Any) -> None:
    log = ("--log-key", keys.log_vkey)
    # the proof file's own lines
    bad_index = _edit(proved["proof"], "index 1\n", "index x\n", files, "i.proof")
    err = _one_line_error(cladelog_env.cli("receipts", "verify-proof", bad_index, *log,
                                           "--leaf", proved["leaf"]), 2)
    assert "i.proof: index: 'x' is not a decimal" in err
    cons_lines = Path(proved["cons"]).read_text().split("\n")
    bad_hash = files("h.proof", "\n".join([*cons_lines[:4], "!!!!", *cons_lines[5:]]))
    err = _one_line_error(cladelog_env.cli("receipts", "verify-proof", bad_hash, *log), 2)
    assert "h.proof: proof[0]: not valid base64" in err
    # the checkpoint note inside it: a signature line that is not base64
    text = Path(proved["proof"]).read_text()
    sig_line = next(x for x in text.split("\n") if x.startswith("\u2014 "))
    bad_note = _edit(proved["proof"], sig_line, "\u2014 log.example !!!!", files, "n.proof")
    err = _one_line_error(cladelog_env.cli("receipts", "verify-proof", bad_note, *log,
                                           "--leaf", proved["leaf"]), 2)
    assert "signature: not valid base64" in err
    # an envelope that is not a DSSE envelope of a receipt, checked with --oracle-key
    envelope = json.loads(Path(proved["leaf"]).read_text())
    for broken in ({**envelope, "payloadType": "text/plain"},
                   {**envelope, "signatures": [{"keyid": 5, "sig": "AA=="}]}):
        r = cladelog_env.cli("receipts", "verify-proof", proved["proof"], *log, "--leaf",
                             files("e.json", broken), "--oracle-key", keys.oracle_vkey)
        assert _one_line_error(r, 2).startswith("error: receipt: envelope.")


def test_verify_proof_failed_verification_still_exits_1(
        cladelog_env: Any, proved: dict[str, str], keys: Keys, files: Any) -> None:
    log = ("--log-key", keys.log_vkey)
    # a well-formed key that did not sign the checkpoint
    r = cladelog_env.cli("receipts", "verify-proof", proved["proof"], "--log-key",
                         keys.other_vkey, "--leaf", proved["leaf"])
    assert "no signature by a trusted key" in _one_line_error(r, 1)
    # a checkpoint whose signature does not verify (its size edited after signing)
    edited = _edit(proved["proof"], "log.example\n3\n", "log.example\n4\n", files, "s.proof")
    r = cladelog_env.cli("receipts", "verify-proof", edited, *log, "--leaf", proved["leaf"])
    assert "does not verify" in _one_line_error(r, 1)
    # a truncated audit path, and the proof of seq 1 given another leaf
    lines = Path(proved["proof"]).read_text().split("\n")
    assert lines[1] == "index 1" and len(lines[2]) == 44
    r = cladelog_env.cli("receipts", "verify-proof", files("t.proof", "\n".join(
        lines[:2] + lines[3:])), *log, "--leaf", proved["leaf"])
    assert _one_line_error(r, 1).startswith("error: inclusion: proof: too short")
    other = files("leaf0.json", register_events(cladelog_env)[0].data["envelope"])
    r = cladelog_env.cli("receipts", "verify-proof", proved["proof"], *log, "--leaf", other)
    assert _one_line_error(r, 1).startswith("error: inclusion: root:")
    # a receipt signed by a key that is not the trusted oracle key, or tampered with
    r = cladelog_env.cli("receipts", "verify-proof", proved["proof"], *log, "--leaf",
                         proved["leaf"], "--oracle-key", keys.other_vkey)
    assert "no signature by a trusted keyid" in _one_line_error(r, 1)
    envelope = json.loads(Path(proved["leaf"]).read_text())
    sig = envelope["signatures"][0]["sig"]
    envelope["signatures"][0]["sig"] = ("A" if sig[0] != "A" else "B") + sig[1:]
    r = cladelog_env.cli("receipts", "verify-proof", proved["proof"], *log, "--leaf",
                         files("x.json", envelope), "--oracle-key", keys.oracle_vkey)
    assert "does not verify" in _one_line_error(r, 1)


# -- sign: the key must be able to sign a receipt that can be recorded ---------------------


def test_sign_refuses_the_registered_log_key(cladelog_env: Any, reg: Register, keys: Keys,
                                             files: Any) -> None:
    before = len(cladelog_env.events())
    log_key = files("log.key", keys.log_skey + "\n")
    r = cladelog_env.cli("receipts", "sign", files("e.json", gain_test(0, "0" * 64)),
                         "--key", log_key)
    err = _one_line_error(r, 2)
    assert err.startswith(f"error: --key: {log_key} is the register's log key (log.example+")
    assert "oracle key" in err
    assert len(cladelog_env.events()) == before
    # the same key under another name is still the log key
    renamed = files("renamed.key", generate_key("renamed.example", LOG_SEED)[0])
    r = cladelog_env.cli("receipts", "sign", files("e.json", gain_test(0, "0" * 64)),
                         "--key", renamed)
    assert "is the register's log key (log.example+" in _one_line_error(r, 2)


def test_sign_with_the_oracle_key_is_silent(cladelog_env: Any, reg: Register, keys: Keys,
                                            files: Any) -> None:
    r = cladelog_env.cli("receipts", "sign", files("e.json", gain_test(0, "0" * 64)),
                         "--key", files("o.key", keys.oracle_skey))
    assert r.exit_code == 0 and r.stderr == ""
    assert "recorded 1 receipt(s)" in _ok(cladelog_env.cli("receipts", "add",
                                                           files("r.json", r.stdout)))


def test_sign_warns_for_a_key_add_would_refuse(cladelog_env: Any, reg: Register, keys: Keys,
                                               files: Any) -> None:
    # not registered at all: the role cannot be told; signed, with a warning
    r = cladelog_env.cli("receipts", "sign", files("e.json", gain_test(0, "0" * 64)),
                         "--key", files("x.key", keys.other_skey))
    assert r.exit_code == 0 and json.loads(r.stdout)["signatures"][0]["keyid"].startswith(
        "rogue.example+")
    assert r.stderr.startswith("warning: --key: rogue.example+")
    assert "not a registered oracle key" in r.stderr and len(r.stderr.splitlines()) == 1
    # revoked from the entry's seq on
    reg.revoke_key(keys.oracle.verifier().key_ref, 0, "rotated")
    r = cladelog_env.cli("receipts", "sign", files("e.json", gain_test(0, "0" * 64)),
                         "--key", files("o.key", keys.oracle_skey))
    assert r.exit_code == 0 and "is revoked from seq 0" in r.stderr


class TestSignLogKeyFromSetting:
    @pytest.fixture
    def cladelog_settings(self) -> dict[str, dict[str, Any]]:
        return {"receipts": {"log_key_file": "log-from-setting.key"}}

    def test_refuses_the_configured_log_key_before_it_is_registered(
            self, cladelog_env: Any, keys: Keys, files: Any) -> None:
        Register(cladelog_env.deployment).register_key(keys.oracle_vkey, "oracle")
        (Path(cladelog_env.root) / "log-from-setting.key").write_text(keys.log_skey)
        r = cladelog_env.cli("receipts", "sign", files("e.json", gain_test(0, "0" * 64)),
                             "--key", files("copy.key", keys.log_skey))
        assert "is the log key (log_key_file in [settings.receipts])" in \
            _one_line_error(r, 2)


# -- verify appends nothing, and does not say it --------------------------------------------


def test_verify_failures_do_not_claim_nothing_was_appended(
        cladelog_env: Any, reg: Register, keys: Keys, chain: Chain) -> None:
    reg.record([chain.next(), chain.next()])
    # a raw entry event whose envelope signature was altered (the register writes none)
    data = reg.prepare([chain.next()])[0].event_data()
    sig = data["envelope"]["signatures"][0]["sig"]
    data["envelope"]["signatures"][0]["sig"] = ("A" if sig[0] != "A" else "B") + sig[1:]
    cladelog_env.append("receipts.entry_recorded", data, stream="receipts.register")
    err = _one_line_error(cladelog_env.cli("receipts", "verify"), 1)
    assert err.startswith("error: seq 2 (position ") and "does not verify" in err
    assert "appended" not in err
    report = json.loads(cladelog_env.cli("receipts", "verify", "--json").stdout)
    assert report["ok"] is False and "appended" not in report["failure"]


def test_verify_after_retroactive_revocation_does_not_claim_nothing_was_appended(
        cladelog_env: Any, reg: Register, keys: Keys, chain: Chain, files: Any) -> None:
    reg.record([chain.next(), chain.next()])
    reg.revoke_key(keys.oracle.verifier().key_ref, 1, "leaked earlier than we knew")
    err = _one_line_error(cladelog_env.cli("receipts", "verify"), 1)
    assert err.startswith("error: seq 1 (position ") and "revoked from seq 1" in err
    assert "appended" not in err
    # recording is refused for the same reason, and there the phrase stays
    r = cladelog_env.cli("receipts", "add", files("r.json", chain.next()))
    assert r.exit_code == 1 and "revoked from seq 1" in r.stderr
    assert r.stderr.rstrip().endswith("; nothing was appended")


def test_json_on_add_checkpoint_key_add_and_verify_proof(cladelog_env: Any,
                                                           keyfiles: dict[str, str], keys: Keys,
                                                           files: Any, tmp_path: Path) -> None:
    added = json.loads(_ok(cladelog_env.cli("receipts", "key", "add", keyfiles["oracle_v"],
                                            "--role", "oracle", "--json")))
    assert added["role"] == "oracle" and added["key_ref"].startswith("oracle.example+")
    _ok(cladelog_env.cli("receipts", "key", "add", keyfiles["log_v"], "--role", "log"))
    chain = Chain(keys)
    batch = "\n".join(json.dumps(chain.next()) for _ in range(3)) + "\n"
    doc = json.loads(_ok(cladelog_env.cli("receipts", "add", files("b.jsonl", batch),
                                          "--json")))
    assert (doc["recorded"], doc["first_seq"], doc["last_seq"]) == (3, 0, 2)
    assert [e["seq"] for e in doc["entries"]] == [0, 1, 2]
    cp = json.loads(_ok(cladelog_env.cli("receipts", "checkpoint", "--log-key", keyfiles["log"],
                                         "--json")))
    assert cp["signed"] is True and cp["size"] == 3 and cp["origin"] == "log.example"
    again = json.loads(_ok(cladelog_env.cli("receipts", "checkpoint", "--log-key",
                                            keyfiles["log"], "--json")))
    assert again["signed"] is False and again["root"] == cp["root"]
    proof = tmp_path / "p1.proof"
    _ok(cladelog_env.cli("receipts", "prove", "1", "--out", str(proof)))
    shown = json.loads(_ok(cladelog_env.cli("receipts", "show", "1")))
    ok = json.loads(_ok(cladelog_env.cli("receipts", "verify-proof", str(proof), "--log-key",
                                         keys.log_vkey, "--leaf",
                                         files("leaf.json", shown["envelope"]), "--json")))
    assert ok == {"ok": True, "proof": "inclusion", "entry": 1, "origin": "log.example",
                  "size": 3}
