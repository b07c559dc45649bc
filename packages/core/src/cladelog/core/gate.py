"""The promotion gate: every enabled plugin votes, one ``block`` blocks."""

from __future__ import annotations

from typing import Any, Literal

import attrs

__all__ = ["GateResult", "Vote"]

Decision = Literal["allow", "warn", "block"]


@attrs.frozen
class Vote:
    """One plugin's vote on a candidate.

    ``known`` says whether the plugin's records name the candidate (fork-score: a scored
    branch or child root; consensus: a proposal): True or False for a vote that matches
    candidate ids, None for one that does not look at them (Law V's halt holds for every
    candidate). ``cladelog gate`` says so when no plugin knows the candidate.
    """

    plugin: str
    decision: Decision
    reason: str
    known: bool | None = None

    def __attrs_post_init__(self) -> None:
        if self.decision not in ("allow", "warn", "block"):
            raise ValueError(f"decision: must be allow, warn or block, got {self.decision!r}")


@attrs.frozen
class GateResult:
    candidate: str
    votes: tuple[Vote, ...]

    @property
    def allowed(self) -> bool:
        return all(v.decision != "block" for v in self.votes)

    @property
    def known_by(self) -> tuple[str, ...]:
        """The plugins whose records name the candidate (see :attr:`Vote.known`)."""
        return tuple(v.plugin for v in self.votes if v.known)

    def to_json(self) -> dict[str, Any]:
        return {
            "candidate": self.candidate,
            "allowed": self.allowed,
            "known_by": list(self.known_by),
            "votes": [attrs.asdict(v) for v in self.votes],
        }
