"""``cladelog demo`` and ``cladelog report`` (entry-point group ``cladelog.commands``).

Both are tools: they need no deployment to be listed, create or read one
through the public API, and exit 0 on success, 1 when a verification of the
demo fails, 2 on bad input (one line ``error: ...`` on stderr).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import click
from cladelog.core import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    HELP_SETTINGS,
    echo_json,
    fail,
    json_option,
    progress_option,
)
from cladelog.core import progress as report_progress  # demo() has a progress of its own

__all__ = ["demo", "report"]

#: The deployment file's name (core's ``find_config`` finds it).
DEFAULT_CONFIG = "cladelog.toml"


def _stderr_console() -> Any:
    from rich.console import Console

    return Console(file=sys.stderr)


def _stdout_console() -> Any:
    """A console for the summary that stops as every cladelog command does when its reader
    goes away (``cladelog report | head``): quietly, exit 141. Rich's own handler exits 1,
    which is the code of a failed verification."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise SystemExit(141)

    return _Console(file=sys.stdout, soft_wrap=True)


@click.command("demo", context_settings=HELP_SETTINGS)
@click.option("--dir", "directory", default="cladelog-demo", show_default=True,
              metavar="DIR", help="Folder of the new deployment (must be empty or absent).")
@click.option("--store", metavar="PATH|URL", default=None,
              help="Store of the new deployment (default: DIR/cladelog.sqlite3); "
                   "it must be empty. A relative PATH is relative to the current "
                   "folder, not to DIR.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the whole history: same seed, same log, same digests.")
@click.option("--force", is_flag=True,
              help="Reuse a non-empty DIR, replacing only the demo's own files.")
@click.option("--candidates", type=int, default=30, hidden=True,
              help="Number of candidate versions (16-100000; fewer runs faster).")
@json_option()
def demo(directory: str, store: str | None, seed: int, force: bool, candidates: int,
         as_json: bool) -> None:
    """Create a deployment with every plugin and drive a self-improving engine's history.

    About 30 candidate versions over five checkpoints: signed oracle receipts,
    ForkScore branch sets, anchor measurements and Law V checks that go
    CONTINUE, WARNING, then HALT; the gate blocks, a human reviews, merges
    resume; a graph-engine session; then a replay from scratch, verification
    of the chain and of every receipt, and the report (DIR/report.html).
    """
    from pathlib import Path  # not at import: 'cladelog --help' loads this module

    from cladelog.core import CladelogError

    from .errors import DemoError, ReportError
    from .model import DemoConfig
    from .report import write_report
    from .runner import check_directory, run_demo

    started = time.perf_counter()
    target = Path(directory)
    try:
        config = DemoConfig(seed=seed, candidates=candidates)
        check_directory(target, force=force)
    except DemoError as exc:
        fail(str(exc), EXIT_BAD_INPUT)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    bar = Progress(TextColumn("[bold]demo[/bold]"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.description}"), console=_stderr_console(),
                   transient=False)
    task = bar.add_task("starting", total=None)
    shown: list[bool] = []

    def progress(what: str, done: int, total: int) -> None:
        # the display starts with the first step, so a refused folder or store prints
        # nothing but its one error line
        if not shown:
            bar.start()
            shown.append(True)
        bar.update(task, description=what, completed=done, total=total)

    def stop() -> None:
        if shown:
            bar.stop()
            shown.clear()

    try:
        result = run_demo(target, config=config, store=store, force=force,
                          progress=progress)
    except (DemoError, CladelogError) as exc:
        stop()  # the bar's last line first, then the error
        fail(str(exc), EXIT_BAD_INPUT)
    finally:
        stop()
    failed = [c for c in result.verify_calls if c.exit_code != 0]
    for call in failed:
        click.echo(f"error: cladelog {' '.join(call.args)}: {call.output.strip()}", err=True)
    try:
        with report_progress("the report: verifying the log, drawing the charts",
                             counted=False):
            data = write_report(result.config_path, target / "report.html",
                                title=f"cladelog demo (seed {seed})")
    except (ReportError, CladelogError) as exc:
        fail(str(exc), EXIT_FAILED)
    del data
    elapsed = time.perf_counter() - started
    if as_json:
        echo_json({"deployment": str(result.config_path.resolve()),
                   "head": {"position": result.head_position, "hash": result.head_hash},
                   "fork_score": dict(result.branch_verdicts),
                   "lawv": list(result.lawv_verdicts),
                   "gate": [{"candidate": c.args[-1], "allowed": c.exit_code == 0}
                            for c in result.gate_calls],
                   "graph": result.graph_note, "verified": not failed,
                   "seconds": elapsed,
                   "report": str((target / "report.html").resolve())})
        if failed:
            sys.exit(EXIT_FAILED)
        return
    verdicts = ", ".join(f"{v} {n}" for v, n in result.branch_verdicts.items())
    click.echo(f"deployment  {result.config_path.resolve()}")
    click.echo(f"log         {result.head_position} events, head {result.head_hash}")
    click.echo(f"fork-score  {verdicts}")
    click.echo(f"law v       {' -> '.join(result.lawv_verdicts)}")
    gates = ", ".join(f"{c.args[-1]}:{'allowed' if c.exit_code == 0 else 'BLOCKED'}"
                      for c in result.gate_calls)
    click.echo(f"gate        {gates}")
    note = result.graph_note if len(result.graph_note) <= 110 else result.graph_note[:107] + "..."
    click.echo(f"graph       {note}")
    verified = "ok" if not failed else "FAILED"
    click.echo(f"verify      chain and receipts {verified}")
    click.echo(f"took        {elapsed:.1f} s")
    click.echo(f"report      {(target / 'report.html').resolve()}")
    if failed:
        sys.exit(EXIT_FAILED)


