"""A tiny driver for the pure ledger: statements as plain predicates, digests made up."""

from __future__ import annotations

import itertools
from typing import Any

from cladelog.consensus.ledger import Ledger

_COUNTER = itertools.count()


def policy_doc(**over: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "version": 1, "weighting": "linear", "cap": None, "voting_window": 2,
        "challenge_window": 2, "unbonding_period": 6, "evidence_max_age": 2,
        "slash": {"equivocation": "1/2", "bad_accept": "1/10"},
        "jail": {"misses": 2, "period": 1}, "reward_per_vote": 5, "min_bond": 1,
        "bootstrap": ["v1", "v2", "v3", "v4"], "open_bonding_epoch": 0,
    }
    doc.update(over)
    return doc


class Driver:
    def __init__(self, stakes: dict[str, int] | None = None, **policy: Any) -> None:
        self.ledger = Ledger()
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.apply("policy_set", {"policy": policy_doc(**policy)})
        for vid, stake in (stakes or {}).items():
            self.bond(vid, stake)

    @property
    def state(self) -> dict[str, Any]:
        return self.ledger.state

    def apply(self, kind: str, data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        trial = self.ledger.copy()
        out = trial.apply(kind, data)  # raises: nothing changes
        self.ledger = trial
        self.events.extend(out)
        return out

    def bond(self, vid: str, stake: int) -> Any:
        return self.apply("bond", {"validator": vid, "key": f"key-{vid}", "stake": stake,
                                   "epoch": self.ledger.epoch})

    def propose(self, cid: str, parent: str = "genesis", by: str = "v1",
                eval_digest: str = "e" * 64) -> Any:
        return self.apply("propose", {
            "validator": by, "candidate": cid, "parent": parent, "eval_digest": eval_digest,
            "receipts_checkpoint": "cp", "coverage_diff": "c" * 64, "metric_delta": 0.1,
            "epoch": self.ledger.epoch})

    def vote(self, vid: str, cid: str, decision: str = "accept", epoch: int | None = None,
             digest: str | None = None) -> Any:
        return self.apply("vote", self.statement(vid, cid, decision, epoch, digest))

    def statement(self, vid: str, cid: str, decision: str = "accept", epoch: int | None = None,
                  digest: str | None = None) -> dict[str, Any]:
        return {"validator": vid, "proposal": cid, "decision": decision,
                "audit": {"verdict": "ACCEPT"},
                "epoch": self.ledger.epoch if epoch is None else epoch,
                "digest": digest or f"d{next(_COUNTER):063d}"}

    def tick(self, n: int = 1) -> list[tuple[str, dict[str, Any]]]:
        out = []
        for _ in range(n):
            out += self.apply("epoch_closed", {"epoch": self.ledger.epoch})
        return out

    def outcome(self, cid: str) -> str:
        return str(self.state["proposals"][cid]["outcome"])

    def stake(self, vid: str) -> int:
        return int(self.state["validators"][vid]["stake"])
