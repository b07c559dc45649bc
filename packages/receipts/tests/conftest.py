"""Shared fixtures of the receipts tests (helpers live in receipts_helpers.py)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from cladelog.receipts import Register
from receipts_helpers import Chain, Keys


@pytest.fixture
def cladelog_plugins() -> list[str]:
    return ["receipts"]


@pytest.fixture
def keys() -> Keys:
    return Keys()


@pytest.fixture
def reg(cladelog_env: Any, keys: Keys) -> Register:
    r = Register(cladelog_env.deployment)
    r.register_key(keys.oracle_vkey, "oracle")
    r.register_key(keys.log_vkey, "log")
    return r


@pytest.fixture
def chain(keys: Keys) -> Chain:
    return Chain(keys)


@pytest.fixture
def files(tmp_path: Path) -> Iterator[Any]:
    def write(name: str, content: Any) -> str:
        path = tmp_path / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            path.write_text(json.dumps(content), encoding="utf-8")
        return str(path)

    yield write

