"""The report's charts, drawn with matplotlib and returned as self-contained SVG text.

Each function takes :class:`~cladelog.demo.report_data.ReportData` and returns
an ``<svg>`` element (no XML declaration) ready to inline in HTML: text is
drawn as paths (no fonts needed), there are no external references, and ids
are salted per chart so several charts can share one page. The output is
deterministic (no date in the metadata, fixed id salt). No pyplot: figures
are plain :class:`matplotlib.figure.Figure` objects, so nothing global changes.

Data marks
----------
Every mark drawn for one datum is its own SVG group whose id is
``<chart>-datum-<kind>-<key>`` (matplotlib's ``gid``, see :func:`datum_id`), so
a reader (or a test) can tell the data from the axes, labels and legends:

* ``r-per-check``: ``r-<check id>`` a point per check with an R (``gap-<check id>``
  the verdict text of one without), ``mc-<check id>`` its Monte Carlo bar;
* ``gains``: ``claim-<seq>`` a point per passed gain test on the claimed curve,
  ``ext-<measurement or check id>`` a point per anchor measurement of a check;
* ``breakdown``: ``bar-<branch>--<term>`` a bar per non-zero term of a branch,
  ``total-<branch>`` the tick of its total score;
* ``register``: ``entry-<seq>`` a marker per register entry;
* ``gate``: ``gate-<group>`` a bar per group (``allowed``,
  ``blocked-by-<plugin>[+<plugin>...]``), as long as its number of candidates.

A chart with nothing to show ("nothing recorded") has no data mark.

At scale
--------
The charts stay readable (and the page small) for histories of any length:

* ``r-per-check`` shows the last :data:`MAX_CHECKS` checks (the title says how many
  there are);
* ``breakdown`` shows the best :data:`MAX_BRANCHES` branches of the latest set;
* ``gains`` marks each passed gain test, and ``register`` each entry, while there
  are at most :data:`MAX_MARKS` of them; past that, the claimed curve is drawn
  as a line only and each register lane as one group of markers
  (``lane-<lane>``) with one marker per occupied slot of 1/600 of the time axis (finer
  than the chart is drawn), so a 10,000-entry register is five groups of at most 600
  markers, not 10,000 marks.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any, Final

from .report_data import REGISTER_LANES, ReportData

__all__ = [
    "CHARTS",
    "CHART_PLUGINS",
    "DATUM",
    "MAX_BRANCHES",
    "MAX_CHECKS",
    "MAX_MARKS",
    "VERDICT_COLORS",
    "chart_breakdown",
    "chart_gains",
    "chart_gate",
    "chart_r",
    "chart_register",
    "datum_id",
    "render_charts",
    "shown_charts",
    "term_colors",
    "term_order",
]

VERDICT_COLORS: Final = {"CONTINUE": "#2e7d32", "WARNING": "#f9a825", "HALT": "#c62828",
                         "GAP": "#757575", "DEFECTIVE": "#6a1b9a", "ACCEPT": "#2e7d32",
                         "MARGINAL": "#f9a825", "REJECT": "#c62828"}
_LANE_STYLE: Final = {
    "gain test passed": ("o", "#2e7d32"), "gain test failed": ("x", "#c62828"),
    "special path": ("s", "#1565c0"), "epoch change": ("D", "#6a1b9a"),
    "reversion": ("v", "#ef6c00"),
}
#: What every data mark's group id holds after the chart's prefix: ``<chart>-datum-...``.
DATUM: Final = "datum"
#: The most Law V checks ``r-per-check`` shows (the last ones).
MAX_CHECKS: Final = 40
#: The most branches ``breakdown`` shows (the best ranked of the latest set).
MAX_BRANCHES: Final = 30
#: Above this many points a chart aggregates its marks (see "At scale").
MAX_MARKS: Final = 500
#: Past MAX_MARKS entries the register's time axis is cut into this many slots, and each
#: lane draws one marker per slot holding any of its entries (finer than the chart shows).
_SLOTS: Final = 600


def datum_id(kind: str, key: object) -> str:
    """The ``gid`` of one data mark (letters, digits and ``_.+-`` kept, others ``_``)."""
    return f"{DATUM}-{kind}-" + re.sub(r"[^A-Za-z0-9_.+-]", "_", str(key))


#: One colour per ForkScore term, in term order (the built-ins in formula order, then
#: extra terms by key): twenty well-separated colours (matplotlib's tab20, dark and light
#: of ten hues), then as many more as needed, each a new hue (:func:`term_colors`).
_TERM_COLORS: Final = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                       "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#aec7e8", "#ffbb78",
                       "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7",
                       "#dbdb8d", "#9edae5"]
#: Which plugin a chart belongs to (None: core's); a chart of a plugin the deployment
#: does not enable is left out (:func:`shown_charts`).
CHART_PLUGINS: Final = {"r-per-check": "lawv", "gains": "lawv", "breakdown": "fork-score",
                        "register": "receipts", "gate": None}


def term_order(keys: Iterable[str]) -> list[str]:
    """Breakdown keys in the scorer's order: the built-ins in formula order, then the
    extra terms' keys sorted."""
    from cladelog.fork_score import BUILTIN_TERMS

    given = set(keys)
    builtin = [t.key for t in BUILTIN_TERMS if t.key in given]
    return builtin + sorted(given - set(builtin))


