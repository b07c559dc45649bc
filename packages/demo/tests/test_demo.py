"""`cladelog demo` end to end (small configuration): the story it must tell, and its checks."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

Cli = Callable[..., Result]


def test_demo_writes_deployment_keys_and_report(demo_dir: Path) -> None:
    for name in ("cladelog.toml", "cladelog.sqlite3", "report.html", "keys/oracle.key",
                 "keys/oracle.vkey", "keys/log.key", "keys/log.vkey"):
        assert (demo_dir / name).is_file(), name
    toml = (demo_dir / "cladelog.toml").read_text()
    for plugin in ("fork-score", "receipts", "lawv", "graph-engine"):
        assert f'"{plugin}"' in toml


def test_every_branch_set_competes_and_the_verdict_mix_is_complete(
        demo_states: dict[str, Any]) -> None:
    sets = demo_states["fork_score.branch_sets"]["sets"]
    # 16 candidates over 4 checkpoints: 4 branch sets of 4 branches
    assert sorted(sets) == ["checkpoint-1", "checkpoint-2", "checkpoint-3", "checkpoint-4"]
    assert all(len(branches) >= 4 for branches in sets.values())
    verdicts = {row["verdict"] for branches in sets.values() for row in branches.values()}
    assert verdicts == {"ACCEPT", "MARGINAL", "REJECT"}
    # every candidate has battery results scored: c01..c16
    names = sorted(row["branch_id"] for b in sets.values() for row in b.values())
    assert names == [f"c{i:02d}" for i in range(1, 17)]


def test_law_v_goes_continue_warning_halt_and_resumes(demo_states: dict[str, Any]) -> None:
    lawv = demo_states["lawv.state"]
    verdicts = [c["verdict"] for c in lawv["checks"]]
    assert verdicts == ["CONTINUE", "WARNING", "HALT", "CONTINUE"]
    # contract 8 was registered while the HALT window was open: it governs the next check only
    assert sorted(lawv["contracts"]) == ["7", "8"]
    assert [c["contract_version"] for c in lawv["checks"]] == [7, 7, 7, 8]
    halt = lawv["checks"][2]
    assert halt["result"]["r"] < 0.40 and "overfitting_suspected" in halt["result"]["flags"]
    assert [(r["check_id"], r["decision"]) for r in lawv["reviews"]] == [("check-3", "resume")]
    assert lawv["halt"]["blocked"] is False


def _identity(anchor: dict[str, Any]) -> tuple[Any, ...]:
    return anchor["name"], anchor["hash"], anchor["rating"], anchor["rating_uncertainty"]


def test_law_v_contracts_and_measurements_follow_the_seed(demo_states: dict[str, Any]) -> None:
    # /work/shared/seeds/lawv-halt-rule.txt: "a fixed anchor set of 6 external engines",
    # T = 36.9, "a transfer band of 51 Elo", HALT below 0.40, WARNING below 0.75, and
    # version 8 "does not change the weights, the uncertainty or the band"
    lawv = demo_states["lawv.state"]
    v7, v8 = (lawv["contracts"][v]["document"] for v in ("7", "8"))
    assert len(v7["anchors"]) == 6 and len({a["name"] for a in v7["anchors"]}) == 6
    assert (v7["T"], v7["transfer_band"], v7["halt_below"], v7["warn_below"]) == (
        36.9, 51, 0.40, 0.75)
    same = {k: v for k, v in v7.items() if k not in ("version", "date")}
    assert {k: v for k, v in v8.items() if k not in ("version", "date")} == same
    assert (v7["version"], v8["version"]) == (7, 8)
    # every check used that band, and every measurement the same six anchors
    assert [c["result"]["transfer_band"] for c in lawv["checks"]] == [51] * len(lawv["checks"])
    fixed = [_identity(a) for a in v7["anchors"]]
    assert len(lawv["measurements"]) == len(lawv["checks"]) + 1  # m-0 and one per check
    for measurement in lawv["measurements"].values():
        assert [_identity(a) for a in measurement["document"]["anchors"]] == fixed


def test_register_holds_every_kind_and_all_receipts_verify(demo_states: dict[str, Any],
                                                           demo_dir: Path, cli: Cli) -> None:
    register = demo_states["receipts.register"]
    kinds = {e["kind"] for e in register["entries"].values()}
    assert kinds == {"gain_test", "special_path", "epoch_change", "reversion"}
    passes = {e["pass"] for e in register["entries"].values() if e["kind"] == "gain_test"}
    assert passes == {True, False}
    assert all(not e["flags"] for e in register["entries"].values())
    assert register["epochs"] == {"arena-oracle": 1}
    assert len(register["reverted"]) == 1
    config = str(demo_dir / "cladelog.toml")
    chain = cli("--config", config, "verify", "--json")
    assert chain.exit_code == 0, chain.output
    assert json.loads(chain.output)["ok"] is True
    receipts = cli("--config", config, "receipts", "verify", "--json")
    assert receipts.exit_code == 0, receipts.output
    doc = json.loads(receipts.output)
    assert doc["ok"] is True and doc["entries"] == register["size"] and doc["checkpoints"] == 4


def _halt_candidate(states: dict[str, Any]) -> str:
    """An ACCEPT branch of the HALT round, so only Law V can block it."""
    rows = states["fork_score.branch_sets"]["sets"]["checkpoint-3"].values()
    return sorted(r["branch_id"] for r in rows if r["verdict"] == "ACCEPT")[0]


def test_gate_blocks_after_the_halt_and_allows_after_the_review(
        demo_dir: Path, demo_states: dict[str, Any], cli: Cli, tmp_path: Path,
        cut: Callable[[Path, Path, int], Path]) -> None:
    candidate = _halt_candidate(demo_states)
    review_at = demo_states["lawv.state"]["reviews"][0]["position"]
    halt_at = demo_states["lawv.state"]["checks"][2]["position"]
    before = cli("--config", str(cut(demo_dir, tmp_path, review_at - 1)), "gate",
                 candidate)
    assert before.exit_code == 1, before.output
    assert "block  lawv" in before.output and "check-3" in before.output
    assert f"{candidate}: BLOCKED" in before.output
    after = cli("--config", str(cut(demo_dir, tmp_path, review_at)), "gate", candidate)
    assert after.exit_code == 0, after.output
    assert "check-3 HALT was reviewed: resume" in after.output
    assert halt_at < review_at
    # and the demo itself asked the gate both times (its output lists BLOCKED then allowed)
    final = cli("--config", str(demo_dir / "cladelog.toml"), "gate", candidate)
    assert final.exit_code == 0, final.output


def test_demo_output_names_the_report_and_the_story(tmp_path: Path,
                                                    demo_runner: Callable[..., Result]) -> None:
    result = demo_runner(tmp_path / "d", 3)
    assert result.exit_code == 0, result.output
    report = (tmp_path / "d" / "report.html").resolve()
    assert f"report      {report}" in result.output
    assert "CONTINUE -> WARNING -> HALT -> CONTINUE" in result.output
    assert "BLOCKED" in result.output
    assert "chain and receipts ok" in result.output
    # the progress display's last state: 1 set-up step + 16 candidates + 4 checkpoints
    # + the graph session + the consensus scenario + the final replay and verification
    # = 24 steps
    assert "24/24 replay from scratch" in result.output


def test_demo_refuses_a_non_empty_folder_unless_forced(
        tmp_path: Path, demo_runner: Callable[..., Result]) -> None:
    target = tmp_path / "busy"
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    refused = demo_runner(target, 1)
    assert refused.exit_code == 2
    assert "not empty" in refused.output
    assert sorted(p.name for p in target.iterdir()) == ["notes.txt"]
    forced = demo_runner(target, 1, "--force")
    assert forced.exit_code == 0, forced.output
    assert (target / "notes.txt").read_text() == "mine"
    again = demo_runner(target, 1, "--force")  # replaces its own files, store included
    assert again.exit_code == 0, again.output


@pytest.mark.parametrize("args, message", [
    (("--candidates", "3"), "--candidates: must be an integer in [16, 100000]"),
    (("--seed", "-1"), "--seed: must be an integer in [0, 2**63)"),
])
def test_demo_bad_options_exit_2(tmp_path: Path, cli: Cli, args: tuple[str, ...],
                                 message: str) -> None:
    result = cli("demo", "--dir", str(tmp_path / "x"), *args)
    assert result.exit_code == 2
    assert message in result.output
    assert not (tmp_path / "x").exists()


def test_graph_session_answers_the_prompt(demo_states: dict[str, Any], demo_dir: Path,
                                          cli: Cli) -> None:
    sessions = demo_states["graph_engine.sessions"]["sessions"]
    assert list(sessions) == ["demo-promotion-question"]
    assert sessions["demo-promotion-question"]["status"] == "settled"
    replay = cli("--config", str(demo_dir / "cladelog.toml"), "graph", "replay",
                 "demo-promotion-question")
    assert replay.exit_code == 0, replay.output


def _one_error_line(result: Result, starts: str) -> str:
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output  # no progress bar, no traceback: one line
    assert lines[0].startswith(f"error: {starts}"), lines[0]
    return lines[0]


def test_demo_refuses_a_store_that_is_not_empty(demo_dir: Path, tmp_path: Path,
                                                demo_runner: Callable[..., Result]) -> None:
    store = demo_dir / "cladelog.sqlite3"
    before = store.stat().st_size
    result = demo_runner(tmp_path / "new" / "other", 1, "--store", str(store))
    assert result.exit_code == 2
    line = _one_error_line(result, "--store: ")
    assert "already holds" in line and "empty store" in line
    assert store.stat().st_size == before
    # nothing written, not even the folders --dir named: the same command can be re-run
    assert not (tmp_path / "new").exists()


def test_demo_refused_store_under_force_leaves_the_folder_as_it_was(
        demo_dir: Path, tmp_path: Path, demo_runner: Callable[..., Result]) -> None:
    target = tmp_path / "busy"
    first = demo_runner(target, 1)
    assert first.exit_code == 0, first.output
    before = {p.relative_to(target): p.read_bytes() for p in target.rglob("*") if p.is_file()}
    result = demo_runner(target, 1, "--force", "--store", str(demo_dir / "cladelog.sqlite3"))
    assert result.exit_code == 2
    _one_error_line(result, "--store: ")
    after = {p.relative_to(target): p.read_bytes() for p in target.rglob("*") if p.is_file()}
    assert after == before  # --force removes the demo's files only once the store is accepted


def test_demo_with_a_store_it_cannot_open_exits_2_and_writes_nothing(
        tmp_path: Path, demo_runner: Callable[..., Result]) -> None:
    target = tmp_path / "d"
    result = demo_runner(target, 1, "--store", "mysql://db.example/lumen")
    assert result.exit_code == 2
    line = _one_error_line(result, "--store: ")
    assert "unsupported URL 'mysql://db.example/lumen'" in line
    assert not target.exists()
    again = demo_runner(target, 1)  # no --force needed: the refused run left nothing behind
    assert again.exit_code == 0, again.output


@pytest.mark.parametrize("case", ["store is a folder", "store under a file",
                                  "dir under a file"])
def test_demo_bad_paths_exit_2_with_one_line_and_leave_nothing(
        tmp_path: Path, demo_runner: Callable[..., Result], case: str) -> None:
    (tmp_path / "afile").write_text("not a folder")
    (tmp_path / "afolder").mkdir()
    target = tmp_path / "new" / "d"
    option, store, message = {
        "store is a folder": ("--store", tmp_path / "afolder",
                              f"{tmp_path / 'afolder'} is a folder"),
        "store under a file": ("--store", tmp_path / "afile" / "log.sqlite3",
                               f"{tmp_path / 'afile'} is not a folder"),
        "dir under a file": ("--dir", None, f"{tmp_path / 'afile'} is not a folder"),
    }[case]
    if option == "--dir":
        target = tmp_path / "afile" / "d"
    extra = ("--store", str(store)) if store is not None else ()
    result = demo_runner(target, 1, *extra)
    assert result.exit_code == 2, result.output
    line = _one_error_line(result, f"{option}: ")
    assert message in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "afolder"]
    assert list((tmp_path / "afolder").iterdir()) == []
    assert (tmp_path / "afile").read_text() == "not a folder"


def test_demo_relative_store_is_relative_to_the_current_folder(
        tmp_path: Path, demo_runner: Callable[..., Result],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = demo_runner(Path("x5"), 1, "--store", "d1/log.sqlite3")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "d1" / "log.sqlite3").is_file()
    assert not (tmp_path / "x5" / "d1").exists()
    # the deployment file names the store absolutely, so it works from any folder
    toml = (tmp_path / "x5" / "cladelog.toml").read_text()
    assert f'store = "{tmp_path / "d1" / "log.sqlite3"}"' in toml
    monkeypatch.chdir(tmp_path / "x5")
    from cladelog.core import Deployment

    with Deployment.open(tmp_path / "x5" / "cladelog.toml") as dep:
        assert dep.store.head().position == int(
            result.output.split("log         ")[1].split()[0])


def test_demo_help_says_how_a_relative_store_is_read(cli: Cli) -> None:
    result = cli("demo", "--help")
    assert result.exit_code == 0
    assert "relative to the current folder" in " ".join(result.output.split())
