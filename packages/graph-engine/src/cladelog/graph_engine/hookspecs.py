"""The graph-engine plugin's own hook spec, for plugins that contribute providers.

Hook-spec version: :data:`HOOKSPEC_VERSION` (**1**). The signature below is a public
contract; changing it bumps the version.

Writing a provider plugin
-------------------------
A provider plugin is an ordinary cladelog plugin that declares
``requires=("graph-engine",)`` (the graph-engine plugin adds this spec when it is
registered) and implements::

    from cladelog.core import hookimpl

    def labeled(call):                      # call: cladelog.graph_engine.ProviderCall
        return {"$$_id": call.object_id, "Labeled": True}

    @hookimpl
    def graph_engine_providers():
        return {"Text::labeled": labeled}

Every enabled plugin's providers are collected when a session starts
(:class:`cladelog.graph_engine.sessions.Session`); two plugins offering the same name is a
configuration error, and providers passed to the session directly override plugin ones.
A provider that raises is recorded as an error fact and a ``provider_error`` record (in
the session's log); it never stops the session.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cladelog.core.hookspecs import hookspec

__all__ = ["HOOKSPEC_VERSION", "graph_engine_providers"]

#: Version of the hook specs in this module.
HOOKSPEC_VERSION = 1


@hookspec
def graph_engine_providers() -> Mapping[str, Callable[..., Any]]:  # type: ignore[empty-body]
    """Return ``{"Ns::fn": provider}`` for the graph engine (hook-spec v1).

    A provider takes one :class:`~cladelog.graph_engine.ProviderCall` and returns a mutation
    template, None, or an awaitable of either. Called with no arguments each time a session
    starts; keep it cheap and free of side effects.
    """
