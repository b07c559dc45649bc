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
