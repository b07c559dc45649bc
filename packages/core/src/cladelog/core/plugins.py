"""Finding, checking and registering plugins.

Plugins are advertised by installed packages in the ``cladelog.plugins``
entry-point group, but only those a deployment names are loaded and
registered. Every check happens before anything is registered, so a bad
deployment fails early with one clear line.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterable, Iterator, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

import attrs
import pluggy

from .config import structure_settings
from .errors import ConfigError
from .hookspecs import HOOKSPEC_VERSION, PROJECT, CoreHookSpecs
from .locate import DEFAULT_CONFIG, EntryPoint, entry_points

if TYPE_CHECKING:
    import importlib.metadata as md

__all__ = [
    "ENTRY_POINT_GROUP",
    "LoadedPlugin",
    "PluginInfo",
    "installed_plugins",
    "load_plugins",
    "make_plugin_manager",
    "provide_plugins",
]

ENTRY_POINT_GROUP = "cladelog.plugins"


@attrs.frozen
class PluginInfo:
    """What a plugin module declares about itself as ``PLUGIN``.

    ``requires`` names plugins that must be enabled too; ``settings`` is an
    attrs class whose fields (with defaults) are the plugin's settings;
    ``hookspec_version`` is the core hook-spec version the plugin was built for;
    ``gate_candidates`` says which candidate ids its gate vote matches (shown by
    ``cladelog gate --help``; empty for a plugin that casts no gate vote).
    """

    name: str
    version: str
    requires: tuple[str, ...] = ()
    hookspec_version: int = HOOKSPEC_VERSION
    settings: type | None = None
    description: str = ""
    gate_candidates: str = ""


@attrs.frozen
class LoadedPlugin:
    info: PluginInfo
    module: Any
    settings: Any


_PROVIDED: contextvars.ContextVar[tuple[Any, ...]] = contextvars.ContextVar(
    "cladelog_provided_plugins", default=())


@contextlib.contextmanager
def provide_plugins(modules: Iterable[ModuleType | Any]) -> Iterator[None]:
    """Within the block, a deployment that enables a plugin by name finds it among
    ``modules`` (plugin modules with a ``PLUGIN``, not installed by entry point: a test's
    own, an embedding application's) before the installed ones. Nothing else changes:
    the deployment file still has to list the plugin. The ``cladelog_env`` fixture's
    ``cli()`` runs the command line inside this block, so ``cladelog_plugin_modules``
    and ``cladelog_env.cli()`` combine. Bound to the current thread (a context variable).
    """
    token = _PROVIDED.set(tuple(modules))
    try:
        yield
    finally:
        _PROVIDED.reset(token)


def installed_plugins() -> dict[str, EntryPoint | md.EntryPoint]:
    """Entry points of the ``cladelog.plugins`` group, by plugin name (read directly, not
    through :mod:`importlib.metadata`: :func:`cladelog.core.locate.entry_points`)."""
    return dict(entry_points(ENTRY_POINT_GROUP))


def _info_of(module: Any, where: str) -> PluginInfo:
    info = getattr(module, "PLUGIN", None)
    if not isinstance(info, PluginInfo):
        raise ConfigError(f"{where}: the plugin module defines no PLUGIN = PluginInfo(...)")
    return info


def load_plugins(
    names: Sequence[str],
    settings: Mapping[str, Mapping[str, Any]],
    extra: Iterable[ModuleType | Any] = (),
    *,
    source: str = DEFAULT_CONFIG,
) -> list[LoadedPlugin]:
    """Load and check the enabled plugins; nothing is registered yet.

    ``extra`` are plugin modules given directly (tests, embedding); they count
    as enabled under their ``PLUGIN.name``. A name listed in ``names`` is looked up
    among the modules of :func:`provide_plugins` first, then among the installed ones.
    Each plugin's settings table is read by
    :func:`~cladelog.core.config.structure_settings`; ``source`` names the deployment
    file in its errors.
    """
    modules: dict[str, Any] = {}
    for module in extra:
        info = _info_of(module, repr(module))
        modules[info.name] = module
    for module in _PROVIDED.get():
        info = _info_of(module, repr(module))
        if info.name in names and info.name not in modules:
            modules[info.name] = module
    wanted = [n for n in names if n not in modules]
    if wanted:
        available = installed_plugins()
        for name in wanted:
            ep = available.get(name)
            if ep is None:
                known = ", ".join(sorted(available)) or "none"
                raise ConfigError(f"plugins: unknown plugin {name!r} (installed: {known})")
            try:
                modules[name] = ep.load()
            except Exception as exc:  # a broken plugin package must not crash the CLI
                raise ConfigError(f"plugins: {name!r} failed to load ({exc})") from None
    loaded = []
    for name, module in modules.items():
        info = _info_of(module, f"plugins: {name!r}")
        if info.name != name:
            raise ConfigError(f"plugins: {name!r} declares the name {info.name!r}")
        if info.hookspec_version != HOOKSPEC_VERSION:
            raise ConfigError(
                f"plugins: {name!r} {info.version} was built for core hook specs "
                f"v{info.hookspec_version}; this core provides v{HOOKSPEC_VERSION}"
            )
        table = settings.get(name, {})
        loaded.append(LoadedPlugin(info, module, structure_settings(info.settings, table, name,
                                                                    source=source)))
    enabled = {p.info.name for p in loaded}
    for p in loaded:
        missing = [r for r in p.info.requires if r not in enabled]
        if missing:
            raise ConfigError(
                f"plugins: {p.info.name!r} requires {', '.join(map(repr, missing))}, "
                "which this deployment does not enable"
            )
    return loaded


def make_plugin_manager(plugins: Sequence[LoadedPlugin], builtin: Any) -> pluggy.PluginManager:
    """A pluggy manager with the core hook specs, core's built-in plugin and ``plugins``."""
    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(CoreHookSpecs)
    pm.register(builtin, name="core")
    for p in plugins:
        pm.register(p.module, name=p.info.name)
    pm.hook.cladelog_add_hookspecs.call_historic(kwargs={"pluginmanager": pm})
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise ConfigError(f"plugins: {exc}") from None
    return pm
