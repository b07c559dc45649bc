"""Same seed, same log and same projection digests, in any folder; another seed differs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import Result


def _digests(doc: dict[str, Any]) -> dict[str, str]:
    return {p["name"]: p["digest"] for p in doc["projections"]}


def test_same_seed_same_hashes_and_digests_other_seed_differs(
        demo_dir: Path, tmp_path: Path, demo_runner: Callable[..., Result],
        replayed: Callable[[Path], dict[str, Any]],
        hashes: Callable[[Path, Path], list[str]],
        sizes: Callable[[Path], tuple[int, int]]) -> None:
    again = tmp_path / "elsewhere" / "seed1-again"
    assert demo_runner(again, 1).exit_code == 0
    other = tmp_path / "seed2"
    assert demo_runner(other, 2).exit_code == 0

    for sub in ("a", "b", "c"):
        (tmp_path / sub).mkdir()
    first_hashes = hashes(demo_dir / "cladelog.toml", tmp_path / "a")
    again_hashes = hashes(again / "cladelog.toml", tmp_path / "b")
    other_hashes = hashes(other / "cladelog.toml", tmp_path / "c")
    # the whole log is compared, over 100 records: the graph session's ~50 records are
    # packed into two events by default, each hashed with the records it holds
    events, records = sizes(demo_dir / "cladelog.toml")
    assert len(first_hashes) == events and records > 100
    assert first_hashes == again_hashes
    assert other_hashes != first_hashes

    first, second, third = (replayed(d / "cladelog.toml") for d in (demo_dir, again, other))
    assert first["head"] == second["head"]
    assert _digests(first) == _digests(second)
    names = set(_digests(first))
    assert {"fork_score.branch_sets", "receipts.register", "lawv.state"} <= names
    changed = {n for n in names if _digests(first)[n] != _digests(third)[n]}
    assert {"fork_score.branch_sets", "receipts.register", "lawv.state"} <= changed

    # the report too: same seed, same page (charts included) once the folder is named alike
    pages = [(d / "report.html").read_text(encoding="utf-8").replace(str(d), "DIR")
             for d in (demo_dir, again, other)]
    assert pages[0] == pages[1]
    assert pages[0] != pages[2]


def test_replay_is_stable_across_repeated_replays(
        demo_dir: Path, replayed: Callable[[Path], dict[str, Any]]) -> None:
    one = replayed(demo_dir / "cladelog.toml")
    two = replayed(demo_dir / "cladelog.toml")
    assert _digests(one) == _digests(two)


def test_a_report_written_twice_is_the_same_page(demo_dir: Path, tmp_path: Path) -> None:
    from cladelog.demo.report import write_report

    config = demo_dir / "cladelog.toml"
    one, two = tmp_path / "one.html", tmp_path / "two.html"
    write_report(config, one, title="t")
    write_report(config, two, title="t")
    assert one.read_bytes() == two.read_bytes()
