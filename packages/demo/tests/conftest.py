"""Shared fixtures: demo runs are slow-ish (seconds), so each configuration runs once."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

# the test helpers (demo_chart_marks) importable under --import-mode=importlib
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

#: The small configuration the tests use: 16 candidates over 4 checkpoints.
SMALL = ("--candidates", "16")


def cladelog(*args: str) -> Result:
    """Run the ``cladelog`` command line in-process."""
    from cladelog.core.cli import main

    return CliRunner().invoke(main, list(args))


def run_demo(directory: Path, seed: int, *extra: str) -> Result:
    return cladelog("demo", "--dir", str(directory), "--seed", str(seed), *SMALL, *extra)


def replay_json(config: Path) -> dict[str, Any]:
    result = cladelog("--config", str(config), "replay", "--rebuild", "--json")
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.output)
    return doc


def event_hashes(config: Path, tmp: Path) -> list[str]:
    out = tmp / "export.jsonl"
    result = cladelog("--config", str(config), "export", str(out))
    assert result.exit_code == 0, result.output
    return [json.loads(line)["hash"] for line in out.read_text().splitlines() if line]


def log_size(config: Path) -> tuple[int, int]:
    """``(events, records)`` of the deployment's log: records count one per event, except
    that a graph-engine session event packing N engine records (``pack_records``, the
    default) counts N; each packed record is covered by its event's hash."""
    from cladelog.core import Deployment
    from cladelog.graph_engine import session_records

    with Deployment.open(config) as dep:
        streams = [e.stream for e in dep.store.read()]
        sessions = {s for s in streams if s.startswith("graph.")}
        records = sum(1 for s in streams if s not in sessions)
        records += sum(len(session_records(dep, s[len("graph."):])) for s in sessions)
    return len(streams), records


def cut_log(demo_dir: Path, tmp_path: Path, last: int) -> Path:
    """A copy of the demo's log up to position ``last`` (history as it stood then).

    Returns the new deployment file (all four plugins, its own SQLite store).
    """
    from cladelog.core import Deployment, DeploymentConfig
    from cladelog.core.store.base import event_from_json

    export = tmp_path / "all.jsonl"
    if not export.exists():
        done = cladelog("--config", str(demo_dir / "cladelog.toml"), "export", str(export))
        assert done.exit_code == 0, done.output
    lines = [json.loads(x) for x in export.read_text().splitlines() if x]
    kept = [event_from_json(doc, f"line {doc['position']}") for doc in lines
            if doc["position"] <= last]
    cut = tmp_path / f"cut-{last}"
    cut.mkdir()
    cfg = DeploymentConfig.from_dict(
        {"store": "log.sqlite3", "plugins": ["fork-score", "receipts", "lawv", "graph-engine"]},
        path=cut / "cladelog.toml")
    (cut / "cladelog.toml").write_text(cfg.to_toml("log.sqlite3"))
    with Deployment(cfg, create=True) as dep:
        dep.store.import_events(kept)
    return cut / "cladelog.toml"


@pytest.fixture(scope="session")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo with seed 1 in the small configuration, run once for the whole session."""
    directory = tmp_path_factory.mktemp("demo") / "seed1"
    result = run_demo(directory, 1)
    assert result.exit_code == 0, result.output
    return directory


@pytest.fixture(scope="session")
def demo_states(demo_dir: Path) -> dict[str, Any]:
    from cladelog.core import Deployment

    with Deployment.open(demo_dir / "cladelog.toml") as dep:
        return dep.states()


@pytest.fixture
def cli() -> Callable[..., Result]:
    return cladelog


@pytest.fixture
def demo_runner() -> Callable[..., Result]:
    """``demo_runner(directory, seed, *extra)`` runs the small demo."""
    return run_demo


@pytest.fixture
def replayed() -> Callable[[Path], dict[str, Any]]:
    return replay_json


@pytest.fixture
def hashes() -> Callable[[Path, Path], list[str]]:
    return event_hashes


@pytest.fixture
def sizes() -> Callable[[Path], tuple[int, int]]:
    """``sizes(config)``: ``(events, records)`` of a deployment's log (see log_size)."""
    return log_size


@pytest.fixture
def cut() -> Callable[[Path, Path, int], Path]:
    """``cut(demo_dir, tmp_path, last)``: the demo's log up to ``last`` in a new deployment."""
    return cut_log
