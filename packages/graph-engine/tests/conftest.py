"""Make ``ge_helpers`` importable under ``--import-mode=importlib``; make the plugin findable.

The plugin's entry point is ``graph-engine`` (pyproject.toml). An editable install made
from an older pyproject may still advertise it under another name; the autouse fixture
below adds the ``graph-engine`` entry point for the tests when it is missing, so the
deployment and CLI tests exercise the real entry-point path either way.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


@pytest.fixture(autouse=True)
def _graph_engine_entry_point(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    import importlib.metadata as md

    from cladelog.core import plugins

    real = plugins.installed_plugins
    found = real()
    if "graph-engine" not in found:
        ep = md.EntryPoint(name="graph-engine", value="cladelog.graph_engine.plugin",
                           group="cladelog.plugins")
        monkeypatch.setattr(plugins, "installed_plugins", lambda: {**real(), "graph-engine": ep})
    yield
