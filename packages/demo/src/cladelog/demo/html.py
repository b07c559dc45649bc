"""The self-contained HTML report: inline CSS, inline SVG charts, no script, no fonts.

:func:`render_html` is pure (data and chart SVG in, text out); the page opens
without network access. Every chart sits in a ``<figure class="chart"
data-chart="ID">`` container (the browser test looks for them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Final

from .charts import CHARTS, VERDICT_COLORS
from .report_data import ReportData

__all__ = ["CSS", "PAGE_ROWS", "render_html"]

#: Rows of a long table shown at once: the rest follow in pages of this many rows,
#: each folded (``<details>``) until opened, so a 10,000-row table costs the browser
#: nothing to lay out until a reader asks for it.
PAGE_ROWS: Final = 200

CSS: Final = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;
margin:0;background:#f5f6f8;color:#1d232a;line-height:1.45}
header{background:#1d2733;color:#fff;padding:18px 32px}
header h1{margin:0 0 4px;font-size:22px}
header p{margin:0;color:#c7d0da;font-size:13px;word-break:break-all}
main{max-width:1180px;margin:0 auto;padding:16px 24px 40px}
section{background:#fff;border:1px solid #e1e5ea;border-radius:8px;margin:16px 0;
padding:14px 18px}
h2{font-size:17px;margin:2px 0 10px}
.cards{display:flex;flex-wrap:wrap;gap:12px}
.card{flex:1 1 200px;border:1px solid #e1e5ea;border-radius:6px;padding:10px 12px}
.card b{display:block;font-size:12px;color:#5b6672;text-transform:uppercase}
.card span{font-size:18px}
figure.chart{margin:8px 0;text-align:center}
figure.chart svg{width:100%;max-width:980px;height:auto}
figcaption{font-size:12px;color:#5b6672}
table{border-collapse:collapse;width:100%;font-size:13px;margin:6px 0}
th,td{border-bottom:1px solid #e8ebef;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f0f2f5}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.pill{display:inline-block;border-radius:10px;padding:0 8px;color:#fff;font-size:12px}
code{font-size:12px;background:#f0f2f5;padding:1px 4px;border-radius:3px}
.muted{color:#5b6672;font-size:12px}
details{margin:6px 0}summary{cursor:pointer;color:#1565c0;font-size:13px}
"""


def _pill(verdict: str) -> str:
    color = VERDICT_COLORS.get(verdict, "#546e7a")
    if verdict in ("allow", "allowed"):
        color = "#2e7d32"
    elif verdict in ("block", "BLOCKED"):
        color = "#c62828"
    elif verdict == "warn":
        color = "#f9a825"
    return f'<span class="pill" style="background:{color}">{escape(verdict)}</span>'


def _num(value: float | None, digits: int = 2, sign: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]],
           numeric: Iterable[int] = ()) -> str:
    """A table; past :data:`PAGE_ROWS` rows, the first page and then folded pages."""
    rows = list(rows)
    if len(rows) <= PAGE_ROWS:
        return _one_table(headers, rows, numeric)
    parts = [_one_table(headers, rows[:PAGE_ROWS], numeric)]
    for start in range(PAGE_ROWS, len(rows), PAGE_ROWS):
        page = rows[start:start + PAGE_ROWS]
        parts.append(_details(f"rows {start + 1}–{start + len(page)} of {len(rows)}",
                              _one_table(headers, page, numeric)))
    return "".join(parts)


def _one_table(headers: Sequence[str], rows: Iterable[Sequence[str]],
               numeric: Iterable[int] = ()) -> str:
    nums = set(numeric)
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = "".join(f'<td class="num">{cell}</td>' if i in nums else f"<td>{cell}</td>"
                        for i, cell in enumerate(row))
        body.append(f"<tr>{cells}</tr>")
    if not body:
        body.append(f'<tr><td colspan="{len(headers)}" class="muted">nothing recorded</td></tr>')
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _figure(chart_id: str, svg: Mapping[str, str], caption: str) -> str:
    title = CHARTS[chart_id][0]
    return (f'<figure class="chart" data-chart="{chart_id}" aria-label="{escape(title)}">'
            f"{svg[chart_id]}<figcaption>{escape(caption)}</figcaption></figure>")