def term_colors(keys: Iterable[str]) -> dict[str, str]:
    """A different colour for each of ``keys`` (in :func:`term_order`): the palette's
    twenty, then hues spaced by the golden angle, so no two terms share a colour."""
    import colorsys

    out: dict[str, str] = {}
    for i, key in enumerate(term_order(keys)):
        if i < len(_TERM_COLORS):
            out[key] = _TERM_COLORS[i]
        else:
            hue = (i * 0.618033988749895) % 1.0
            r, g, b = colorsys.hsv_to_rgb(hue, 0.55 + 0.3 * (i % 2), 0.75)
            out[key] = f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"
    return out


def shown_charts(data: ReportData) -> tuple[str, ...]:
    """The charts the report shows: core's, and those of the plugins the deployment
    enables (``data.plugins``)."""
    return tuple(c for c, plugin in CHART_PLUGINS.items()
                 if plugin is None or data.enables(plugin))


def _time(stamp: str) -> datetime | None:
    if not stamp:
        return None
    try:
        return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ")
    except ValueError:
        return None


def _figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100)
    fig.set_facecolor("white")
    return fig


def _svg(fig: Any, name: str) -> str:
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": f"cladelog-demo-{name}",
                                "svg.fonttype": "path"}):
        fig.savefig(buffer, format="svg", metadata={"Date": None}, bbox_inches="tight")
    text = buffer.getvalue()
    start = text.find("<svg")
    text = text[start:] if start >= 0 else text
    text = re.sub(r"<metadata>.*?</metadata>\s*", "", text, flags=re.S)
    # ids are unique per chart already (salt); prefix them anyway for safety in one page
    text = re.sub(r'id="([^"]+)"', lambda m: f'id="{name}-{m.group(1)}"', text)
    text = re.sub(r'(href="#|url\(#)([^")]+)', lambda m: f"{m.group(1)}{name}-{m.group(2)}",
                  text)
    return text


def _date_axis(ax: Any) -> None:
    import matplotlib.dates as mdates

    formatter: Any = mdates.DateFormatter
    ax.xaxis.set_major_formatter(formatter("%b %d"))


def _empty(ax: Any, message: str) -> None:
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes,
            color="#555555")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.plot([0, 1], [0, 0], color="#dddddd", transform=ax.transAxes)


