"""The cladelog-lawv plugin: hook implementations (entry point ``lawv``).

Event types live in :mod:`cladelog.lawv.events`, the projection in
:mod:`cladelog.lawv.projections`, the commands in :mod:`cladelog.lawv.cli`, the
gate rule in :mod:`cladelog.lawv.gate`. This module stays light (it is imported
whenever the CLI starts with lawv enabled); the others are imported by the hooks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cladelog.core import PluginInfo, hookimpl
from cladelog.lawv import __version__
from cladelog.lawv.gate import LawVSettings

if TYPE_CHECKING:
    import click
    from cladelog.core import Deployment, EventType, Projection, Vote

__all__ = [
    "PLUGIN",
    "cladelog_cli_commands",
    "cladelog_event_types",
    "cladelog_gate_vote",
    "cladelog_projections",
]

PLUGIN = PluginInfo(
    name="lawv",
    version=__version__,
    requires=("receipts",),
    settings=LawVSettings,
    description="Law V: R = dA / S against a fixed anchor set; HALT blocks until reviewed",
    gate_candidates="no id: votes the same on every candidate (blocks all while a HALT "
                    "is unreviewed)",
)


@hookimpl
def cladelog_event_types() -> Sequence[EventType]:
    """The four lawv event types (see the README for their schemas)."""
    from cladelog.lawv.events import EVENT_TYPES

    return list(EVENT_TYPES)


@hookimpl
def cladelog_projections() -> Sequence[Projection]:
    """The ``lawv.state`` projection."""
    from cladelog.lawv.projections import LAWV_STATE

    return [LAWV_STATE]


@hookimpl
def cladelog_cli_commands() -> Sequence[click.Command]:
    """The ``cladelog lawv`` command group."""
    from cladelog.lawv.cli import lawv

    return [lawv]


@hookimpl
def cladelog_gate_vote(
    candidate: str, states: Mapping[str, Any], deployment: Deployment
) -> Vote | None:
    """Block while a HALT is unreviewed (or kept halted); warn on WARNING, GAP, DEFECTIVE."""
    from cladelog.core import Vote
    from cladelog.lawv.gate import decide
    from cladelog.lawv.projections import PROJECTION_NAME

    state = states.get(PROJECTION_NAME)
    if state is None:
        return None
    settings = deployment.settings(PLUGIN.name)
    decision, reason = decide(state, settings if isinstance(settings, LawVSettings) else None)
    return Vote(PLUGIN.name, decision, reason)
