"""Shared helpers of the fork-score plugin tests (payloads and battery files)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fork_score_docs import SEED_BREAKDOWN_KEYS, SEED_TABLE, make_doc

BRANCH_SCORED = "fork_score.branch_scored"
WEIGHTS_ID = "f" * 64


def payload(
    set_id: str,
    branch: str,
    score: float,
    verdict: str = "ACCEPT",
    flags: tuple[str, ...] = (),
    child_root: str | None = None,
    parent_root: str = "P0",
) -> dict[str, Any]:
    """A valid fork_score.branch_scored payload with the given numbers.

    The breakdown has the eleven seed keys: ``alpha_x_delta_5s`` carries the whole
    score and the other ten are 0.0, so it sums to ``score`` exactly.
    """
    breakdown = dict.fromkeys(SEED_BREAKDOWN_KEYS, 0.0)
    breakdown["alpha_x_delta_5s"] = score
    return {
        "branch_set_id": set_id,
        "branch_id": branch,
        "parent_root": parent_root,
        "child_root": child_root,
        "score": score,
        "verdict": verdict,
        "flags": list(flags),
        "breakdown": breakdown,
        "weights_id": WEIGHTS_ID,
        "estimator_version": "0.1.0",
    }


def all_5s(rate: float) -> dict[str, float | None]:
    return {f"5S.{sub}": rate for sub in SEED_TABLE["5S"]}


def write_json(tmp_path: Path, name: str, doc: Any) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return str(path)


def fork_files(tmp_path: Path) -> dict[str, str]:
    """Parent at 0.5 everywhere; children that ACCEPT, stay MARGINAL, REJECT or are bad.

    accept: every 5S rate 0.5 -> 0.75, so delta_5S = 0.25 and the score is 0.25;
    marginal: identical to the parent, score 0;
    reject: 5S.syntax 0.5 -> 0.4, a 10pp drop (hard flag REGRESSION_5S:syntax);
    bad: a rate of 1.2, outside [0, 1].
    """
    return {
        "parent": write_json(tmp_path, "parent.json", make_doc(0.5)),
        "accept": write_json(tmp_path, "accept.json", make_doc(0.5, all_5s(0.75))),
        "marginal": write_json(tmp_path, "marginal.json", make_doc(0.5)),
        "reject": write_json(tmp_path, "reject.json", make_doc(0.5, {"5S.syntax": 0.4})),
        "bad": write_json(tmp_path, "bad.json", make_doc(0.5, {"5F.finetuning": 1.2})),
    }
