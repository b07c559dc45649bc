"""The report as rich tables on a terminal (or any text stream)."""

from __future__ import annotations

from typing import Any

from .report_data import ReportData

__all__ = ["MAX_ROWS", "print_summary"]

#: The most rows a summary table prints (the HTML page has them all).
MAX_ROWS = 20

_STYLE = {"CONTINUE": "green", "ACCEPT": "green", "WARNING": "yellow", "MARGINAL": "yellow",
          "HALT": "bold red", "REJECT": "red", "GAP": "dim", "DEFECTIVE": "magenta",
          "allow": "green", "warn": "yellow", "block": "bold red"}


def _styled(text: str) -> str:
    style = _STYLE.get(text)
    return f"[{style}]{text}[/{style}]" if style else text


def _num(value: float | None, digits: int = 2) -> str:
    from cladelog.core import human_number

    return "–" if value is None else human_number(float(value), digits)


def print_summary(data: ReportData, console: Any) -> None:
    """Print the Law V checks, the latest branch set, the register and the gate (a
    plugin's part only when the deployment enables it)."""
    from rich.table import Table

    console.print(f"[bold]cladelog report[/bold]  {data.config}  head {data.head_position}")
    # a plugin's tables only where the deployment enables it (the gate is core's)
    if data.enables("lawv"):
        checks = Table(title="Law V checks", title_justify="left")
        for name in ("check", "contract", "S", "ΔA", "R", "MC 2.5–97.5 %", "verdict", "review"):
            checks.add_column(name, justify="right" if name in ("S", "ΔA", "R") else "left")
        for c in data.checks:
            band = "–" if c.mc_low is None or c.mc_high is None \
                else f"{c.mc_low:.2f} … {c.mc_high:.2f}"
            checks.add_row(c.check_id, f"v{c.contract_version}", _num(c.s), _num(c.delta_a),
                           _num(c.r), band, _styled(c.verdict), c.review or "–")
        console.print(checks)
        if data.lawv_vote is not None:
            console.print(f"Law V vote now: {_styled(data.lawv_vote[0])} {data.lawv_vote[1]}")
    if data.enables("fork-score"):
        branches = Table(title=f"Branch set {data.branch_set_id or '–'} (latest)",
                         title_justify="left")
        for name in ("rank", "branch", "score", "weight", "verdict", "flags"):
            branches.add_column(name, justify="right" if name in ("score", "weight") else "left")
        for b in data.branches[:MAX_ROWS]:
            branches.add_row(str(b.rank), b.branch_id, f"{b.score:+.4f}", f"{b.weight:.3f}",
                             _styled(b.verdict), ", ".join(b.flags) or "–")
        console.print(branches)
        if len(data.branches) > MAX_ROWS:
            console.print(f"(the best {MAX_ROWS} of {len(data.branches)} branches; every one is "
                          "in the HTML report)")
        mix = ", ".join(f"{_styled(v)} {n}" for v, n in data.verdict_mix.items()) or "none"
        console.print(f"ForkScore verdicts over {len(data.branch_sets)} branch set(s): {mix}")
    if data.enables("receipts"):
        kinds: dict[str, int] = {}
        for item in data.register:
            kinds[item.lane] = kinds.get(item.lane, 0) + 1
        console.print("Register: " + (", ".join(f"{k} {n}" for k, n in kinds.items()) or "empty"))
    gate = Table(title="Gate: blocked candidates", title_justify="left")
    gate.add_column("candidate")
    gate.add_column("why")
    blocked = [row for row in data.gate if not row.allowed]
    for row in blocked[:MAX_ROWS]:
        gate.add_row(row.candidate, "; ".join(f"{p}: {r}" for p, d, r in row.votes
                                               if d == "block"))
    allowed = len(data.gate) - len(blocked)
    console.print(gate)
    if len(blocked) > MAX_ROWS:
        console.print(f"(the first {MAX_ROWS} of {len(blocked)} blocked candidates; every "
                      "one is in the HTML report)")
    console.print(f"Gate: {allowed} of {len(data.gate)} candidate(s) allowed")
    if data.enables("graph-engine") and data.graph_sessions:
        console.print(f"Graph-engine sessions: {len(data.graph_sessions)} "
                      f"({', '.join(str(s['session']) for s in data.graph_sessions)})")
