"""The consensus policy document: parsing and validation (pure, no I/O).

A policy is a JSON object (``cladelog consensus policy set FILE``)::

    {"version": 1,
     "weighting": "linear" | "sqrt",
     "cap": "1/3" | null,                 # per-validator power cap p/q of the total
     "voting_window": V,                  # epochs, >= 1
     "challenge_window": C,               # epochs, >= 1
     "unbonding_period": U,               # epochs, >= V + C + A
     "evidence_max_age": A,               # epochs, >= 0
     "slash": {"equivocation": "1/2", "bad_accept": "1/10"},
     "jail": {"misses": K, "period": P},  # K >= 1 consecutive misses; P >= 0 epochs
     "reward_per_vote": R,                # integer >= 0, smallest unit
     "min_bond": B,                       # integer >= 1, smallest unit
     "bootstrap": ["validator-id", ...],  # who may bond before open_bonding_epoch
     "open_bonding_epoch": E | null}      # from epoch E anyone may bond; null: never

Fractions are exact rationals written ``"p/q"`` (integers, ``0 <= p <= q``,
``q >= 1``); slashing and caps use integer arithmetic only. The quorum is not a
policy field: it is fixed at strictly more than two thirds (:mod:`.power`).

The one cross-field rule: ``U >= V + C + A``. Otherwise a validator could sign,
request unbonding and leave before a challenge or evidence against that signature
could land (ticket #000012 §2.4).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs
from cladelog.consensus.errors import ConsensusInputError
from cladelog.core.fields import MAX_SAFE_INTEGER

__all__ = [
    "MAX_INT",
    "OFFENSES",
    "WEIGHTINGS",
    "Fraction",
    "Policy",
    "parse_fraction",
    "parse_policy",
]

#: Largest integer accepted anywhere: core's I-JSON safe range (kept under this name).
MAX_INT = MAX_SAFE_INTEGER
#: Voting-power weightings.
WEIGHTINGS = ("linear", "sqrt")
#: Offense classes with a slash fraction.
OFFENSES = ("equivocation", "bad_accept")

_FRACTION = re.compile(r"(0|[1-9][0-9]{0,15})/([1-9][0-9]{0,15})")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_KEYS = frozenset({
    "version", "weighting", "cap", "voting_window", "challenge_window", "unbonding_period",
    "evidence_max_age", "slash", "jail", "reward_per_vote", "min_bond", "bootstrap",
    "open_bonding_epoch",
})


@attrs.frozen
class Fraction:
    """An exact rational ``p/q`` with ``0 <= p <= q``; :meth:`of` floors ``p * n / q``."""

    p: int
    q: int

    def of(self, n: int) -> int:
        """``floor(p * n / q)`` in integers."""
        return (self.p * n) // self.q

    def __str__(self) -> str:
        return f"{self.p}/{self.q}"


def parse_fraction(value: Any, where: str) -> Fraction:
    """Read ``"p/q"`` (``0 <= p <= q``, ``q >= 1``) or raise naming ``where``."""
    if not isinstance(value, str):
        raise ConsensusInputError(f"{where}: must be a fraction string \"p/q\", "
                                  f"got {type(value).__name__}")
    match = _FRACTION.fullmatch(value)
    if match is None:
        raise ConsensusInputError(f"{where}: must be a fraction \"p/q\" of integers, got "
                                  f"{value[:40]!r}")
    p, q = int(match.group(1)), int(match.group(2))
    if p > q:
        raise ConsensusInputError(f"{where}: must be at most 1, got {value!r}")
    return Fraction(p, q)


def _int(doc: Mapping[str, Any], key: str, where: str, *, low: int) -> int:
    value = doc.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConsensusInputError(f"{where}.{key}: must be an integer, "
                                  f"got {type(value).__name__}")
    if not low <= value <= MAX_INT:
        raise ConsensusInputError(f"{where}.{key}: must be in [{low}, 2^53-1], got {value}")
    return value


def check_id(value: Any, where: str) -> str:
    """A validator or candidate id: 1-64 of ``[A-Za-z0-9._-]``, starting alphanumeric."""
    if not isinstance(value, str) or _ID.fullmatch(value) is None:
        shown = value[:70] if isinstance(value, str) else type(value).__name__
        raise ConsensusInputError(f"{where}: must be 1-64 characters of [A-Za-z0-9._-] "
                                  f"starting with a letter or digit, got {shown!r}")
    return value


@attrs.frozen
class Policy:
    """A validated policy (see the module docstring for the fields)."""

    version: int
    weighting: str
    cap: Fraction | None
    voting_window: int
    challenge_window: int
    unbonding_period: int
    evidence_max_age: int
    slash_equivocation: Fraction
    slash_bad_accept: Fraction
    jail_misses: int
    jail_period: int
    reward_per_vote: int
    min_bond: int
    bootstrap: tuple[str, ...]
    open_bonding_epoch: int | None

    def to_dict(self) -> dict[str, Any]:
        """The normalized JSON form (``parse_policy(p.to_dict()) == p``)."""
        return {
            "version": self.version,
            "weighting": self.weighting,
            "cap": None if self.cap is None else str(self.cap),
            "voting_window": self.voting_window,
            "challenge_window": self.challenge_window,
            "unbonding_period": self.unbonding_period,
            "evidence_max_age": self.evidence_max_age,
            "slash": {"equivocation": str(self.slash_equivocation),
                      "bad_accept": str(self.slash_bad_accept)},
            "jail": {"misses": self.jail_misses, "period": self.jail_period},
            "reward_per_vote": self.reward_per_vote,
            "min_bond": self.min_bond,
            "bootstrap": list(self.bootstrap),
            "open_bonding_epoch": self.open_bonding_epoch,
        }

    def may_bond(self, validator: str, epoch: int) -> bool:
        """Bootstrap members always; anyone from ``open_bonding_epoch`` on."""
        if validator in self.bootstrap:
            return True
        return self.open_bonding_epoch is not None and epoch >= self.open_bonding_epoch


def parse_policy(doc: Any, where: str = "policy") -> Policy:
    """Validate a policy document; raise :class:`ConsensusInputError` naming the field."""
    if not isinstance(doc, Mapping):
        raise ConsensusInputError(f"{where}: must be an object, got {type(doc).__name__}")
    unknown = sorted(set(doc) - _KEYS)
    if unknown:
        raise ConsensusInputError(f"{where}.{unknown[0]}: unknown field")
    missing = sorted(_KEYS - set(doc))
    if missing:
        raise ConsensusInputError(f"{where}.{missing[0]}: missing")
    version = _int(doc, "version", where, low=1)
    weighting = doc["weighting"]
    if weighting not in WEIGHTINGS:
        raise ConsensusInputError(f"{where}.weighting: must be one of {', '.join(WEIGHTINGS)}, "
                                  f"got {str(weighting)[:40]!r}")
    cap = None if doc["cap"] is None else parse_fraction(doc["cap"], f"{where}.cap")
    if cap is not None and cap.p == 0:
        raise ConsensusInputError(f"{where}.cap: must be greater than 0 (or null for no cap)")
    voting = _int(doc, "voting_window", where, low=1)
    challenge = _int(doc, "challenge_window", where, low=1)
    unbonding = _int(doc, "unbonding_period", where, low=1)
    max_age = _int(doc, "evidence_max_age", where, low=0)
    slash = doc["slash"]
    if not isinstance(slash, Mapping):
        raise ConsensusInputError(f"{where}.slash: must be an object")
    if set(slash) != set(OFFENSES):
        raise ConsensusInputError(f"{where}.slash: must have exactly the fields "
                                  f"{', '.join(OFFENSES)}")
    equivocation = parse_fraction(slash["equivocation"], f"{where}.slash.equivocation")
    bad_accept = parse_fraction(slash["bad_accept"], f"{where}.slash.bad_accept")
    jail = doc["jail"]
    if not isinstance(jail, Mapping) or set(jail) != {"misses", "period"}:
        raise ConsensusInputError(f"{where}.jail: must be an object with exactly misses, period")
    misses = _int(jail, "misses", f"{where}.jail", low=1)
    period = _int(jail, "period", f"{where}.jail", low=0)
    reward = _int(doc, "reward_per_vote", where, low=0)
    min_bond = _int(doc, "min_bond", where, low=1)
    bootstrap = doc["bootstrap"]
    if not isinstance(bootstrap, list):
        raise ConsensusInputError(f"{where}.bootstrap: must be a list of validator ids")
    ids = tuple(check_id(v, f"{where}.bootstrap[{i}]") for i, v in enumerate(bootstrap))
    if len(set(ids)) != len(ids):
        raise ConsensusInputError(f"{where}.bootstrap: lists a validator twice")
    open_epoch = None
    if doc["open_bonding_epoch"] is not None:
        open_epoch = _int(doc, "open_bonding_epoch", where, low=0)
    if not ids and open_epoch is None:
        raise ConsensusInputError(f"{where}.bootstrap: is empty and open_bonding_epoch is null, "
                                  "so nobody could ever bond")
    if unbonding < voting + challenge + max_age:
        raise ConsensusInputError(
            f"{where}.unbonding_period: must be >= voting_window + challenge_window + "
            f"evidence_max_age = {voting + challenge + max_age}, got {unbonding} (a validator "
            "could sign and leave before a challenge or evidence lands)")
    return Policy(version, weighting, cap, voting, challenge, unbonding, max_age, equivocation,
                  bad_accept, misses, period, reward, min_bond, ids, open_epoch)
