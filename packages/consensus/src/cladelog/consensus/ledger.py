"""The consensus rules as one pure state machine (no clock, no I/O, no signatures).

:class:`Ledger` wraps a JSON state and applies one *input* at a time; each input
either raises :class:`ConsensusInputError` (refused; every check runs before the first
change, so a refused input leaves the state exactly as it was -- the projection relies
on it, and ``tests/test_ledger_refusals.py`` checks it over random input sequences) or
returns the list of *consequences* it caused, as ``(event type, data)`` pairs. Commands append the
input and its consequences in one batch; the projection re-derives the
consequences from the input and checks the recorded ones against them, so the
log states every activation, finalization, jail, slash, reward, settlement and
overturn explicitly while the state depends only on the inputs.

Inputs (signed statements arrive here already verified, as their predicates)::

    policy_set      {policy}
    bond            {validator, key, stake, epoch}
    unbond          {validator, epoch}
    unjail          {validator, epoch}
    propose         {validator, candidate, parent, eval_digest, receipts_checkpoint,
                     coverage_diff, metric_delta, epoch}
    vote            {validator, proposal, decision, audit, epoch}  (+ digest)
    evidence        {first, second}: two vote statements (+ their digests)
    challenge       {candidate, challenger, claim, inputs_digest, audit}
    epoch_closed    {epoch}

The rules are those of issue #20 (numbered rules 1-7), documented in the README.
Iteration is always in sorted order (validator id, proposal sequence number), never
in dict order, so a state reloaded from canonical JSON behaves identically.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterator
from typing import Any

from cladelog.consensus.errors import ConsensusInputError
from cladelog.consensus.policy import Fraction, Policy, parse_policy
from cladelog.consensus.power import frozen_powers, missing_for_quorum, quorum_reached, zeta

__all__ = ["GENESIS", "Consequence", "Ledger", "evidence_id", "frozen_digest", "frozen_terms",
           "initial_state"]

GENESIS = "genesis"
Consequence = tuple[str, dict[str, Any]]
State = dict[str, Any]

#: Candidate outcomes.
OPEN, FINALIZED, SETTLED, NOT_FINALIZED, OVERTURNED = (
    "open", "finalized", "settled", "not_finalized", "overturned")
#: Validator statuses (``jailed`` and ``tombstoned`` are flags beside them).
ACTIVE, UNBONDING, EXITED = "active", "unbonding", "exited"


def initial_state() -> State:
    """The empty ledger: epoch 0, no policy, no validator, no proposal."""
    return {
        "epoch": 0,
        "policy": None,
        "policies": [],
        "validators": {},
        "proposals": {},
        "proposal_count": 0,
        "children": {},
        "finalized_child": {},
        "evidence": {},
        "challenges": [],
        "conflicts": [],
    }


def evidence_id(first: str, second: str) -> str:
    """The id of a pair of statements (order-free): SHA-256 of the sorted digests."""
    a, b = sorted((first, second))
    return hashlib.sha256(f"{a}\n{b}".encode()).hexdigest()


def frozen_terms(proposal: dict[str, Any]) -> dict[str, Any]:
    """What a proposal froze when it opened, as a finality certificate states it:
    ``{"opened": E, "policy": {version, weighting, cap, voting_window, challenge_window},
    "validators": {ID: {"stake": N, "power": N}}}``."""
    return {
        "opened": proposal["opened"],
        "policy": {"version": proposal["policy_version"], "weighting": proposal["weighting"],
                   "cap": proposal["cap"], "voting_window": proposal["voting_window"],
                   "challenge_window": proposal["challenge_window"]},
        "validators": {v: {"stake": proposal["frozen_stakes"][v], "power": p}
                       for v, p in sorted(proposal["frozen"].items())},
    }


def frozen_digest(terms: dict[str, Any]) -> str:
    """The canonical SHA-256 (:func:`cladelog.core.canonical_digest`) of
    :func:`frozen_terms`; ``consensus.proposal_opened`` records it."""
    from cladelog.core import canonical_digest

    return canonical_digest({"opened": terms["opened"], "policy": terms["policy"],
                             "validators": terms["validators"]})


def _fail(message: str) -> ConsensusInputError:
    return ConsensusInputError(message)


class Ledger:
    """The rules over a JSON state (mutated in place; see the module docstring)."""

    def __init__(self, state: State | None = None) -> None:
        self.state: State = initial_state() if state is None else state

    def copy(self) -> Ledger:
        """A ledger over a deep copy (to try an input without touching this one)."""
        return Ledger(copy.deepcopy(self.state))

    # ------------------------------------------------------------------ lookups
    @property
    def epoch(self) -> int:
        return int(self.state["epoch"])

    def policy(self) -> Policy:
        doc = self.state["policy"]
        if doc is None:
            raise _fail("policy: no consensus policy is set yet (cladelog consensus policy set)")
        return parse_policy(doc)

    def validator(self, vid: str) -> dict[str, Any]:
        record: dict[str, Any] | None = self.state["validators"].get(vid)
        if record is None:
            raise _fail(f"validator: {vid!r} is not a known validator (it never bonded)")
        return record

    def proposal(self, pid: str) -> dict[str, Any]:
        record: dict[str, Any] | None = self.state["proposals"].get(pid)
        if record is None:
            raise _fail(f"proposal: {pid!r} is not a known proposal")
        return record

    def proposals_in_order(self) -> Iterator[dict[str, Any]]:
        yield from sorted(self.state["proposals"].values(), key=lambda p: p["seq"])

    def _validators_sorted(self) -> list[tuple[str, dict[str, Any]]]:
        return sorted(self.state["validators"].items())

    @staticmethod
    def window(proposal: dict[str, Any]) -> tuple[int, int]:
        """The voting window ``(first epoch, last epoch)`` of a proposal (rule 2)."""
        return proposal["opened"], proposal["opened"] + proposal["voting_window"] - 1

    def parent_finalized(self, proposal: dict[str, Any]) -> bool:
        parent = proposal["parent"]
        if parent == GENESIS:
            return True
        return self.state["proposals"][parent]["outcome"] in (FINALIZED, SETTLED)

    def eligible(self, record: dict[str, Any]) -> bool:
        """May join a new frozen set: active, not jailed, not tombstoned, stake > 0."""
        return (record["status"] == ACTIVE and not record["jailed"]
                and not record["tombstoned"] and record["stake"] > 0)

    # ------------------------------------------------------------------ inputs
    def apply(self, kind: str, data: dict[str, Any]) -> list[Consequence]:
        """Apply one input; return its consequences or raise ConsensusInputError."""
        handler = getattr(self, f"_on_{kind}", None)
        if handler is None:
            raise _fail(f"input: unknown kind {kind!r}")
        out: list[Consequence] = []
        handler(data, out)
        return out

    def _statement_epoch_now(self, data: dict[str, Any], what: str) -> None:
        if data.get("epoch") != self.epoch:
            raise _fail(f"{what}.epoch: the statement was signed for epoch {data.get('epoch')}, "
                        f"the log is in epoch {self.epoch}; sign it again")

    def _on_policy_set(self, data: dict[str, Any], out: list[Consequence]) -> None:
        policy = parse_policy(data["policy"], "policy")
        current = self.state["policy"]
        if current is not None and policy.version <= current["version"]:
            raise _fail(f"policy.version: must be greater than the version in force "
                        f"{current['version']}, got {policy.version}")
        self.state["policy"] = policy.to_dict()
        self.state["policies"].append({"version": policy.version, "epoch": self.epoch})

    def _on_bond(self, data: dict[str, Any], out: list[Consequence]) -> None:
        policy = self.policy()
        vid = data["validator"]
        self._statement_epoch_now(data, "bond")
        stake = data["stake"]
        if isinstance(stake, bool) or not isinstance(stake, int) or stake < policy.min_bond:
            raise _fail(f"bond.stake: must be an integer >= the minimum bond {policy.min_bond}, "
                        f"got {stake!r}")
        if not policy.may_bond(vid, self.epoch):
            opens = policy.open_bonding_epoch
            when = "never (permissioned)" if opens is None else f"from epoch {opens}"
            raise _fail(f"bond.validator: {vid!r} is not in the bootstrap set; bonding opens "
                        f"to anyone {when}")
        record = self.state["validators"].get(vid)
        if record is not None:
            if record["key"] != data["key"]:
                raise _fail(f"bond.key: validator {vid!r} is bound to another key")
            if record["tombstoned"]:
                raise _fail(f"bond.validator: {vid!r} was slashed for equivocation "
                            "(tombstoned) and may never bond again")
            if record["status"] != EXITED:
                raise _fail(f"bond.validator: {vid!r} is already bonded ({record['status']})")
        rewards = 0 if record is None else record["rewards"]
        slashes = [] if record is None else record["slashes"]
        self.state["validators"][vid] = {
            "key": data["key"], "stake": stake, "status": ACTIVE, "jailed": False,
            "jailed_until": None, "tombstoned": False, "bonded_at": self.epoch,
            "unbond_requested": None, "unbonding_period": None, "misses": 0,
            "votes": 0 if record is None else record["votes"], "rewards": rewards,
            "slashes": slashes, "withdrawn": 0 if record is None else record["withdrawn"],
        }
        out.append(("consensus.validator_activated",
                    {"validator": vid, "epoch": self.epoch, "stake": stake}))

    def _on_unbond(self, data: dict[str, Any], out: list[Consequence]) -> None:
        policy = self.policy()
        vid = data["validator"]
        record = self.validator(vid)
        self._statement_epoch_now(data, "unbond")
        if record["status"] != ACTIVE:
            raise _fail(f"unbond.validator: {vid!r} is {record['status']}, not active")
        record["status"] = UNBONDING
        record["unbond_requested"] = self.epoch
        record["unbonding_period"] = policy.unbonding_period

    def _on_unjail(self, data: dict[str, Any], out: list[Consequence]) -> None:
        vid = data["validator"]
        record = self.validator(vid)
        self._statement_epoch_now(data, "unjail")
        if not record["jailed"]:
            raise _fail(f"unjail.validator: {vid!r} is not jailed")
        if record["tombstoned"]:
            raise _fail(f"unjail.validator: {vid!r} is tombstoned (slashed for equivocation)")
        if self.epoch <= record["jailed_until"]:
            raise _fail(f"unjail.epoch: {vid!r} is jailed until the end of epoch "
                        f"{record['jailed_until']}; the log is in epoch {self.epoch}")
        record["jailed"] = False
        record["jailed_until"] = None
        record["misses"] = 0

    def _on_propose(self, data: dict[str, Any], out: list[Consequence]) -> None:
        policy = self.policy()
        proposer = self.validator(data["validator"])
        self._statement_epoch_now(data, "proposal")
        if proposer["tombstoned"] or proposer["status"] == EXITED:
            raise _fail(f"proposal.validator: {data['validator']!r} may not propose "
                        "(tombstoned or exited)")
        cid, parent = data["candidate"], data["parent"]
        if cid == GENESIS or cid in self.state["proposals"]:
            raise _fail(f"proposal.candidate: {cid!r} was already proposed")
        if parent != GENESIS:
            parent_rec = self.state["proposals"].get(parent)
            if parent_rec is None:
                raise _fail(f"proposal.parent: {parent!r} is neither genesis nor a proposed "
                            "candidate")
            if parent_rec["outcome"] in (NOT_FINALIZED, OVERTURNED):
                raise _fail(f"proposal.parent: {parent!r} is {parent_rec['outcome']}; "
                            "propose on a finalized, settled or open candidate")
        stakes = {vid: rec["stake"] for vid, rec in self._validators_sorted() if self.eligible(rec)}
        powers = frozen_powers(stakes, policy.weighting, policy.cap)
        total = sum(powers.values())
        if total == 0:
            raise _fail("proposal: no active validator holds voting power")
        self.state["proposal_count"] += 1
        blocked = self.state["finalized_child"].get(parent) is not None
        self.state["proposals"][cid] = {
            "candidate": cid, "parent": parent, "seq": self.state["proposal_count"],
            "proposer": data["validator"], "eval_digest": data["eval_digest"],
            "receipts_checkpoint": data["receipts_checkpoint"],
            "coverage_diff": data["coverage_diff"], "metric_delta": data["metric_delta"],
            "opened": self.epoch, "policy_version": policy.version,
            "voting_window": policy.voting_window, "challenge_window": policy.challenge_window,
            "weighting": policy.weighting, "cap": None if policy.cap is None else str(policy.cap),
            "frozen": powers, "frozen_stakes": {v: stakes[v] for v in powers},
            "total_power": total, "votes": {}, "accepted_by": {},
            "accept_power": 0, "reject_power": 0, "outcome": OPEN, "sibling_blocked": blocked,
            "finalized_epoch": None, "closed_epoch": None, "overturned_epoch": None,
            "settled_epoch": None, "zeta": None, "reason": None, "missing": None,
        }
        self.state["children"].setdefault(parent, []).append(cid)
        record = self.state["proposals"][cid]
        out.append(("consensus.proposal_opened",
                    {"candidate": cid, "epoch": self.epoch, "policy_version": policy.version,
                     "total_power": total, "frozen_digest": frozen_digest(frozen_terms(record))}))

    def _check_vote_statement(self, data: dict[str, Any], where: str) -> dict[str, Any]:
        """The proposal of a vote statement whose epoch is valid (rule 5); raise otherwise."""
        proposal = self.proposal(data["proposal"])
        first, last = self.window(proposal)
        epoch = data["epoch"]
        if epoch > self.epoch:
            raise _fail(f"{where}.epoch: {epoch} is in the log's future (epoch {self.epoch})")
        if not first <= epoch <= last:
            raise _fail(f"{where}.epoch: {epoch} is outside the voting window {first}..{last} "
                        f"of {proposal['candidate']!r}")
        return proposal

    def _on_vote(self, data: dict[str, Any], out: list[Consequence]) -> None:
        vid, decision = data["validator"], data["decision"]
        record = self.validator(vid)
        proposal = self._check_vote_statement(data, "vote")
        pid = proposal["candidate"]
        if vid not in proposal["frozen"]:
            raise _fail(f"vote.validator: {vid!r} is not in the frozen validator set of {pid!r}")
        if record["tombstoned"]:
            raise _fail(f"vote.validator: {vid!r} is tombstoned; its votes are refused")
        last = self.window(proposal)[1]
        if self.epoch > last or proposal["outcome"] in (NOT_FINALIZED, OVERTURNED):
            raise _fail(f"vote.proposal: the voting window of {pid!r} is closed "
                        f"({proposal['outcome']})")
        if not self.parent_finalized(proposal):
            raise _fail(f"vote.proposal: the parent {proposal['parent']!r} of {pid!r} is not "
                        "finalized; votes wait until it is")
        statement = {"epoch": data["epoch"], "digest": data["digest"], "decision": decision}
        counted = proposal["votes"].get(vid)
        if counted is not None:
            if counted["digest"] == data["digest"] or counted["decision"] == decision:
                raise _fail(f"vote: {vid!r} already voted {counted['decision']} on {pid!r}")
            # a conflicting second statement: appended as evidence, never counted
            self._check_new_evidence(counted["digest"], statement["digest"])
            if decision == "accept":
                proposal["accepted_by"].setdefault(vid, statement)
            self._equivocation(vid, "double_vote", counted, statement, [pid], out)
            return
        proposal["votes"][vid] = {**statement, "audit": data.get("audit")}
        record["votes"] += 1
        record["misses"] = 0
        power = proposal["frozen"][vid]
        if decision == "accept":
            proposal["accept_power"] += power
            proposal["accepted_by"].setdefault(vid, statement)
            self._conflicting_children(vid, proposal, statement, out)
            self._maybe_finalize(proposal, out)
        else:
            proposal["reject_power"] += power

    def overlap(self, one: dict[str, Any], two: dict[str, Any]) -> bool:
        (a1, b1), (a2, b2) = self.window(one), self.window(two)
        return not (b1 < a2 or b2 < a1)

    def _overturned_by(self, proposal: dict[str, Any], epoch: int) -> bool:
        at = proposal["overturned_epoch"]
        return at is not None and at <= epoch

    def _conflicting_children(self, vid: str, proposal: dict[str, Any],
                              statement: dict[str, Any], out: list[Consequence]) -> None:
        """Rule 5: accepts on two children of one parent with overlapping windows."""
        first, last = self.window(proposal)
        for sibling_id in sorted(self.state["children"].get(proposal["parent"], []),
                                 key=lambda c: self.state["proposals"][c]["seq"]):
            if sibling_id == proposal["candidate"]:
                continue
            sibling = self.state["proposals"][sibling_id]
            other = sibling["accepted_by"].get(vid)
            if other is None:
                continue
            s_first, s_last = self.window(sibling)
            if s_last < first or last < s_first:
                continue
            later = max(other["epoch"], statement["epoch"])
            if self._overturned_by(proposal, later) or self._overturned_by(sibling, later):
                continue
            if evidence_id(other["digest"], statement["digest"]) in self.state["evidence"]:
                continue  # already submitted as evidence: recorded once
            self._equivocation(vid, "conflicting_children", other, statement,
                               [sibling_id, proposal["candidate"]], out)
            return

    def _check_new_evidence(self, one: str, two: str) -> None:
        eid = evidence_id(one, two)
        if eid in self.state["evidence"]:
            raise _fail(f"evidence: this pair of statements is already recorded ({eid[:16]})")

    def _equivocation(self, vid: str, kind: str, one: dict[str, Any], two: dict[str, Any],
                      proposals: list[str], out: list[Consequence]) -> None:
        self._check_new_evidence(one["digest"], two["digest"])
        eid = evidence_id(one["digest"], two["digest"])
        record = self.validator(vid)
        slashed = not record["tombstoned"]
        self.state["evidence"][eid] = {
            "validator": vid, "kind": kind, "proposals": proposals,
            "statements": sorted((one["digest"], two["digest"])),
            "epoch": self.epoch, "slashed": slashed}
        out.append(("consensus.equivocation_recorded",
                    {"evidence": eid, "validator": vid, "kind": kind, "proposals": proposals,
                     "slashed": slashed}))
        if slashed:
            fraction = self.policy().slash_equivocation
            self._slash(vid, "equivocation", fraction, eid, out)
            record["tombstoned"] = True

    def _slash(self, vid: str, offense: str, fraction: Fraction, ref: str,
               out: list[Consequence]) -> None:
        record = self.state["validators"][vid]
        amount = fraction.of(record["stake"])
        record["stake"] -= amount
        entry = {"offense": offense, "amount": amount, "ref": ref, "epoch": self.epoch,
                 "fraction": str(fraction)}
        record["slashes"].append(entry)
        out.append(("consensus.validator_slashed",
                    {"validator": vid, "offense": offense, "amount": amount, "ref": ref,
                     "stake": record["stake"], "fraction": str(fraction)}))

    def _maybe_finalize(self, proposal: dict[str, Any], out: list[Consequence]) -> None:
        if not quorum_reached(proposal["accept_power"], proposal["total_power"]):
            return
        if proposal["outcome"] != OPEN:
            return
        pid, parent = proposal["candidate"], proposal["parent"]
        if proposal["sibling_blocked"]:
            winner = self.state["finalized_child"].get(parent)
            other = None if winner is None else self.state["proposals"][winner]
            if (other is not None and self.overlap(other, proposal)
                    and not any(c["candidates"] == [winner, pid]
                                for c in self.state["conflicts"])):
                both = sorted(set(other["accepted_by"]) & set(proposal["accepted_by"]))
                conflict = {"candidates": [winner, pid], "double_signers": both,
                            "epoch": self.epoch,
                            "double_signer_power": sum(proposal["frozen"].get(v, 0)
                                                       for v in both),
                            "total_power": proposal["total_power"]}
                self.state["conflicts"].append(conflict)
                out.append(("consensus.conflict_recorded", conflict))
            return
        proposal["outcome"] = FINALIZED
        proposal["finalized_epoch"] = self.epoch
        self.state["finalized_child"][parent] = pid
        for sibling_id in self.state["children"].get(parent, []):
            sibling = self.state["proposals"][sibling_id]
            if sibling_id != pid and sibling["outcome"] == OPEN:
                sibling["sibling_blocked"] = True
        out.append(("consensus.candidate_finalized",
                    {"candidate": pid, "epoch": self.epoch,
                     "accept_power": proposal["accept_power"],
                     "total_power": proposal["total_power"]}))

    def _on_evidence(self, data: dict[str, Any], out: list[Consequence]) -> None:
        one, two = data["first"], data["second"]
        if one["digest"] == two["digest"]:
            raise _fail("evidence: the two statements are the same statement")
        if one["validator"] != two["validator"]:
            raise _fail("evidence: the two statements are signed by different validators")
        vid = one["validator"]
        self.validator(vid)
        p1 = self._check_vote_statement(one, "evidence.first")
        p2 = self._check_vote_statement(two, "evidence.second")
        for where, proposal in (("evidence.first", p1), ("evidence.second", p2)):
            if vid not in proposal["frozen"]:  # as its vote would be refused: no power
                raise _fail(f"{where}: {vid!r} is not in the frozen validator set of "
                            f"{proposal['candidate']!r}, so its statement on it is no vote "
                            "and no offense")
        later = max(one["epoch"], two["epoch"])
        if p1 is p2:
            if one["decision"] == two["decision"]:
                raise _fail("evidence: both statements vote the same way on the same proposal")
            kind, proposals = "double_vote", [p1["candidate"]]
        else:
            if one["decision"] != "accept" or two["decision"] != "accept":
                raise _fail("evidence: statements on different proposals must both be accepts")
            if p1["parent"] != p2["parent"]:
                raise _fail("evidence: the two proposals have different parents")
            (a1, b1), (a2, b2) = self.window(p1), self.window(p2)
            if b1 < a2 or b2 < a1:
                raise _fail("evidence: the voting windows of the two proposals do not overlap")
            if self._overturned_by(p1, later) or self._overturned_by(p2, later):
                raise _fail("evidence: one of the candidates was overturned when the later "
                            "statement was made (accepting its replacement is honest)")
            kind, proposals = "conflicting_children", sorted(
                (p1["candidate"], p2["candidate"]),
                key=lambda c: self.state["proposals"][c]["seq"])
        age = self.epoch - later
        max_age = self.policy().evidence_max_age
        if age > max_age:
            raise _fail(f"evidence: is {age} epochs old, older than the policy's evidence max "
                        f"age {max_age}")
        self._check_new_evidence(one["digest"], two["digest"])
        for statement, proposal in ((one, p1), (two, p2)):
            if statement["decision"] == "accept":
                proposal["accepted_by"].setdefault(
                    vid, {"epoch": statement["epoch"], "digest": statement["digest"],
                          "decision": "accept"})
        self._equivocation(vid, kind, one, two, proposals, out)

    def _on_challenge(self, data: dict[str, Any], out: list[Consequence]) -> None:
        cid = data["candidate"]
        proposal = self.proposal(cid)
        if proposal["outcome"] != FINALIZED:
            raise _fail(f"challenge.candidate: {cid!r} is {proposal['outcome']}; only a "
                        "finalized, not yet settled candidate can be challenged")
        start = proposal["finalized_epoch"]
        end = start + proposal["challenge_window"] - 1
        if not start <= self.epoch <= end:
            raise _fail(f"challenge.candidate: the challenge window of {cid!r} is "
                        f"{start}..{end}; the log is in epoch {self.epoch}")
        if data["inputs_digest"] != proposal["eval_digest"]:
            raise _fail("challenge.inputs_digest: the inputs' digest differs from the "
                        f"proposal's eval digest {proposal['eval_digest']}")
        audit = data["audit"]
        confirmed = audit["verdict"] == "REJECT" or bool(audit["hard_flags"])
        record = {"candidate": cid, "challenger": data["challenger"], "claim": data["claim"],
                  "epoch": self.epoch, "confirmed": confirmed, "audit": audit}
        self.state["challenges"].append(record)
        out.append(("consensus.challenge_resolved",
                    {"candidate": cid, "confirmed": confirmed, "epoch": self.epoch}))
        if not confirmed:
            return
        self._overturn(cid, cid, out)
        policy = self.policy()
        for vid in sorted(proposal["accepted_by"]):
            record_v = self.state["validators"][vid]
            already = any(s["offense"] == "bad_accept" and s["ref"] == cid
                          for s in record_v["slashes"])
            if not already:
                self._slash(vid, "bad_accept", policy.slash_bad_accept, cid, out)

    def _overturn(self, cid: str, cause: str, out: list[Consequence]) -> None:
        proposal = self.state["proposals"][cid]
        if proposal["outcome"] in (NOT_FINALIZED, OVERTURNED):
            return
        was_finalized = proposal["outcome"] in (FINALIZED, SETTLED)
        proposal["outcome"] = OVERTURNED
        proposal["overturned_epoch"] = self.epoch
        parent = proposal["parent"]
        if was_finalized and self.state["finalized_child"].get(parent) == cid:
            self.state["finalized_child"][parent] = None
        out.append(("consensus.candidate_overturned",
                    {"candidate": cid, "cause": cause, "epoch": self.epoch,
                     "reopened": parent if was_finalized else None}))
        for child in sorted(self.state["children"].get(cid, []),
                            key=lambda c: self.state["proposals"][c]["seq"]):
            self._overturn(child, cause, out)

    # ------------------------------------------------------------------ epochs
    def _on_epoch_closed(self, data: dict[str, Any], out: list[Consequence]) -> None:
        epoch = self.epoch
        if data["epoch"] != epoch:
            raise _fail(f"epoch_closed.epoch: the log is in epoch {epoch}, got {data['epoch']}")
        policy = None if self.state["policy"] is None else self.policy()
        for proposal in self.proposals_in_order():
            if proposal["closed_epoch"] is None and self.window(proposal)[1] == epoch:
                self._close_window(proposal, policy, out)
        for proposal in self.proposals_in_order():
            if (proposal["outcome"] == FINALIZED
                    and proposal["finalized_epoch"] + proposal["challenge_window"] - 1 <= epoch):
                self._settle(proposal, policy, out)
        for vid, record in self._validators_sorted():
            if record["status"] == UNBONDING and self._may_exit(vid, record, policy):
                record["status"] = EXITED
                record["withdrawn"] += record["stake"]
                out.append(("consensus.unbond_completed",
                            {"validator": vid, "epoch": epoch, "stake": record["stake"]}))
                record["stake"] = 0
        self.state["epoch"] = epoch + 1

    def _close_window(self, proposal: dict[str, Any], policy: Any,
                      out: list[Consequence]) -> None:
        epoch = self.epoch
        proposal["closed_epoch"] = epoch
        counted = proposal["votes"]
        accepts = [proposal["frozen"][v] for v in sorted(counted)
                   if counted[v]["decision"] == "accept"]
        proposal["zeta"] = zeta(accepts, len(proposal["frozen"]))
        missing = [v for v in sorted(proposal["frozen"]) if v not in counted]
        missing_power = sum(proposal["frozen"][v] for v in missing)
        stakes = self.state["validators"]
        proposal["missing"] = {"validators": missing, "power": missing_power,
                               "stake": sum(stakes[v]["stake"] for v in missing),
                               "needed_power": missing_for_quorum(proposal["accept_power"],
                                                                  proposal["total_power"])}
        if proposal["outcome"] == OPEN:
            proposal["outcome"] = NOT_FINALIZED
            if proposal["sibling_blocked"]:
                proposal["reason"] = "sibling_finalized"
            elif not self.parent_finalized(proposal):
                proposal["reason"] = "parent_not_finalized"
            else:
                proposal["reason"] = "no_quorum"
        out.append(("consensus.voting_closed",
                    {"candidate": proposal["candidate"], "epoch": epoch,
                     "outcome": proposal["outcome"], "reason": proposal["reason"],
                     "accept_power": proposal["accept_power"],
                     "total_power": proposal["total_power"], "missing": proposal["missing"],
                     "zeta": proposal["zeta"]}))
        parent = proposal["parent"]
        parent_at = (0 if parent == GENESIS
                     else self.state["proposals"][parent]["finalized_epoch"])
        possible = (parent_at is not None and parent_at <= epoch
                    and proposal["outcome"] != OVERTURNED)
        if not possible:
            return
        for vid in missing:
            record = stakes[vid]
            if record["tombstoned"] or record["status"] == EXITED:
                continue
            record["misses"] += 1
            if not record["jailed"] and record["misses"] >= policy.jail_misses:
                record["jailed"] = True
                record["jailed_until"] = epoch + policy.jail_period
                out.append(("consensus.validator_jailed",
                            {"validator": vid, "epoch": epoch, "misses": record["misses"],
                             "until": record["jailed_until"]}))

    def _settle(self, proposal: dict[str, Any], policy: Any, out: list[Consequence]) -> None:
        proposal["outcome"] = SETTLED
        proposal["settled_epoch"] = self.epoch
        out.append(("consensus.candidate_settled",
                    {"candidate": proposal["candidate"], "epoch": self.epoch}))
        reward = policy.reward_per_vote
        if reward == 0:
            return
        for vid in sorted(proposal["votes"]):
            self.state["validators"][vid]["rewards"] += reward
            out.append(("consensus.reward_credited",
                        {"validator": vid, "candidate": proposal["candidate"],
                         "amount": reward}))

    def _may_exit(self, vid: str, record: dict[str, Any], policy: Any) -> bool:
        """Rule 2: not before r+U-1, nor before every frozen-in proposal is past challenge
        and evidence."""
        epoch = self.epoch
        if epoch < record["unbond_requested"] + record["unbonding_period"] - 1:
            return False
        for proposal in self.state["proposals"].values():
            if vid not in proposal["frozen"]:
                continue
            last = self.window(proposal)[1]
            if last > epoch or proposal["outcome"] in (OPEN, FINALIZED):
                return False
            if epoch < last + policy.evidence_max_age:
                return False
        return True

