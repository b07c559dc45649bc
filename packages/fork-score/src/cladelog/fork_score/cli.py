"""The ``fork-score`` command group (click).

``fork-score score --parent P.json --child C.json [--weights W.json] [scalars...]
[--branch-set ID --branch-id ID --parent-root R [--child-root R]]``
prints the scored fork as one JSON object with sorted keys and exits

* 0 for ACCEPT or MARGINAL,
* 1 for REJECT,
* 2 for bad input or usage, with one line ``error: <path>: <problem>`` on
  stderr and no traceback; nothing is appended then.

Where a deployment file is found (``--config`` of the root command,
``$CLADELOG_CONFIG``, or the nearest ``cladelog.toml`` in the working directory
or a folder above it) and enables fork-score, scoring uses its term plugins and
``[settings.fork-score]``; with no deployment file (or one that does not enable
fork-score) it is the pure function with the defaults, and a ``warning:`` line
on stderr says so. ``--branch-set`` records the result
as a ``fork_score.branch_scored`` event and needs a deployment.

``fork-score branch-set list`` and ``fork-score branch-set show ID`` read the
recorded branch sets. The same commands run without the ``cladelog`` root as
``python -m cladelog.fork_score`` (:data:`standalone`).

Imports stay light here: the scoring modules are imported inside the command,
so building the group (e.g. when the core CLI collects plugin commands) costs
next to nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import IO, TYPE_CHECKING, Any

import click
from cladelog.core import HELP_SETTINGS, OneLineCommand, OneLineGroup, human_number

if TYPE_CHECKING:
    from cladelog.fork_score.result import ScoredFork
    from cladelog.fork_score.service import ScoringContext

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_OK",
    "EXIT_REJECT",
    "OnScored",
    "fork_score",
    "main",
    "run_score",
    "standalone",
]

EXIT_OK = 0
EXIT_REJECT = 1
EXIT_BAD_INPUT = 2

#: Callback run with the scored fork once scoring succeeded, before it is
#: printed. Branch-set recording is plugged in here.
OnScored = Callable[["ScoredFork"], None]


class _BadInput(click.ClickException):
    """Bad input or usage: one line on stderr, exit code 2 (or core's code for the error)."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: str, code: int = EXIT_BAD_INPUT) -> None:
        super().__init__(message)
        self.exit_code = code  # type: ignore[misc]

    def show(self, file: IO[Any] | None = None) -> None:
        line = self.message.encode("ascii", "backslashreplace").decode("ascii")
        click.echo(f"error: {' '.join(line.split())}", err=True)


class _OneLineCommand(OneLineCommand):
    """A command whose usage errors and cladelog errors are reported as one ``error:`` line.

    Under the ``cladelog`` root command core's CLI would map the errors itself; these
    commands also run without it (``python -m cladelog.fork_score``, the ``fork-score``
    script), so they take core's one-line usage errors (:class:`cladelog.core.OneLineCommand`)
    and apply core's mapping of errors (:func:`cladelog.core.exit_code`) here.
    """

    def invoke(self, ctx: click.Context) -> Any:
        from cladelog.core import CladelogError, exit_code

        try:
            return super().invoke(ctx)
        except CladelogError as exc:  # ForkScoreError is an InputError
            raise _BadInput(str(exc), exit_code(exc) or EXIT_BAD_INPUT) from None


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
    context: ScoringContext | None = None,
) -> ScoredFork:
    """Read the files, score the fork and hand the result to ``on_scored``.

    ``context`` (:class:`~cladelog.fork_score.service.ScoringContext`) brings a
    deployment's extra terms, floors and default weights file; ``None`` means
    the plain defaults. Raises
    :class:`~cladelog.fork_score.errors.ForkScoreError` on bad input.
    """
    from cladelog.fork_score.jsonio import load_json_file
    from cladelog.fork_score.service import ScoringContext, score_in_context

    ctx = context if context is not None else ScoringContext()
    parent = load_json_file(parent_path)
    child = load_json_file(child_path)
    weights = ctx.load_weights(weights_path)
    scalar_kwargs: dict[str, Any] = dict(scalars or {})
    result = score_in_context(ctx, parent, child, weights, **scalar_kwargs)
    if on_scored is not None:
        on_scored(result)
    return result