def _cards(data: ReportData) -> str:
    mix = data.verdict_mix
    lawv = " → ".join(c.verdict for c in data.checks) or "no check"
    blocked = sum(1 for g in data.gate if not g.allowed)
    vote = f"{data.lawv_vote[0]}" if data.lawv_vote else "–"
    cards = [("events in the log", str(data.head_position), None),
             ("ForkScore verdicts", ", ".join(f"{v} {n}" for v, n in mix.items()) or "none",
              "fork-score"),
             ("Law V sequence", lawv, "lawv"),
             ("register entries", str(len(data.register)), "receipts"),
             ("gate today", f"{len(data.gate) - blocked} allowed, {blocked} blocked", None),
             ("Law V vote now", vote, "lawv")]
    return '<div class="cards">' + "".join(
        f'<div class="card"><b>{escape(k)}</b><span>{escape(v)}</span></div>'
        for k, v, plugin in cards if plugin is None or data.enables(plugin)) + "</div>"


def _checks_table(data: ReportData) -> str:
    rows = []
    for c in data.checks:
        band = "–" if c.mc_low is None or c.mc_high is None \
            else f"[{c.mc_low:.2f}, {c.mc_high:.2f}]"
        rows.append([escape(c.check_id), escape(c.recorded_at[:16].replace("T", " ")),
                     f"v{c.contract_version}", _num(c.s), _num(c.delta_a), _num(c.r),
                     band, _pill(c.verdict), escape(", ".join(c.flags) or "–"),
                     escape(c.review or "–")])
    return _table(["check", "recorded", "contract", "S", "ΔA", "R", "MC band", "verdict",
                   "flags", "review"], rows, numeric=(3, 4, 5))


def _branches_table(data: ReportData) -> str:
    rows = [[f"#{b.rank}", escape(b.branch_id), _num(b.score, 4, sign=True),
             _num(b.weight, 3), _pill(b.verdict), escape(", ".join(b.flags) or "–")]
            for b in data.branches]
    return _table(["rank", "branch", "score", "softmax weight", "verdict", "flags"], rows,
                  numeric=(2, 3))


def _sets_table(data: ReportData) -> str:
    rows = [[escape(set_id), str(density),
             " ".join(f"{_pill(v)}&nbsp;{n}" for v, n in mix.items())]
            for set_id, density, mix in data.branch_sets]
    return _table(["branch set", "branches", "verdicts"], rows, numeric=(1,))


def _register_table(data: ReportData) -> str:
    rows = []
    for item in data.register:
        note = f"reverted by seq {item.reverted_by}" if item.reverted_by is not None else ""
        rows.append([str(item.seq), escape(item.recorded_at[:16].replace("T", " ")),
                     escape(item.lane), escape(item.detail), escape(note or "–")])
    return _table(["seq", "recorded", "kind", "what", "note"], rows, numeric=(0,))


def _details(summary: str, body: str) -> str:
    return f"<details><summary>{escape(summary)}</summary>{body}</details>"


def _gate_table(data: ReportData, *, blocked: bool = False) -> str:
    rows_in = [g for g in data.gate if not g.allowed] if blocked else list(data.gate)
    ordered = sorted(rows_in, key=lambda g: (g.allowed, g.candidate))
    rows = []
    for g in ordered:
        votes = "<br>".join(f"{_pill(d)} <b>{escape(p)}</b>: {escape(r)}" for p, d, r in g.votes)
        rows.append([escape(g.candidate), _pill("allowed" if g.allowed else "BLOCKED"),
                     votes or '<span class="muted">no plugin voted</span>'])
    return _table(["candidate", "gate", "votes (as cladelog gate CANDIDATE prints them)"], rows)


def _halts_table(data: ReportData) -> str:
    rows = []
    for h in data.halts:
        reviews = "<br>".join(
            f"{escape(when[:16].replace('T', ' '))}: {_pill(decision)} by {escape(who)}: "
            f"{escape(reason)}" for when, decision, who, reason in h.reviews)
        rows.append([escape(h.check_id), escape(h.recorded_at[:16].replace("T", " ")),
                     _num(h.r), _pill("BLOCKED" if h.open else "allowed"),
                     reviews or '<span class="muted">no review yet</span>'])
    return _table(["halt", "recorded", "R", "gate now", "human review"], rows,
                  numeric=(2,))


