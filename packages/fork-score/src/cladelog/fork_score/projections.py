"""fork-score's projections: pure folds of ``fork_score.branch_scored`` events.

``fork_score.branch_sets`` (version 2) -- the latest scoring of every branch of
every branch set, keyed by (branch set, branch)::

    {"sets": {"<branch_set_id>": {"<branch_id>": ROW, ...}, ...}}

    ROW = {"branch_set_id", "branch_id", "parent_root", "child_root", "score",
           "verdict", "flags", "breakdown", "weights_id", "estimator_version",
           "hard_flag_gating", "recorded_at", "position", "times_scored"}

Scoring the same (branch set, branch) again replaces its row (an upsert by
replay); ``times_scored`` counts the scorings, and every earlier one stays in
the log. ``recorded_at`` and ``position`` are the event's own, so the fold
reads no clock.

``fork_score.candidates`` (version 2) -- for the promotion gate, the latest
scoring that names each candidate::

    {"candidates": {"<name>": {"branch_set_id", "branch_id", "verdict", "flags",
                               "score", "hard_flag_gating", "position",
                               "recorded_at"}}}

Version 2 of both added ``hard_flag_gating`` (event schema version 2; ``true``
for version-1 events), so a new version rebuilds them from position 0.

A scoring names two candidates: its ``branch_id`` and (when not null) its
``child_root``. A later event (higher position) naming the same candidate
replaces the entry, whatever branch set it belongs to.
"""

from __future__ import annotations

from typing import Any

from cladelog.core import Projection, RecordedEvent

__all__ = ["BRANCH_SETS", "CANDIDATES", "PROJECTIONS"]

_TYPES = frozenset({"fork_score.branch_scored"})


def _apply_branch_sets(state: dict[str, Any], event: RecordedEvent) -> dict[str, Any]:
    data = event.data
    branches = state["sets"].setdefault(data["branch_set_id"], {})
    previous = branches.get(data["branch_id"])
    branches[data["branch_id"]] = {
        "branch_set_id": data["branch_set_id"],
        "branch_id": data["branch_id"],
        "parent_root": data["parent_root"],
        "child_root": data["child_root"],
        "score": data["score"],
        "verdict": data["verdict"],
        "flags": list(data["flags"]),
        "breakdown": dict(data["breakdown"]),
        "weights_id": data["weights_id"],
        "estimator_version": data["estimator_version"],
        "hard_flag_gating": data["hard_flag_gating"],
        "recorded_at": event.recorded_at,
        "position": event.position,
        "times_scored": 1 if previous is None else previous["times_scored"] + 1,
    }
    return state


def _summary_branch_sets(state: dict[str, Any]) -> str:
    sets = state["sets"]
    branches = sum(len(b) for b in sets.values())
    return f"{len(sets)} branch set(s), {branches} branch(es)"


def _apply_candidates(state: dict[str, Any], event: RecordedEvent) -> dict[str, Any]:
    data = event.data
    entry = {
        "branch_set_id": data["branch_set_id"],
        "branch_id": data["branch_id"],
        "verdict": data["verdict"],
        "flags": list(data["flags"]),
        "score": data["score"],
        "hard_flag_gating": data["hard_flag_gating"],
        "position": event.position,
        "recorded_at": event.recorded_at,
    }
    names = [data["branch_id"]]
    if data["child_root"] is not None and data["child_root"] != data["branch_id"]:
        names.append(data["child_root"])
    for name in names:
        state["candidates"][name] = dict(entry)
    return state


def _summary_candidates(state: dict[str, Any]) -> str:
    rejected = sum(1 for c in state["candidates"].values() if c["verdict"] == "REJECT")
    return f"{len(state['candidates'])} candidate(s), {rejected} rejected"


BRANCH_SETS = Projection(
    name="fork_score.branch_sets",
    version=2,
    event_types=_TYPES,
    initial={"sets": {}},
    apply=_apply_branch_sets,
    summary=_summary_branch_sets,
    description="latest scoring of each (branch set, branch)",
)

CANDIDATES = Projection(
    name="fork_score.candidates",
    version=2,
    event_types=_TYPES,
    initial={"candidates": {}},
    apply=_apply_candidates,
    summary=_summary_candidates,
    description="latest scoring naming each candidate (branch id or child root)",
)

PROJECTIONS = (BRANCH_SETS, CANDIDATES)