def _open_deployment(ctx: click.Context, need: str | None) -> Any:
    """The deployment the root command names, or None when there is none to use.

    ``need`` names the option that requires one (then a missing deployment, or
    one that does not enable fork-score, is bad input).
    """
    from cladelog.core import find_config, pass_deployment

    given = ctx.find_root().params.get("config")
    path = find_config(given)
    if not path.exists():
        if need is not None:
            raise _BadInput(f"{need}: needs a deployment, and {path} does not exist "
                            "(run 'cladelog init -p fork-score' or pass --config)")
        # scoring still works, but a deployment's weights and terms would change the
        # result: never drop them without a word
        if given:
            _warn_later(ctx, f"{path}: no such deployment file: default weights, "
                        "no plugin terms")
        else:
            _warn_later(ctx, "no cladelog.toml found: default weights, no plugin terms "
                        "(searched this folder and every folder above; --config FILE "
                        "names one)")
        return None
    def current(dep: Any) -> Any:
        return dep

    deployment = pass_deployment(current)()  # type: ignore[call-arg]
    if "fork-score" not in deployment.plugin_versions:
        if need is not None:
            raise _BadInput(f"{need}: fork-score is not enabled in the deployment {path}")
        _warn_later(ctx, f"{path} does not enable fork-score: default weights, "
                    "no plugin terms")
        return None
    return deployment


def _warn_later(ctx: click.Context, message: str) -> None:
    """Keep a warning for :func:`_show_warnings`: shown with a result, not with an error
    (bad input stays one ``error:`` line)."""
    ctx.meta.setdefault("fork_score.warnings", []).append(message)


def _show_warnings(ctx: click.Context) -> None:
    for message in ctx.meta.pop("fork_score.warnings", ()):
        click.echo(f"warning: {message}", err=True)


@click.group(name="fork-score", context_settings=HELP_SETTINGS)
def fork_score() -> None:
    """Score a candidate fork against its parent (ForkScore); read branch sets."""


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
@click.option("--branch-set", "branch_set_id", metavar="ID",
              help="Record the result as a branch of this branch set (needs a deployment).")
@click.option("--branch-id", metavar="ID", help="The branch (fork) id; required with --branch-set.")
@click.option("--parent-root", metavar="R", help="The shared parent; required with --branch-set.")
@click.option("--child-root", metavar="R", help="The child (omit for an in-flight branch).")
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
    branch_set_id: str | None,
    branch_id: str | None,
    parent_root: str | None,
    child_root: str | None,
) -> None:
    """Score CHILD against PARENT; print the scored fork as JSON.

    With --branch-set, also append a fork_score.branch_scored event. Exit 0 on
    ACCEPT or MARGINAL, 1 on REJECT, 2 on bad input (nothing appended).
    """
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
    branch = _branch_options(branch_set_id, branch_id, parent_root, child_root)
    deployment = _open_deployment(ctx, "--branch-set" if branch else None)
    recorded: list[Any] = []

    def record(result: ScoredFork) -> None:
        from cladelog.fork_score.service import record_branch_score

        recorded.append(record_branch_score(deployment, result, **branch))

    from cladelog.fork_score.service import ScoringContext, scoring_context

    context = ScoringContext() if deployment is None else scoring_context(deployment)
    result = run_score(parent_path, child_path, weights_path, scalars,
                       on_scored=record if branch else None, context=context)
    if not result.hard_flag_gating:
        flags = f": {', '.join(result.flags)} reported, not enforced" if result.flags else ""
        _warn_later(ctx, f"hard-flag gating is off ([settings.fork-score] "
                    f"hard_flag_gating = false){flags}")
    _show_warnings(ctx)
    doc = result.to_dict()
    if recorded:
        event = recorded[0]
        doc["recorded"] = {"position": event.position, "hash": event.hash,
                           "stream": event.stream, **branch}
    click.echo(json.dumps(doc, sort_keys=True, allow_nan=False))
    ctx.exit(EXIT_REJECT if result.verdict == "REJECT" else EXIT_OK)


def _branch_options(
    branch_set_id: str | None, branch_id: str | None, parent_root: str | None,
    child_root: str | None,
) -> dict[str, Any]:
    """Check the branch-set options together; ``{}`` when no branch set is given."""
    from cladelog.fork_score.events import check_id

    if branch_set_id is None:
        for option, value in (("--branch-id", branch_id), ("--parent-root", parent_root),
                              ("--child-root", child_root)):
            if value is not None:
                raise _BadInput(f"{option}: only meaningful with --branch-set")
        return {}
    if branch_id is None:
        raise _BadInput("--branch-set: needs --branch-id")
    if parent_root is None:
        raise _BadInput("--branch-set: needs --parent-root")
    options = {"--branch-set": branch_set_id, "--branch-id": branch_id,
               "--parent-root": parent_root, "--child-root": child_root}
    for option, value in options.items():
        if value is not None:
            try:
                check_id(value, option)
            except ValueError as exc:
                raise _BadInput(str(exc)) from None
    return {"branch_set_id": branch_set_id, "branch_id": branch_id,
            "parent_root": parent_root, "child_root": child_root}


