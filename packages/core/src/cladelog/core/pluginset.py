"""Which plugins a deployment enables: editing ``cladelog.toml`` and checking hook names.

``cladelog plugins enable NAME`` and ``disable NAME`` change the ``plugins`` list of the
deployment file in place with tomlkit, so that the operator's comments, order and
formatting stay as they were, and write the file atomically (a temporary file in the
same folder, then a rename): a crash leaves the old file or the new one, never half of
one. The new plugin set is checked as the deployment would check it on opening
(:func:`cladelog.core.plugins.load_plugins`: installed, loadable, ``requires``
satisfied, settings valid) before anything is written.

:func:`unknown_hooks` finds hook implementations whose name matches no hook spec (a
misspelt ``cladelog_projection``), which pluggy would only refuse when the deployment is
opened; ``cladelog plugins`` warns about them when it lists the plugins.
"""

from __future__ import annotations

import os
import tempfile
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .fields import did_you_mean

__all__ = ["edit_plugins", "unknown_hooks"]


def edit_plugins(path: Path, names: Iterable[str], *, enable: bool) -> tuple[list[str], list[str]]:
    """Enable (or disable) ``names`` in the deployment file ``path``; return the names
    that changed and the plugin list now written. ConfigError (nothing written) for a
    plugin that is not installed, a set whose ``requires`` are not met (a plugin
    another enabled one requires cannot be disabled), or a file that is not a
    deployment file."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    from .config import DeploymentConfig
    from .plugins import installed_plugins, load_plugins

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(
            f"{path}: cannot read the deployment file ({getattr(exc, 'strerror', None) or exc})"
        ) from None
    current = DeploymentConfig.load(path)  # its own errors, worded as on opening
    try:
        doc = tomlkit.parse(text)
    except TOMLKitError as exc:  # tomllib read it, tomlkit did not: say so, write nothing
        raise ConfigError(f"{path}: cannot edit the deployment file ({exc})") from None
    enabled = list(current.plugins)
    wanted = list(dict.fromkeys(names))
    installed = installed_plugins()
    changed: list[str] = []
    if enable:
        for name in wanted:
            if name not in installed:
                raise ConfigError(
                    f"NAME: {name!r} is not an installed plugin"
                    f"{_suggestion(name, installed)} (installed: "
                    f"{', '.join(sorted(installed)) or 'none'})"
                )
            if name not in enabled:
                enabled.append(name)
                changed.append(name)
    else:
        for name in wanted:
            if name not in enabled:
                continue
            enabled.remove(name)
            changed.append(name)
        for other in enabled:
            needed = [r for r in _requires(installed, other) if r in changed]
            if needed:
                raise ConfigError(
                    f"NAME: {', '.join(map(repr, needed))} is required by "
                    f"{other!r}, which stays enabled (disable {other!r} "
                    "too, or first)"
                )
    if not changed:
        return [], enabled
    # the new set, checked as opening the deployment checks it (requires, settings, ...)
    try:
        load_plugins(enabled, current.settings)
    except ConfigError as exc:
        raise ConfigError(
            f"{exc} (enable them together: cladelog plugins enable "
            f"{' '.join(_with_requires(enabled, changed))})"
        ) from None
    array = doc.get("plugins")
    if array is None:
        doc["plugins"] = enabled
    elif enable:
        for name in changed:
            array.append(name)
    else:
        for i in reversed(range(len(array))):
            if array[i] in changed:
                del array[i]
        _comment_out_settings(doc, changed)
    new_text = tomlkit.dumps(doc)
    DeploymentConfig.from_dict(tomllib.loads(new_text), path=path)  # as it will be read
    _write_atomically(path, new_text)
    return changed, enabled


def _requires(installed: Mapping[str, Any], name: str) -> tuple[str, ...]:
    """What plugin ``name`` declares it requires (nothing when it cannot be loaded: the
    check of the whole set then names that)."""
    try:
        info = getattr(installed[name].load(), "PLUGIN", None)
    except Exception:
        return ()
    requires = getattr(info, "requires", ())
    return tuple(requires) if isinstance(requires, tuple | list) else ()


def _with_requires(enabled: list[str], changed: list[str]) -> list[str]:
    """The plugins to name in the hint: what the ones asked for require, then them."""
    from .plugins import installed_plugins

    installed = installed_plugins()
    out: list[str] = []
    for name in changed:
        out += [r for r in _requires(installed, name) if r not in out and r not in enabled]
    return out + [n for n in changed if n not in out]


def _comment_out_settings(doc: Any, names: list[str]) -> None:
    """A disabled plugin's ``[settings.NAME]`` table (the file may hold settings only of
    enabled plugins) becomes comments at the end of the file, so that nothing the
    operator wrote is lost and enabling it again is a matter of removing the '#'s."""
    import tomlkit

    settings = doc.get("settings")
    if settings is None:
        return
    for name in names:
        if name not in settings:
            continue
        header = f"[{tomlkit.key(['settings', name]).as_string()}]"
        lines = [header, *tomlkit.dumps(settings[name]).strip().splitlines()]
        del settings[name]
        doc.add(tomlkit.nl())
        doc.add(
            tomlkit.comment(f"{name} is disabled ('cladelog plugins disable'); its settings, kept:")
        )
        for line in lines:
            doc.add(tomlkit.comment(line))
    if not settings:
        del doc["settings"]


def _write_atomically(path: Path, text: str) -> None:
    """Write ``text`` over ``path`` (through a symlink, to the file it names) by a rename of
    a finished temporary file, keeping the file's permissions."""
    path = path.resolve()
    folder = path.parent
    try:
        mode = path.stat().st_mode & 0o7777
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(tmp, mode)
            os.replace(tmp, path)
        except BaseException:
            with _suppress():
                os.unlink(tmp)
            raise
    except OSError as exc:
        raise ConfigError(
            f"{path}: cannot write the deployment file ({exc.strerror or exc})"
        ) from None


