"""The report's gate section gives the same answer as ``cladelog gate CANDIDATE``.

Issue 9: the report shows "what the gate blocks and why (the same answer
``cladelog gate CANDIDATE`` gives on the command line, exit 0 allowed, 1
blocked)". Each test asks the command line about every candidate and reads
the written page back (its tables), on the finished demo and on a copy of the
demo's log cut just before the human review, while the Law V HALT still holds.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from click.testing import Result

Cli = Callable[..., Result]
GATE_HEADERS = ["candidate", "gate", "votes (as cladelog gate CANDIDATE prints them)"]


class _Tables(HTMLParser):
    """Every ``<table>`` of a page as rows of cell texts (``<br>`` becomes a newline)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "br" and self._cell is not None:
            self._cell.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _tables(html: str) -> list[list[list[str]]]:
    parser = _Tables()
    parser.feed(html)
    return parser.tables


def _page_gate(html: str) -> dict[str, tuple[str, list[str]]]:
    """candidate -> (gate pill, vote lines) from the page's full gate table (the last one)."""
    tables = [t for t in _tables(html) if t and t[0] == GATE_HEADERS]
    assert len(tables) == 2, "expected the 'blocked now' table and the full table"
    return {row[0]: (row[1], [line.strip() for line in row[2].split("\n")])
            for row in tables[-1][1:]}


def _cli_gate(cli: Cli, config: Path, candidate: str) -> tuple[int, dict[str, Any]]:
    result = cli("--config", str(config), "gate", candidate, "--json")
    assert result.exit_code in (0, 1), result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return result.exit_code, doc


def _candidates(config: Path) -> dict[str, str]:
    """Every scored branch and its ForkScore verdict, read from the replayed state."""
    from cladelog.core import Deployment

    with Deployment.open(config) as dep:
        sets = dep.state("fork_score.branch_sets")["sets"]
    return {row["branch_id"]: row["verdict"] for rows in sets.values() for row in rows.values()}


def _report(cli: Cli, config: Path, page: Path) -> tuple[Result, str]:
    result = cli("report", "--config", str(config), "--html", str(page))
    assert result.exit_code == 0, result.output
    return result, page.read_text(encoding="utf-8")


def _assert_page_matches_cli(cli: Cli, config: Path, html: str,
                             verdicts: dict[str, str]) -> dict[str, int]:
    shown = _page_gate(html)
    assert sorted(shown) == sorted(verdicts)
    codes = {}
    for candidate in verdicts:
        code, doc = _cli_gate(cli, config, candidate)
        codes[candidate] = code
        pill, votes = shown[candidate]
        # exit 0 allowed, 1 blocked: the page says the same
        assert pill == ("allowed" if code == 0 else "BLOCKED"), candidate
        assert doc["allowed"] is (code == 0)
        # and every vote, in the command's order, with the command's reason
        assert votes == [f"{v['decision']} {v['plugin']}: {v['reason']}" for v in doc["votes"]]
    return codes


def test_report_gate_is_the_gate_command_after_the_review(
        demo_dir: Path, cli: Cli, tmp_path: Path) -> None:
    config = demo_dir / "cladelog.toml"
    verdicts = _candidates(config)
    result, html = _report(cli, config, tmp_path / "after.html")
    codes = _assert_page_matches_cli(cli, config, html, verdicts)
    # after the review Law V allows again, so exactly the REJECT branches stay blocked
    blocked = sorted(c for c, code in codes.items() if code == 1)
    assert blocked == sorted(c for c, v in verdicts.items() if v == "REJECT")
    assert blocked and len(blocked) < len(verdicts)
    n_allowed = len(verdicts) - len(blocked)
    assert f"{n_allowed} allowed, {len(blocked)} blocked" in html
    assert f"Gate: {n_allowed} of {len(verdicts)} candidate(s) allowed" in result.output
    # the halt is shown as reviewed, the gate open again
    (halt,) = [t for t in _tables(html) if t and t[0][:4] == ["halt", "recorded", "R",
                                                              "gate now"]]
    assert halt[1][0] == "check-3" and halt[1][3] == "allowed" and "resume" in halt[1][4]


