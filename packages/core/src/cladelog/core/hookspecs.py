"""The core hook specifications: the stable interface between core and plugins.

A plugin is a module (found through the ``cladelog.plugins`` entry-point
group) that holds a :class:`~cladelog.core.plugins.PluginInfo` named
``PLUGIN`` and implements any of the hooks below with ``@hookimpl``. Every
hook is optional. Changing a signature here is a breaking change: it bumps
:data:`HOOKSPEC_VERSION`, and a plugin built for another version is refused
when a deployment enables it. See ``packages/core/docs/hooks.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import click

    from .deployment import Deployment
    from .gate import Vote
    from .projections import Projection
    from .registry import EventType

__all__ = ["HOOKSPEC_VERSION", "PROJECT", "CoreHookSpecs", "hookimpl", "hookspec"]

PROJECT = "cladelog"
#: The version of the hook interface defined here. Plugins declare the version they
#: were built for in ``PluginInfo.hookspec_version``.
HOOKSPEC_VERSION = 1

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class CoreHookSpecs:
    """The hooks core calls. All are optional for a plugin."""

    @hookspec(historic=True)
    def cladelog_add_hookspecs(self, pluginmanager: pluggy.PluginManager) -> None:
        """Add hook specs of the plugin's own, for its extenders.

        Called once for each plugin as it is registered. Example (fork-score's
        scoring terms)::

            @hookimpl
            def cladelog_add_hookspecs(pluginmanager):
                from . import hookspecs
                pluginmanager.add_hookspecs(hookspecs)
        """

    @hookspec
    def cladelog_configure(self, deployment: Deployment) -> None:
        """Receive the deployment once all enabled plugins are registered.

        ``deployment.settings(name)`` returns the plugin's validated settings
        object (an instance of ``PluginInfo.settings``). Raise
        :class:`~cladelog.core.errors.ConfigError` to refuse a configuration.
        """

    @hookspec
    def cladelog_event_types(self) -> Sequence[EventType]:
        """Return the event types this plugin writes (names, payload classes, upcasters)."""
        return ()

    @hookspec
    def cladelog_projections(self) -> Sequence[Projection]:
        """Return this plugin's projections (pure folds with a name and version)."""
        return ()

    @hookspec
    def cladelog_cli_commands(self) -> Sequence[click.Command]:
        """Return click commands or groups to add to the ``cladelog`` command line.

        Keep imports inside the command bodies: the CLI must start fast.
        """
        return ()

    @hookspec
    def cladelog_gate_vote(
        self, candidate: str, states: Mapping[str, Any], deployment: Deployment
    ) -> Vote | None:
        """Vote on promoting ``candidate``; ``states`` maps projection names to replayed states.

        Return a :class:`~cladelog.core.gate.Vote` (``allow``, ``warn`` or
        ``block`` with a one-line reason) or ``None`` to abstain. The vote depends on
        ``candidate``, ``states`` and the plugin's settings only: one ``states`` mapping
        serves every candidate of :meth:`Deployment.gate_all` (read it, never change it,
        and do not replay from here).
        """
