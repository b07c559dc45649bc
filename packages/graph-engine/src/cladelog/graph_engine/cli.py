"""``cladelog graph``: run scenarios as recorded sessions, validate trees, replay sessions.

Exit codes: 0 success, 1 validation errors (``validate``), 2 bad or unreadable input
(a :class:`~cladelog.graph_engine.errors.GraphEngineError` is a core ``InputError``, which
core's CLI reports as one line, exit 2).
Only click is imported at start-up; the engine is imported inside the command bodies.
"""

from __future__ import annotations

from typing import Any

import click
from cladelog.core import HELP_SETTINGS

__all__ = ["graph"]


def _fail_input(exc: Exception) -> Any:
    from cladelog.core import fail

    fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)


@click.group("graph", context_settings=HELP_SETTINGS)
def graph() -> None:
    """The concept-graph engine: recorded sessions, validation, replay."""


def _default_session(dep: Any, base: str) -> str:
    import re

    from .events import session_stream

    stem = re.sub(r"[^A-Za-z0-9_.:@-]", "-", base).strip("-.") or "session"
    stem = stem[:120]
    candidate, n = stem, 1
    while dep.store.stream_version(session_stream(candidate)):
        n += 1
        candidate = f"{stem}-{n}"
    return candidate


@graph.command("run")
@click.argument("scenario", metavar="SCENARIO.json")
@click.option("--out", "out", metavar="FILE", default=None,
              help="Write the expected-output JSON here instead of stdout.")
@click.option("--session", "session_id", metavar="ID", default=None,
              help="Session id (default: the scenario's name or file stem, made unique).")
@click.option("--json", "as_json", is_flag=True,
              help="With --out: print the session, its state count and the file as one JSON "
                   "document (without --out the expected output is JSON already).")
def run_cmd(scenario: str, out: str | None, session_id: str | None, as_json: bool) -> None:
    """Run a SPEC §2 scenario as a recorded session and print its expected output.

    Every engine record is recorded on stream graph.<ID>, in runs of up to pack_records
    (settings, default 1000) per graph_engine.records_packed event, or one event each with
    pack_records = 0; a 'reload' step rebuilds the engine from the log. A malformed
    scenario (unknown keys, a bad provider spec, a substitution that does not parse, ...) is
    refused before anything is recorded; a step refused mid-run (e.g. an unknown target) is
    recorded as a graph_engine.run_failed event after what the run did, and named in the
    error (exit 2).
    """
    import json
    from pathlib import Path

    from cladelog.core import pass_deployment, read_json_file

    @pass_deployment
    def body(dep: Any) -> None:
        from .sessions import run_recorded_scenario

        data = read_json_file(scenario)
        if not isinstance(data, dict):
            _fail_input(ValueError(f"{scenario}: a scenario must be a JSON object"))
        name = data.get("name") if isinstance(data.get("name"), str) else None
        sid = session_id or _default_session(dep, name or Path(scenario).stem)
        result = run_recorded_scenario(dep, data, sid)
        text = json.dumps(result, indent=2, sort_keys=True, ensure_ascii=False)
        if out is None:
            click.echo(text)
            click.echo(f"session {sid}: recorded on stream graph.{sid}", err=True)
        else:
            try:
                Path(out).write_text(text + "\n", encoding="utf-8")
            except OSError as exc:
                _fail_input(ValueError(f"--out: cannot write {out} ({exc.strerror or exc})"))
            if as_json:
                from cladelog.core import echo_json

                echo_json({"session": sid, "stream": f"graph.{sid}",
                           "states": len(result["states"]), "out": out})
            else:
                click.echo(f"session {sid}: {len(result['states'])} state(s), written to "
                           f"{out}")

    body()  # type: ignore[call-arg]


@graph.command("validate")
@click.argument("tree", metavar="TREE")
@click.option("--palette", "palette", multiple=True, metavar="NS::FN",
              help="A provider name allowed in the tree (repeatable). Default: the "
                   "providers the deployment's plugins register; any other is an error.")