def chart_r(data: ReportData) -> str:
    """R per check against the HALT and WARNING thresholds, with the Monte Carlo band."""
    fig = _figure(8.0, 3.8)
    ax = fig.add_subplot()
    checks = list(data.checks[-MAX_CHECKS:])
    if not checks:
        _empty(ax, "no Law V check recorded")
        return _svg(fig, "r")
    halt = checks[-1].halt_below or 0.40
    warn = checks[-1].warn_below or 0.75
    xs = list(range(1, len(checks) + 1))
    values = [c.r for c in checks if c.r is not None]
    lows = [c.mc_low for c in checks if c.mc_low is not None]
    highs = [c.mc_high for c in checks if c.mc_high is not None]
    bottom = min([-0.2, *values, *lows]) - 0.1
    top = max([1.3, *values, *highs]) + 0.1
    bottom, top = max(bottom, -1.5), min(top, 3.0)
    ax.axhspan(bottom, halt, color="#c62828", alpha=0.10, lw=0)
    ax.axhspan(halt, warn, color="#f9a825", alpha=0.14, lw=0)
    ax.axhspan(warn, top, color="#2e7d32", alpha=0.08, lw=0)
    ax.axhline(halt, color="#c62828", lw=1, ls="--")
    ax.axhline(warn, color="#f9a825", lw=1, ls="--")
    # the threshold labels sit just outside the axes, clear of the last check's band
    edge = ax.get_yaxis_transform()
    ax.text(1.01, halt, f"HALT\nbelow {halt:.2f}", va="center", ha="left", fontsize=8,
            color="#c62828", transform=edge)
    ax.text(1.01, warn, f"WARNING\nbelow {warn:.2f}", va="center", ha="left", fontsize=8,
            color="#8d6e00", transform=edge)
    for x, c in zip(xs, checks, strict=True):
        color = VERDICT_COLORS.get(c.verdict, "#333333")
        if c.mc_low is not None and c.mc_high is not None:
            ax.vlines(x, max(c.mc_low, bottom), min(c.mc_high, top), color=color, lw=6,
                      alpha=0.35, gid=datum_id("mc", c.check_id))
        if c.r is not None:
            ax.plot([x], [max(min(c.r, top), bottom)], marker="o", ms=8, color=color,
                    gid=datum_id("r", c.check_id))
            note = f"{c.r:.2f} {c.verdict}" + (f"\nreview: {c.review.split(' by ')[0]}"
                                               if c.review else "")
            ax.annotate(note, (x, max(min(c.r, top), bottom)), textcoords="offset points",
                        xytext=(9, -4), fontsize=8, color=color, zorder=4,
                        bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none",
                              "alpha": 0.75})
        else:
            ax.text(x, (bottom + top) / 2, c.verdict, ha="center", fontsize=8, color=color,
                    gid=datum_id("gap", c.check_id))
    rs = [(x, c.r) for x, c in zip(xs, checks, strict=True) if c.r is not None]
    if len(rs) > 1:
        ax.plot([x for x, _ in rs], [max(min(r, top), bottom) for _, r in rs], color="#555555",
                lw=1, alpha=0.6, zorder=1)
    ax.set_xticks(xs, [f"{c.check_id}\nv{c.contract_version}" for c in checks], fontsize=8)
    ax.set_xlim(0.5, len(checks) + 0.9)  # room for the last check's label inside the axes
    ax.set_ylim(bottom, top)
    ax.set_ylabel("R = ΔA / S")
    shown = "" if len(checks) == len(data.checks) else \
        f", the last {len(checks)} of {len(data.checks)}"
    ax.set_title(f"Law V: R per check (bars: Monte Carlo 2.5–97.5 %){shown}", fontsize=10)
    return _svg(fig, "r")


def chart_gains(data: ReportData) -> str:
    """Cumulative gains the oracle claimed versus the gain measured against the anchors."""
    fig = _figure(8.0, 3.8)
    ax = fig.add_subplot()
    claimed = [(t, p) for p in data.claimed if (t := _time(p.recorded_at)) is not None]
    external = [(t, p) for p in data.external if (t := _time(p.recorded_at)) is not None]
    if not claimed and not external:
        _empty(ax, "no claimed or measured gains recorded")
        return _svg(fig, "gains")
    if claimed:
        ax.step([t for t, _ in claimed], [p.value for _, p in claimed], where="post",
                color="#1565c0", lw=1.8, label="claimed by the oracle (Σ long-stage Elo)")
        for t, p in claimed if len(claimed) <= MAX_MARKS else ():
            if p.key:  # one point per passed gain test (not the start / last-check ends)
                ax.plot([t], [p.value], marker="o", ms=3.5, color="#1565c0", lw=0,
                        gid=datum_id("claim", p.key))
    if external:
        ts = [t for t, _ in external]
        vs = [p.value for _, p in external]
        ax.plot(ts, vs, color="#2e7d32", lw=1.8, label="measured against the anchors (A − A₀)")
        for t, p in external:
            ax.plot([t], [p.value], marker="o", ms=6, color="#2e7d32", lw=0,
                    gid=datum_id("ext", p.key or p.label))
        bands = [p.band or 0.0 for _, p in external]
        ax.fill_between(ts, [v - b for v, b in zip(vs, bands, strict=True)],
                        [v + b for v, b in zip(vs, bands, strict=True)], color="#2e7d32",
                        alpha=0.12, lw=0)
    for c in data.checks:
        when = _time(c.recorded_at)
        if when is not None:
            ax.axvline(when, color=VERDICT_COLORS.get(c.verdict, "#999999"), lw=1, ls=":")
    _date_axis(ax)
    ax.set_ylabel("Elo since the first measurement")
    ax.set_title("Claimed versus external gains (dotted lines: Law V checks)", fontsize=10)
    ax.legend(loc="upper left", fontsize=8, frameon=False)
    return _svg(fig, "gains")