def _suppress(*errors: type[BaseException]) -> Any:
    import contextlib

    return contextlib.suppress(*(errors or (OSError,)))


def _suggestion(name: str, known: Iterable[str]) -> str:
    hint = did_you_mean(name, known, list_known=False)
    return f" {hint}" if hint else ""


def unknown_hooks(modules: Mapping[str, Any]) -> dict[str, list[tuple[str, str]]]:
    """Per plugin, its hook implementations whose name matches no hook spec (core's, or
    one a plugin among ``modules`` adds), each with a did-you-mean suffix ('' when no
    spec name is close). ``modules``: plugin name -> loaded plugin module."""
    import pluggy

    from . import builtin
    from .hookspecs import PROJECT, CoreHookSpecs

    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(CoreHookSpecs)
    pm.register(builtin, name="core")
    for name, module in modules.items():
        try:
            pm.register(module, name=name)
        except Exception:  # a plugin pluggy refuses outright: opening it says why
            continue
    with _suppress(Exception):  # a broken spec-adding hook: opening the deployment says why
        pm.hook.cladelog_add_hookspecs.call_historic(kwargs={"pluginmanager": pm})
    specs = sorted(
        n for n, caller in vars(pm.hook).items() if getattr(caller, "spec", None) is not None
    )
    marker = f"{PROJECT}_impl"
    found: dict[str, list[tuple[str, str]]] = {}
    for name, module in modules.items():
        marks = {
            n: getattr(getattr(module, n), marker) or {}
            for n in dir(module)
            if hasattr(getattr(module, n, None), marker)
        }
        # an optional hook implements a spec that may not be there (pluggy lets it be)
        impls = sorted(
            {m.get("specname") or n for n, m in marks.items() if not m.get("optionalhook")}
        )
        for impl in impls:
            caller = getattr(pm.hook, impl, None)
            if getattr(caller, "spec", None) is None:
                found.setdefault(name, []).append((impl, _suggestion(impl, specs)))
    return found
