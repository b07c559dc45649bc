"""cladelog.core.echo_table: the CLI's plain-text tables (rich lays them out)."""

from __future__ import annotations

import click
from cladelog.core import echo_table
from click.testing import CliRunner


def _render(*args: object, **kw: object) -> str:
    @click.command()
    def show() -> None:
        echo_table(*args, **kw)  # type: ignore[arg-type]

    return CliRunner().invoke(show, []).output


def test_columns_are_as_wide_as_their_widest_cell() -> None:
    text = _render(["SEQ", "KIND", "NOTE"], [(7, "gain_test", "a"), (123, "x", "[b] :c:")],
                   right=["SEQ"])
    assert text.splitlines() == [
        "SEQ  KIND       NOTE",
        "  7  gain_test  a",
        "123  x          [b] :c:",  # no markup, no emoji codes: text stays text
    ]


def test_a_long_cell_is_never_wrapped_nor_cut() -> None:
    long = "x" * 300
    lines = _render(["A", "B"], [(long, "end")], indent=2).splitlines()
    assert lines[1] == f"  {long}  end"
    assert lines[0].startswith("  A ") and lines[0].endswith("B")


def test_no_rows_print_nothing() -> None:
    assert _render(["A"], []) == ""


def test_no_trailing_spaces_nor_escape_codes() -> None:
    text = _render(["LONG HEADER", "B"], [("a", "b")])
    assert all(line == line.rstrip() for line in text.splitlines())
    assert "\x1b" not in text
