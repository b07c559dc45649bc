"""Every chart of the page draws its data: one mark per datum, where the datum puts it.

Reads the SVG of the page the demo wrote (no browser needed, so this runs
everywhere; ``test_report_browser.py`` checks the same marks as Chromium renders
them). The expected marks come from the recorded projection states
(``demo_chart_marks.expected_marks``), not from the report's own data model. Chart text
is drawn as paths, so counting paths cannot tell an empty chart from a full one:
the last test shows that.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from demo_chart_marks import (
    CHARTS,
    drawn_inside,
    expected_marks,
    latest_branch_set,
    page_marks,
    svg_marks,
)


@pytest.fixture(scope="module")
def marks(demo_dir: Path) -> dict[str, Any]:
    return page_marks((demo_dir / "report.html").read_text(encoding="utf-8"))


def test_every_chart_draws_one_mark_per_recorded_datum(
        marks: dict[str, Any], demo_states: dict[str, Any]) -> None:
    assert list(marks) == list(CHARTS)
    expected = expected_marks(demo_states)
    # the small demo: 4 checks, 16 candidates, every register entry, 4+ branches
    assert len(expected["r-per-check"]) == 8
    assert len(expected["register"]) == len(demo_states["receipts.register"]["entries"]) > 16
    for chart in CHARTS:
        box, drawn = marks[chart]
        assert set(drawn) == expected[chart], chart
        assert expected[chart], chart
        for key, mark in drawn.items():
            assert drawn_inside(mark, box), (chart, key, mark)


def _linear(pairs: list[tuple[float, float]], tolerance: float) -> None:
    """Assert that screen positions are one affine function of the data values."""
    (v0, p0), (v1, p1) = min(pairs), max(pairs)
    assert v1 != v0
    scale = (p1 - p0) / (v1 - v0)
    for value, pos in pairs:
        assert abs(p0 + scale * (value - v0) - pos) <= tolerance, (value, pos, scale)


def test_marks_sit_where_their_values_put_them(
        marks: dict[str, Any], demo_states: dict[str, Any]) -> None:
    # R per check: the point's height is an affine function of R (recorded by lawv)
    checks = demo_states["lawv.state"]["checks"]
    _, r_marks = marks["r-per-check"]
    points = [(c["result"]["r"], r_marks[f"r-{c['check_id']}"].points) for c in checks]
    assert all(len(p) == 1 for _, p in points)
    _linear([(r, p[0][1]) for r, p in points], tolerance=0.01)
    # and left to right in check order
    xs = [p[0][0] for _, p in points]
    assert xs == sorted(xs) and len(set(xs)) == len(xs)

    # ForkScore breakdown: every bar is as long as its term's recorded value
    latest = demo_states["fork_score.branch_sets"]["sets"][latest_branch_set(demo_states)]
    _, bars = marks["breakdown"]
    widths = []
    for branch, row in latest.items():
        for term, value in row["breakdown"].items():
            if value != 0:
                x0, _, x1, _ = bars[f"bar-{branch}--{term}"].extent
                widths.append((abs(value), x1 - x0))
    widths.append((0.0, 0.0))
    _linear(widths, tolerance=0.01)

    # the gate: each group's bar is as long as its number of candidates
    sets = demo_states["fork_score.branch_sets"]["sets"]
    verdicts = [row["verdict"] for rows in sets.values() for row in rows.values()]
    _, gate = marks["gate"]
    lengths = [(0.0, 0.0)]
    for key, count in (("gate-allowed", sum(v != "REJECT" for v in verdicts)),
                       ("gate-blocked-by-fork-score", verdicts.count("REJECT"))):
        x0, _, x1, _ = gate[key].extent
        lengths.append((float(count), x1 - x0))
    _linear(lengths, tolerance=0.01)

    # the register: one marker per entry, later entries further right, one lane per kind
    entries = sorted(demo_states["receipts.register"]["entries"].values(),
                     key=lambda e: e["seq"])
    _, register = marks["register"]
    placed = [(e, register[f"entry-{e['seq']}"].points) for e in entries]
    assert all(len(p) == 1 for _, p in placed)
    xs = [p[0][0] for _, p in placed]
    assert xs == sorted(xs)
    lanes: dict[tuple[str, bool | None], set[float]] = {}
    for e, p in placed:
        lanes.setdefault((e["kind"], e.get("pass")), set()).add(round(p[0][1], 3))
    assert all(len(ys) == 1 for ys in lanes.values()), lanes
    assert len({next(iter(ys)) for ys in lanes.values()}) == len(lanes)


def test_an_empty_chart_has_no_data_mark_although_it_draws_many_paths() -> None:
    import re

    from cladelog.demo.charts import render_charts
    from cladelog.demo.report_data import build_report_data

    for chart, svg in render_charts(build_report_data({}, {}, [])).items():
        _, drawn = svg_marks(svg)
        assert drawn == {}, chart
        # the old check (more than 10 paths with a 'd' longer than 10) passes anyway:
        # "nothing recorded" is drawn as paths
        paths = [d for d in re.findall(r'<path[^>]*\sd="([^"]*)"', svg) if len(d) > 10]
        assert len(paths) > 10, chart
