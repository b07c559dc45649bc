"""The ``fork-score`` command group (click).

``fork-score score --parent P.json --child C.json [--weights W.json] [scalars...]``
prints the scored fork as one JSON object with sorted keys and exits

* 0 for ACCEPT or MARGINAL,
* 1 for REJECT,
* 2 for bad input or usage, with one line ``error: <path>: <problem>`` on
  stderr and no traceback.

Imports stay light here: the scoring modules are imported inside the command,
so building the group (e.g. when the core CLI collects plugin commands) costs
next to nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import IO, TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from cladelog.fork_score.result import ScoredFork

__all__ = ["EXIT_BAD_INPUT", "EXIT_OK", "EXIT_REJECT", "OnScored", "fork_score", "run_score"]

EXIT_OK = 0
EXIT_REJECT = 1
EXIT_BAD_INPUT = 2

#: Callback run with the scored fork once scoring succeeded, before it is
#: printed. This is where branch-set recording will be plugged in.
OnScored = Callable[["ScoredFork"], None]


class _BadInput(click.ClickException):
    """Bad input or usage: one line on stderr, exit code 2."""

    exit_code = EXIT_BAD_INPUT

    def show(self, file: IO[Any] | None = None) -> None:
        line = self.message.encode("ascii", "backslashreplace").decode("ascii")
        click.echo(f"error: {' '.join(line.split())}", err=True)


class _OneLineCommand(click.Command):
    """A command whose usage errors are reported as one ``error:`` line."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            raise _BadInput(exc.format_message()) from None


def _number(text: str | None, option: str) -> float | None:
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        raise _BadInput(f"{option}: not a number: {text[:40]!r}") from None


def _integer(text: str | None, option: str) -> int | None:
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        raise _BadInput(f"{option}: not an integer: {text[:40]!r}") from None


def run_score(
    parent_path: str,
    child_path: str,
    weights_path: str | None = None,
    scalars: Mapping[str, Any] | None = None,
    *,
    on_scored: OnScored | None = None,
) -> ScoredFork:
    """Read the files, score the fork and hand the result to ``on_scored``.

    Raises :class:`~cladelog.fork_score.errors.ForkScoreError` on bad input.
    """
    from cladelog.fork_score.jsonio import load_json_file
    from cladelog.fork_score.scoring import score
    from cladelog.fork_score.weights import weights_from_json

    parent = load_json_file(parent_path)
    child = load_json_file(child_path)
    weights = None if weights_path is None else weights_from_json(weights_path)
    scalar_kwargs: dict[str, Any] = dict(scalars or {})
    result = score(parent, child, weights, **scalar_kwargs)
    if on_scored is not None:
        on_scored(result)
    return result


@click.group(name="fork-score")
def fork_score() -> None:
    """Score a candidate fork against its parent (ForkScore)."""


@fork_score.command(name="score", cls=_OneLineCommand)
@click.option(
    "--parent",
    "parent_path",
    required=True,
    metavar="P.json",
    help="Battery results of the parent (JSON).",
)
@click.option(
    "--child",
    "child_path",
    required=True,
    metavar="C.json",
    help="Battery results of the child (JSON).",
)
@click.option(
    "--weights",
    "weights_path",
    metavar="W.json",
    help='Weight overrides, e.g. {"eta": 5.0, "lambda": 1.0}.',
)
@click.option(
    "--capital-delta", metavar="N", help="Capital cost delta; positive when the child costs more."
)
@click.option("--selfmodel-calibration-gain", metavar="N", help="Self-model calibration gain.")
@click.option(
    "--audit-completeness",
    metavar="N",
    help="Fraction of state-changing ops with an audit event, in [0, 1].",
)
@click.option(
    "--memory-invalidation-count",
    metavar="N",
    help="Memory records the child would falsify (integer >= 0).",
)
@click.option(
    "--validator-diversity",
    metavar="N",
    help="Multi-validator agreement entropy (0 in single-validator mode).",
)
@click.pass_context
def score_command(
    ctx: click.Context,
    parent_path: str,
    child_path: str,
    weights_path: str | None,
    capital_delta: str | None,
    selfmodel_calibration_gain: str | None,
    audit_completeness: str | None,
    memory_invalidation_count: str | None,
    validator_diversity: str | None,
) -> None:
    """Score CHILD against PARENT; print the scored fork as JSON.

    Exit 0 on ACCEPT or MARGINAL, 1 on REJECT, 2 on bad input.
    """
    from cladelog.fork_score.errors import ForkScoreError

    given: dict[str, float | int | None] = {
        "capital_delta": _number(capital_delta, "--capital-delta"),
        "selfmodel_calibration_gain": _number(
            selfmodel_calibration_gain, "--selfmodel-calibration-gain"
        ),
        "audit_completeness": _number(audit_completeness, "--audit-completeness"),
        "memory_invalidation_count": _integer(
            memory_invalidation_count, "--memory-invalidation-count"
        ),
        "validator_diversity": _number(validator_diversity, "--validator-diversity"),
    }
    scalars = {name: value for name, value in given.items() if value is not None}
    try:
        # BRANCH-SET HOOK: branch-set recording will pass its recorder here as
        # ``on_scored`` (and add its options to this command). Not wired yet.
        result = run_score(parent_path, child_path, weights_path, scalars, on_scored=None)
    except ForkScoreError as exc:
        raise _BadInput(str(exc)) from None
    click.echo(json.dumps(result.to_dict(), sort_keys=True, allow_nan=False))
    ctx.exit(EXIT_REJECT if result.verdict == "REJECT" else EXIT_OK)