@click.command("report", context_settings=HELP_SETTINGS)
@click.option("-c", "--config", "config", metavar="FILE", default=None,
              help="Deployment file (default: cladelog's --config, $CLADELOG_CONFIG or "
                   "the nearest cladelog.toml in this folder or above).")
@click.option("--html", "html_file", metavar="FILE", default=None,
              help="Where to write the HTML report (default: report.html next to the "
                   "deployment file); a file, not a folder.")
@json_option("Print the report's data (what the page shows) as one JSON document instead "
             "of the terminal summary.")
@progress_option
@click.pass_context
def report(ctx: click.Context, config: str | None, html_file: str | None,
           as_json: bool, show_progress: bool) -> None:
    """Summarise a deployment on the terminal and write a self-contained HTML report.

    Charts: R per Law V check with its Monte Carlo band, claimed versus external
    gains, the ForkScore breakdown of the latest branch set, the register as a
    timeline, and what the gate blocks and why. The hash chain is verified
    first: a log that does not verify exits 1 naming the first bad position (no
    page is written). A deployment with nothing recorded by the plugins exits 2
    with a message (no page is written).
    """
    from pathlib import Path

    from cladelog.core import CladelogError, find_config

    from .errors import ReportError, ReportPathError, ReportVerificationError
    from .report import check_html_target, write_report
    from .terminal import print_summary

    root_config = ctx.find_root().params.get("config") if ctx.parent is not None else None
    # as every cladelog command: --config, else $CLADELOG_CONFIG, else the nearest
    # cladelog.toml in the working directory or a folder above it
    path = find_config(config or root_config)
    if path.is_dir():
        fail(f"--config: {path} is a folder; give the deployment file "
             f"(for example {path / DEFAULT_CONFIG})")
    if not path.exists():
        fail(f"{path}: no deployment file here (pass --config FILE or run 'cladelog demo')")
    target = Path(html_file) if html_file else path.parent / "report.html"
    try:
        check_html_target(target)
        with report_progress("verifying the log and writing the report",
                             force=show_progress, counted=False):
            data = write_report(path, target)
    except ReportVerificationError as exc:
        fail(str(exc), EXIT_FAILED)
    except ReportError as exc:
        if isinstance(exc, ReportPathError) and not html_file:
            fail(f"{exc} (the default page next to the deployment file; pass --html FILE)")
        fail(str(exc), EXIT_BAD_INPUT)
    except CladelogError as exc:
        fail(str(exc), EXIT_BAD_INPUT)
    if as_json:
        import attrs

        echo_json(attrs.asdict(data) | {"html": str(target.resolve())})
        return
    print_summary(data, _stdout_console())
    click.echo(f"report written to {target.resolve()}")
