"""Plugin wiring of the complexity-term example: ``PLUGIN`` and ``fork_score_terms``."""

from __future__ import annotations

from typing import Any

from cladelog.core import PluginInfo, hookimpl

__all__ = ["FORK_SCORE_HOOKSPEC_VERSION", "PLUGIN", "fork_score_terms"]

PLUGIN = PluginInfo(
    name="complexity-term",
    version="0.1.0",
    requires=("fork-score",),
    description="example fork-score term: ComplexityPenalty (kappa) from a lines-of-code delta",
)

#: The fork-score hook-spec version this plugin was built for.
FORK_SCORE_HOOKSPEC_VERSION = 1


@hookimpl
def fork_score_terms() -> list[Any]:
    """fork-score's hook: this plugin's one term."""
    from cladelog_complexity_term.term import complexity_term

    return [complexity_term()]
