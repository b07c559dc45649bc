"""The ``fork-score`` cladelog plugin: hook implementations.

* event types: ``fork_score.branch_scored`` (:mod:`cladelog.fork_score.events`);
* projections: ``fork_score.branch_sets`` and ``fork_score.candidates``
  (:mod:`cladelog.fork_score.projections`);
* commands: the ``fork-score`` group (:mod:`cladelog.fork_score.cli`);
* gate vote: :func:`cladelog.fork_score.gate.gate_vote`;
* its own hook spec for term plugins, ``fork_score_terms``
  (:mod:`cladelog.fork_score.hookspecs`);
* the consensus plugin's ``consensus_audit``, as an optional hook implementation
  (:mod:`cladelog.fork_score.audit`);
* configuration: ``[settings.fork-score]`` (:mod:`cladelog.fork_score.settings`),
  checked when the deployment is configured.

Only light modules are imported here, because the ``cladelog`` command line
loads this module on every start; the rest is imported inside the hooks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cladelog.core import PluginInfo
from cladelog.core.hookspecs import hookimpl
from cladelog.fork_score import __version__
from cladelog.fork_score.settings import ForkScoreSettings

__all__ = [
    "PLUGIN",
    "cladelog_add_hookspecs",
    "cladelog_cli_commands",
    "cladelog_configure",
    "cladelog_event_types",
    "cladelog_gate_vote",
    "cladelog_projections",
    "consensus_audit",
]

PLUGIN = PluginInfo(
    name="fork-score",
    version=__version__,
    settings=ForkScoreSettings,
    description="ForkScore of (parent, child) battery results; branch sets; gate vote",
    gate_candidates="the branch_id or child_root of a scored branch (the latest scoring "
                    "decides); blocks one never scored",
)


@hookimpl
def cladelog_add_hookspecs(pluginmanager: Any) -> None:
    from cladelog.fork_score import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@hookimpl
def cladelog_configure(deployment: Any) -> None:
    """Check the term plugins' hook-spec versions, the terms and the weights file."""
    from cladelog.core import ConfigError
    from cladelog.fork_score.errors import ForkScoreError
    from cladelog.fork_score.hookspecs import HOOKSPEC_VERSION
    from cladelog.fork_score.service import scoring_context

    # the settings' ranges were checked as core read the table (their validators)
    for impl in deployment.pm.hook.fork_score_terms.get_hookimpls():
        declared = getattr(impl.plugin, "FORK_SCORE_HOOKSPEC_VERSION", HOOKSPEC_VERSION)
        if declared != HOOKSPEC_VERSION:
            raise ConfigError(
                f"plugins: {impl.plugin_name!r} was built for fork-score hook specs "
                f"v{declared}; this fork-score provides v{HOOKSPEC_VERSION}"
            )
    try:
        context = scoring_context(deployment)
    except ForkScoreError as exc:
        raise ConfigError(f"plugins: {exc}") from None
    try:
        context.load_weights()
    except ForkScoreError as exc:
        raise deployment.config.setting_error(PLUGIN.name, "weights_file", str(exc)) from None


@hookimpl
def cladelog_event_types() -> Sequence[Any]:
    from cladelog.fork_score.events import EVENT_TYPES

    return EVENT_TYPES


@hookimpl
def cladelog_projections() -> Sequence[Any]:
    from cladelog.fork_score.projections import PROJECTIONS

    return PROJECTIONS


@hookimpl
def cladelog_cli_commands() -> Sequence[Any]:
    from cladelog.fork_score.cli import fork_score

    return [fork_score]


@hookimpl
def cladelog_gate_vote(candidate: str, states: Mapping[str, Any], deployment: Any) -> Any:
    from cladelog.fork_score.gate import gate_vote

    settings = deployment.settings("fork-score")
    return gate_vote(candidate, states.get("fork_score.candidates", {}),
                     getattr(settings, "gate_unscored", "block"),
                     getattr(settings, "hard_flag_gating", True))


@hookimpl(optionalhook=True)
def consensus_audit(document: Mapping[str, Any]) -> dict[str, Any]:
    """The consensus plugin's audit replay (an optional hook: it exists only where
    consensus is enabled): the ForkScore of the audit inputs document."""
    from cladelog.fork_score.audit import audit

    return audit(document)
