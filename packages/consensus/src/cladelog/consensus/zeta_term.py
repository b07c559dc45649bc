"""ζ (ValidatorDiversity) for fork-score, through fork-score's term hook.

The term is handed to fork-score as a plain mapping (fork-score builds its
``ScoringTerm`` from it; consensus never imports fork-score) that *fills* the
built-in ``zeta`` weight: ``{"name": "consensus_zeta", "weight_name": "zeta",
"default_weight": 0.0, "sign": 1, "fn": ...}``. The default weight stays 0 (the
seed's single-validator default); a deployment turns ζ on in its weights file.

Its value for a fork whose child document names a candidate (a top-level
``"candidate": ID`` member, which fork-score ignores otherwise) is the ζ recorded
when that candidate's voting window closed (rule 6: the normalized entropy of the
accepting power, 0 when the frozen set has at most one validator). Without such a
candidate, or before its window closed, the value is the caller's scalar
``validator_diversity`` (0 by default), so single-validator scoring is unchanged.

The state is read from the deployment the plugin was configured with (one
deployment per process, which is what the command line runs).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["TERM_NAME", "bind", "zeta_for", "zeta_term"]

TERM_NAME = "consensus_zeta"
_BOUND: dict[str, Any] = {}


def bind(deployment: Any) -> None:
    """Remember the configured deployment (called from ``cladelog_configure``)."""
    _BOUND["deployment"] = deployment


def zeta_for(state: Mapping[str, Any] | None, candidate: Any) -> float | None:
    """ζ of ``candidate`` from a ``consensus.state`` state, or None when not yet known."""
    if state is None or not isinstance(candidate, str):
        return None
    proposal = state["ledger"]["proposals"].get(candidate)
    if proposal is None or proposal["zeta"] is None:
        return None
    return float(proposal["zeta"])


def _value(parent: Any, child: Any, inputs: Mapping[str, Any]) -> float:
    fallback = float(inputs.get("validator_diversity", 0.0))
    deployment = _BOUND.get("deployment")
    if deployment is None or not isinstance(child, Mapping):
        return fallback
    value = zeta_for(deployment.state("consensus.state"), child.get("candidate"))
    return fallback if value is None else value


def zeta_term() -> dict[str, Any]:
    """The term in the mapping form fork-score's hook accepts."""
    return {"name": TERM_NAME, "weight_name": "zeta", "default_weight": 0.0, "sign": 1,
            "fn": _value}
