"""Plain-text tables for the command line, laid out by ``rich``.

A command prints a table with :func:`echo_table` instead of padding each cell by hand:
the columns are as wide as their widest cell (a long id no longer pushes the rest of its
row out of line), separated by two spaces, with no borders, colours or trailing spaces,
so that the output reads the same on a terminal, in a pipe and in a test.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

__all__ = ["echo_table"]

_WIDE = 10_000  # never wrap a row: a table goes to pipes and logs as often as to a terminal


def echo_table(columns: Sequence[str], rows: Iterable[Sequence[object]], *,
               right: Iterable[str] = (), indent: int = 0, err: bool = False,
               header: bool = True, min_widths: Mapping[str, int] | None = None) -> int:
    """Print ``rows`` under the header ``columns`` (with :func:`click.echo`); the columns
    named in ``right`` are right-aligned (numbers). Prints nothing, not even the header,
    when there is no row; returns the number of rows printed.

    A long listing printed a page at a time passes ``header=False`` after the first page
    and ``min_widths`` (column name: width), the widest cells seen so far, so that its
    pages line up."""
    import io

    import click
    from rich.console import Console
    from rich.table import Table

    body = [[str(cell) for cell in row] for row in rows]
    if not body:
        return 0
    aligned = set(right)
    table = Table(box=None, show_edge=False, pad_edge=False, padding=(0, 1),
                  header_style="", highlight=False)
    table.show_header = header
    for name in columns:
        table.add_column(name, justify="right" if name in aligned else "left", no_wrap=True,
                         min_width=(min_widths or {}).get(name))
    for row in body:
        table.add_row(*row)
    out = io.StringIO()
    Console(file=out, width=_WIDE, color_system=None, highlight=False, markup=False,
            emoji=False).print(table)
    for line in out.getvalue().splitlines():
        click.echo(" " * indent + line.rstrip(), err=err)
    return len(body)
