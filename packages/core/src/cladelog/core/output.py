"""What a command prints: one JSON document, numbers rounded for people, progress on stderr.

These are the public command-line helpers that core's commands and every plugin's
commands share, so that the ``cladelog`` command line reads as one program:

* :data:`HELP_SETTINGS` gives a group or command ``-h`` as well as ``--help``;
* :func:`json_option` is the ``--json`` flag with one help text, :func:`echo_json` prints
  the document (sorted keys, full precision, one line);
* :func:`human_number` rounds a number for a person (``0.0894``, not
  ``0.08943000000000002``); ``--json`` keeps the full value;
* :func:`progress_option` and :func:`progress` show a rich progress bar on stderr while
  long work runs, only where a person watches (stderr is a terminal) or ``--progress``
  asks for it. stdout is never touched, so ``--json`` output stays one document.

Only click is imported here at start-up; rich is imported when a bar is shown.
"""

from __future__ import annotations

import contextlib
import json
import math
import sys
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import click

__all__ = [
    "HELP_SETTINGS",
    "JSON_HELP",
    "echo_json",
    "human_number",
    "json_option",
    "progress",
    "progress_option",
]

F = TypeVar("F", bound=Callable[..., Any])

#: ``context_settings`` for every group and command: ``-h`` and ``--help``
HELP_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}

#: the help text of every ``--json`` flag
JSON_HELP = "Print the result as one JSON document on stdout (numbers in full precision)."

#: digits after the point :func:`human_number` keeps
HUMAN_DECIMALS = 4


def json_option(help: str | None = None) -> Callable[[F], F]:
    """The ``--json`` flag (parameter ``as_json``), with :data:`JSON_HELP` or ``help``."""
    return click.option("--json", "as_json", is_flag=True, help=help or JSON_HELP)


def echo_json(doc: Any) -> None:
    """Print ``doc`` as one line of JSON with sorted keys (NaN and infinities refused)."""
    click.echo(json.dumps(doc, sort_keys=True, ensure_ascii=False, allow_nan=False))


def human_number(value: float | int, decimals: int = HUMAN_DECIMALS) -> str:
    """``value`` rounded for a person: integers as they are, other numbers with
    ``decimals`` digits after the point (``0.08943000000000002`` -> ``0.0894``), a
    non-zero number too small for that with three significant digits (``2.5e-07``), one
    too large with thousands separators (``12,345,678.9``), and ``nan``/``inf`` by name.
    Machine output (``--json``) keeps the full value instead."""
    if isinstance(value, int):  # bool too
        return str(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value != 0 and abs(value) < 0.5 * 10**-decimals:
        return f"{value:.2e}"
    if abs(value) >= 1e6:
        return f"{value:,.1f}"
    text = f"{value:.{decimals}f}"
    return "0." + "0" * decimals if text == "-0." + "0" * decimals else text


def progress_option(fn: F) -> F:
    """The ``--progress`` flag (parameter ``show_progress``)."""
    return click.option(
        "--progress",
        "show_progress",
        is_flag=True,
        help="Show a progress bar on stderr even when stderr is not a terminal "
        "(it is shown on a terminal anyway; stdout is never touched).",
    )(fn)


@contextlib.contextmanager
def progress(
    description: str, *, total: int | None = None, force: bool = False, counted: bool = True
) -> Iterator[Callable[..., None]]:
    """A progress bar on stderr while the block runs; yields ``update(done, total=None)``.

    Shown when stderr is a terminal or ``force`` (``--progress``) asks for it; otherwise
    ``update`` does nothing and rich is never imported. On a terminal the bar goes away
    when the work is done; elsewhere its last state stays as one line, unless the work
    failed (then only the error is shown). ``counted=False``
    is for work that cannot count its steps: the bar pulses and shows the time taken."""
    terminal = _stderr_is_terminal()
    if not (terminal or force):
        yield quiet
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    console = Console(
        file=sys.stderr, force_terminal=terminal or None, width=None if terminal else 100
    )
    last = MofNCompleteColumn() if counted else TimeElapsedColumn()
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        last,
        console=console,
        transient=terminal,
        auto_refresh=terminal,
    )
    task = bar.add_task(description, total=total)

    def update(done: int, total: int | None = None) -> None:
        if total is None:
            bar.update(task, completed=done)
        else:
            bar.update(task, completed=done, total=total)

    if not terminal:  # no live display to a file or pipe: the last state, once, on success
        yield update
        console.print(bar.get_renderable())
        return
    with bar:
        yield update


def quiet(done: int, total: int | None = None) -> None:
    """The ``update`` :func:`progress` yields when no bar is shown (it does nothing)."""
    return None


def _stderr_is_terminal() -> bool:
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False
