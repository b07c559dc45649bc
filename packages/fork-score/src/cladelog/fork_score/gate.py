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

Hard-flag gating: a scoring recorded with ``hard_flag_gating`` false was decided
without its hard flags, so an ``allow`` may carry flags; the reason then says
``hard-flag gating was off for this scoring`` and lists the flags that were not
enforced. When the deployment itself has gating off (``[settings.fork-score]
hard_flag_gating = false``), every vote's reason ends with ``hard-flag gating is
off in this deployment``, so nobody reads a gate that no longer enforces flags
as one that does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cladelog.core import Vote, human_number

__all__ = ["GATING_OFF", "PLUGIN_NAME", "gate_vote"]

PLUGIN_NAME = "fork-score"


#: Said at the end of every vote's reason when the deployment has gating off.
GATING_OFF = "hard-flag gating is off in this deployment"


def gate_vote(
    candidate: str, candidates_state: Mapping[str, Any], unscored: str = "block",
    hard_flag_gating: bool = True,
) -> Vote | None:
    """The vote on ``candidate`` given the ``fork_score.candidates`` state.

    ``unscored`` is the vote on a candidate no recorded event names: ``block``
    or ``abstain`` (None). ``hard_flag_gating`` is the deployment's setting; when
    false, the reason says so (the recorded verdict still decides the vote).
    """
    vote = _vote(candidate, candidates_state, unscored)
    if vote is None or hard_flag_gating:
        return vote
    return Vote(vote.plugin, vote.decision, f"{vote.reason}; {GATING_OFF}", known=vote.known)


def _vote(candidate: str, candidates_state: Mapping[str, Any], unscored: str) -> Vote | None:
    entry = candidates_state.get("candidates", {}).get(candidate)
    if entry is None:
        if unscored == "abstain":
            return None
        return Vote(PLUGIN_NAME, "block", f"never scored: no fork_score.branch_scored event "
                                          f"names {candidate!r} as branch or child root",
                    known=False)
    where = (f"branch {entry['branch_id']} of set {entry['branch_set_id']}, "
             f"position {entry['position']}")
    flags = entry["flags"]
    if entry["verdict"] == "REJECT":
        why = ", ".join(flags) if flags and entry.get("hard_flag_gating", True) \
            else f"negative score {human_number(entry['score'])}"
        return Vote(PLUGIN_NAME, "block", f"REJECT: {why} ({where})", known=True)
    reason = f"{entry['verdict']}: score {human_number(entry['score'])} ({where})"
    if not entry.get("hard_flag_gating", True):
        reason += "; hard-flag gating was off for this scoring"
        if flags:
            reason += f": {', '.join(flags)} not enforced"
    return Vote(PLUGIN_NAME, "allow", reason, known=True)
