"""The HTML report in headless Chromium: it loads offline, without errors, with every chart.

Uses Debian's /usr/bin/chromium through Playwright (never ``playwright install``).
"Every chart drawn" means every datum's mark is rendered with a size inside its chart
(one point per Law V check, a bar per ForkScore term of each branch, a marker per
register entry, ...; ``demo_chart_marks``), counted against the demo's recorded data:
chart text is drawn as paths, so an empty chart ("nothing recorded") has paths too.
Set ``CLADELOG_UPDATE_SCREENSHOT=1`` to also run the default demo (seed 0, 30
candidates) and save the top of its report as ``docs/report.png`` (the README's picture).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from demo_chart_marks import CHARTS, expected_marks

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
REPO = Path(__file__).resolve().parents[3]
#: Every data mark of a chart as rendered: ``kind-key -> [left, top, width, height]``
#: relative to the chart's ``<svg>``, plus the svg's own size under ``""``.
MARKS_JS = """svg => {
  const frame = svg.getBoundingClientRect();
  const out = {"": [0, 0, frame.width, frame.height]};
  for (const g of svg.querySelectorAll('g[id*="-datum-"]')) {
    const r = g.getBoundingClientRect();
    const key = g.id.slice(g.id.indexOf("-datum-") + "-datum-".length);
    out[key] = [r.left - frame.left, r.top - frame.top, r.width, r.height];
  }
  return out;
}"""


def _browser(playwright: Any) -> Any:
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)


def _open(browser: Any, html: Path, problems: list[str], width: int = 1280) -> Any:
    page = browser.new_page(viewport={"width": width, "height": 1000})
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
            if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))

    def route(r: Any) -> None:
        url = r.request.url
        if url.startswith(("file://", "data:")):
            r.continue_()
        else:
            problems.append(f"network request: {url}")
            r.abort()

    page.route("**/*", route)
    page.goto(html.as_uri(), wait_until="load")
    return page


@pytest.fixture(scope="module")
def playwright() -> Any:
    if not CHROMIUM.exists():
        message = f"{CHROMIUM} is missing (apt-get install -y chromium)"
        if os.environ.get("CLADELOG_REQUIRE_BROWSER") == "1":  # CI installs it: never skip there
            pytest.fail(message)
        pytest.skip(message)
    if os.environ.get("CLADELOG_REQUIRE_BROWSER") == "1":
        import playwright.sync_api as sync_api  # in CI a broken playwright must fail
    else:
        sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        yield p


def test_report_loads_without_errors_and_every_chart_is_drawn(
        demo_dir: Path, demo_states: dict[str, Any], playwright: Any, tmp_path: Path) -> None:
    expected = expected_marks(demo_states)
    browser = _browser(playwright)
    problems: list[str] = []
    try:
        page = _open(browser, demo_dir / "report.html", problems)
        found = page.eval_on_selector_all(
            "figure.chart", "els => els.map(e => e.getAttribute('data-chart'))")
        assert found == list(CHARTS)
        for chart in CHARTS:
            figure = page.locator(f'figure.chart[data-chart="{chart}"]')
            svg = figure.locator("svg")
            assert svg.count() == 1, chart
            box = svg.bounding_box()
            assert box is not None and box["width"] > 200 and box["height"] > 100, chart
            marks = svg.evaluate(MARKS_JS)
            _, _, width, height = marks.pop("")
            # one rendered mark per datum the demo recorded: points per check, bars per
            # branch and term, markers per register entry, a bar per gate group
            assert expected[chart] and set(marks) == expected[chart], chart
            for key, (left, top, w, h) in marks.items():
                assert w > 0 or h > 0, (chart, key, w, h)  # a bar, a marker, a line
                assert left >= -2 and left + w <= width + 2, (chart, key, left, w, width)
                assert top >= -2 and top + h <= height + 2, (chart, key, top, h, height)
        # the breakdown's legend: one label per term, as the formula writes it (the ids
        # carry the keys), no two of them overlapping as Chromium lays them out
        labels = page.locator('figure.chart[data-chart="breakdown"] svg').evaluate(
            """svg => [...svg.querySelectorAll('g[id^="breakdown-legend-"]')].map(g => {
                 const r = g.getBoundingClientRect();
                 return [g.id, r.left, r.top, r.right, r.bottom]; })""")
        assert len(labels) >= 5
        for i, (a, *box_a) in enumerate(labels):
            for b, *box_b in labels[i + 1:]:
                apart = (box_a[2] <= box_b[0] or box_b[2] <= box_a[0]
                         or box_a[3] <= box_b[1] or box_b[3] <= box_a[1])
                assert apart, (a, b, box_a, box_b)
        # the store by its absolute path
        header = page.locator("header p").inner_text()
        assert f"store {(demo_dir / 'cladelog.sqlite3').resolve()} ·" in header
        shot = tmp_path / "report.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    finally:
        browser.close()
    assert problems == []


def test_update_readme_screenshot(playwright: Any, tmp_path: Path, cli: Any,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    if os.environ.get("CLADELOG_UPDATE_SCREENSHOT") != "1":
        pytest.skip("set CLADELOG_UPDATE_SCREENSHOT=1 to rewrite docs/report.png")
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "cladelog-demo"
    result = cli("demo")  # the defaults: ./cladelog-demo, seed 0, 30 candidates
    assert result.exit_code == 0, result.output
    browser = _browser(playwright)
    problems: list[str] = []
    try:
        page = _open(browser, target / "report.html", problems)
        out = REPO / "docs" / "report.png"
        out.parent.mkdir(exist_ok=True)
        page.screenshot(path=str(out), clip={"x": 0, "y": 0, "width": 1280, "height": 1900},
                        full_page=True)
    finally:
        browser.close()
    assert problems == []


def test_a_page_of_10000_candidates_loads_without_errors(
        demo_dir: Path, playwright: Any, tmp_path: Path) -> None:
    """Issue 25: the small demo's data repeated to 10,000 candidates and register entries
    (how the page draws many items does not depend on where they came from)."""
    import attrs
    from cladelog.core import Deployment
    from cladelog.demo.charts import render_charts
    from cladelog.demo.html import PAGE_ROWS, render_html
    from cladelog.demo.report_data import collect

    with Deployment.open(demo_dir / "cladelog.toml") as dep:
        data = collect(dep)
    n = 10_000
    gate = tuple(attrs.evolve(data.gate[i % len(data.gate)], candidate=f"x{i:05d}")
                 for i in range(n))
    register = tuple(attrs.evolve(data.register[i % len(data.register)], seq=i, reverts=None,
                                  reverted_by=None) for i in range(n))
    long = attrs.evolve(data, gate=gate, register=register)
    page_file = tmp_path / "long.html"
    page_file.write_text(render_html(long, render_charts(long)), encoding="utf-8")
    browser = _browser(playwright)
    problems: list[str] = []
    try:
        page = _open(browser, page_file, problems)
        found = page.eval_on_selector_all(
            "figure.chart", "els => els.map(e => e.getAttribute('data-chart'))")
        assert found == list(CHARTS)
        for chart in CHARTS:
            box = page.locator(f'figure.chart[data-chart="{chart}"] svg').bounding_box()
            assert box is not None and box["width"] > 200 and box["height"] > 100, chart
        # the long tables: their first page shown, the rest folded (closed) pages
        closed = page.eval_on_selector_all("details:not([open]) > summary",
                                           "els => els.map(e => e.textContent)")
        assert f"rows {PAGE_ROWS + 1}–{2 * PAGE_ROWS} of {n}" in closed
        assert f"rows {n - PAGE_ROWS + 1}–{n} of {n}" in closed
    finally:
        browser.close()
    assert problems == []
