"""The cladelog-consensus plugin: hook implementations (entry point ``consensus``).

Event types live in :mod:`cladelog.consensus.events`, the rules in
:mod:`cladelog.consensus.ledger`, the projection in
:mod:`cladelog.consensus.projections`, the commands in :mod:`cladelog.consensus.cli`,
the gate rule in :mod:`cladelog.consensus.gate`, this plugin's own hook spec
(``consensus_audit``) in :mod:`cladelog.consensus.hookspecs`. This module stays
light: it is imported whenever the CLI starts with consensus enabled.

consensus also implements fork-score's ``fork_score_terms`` as an *optional* hook
(it exists only where fork-score is enabled), through a per-deployment provider
registered at configure time: the term fills ζ (ValidatorDiversity) from that
deployment's consensus state (rule 6; see :mod:`cladelog.consensus.zeta_term`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cladelog.consensus import __version__
from cladelog.consensus.gate import ConsensusSettings
from cladelog.core import PluginInfo, hookimpl

if TYPE_CHECKING:
    import click
    from cladelog.core import Deployment, EventType, Projection, Vote

__all__ = [
    "PLUGIN",
    "cladelog_add_hookspecs",
    "cladelog_cli_commands",
    "cladelog_configure",
    "cladelog_event_types",
    "cladelog_gate_vote",
    "cladelog_projections",
]

PLUGIN = PluginInfo(
    name="consensus",
    version=__version__,
    settings=ConsensusSettings,
    description="validators, stake, signed votes, >2/3 finality, challenges and slashing",
    gate_candidates="the candidate digest C(M') a proposal names ('consensus propose "
                    "--candidate'); blocks until it is settled",
)


@hookimpl
def cladelog_add_hookspecs(pluginmanager: Any) -> None:
    """Add ``consensus_audit`` (:mod:`cladelog.consensus.hookspecs`)."""
    from cladelog.consensus import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@hookimpl
def cladelog_configure(deployment: Deployment) -> None:
    """Register this deployment's ζ term provider (fork-score's optional term hook)."""
    from cladelog.consensus.zeta_term import ZetaTermProvider

    deployment.pm.register(ZetaTermProvider(deployment), name="consensus.zeta-term")


@hookimpl
def cladelog_event_types() -> Sequence[EventType]:
    """The consensus event types (inputs and consequences; see the README)."""
    from cladelog.consensus.events import EVENT_TYPES

    return list(EVENT_TYPES)


@hookimpl
def cladelog_projections() -> Sequence[Projection]:
    """The ``consensus.state`` projection."""
    from cladelog.consensus.projections import CONSENSUS_STATE

    return [CONSENSUS_STATE]


@hookimpl
def cladelog_cli_commands() -> Sequence[click.Command]:
    """The ``cladelog consensus`` command group."""
    from cladelog.consensus.cli import consensus

    return [consensus]


@hookimpl
def cladelog_gate_vote(
    candidate: str, states: Mapping[str, Any], deployment: Deployment
) -> Vote | None:
    """Block a candidate until it is settled (or finalized, when the settings allow it)."""
    from cladelog.consensus.gate import decide
    from cladelog.consensus.projections import PROJECTION_NAME
    from cladelog.core import Vote

    state = states.get(PROJECTION_NAME)
    if state is None:
        return None
    settings = deployment.settings(PLUGIN.name)
    allow = isinstance(settings, ConsensusSettings) and settings.gate_allows_finalized
    decision, reason = decide(candidate, state["ledger"], allow)
    return Vote(PLUGIN.name, decision, reason,
                known=candidate in state["ledger"]["proposals"])

