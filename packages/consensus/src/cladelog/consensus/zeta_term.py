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

The term is provided by a :class:`ZetaTermProvider` that the plugin registers in
each deployment's plugin manager when the deployment is configured, so it reads
that deployment's own state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cladelog.core import hookimpl

__all__ = ["TERM_NAME", "ZetaTermProvider", "zeta_for"]

TERM_NAME = "consensus_zeta"


def zeta_for(state: Mapping[str, Any] | None, candidate: Any) -> float | None:
    """ζ of ``candidate`` from a ``consensus.state`` state, or None when not yet known."""
    if state is None or not isinstance(candidate, str):
        return None
    proposal = state["ledger"]["proposals"].get(candidate)
    if proposal is None or proposal["zeta"] is None:
        return None
    return float(proposal["zeta"])


class ZetaTermProvider:
    """The per-deployment implementation of fork-score's ``fork_score_terms``.

    ``cladelog_configure`` registers one instance in the deployment's plugin manager,
    so the term reads *that* deployment's state (no module-level state). The hook
    implementation is optional: without fork-score the spec does not exist.
    """

    #: The fork-score hook-spec version this term was built for.
    FORK_SCORE_HOOKSPEC_VERSION = 1

    def __init__(self, deployment: Any) -> None:
        self.deployment = deployment

    def value(self, parent: Any, child: Any, inputs: Mapping[str, Any]) -> float:
        """ζ of the child's candidate, else the caller scalar ``validator_diversity``."""
        fallback = float(inputs.get("validator_diversity", 0.0))
        if not isinstance(child, Mapping):
            return fallback
        value = zeta_for(self.deployment.state("consensus.state"), child.get("candidate"))
        return fallback if value is None else value

    def term(self) -> dict[str, Any]:
        """The term in the mapping form fork-score's hook accepts."""
        return {"name": TERM_NAME, "weight_name": "zeta", "default_weight": 0.0, "sign": 1,
                "fn": self.value}

    @hookimpl(optionalhook=True)
    def fork_score_terms(self) -> list[Any]:
        """fork-score's term hook: the ζ term."""
        return [self.term()]
