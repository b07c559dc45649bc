"""Finality certificates: written from the log, checked offline against trusted keys;
every tampering is caught (exit 1), malformed input is exit 2."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from cladelog.consensus.certificate import parse_trusted_keys, verify_certificate
from cladelog.consensus.errors import CertificateError
from cli_helpers import GOOD, World, propose


@pytest.fixture
def cert(world: World) -> tuple[World, dict[str, Any], dict[str, str]]:
    propose(world, "cand-1", GOOD)
    inputs = str(world.tmp / "cand-1-inputs.json")
    for name in ("v1", "v2", "v3"):
        world.ok("vote", "cand-1", "--key", world.key(name), "--inputs", inputs, "--submit",
                 "--out", str(world.tmp / f"vote-{name}.json"))
    out = world.tmp / "c.json"
    assert "3 signed accepts" in world.ok("certificate", "cand-1", "--out", str(out))
    keys = "".join((world.tmp / f"{n}.pub").read_text() for n in ("v1", "v2", "v3", "v4"))
    (world.tmp / "trusted.txt").write_text(keys)
    return world, json.loads(out.read_text()), parse_trusted_keys(keys)


def test_certificate_verifies_offline(cert: Any) -> None:
    world, doc, keys = cert
    summary = verify_certificate(doc, keys)
    size = len(world.env.events())
    root = world.env.deployment.store.tree_root(size).hex()
    assert summary == {"candidate": "cand-1", "parent": "genesis", "accept_power": 30,
                       "total_power": 40, "voters": ["v1", "v2", "v3"],
                       "log_size": size, "log_root": root, "checkpoint_origin": None,
                       "cosigned_by": [], "cosigned_power": 0}
    assert verify_certificate(doc, keys, root)["log_root"] == root
    result = world.env.cli("consensus", "verify-certificate", str(world.tmp / "c.json"),
                           "--trusted-keys", str(world.tmp / "trusted.txt"))
    assert result.exit_code == 0 and "finalized by 30 of 40 power" in result.output
    assert doc["log"]["size"] == len(world.env.events())
    positions = [e["event"]["position"] for e in doc["log"]["entries"]]
    assert positions == sorted(positions)
    logged = {e.position: e for e in world.env.events()}
    for entry, vote in zip(doc["log"]["entries"], doc["votes"], strict=True):
        assert logged[entry["event"]["position"]].hash == entry["event"]["hash"]
        assert logged[entry["event"]["position"]].data == {"envelope": vote}


def tampered(doc: dict[str, Any], how: str) -> dict[str, Any]:
    bad = copy.deepcopy(doc)
    if how == "drop_vote":
        bad["votes"].pop()
    elif how == "duplicate_vote":
        bad["votes"][2] = bad["votes"][0]
    elif how == "inflate_power":
        bad["validators"]["v1"]["power"] = 100
    elif how == "stake_mismatch":
        bad["validators"]["v3"]["stake"] = 1
    elif how == "other_candidate":
        bad["candidate"] = "cand-2"
    elif how == "flip_signature":
        sig = bad["votes"][0]["signatures"][0]["sig"]
        bad["votes"][0]["signatures"][0]["sig"] = ("A" if sig[0] != "A" else "B") + sig[1:]
    elif how == "window":
        bad["opened"] = 5
    elif how == "proof":
        proof = bad["log"]["entries"][1]["proof"]
        proof[0] = ("0" if proof[0][0] != "0" else "1") + proof[0][1:]
    elif how == "event_data":
        bad["log"]["entries"][0]["event"]["data"] = {"envelope": bad["votes"][1]}
    elif how == "root":
        bad["log"]["root"] = "00" * 32
    elif how == "longer_window":
        bad["policy"]["voting_window"] = 9
    elif how == "proposal_event":
        bad["log"]["proposal"] = bad["log"]["entries"][0]
    elif how == "policy_event":
        bad["log"]["policy"] = bad["log"]["proposal"]
    elif how == "opened_event":
        bad["log"]["opened"] = bad["log"]["policy"]
    elif how == "policy_not_frozen":
        bad["policy"]["challenge_window"] = 1      # the logged record froze 2
    elif how == "stake_shift":                      # same powers total, other stakes
        bad["validators"]["v1"]["stake"] = 11
        bad["validators"]["v1"]["power"] = 11
    elif how == "swap_entries":
        entries = bad["log"]["entries"]
        entries[0], entries[1] = entries[1], entries[0]
    return bad


@pytest.mark.parametrize("how", ["drop_vote", "duplicate_vote", "inflate_power",
                                 "stake_mismatch", "other_candidate", "flip_signature", "window",
                                 "proof", "event_data", "root", "swap_entries",
                                 "longer_window", "proposal_event", "policy_event",
                                 "opened_event", "policy_not_frozen", "stake_shift"])
def test_tampering_is_caught(cert: Any, how: str) -> None:
    _, doc, keys = cert
    with pytest.raises(CertificateError):
        verify_certificate(tampered(doc, how), keys)


def test_a_shrunk_frozen_set_is_caught_by_the_logged_record(cert: Any) -> None:
    # the log recorded, right after the proposal, the digest of the frozen set it derived
    # (consensus.proposal_opened): leaving v4 out (30 instead of 40 total power, so the
    # three accepts would pass 90 > 60 either way) no longer matches it
    _, doc, keys = cert
    shrunk = copy.deepcopy(doc)
    del shrunk["validators"]["v4"]
    with pytest.raises(CertificateError, match="another frozen set"):
        verify_certificate(shrunk, keys)
    # the digest is the canonical SHA-256 of {opened, policy, validators}, recomputed here
    # with the RFC 8785 reference encoder, not with the code under test
    import hashlib

    import rfc8785

    terms = {"opened": 0, "policy": {"version": 1, "weighting": "linear", "cap": None,
                                     "voting_window": 2, "challenge_window": 2},
             "validators": {v: {"stake": 10, "power": 10} for v in ("v1", "v2", "v3", "v4")}}
    opened = doc["log"]["opened"]["event"]
    assert opened["type"] == "consensus.proposal_opened"
    assert opened["data"] == {"candidate": "cand-1", "epoch": 0, "policy_version": 1,
                              "total_power": 40,
                              "frozen_digest": hashlib.sha256(rfc8785.dumps(terms)).hexdigest()}
    assert opened["position"] == doc["log"]["proposal"]["event"]["position"] + 1


def test_untrusted_keys_and_cli_exit_codes(cert: Any) -> None:
    world, doc, keys = cert
    with pytest.raises(CertificateError, match="trusted root"):
        verify_certificate(doc, keys, "ab" * 32)
    with pytest.raises(CertificateError, match="not a trusted key"):
        verify_certificate(doc, {k: v for k, v in keys.items() if k != "v2"})
    bad = world.tmp / "bad.json"
    bad.write_text(json.dumps(tampered(doc, "drop_vote")))
    r = world.env.cli("consensus", "verify-certificate", str(bad), "--trusted-keys",
                      str(world.tmp / "trusted.txt"))
    assert r.exit_code == 1 and r.output.startswith("error: ") and "more than two thirds" \
        in r.output
    r = world.env.cli("consensus", "verify-certificate", str(world.tmp / "trusted.txt"),
                      "--trusted-keys", str(world.tmp / "trusted.txt"))
    assert r.exit_code == 2
    line = world.refused("certificate", "nope")
    assert "not a known proposal" in line


def test_not_finalized_has_no_certificate(world: World, tmp_path: Path) -> None:
    propose(world, "cand-9", GOOD)
    assert "not finalized" in world.refused("certificate", "cand-9", "--out",
                                            str(tmp_path / "x.json"))




@pytest.mark.parametrize("mutate", [
    lambda d: d["validators"]["v1"].update(stake=-1),
    lambda d: d["validators"]["v1"].update(stake=1.5),
    lambda d: d["validators"].update(v1=[]),
    lambda d: d["policy"].update(voting_window="2"),
    lambda d: d["policy"].update(cap="x"),
    lambda d: d.update(votes=[1, "x"]),
    lambda d: d.update(opened=True),
    lambda d: d.pop("proposal"),
])
def test_malformed_certificates_are_input_errors(cert: Any, mutate: Any) -> None:
    from cladelog.core import InputError

    _, doc, keys = cert
    bad = copy.deepcopy(doc)
    mutate(bad)
    with pytest.raises((InputError, CertificateError)):
        verify_certificate(bad, keys)


def test_a_signed_checkpoint_covers_the_votes(world: World) -> None:
    # the log signs a checkpoint (core's tlog commands); the certificate embeds it and the
    # verifier checks it with the log's public key
    config = world.env.config_path
    config.write_text(config.read_text() + 'log_name = "example.org/consensus-test"\n')
    propose(world, "cand-1", GOOD)
    inputs = str(world.tmp / "cand-1-inputs.json")
    for name in ("v1", "v2", "v3"):
        world.ok("vote", "cand-1", "--key", world.key(name), "--inputs", inputs, "--submit",
                 "--out", str(world.tmp / f"vote-{name}.json"))
    prefix = str(world.tmp / "logkey")
    assert world.env.cli("keygen", "example.org/consensus-test", "--out", prefix).exit_code == 0
    signed = world.env.cli("checkpoint", "--key", prefix + ".key")
    assert signed.exit_code == 0, signed.output
    world.ok("tick")                      # the log grows past the checkpoint
    out = world.ok("certificate", "cand-1", "--out", str(world.tmp / "c.json"))
    assert "proofs at a signed checkpoint" in out
    doc = json.loads((world.tmp / "c.json").read_text())
    keys = "".join((world.tmp / f"{n}.pub").read_text() for n in ("v1", "v2", "v3", "v4"))
    (world.tmp / "trusted.txt").write_text(keys)
    result = world.env.cli("consensus", "verify-certificate", str(world.tmp / "c.json"),
                           "--trusted-keys", str(world.tmp / "trusted.txt"),
                           "--log-key", prefix + ".pub")
    assert result.exit_code == 0, result.output
    assert "checkpoint of example.org/consensus-test signed by the log key" in result.output
    assert doc["log"]["size"] < len(world.env.events())
    trusted = parse_trusted_keys(keys)
    log_key = (world.tmp / "logkey.pub").read_text().strip()
    # a checkpoint of another size, or none, does not pass with the log key
    other = copy.deepcopy(doc)
    other["log"]["checkpoint"] = None
    with pytest.raises(CertificateError, match="no signed checkpoint"):
        verify_certificate(other, trusted, None, [log_key])
    world.env.cli("checkpoint", "--key", prefix + ".key")
    newer = [e.data for e in world.env.events() if e.type == "core.checkpoint_signed"][-1]
    other["log"]["checkpoint"] = newer["note"]
    with pytest.raises(CertificateError, match="another size or root"):
        verify_certificate(other, trusted, None, [log_key])


def _signed_log(world: World) -> tuple[str, Path]:
    """Three accepts on cand-1 and a log checkpoint signed after them: (log key prefix,
    the checkpoint note's file)."""
    config = world.env.config_path
    config.write_text(config.read_text() + 'log_name = "example.org/consensus-test"\n')
    propose(world, "cand-1", GOOD)
    inputs = str(world.tmp / "cand-1-inputs.json")
    for name in ("v1", "v2", "v3"):
        world.ok("vote", "cand-1", "--key", world.key(name), "--inputs", inputs, "--submit",
                 "--out", str(world.tmp / f"vote-{name}.json"))
    prefix = str(world.tmp / "logkey")
    assert world.env.cli("keygen", "example.org/consensus-test", "--out", prefix).exit_code == 0
    assert world.env.cli("checkpoint", "--key", prefix + ".key").exit_code == 0
    note = [e.data for e in world.env.events() if e.type == "core.checkpoint_signed"][-1]["note"]
    path = world.tmp / "checkpoint.txt"
    path.write_text(note)
    return prefix, path


def test_validators_cosign_the_checkpoint_with_their_validator_keys(world: World) -> None:
    from cladelog.core import transparency as t

    prefix, checkpoint = _signed_log(world)
    # keygen wrote each validator's cosignature/v1 verifier key beside its .pub
    vkey = (world.tmp / "v1.pub").read_text().strip()
    assert (world.tmp / "v1.witness.pub").read_text().strip() == \
        t.as_cosigner_verifier(vkey).vkey
    note = checkpoint
    for name in ("v1", "v2"):             # each validator cosigns with its own key, in turn
        out = world.tmp / f"cosigned-{name}.txt"
        r = world.env.cli("witness", "cosign", str(note), "--key", world.key(name),
                          "--state", str(world.tmp / f"state-{name}"), "--log-key",
                          prefix + ".pub", "--out", str(out))
        assert r.exit_code == 0, r.output
        note = out
    r = world.env.cli("witness", "add", str(note), "--key", prefix + ".pub",
                      *(a for n in ("v1", "v2") for a in ("--witnesses",
                                                          str(world.tmp / f"{n}.pub"))))
    assert r.exit_code == 0 and r.output.count("recorded the cosignature") == 2, r.output
    world.ok("certificate", "cand-1", "--out", str(world.tmp / "c.json"))
    keys = "".join((world.tmp / f"{n}.pub").read_text() for n in ("v1", "v2", "v3", "v4"))
    (world.tmp / "trusted.txt").write_text(keys)
    base = ("consensus", "verify-certificate", str(world.tmp / "c.json"), "--trusted-keys",
            str(world.tmp / "trusted.txt"))
    doc = json.loads(world.env.cli(*base, "--json").output)
    # v1 and v2 hold 10 + 10 = 20 of the 40 frozen power
    assert (doc["cosigned_by"], doc["cosigned_power"]) == (["v1", "v2"], 20)
    failed = world.env.cli(*base, "--require-cosigned")    # 3 * 20 = 60 is not > 80
    assert failed.exit_code == 1 and "20 of 40 power cosigned it" in failed.output
    # v3 cosigns too: 30 of 40, 90 > 80
    out = world.tmp / "cosigned-v3.txt"
    assert world.env.cli("witness", "cosign", str(note), "--key", world.key("v3"), "--state",
                         str(world.tmp / "state-v3"), "--log-key", prefix + ".pub", "--out",
                         str(out)).exit_code == 0
    assert world.env.cli("witness", "add", str(out), "--key", prefix + ".pub", "--witnesses",
                         str(world.tmp / "v3.pub")).exit_code == 0
    world.ok("certificate", "cand-1", "--out", str(world.tmp / "c.json"))
    ok = world.env.cli(*base, "--require-cosigned", "--log-key", prefix + ".pub",
                       "--witness-key", str(world.tmp / "v3.pub"))
    assert ok.exit_code == 0, ok.output
    assert "cosigned by 3 frozen validators holding 30 of 40 power" in ok.output
    # a validator's cosignature that does not verify fails the certificate
    cert = json.loads((world.tmp / "c.json").read_text())
    lines = cert["log"]["checkpoint"].rstrip("\n").split("\n")
    v3 = next(i for i, line in enumerate(lines) if line.startswith("\u2014 v3 "))
    sig = lines[v3].split(" ")[2]
    lines[v3] = "\u2014 v3 " + sig[:-6] + ("AAAA" if sig[-6:-2] != "AAAA" else "BBBB") + sig[-2:]
    cert["log"]["checkpoint"] = "\n".join(lines) + "\n"
    keys_map = parse_trusted_keys(keys)
    with pytest.raises(CertificateError, match="does not verify"):
        verify_certificate(cert, keys_map)


def test_validators_as_witnesses_cosign_the_checkpoint(world: World) -> None:
    from cladelog.core import transparency as t
    from cladelog.core.tlog import record_cosignature

    config = world.env.config_path
    config.write_text(config.read_text() + 'log_name = "example.org/consensus-test"\n')
    propose(world, "cand-1", GOOD)
    inputs = str(world.tmp / "cand-1-inputs.json")
    for name in ("v1", "v2", "v3"):
        world.ok("vote", "cand-1", "--key", world.key(name), "--inputs", inputs, "--submit",
                 "--out", str(world.tmp / f"vote-{name}.json"))
    prefix = str(world.tmp / "logkey")
    assert world.env.cli("keygen", "example.org/consensus-test", "--out", prefix).exit_code == 0
    assert world.env.cli("checkpoint", "--key", prefix + ".key").exit_code == 0
    note = [e.data for e in world.env.events() if e.type == "core.checkpoint_signed"][-1]["note"]
    text = note.partition("\n\n")[0] + "\n"
    witness_pubs = []
    for n, name in enumerate(("v1", "v2")):   # two validators act as witnesses
        skey, vkey = t.generate_cosigner_key(f"witness-{name}", bytes([n + 1]) * 32)
        cosigned = t.sign_note(text, t.parse_cosigner_key(skey).at(1_800_000_000 + n))
        record_cosignature(world.env.deployment, cosigned, vkey, 1_800_000_000 + n)
        pub = world.tmp / f"witness-{name}.pub"
        pub.write_text(vkey + "\n")
        witness_pubs.append(str(pub))
    world.ok("certificate", "cand-1", "--out", str(world.tmp / "c.json"))
    keys = "".join((world.tmp / f"{n}.pub").read_text() for n in ("v1", "v2", "v3", "v4"))
    (world.tmp / "trusted.txt").write_text(keys)
    base = ("consensus", "verify-certificate", str(world.tmp / "c.json"), "--trusted-keys",
            str(world.tmp / "trusted.txt"), "--log-key", prefix + ".pub")
    witnesses = [a for p in witness_pubs for a in ("--witness-key", p)]
    ok = world.env.cli(*base, *witnesses)
    assert ok.exit_code == 0, ok.output
    # a witness that did not cosign: a quorum of 3 of 3 fails (exit 1), 2 of 3 passes
    skey, vkey = t.generate_cosigner_key("witness-v4", bytes([9]) * 32)
    other = world.tmp / "witness-v4.pub"
    other.write_text(vkey + "\n")
    three = [*witnesses, "--witness-key", str(other)]
    failed = world.env.cli(*base, *three)
    assert failed.exit_code == 1 and "valid witness cosignature" in failed.output
    assert world.env.cli(*base, *three, "--witness-quorum", "2").exit_code == 0
    assert world.env.cli(*base, *three, "--witness-quorum", "4").exit_code == 2
