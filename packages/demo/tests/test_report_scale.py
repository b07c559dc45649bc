"""The report at scale (issue 25): one replay for every candidate's gate answer, and
charts and tables that stay readable (and the page small) for long histories.

The long histories here are the small demo's recorded data repeated (a 10,000-candidate
demo takes minutes; ``benchmarks/run.py scale`` runs it): what is checked is how the page
draws many items, which does not depend on where they came from.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import attrs
import pytest
from demo_chart_marks import svg_marks


@pytest.fixture(scope="module")
def data(demo_dir: Path) -> Any:
    from cladelog.core import Deployment
    from cladelog.demo.report_data import collect

    with Deployment.open(demo_dir / "cladelog.toml") as dep:
        return collect(dep)


def test_the_report_folds_the_log_once_whatever_the_number_of_candidates(
        demo_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import cladelog.core.projections as projections
    from cladelog.core import Deployment
    from cladelog.demo.report_data import collect

    folds: list[int] = []
    real = projections._fold_from

    def counting(*args: Any) -> Any:
        out = real(*args)
        folds.append(out[1])  # events read by this fold
        return out

    monkeypatch.setattr(projections, "_fold_from", counting)
    monkeypatch.setattr(Deployment, "gate", lambda self, c: pytest.fail("gate per candidate"))
    with Deployment.open(demo_dir / "cladelog.toml") as dep:
        head = dep.store.head().position
        data = collect(dep)
    assert len(data.gate) == 16  # the small demo: 16 candidates
    # one replay from the stored checkpoints, then the gate's states with nothing new
    assert len(folds) == 2 and folds[1] == 0 and folds[0] <= head


def _many_register_items(data: Any, n: int) -> tuple[Any, ...]:
    items = []
    base = list(data.register)
    for i in range(n):
        item = base[i % len(base)]
        items.append(attrs.evolve(item, seq=i, reverts=None, reverted_by=None))
    return tuple(items)


def test_a_long_register_is_drawn_as_one_group_per_lane(data: Any) -> None:
    from cladelog.demo.charts import MAX_MARKS, chart_gains, chart_register

    long = attrs.evolve(data, register=_many_register_items(data, MAX_MARKS + 1))
    _, marks = svg_marks(chart_register(long))
    lanes = {item.lane for item in long.register}
    assert set(marks) == {"lane-" + re.sub(r"[^A-Za-z0-9_.+-]", "_", lane) for lane in lanes}
    # each lane's markers: one per occupied slot of the time axis, at most 600 a lane
    for lane in lanes:
        key = "lane-" + re.sub(r"[^A-Za-z0-9_.+-]", "_", lane)
        times = {item.recorded_at for item in long.register if item.lane == lane}
        assert 1 <= len(marks[key].points) <= min(len(times), 600), lane
    # a short register keeps a mark per entry
    short = attrs.evolve(data, register=_many_register_items(data, 40))
    assert len(svg_marks(chart_register(short))[1]) == 40
    # the claimed gains: a line without a point per gain test past MAX_MARKS
    claims = tuple(attrs.evolve(data.claimed[1], key=str(i)) for i in range(MAX_MARKS + 1))
    gains = svg_marks(chart_gains(attrs.evolve(data, claimed=claims)))[1]
    assert not any(key.startswith("claim-") for key in gains)


def test_the_breakdown_and_r_charts_show_the_best_branches_and_the_last_checks(
        data: Any) -> None:
    from cladelog.demo.charts import MAX_BRANCHES, MAX_CHECKS, chart_breakdown, chart_r

    branches = tuple(attrs.evolve(data.branches[i % len(data.branches)], rank=i + 1,
                                  branch_id=f"b{i:04d}") for i in range(MAX_BRANCHES * 3))
    _, marks = svg_marks(chart_breakdown(attrs.evolve(data, branches=branches)))
    totals = {k for k in marks if k.startswith("total-")}
    assert totals == {f"total-b{i:04d}" for i in range(MAX_BRANCHES)}
    checks = tuple(attrs.evolve(data.checks[i % len(data.checks)], check_id=f"k{i}")
                   for i in range(MAX_CHECKS + 7))
    _, marks = svg_marks(chart_r(attrs.evolve(data, checks=checks)))
    shown = {k.split("-", 1)[1] for k in marks}
    assert shown <= {f"k{i}" for i in range(7, MAX_CHECKS + 7)} and "k7" in shown \
        and f"k{MAX_CHECKS + 6}" in shown


def test_long_tables_come_in_folded_pages(data: Any) -> None:
    from cladelog.demo.charts import render_charts
    from cladelog.demo.html import PAGE_ROWS, render_html

    n = PAGE_ROWS * 2 + 5
    gate = tuple(attrs.evolve(data.gate[i % len(data.gate)], candidate=f"x{i:04d}")
                 for i in range(n))
    long = attrs.evolve(data, gate=gate, register=_many_register_items(data, n))
    page = render_html(long, render_charts(long))
    # the full gate table: a first page, then two folded pages of the rest
    assert f"rows {PAGE_ROWS + 1}–{PAGE_ROWS * 2} of {n}" in page
    assert f"rows {PAGE_ROWS * 2 + 1}–{n} of {n}" in page
    for i in range(n):  # every candidate is on the page, once in the full table
        assert f"<td>x{i:04d}</td>" in page
    assert page.count("<table>") > 6