def _graph_table(data: ReportData) -> str:
    keys: list[str] = []
    for row in data.graph_sessions:
        keys.extend(k for k in row if k not in keys)
    rows = [[escape(str(row.get(k, "–"))) for k in keys] for row in data.graph_sessions]
    return _table(keys or ["session"], rows)


def _digests_table(data: ReportData) -> str:
    rows = [[escape(name), f"<code>{escape(digest)}</code>"]
            for name, digest in sorted(data.digests.items())]
    return _table(["projection", "state digest (SHA-256 of canonical JSON)"], rows)


def render_html(data: ReportData, svg: Mapping[str, str], *, title: str = "cladelog report"
                ) -> str:
    """The whole page as one string.

    The sections of a plugin the deployment does not enable (``data.enables``) are left
    out, with their charts and summary cards: Law V (``lawv``), ForkScore
    (``fork-score``), the register (``receipts``), graph-engine sessions. ``svg`` needs
    only the charts of the sections shown (:func:`~cladelog.demo.charts.shown_charts`).
    """
    plugins = ", ".join(f"{n} {v}" for n, v in sorted(data.plugins.items()))
    vote = ""
    if data.lawv_vote is not None:
        vote = f"<p>Law V vote now: {_pill(data.lawv_vote[0])} {escape(data.lawv_vote[1])}</p>"
    # a plugin's sections only where the deployment enables it (the gate is core's)
    lawv, forks = data.enables("lawv"), data.enables("fork-score")
    receipts, graph = data.enables("receipts"), data.enables("graph-engine")
    sections = [f'<section id="summary"><h2>Summary</h2>{_cards(data)}</section>']
    if lawv:
        sections.append(
            '<section id="lawv"><h2>Law V: is the claimed progress real?</h2>'
            + _figure("r-per-check", svg, "R = ΔA / S per check; shaded: HALT (red), WARNING "
                      "(amber), CONTINUE (green); bars: the Monte Carlo band of R.")
            + _figure("gains", svg, "Σ of the long-stage Elo the oracle confirmed, against "
                      "the gain of main measured against the fixed anchor set (band: σ of A).")
            + _checks_table(data) + vote + "</section>")
    if forks:
        sections.append(
            '<section id="fork-score"><h2>ForkScore: the competing branches</h2>'
            + _figure("breakdown", svg, "Each term's signed contribution; the black tick is "
                      "the total score.")
            + _branches_table(data) + _sets_table(data) + "</section>")
    if receipts:
        sections.append(
            '<section id="receipts"><h2>The register of oracle receipts</h2>'
            + _figure("register", svg, "Gain tests, special paths, epoch changes and "
                      "reversions in the order the oracle signed them.")
            + _details(f"all {len(data.register)} entries", _register_table(data))
            + "</section>")
    halts = ("<p>Law V halts block every promotion until a human review resumes:</p>"
             + _halts_table(data)) if lawv else ""
    sections.append(
        '<section id="gate"><h2>The promotion gate</h2>'
        + _figure("gate", svg, "Every recorded candidate asked now; one block blocks.")
        + halts
        + "<p>Blocked now (every other candidate is allowed):</p>"
        + _gate_table(data, blocked=True)
        + _details(f"every candidate's votes ({len(data.gate)})", _gate_table(data))
        + "</section>")
    if graph:
        sections.append('<section id="graph-engine"><h2>Graph-engine sessions</h2>'
                        + _graph_table(data) + "</section>")
    sections.append(
        '<section id="digests"><h2>Projection digests</h2>' + _digests_table(data)
        + f'<p class="muted">head {data.head_position} <code>{escape(data.head_hash)}</code>'
        + "</p></section>")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        "<link rel=\"icon\" href=\"data:,\">"
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
        f"<header><h1>{escape(title)}</h1><p>deployment {escape(data.config)} · store "
        f"{escape(data.store)} · {escape(plugins)}</p></header><main>"
        + "".join(sections) + "</main></body></html>\n")