@fork_score.group(name="branch-set", context_settings=HELP_SETTINGS)
def branch_set() -> None:
    """Read recorded branch sets (fork_score.branch_scored events)."""


@branch_set.command(name="list", cls=_OneLineCommand)
@click.option("--json", "as_json", is_flag=True, help="One JSON object instead of a table.")
@click.pass_context
def branch_set_list(ctx: click.Context, as_json: bool) -> None:
    """List every recorded branch set with its density and best branch."""
    from cladelog.fork_score.branch_sets import list_branch_sets

    deployment = _open_deployment(ctx, "branch-set list")
    sets = list_branch_sets(deployment)
    if as_json:
        click.echo(json.dumps({"branch_sets": [s.to_dict() for s in sets]}, sort_keys=True))
        return
    if not sets:
        click.echo("no branch sets recorded")
        return
    from cladelog.core import echo_table

    echo_table(["BRANCH SET", "BRANCHES", "BEST BRANCH", "SCORE", "PARENT"],
               [(s.branch_set_id, s.density, s.best_branch_id, human_number(s.best_score),
                 ", ".join(s.parent_roots)) for s in sets], right=["BRANCHES", "SCORE"])


@branch_set.command(name="show", cls=_OneLineCommand)
@click.argument("branch_set_id", metavar="ID")
@click.option("--temperature", metavar="T",
              help="Softmax temperature (default: settings.fork-score.softmax_temperature).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object instead of a table.")
@click.pass_context
def branch_set_show(
    ctx: click.Context, branch_set_id: str, temperature: str | None, as_json: bool
) -> None:
    """Show the branches of branch set ID, best first, with softmax weights."""
    from cladelog.fork_score.branch_sets import default_temperature, rank_branches

    temp = _number(temperature, "--temperature")
    deployment = _open_deployment(ctx, "branch-set show")
    used = default_temperature(deployment) if temp is None else temp
    ranked = rank_branches(deployment, branch_set_id, used)
    if not ranked:
        raise _BadInput(f"branch set {branch_set_id!r:.60}: nothing recorded under this id")
    if as_json:
        click.echo(json.dumps({"branch_set_id": branch_set_id, "density": len(ranked),
                               "temperature": used,
                               "branches": [b.to_dict() for b in ranked]}, sort_keys=True))
        return
    click.echo(f"branch set {branch_set_id}: {len(ranked)} branch(es), temperature {used:g}")
    from cladelog.core import echo_table

    def flags_of(b: Any) -> str:
        text = ", ".join(b.flags) or "-"
        return text if b.hard_flag_gating or not b.flags else f"{text} (gating off)"

    echo_table(["RANK", "BRANCH", "SCORE", "WEIGHT", "VERDICT", "FLAGS"],
               [(b.rank, b.branch_id, human_number(b.score), human_number(b.weight), b.verdict,
                 flags_of(b)) for b in ranked],
               right=["RANK", "SCORE", "WEIGHT"])
    _echo_breakdowns(ranked)


def _echo_breakdowns(ranked: Any) -> None:
    """Each branch's breakdown, one row per term (built-ins in formula order, then
    extra terms by key), one column per branch in rank order; a term a branch did not
    record shows ``-`` (and -0.0, a penalty of nothing, shows as 0)."""
    from cladelog.core import echo_table
    from cladelog.fork_score.terms import BUILTIN_TERMS, term_label

    builtin = [t.key for t in BUILTIN_TERMS]
    extra = sorted({key for b in ranked for key in b.breakdown} - set(builtin))
    keys = [k for k in builtin if any(k in b.breakdown for b in ranked)] + extra
    if not keys:
        return
    click.echo("")
    click.echo("breakdown (signed contribution of each term):")
    columns = ["TERM", "KEY"] + [f"#{b.rank} {b.branch_id}" for b in ranked]
    rows = [[term_label(key), key] + [
        f"{b.breakdown[key] + 0.0:.6f}" if key in b.breakdown else "-" for b in ranked
    ] for key in keys]
    echo_table(columns, rows, right=columns[2:])


@click.group(name="fork-score", cls=OneLineGroup, context_settings=HELP_SETTINGS)
@click.option("-c", "--config", metavar="FILE", envvar="CLADELOG_CONFIG",
              help="Deployment file (default: $CLADELOG_CONFIG, or the nearest "
                   "cladelog.toml in this folder or above).")
def standalone(config: str | None) -> None:
    """ForkScore without the cladelog root command (python -m cladelog.fork_score).

    'score' works with no deployment file (the pure function with defaults).
    """


standalone.add_command(score_command)
standalone.add_command(branch_set)


def main(argv: list[str] | None = None) -> None:
    """Run :data:`standalone` (the target of ``python -m cladelog.fork_score``)."""
    standalone.main(args=argv, prog_name="fork-score")
