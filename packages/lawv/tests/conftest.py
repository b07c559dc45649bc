"""Make the Law V test helpers importable under ``--import-mode=importlib``; plugin fixtures."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


@pytest.fixture
def cladelog_plugins() -> list[str]:
    """The installed lawv plugin (through its real entry point)."""
    return ["lawv"]


@pytest.fixture
def cladelog_plugin_modules() -> list[Any]:
    """The receipts stand-in, given as a module (it is not installed)."""
    import lawv_receipts_standin

    return [lawv_receipts_standin]


@pytest.fixture
def lawv(cladelog_env: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A :class:`lawv_plugin_helpers.LawVHarness` over ``cladelog_env``, CLI included."""
    from lawv_plugin_helpers import LawVHarness, install_standin_entry_point

    install_standin_entry_point(monkeypatch)
    return LawVHarness(cladelog_env)
