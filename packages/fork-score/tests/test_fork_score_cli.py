"""The fork-score CLI: output, exit codes 0/1/2 and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cladelog.fork_score.cli import fork_score
from click.testing import CliRunner, Result
from fork_score_docs import make_doc

FIVE_S = ("syntax", "semantics", "syllogism", "synthesis", "semiotics")


def write(tmp_path: Path, name: str, content: Any) -> str:
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_text(json.dumps(content), encoding="utf-8")
    return str(path)


def run(*args: str) -> Result:
    return CliRunner().invoke(fork_score, ["score", *args])


def assert_one_line_error(result: Result, fragment: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert fragment in lines[0]
    assert "Traceback" not in result.stderr
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)


def test_group_and_command_names() -> None:
    assert fork_score.name == "fork-score"
    assert "score" in fork_score.commands


def test_accept_exits_0_and_prints_sorted_json(tmp_path: Path) -> None:
    parent = write(tmp_path, "p.json", make_doc(0.5, organism_id="p"))
    child = write(tmp_path, "c.json", make_doc(0.5, {f"5S.{s}": 0.6 for s in FIVE_S}))
    result = run("--parent", parent, "--child", child)
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert result.stdout.strip() == json.dumps(data, sort_keys=True)  # one sorted object
    # delta_5S = 0.1, alpha = 1 -> 0.1
    assert data["verdict"] == "ACCEPT"
    assert data["score"] == pytest.approx(0.1)
    for key in ("score", "verdict", "breakdown", "flags", "deltas", "missing", "weights_id"):
        assert key in data
    assert len(data["breakdown"]) == 11


def test_marginal_exits_0(tmp_path: Path) -> None:
    parent = write(tmp_path, "p.json", make_doc(0.5))
    child = write(tmp_path, "c.json", make_doc(0.5))
    result = run("--parent", parent, "--child", child)
    assert result.exit_code == 0
    assert json.loads(result.stdout)["verdict"] == "MARGINAL"


def test_reject_exits_1(tmp_path: Path) -> None:
    parent = write(tmp_path, "p.json", make_doc(0.80))
    child = write(tmp_path, "c.json", make_doc(0.80, {"5S.syntax": 0.75}))
    result = run("--parent", parent, "--child", child)
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["verdict"] == "REJECT"
    assert data["flags"] == ["REGRESSION_5S:syntax"]
    assert result.stderr == ""



def test_child_dropping_neg_infinite_count_exits_1(tmp_path: Path) -> None:
    # The audit's pe.json / cdropneg.json: every rate 0.5 on both sides; finetuning's
    # efficiency goes mean 2.0 -> 3.0, +inf count 0 -> 5, and the -inf count (0 in
    # the parent) is no longer reported by the child.
    parent_doc = make_doc(0.5)
    parent_doc["batteries"]["5F"]["finetuning"].update(
        adaptation_efficiency_mean_finite=2.0, adaptation_efficiency_infinite_count=0,
        adaptation_efficiency_neg_infinite_count=0)
    child_doc = make_doc(0.5)
    child_doc["batteries"]["5F"]["finetuning"].update(
        adaptation_efficiency_mean_finite=3.0, adaptation_efficiency_infinite_count=5)
    result = run("--parent", write(tmp_path, "pe.json", parent_doc),
                 "--child", write(tmp_path, "cdropneg.json", child_doc))
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    # score = gamma * (0.1 * (3.0 - 2.0) + min(5 - 0, 1.0)) = 1.1, but the flag rejects
    assert data["score"] == pytest.approx(1.1)
    assert data["verdict"] == "REJECT"
    assert data["flags"] == ["MISSING_5F_adaptation_efficiency_neg_infinite_count"]
    assert data["missing"] == [{"battery": "5F", "sub_battery": "finetuning",
                                "absent_in": "child",
                                "metric": "adaptation_efficiency_neg_infinite_count"}]

def test_scalar_options_reach_the_formula(tmp_path: Path) -> None:
    parent = write(tmp_path, "p.json", make_doc(0.5))
    child = write(tmp_path, "c.json", make_doc(0.5))
    result = run(
        "--parent", parent, "--child", child,
        "--capital-delta", "0.2",
        "--selfmodel-calibration-gain", "0.4",
        "--audit-completeness", "1",
        "--memory-invalidation-count", "1",
        "--validator-diversity", "0.3",
    )  # fmt: skip
    assert result.exit_code == 1, result.output  # the score comes out negative, below
    b = json.loads(result.stdout)["breakdown"]
    assert b["minus_theta_x_capital_cost_penalty"] == pytest.approx(-0.1)  # -0.5 * 0.2
    assert b["delta_x_selfmodel_calibration_gain"] == pytest.approx(0.2)  # 0.5 * 0.4
    assert b["epsilon_x_audit_completeness"] == pytest.approx(0.3)  # 0.3 * 1
    assert b["minus_lambda_x_memory_invalidation"] == pytest.approx(-0.5)  # -0.5 * 1
    assert b["zeta_x_validator_diversity"] == 0.0  # zeta defaults to 0
    # 0.2 + 0.3 - 0.1 - 0.5 = -0.1 -> REJECT
    assert json.loads(result.stdout)["score"] == pytest.approx(-0.1)


def test_weights_file_is_applied(tmp_path: Path) -> None:
    parent = write(tmp_path, "p.json", make_doc(0.5))
    child = write(tmp_path, "c.json", make_doc(0.5))
    weights = write(tmp_path, "w.json", {"lambda": 0.01})
    result = run(
        "--parent", parent, "--child", child, "--weights", weights,
        "--memory-invalidation-count", "2",
    )  # fmt: skip
    data = json.loads(result.stdout)
    # -0.01 * 2 = -0.02 < 0 -> REJECT, exit 1
    assert data["breakdown"]["minus_lambda_x_memory_invalidation"] == pytest.approx(-0.02)
    assert data["weights"]["lambda"] == 0.01
    assert result.exit_code == 1


def test_unreadable_file_exits_2(tmp_path: Path) -> None:
    child = write(tmp_path, "c.json", make_doc(0.5))
    missing = str(tmp_path / "nope.json")
    assert_one_line_error(run("--parent", missing, "--child", child), f"{missing}: cannot read")


def test_directory_is_unreadable(tmp_path: Path) -> None:
    child = write(tmp_path, "c.json", make_doc(0.5))
    assert_one_line_error(run("--parent", str(tmp_path), "--child", child), "cannot read")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{not json", "invalid JSON"),
        ('{"batteries": {"5S": {"syntax": {"parse_pass_rate": NaN}}}}', "NaN is not valid JSON"),
        ("", "invalid JSON"),
        ("[" * 50000, "invalid JSON"),
    ],
)
def test_invalid_json_exits_2(tmp_path: Path, text: str, fragment: str) -> None:
    parent = write(tmp_path, "p.json", make_doc(0.5))
    child = write(tmp_path, "c.json", text)
    assert_one_line_error(run("--parent", parent, "--child", child), fragment)


def test_not_utf8_exits_2(tmp_path: Path) -> None:
    parent = write(tmp_path, "p.json", make_doc(0.5))
    child = tmp_path / "c.json"
    child.write_bytes(b'{"batteries": "\xff"}')
    assert_one_line_error(run("--parent", parent, "--child", str(child)), "not valid UTF-8")


def test_schema_error_exits_2_with_the_path(tmp_path: Path) -> None:
    parent = write(tmp_path, "p.json", make_doc(0.5))
    child = write(tmp_path, "c.json", make_doc(0.5, {"5F.finetuning": 1.2}))
    result = run("--parent", parent, "--child", child)
    assert_one_line_error(result, "child.5F.finetuning")
    assert result.stderr == (
        "error: child.5F.finetuning.adaptation_improvement_rate: must lie in [0, 1], got 1.2\n"
    )


def test_bad_weights_exit_2(tmp_path: Path) -> None:
    parent = write(tmp_path, "p.json", make_doc(0.5))
    child = write(tmp_path, "c.json", make_doc(0.5))
    weights = write(tmp_path, "w.json", {"lamda": 1.0})
    result = run("--parent", parent, "--child", child, "--weights", weights)
    assert_one_line_error(result, "weights.lamda: unknown weight")


@pytest.mark.parametrize(
    ("option", "value", "fragment"),
    [
        ("--audit-completeness", "2", "audit_completeness: must lie in [0, 1]"),
        ("--capital-delta", "abc", "--capital-delta: not a number"),
        ("--capital-delta", "nan", "capital_delta: must be finite"),
        ("--memory-invalidation-count", "1.5", "--memory-invalidation-count: not an integer"),
        ("--memory-invalidation-count", "-3", "memory_invalidation_count: must be a non-negative"),
    ],
)
def test_bad_scalar_options_exit_2(tmp_path: Path, option: str, value: str, fragment: str) -> None:
    parent = write(tmp_path, "p.json", make_doc(0.5))
    child = write(tmp_path, "c.json", make_doc(0.5))
    assert_one_line_error(run("--parent", parent, "--child", child, option, value), fragment)


def test_usage_errors_exit_2_on_one_line(tmp_path: Path) -> None:
    child = write(tmp_path, "c.json", make_doc(0.5))
    assert_one_line_error(run("--child", child), "--parent")
    assert_one_line_error(run("--parent"), "--parent")
    assert_one_line_error(run("--bogus"), "--bogus")


def test_help_exits_0() -> None:
    result = run("--help")
    assert result.exit_code == 0
    assert "--memory-invalidation-count" in result.stdout


def test_cli_import_stays_light() -> None:
    code = (
        "import sys, cladelog.fork_score.cli\n"
        "heavy = [m for m in sys.modules if m.startswith('cladelog.fork_score.')"
        " and m != 'cladelog.fork_score.cli']\n"
        "print(heavy)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
