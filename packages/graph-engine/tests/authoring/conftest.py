"""Shared fixtures of the authoring tests (``--import-mode=importlib``: fixtures, no imports)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).parent.parent / "fixtures"


@pytest.fixture
def load_fixture() -> Callable[[str], tuple[dict[str, Any], dict[str, Any]]]:
    """``load(name) -> (scenario input, expected output)`` from tests/fixtures."""

    def load(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
        scenario = json.loads((FIXTURES / f"{name}.input.json").read_text())
        expected = json.loads((FIXTURES / f"{name}.expected.json").read_text())
        return scenario, expected

    return load


@pytest.fixture
def records() -> list[tuple[str, dict[str, Any]]]:
    """A record list; pass ``records.append`` wrapped as a sink."""
    return []


def _sink_of(store: list[tuple[str, dict[str, Any]]]) -> Callable[[str, dict[str, Any]], None]:
    return lambda kind, data: store.append((kind, data))


@pytest.fixture
def sink_of() -> Callable[[list[tuple[str, dict[str, Any]]]], Callable[[str, dict[str, Any]],
                                                                         None]]:
    """``sink_of(list)`` -> a record sink appending ``(type, data)`` to the list."""
    return _sink_of


class SplitContent:
    """Deterministic content functions driven by a split table, counting every call."""

    def __init__(self, split: dict[str, list[str]]) -> None:
        self.split = split
        self.calls: dict[str, int] = {"eval": 0, "expand": 0, "answer": 0, "rollup": 0}

    def eval_fn(self, seg: Any) -> dict[str, bool]:
        self.calls["eval"] += 1
        return {"atomic": seg.label not in self.split}

    def expand_fn(self, seg: Any) -> list[dict[str, str]]:
        self.calls["expand"] += 1
        return [{"name": n} for n in self.split.get(seg.label, [])]

    def answer_fn(self, seg: Any) -> str:
        self.calls["answer"] += 1
        return f"ans({seg.label})"

    def rollup_fn(self, seg: Any, kids: list[Any]) -> str:
        self.calls["rollup"] += 1
        return f"{seg.label}[{','.join(kids)}]"

    def total(self) -> int:
        return sum(self.calls.values())


@pytest.fixture
def split_content() -> Callable[[dict[str, list[str]]], SplitContent]:
    """``split_content(table)`` -> counting deterministic content functions."""
    return SplitContent


@pytest.fixture
def loop_seed() -> dict[str, Any]:
    """Two nodes and one root segment labelled ``R`` at depth 0."""
    return {
        "nodes": [{"_id": "start", "label": "start"}, {"_id": "goal", "label": "goal"}],
        "segments": [{"_id": "root", "originNode": "start", "targetNode": "goal", "depth": 0,
                      "label": "R"}],
    }
