"""The consensus gate rule (pure): a candidate passes once it is settled.

* settled -> ``allow``;
* finalized (challenge window still open) -> ``block``, or ``allow`` when the
  deployment sets ``[settings.consensus] gate_allows_finalized = true``;
* open, NOT_FINALIZED, overturned, or never proposed -> ``block``.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

__all__ = ["ConsensusSettings", "decide"]

Decision = Literal["allow", "warn", "block"]


@attrs.frozen
class ConsensusSettings:
    """``[settings.consensus]``: ``gate_allows_finalized`` (default false: settled only)."""

    gate_allows_finalized: bool = False


def decide(candidate: str, ledger: dict[str, Any],
           allow_finalized: bool) -> tuple[Decision, str]:
    """(decision, reason) for ``candidate`` from the ledger state."""
    proposal = ledger["proposals"].get(candidate)
    if proposal is None:
        return "block", f"{candidate} was never proposed to the validators"
    outcome = proposal["outcome"]
    tally = f"{proposal['accept_power']}/{proposal['total_power']} power accepted"
    if outcome == "settled":
        return "allow", f"settled in epoch {proposal['settled_epoch']} ({tally})"
    if outcome == "finalized":
        end = proposal["finalized_epoch"] + proposal["challenge_window"] - 1
        text = f"finalized in epoch {proposal['finalized_epoch']} ({tally}); challenge window " \
               f"open until the end of epoch {end}"
        return ("allow" if allow_finalized else "block"), text
    if outcome == "open":
        return "block", f"voting open ({tally}; more than 2/3 needed)"
    if outcome == "overturned":
        return "block", f"overturned in epoch {proposal['overturned_epoch']}"
    return "block", f"not finalized ({proposal['reason']}; {tally})"
