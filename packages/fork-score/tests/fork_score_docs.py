"""Builders of battery-result documents for the fork-score tests.

The table below is transcribed from the seed (fork-score-reference.txt, section
2.1) as test data, independently of the package's own table.
"""

from __future__ import annotations

import copy
from typing import Any

SEED_TABLE: dict[str, dict[str, str]] = {
    "5S": {
        "syntax": "parse_pass_rate",
        "semantics": "equivalence_recovery_rate",
        "syllogism": "step_validity_rate",
        "synthesis": "derivation_pass_rate",
        "semiotics": "invariance_under_swap",
    },
    "5T": {
        "transfer-learning": "transfer_learning_success_rate",
        "triangulation": "triangulation_agreement_rate",
        "truthtables": "truth_table_coverage_rate",
        "transitivity": "full_chain_pass_rate",
        "time": "temporal_context_preservation_rate",
    },
    "5F": {
        "function": "function_pass_rate",
        "finetuning": "adaptation_improvement_rate",
        "falsification": "error_detection_rate",
        "formulate": "structural_match_rate",
        "feedback-loop": "integration_coverage_rate",
    },
}

ALL_SUBS: list[tuple[str, str]] = [(b, s) for b, subs in SEED_TABLE.items() for s in subs]

SEED_BREAKDOWN_KEYS = [
    "alpha_x_delta_5s",
    "beta_x_delta_5t",
    "gamma_x_delta_5f",
    "delta_x_selfmodel_calibration_gain",
    "epsilon_x_audit_completeness",
    "zeta_x_validator_diversity",
    "minus_eta_x_regression_penalty",
    "minus_theta_x_capital_cost_penalty",
    "minus_iota_x_security_risk_penalty",
    "minus_kappa_x_complexity_penalty",
    "minus_lambda_x_memory_invalidation",
]


def make_doc(
    default: float | None = 0.5,
    rates: dict[str, float | None] | None = None,
    **top_level: Any,
) -> dict[str, Any]:
    """A document with every seed sub-battery at ``default``.

    ``rates`` overrides single rates by ``"5S.syntax"``; ``None`` drops the
    whole sub-battery. ``default=None`` starts from an empty document.
    """
    batteries: dict[str, dict[str, dict[str, Any]]] = {b: {} for b in SEED_TABLE}
    for battery, sub in ALL_SUBS:
        if default is not None:
            batteries[battery][sub] = {SEED_TABLE[battery][sub]: default}
    for path, value in (rates or {}).items():
        battery, sub = path.split(".", 1)
        if value is None:
            batteries[battery].pop(sub, None)
        else:
            batteries[battery][sub] = {SEED_TABLE[battery][sub]: value}
    return {"batteries": batteries, **top_level}


def with_metrics(doc: dict[str, Any], path: str, **metrics: Any) -> dict[str, Any]:
    """A copy of ``doc`` with extra metrics merged into sub-battery ``path``."""
    out = copy.deepcopy(doc)
    battery, sub = path.split(".", 1)
    out["batteries"][battery].setdefault(sub, {}).update(metrics)
    return out