def test_report_gate_is_the_gate_command_while_the_halt_holds(
        demo_dir: Path, demo_states: dict[str, Any], cli: Cli, tmp_path: Path,
        cut: Callable[[Path, Path, int], Path]) -> None:
    review_at = demo_states["lawv.state"]["reviews"][0]["position"]
    config = cut(demo_dir, tmp_path, review_at - 1)
    verdicts = _candidates(config)
    result, html = _report(cli, config, tmp_path / "halted.html")
    codes = _assert_page_matches_cli(cli, config, html, verdicts)
    # an unreviewed HALT blocks every promotion, whatever ForkScore says
    assert set(codes.values()) == {1}
    for _, votes in _page_gate(html).values():
        assert any(v.startswith("block lawv:") and "check-3" in v for v in votes), votes
    assert f"0 allowed, {len(verdicts)} blocked" in html
    assert f"Gate: 0 of {len(verdicts)} candidate(s) allowed" in result.output
    (halt,) = [t for t in _tables(html) if t and t[0][:4] == ["halt", "recorded", "R",
                                                              "gate now"]]
    assert halt[1][0] == "check-3" and halt[1][3] == "BLOCKED"
    assert halt[1][4] == "no review yet"


def _cli_lawv_vote(cli: Cli, config: Path, candidate: str) -> tuple[str, str]:
    _, doc = _cli_gate(cli, config, candidate)
    (vote,) = [v for v in doc["votes"] if v["plugin"] == "lawv"]
    return vote["decision"], vote["reason"]


def test_report_law_v_vote_is_the_gate_commands(
        demo_dir: Path, demo_states: dict[str, Any], cli: Cli, tmp_path: Path,
        cut: Callable[[Path, Path, int], Path]) -> None:
    from cladelog.core import Deployment
    from cladelog.demo.report_data import collect

    review_at = demo_states["lawv.state"]["reviews"][0]["position"]
    for config in (demo_dir / "cladelog.toml", cut(demo_dir, tmp_path, review_at - 1)):
        with Deployment.open(config) as dep:
            data = collect(dep)
        assert data.lawv_vote == _cli_lawv_vote(cli, config, data.gate[0].candidate)
    # the cut log holds the HALT: lawv blocks (the last vote read was the cut's)
    assert data.lawv_vote is not None and data.lawv_vote[0] == "block"


def test_report_law_v_vote_without_any_candidate(cli: Cli, tmp_path: Path) -> None:
    """Only Law V recorded something (a GAP check): no candidate to read the vote from."""
    from cladelog.core import Deployment
    from cladelog.demo.report_data import collect

    config = tmp_path / "cladelog.toml"
    assert cli("--config", str(config), "init", "-p", "receipts", "-p", "lawv").exit_code == 0
    contract = tmp_path / "contract.json"
    contract.write_text(json.dumps({
        "version": 7, "date": "2026-10-16", "T": 36.9, "transfer_band": 51.0,
        "halt_below": 0.40, "warn_below": 0.75, "mc_samples": 1000,
        "anchors": [{"name": f"anchor-{i}", "hash": f"sha256:{i:064x}", "rating": 3000.0 + i,
                     "rating_uncertainty": 5.0} for i in range(6)]}))
    added = cli("--config", str(config), "lawv", "contract", "add", str(contract))
    assert added.exit_code == 0, added.output
    check = cli("--config", str(config), "lawv", "check")  # no measurement: a GAP
    assert check.exit_code == 0, check.output
    with Deployment.open(config) as dep:
        data = collect(dep)
    assert data.gate == () and [c.verdict for c in data.checks] == ["GAP"]
    # lawv README: a GAP votes `gap_vote`, `warn` by default, whatever the candidate
    assert data.lawv_vote == _cli_lawv_vote(cli, config, "any-name")
    assert data.lawv_vote is not None and data.lawv_vote[0] == "warn"
