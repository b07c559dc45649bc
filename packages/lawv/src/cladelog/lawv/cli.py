"""``cladelog lawv ...``: contracts, measurements, checks, reviews, status and explain.

Exit codes: 0 ok (and for a check: CONTINUE, WARNING, GAP, DEFECTIVE), 1 a
HALT verdict from ``check``, 2 bad input or usage with one line
``error: <path>: <problem>`` on stderr and nothing appended. Only click is
imported at start-up (and core's CLI helpers); everything else inside the command
bodies. Errors are core's to report: a Law V input error is an InputError (exit 2).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click
from cladelog.core import HELP_SETTINGS, echo_json, human_number, json_option, pass_deployment

if TYPE_CHECKING:
    from cladelog.core import Deployment
    from cladelog.lawv.commands import MeasurementInput

__all__ = ["lawv"]


def _echo_json(doc: Any) -> None:
    click.echo(json.dumps(doc, sort_keys=True, ensure_ascii=False, indent=2))


def _settings(dep: Deployment) -> Any:
    from cladelog.lawv.gate import LawVSettings

    settings = dep.settings("lawv")
    return settings if isinstance(settings, LawVSettings) else LawVSettings()


@click.group("lawv", context_settings=HELP_SETTINGS)
def lawv() -> None:
    """Law V: R = dA / S against a fixed anchor set; halt below the contract's threshold."""


# -- contracts ---------------------------------------------------------------------------


@lawv.group("contract", context_settings=HELP_SETTINGS)
def contract() -> None:
    """Register and list Law V contract versions."""


@contract.command("add")
@click.argument("file", metavar="FILE")
@json_option()
@pass_deployment
def contract_add(dep: Deployment, file: str, as_json: bool) -> None:
    """Register a contract version from a JSON file (versions must increase).

    Registering an identical document again does nothing. A version registered
    while a window is open governs from the next check on (see the README).
    """
    from cladelog.core import read_json_file
    from cladelog.lawv.commands import add_contract

    _echo_added(add_contract(dep, read_json_file(file), source=file), "contract v", "registered",
                as_json)


def _echo_added(outcome: Any, label: str, verb: str, as_json: bool) -> None:
    """One line for an add command: where it was appended, or that it was already there."""
    if as_json:
        echo_json({"key": outcome.key, "appended": bool(outcome.appended),
                   "position": outcome.events[-1].position if outcome.appended else None})
    elif outcome.appended:
        click.echo(f"{label}{outcome.key} {verb} at position {outcome.events[-1].position}")
    else:
        click.echo(f"{label}{outcome.key} is already {verb} (identical): nothing appended")


