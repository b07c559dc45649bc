"""Hook implementations of the graph-engine plugin (entry point ``graph-engine``).

Enabling it in a deployment registers the ``graph_engine.*`` event types
(:mod:`.events`), the ``graph_engine.sessions`` projection (:mod:`.projections`), the
``cladelog graph`` commands (:mod:`.cli`) and the ``graph_engine_providers`` hook spec
(:mod:`.hookspecs`) through which other plugins contribute providers.
"""

from __future__ import annotations

from typing import Any

from cladelog.core import PluginInfo, hookimpl

from . import __version__
from .settings import GraphEngineSettings

__all__ = [
    "PLUGIN",
    "cladelog_add_hookspecs",
    "cladelog_cli_commands",
    "cladelog_event_types",
    "cladelog_projections",
]

PLUGIN = PluginInfo(
    name="graph-engine",
    version=__version__,
    settings=GraphEngineSettings,
    description="the reactive concept-graph engine, event-sourced sessions",
)


@hookimpl
def cladelog_add_hookspecs(pluginmanager: Any) -> None:
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@hookimpl
def cladelog_event_types() -> list[Any]:
    from .authoring.eventlog import LIBRARY_EVENT_TYPES
    from .events import EVENT_TYPES

    # sessions' engine records, and the authoring method libraries' records
    return [*EVENT_TYPES, *LIBRARY_EVENT_TYPES]


@hookimpl
def cladelog_projections() -> list[Any]:
    from .authoring.eventlog import LIBRARIES
    from .projections import SESSIONS

    return [SESSIONS, LIBRARIES]


@hookimpl
def cladelog_cli_commands() -> list[Any]:
    from .cli import graph

    return [graph]
