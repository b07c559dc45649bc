"""A seeded simulation of honest, offline and Byzantine validators (issue #20).

:func:`run` drives one :class:`Sink` epoch by epoch: the real one
(:class:`LogSink`) signs every statement with the validator's Ed25519 key and
appends it through the same commands as the CLI, so the simulated log is a real
log that replays to the same state; :class:`LedgerSink` applies the same inputs
to a bare :class:`~cladelog.consensus.ledger.Ledger` (no signatures), which is
what the many-seed property tests use for speed.

Roles (shuffled by the seed): ``byzantine`` (F), ``offline`` (G), ``honest``
(the rest); every validator bonds the same stake, so a role's power share is its
count over N. Each epoch:

1. an honest, active validator proposes a good candidate on the current tip (the
   chain of first-finalized children from genesis);
2. when a Byzantine validator is active, it may propose a sibling on the same tip:
   a *bad* one (its audit gives REJECT with a hard flag) or a good-looking
   *conflicting* one;
3. honest online validators audit and vote: accept on the first good child of a
   parent they see, reject on everything else; when the Byzantine power is above
   1/3 the honest are split (a partition, chosen by the seed) and half of them see
   the Byzantine sibling first;
4. each Byzantine validator picks one behaviour: ``equivocate`` (accept both
   siblings), ``double_vote`` (accept and reject one proposal), ``accept_bad``
   (accept the bad sibling) or ``withhold`` (no vote); during a partition with a
   good-looking sibling they all equivocate (the attack on safety);
5. an honest watcher challenges every finalized bad candidate within its window;
6. the epoch closes.

The audit of a candidate is the ``consensus_audit`` hook on its audit inputs
(fork-score's ForkScore), run once per inputs digest (it is deterministic).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import attrs
from cladelog.consensus.ledger import GENESIS, Ledger

__all__ = ["LedgerSink", "LogSink", "SimConfig", "Sink", "run", "sim_policy", "sim_signers"]

_RATES = {"syntax": "parse_pass_rate", "semantics": "equivalence_recovery_rate"}


def _battery(rate_a: float, rate_b: float) -> dict[str, Any]:
    return {"batteries": {"5S": {"syntax": {_RATES["syntax"]: rate_a},
                                 "semantics": {_RATES["semantics"]: rate_b}}}}


def audit_inputs(candidate: str, good: bool) -> dict[str, Any]:
    """A small audit inputs document: a good child improves 5S, a bad one regresses."""
    child = _battery(0.7, 0.6) if good else _battery(0.1, 0.5)
    child["candidate"] = candidate
    return {"parent": _battery(0.5, 0.5), "child": child, "weights": None, "scalars": {}}


@attrs.frozen
class SimConfig:
    """Parameters of one simulation (``stake`` is every validator's bond)."""

    validators: int
    byzantine: int = 0
    offline: int = 0
    epochs: int = 10
    seed: int = 0
    stake: int = 100

    def check(self) -> None:
        from cladelog.consensus.errors import ConsensusInputError

        if not 1 <= self.validators <= 1000:
            raise ConsensusInputError("--validators: must be in 1..1000")
        if self.byzantine < 0 or self.offline < 0:
            raise ConsensusInputError("--byzantine/--offline: must be >= 0")
        if self.byzantine + self.offline > self.validators:
            raise ConsensusInputError("--byzantine: byzantine + offline must be at most "
                                      "--validators")
        if not 1 <= self.epochs <= 10_000:
            raise ConsensusInputError("--epochs: must be in 1..10000")


def sim_policy(ids: list[str]) -> dict[str, Any]:
    """The simulation's policy: V=2, C=2, A=2, U=6, K=3 misses, jail 2 epochs."""
    return {"version": 1, "weighting": "linear", "cap": None, "voting_window": 2,
            "challenge_window": 2, "unbonding_period": 6, "evidence_max_age": 2,
            "slash": {"equivocation": "1/2", "bad_accept": "1/10"},
            "jail": {"misses": 3, "period": 2}, "reward_per_vote": 1, "min_bond": 1,
            "bootstrap": ids, "open_bonding_epoch": None}


class Sink:
    """Where the simulation's inputs go; :attr:`ledger` is the state after each one."""

    ledger: Ledger

    def policy(self, doc: dict[str, Any]) -> None:
        raise NotImplementedError

    def statement(self, predicate: dict[str, Any]) -> bool:
        """Sign (or not) and apply one statement; False when the rules refuse it."""
        raise NotImplementedError

    def challenge(self, data: dict[str, Any]) -> bool:
        raise NotImplementedError

    def tick(self) -> None:
        raise NotImplementedError


class LedgerSink(Sink):
    """The bare rules, no signatures (statement digests are made up, unique)."""

    def __init__(self) -> None:
        self.ledger = Ledger()
        self._count = 0

    def _apply(self, kind: str, data: dict[str, Any]) -> bool:
        from cladelog.consensus.errors import ConsensusInputError

        try:  # a refused input leaves the ledger unchanged (test_ledger_refusals)
            self.ledger.apply(kind, data)
        except ConsensusInputError:
            return False
        return True

    def policy(self, doc: dict[str, Any]) -> None:
        assert self._apply("policy_set", {"policy": doc})

    def statement(self, predicate: dict[str, Any]) -> bool:
        self._count += 1
        kind = "propose" if predicate["kind"] == "propose" else predicate["kind"]
        return self._apply(kind, {**predicate, "digest": f"{self._count:064x}"})

    def challenge(self, data: dict[str, Any]) -> bool:
        return self._apply("challenge", data)

    def tick(self) -> None:
        assert self._apply("epoch_closed", {"epoch": self.ledger.epoch})


class LogSink(Sink):
    """A real deployment: every statement signed with the validator's key and appended."""

    def __init__(self, deployment: Any, signers: dict[str, Any]) -> None:
        from cladelog.consensus.commands import current_ledger

        self.deployment = deployment
        self.signers = signers
        self.ledger = current_ledger(deployment)

    def _append(self, inputs: list[tuple[str, dict[str, Any]]]) -> bool:
        """Check one input on this sink's own ledger (the same path as the commands) and
        append it with its consequences; a refused input changes neither ledger nor log."""
        from cladelog.consensus.commands import prepare_inputs
        from cladelog.consensus.errors import ConsensusInputError

        assert len(inputs) == 1
        try:
            events, _ = prepare_inputs(self.ledger, inputs, actor="simulation")
        except ConsensusInputError:
            return False
        self.deployment.append(events)
        return True

    def policy(self, doc: dict[str, Any]) -> None:
        assert self._append([("consensus.policy_set", {"policy": doc})])

    def statement(self, predicate: dict[str, Any]) -> bool:
        from cladelog.consensus.commands import input_for_envelope
        from cladelog.consensus.signing import sign_statement

        envelope = sign_statement(predicate, self.signers[predicate["validator"]])
        return self._append([input_for_envelope(envelope)])

    def challenge(self, data: dict[str, Any]) -> bool:
        return self._append([("consensus.challenge_opened", data)])

    def tick(self) -> None:
        assert self._append([("consensus.epoch_closed", {"epoch": self.ledger.epoch})])


def _tip(ledger: Ledger) -> str:
    tip = GENESIS
    finalized = ledger.state["finalized_child"]
    while finalized.get(tip):
        tip = finalized[tip]
    return tip


def run(config: SimConfig, sink: Sink,
        auditor: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    """Run the simulation into ``sink``; return the report (see :func:`report`)."""
    from cladelog.core import canonical_digest

    config.check()
    rng = random.Random(config.seed)
    width = len(str(config.validators))
    ids = [f"val-{i:0{width}d}" for i in range(config.validators)]
    roles = (["byzantine"] * config.byzantine + ["offline"] * config.offline
             + ["honest"] * (config.validators - config.byzantine - config.offline))
    rng.shuffle(roles)
    role = dict(zip(ids, roles, strict=True))
    honest = [v for v in ids if role[v] == "honest"]
    byzantine = [v for v in ids if role[v] == "byzantine"]
    partition = 3 * config.byzantine > config.validators
    audits: dict[str, dict[str, Any]] = {}
    docs: dict[str, dict[str, Any]] = {}
    bad: set[str] = set()
    actions: dict[str, list[str]] = {v: [] for v in ids}

    def audit(cid: str) -> dict[str, Any]:
        digest = canonical_digest(docs[cid])
        if digest not in audits:
            audits[digest] = auditor(docs[cid])
        return audits[digest]

    def active(vid: str) -> bool:
        record = sink.ledger.state["validators"].get(vid)
        return record is not None and sink.ledger.eligible(record)

    def vote(vid: str, cid: str, decision: str) -> bool:
        return sink.statement({"kind": "vote", "validator": vid, "epoch": sink.ledger.epoch,
                               "proposal": cid, "decision": decision, "audit": audit(cid)})

    def propose(vid: str, cid: str, parent: str, good: bool) -> bool:
        docs[cid] = audit_inputs(cid, good)
        if not good:
            bad.add(cid)
        return sink.statement({
            "kind": "propose", "validator": vid, "epoch": sink.ledger.epoch, "candidate": cid,
            "parent": parent, "eval_digest": canonical_digest(docs[cid]),
            "receipts_checkpoint": f"sim-{config.seed}", "coverage_diff": "0" * 64,
            "metric_delta": 0.1 if good else -0.5})

    sink.policy(sim_policy(ids))
    for vid in ids:
        assert sink.statement({"kind": "bond", "validator": vid, "epoch": 0,
                               "key": _key_of(sink, vid), "stake": config.stake})
    accepted: dict[str, dict[str, list[str]]] = {}   # validator -> parent -> children accepted
    for epoch in range(config.epochs):
        tip = _tip(sink.ledger)
        proposers = [v for v in honest if active(v)]
        honest_cid = byz_cid = None
        if proposers:
            honest_cid = f"c{epoch}-h"
            if not propose(proposers[epoch % len(proposers)], honest_cid, tip, True):
                honest_cid = None
        byz_active = [v for v in byzantine if active(v)]
        if byz_active and rng.random() < 0.7:
            byz_cid = f"c{epoch}-b"
            good_looking = rng.random() < 0.5
            if not propose(rng.choice(byz_active), byz_cid, tip, good_looking):
                byz_cid = None
        children = [c for c in (honest_cid, byz_cid) if c is not None]
        split = set(rng.sample(honest, len(honest) // 2)) if partition and byz_cid else set()

        def honest_votes(group: list[str], children: list[str], split: set[str]) -> None:
            for vid in group:
                order = list(reversed(children)) if vid in split else children
                for cid in order:
                    if vid not in sink.ledger.state["proposals"][cid]["frozen"]:
                        continue
                    result = audit(cid)
                    good = result["verdict"] == "ACCEPT" and not result["hard_flags"]
                    mine = accepted.setdefault(vid, {})
                    proposals = sink.ledger.state["proposals"]
                    parent = proposals[cid]["parent"]
                    # an honest validator never accepts two children of one parent whose
                    # windows overlap, unless the earlier one was overturned (rule 5)
                    free = all(proposals[c]["outcome"] == "overturned"
                               or not sink.ledger.overlap(proposals[c], proposals[cid])
                               for c in mine.get(parent, []))
                    if good and free:
                        mine.setdefault(parent, []).append(cid)
                        vote(vid, cid, "accept")
                    else:
                        vote(vid, cid, "reject")

        first = [v for v in honest if v not in split]
        honest_votes(first, children, split)
        coordinated = bool(split) and byz_cid is not None and byz_cid not in bad
        for vid in byz_active:
            behaviour = ("equivocate" if coordinated else
                         rng.choice(("equivocate", "double_vote", "accept_bad", "withhold")))
            targets = [c for c in children if vid in sink.ledger.state["proposals"][c]["frozen"]]
            if not targets:
                continue
            if behaviour == "equivocate" and len(targets) == 2:
                if vote(vid, targets[0], "accept") and vote(vid, targets[1], "accept"):
                    actions[vid].append(f"equivocate:{targets[0]},{targets[1]}")
            elif behaviour == "double_vote":
                if vote(vid, targets[0], "accept") and vote(vid, targets[0], "reject"):
                    actions[vid].append(f"double_vote:{targets[0]}")
            elif behaviour == "accept_bad" and byz_cid in targets:
                if vote(vid, byz_cid, "accept"):
                    actions[vid].append(f"accept:{byz_cid}")
            else:
                actions[vid].append("withhold")
        honest_votes([v for v in honest if v in split], children, split)
        for cid in sorted(bad):
            record = sink.ledger.state["proposals"].get(cid)
            if record is not None and record["outcome"] == "finalized":
                sink.challenge({"candidate": cid, "challenger": "watcher", "claim": "hard_flag",
                                "inputs_digest": canonical_digest(docs[cid]),
                                "audit": audit(cid)})
        sink.tick()
    return report(sink.ledger, role, actions, config)


def _key_of(sink: Sink, vid: str) -> str:
    signers = getattr(sink, "signers", None)
    return f"sim-key-{vid}" if signers is None else str(signers[vid].public_key)


def report(ledger: Ledger, role: dict[str, str], actions: dict[str, list[str]],
           config: SimConfig) -> dict[str, Any]:
    """What was finalized, overturned and slashed (the ``--json`` form)."""
    from cladelog.consensus.commands import tally_rows

    rows = {row["validator"]: row for row in tally_rows(ledger)}
    validators = []
    for vid in sorted(role):
        row = rows[vid]
        validators.append({"validator": vid, "role": role[vid], "state": row["state"],
                           "stake": row["stake"], "power": row["power"],
                           "actions": actions[vid], "slashes": row["slashes"]})
    proposals = []
    for p in ledger.proposals_in_order():
        proposals.append({"candidate": p["candidate"], "parent": p["parent"],
                          "outcome": p["outcome"], "reason": p["reason"],
                          "accept_power": p["accept_power"], "reject_power": p["reject_power"],
                          "total_power": p["total_power"], "missing": p["missing"]})
    return {"config": attrs.asdict(config), "epoch": ledger.epoch,
            "validators": validators, "proposals": proposals,
            "conflicting_finalizations": ledger.state["conflicts"],
            "evidence": len(ledger.state["evidence"])}


def sim_signers(config: SimConfig) -> dict[str, Any]:
    """Deterministic validator keys for a simulation (seeded from the seed and the id)."""
    import hashlib

    from cladelog.consensus.signing import generate_key, signer_from_key

    width = len(str(config.validators))
    signers = {}
    for i in range(config.validators):
        vid = f"val-{i:0{width}d}"
        seed = hashlib.sha256(f"cladelog-sim/{config.seed}/{vid}".encode()).digest()
        signers[vid] = signer_from_key(generate_key(vid, seed)[0])
    return signers
