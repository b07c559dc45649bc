"""The ``cladelog consensus`` commands end to end on a real log, and their refusals:
bad input is exit 2 with exactly one ``error:`` line and nothing appended."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from cli_helpers import BAD, GOOD, World, propose
from ledger_helpers import policy_doc


def test_full_cycle_finalize_settle_gate(world: World) -> None:
    propose(world, "cand-1", GOOD)
    inputs = str(world.tmp / "cand-1-inputs.json")
    world.env.cli("gate", "cand-1")
    for name in ("v1", "v2", "v3"):
        out = world.ok("vote", "cand-1", "--key", world.key(name), "--inputs", inputs,
                       "--out", str(world.tmp / f"vote-{name}.json"))
        assert out.startswith("accept (ACCEPT)")
    # votes are files until submitted; submit appends them all in one batch
    out = world.ok("submit", *(str(world.tmp / f"vote-{n}.json") for n in ("v1", "v2", "v3")))
    assert "candidate_finalized cand-1" in out
    gate = world.env.cli("gate", "cand-1")
    assert gate.exit_code == 1
    assert "block  consensus" in gate.output and "challenge window open" in gate.output
    world.ok("tick")
    out = world.ok("tick")
    assert "candidate_settled cand-1" in out
    shown = json.loads(world.ok("show", "cand-1", "--json"))
    assert shown["outcome"] == "settled" and shown["accept_power"] == 30
    assert shown["missing"]["validators"] == ["v4"]
    status = json.loads(world.ok("status", "--json"))
    rows = {r["validator"]: r for r in status["validators"]}
    assert rows["v1"]["rewards"] == 5 and rows["v4"]["misses"] == 1
    gate = world.env.cli("gate", "cand-1")
    assert "allow  consensus" in gate.output


def test_reject_vote_from_the_audit_and_confirmed_challenge(world: World) -> None:
    propose(world, "bad-1", BAD)
    inputs = str(world.tmp / "bad-1-inputs.json")
    out = world.ok("vote", "bad-1", "--key", world.key("v4"), "--inputs", inputs, "--submit",
                   "--out", str(world.tmp / "vote-bad-1-v4.json"))
    assert "reject (REJECT)" in out
    # three validators sign accept on it anyway (hand-made statements, as a Byzantine would)
    from cladelog.consensus.signing import load_signer, sign_statement

    statement = json.loads(base64.b64decode(json.loads(
        (world.tmp / "vote-bad-1-v4.json").read_text())["payload"]))
    files = []
    for name in ("v1", "v2", "v3"):
        predicate = {**statement["predicate"], "validator": name, "decision": "accept"}
        files.append(world.file(f"acc-{name}.json",
                                sign_statement(predicate, load_signer(world.key(name)))))
    assert "candidate_finalized bad-1" in world.ok("submit", *files)
    out = world.ok("challenge", "bad-1", "--inputs", inputs, "--claim", "hard_flag")
    assert out.startswith("challenge confirmed")
    assert "candidate_overturned bad-1" in out
    rows = {r["validator"]: r for r in json.loads(world.ok("status", "--json"))["validators"]}
    assert [rows[v]["stake"] for v in ("v1", "v2", "v3", "v4")] == [9, 9, 9, 10]
    assert world.refused("challenge", "bad-1", "--inputs", inputs).endswith(
        "only a finalized, not yet settled candidate can be challenged")


def test_double_vote_evidence_and_copy_refused(world: World) -> None:
    propose(world, "cand-2", GOOD)
    from cladelog.consensus.signing import load_signer, sign_statement

    signer = load_signer(world.key("v2"))
    base = {"kind": "vote", "validator": "v2", "epoch": 0, "proposal": "cand-2",
            "audit": {"verdict": "ACCEPT", "hard_flags": [], "score": 0.3}}
    one = sign_statement({**base, "decision": "accept"}, signer)
    two = sign_statement({**base, "decision": "reject"}, signer)
    pair = world.file("pair.json", {"first": one, "second": two})
    out = world.ok("evidence", pair)
    assert "validator_slashed v2" in out
    line = world.refused("evidence", pair)
    assert "already recorded" in line
    assert "already recorded" in world.refused("submit", pair)  # submit takes pairs too
    rows = {r["validator"]: r for r in json.loads(world.ok("status", "--json"))["validators"]}
    assert rows["v2"]["state"] == "slashed" and rows["v2"]["stake"] == 5


def test_bad_and_unknown_signatures_are_refused(world: World) -> None:
    propose(world, "cand-3", GOOD)
    inputs = str(world.tmp / "cand-3-inputs.json")
    world.ok("vote", "cand-3", "--key", world.key("v1"), "--inputs", inputs,
             "--out", str(world.tmp / "v.json"))
    envelope = json.loads((world.tmp / "v.json").read_text())
    sig = base64.b64decode(envelope["signatures"][0]["sig"])
    forged = {**envelope, "signatures": [{**envelope["signatures"][0],
                                          "sig": base64.b64encode(bytes([sig[0] ^ 1])
                                                                  + sig[1:]).decode()}]}
    line = world.refused("submit", world.file("forged.json", forged))
    assert "does not verify" in line
    world.ok("keygen", "stranger", "--out", str(world.tmp))
    from cladelog.consensus.signing import load_signer, sign_statement

    stranger = sign_statement({"kind": "unbond", "validator": "stranger", "epoch": 0},
                              load_signer(world.key("stranger")))
    line = world.refused("submit", world.file("stranger.json", stranger))
    assert "unknown signature" in line
    # a statement signed by v2's key but claiming to be v1's: not v1's key
    fake = sign_statement({"kind": "unbond", "validator": "v2", "epoch": 0},
                          load_signer(world.key("v2")))
    fake["signatures"][0]["keyid"] = "v1+" + fake["signatures"][0]["keyid"].split("+")[1]
    assert "signature" in world.refused("submit", world.file("fake.json", fake))


@pytest.mark.parametrize(("args", "fragment"), [
    (("policy", "set", "{tmp}/nope.json"), "nope.json"),
    (("bond", "--key", "{tmp}/v1.key", "--stake", "5"), "already bonded"),
    (("bond", "--key", "{tmp}/missing.key", "--stake", "5"), "--key: cannot read"),
    (("unjail", "--key", "{tmp}/v1.key"), "is not jailed"),
    (("show", "nothing"), "proposal: 'nothing' is not a known proposal"),
    (("vote", "nothing", "--key", "{tmp}/v1.key", "--inputs", "{tmp}"), "not a known proposal"),
    (("evidence", "{tmp}/policy.json"), "must be an object with exactly first, second"),
    (("keygen", "bad name"), "NAME: must be 1-64 characters"),
    (("keygen", "v1", "--out", "{tmp}"), "already exists"),
])
def test_bad_input_is_one_error_line(world: World, args: tuple[str, ...],
                                     fragment: str) -> None:
    line = world.refused(*(a.format(tmp=world.tmp) for a in args))
    assert fragment in line


def test_vote_needs_the_inputs_of_the_eval_digest(world: World) -> None:
    propose(world, "cand-4", GOOD)
    other = world.file("other.json", BAD)
    line = world.refused("vote", "cand-4", "--key", world.key("v1"), "--inputs", other)
    assert "not the proposal's eval digest" in line
    line = world.refused("propose", "--key", world.key("v1"), "--candidate", "c5",
                         "--parent", "unknown", "--inputs", other, "--receipts-checkpoint",
                         "cp", "--coverage-diff", "c" * 64, "--metric-delta", "0")
    assert "neither genesis nor a proposed candidate" in line


def test_policy_with_short_unbonding_is_refused(world: World) -> None:
    doc = policy_doc(version=2, unbonding_period=5)
    line = world.refused("policy", "set", world.file("p2.json", doc))
    assert line.startswith("error: policy.unbonding_period: must be >= voting_window")


def test_hand_appended_garbage_is_ignored_with_the_reason(world: World) -> None:
    world.env.append("consensus.bonded", {"envelope": {"payload": "x"}}, stream="consensus")
    world.env.append("consensus.candidate_settled", {"candidate": "x", "epoch": 0},
                     stream="consensus")
    state = world.env.state("consensus.state")
    assert state["ignored"][-1]["type"] == "consensus.bonded"
    assert state["anomalies"][-1]["type"] == "consensus.candidate_settled"


def test_the_setting_lets_finalized_candidates_through(tmp_path: Path) -> None:
    from cladelog.core.testing import CladelogEnv
    from cli_helpers import make_world

    env = CladelogEnv(tmp_path, ["fork-score", "consensus"],
                      settings={"consensus": {"gate_allows_finalized": True}})
    try:
        w = make_world(env, tmp_path)
        propose(w, "cand-1", GOOD)
        inputs = str(tmp_path / "cand-1-inputs.json")
        for name in ("v1", "v2", "v3"):
            w.ok("vote", "cand-1", "--key", w.key(name), "--inputs", inputs, "--submit",
                 "--out", str(tmp_path / f"vote-{name}.json"))
        gate = env.cli("gate", "cand-1")
        assert "allow  consensus" in gate.output and "finalized in epoch 0" in gate.output
    finally:
        env.close()


def test_status_names_unbonding_and_jail(world: World) -> None:
    out = world.ok("unbond", "--key", world.key("v4"))
    assert out.startswith("appended")
    status = world.ok("status")
    (row,) = [line for line in status.splitlines() if line.startswith("v4 ")]
    # U = 6 epochs from epoch 0: the end of epoch 5 at the earliest (rule 2)
    assert "unbonding" in row and "at the end of epoch 5" in row
    rows = {r["validator"]: r for r in json.loads(world.ok("status", "--json"))["validators"]}
    assert rows["v4"]["unbond_earliest"] == 5 and rows["v4"]["power"] == 0
    assert rows["v1"]["power"] == 10
