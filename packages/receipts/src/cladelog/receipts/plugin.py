"""Hook implementations of the receipts plugin (entry point ``receipts``)."""

from __future__ import annotations

from typing import Any

import click
from cladelog.core import PluginInfo, hookimpl

from . import __version__
from .settings import ON_MISMATCH, ReceiptsSettings

__all__ = ["PLUGIN", "cladelog_cli_commands", "cladelog_configure", "cladelog_event_types",
           "cladelog_projections"]


PLUGIN = PluginInfo(
    name="receipts", version=__version__, settings=ReceiptsSettings,
    description="signed oracle receipts, the gap-free register, Merkle proofs, Elo/SPRT checks",
)


@hookimpl
def cladelog_configure(deployment: Any) -> None:
    """The settings were checked as core read them (their types and validators)."""
    settings = deployment.settings("receipts")
    if settings.on_mismatch not in ON_MISMATCH:  # only a settings object made by hand
        raise deployment.config.setting_error(
            "receipts", "on_mismatch",
            f"must be one of {', '.join(map(repr, ON_MISMATCH))}, got {settings.on_mismatch!r}")


@hookimpl
def cladelog_event_types() -> list[Any]:
    from .events import EVENT_TYPES

    return list(EVENT_TYPES)


@hookimpl
def cladelog_projections() -> list[Any]:
    from .projections import REGISTER_PROJECTION

    return [REGISTER_PROJECTION]


@hookimpl
def cladelog_cli_commands() -> list[click.Command]:
    from .cli import receipts

    return [receipts]