def chart_breakdown(data: ReportData) -> str:
    """The ForkScore breakdown of each branch of the latest branch set (stacked terms)."""
    return _svg(breakdown_figure(data), "breakdown")


#: The breakdown chart's legend: its entries are laid out in as many columns as the
#: widest label leaves room for (a label is at most this wide, in inches, per character).
_LEGEND_CHAR_IN: Final = 0.075
_LEGEND_HANDLE_IN: Final = 0.45


def breakdown_figure(data: ReportData) -> Any:
    """The figure of :func:`chart_breakdown` (a matplotlib ``Figure``): one bar per
    non-zero term of each branch, coloured per term; the legend names the terms as the
    formula writes them (``α·Δ5S``, ``−η·RegressionPenalty``, a plugin's ``−μ·loc``)
    in columns wide enough for the longest label, so no two labels overlap."""
    from cladelog.fork_score import term_label

    branches = list(data.branches[:MAX_BRANCHES])
    width = 8.0
    fig = _figure(width, 1.2 + 0.45 * max(4, len(branches)))
    ax = fig.add_subplot()
    if not branches:
        _empty(ax, "no branch set recorded")
        return fig
    terms = term_order({k for b in branches for k, v in b.breakdown if v != 0.0})
    colors = term_colors(terms)
    ys = list(range(len(branches)))[::-1]
    for y, b in zip(ys, branches, strict=True):
        pos, neg = 0.0, 0.0
        for key, value in b.breakdown:
            if value == 0.0:
                continue
            gid = datum_id("bar", f"{b.branch_id}--{key}")
            if value > 0:
                ax.barh(y, value, left=pos, color=colors[key], height=0.6, gid=gid)
                pos += value
            else:
                ax.barh(y, value, left=neg, color=colors[key], height=0.6, gid=gid)
                neg += value
        ax.plot([b.score], [y], marker="|", ms=16, mew=2.5, color="black",
                gid=datum_id("total", b.branch_id))
        flags = ""
        if b.flags:
            flags = f" ({b.flags[0]}" + (f" +{len(b.flags) - 1}" if len(b.flags) > 1 else "") + ")"
        ax.annotate(f"{b.score:+.3f} {b.verdict}{flags}",
                    (max(pos, b.score), y), textcoords="offset points", xytext=(6, -3),
                    fontsize=8, color=VERDICT_COLORS.get(b.verdict, "#333333"))
    ax.axvline(0.0, color="#333333", lw=0.8)
    ax.set_yticks(ys, [f"#{b.rank} {b.branch_id}" for b in branches], fontsize=9)
    from matplotlib.patches import Patch

    labels = [term_label(t) for t in terms]
    handles = [Patch(color=colors[t], label=label) for t, label in zip(terms, labels,
                                                                       strict=True)]
    widest = max((len(label) for label in labels), default=1)
    ncol = max(1, min(len(labels) or 1,
                      int((width - 0.5) // (_LEGEND_HANDLE_IN + _LEGEND_CHAR_IN * widest))))
    legend = ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.14),
                       ncol=ncol, fontsize=7, frameon=False)
    for t, text in zip(terms, legend.get_texts(), strict=True):
        text.set_gid(f"legend-{t}")
    left, right = ax.get_xlim()
    ax.set_xlim(left, right + (right - left) * 0.45)
    ax.set_xlabel("contribution to the ForkScore (black tick: total)")
    shown = "" if len(branches) == len(data.branches) else \
        f" (the best {len(branches)} of {len(data.branches)})"
    ax.set_title(f"ForkScore breakdown, branch set {data.branch_set_id}{shown}", fontsize=10)
    return fig


def chart_register(data: ReportData) -> str:
    """The register as a timeline: one lane per kind, reversions linked to what they revert."""
    fig = _figure(8.0, 3.2)
    ax = fig.add_subplot()
    items = [(t, i) for i in data.register if (t := _time(i.recorded_at)) is not None]
    if not items:
        _empty(ax, "no register entry recorded")
        return _svg(fig, "register")
    lanes = {lane: len(REGISTER_LANES) - 1 - n for n, lane in enumerate(REGISTER_LANES)}
    by_seq = {i.seq: (t, i) for t, i in items}
    if len(items) <= MAX_MARKS:
        for t, i in items:  # one marker per entry, in its kind's lane
            marker, color = _LANE_STYLE[i.lane]
            ax.plot([t], [lanes[i.lane]], marker=marker, color=color, ms=6, lw=0, zorder=3,
                    gid=datum_id("entry", i.seq))
    else:  # one group of markers per lane, one marker per occupied slot of the time axis
        first = min(t for t, _ in items)
        slot = max((max(t for t, _ in items) - first) / _SLOTS, timedelta(seconds=1))
        for lane in REGISTER_LANES:
            slots = sorted({(t - first) // slot for t, i in items if i.lane == lane})
            if slots:
                marker, color = _LANE_STYLE[lane]
                ax.plot([first + k * slot for k in slots], [lanes[lane]] * len(slots),
                        marker=marker, color=color, ms=4, lw=0, zorder=3,
                        gid=datum_id("lane", lane))
    for t, i in items:
        if i.reverts is not None and i.reverts in by_seq:
            t0, target = by_seq[i.reverts]
            ax.annotate("", xy=(t0, lanes[target.lane]), xytext=(t, lanes[i.lane]),
                        arrowprops={"arrowstyle": "->", "color": "#ef6c00", "lw": 1.2,
                                    "connectionstyle": "arc3,rad=0.25"})
        if i.reverted_by is not None:
            ax.scatter([t], [lanes[i.lane]], s=140, facecolors="none", edgecolors="#ef6c00",
                       zorder=2)
        if i.lane in ("epoch change", "reversion") or (
                i.lane == "special path" and len(items) <= MAX_MARKS):
            ax.annotate(i.detail, (t, lanes[i.lane]), textcoords="offset points",
                        xytext=(0, 7), fontsize=7, ha="center", color="#444444")
    for c in data.checks:
        when = _time(c.recorded_at)
        if when is not None:
            ax.axvline(when, color=VERDICT_COLORS.get(c.verdict, "#999999"), lw=1, ls=":")
            ax.text(when, len(REGISTER_LANES) - 0.45, c.check_id, fontsize=7, ha="center",
                    color=VERDICT_COLORS.get(c.verdict, "#999999"))
    _date_axis(ax)
    ax.set_yticks([lanes[lane] for lane in REGISTER_LANES], list(REGISTER_LANES), fontsize=8)
    ax.set_ylim(-0.6, len(REGISTER_LANES) - 0.2)
    ax.set_title("The register over time (orange: reversion → reverted entry)", fontsize=10)
    return _svg(fig, "register")


def chart_gate(data: ReportData) -> str:
    """How many candidates the gate allows, and which plugin blocks the others."""
    fig = _figure(8.0, 2.2)
    ax = fig.add_subplot()
    if not data.gate:
        _empty(ax, "no candidate to ask the gate about")
        return _svg(fig, "gate")
    groups: dict[str, int] = {"allowed": 0}
    for row in data.gate:
        key = "allowed" if row.allowed else "blocked by " + " + ".join(row.blocked_by)
        groups[key] = groups.get(key, 0) + 1
    names = list(groups)
    ys = list(range(len(names)))[::-1]
    for y, n in zip(ys, names, strict=True):
        ax.barh(y, groups[n], color="#2e7d32" if n == "allowed" else "#c62828", height=0.6,
                gid=datum_id("gate", n.replace(" + ", "+").replace(" ", "-")))
    for y, n in zip(ys, names, strict=True):
        ax.annotate(str(groups[n]), (groups[n], y), textcoords="offset points", xytext=(4, -3),
                    fontsize=8)
    ax.set_yticks(ys, names, fontsize=8)
    ax.set_xlabel("candidates")
    ax.set_title("The promotion gate today, over every recorded candidate", fontsize=10)
    return _svg(fig, "gate")


#: Chart id -> (title, function); the HTML page shows them in this order.
CHARTS: Final[dict[str, tuple[str, Callable[[ReportData], str]]]] = {
    "r-per-check": ("Law V: R per check", chart_r),
    "gains": ("Claimed versus external gains", chart_gains),
    "breakdown": ("ForkScore breakdown of the latest branch set", chart_breakdown),
    "register": ("The register as a timeline", chart_register),
    "gate": ("What the gate blocks", chart_gate),
}


def render_charts(data: ReportData, charts: Iterable[str] | None = None) -> dict[str, str]:
    """The SVG text of ``charts`` (default: every chart) by chart id, in page order."""
    wanted = set(CHARTS if charts is None else charts)
    return {key: fn(data) for key, (_, fn) in CHARTS.items() if key in wanted}
