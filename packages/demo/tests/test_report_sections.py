"""The report shows the sections of the plugins a deployment enables, names the ForkScore
terms as the formula writes them in distinct colours with labels that do not overlap, and
names the store by its absolute path."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
from click.testing import Result

Cli = Callable[..., Result]

#: Labels of the demo's terms as the seed formula writes them (typed here, not computed).
FORMULA_LABELS = {
    "alpha_x_delta_5s": "α·Δ5S",
    "beta_x_delta_5t": "β·Δ5T",
    "gamma_x_delta_5f": "γ·Δ5F",
    "delta_x_selfmodel_calibration_gain": "δ·SelfModelCalibrationGain",
    "epsilon_x_audit_completeness": "ε·AuditCompleteness",
    "zeta_x_validator_diversity": "ζ·ValidatorDiversity",
    "minus_eta_x_regression_penalty": "−η·RegressionPenalty",
    "minus_theta_x_capital_cost_penalty": "−θ·CapitalCostPenalty",
    "minus_iota_x_security_risk_penalty": "−ι·SecurityRiskPenalty",
    "minus_kappa_x_complexity_penalty": "−κ·ComplexityPenalty",
    "minus_lambda_x_memory_invalidation": "−λ·MemoryInvalidationPenalty",
}


def _fork_score_only(tmp_path: Path, cli: Cli) -> Path:
    """A deployment enabling fork-score alone, with one branch set of two branches."""
    config = tmp_path / "dep" / "cladelog.toml"
    config.parent.mkdir()
    assert cli("--config", str(config), "init", "-p", "fork-score").exit_code == 0
    sub = {"syntax": "parse_pass_rate", "semantics": "equivalence_recovery_rate"}
    parent = {"batteries": {"5S": {s: {r: 0.5} for s, r in sub.items()}}}
    better = {"batteries": {"5S": {s: {r: 0.7} for s, r in sub.items()}}}
    files = {}
    for name, doc in (("p", parent), ("c", better)):
        files[name] = tmp_path / f"{name}.json"
        files[name].write_text(json.dumps(doc), encoding="utf-8")
    for branch, child in (("b1", files["c"]), ("b2", files["p"])):
        done = cli(
            "--config",
            str(config),
            "fork-score",
            "score",
            "--parent",
            str(files["p"]),
            "--child",
            str(child),
            "--branch-set",
            "S1",
            "--branch-id",
            branch,
            "--parent-root",
            "P0",
        )
        assert done.exit_code == 0, done.output
    return config


def test_a_fork_score_deployment_gets_no_law_v_register_or_graph_section(
    cli: Cli, tmp_path: Path
) -> None:
    config = _fork_score_only(tmp_path, cli)
    page = tmp_path / "r.html"
    result = cli("report", "--config", str(config), "--html", str(page))
    assert result.exit_code == 0, result.output
    for absent in ("Law V checks", "Law V vote", "Register:", "Graph-engine"):
        assert absent not in result.output, absent
    assert "Branch set S1" in result.output and "Gate:" in result.output
    html = page.read_text(encoding="utf-8")
    assert re.findall(r'data-chart="([^"]+)"', html) == ["breakdown", "gate"]
    assert re.findall(r'<section id="([^"]+)"', html) == [
        "summary",
        "fork-score",
        "gate",
        "digests",
    ]
    for absent in (
        "Law V",
        "register of oracle receipts",
        "register entries",
        "Graph-engine sessions",
        "halts block",
    ):
        assert absent not in html, absent
    assert "ForkScore verdicts" in html
    # the store by its absolute path, wherever the report is asked from
    store = (config.parent / "cladelog.sqlite3").resolve()
    assert f"store {store} ·" in html
    assert Path(re.search(r"store (\S+) ·", html).group(1)).is_absolute()  # type: ignore[union-attr]


def test_the_demo_deployment_gets_every_section(demo_dir: Path) -> None:
    html = (demo_dir / "report.html").read_text(encoding="utf-8")
    assert re.findall(r'<section id="([^"]+)"', html)[:7] == [
        "summary",
        "lawv",
        "fork-score",
        "receipts",
        "gate",
        "graph-engine",
        "digests",
    ]
    assert f"store {(demo_dir / 'cladelog.sqlite3').resolve()} ·" in html


@pytest.fixture(scope="module")
def data(demo_dir: Path) -> Any:
    from cladelog.core import Deployment
    from cladelog.demo.report_data import collect

    with Deployment.open(demo_dir / "cladelog.toml") as dep:
        return collect(dep)


def test_sections_follow_the_enabled_plugins_in_the_page_and_the_charts(data: Any) -> None:
    from cladelog.demo.charts import render_charts, shown_charts
    from cladelog.demo.html import render_html

    for enabled, sections in [
        ({"lawv", "receipts"}, ["summary", "lawv", "receipts", "gate", "digests"]),
        ({"graph-engine"}, ["summary", "gate", "graph-engine", "digests"]),
        (set(), ["summary", "gate", "digests"]),
    ]:
        only = attrs.evolve(data, plugins={p: "0" for p in enabled | {"core"}})
        charts = shown_charts(only)
        html = render_html(only, render_charts(only, charts))
        assert re.findall(r'<section id="([^"]+)"', html) == sections, enabled
        assert re.findall(r'data-chart="([^"]+)"', html) == list(charts)
        assert ("Law V sequence" in html) == ("lawv" in enabled)
        assert ("register entries" in html) == ("receipts" in enabled)


def test_the_breakdown_legend_names_each_term_as_the_formula_does_in_its_own_colour(
    data: Any,
) -> None:
    from cladelog.demo.charts import breakdown_figure, render_charts

    fig = breakdown_figure(data)
    legend = fig.axes[0].get_legend()
    labels = [t.get_text() for t in legend.get_texts()]
    keys = [t.get_gid()[len("legend-") :] for t in legend.get_texts()]
    assert len(labels) >= 5
    for key, label in zip(keys, labels, strict=True):
        assert label == FORMULA_LABELS[key]
    colours = [tuple(h.get_facecolor()) for h in legend.legend_handles]
    assert len(set(colours)) == len(colours)  # no two terms share a colour
    svg = render_charts(data, ["breakdown"])["breakdown"]
    assert {f'id="breakdown-legend-{k}"' for k in keys} <= set(re.findall(r'id="[^"]+"', svg))


def test_term_colours_stay_distinct_for_many_terms() -> None:
    from cladelog.demo.charts import term_colors

    keys = list(FORMULA_LABELS) + [f"mu{i}_x_extra{i}" for i in range(40)]
    colours = term_colors(keys)
    assert len(set(colours.values())) == len(keys)
    assert list(colours)[:11] == list(FORMULA_LABELS)  # the built-ins first, formula order


def _boxes(fig: Any, artists: list[Any]) -> list[Any]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    return [a.get_window_extent(renderer) for a in artists]


def test_no_two_labels_of_the_breakdown_chart_overlap(data: Any) -> None:
    from cladelog.demo.charts import breakdown_figure
    from cladelog.demo.report_data import Branch

    # the demo's branches, and a set with a plugin term of a long name and many flags
    long = Branch(
        rank=1,
        branch_id="long",
        score=0.2,
        weight=1.0,
        verdict="REJECT",
        flags=("REGRESSION_5S:syntax", "REGRESSION_5T:time", "NEG_INF_REGRESSION"),
        breakdown=(
            *((k, 0.01 * (i + 1)) for i, k in enumerate(FORMULA_LABELS)),
            ("minus_mu_x_a_very_long_plugin_term_name", -0.05),
        ),
    )
    for case in (data, attrs.evolve(data, branches=(long, *data.branches))):
        fig = breakdown_figure(case)
        ax = fig.axes[0]
        legend = ax.get_legend()
        texts = [*legend.get_texts(), *ax.texts, *ax.get_yticklabels()]
        boxes = _boxes(fig, texts)
        for (a, box_a), (b, box_b) in itertools.combinations(zip(texts, boxes), 2):
            assert not box_a.overlaps(box_b), (a.get_text(), b.get_text())
        # every legend label sits inside the figure
        width = fig.get_size_inches()[0] * fig.dpi
        for box in boxes[: len(legend.get_texts())]:
            assert box.x0 >= 0 and box.x1 <= width, box
