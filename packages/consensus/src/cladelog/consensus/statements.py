"""Validator statements: the in-toto predicate of each action and its field checks.

Every validator action (bond, unbond, unjail, propose, vote) is an in-toto
Statement v1 whose ``predicateType`` is :data:`PREDICATE_TYPE`, wrapped in a DSSE
envelope signed by the validator's Ed25519 key (signing and verification are
core's, :mod:`cladelog.consensus.signing`). The Statement's ``subject`` names what
the action is about (the validator, or the candidate) with its SHA-256 digest.
The predicate::

    {"kind": "bond",    "validator": ID, "epoch": E, "key": VKEY, "stake": N}
    {"kind": "unbond",  "validator": ID, "epoch": E}
    {"kind": "unjail",  "validator": ID, "epoch": E}
    {"kind": "propose", "validator": ID, "epoch": E, "candidate": C, "parent": P,
     "eval_digest": HEX64, "receipts_checkpoint": TEXT, "coverage_diff": HEX64,
     "metric_delta": NUMBER}
    {"kind": "vote",    "validator": ID, "epoch": E, "proposal": C,
     "decision": "accept" | "reject", "audit": {verdict, hard_flags, score}}

``epoch`` is the epoch the statement was signed in (issue #20 rule 5). ``ID`` is
the name of the validator's signed-note key (the key binds the id). This module is
pure: :func:`check_predicate` validates the fields and names the first bad one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from cladelog.consensus.errors import ConsensusInputError
from cladelog.consensus.policy import MAX_INT, check_id

__all__ = ["DECISIONS", "KINDS", "PREDICATE_TYPE", "check_audit", "check_predicate"]

#: The in-toto predicate type of every consensus statement.
PREDICATE_TYPE = "https://cladelog.dev/consensus/statement/v1"
#: Statement kinds.
KINDS = ("bond", "unbond", "unjail", "propose", "vote")
#: Vote decisions.
DECISIONS = ("accept", "reject")
#: Audit verdicts (ForkScore's).
VERDICTS = ("ACCEPT", "MARGINAL", "REJECT")

_HEX64 = re.compile(r"[0-9a-f]{64}")
_FIELDS: dict[str, frozenset[str]] = {
    "bond": frozenset({"key", "stake"}),
    "unbond": frozenset(),
    "unjail": frozenset(),
    "propose": frozenset({"candidate", "parent", "eval_digest", "receipts_checkpoint",
                          "coverage_diff", "metric_delta"}),
    "vote": frozenset({"proposal", "decision", "audit"}),
}


def _fail(message: str) -> ConsensusInputError:
    return ConsensusInputError(message)


def _int(value: Any, where: str, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_INT:
        raise _fail(f"{where}: must be an integer in [{low}, 2^53-1], got {value!r}"[:200])
    return value


def _hex64(value: Any, where: str) -> str:
    if not isinstance(value, str) or _HEX64.fullmatch(value) is None:
        raise _fail(f"{where}: must be 64 lower-case hex digits (a SHA-256 digest)")
    return value


def _text(value: Any, where: str, limit: int = 400) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > limit:
        raise _fail(f"{where}: must be a non-empty string of at most {limit} characters")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise _fail(f"{where}: must not contain control characters")
    return value


def check_audit(value: Any, where: str) -> dict[str, Any]:
    """An audit result ``{verdict, hard_flags, score}`` as a vote or challenge records it."""
    if not isinstance(value, Mapping) or set(value) != {"verdict", "hard_flags", "score"}:
        raise _fail(f"{where}: must be an object with exactly verdict, hard_flags, score")
    if value["verdict"] not in VERDICTS:
        raise _fail(f"{where}.verdict: must be one of {', '.join(VERDICTS)}")
    flags = value["hard_flags"]
    if not isinstance(flags, list) or not all(isinstance(f, str) and f for f in flags):
        raise _fail(f"{where}.hard_flags: must be a list of non-empty strings")
    score = value["score"]
    if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)
                              or not math.isfinite(score)):
        raise _fail(f"{where}.score: must be a finite number or null")
    return {"verdict": value["verdict"], "hard_flags": list(flags), "score": score}


def check_predicate(value: Any, where: str = "statement.predicate") -> dict[str, Any]:
    """Validate a statement predicate; return it (a plain dict). Raises naming the field."""
    if not isinstance(value, Mapping):
        raise _fail(f"{where}: must be an object")
    kind = value.get("kind")
    if kind not in KINDS:
        raise _fail(f"{where}.kind: must be one of {', '.join(KINDS)}")
    expected = _FIELDS[kind] | {"kind", "validator", "epoch"}
    unknown = sorted(set(value) - expected)
    if unknown:
        raise _fail(f"{where}.{unknown[0]}: unknown field for a {kind} statement")
    missing = sorted(expected - set(value))
    if missing:
        raise _fail(f"{where}.{missing[0]}: missing")
    check_id(value["validator"], f"{where}.validator")
    _int(value["epoch"], f"{where}.epoch")
    if kind == "bond":
        _text(value["key"], f"{where}.key")
        _int(value["stake"], f"{where}.stake", 1)
    elif kind == "propose":
        check_id(value["candidate"], f"{where}.candidate")
        check_id(value["parent"], f"{where}.parent")
        _hex64(value["eval_digest"], f"{where}.eval_digest")
        _hex64(value["coverage_diff"], f"{where}.coverage_diff")
        _text(value["receipts_checkpoint"], f"{where}.receipts_checkpoint")
        delta = value["metric_delta"]
        if isinstance(delta, bool) or not isinstance(delta, int | float) \
                or not math.isfinite(delta):
            raise _fail(f"{where}.metric_delta: must be a finite number")
    elif kind == "vote":
        check_id(value["proposal"], f"{where}.proposal")
        if value["decision"] not in DECISIONS:
            raise _fail(f"{where}.decision: must be accept or reject")
        check_audit(value["audit"], f"{where}.audit")
    return dict(value)
