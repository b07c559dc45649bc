"""fork-score's vote at the promotion gate (a pure function of a projection state).

The *candidate* given to ``cladelog gate CANDIDATE`` is matched against the
``branch_id`` and the ``child_root`` of every recorded
``fork_score.branch_scored`` event; the matching event with the highest log
position (the latest) decides, whatever branch set it belongs to:

* its verdict is REJECT -> ``block``, the reason listing its hard flags (or the
  negative score when it has none);
* ACCEPT or MARGINAL -> ``allow``;
* no recorded event names the candidate -> ``block`` ("never scored"): a
  candidate nobody scored must not slip through a gate that checks scores.
  A deployment may choose to abstain instead (setting ``gate_unscored``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cladelog.core import Vote, human_number

__all__ = ["PLUGIN_NAME", "gate_vote"]

PLUGIN_NAME = "fork-score"


def gate_vote(
    candidate: str, candidates_state: Mapping[str, Any], unscored: str = "block"
) -> Vote | None:
    """The vote on ``candidate`` given the ``fork_score.candidates`` state.

    ``unscored`` is the vote on a candidate no recorded event names: ``block``
    or ``abstain`` (None).
    """
    entry = candidates_state.get("candidates", {}).get(candidate)
    if entry is None:
        if unscored == "abstain":
            return None
        return Vote(PLUGIN_NAME, "block", f"never scored: no fork_score.branch_scored event "
                                          f"names {candidate!r} as branch or child root",
                    known=False)
    where = (f"branch {entry['branch_id']} of set {entry['branch_set_id']}, "
             f"position {entry['position']}")
    if entry["verdict"] == "REJECT":
        flags = entry["flags"]
        why = ", ".join(flags) if flags else f"negative score {human_number(entry['score'])}"
        return Vote(PLUGIN_NAME, "block", f"REJECT: {why} ({where})", known=True)
    return Vote(PLUGIN_NAME, "allow",
                f"{entry['verdict']}: score {human_number(entry['score'])} ({where})",
                known=True)
