"""pytest fixtures for plugin authors (registered through the ``pytest11`` entry point).

Use them in a plugin's tests without any set-up::

    @pytest.fixture
    def cladelog_plugins():
        return ["my-plugin"]          # names of installed plugins to enable

    def test_something(cladelog_env):
        cladelog_env.append("my_plugin.thing_done", {"n": 1}, stream="things")
        assert cladelog_env.state("my_plugin.things") == {"count": 1}
        result = cladelog_env.cli("my-plugin", "show")
        assert result.exit_code == 0

``cladelog_env`` is a fresh deployment on a temporary SQLite log with the
plugins of ``cladelog_plugins`` (and the modules of ``cladelog_plugin_modules``)
enabled, settings from ``cladelog_settings``, and a fixed clock so that the
same test writes the same hashes on every machine.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

__all__ = ["CladelogEnv", "fixed_clock"]


def pytest_configure(config: pytest.Config) -> None:
    """``HYPOTHESIS_PROFILE=ci`` (as tox sets it) runs property tests derandomised, so a CI
    run is repeatable; any other registered profile name is loaded as given."""
    import os

    name = os.environ.get("HYPOTHESIS_PROFILE")
    if not name:
        return
    try:
        from hypothesis import settings
    except ImportError:  # hypothesis is a test extra
        return
    settings.register_profile("ci", derandomize=True, deadline=None)
    settings.load_profile(name)


def fixed_clock(start: int = 0) -> Any:
    """A deterministic ``recorded_at`` source: one second further at each batch."""
    counter = itertools.count(start)

    def clock() -> str:
        n = next(counter)
        return f"2026-01-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000000Z"

    return clock


class CladelogEnv:
    """A temporary deployment plus helpers to append, replay and run the CLI."""

    def __init__(
        self,
        root: Path,
        plugins: Sequence[str] = (),
        modules: Sequence[Any] = (),
        settings: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        from ..config import DeploymentConfig
        from ..deployment import Deployment

        self.root = root
        names = list(plugins) + [m.PLUGIN.name for m in modules]
        self.config_path = root / "cladelog.toml"
        self.config = DeploymentConfig.from_dict(
            {"store": "log.sqlite3", "plugins": names, "settings": dict(settings or {}),
             "actor": "test"},
            path=self.config_path,
        )
        self.config_path.write_text(self.config.to_toml("log.sqlite3"), encoding="utf-8")
        self.modules = list(modules)
        self.deployment = Deployment(self.config, plugins=modules, clock=fixed_clock(),
                                     create=True)

    def append(self, type: str, data: Any, *, stream: str = "test", **kw: Any) -> Any:
        """Append one event; return the recorded event."""
        from ..events import NewEvent

        return self.deployment.append([NewEvent(stream, type, data)], **kw)[-1]

    def replay(self, **kw: Any) -> Any:
        return self.deployment.replay(**kw)

    def state(self, projection: str) -> Any:
        return self.deployment.state(projection)

    def events(self, **kw: Any) -> list[Any]:
        return list(self.deployment.store.read(**kw))

    def cli(self, *args: str, input: str | None = None) -> Any:
        """Run ``cladelog ARGS`` against this deployment with click's CliRunner.

        Installed plugins (``cladelog_plugins``) and modules (``cladelog_plugin_modules``)
        both work: the modules are provided by name while the command runs
        (:func:`~cladelog.core.plugins.provide_plugins`). The command opens its own
        deployment on the same log; this fixture's ``deployment`` sees its appends on the
        next read."""
        from click.testing import CliRunner

        from ..cli import main
        from ..plugins import provide_plugins

        runner = CliRunner()
        # the command line opens the deployment file, which lists the modules' plugins by
        # name: provide the modules under those names while it runs
        with provide_plugins(self.modules):
            return runner.invoke(main, ["--config", str(self.config_path), *args],
                                 input=input, catch_exceptions=False)

    def close(self) -> None:
        self.deployment.close()


@pytest.fixture
def cladelog_plugins() -> list[str]:
    """Override to name the installed plugins your test enables."""
    return []


@pytest.fixture
def cladelog_plugin_modules() -> list[Any]:
    """Override to enable plugin modules that are not installed (e.g. defined in a test)."""
    return []


@pytest.fixture
def cladelog_settings() -> dict[str, dict[str, Any]]:
    """Override to give plugin settings, as in ``[settings.<plugin>]``."""
    return {}


@pytest.fixture
def cladelog_env(
    tmp_path: Path,
    cladelog_plugins: list[str],
    cladelog_plugin_modules: list[Any],
    cladelog_settings: dict[str, dict[str, Any]],
) -> Iterator[CladelogEnv]:
    """A fresh deployment with a temporary SQLite log; see the module docstring."""
    env = CladelogEnv(tmp_path, cladelog_plugins, cladelog_plugin_modules, cladelog_settings)
    try:
        yield env
    finally:
        env.close()