@click.option("--strict", is_flag=True,
              help="Providers outside the palette and unknown references are errors.")
@click.option("--known-fact", "known_facts", multiple=True, metavar="KEY",
              help="A fact the host or seed provides (repeatable); turns on the check that "
                   "every local reference is produced by a concept or declared.")
@click.option("--continuous-gates", "continuous_gates", is_flag=True,
              help="Warn on gates comparing a fact with a fractional literal.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def validate_cmd(tree: str, palette: tuple[str, ...], strict: bool,
                 known_facts: tuple[str, ...], continuous_gates: bool, as_json: bool) -> None:
    """Check a concept tree (JSON/JSONC file, or a concept-set folder).

    Reports the loader's errors and the four passes of SPEC §1.14 (facts and synonym rings,
    per-concept checks, stratification, interface coherence) as errors and warnings.
    Provider, cleaner and onCast names must always read 'Ns::fn'. Without --palette, each
    must be registered by an enabled plugin (graph_engine_providers), as a session needs
    at load; a scenario's or a program's own providers are named with --palette instead
    (then a name outside it is a warning, an error with --strict).
    Exit 0 without errors, 1 with errors, 2 when TREE cannot be read.
    """
    import json
    import sys

    from cladelog.core import pass_deployment

    from .errors import GraphEngineError
    from .tree import load_tree
    from .validate import ValidationReport, registry_issues, validate_tree

    try:
        raw = load_tree(tree)
    except (GraphEngineError, OSError, UnicodeDecodeError, RecursionError) as exc:
        _fail_input(ValueError(f"{tree}: cannot read ({exc})"))
    report = validate_tree(raw, palette=palette or None, strict=strict,
                           known_facts=known_facts or None,
                           flag_continuous_gates=continuous_gates)
    if not palette and not any(i.kind == "load" for i in report.errors):

        @pass_deployment
        def registered(dep: Any) -> list[str]:
            from .sessions import plugin_providers

            return sorted(plugin_providers(dep))

        extra = registry_issues(raw, registered())  # type: ignore[call-arg]
        report = ValidationReport(report.errors + tuple(extra), report.warnings)
    if as_json:
        click.echo(json.dumps(report.to_json(), sort_keys=True, ensure_ascii=False))
    else:
        for issue in report.errors:
            click.echo(f"error    {issue.kind:<24} {issue.message}")
        for issue in report.warnings:
            click.echo(f"warning  {issue.kind:<24} {issue.message}")
        click.echo(f"{tree}: {len(report.errors)} error(s), {len(report.warnings)} warning(s)")
    if report.errors:
        sys.exit(1)


@graph.command("replay")
@click.argument("session_id", metavar="SESSION")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def replay_cmd(session_id: str, as_json: bool) -> None:
    """Rebuild SESSION from the log (no provider runs); print its final digest and counts.

    Exit 1 when the recorded run failed at a step (a graph_engine.run_failed event): the
    state printed is where it stopped, not a completed run.
    """
    import json
    import sys

    from cladelog.core import pass_deployment

    @pass_deployment
    def body(dep: Any) -> None:
        from .sessions import replay_session

        engine = replay_session(dep, session_id)
        facts = engine.facts()
        failed = engine.run_failed
        doc = {"session": session_id, "revision": engine.revision, "digest": engine.digest(),
               "objects": len(facts),
               "facts": sum(len([k for k in f if k != "_rev"]) for f in facts.values()),
               "failed": failed}
        if as_json:
            click.echo(json.dumps(doc, sort_keys=True))
        else:
            click.echo(f"session {session_id}: revision {doc['revision']}, {doc['objects']} "
                       f"object(s), {doc['facts']} fact(s), digest {doc['digest']}")
            if failed is not None:
                click.echo(f"session {session_id}: the run FAILED ({failed['message']}); "
                           f"the state above is where it stopped")
        if failed is not None:
            sys.exit(1)

    body()  # type: ignore[call-arg]
