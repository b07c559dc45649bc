"""Core's own plugin: the record of which plugins a deployment enabled."""

from __future__ import annotations

from typing import Any

import attrs

from .events import RecordedEvent
from .hookspecs import hookimpl
from .projections import Projection
from .registry import EventType

__all__ = ["PLUGINS_STREAM", "PluginToggled"]

PLUGINS_STREAM = "core.plugins"


@attrs.frozen
class PluginToggled:
    """Payload of ``core.plugin_enabled`` and ``core.plugin_disabled``."""

    name: str
    version: str


EVENT_TYPES = (
    EventType("core.plugin_enabled", PluginToggled,
              description="a deployment enabled a plugin (name and version)"),
    EventType("core.plugin_disabled", PluginToggled,
              description="a deployment stopped enabling a plugin"),
)


def _apply(state: dict[str, Any], event: RecordedEvent) -> dict[str, Any]:
    name = event.data["name"]
    state[name] = {
        "version": event.data["version"],
        "enabled": event.type == "core.plugin_enabled",
        "since": event.position,
    }
    return state


def _summary(state: dict[str, Any]) -> str:
    on = sorted(f"{n} {v['version']}" for n, v in state.items() if v["enabled"])
    return "enabled: " + (", ".join(on) or "none")


PLUGINS_PROJECTION = Projection(
    name="core.plugins",
    version=1,
    event_types=frozenset(t.name for t in EVENT_TYPES),
    initial={},
    apply=_apply,
    summary=_summary,
    description="which plugin versions were enabled, and from which position",
)


@hookimpl
def cladelog_event_types() -> tuple[EventType, ...]:
    from .tlog import EVENT_TYPES as TLOG_EVENT_TYPES

    return EVENT_TYPES + TLOG_EVENT_TYPES


@hookimpl
def cladelog_projections() -> tuple[Projection, ...]:
    from .tlog import TLOG_PROJECTION

    return (PLUGINS_PROJECTION, TLOG_PROJECTION)
