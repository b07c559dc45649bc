"""`cladelog report`: the terminal summary, the page, and deployments with nothing to show."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

Cli = Callable[..., Result]


def test_report_prints_tables_and_writes_the_page(demo_dir: Path, cli: Cli,
                                                  tmp_path: Path) -> None:
    page = tmp_path / "out" / "r.html"
    result = cli("report", "--config", str(demo_dir / "cladelog.toml"), "--html", str(page))
    assert result.exit_code == 0, result.output
    for text in ("Law V checks", "check-3", "HALT", "Branch set checkpoint-4",
                 "ForkScore verdicts", "Gate:", f"report written to {page.resolve()}"):
        assert text in result.output, text
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>")
    # self-contained: no script, no external resource of any kind
    lowered = html.lower()
    assert "<script" not in lowered and "@import" not in lowered
    assert re.findall(r"\ssrc\s*=", lowered) == []
    links = re.findall(r'href\s*=\s*"([^"]*)"', lowered)
    assert links and all(v.startswith(("#", "data:")) for v in links), set(links)
    urls = re.findall(r"url\(([^)]*)\)", lowered)
    assert all(u.strip("'\" ").startswith("#") for u in urls), set(urls)


def test_report_uses_the_root_config_option(demo_dir: Path, cli: Cli, tmp_path: Path) -> None:
    page = tmp_path / "p.html"
    result = cli("--config", str(demo_dir / "cladelog.toml"), "report", "--html", str(page))
    assert result.exit_code == 0, result.output
    assert page.is_file()


@pytest.mark.parametrize("plugins", [(), ("fork-score", "receipts", "lawv")])
def test_report_on_a_deployment_without_plugin_data_exits_2(
        cli: Cli, tmp_path: Path, plugins: tuple[str, ...]) -> None:
    config = tmp_path / "cladelog.toml"
    args = [x for p in plugins for x in ("-p", p)]
    assert cli("--config", str(config), "init", *args).exit_code == 0
    page = tmp_path / "report.html"
    result = cli("report", "--config", str(config), "--html", str(page))
    assert result.exit_code == 2
    assert "nothing to report" in result.output
    assert "cladelog demo" in result.output
    assert not page.exists()


def test_report_without_a_deployment_file_exits_2(cli: Cli, tmp_path: Path) -> None:
    result = cli("report", "--config", str(tmp_path / "missing.toml"))
    assert result.exit_code == 2
    assert "no deployment file" in result.output


def test_report_finds_the_deployment_in_a_folder_above(
        cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLADELOG_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    assert cli("init", "-p", "receipts").exit_code == 0
    below = tmp_path / "a" / "b"
    below.mkdir(parents=True)
    monkeypatch.chdir(below)
    result = cli("report")  # the deployment above has nothing recorded yet
    assert result.exit_code == 2
    assert "nothing to report" in result.output
    assert not (below / "report.html").exists() and not (tmp_path / "report.html").exists()
    monkeypatch.chdir(tmp_path.parent)  # outside it: none found
    assert "no deployment file" in cli("report").output


def _one_error_line(result: Result) -> str:
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: "), lines[0]
    assert "internal error" not in lines[0] and "Traceback" not in result.output
    return lines[0]


def test_report_html_into_an_existing_folder_exits_2_naming_html(
        demo_dir: Path, cli: Cli, tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    result = cli("report", "--config", str(demo_dir / "cladelog.toml"), "--html", str(folder))
    assert result.exit_code == 2
    line = _one_error_line(result)
    assert line.startswith(f"error: --html: {folder} is a folder"), line
    assert list(folder.iterdir()) == []


def test_report_html_under_a_file_exits_2_naming_html(demo_dir: Path, cli: Cli,
                                                      tmp_path: Path) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    page = blocker / "r.html"
    result = cli("report", "--config", str(demo_dir / "cladelog.toml"), "--html", str(page))
    assert result.exit_code == 2
    line = _one_error_line(result)
    assert line.startswith(f"error: --html: cannot write {page}: {blocker} is not a folder")
    assert blocker.read_text() == "x"


def test_report_default_page_that_is_a_folder_exits_2(demo_dir: Path, cli: Cli,
                                                      tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(demo_dir, copy)
    (copy / "report.html").unlink()
    (copy / "report.html").mkdir()
    result = cli("report", "--config", str(copy / "cladelog.toml"))
    assert result.exit_code == 2
    line = _one_error_line(result)
    assert line.startswith(f"error: --html: {copy / 'report.html'} is a folder")
    assert "pass --html FILE" in line


def test_report_config_that_is_a_folder_exits_2_naming_config(cli: Cli,
                                                              tmp_path: Path) -> None:
    result = cli("report", "--config", str(tmp_path))
    assert result.exit_code == 2
    assert _one_error_line(result).startswith(f"error: --config: {tmp_path} is a folder")


def test_report_into_a_reader_that_goes_away_stops_quietly(demo_dir: Path,
                                                           tmp_path: Path) -> None:
    """`cladelog report | head -1`: exit 141 and no noise, like every cladelog command
    (rich's own broken-pipe handler exits 1, the code of a failed verification)."""
    import shutil
    import subprocess
    import sys

    exe = shutil.which("cladelog", path=str(Path(sys.executable).parent))
    assert exe is not None
    proc = subprocess.Popen([exe, "report", "--config", str(demo_dir / "cladelog.toml"),
                             "--html", str(tmp_path / "r.html")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 141, err
    assert err == b""


def test_report_json_and_progress(demo_dir: Path, cli: Cli, tmp_path: Path) -> None:
    import json

    page = tmp_path / "j.html"
    result = cli("report", "--config", str(demo_dir / "cladelog.toml"), "--html", str(page),
                 "--json", "--progress")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["html"] == str(page.resolve()) and page.is_file()
    assert doc["head_position"] > 0 and doc["checks"] and doc["branches"]
    assert "verifying the log and writing the report" in result.stderr
    quiet = cli("report", "--config", str(demo_dir / "cladelog.toml"), "--html", str(page))
    assert "verifying the log" not in quiet.stderr
