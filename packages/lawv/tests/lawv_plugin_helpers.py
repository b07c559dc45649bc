"""A harness for the lawv plugin tests: register entries, files, the CLI, replays.

The CLI loads plugins by name from the ``cladelog.plugins`` entry points, and the
receipts stand-in is not installed. :func:`install_standin_entry_point` adds an
entry point named ``receipts`` that points at ``lawv_receipts_standin`` (the
tests folder is on ``sys.path``) by monkeypatching
``cladelog.core.plugins.installed_plugins``; the real lawv entry point is used
as installed. Everything else goes through the ordinary deployment file.
"""

from __future__ import annotations

import importlib.metadata as md
import json
from pathlib import Path
from typing import Any

import pytest
from lawv_helpers import ONE_ANCHOR, contract, gain, measurement, plain

__all__ = [
    "ONE_ANCHOR",
    "LawVHarness",
    "contract",
    "gain",
    "install_standin_entry_point",
    "measurement",
    "one_anchor_measurement",
    "plain",
]

STATE = "lawv.state"


def install_standin_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``receipts`` resolve to the stand-in module for the CLI's plugin loading."""
    import cladelog.core.plugins as plugins

    real = plugins.installed_plugins

    def patched() -> dict[str, md.EntryPoint]:
        found = dict(real())
        found["receipts"] = md.EntryPoint(name="receipts", value="lawv_receipts_standin",
                                          group=plugins.ENTRY_POINT_GROUP)
        return found

    monkeypatch.setattr(plugins, "installed_plugins", patched)


def one_anchor_measurement(ident: str, delta: float, h: float = 10.0) -> dict[str, Any]:
    """A one-anchor measurement: A = 3000 + delta exactly (one anchor, any weight)."""
    return measurement(ident, [delta], [h], ONE_ANCHOR)


class LawVHarness:
    """Drive a lawv deployment: append register entries, write files, run the CLI."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.dep = env.deployment
        self.root: Path = env.root
        self._files = 0

    # -- the log ---------------------------------------------------------------------
    def entry(self, entry: dict[str, Any], **extra: Any) -> Any:
        """Append a register entry as the receipts plugin would."""
        data = {"seq": entry["seq"], "kind": entry["kind"], "entry": entry, **extra}
        return self.env.append("receipts.entry_recorded", data, stream="receipts.register")

    def entries(self, *entries: dict[str, Any]) -> None:
        for e in entries:
            self.entry(e)

    def events(self) -> list[Any]:
        return self.env.events()

    def state(self) -> Any:
        return self.dep.state(STATE)

    def fresh_state(self) -> Any:
        """The state replayed from position 0, ignoring and not touching checkpoints."""
        result = self.dep.replay(rebuild=True, save=False)
        return next(p.state for p in result.projections if p.name == STATE)

    def gate(self) -> Any:
        return self.dep.gate("candidate")

    # -- files and the CLI -----------------------------------------------------------
    def write(self, doc: Any, name: str | None = None) -> str:
        """Write ``doc`` as JSON into the test folder; return the path."""
        self._files += 1
        path = self.root / (name or f"doc{self._files}.json")
        text = doc if isinstance(doc, str) else json.dumps(doc)
        path.write_text(text, encoding="utf-8")
        return str(path)

    def cli(self, *args: str) -> Any:
        """Run ``cladelog --config <deployment> ARGS`` (click keeps stderr apart)."""
        from cladelog.core.cli import main
        from click.testing import CliRunner

        return CliRunner().invoke(main, ["--config", str(self.env.config_path), *args],
                                  catch_exceptions=False)
