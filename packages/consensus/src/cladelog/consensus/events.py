"""The event types of the consensus plugin (a public, versioned contract; all at v1).

All events go to the stream :data:`STREAM`. There are two families:

*Inputs* -- what someone asked for. The signed ones carry the DSSE envelope(s) of
validator statements (:mod:`cladelog.consensus.statements`); the others are
plain data:

============================  =================================================
``consensus.policy_set``      ``{policy}``: a policy document (versioned)
``consensus.bonded``          ``{envelope}``: a signed ``bond`` statement
``consensus.unbond_requested`` ``{envelope}``: a signed ``unbond`` statement
``consensus.unjailed``        ``{envelope}``: a signed ``unjail`` statement
``consensus.proposed``        ``{envelope}``: a signed ``propose`` statement
``consensus.voted``           ``{envelope}``: a signed ``vote`` statement
``consensus.evidence_submitted`` ``{first, second}``: two signed vote statements
``consensus.challenge_opened`` ``{candidate, challenger, claim, inputs_digest, audit}``
``consensus.epoch_closed``    ``{epoch}``: the current epoch ends
============================  =================================================

*Consequences* -- what the rules derived from an input, appended in the same batch
right after it, in the order the rules produce them (:mod:`cladelog.consensus.ledger`):
``proposal_opened`` (the only consequence of a proposal: its frozen set and parameters,
as the canonical digest :func:`~cladelog.consensus.ledger.frozen_digest` of
:func:`~cladelog.consensus.ledger.frozen_terms`), ``validator_activated``,
``candidate_finalized``, ``conflict_recorded``,
``equivocation_recorded``, ``validator_slashed``, ``challenge_resolved``,
``candidate_overturned``, ``voting_closed``, ``validator_jailed``,
``candidate_settled``, ``reward_credited``, ``unbond_completed``. The projection
derives them again from the inputs and records an anomaly when the log's
consequences differ; the state never depends on them.
"""

from __future__ import annotations

from typing import Any

import attrs
from cladelog.core import EventType

__all__ = [
    "CONSEQUENCE_TYPES",
    "EVENT_TYPES",
    "INPUT_KINDS",
    "SIGNED_KINDS",
    "STREAM",
]

STREAM = "consensus"


@attrs.frozen
class PolicySet:
    """``consensus.policy_set``: ``policy`` is the policy document."""

    policy: dict[str, Any]


@attrs.frozen
class Signed:
    """A signed validator statement: ``envelope`` is its DSSE envelope."""

    envelope: dict[str, Any]


@attrs.frozen
class EvidenceSubmitted:
    """``consensus.evidence_submitted``: two signed vote statements that conflict."""

    first: dict[str, Any]
    second: dict[str, Any]


@attrs.frozen
class ChallengeOpened:
    """``consensus.challenge_opened``: the audit re-run on inputs whose digest is
    ``inputs_digest`` (the proposal's eval digest) and its result ``audit``."""

    candidate: str
    challenger: str
    claim: str
    inputs_digest: str
    audit: dict[str, Any]


@attrs.frozen
class EpochClosed:
    """``consensus.epoch_closed``: ``epoch`` (the current one) ends."""

    epoch: int


def _derived(name: str, description: str) -> EventType:
    fields = _CONSEQUENCE_FIELDS[name]
    cls = attrs.make_class(f"C_{name}", {f: attrs.field(type=Any) for f in fields},
                           frozen=True)
    return EventType(f"consensus.{name}", cls, description=description)


_CONSEQUENCE_FIELDS: dict[str, tuple[str, ...]] = {
    "proposal_opened": ("candidate", "epoch", "policy_version", "total_power",
                        "frozen_digest"),
    "validator_activated": ("validator", "epoch", "stake"),
    "candidate_finalized": ("candidate", "epoch", "accept_power", "total_power"),
    "conflict_recorded": ("candidates", "double_signers", "epoch", "double_signer_power",
                          "total_power"),
    "equivocation_recorded": ("evidence", "validator", "kind", "proposals", "slashed"),
    "validator_slashed": ("validator", "offense", "amount", "ref", "stake", "fraction"),
    "challenge_resolved": ("candidate", "confirmed", "epoch"),
    "candidate_overturned": ("candidate", "cause", "epoch", "reopened"),
    "voting_closed": ("candidate", "epoch", "outcome", "reason", "accept_power", "total_power",
                      "missing", "zeta"),
    "validator_jailed": ("validator", "epoch", "misses", "until"),
    "candidate_settled": ("candidate", "epoch"),
    "reward_credited": ("validator", "candidate", "amount"),
    "unbond_completed": ("validator", "epoch", "stake"),
}

#: input event type -> the ledger's input kind
INPUT_KINDS: dict[str, str] = {
    "consensus.policy_set": "policy_set",
    "consensus.bonded": "bond",
    "consensus.unbond_requested": "unbond",
    "consensus.unjailed": "unjail",
    "consensus.proposed": "propose",
    "consensus.voted": "vote",
    "consensus.evidence_submitted": "evidence",
    "consensus.challenge_opened": "challenge",
    "consensus.epoch_closed": "epoch_closed",
}
#: statement kind -> its input event type
SIGNED_KINDS: dict[str, str] = {
    "bond": "consensus.bonded",
    "unbond": "consensus.unbond_requested",
    "unjail": "consensus.unjailed",
    "propose": "consensus.proposed",
    "vote": "consensus.voted",
}

_INPUTS = (
    EventType("consensus.policy_set", PolicySet, description="a consensus policy version"),
    EventType("consensus.bonded", Signed, description="a validator bonded stake (signed)"),
    EventType("consensus.unbond_requested", Signed,
              description="a validator asked to unbond its whole stake (signed)"),
    EventType("consensus.unjailed", Signed,
              description="a jailed validator asked to be unjailed (signed)"),
    EventType("consensus.proposed", Signed, description="a candidate was proposed (signed)"),
    EventType("consensus.voted", Signed, description="a validator voted on a proposal (signed)"),
    EventType("consensus.evidence_submitted", EvidenceSubmitted,
              description="two conflicting signed votes submitted as evidence"),
    EventType("consensus.challenge_opened", ChallengeOpened,
              description="a challenge of a finalized candidate with its audit re-run"),
    EventType("consensus.epoch_closed", EpochClosed, description="the current epoch ended"),
)

_DESCRIPTIONS = {
    "proposal_opened": "a proposal froze its validator set and parameters (their digest)",
    "validator_activated": "a bond took effect",
    "candidate_finalized": "more than 2/3 of the frozen power accepted a candidate",
    "conflict_recorded": "a sibling of a finalized candidate also reached quorum",
    "equivocation_recorded": "two conflicting signed statements of one validator",
    "validator_slashed": "stake was slashed for an offense",
    "challenge_resolved": "a challenge was confirmed or failed",
    "candidate_overturned": "a finalized candidate (or one built on it) was overturned",
    "voting_closed": "a voting window closed (outcome, tally, missing power, zeta)",
    "validator_jailed": "a validator was jailed for missed votes",
    "candidate_settled": "a candidate's challenge window closed unchallenged",
    "reward_credited": "a counted vote on a settled candidate was rewarded",
    "unbond_completed": "an unbonding completed; the stake was withdrawn",
}

CONSEQUENCE_TYPES: frozenset[str] = frozenset(f"consensus.{n}" for n in _CONSEQUENCE_FIELDS)

#: Every event type the plugin writes.
EVENT_TYPES: tuple[EventType, ...] = _INPUTS + tuple(
    _derived(name, _DESCRIPTIONS[name]) for name in _CONSEQUENCE_FIELDS)