@contract.command("list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_deployment
def contract_list(dep: Deployment, as_json: bool) -> None:
    """List the registered contract versions and the one governing the next check."""
    from cladelog.lawv.ledger import governing_contract
    from cladelog.lawv.projections import PROJECTION_NAME

    state = dep.state(PROJECTION_NAME)
    rows = [{k: c[k] for k in ("version", "date", "position", "digest")} |
            {"anchors": [a["name"] for a in c["document"]["anchors"]],
             "T": c["document"]["T"], "halt_below": c["document"]["halt_below"],
             "warn_below": c["document"]["warn_below"]}
            for c in sorted(state["contracts"].values(), key=lambda c: c["version"])]
    governs = governing_contract(state)
    if as_json:
        _echo_json({"contracts": rows, "governs_next_check": governs})
        return
    if not rows:
        click.echo("no contract registered")
    for r in rows:
        mark = "  <- governs the next check" if r["version"] == governs else ""
        click.echo(f"  v{r['version']:<4} {r['date']}  position {r['position']:<6} "
                   f"T={r['T']} halt<{r['halt_below']} warn<{r['warn_below']} "
                   f"anchors: {', '.join(r['anchors'])}{mark}")


# -- measurements ------------------------------------------------------------------------


@lawv.group("measure", context_settings=HELP_SETTINGS)
def measure() -> None:
    """Record and list anchor measurements."""


@measure.command("add")
@click.argument("file", metavar="FILE")
@json_option()
@pass_deployment
def measure_add(dep: Deployment, file: str, as_json: bool) -> None:
    """Record an anchor measurement from a JSON file (ids are unique)."""
    from cladelog.core import read_json_file
    from cladelog.lawv.commands import add_measurement

    _echo_added(add_measurement(dep, read_json_file(file), source=file), "measurement ",
                "recorded", as_json)


@measure.command("list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_deployment
def measure_list(dep: Deployment, as_json: bool) -> None:
    """List the recorded measurements."""
    from cladelog.lawv.projections import PROJECTION_NAME

    state = dep.state(PROJECTION_NAME)
    rows = [{"id": m["id"], "version": m["version"], "position": m["position"],
             "anchors": len(m["document"]["anchors"])}
            for m in sorted(state["measurements"].values(), key=lambda m: m["position"])]
    if as_json:
        _echo_json({"measurements": rows})
        return
    if not rows:
        click.echo("no measurement recorded")
    for r in rows:
        click.echo(f"  {r['id']:<20} main {r['version']:<20} position {r['position']:<6} "
                   f"{r['anchors']} anchor(s)")


# -- check, review -----------------------------------------------------------------------


def _measurement_arg(value: str | None, label: str) -> MeasurementInput | None:
    """A file path (read now) if such a file exists, else the id of a recorded measurement."""
    from pathlib import Path

    from cladelog.core import read_json_file
    from cladelog.lawv.commands import MeasurementInput

    if value is None:
        return None
    if value == "-" or Path(value).is_file():
        return MeasurementInput(source=value, document=read_json_file(value))
    return MeasurementInput(source=label, ref=value)


@lawv.command("check")
@click.option("--old", "old", metavar="MEASUREMENT", default=None,
              help="File or recorded id (default: the new measurement of the last check "
                   "with a verdict).")
@click.option("--new", "new", metavar="MEASUREMENT", default=None,
              help="File or recorded id of the current main version's measurement.")
@click.option("--to-seq", "to_seq", type=click.IntRange(min=0), default=None,
              help="End the window at this register seq (default: the register head).")
@click.option("--json", "as_json", is_flag=True, help="Print the recorded check as JSON.")
@pass_deployment
def check(dep: Deployment, old: str | None, new: str | None, to_seq: int | None,
          as_json: bool) -> None:
    """Run the next Law V check and record it (exit 1 on HALT).

    MEASUREMENT is a file (recorded in the same batch) or a recorded id. A
    missing measurement makes the check a GAP.
    """
    from cladelog.core import EXIT_FAILED
    from cladelog.lawv.commands import run_check

    outcome = run_check(dep, old=_measurement_arg(old, "--old"),
                        new=_measurement_arg(new, "--new"), to_seq=to_seq)
    c, result = outcome.check, outcome.result
    if as_json:
        _echo_json(c)
    else:
        window = "empty" if c["first_seq"] is None else f"seq {c['first_seq']}..{c['last_seq']}"
        r = "-" if result.r is None else human_number(result.r)
        dA = "-" if result.delta_a is None else human_number(result.delta_a, 3)
        s = human_number(result.s, 3)
        click.echo(f"{c['check_id']}: {result.verdict}  R = {r} (dA = {dA}, S = "
                   f"{s}; contract v{c['contract_version']}; window {window})")
        for reason in result.reasons:
            click.echo(f"  reason: {reason}")
        for flag in result.flags:
            click.echo(f"  flag: {flag}")
        if result.halts:
            click.echo(f"  HALT: no merge without human review (cladelog lawv review "
                       f"--check {c['check_id']} --decision resume|keep-halted ...)")
    if result.halts:
        raise SystemExit(EXIT_FAILED)


@lawv.command("review")
@click.option("--check", "check_ref", required=True, metavar="ID", help="The HALT check.")
@click.option("--decision", required=True, type=click.Choice(["resume", "keep-halted"]))
@click.option("--reviewer", required=True, metavar="NAME")
@click.option("--reason", required=True, metavar="TEXT")
@json_option()
@pass_deployment
def review(dep: Deployment, check_ref: str, decision: str, reviewer: str, reason: str,
           as_json: bool) -> None:
    """Record a human review of a HALT check: resume (unblock) or keep-halted."""
    from cladelog.lawv.commands import add_review

    outcome = add_review(dep, check=check_ref, decision=decision, reviewer=reviewer,
                         reason=reason)
    if as_json:
        echo_json({"check": outcome.key, "decision": decision, "reviewer": reviewer,
                   "position": outcome.events[-1].position})
        return
    click.echo(f"review of {outcome.key} recorded: {decision} "
               f"(position {outcome.events[-1].position})")


# -- views -------------------------------------------------------------------------------


@lawv.command("status")
@click.option("--limit", type=click.IntRange(min=0), default=10, show_default=True,
              help="How many of the last checks to list.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_deployment
def status(dep: Deployment, limit: int, as_json: bool) -> None:
    """The current Law V state: what blocks, the next check, R over the last checks."""
    from cladelog.lawv.projections import PROJECTION_NAME
    from cladelog.lawv.report import render_status, status_report

    doc = status_report(dep.state(PROJECTION_NAME), limit=limit, settings=_settings(dep))
    if as_json:
        _echo_json(doc)
    else:
        click.echo(render_status(doc))


@lawv.command("explain")
@click.argument("check_ref", metavar="CHECK")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_deployment
def explain(dep: Deployment, check_ref: str, as_json: bool) -> None:
    """The full arithmetic of a check, re-evaluated from its recorded inputs."""
    from cladelog.lawv.projections import PROJECTION_NAME
    from cladelog.lawv.report import explain_check, render_explain

    doc = explain_check(dep.state(PROJECTION_NAME), check_ref)
    if as_json:
        _echo_json(doc)
    else:
        click.echo(render_explain(doc))
