"""Every package's public API is pinned: a change shows up as a snapshot diff in review.

Core pins its own in packages/core/tests/test_public_api.py; this covers the plugins
and the demo (rewrite with CLADELOG_UPDATE_API_SNAPSHOT=1 after an intended change,
and say so in the package's CHANGELOG).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cladelog.core.testing.api import check_snapshot

HERE = Path(__file__).parent / "api"
PACKAGES = {
    "fork-score": ["cladelog.fork_score", "cladelog.fork_score.hookspecs"],
    "receipts": ["cladelog.receipts"],
    "lawv": ["cladelog.lawv", "cladelog.lawv.commands"],
    "graph-engine": ["cladelog.graph_engine", "cladelog.graph_engine.hookspecs",
                     "cladelog.graph_engine.authoring"],
    "consensus": ["cladelog.consensus", "cladelog.consensus.hookspecs"],
    "demo": ["cladelog.demo"],
}


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_public_api_matches_the_snapshot(package: str) -> None:
    check_snapshot(PACKAGES[package], HERE / f"{package}.txt")
