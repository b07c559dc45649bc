"""The promotion gate: every enabled plugin votes, one ``block`` blocks."""

from __future__ import annotations

from typing import Any, Literal

import attrs

__all__ = ["GateResult", "Vote"]

Decision = Literal["allow", "warn", "block"]


@attrs.frozen
class Vote:
    """One plugin's vote on a candidate."""

    plugin: str
    decision: Decision
    reason: str

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

    def to_json(self) -> dict[str, Any]:
        return {
            "candidate": self.candidate,
            "allowed": self.allowed,
            "votes": [attrs.asdict(v) for v in self.votes],
        }
