"""The data marks of the report's charts: what the page draws, and what it should draw.

Each chart draws one SVG group per datum, with the id
``<chart>-datum-<kind>-<key>`` (see ``cladelog.demo.charts``); text, axes and
legends are drawn as paths too, so only these groups tell a chart with data from
an empty one ("nothing recorded").

:func:`expected_marks` says which marks the demo's recorded data calls for,
read straight from the replayed projection states (not from the report code);
:func:`page_marks` reads the marks, and where they are drawn, from the SVG of a
written page.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any, NamedTuple

#: The charts of the page, in order (issue 9).
CHARTS = ("r-per-check", "gains", "breakdown", "register", "gate")
SVG = "{http://www.w3.org/2000/svg}"
XLINK_HREF = "{http://www.w3.org/1999/xlink}href"
_FIGURE = re.compile(r'<figure class="chart" data-chart="([^"]+)"[^>]*>(<svg.*?</svg>)', re.S)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e-?\d+)?")


class Mark(NamedTuple):
    """One data mark: the marker positions (``<use>``) and the path extent it draws."""

    points: tuple[tuple[float, float], ...]
    extent: tuple[float, float, float, float] | None  # x0, y0, x1, y1 of its own paths


def _key(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", text)


def latest_branch_set(states: Mapping[str, Any]) -> str:
    sets = states["fork_score.branch_sets"]["sets"]
    return max(sets, key=lambda s: max(row["position"] for row in sets[s].values()))


def expected_marks(states: Mapping[str, Any]) -> dict[str, set[str]]:
    """The marks each chart must draw for the recorded data (``kind-key`` strings)."""
    lawv = states["lawv.state"]
    checks = lawv["checks"]
    entries = states["receipts.register"]["entries"].values()
    sets = states["fork_score.branch_sets"]["sets"]
    latest = sets[latest_branch_set(states)]
    rejected = sum(1 for rows in sets.values() for row in rows.values()
                   if row["verdict"] == "REJECT")
    every = sum(len(rows) for rows in sets.values())
    gate = {"gate-allowed"} if every > rejected else set()
    if rejected:  # after the review only fork-score blocks, and only its REJECT branches
        gate.add("gate-blocked-by-fork-score")
    return {
        "r-per-check": {f"r-{c['check_id']}" for c in checks if c["result"].get("r") is not None}
        | {f"mc-{c['check_id']}" for c in checks if c["result"].get("monte_carlo")},
        "gains": {f"claim-{e['seq']}" for e in entries if e["kind"] == "gain_test" and e["pass"]}
        | {f"ext-{checks[0]['old_measurement']}"} | {f"ext-{c['check_id']}" for c in checks},
        "breakdown": {f"total-{_key(b)}" for b in latest}
        | {f"bar-{_key(b)}--{_key(term)}" for b, row in latest.items()
           for term, value in row["breakdown"].items() if value != 0},
        "register": {f"entry-{e['seq']}" for e in entries},
        "gate": gate,
    }


def _numbers(d: str) -> list[float]:
    return [float(x) for x in _NUMBER.findall(d)]


def _mark(group: ET.Element) -> Mark:
    points = tuple((float(u.get("x", "0")), float(u.get("y", "0")))
                   for u in group.iter(f"{SVG}use"))
    defs = {id(p) for d in group.iter(f"{SVG}defs") for p in d.iter()}
    xs: list[float] = []
    ys: list[float] = []
    for path in group.iter(f"{SVG}path"):
        if id(path) in defs:
            continue  # a marker's shape, placed by the <use> elements
        values = _numbers(path.get("d", ""))
        xs += values[0::2]
        ys += values[1::2]
    extent = (min(xs), min(ys), max(xs), max(ys)) if xs and ys else None
    return Mark(points, extent)


def svg_marks(svg: str) -> tuple[tuple[float, float, float, float], dict[str, Mark]]:
    """The viewBox of one chart's SVG and its data marks by ``kind-key``."""
    root = ET.fromstring(svg)
    box = tuple(float(v) for v in root.get("viewBox", "").split())
    assert len(box) == 4, "the chart has no viewBox"
    marks = {}
    for group in root.iter(f"{SVG}g"):
        ident = group.get("id", "")
        if "-datum-" in ident:
            key = ident.split("-datum-", 1)[1]
            assert key not in marks, f"mark {key} drawn twice"
            marks[key] = _mark(group)
    return (box[0], box[1], box[0] + box[2], box[1] + box[3]), marks


def page_svgs(html: str) -> dict[str, str]:
    """Each chart's inline SVG by chart id, in page order."""
    return dict(_FIGURE.findall(html))


def page_marks(html: str) -> dict[str, tuple[tuple[float, float, float, float],
                                               dict[str, Mark]]]:
    return {chart: svg_marks(svg) for chart, svg in page_svgs(html).items()}


def drawn_inside(mark: Mark, box: tuple[float, float, float, float]) -> bool:
    """True if the mark draws something (a placed marker or a path with an extent) in box."""
    x0, y0, x1, y1 = box

    def inside(x: float, y: float) -> bool:
        return x0 <= x <= x1 and y0 <= y <= y1

    if mark.points:
        return all(inside(x, y) for x, y in mark.points)
    if mark.extent is None:
        return False
    ex0, ey0, ex1, ey1 = mark.extent
    return inside(ex0, ey0) and inside(ex1, ey1) and max(ex1 - ex0, ey1 - ey0) > 0
