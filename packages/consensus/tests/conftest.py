import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


import pytest


@pytest.fixture
def cladelog_plugins() -> list[str]:
    """consensus with fork-score (the auditor behind ``consensus_audit``)."""
    return ["fork-score", "consensus"]
