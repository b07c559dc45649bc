"""A refused input changes nothing (the projection applies inputs in place and relies on
it), and the state never breaks its own invariants, over random input sequences."""

from __future__ import annotations

import copy
import random
from typing import Any

from cladelog.consensus.errors import ConsensusInputError
from cladelog.consensus.ledger import Ledger
from cladelog.consensus.power import quorum_reached
from hypothesis import given, settings
from hypothesis import strategies as st
from ledger_helpers import policy_doc

VALIDATORS = ["v1", "v2", "v3"]
CANDIDATES = ["c1", "c2", "c3", "c4", "c5", "c6"]
AUDITS = [{"verdict": "ACCEPT", "hard_flags": [], "score": 0.1},
          {"verdict": "REJECT", "hard_flags": ["X"], "score": -1.0}]



def random_inputs(seed: int, count: int) -> list[tuple[Any, ...]]:
    """A weighted random input sequence (votes dominate, so that candidates finalize,
    settle, get challenged and overturned, and validators equivocate and get jailed)."""
    rng = random.Random(seed)
    out: list[tuple[Any, ...]] = []
    for _ in range(count):
        kind = rng.choices(["vote", "propose", "tick", "challenge", "evidence", "unbond",
                            "unjail", "bond"], weights=[40, 8, 8, 4, 3, 1, 2, 1])[0]
        v, c = rng.choice(VALIDATORS), rng.choice(CANDIDATES)
        if kind == "vote":
            out.append((kind, v, c, rng.choice(["accept", "accept", "reject"]),
                        rng.choice([0, 0, 0, -1])))
        elif kind == "propose":
            out.append((kind, v, c, rng.choice(["genesis", *CANDIDATES])))
        elif kind == "challenge":
            out.append((kind, c, rng.choice([0, 1])))
        elif kind == "evidence":
            out.append((kind, v, c, rng.choice(CANDIDATES), rng.random() < 0.5))
        elif kind == "bond":
            out.append((kind, v, rng.randint(0, 30)))
        elif kind in ("unbond", "unjail"):
            out.append((kind, v))
        else:
            out.append(("tick",))
    return out


def to_input(ledger: Ledger, raw: tuple[Any, ...], n: int) -> tuple[str, dict[str, Any]]:
    epoch = ledger.epoch
    kind = raw[0]
    if kind == "bond":
        return "bond", {"validator": raw[1], "key": f"k-{raw[1]}", "stake": raw[2],
                        "epoch": epoch}
    if kind in ("unbond", "unjail"):
        return kind, {"validator": raw[1], "epoch": epoch}
    if kind == "propose":
        return "propose", {"validator": raw[1], "candidate": raw[2], "parent": raw[3],
                           "eval_digest": "e" * 64, "receipts_checkpoint": "cp",
                           "coverage_diff": "c" * 64, "metric_delta": 0.0, "epoch": epoch}
    if kind == "vote":
        return "vote", {"validator": raw[1], "proposal": raw[2], "decision": raw[3],
                        "audit": AUDITS[0], "epoch": epoch + raw[4], "digest": f"{n:064x}"}
    if kind == "evidence":
        one = {"validator": raw[1], "proposal": raw[2], "decision": "accept",
               "audit": AUDITS[0], "epoch": epoch, "digest": f"a{n:063x}"}
        two = {**one, "proposal": raw[3], "decision": "reject" if raw[4] else "accept",
               "digest": f"b{n:063x}"}
        return "evidence", {"first": one, "second": two}
    if kind == "challenge":
        return "challenge", {"candidate": raw[1], "challenger": "x", "claim": "reject",
                             "inputs_digest": "e" * 64, "audit": AUDITS[raw[2]]}
    return "epoch_closed", {"epoch": epoch}


def check_invariants(state: dict[str, Any]) -> None:
    finalized_by_parent: dict[str, list[str]] = {}
    for p in state["proposals"].values():
        assert p["accept_power"] == sum(p["frozen"][v] for v, x in p["votes"].items()
                                        if x["decision"] == "accept")
        if p["outcome"] in ("finalized", "settled"):
            assert quorum_reached(p["accept_power"], p["total_power"])
            finalized_by_parent.setdefault(p["parent"], []).append(p["candidate"])
    for parent, winner in state["finalized_child"].items():
        if winner is not None:
            assert state["proposals"][winner]["outcome"] in ("finalized", "settled")
            assert state["proposals"][winner]["parent"] == parent
    for v in state["validators"].values():
        assert v["stake"] >= 0
        if v["status"] == "exited":
            assert v["stake"] == 0


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32), st.integers(10, 120))
def test_refusals_change_nothing_and_invariants_hold(seed: int, count: int) -> None:
    raws = random_inputs(seed, count)
    ledger = Ledger()
    ledger.apply("policy_set", {"policy": policy_doc(min_bond=1, bootstrap=VALIDATORS)})
    for i, vid in enumerate(VALIDATORS):
        ledger.apply("bond", {"validator": vid, "key": f"k-{vid}", "stake": 10 + i,
                              "epoch": 0})
    for n, cid in enumerate(("c1", "c2")):  # two siblings open from the start
        ledger.apply(*to_input(ledger, ("propose", "v1", cid, "genesis"), -1 - n))
    for n, raw in enumerate(raws):
        kind, data = to_input(ledger, raw, n)
        before = copy.deepcopy(ledger.state)
        try:
            ledger.apply(kind, data)
        except ConsensusInputError:
            assert ledger.state == before, (kind, data)
        check_invariants(ledger.state)
