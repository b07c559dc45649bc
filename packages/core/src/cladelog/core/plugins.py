"""Finding, checking and registering plugins.

Plugins are advertised by installed packages in the ``cladelog.plugins``
entry-point group, but only those a deployment names are loaded and
registered. Every check happens before anything is registered, so a bad
deployment fails early with one clear line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

import attrs
import pluggy

from .errors import ConfigError
from .hookspecs import HOOKSPEC_VERSION, PROJECT, CoreHookSpecs

if TYPE_CHECKING:
    import importlib.metadata as md

__all__ = [
    "ENTRY_POINT_GROUP",
    "LoadedPlugin",
    "PluginInfo",
    "installed_plugins",
    "load_plugins",
    "make_plugin_manager",
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


def installed_plugins() -> dict[str, md.EntryPoint]:
    """Entry points of the ``cladelog.plugins`` group, by plugin name."""
    import importlib.metadata as md  # scanning distributions is slow: only when needed

    return {ep.name: ep for ep in md.entry_points(group=ENTRY_POINT_GROUP)}


def _info_of(module: Any, where: str) -> PluginInfo:
    info = getattr(module, "PLUGIN", None)
    if not isinstance(info, PluginInfo):
        raise ConfigError(f"{where}: the plugin module defines no PLUGIN = PluginInfo(...)")
    return info


def _structure_settings(info: PluginInfo, raw: Mapping[str, Any]) -> Any:
    if info.settings is None:
        if raw:
            raise ConfigError(f"settings.{info.name}: this plugin takes no settings")
        return None
    from .schema import PayloadError, structure

    try:
        return structure(dict(raw), info.settings, path=f"settings.{info.name}")
    except PayloadError as exc:
        raise ConfigError(str(exc)) from None


def load_plugins(
    names: Sequence[str],
    settings: Mapping[str, Mapping[str, Any]],
    extra: Iterable[ModuleType | Any] = (),
) -> list[LoadedPlugin]:
    """Load and check the enabled plugins; nothing is registered yet.

    ``extra`` are plugin modules given directly (tests, embedding); they count
    as enabled under their ``PLUGIN.name``.
    """
    modules: dict[str, Any] = {}
    for module in extra:
        info = _info_of(module, repr(module))
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
        loaded.append(LoadedPlugin(info, module, _structure_settings(info, settings.get(name, {}))))
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
