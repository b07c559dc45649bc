"""Make the test helpers importable; enable consensus with fork-score (its auditor)."""

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
    """consensus with fork-score (the auditor behind ``consensus_audit``)."""
    return ["fork-score", "consensus"]


@pytest.fixture
def world(cladelog_env: Any, tmp_path: Path) -> Any:
    """A deployment with a policy and four bonded validators v1..v4 (stake 10 each)."""
    from cli_helpers import make_world

    return make_world(cladelog_env, tmp_path)
