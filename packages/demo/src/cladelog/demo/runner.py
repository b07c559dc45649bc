"""Drive the demo's history into a fresh deployment through the plugins' public APIs.

This is the demo's only module with side effects: it writes the deployment
folder (``cladelog.toml``, the store, ``keys/``) and appends events. Every
append goes through a :class:`~cladelog.core.Deployment` opened with a
:class:`~cladelog.demo.clock.DemoClock`, and every number comes from
generators seeded by the demo seed, so the same seed writes the same log, byte
for byte, on every machine. Read-only steps (the promotion gate, the final
replay and the verifications) run the ``cladelog`` command line itself.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import attrs

from .clock import DemoClock
from .errors import DemoError
from .model import (
    ANCHORS,
    DemoConfig,
    RoundPlan,
    artifact_digest,
    draw_battery,
    draw_games,
    initial_battery,
    key_seed,
    plan_rounds,
    scalars_for,
    target_verdicts,
)
from .oracle import (
    epoch_change_entry,
    gain_test_entry,
    reversion_entry,
    special_path_entry,
)

__all__ = [
    "CONFIG_NAME",
    "DEMO_FILES",
    "PLUGINS",
    "CliCall",
    "DemoResult",
    "ProgressFn",
    "check_directory",
    "check_store",
    "prepare_directory",
    "resolve_store",
    "run_cli",
    "run_demo",
]

PLUGINS: Final = ("fork-score", "receipts", "lawv", "graph-engine")
CONFIG_NAME: Final = "cladelog.toml"
#: What the demo writes into its folder (``--force`` removes only these).
DEMO_FILES: Final = (CONFIG_NAME, "cladelog.sqlite3", "cladelog.sqlite3-wal",
                     "cladelog.sqlite3-shm", "keys", "report.html", "consensus")
ENGINE: Final = "lumen"
ACTOR: Final = "lumen-ci"
ORACLE_KEY_NAME: Final = "arena.example/oracle"
LOG_KEY_NAME: Final = "arena.example/log"
ANCHOR_GAMES: Final = 200_000
ANCHOR_DRAW_RATE: Final = 0.58
START_STRENGTH: Final = 3040.0
MAX_REDRAWS: Final = 60
#: The Law V contract's constants (the seed: T = 36.9, a transfer band of 51 Elo).
CONTRACT_T: Final = 36.9
TRANSFER_BAND: Final = 51.0
MC_SAMPLES: Final = 10_000

#: ``progress(description, steps_done, steps_total)``.
ProgressFn = Callable[[str, int, int], None]


@attrs.frozen
class CliCall:
    """One ``cladelog`` command the demo ran, with its exit code and output."""

    args: tuple[str, ...]
    exit_code: int
    output: str


@attrs.frozen
class DemoResult:
    """What a demo run produced (the report path is filled by the caller)."""

    directory: Path
    config_path: Path
    head_position: int
    head_hash: str
    digests: dict[str, str]
    branch_verdicts: dict[str, int]
    lawv_verdicts: tuple[str, ...]
    register_kinds: dict[str, int]
    gate_calls: tuple[CliCall, ...]
    verify_calls: tuple[CliCall, ...]
    graph_session: str | None
    graph_note: str


def run_cli(config_path: Path, *args: str) -> CliCall:
    """Run ``cladelog --config CONFIG ARGS`` in-process (click's runner) and capture it."""
    from cladelog.core.cli import main
    from click.testing import CliRunner

    result = CliRunner().invoke(main, ["--config", str(config_path), *args])
    output = result.output
    stderr = getattr(result, "stderr", "")
    if stderr and stderr not in output:
        output += stderr
    return CliCall(tuple(args), result.exit_code, output)


def check_directory(directory: Path, *, force: bool) -> bool:
    """Raise :class:`DemoError` unless ``directory`` may hold the demo; True if non-empty."""
    if directory.exists() and not directory.is_dir():
        raise DemoError(f"--dir: {directory} exists and is not a folder")
    busy = directory.exists() and any(directory.iterdir())
    if busy and not force:
        raise DemoError(f"--dir: {directory} is not empty (use --force to reuse it; "
                        "only the demo's own files are replaced)")
    return busy


def _remove_demo_files(directory: Path) -> None:
    for name in DEMO_FILES:
        target = directory / name
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.exists() or target.is_symlink():
            target.unlink()


def _blocking_file(path: Path) -> Path | None:
    """The nearest existing parent of ``path`` when it is not a folder (else None)."""
    for parent in path.absolute().parents:
        if parent.exists():
            return None if parent.is_dir() else parent
    return None


def _make_directory(directory: Path) -> Path | None:
    """Create ``directory`` (and missing parents); return the topmost folder created.

    Raises :class:`DemoError` naming ``--dir`` when it cannot be created.
    """
    blocker = _blocking_file(directory)
    if blocker is not None:
        raise DemoError(f"--dir: cannot create {directory}: {blocker} is not a folder")
    created = None
    for candidate in (directory.absolute(), *directory.absolute().parents):
        if candidate.exists() or candidate.is_symlink():
            break
        created = candidate
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DemoError(f"--dir: cannot create {directory}: "
                        f"{exc.strerror or type(exc).__name__}") from None
    return created


def prepare_directory(directory: Path, *, force: bool) -> None:
    """Create ``directory``; refuse a non-empty one unless ``force`` (then remove demo files)."""
    if check_directory(directory, force=force):
        _remove_demo_files(directory)
    _make_directory(directory)


def resolve_store(store: str | None) -> str | None:
    """``--store`` with a relative path (or ``sqlite:///`` path) made absolute.

    A relative path is taken relative to the current folder, as for any
    command-line path (not to ``--dir``); URLs of other schemes are unchanged.
    """
    if store is None:
        return None
    prefix = "sqlite:///"
    if store.startswith(prefix):
        rest = store[len(prefix):]
        return store if not rest or os.path.isabs(rest) else prefix + os.path.abspath(rest)
    if "://" in store or not store:
        return store
    return os.path.abspath(store)


def check_store(store: str) -> None:
    """Open ``store`` (creating a new SQLite file) and refuse it unless it is empty.

    Raises :class:`DemoError` starting with ``--store:`` (unsupported URL,
    unreachable server, a folder, a path that cannot be created, not empty).
    """
    from cladelog.core import CladelogError, open_store

    path = store.removeprefix("sqlite:///") if "://" not in store or \
        store.startswith("sqlite:///") else None
    if path is not None and Path(path).is_dir():
        raise DemoError(f"--store: {path} is a folder; give the database file "
                        f"(for example {Path(path) / 'cladelog.sqlite3'})")
    blocker = None if path is None else _blocking_file(Path(path))
    if blocker is not None:
        raise DemoError(f"--store: cannot create {path}: {blocker} is not a folder")
    try:
        opened = open_store(store, create=True)
    except CladelogError as exc:
        raise DemoError(f"--store: {str(exc).removeprefix('store: ')}") from None
    except OSError as exc:
        raise DemoError(f"--store: cannot create {path or store}: "
                        f"{exc.strerror or type(exc).__name__}") from None
    try:
        head = opened.head()
    finally:
        opened.close()
    if head.position != 0:
        raise DemoError(f"--store: {opened.url} already holds {head.position} event(s); "
                        "the demo needs an empty store")


def _artifact(seed: int, version: str) -> dict[str, str]:
    return {"name": ENGINE, "version": version, "digest": artifact_digest(seed, version)}


class _Story:
    """The running demo: deployment, keys, the engine's true strength and main line."""

    def __init__(self, directory: Path, store: str | None, config: DemoConfig,
                 progress: ProgressFn, total: int) -> None:
        from cladelog.core import Deployment, DeploymentConfig
        from cladelog.fork_score import scoring_context
        from cladelog.receipts import Register, generate_key, parse_signer_key

        self.directory = directory
        self.config = config
        self.progress = progress
        self.total = total
        self.done = 0
        self.clock = DemoClock()
        self.config_path = directory / CONFIG_NAME
        written = store or "cladelog.sqlite3"
        oracle_skey, oracle_vkey = generate_key(ORACLE_KEY_NAME, key_seed(config.seed, "oracle"))
        log_skey, log_vkey = generate_key(LOG_KEY_NAME, key_seed(config.seed, "log"))
        cfg = DeploymentConfig.from_dict(
            {"store": written, "plugins": list(PLUGINS), "actor": ACTOR,
             "settings": {"receipts": {"log_key_file": "keys/log.key"}}},
            path=self.config_path)
        # open (and check) the store before writing anything: a refused store leaves the
        # folder as it was, so the same command can be run again once the store is fixed
        self.deployment = Deployment(cfg, clock=self.clock, create=True)
        try:
            head = self.deployment.store.head()
            if head.position != 0:
                raise DemoError(f"--store: {cfg.store} already holds {head.position} "
                                "event(s); the demo needs an empty store")
            keys = directory / "keys"
            try:
                keys.mkdir(exist_ok=True)
                for name, text in (("oracle.key", oracle_skey), ("oracle.vkey", oracle_vkey),
                                   ("log.key", log_skey), ("log.vkey", log_vkey)):
                    (keys / name).write_text(text + "\n", encoding="utf-8")
                self.config_path.write_text(cfg.to_toml(store_as_written=written),
                                            encoding="utf-8")
            except OSError as exc:
                raise DemoError(f"--dir: cannot write into {directory}: "
                                f"{exc.strerror or type(exc).__name__}") from None
            self.deployment.record_plugins()
        except BaseException:
            self.deployment.close()
            raise
        self.register = Register(self.deployment)
        self.oracle = parse_signer_key(oracle_skey)
        self.log_signer = parse_signer_key(log_skey)
        self.oracle_vkey, self.log_vkey = oracle_vkey, log_vkey
        self.scoring = scoring_context(self.deployment)
        self.rounds: tuple[RoundPlan, ...] = plan_rounds(config)
        self.rng_games = config.rng("games")
        self.rng_battery = config.rng("batteries")
        self.rng_truth = config.rng("truth")
        # the engine: its true strength against the anchors, and the main line
        self.strength = START_STRENGTH
        self.main = _artifact(config.seed, "c00")
        self.main_battery = initial_battery(self.rng_battery, "c00")
        self.epoch = 0
        self.realized: dict[int, float] = {}  # register seq -> true gain that reached main
        self.anchor_ratings = {a.name: round(a.true_rating + self.rng_truth.gauss(
            0.0, a.rating_uncertainty / 2.0), 1) for a in ANCHORS}
        self.merged: set[str] = set()
        self.gate_calls: list[CliCall] = []
        self.lawv_verdicts: list[str] = []

    # -- plumbing --------------------------------------------------------------------------
    def step(self, what: str) -> None:
        self.done += 1
        self.progress(what, self.done, self.total)

    def advance(self, hours: float) -> None:
        """Let time pass (whole minutes, so timestamps stay readable)."""
        self.clock.advance(minutes=round(hours * 60.0))

    def record_entry(self, build: Callable[..., dict[str, Any]], **fields: Any) -> int:
        """Sign and record the next register entry ``build(seq=, prev=, **fields)``."""
        from cladelog.receipts import make_receipt

        state = self.register.state()
        entry = build(seq=state["size"], prev=state["head"], **fields)
        self.register.record([make_receipt(entry, self.oracle)])
        return int(state["size"])

    # -- the story -------------------------------------------------------------------------
    def setup(self) -> None:
        from cladelog.lawv.commands import add_contract, add_measurement

        self.register.register_key(self.oracle_vkey, "oracle")
        self.register.register_key(self.log_vkey, "log")
        add_contract(self.deployment, self.contract(7, "2026-03-01"), source="contract-v7")
        add_measurement(self.deployment, self.measurement("m-0"), source="m-0")
        self.step("keys, contract v7, baseline measurement m-0")

    def contract(self, version: int, date: str) -> dict[str, Any]:
        """A Law V contract document; versions differ only in number and date.

        As in the Law V seed: T = 36.9, a transfer band of 51 Elo, HALT below 0.40,
        WARNING below 0.75 and the fixed anchor set of six engines; version 8 "does
        not change the weights, the uncertainty or the band".
        """
        anchors = [{"name": a.name, "hash": artifact_digest(self.config.seed, a.name),
                    "rating": self.anchor_ratings[a.name],
                    "rating_uncertainty": a.rating_uncertainty} for a in ANCHORS]
        return {"version": version, "date": date, "T": CONTRACT_T,
                "transfer_band": TRANSFER_BAND, "halt_below": 0.40, "warn_below": 0.75,
                "mc_samples": MC_SAMPLES, "anchors": anchors}

    def measurement(self, ident: str) -> dict[str, Any]:
        """Main against every anchor: games at the true difference, as an arena plays them."""
        anchors = []
        for a in ANCHORS:
            games = draw_games(self.rng_games, self.strength - a.true_rating, ANCHOR_GAMES,
                               ANCHOR_DRAW_RATE)
            anchors.append({"name": a.name, "hash": artifact_digest(self.config.seed, a.name),
                            "rating": self.anchor_ratings[a.name],
                            "rating_uncertainty": a.rating_uncertainty, "games": games})
        return {"id": ident, "version": self.main["version"], "anchors": anchors}

    def score_branch(self, plan: RoundPlan, parent: dict[str, Any], name: str,
                     role: str) -> tuple[dict[str, Any], str]:
        from cladelog.fork_score import record_branch_score, score

        # the public score() with the deployment's scoring context (its extra terms,
        # floors and weights file), as `fork-score score` does inside a deployment
        context = self.scoring
        weights = context.load_weights()
        wanted = target_verdicts(role)
        for _ in range(MAX_REDRAWS):
            child = draw_battery(self.rng_battery, parent, role, name)
            scalars: dict[str, Any] = scalars_for(self.rng_battery, role)
            result = score(parent, child, weights, extra_terms=context.terms,
                           signal_floor=context.signal_floor,
                           hard_regression_floor=context.hard_regression_floor, **scalars)
            if str(result.verdict) in wanted:
                break
        record_branch_score(self.deployment, result, branch_set_id=plan.branch_set_id,
                            branch_id=name, parent_root=self.main["digest"],
                            child_root=artifact_digest(self.config.seed, name))
        return child, str(result.verdict)

    def run_round(self, plan: RoundPlan) -> None:
        from cladelog.lawv.commands import add_contract

        parent_battery = self.main_battery
        best: tuple[float, dict[str, Any]] | None = None
        midway = len(plan.candidates) // 2
        for i, cand in enumerate(plan.candidates):
            if plan.phase.name == "overfit" and i == midway:
                # a new contract version while the window is open: it governs the next check
                add_contract(self.deployment, self.contract(8, "2026-04-20"),
                             source="contract-v8")
            self.advance(hours=7.0 + 10.0 * self.rng_truth.random())
            child_battery, verdict = self.score_branch(plan, parent_battery, cand.name,
                                                       cand.role)
            artifact = _artifact(self.config.seed, cand.name)
            if cand.special_path is not None:
                reason = (f"{cand.special_path} change without a playing-strength claim: "
                          f"{cand.name} keeps strength within noise, merged on the "
                          f"{cand.special_path} path")
                self.record_entry(special_path_entry, candidate=artifact,
                                  path=cand.special_path, reason=reason)
                self.strength += round(self.rng_truth.uniform(-0.4, 0.4), 3)
                self.main = artifact
                self.merged.add(cand.name)
                self.step(f"{plan.branch_set_id}: {cand.name} special path ({verdict})")
                continue
            seq = self.record_entry(functools.partial(gain_test_entry, self.rng_games),
                                    candidate=artifact, baseline=self.main, epoch=self.epoch,
                                    oracle_gain=cand.oracle_gain)
            summary = self.register.state()["entries"][str(seq)]
            if summary["pass"]:
                gain = summary["stages"][1]["elo"]
                true_gain = round(plan.transfer * gain, 4)
                self.strength += true_gain
                self.realized[seq] = true_gain
                self.main = artifact
                self.merged.add(cand.name)
                if verdict == "ACCEPT" and (best is None or gain > best[0]):
                    best = (gain, child_battery)
            outcome = "passed" if summary["pass"] else "failed"
            self.step(f"{plan.branch_set_id}: {cand.name} gain test {outcome} ({verdict})")
        if best is not None:
            self.main_battery = best[1]

    def checkpoint(self, plan: RoundPlan) -> str:
        from cladelog.fork_score import rank_branches
        from cladelog.lawv.commands import MeasurementInput, run_check

        self.advance(hours=12.0)
        ident = f"m-{plan.index}"
        new = MeasurementInput(source=ident, document=self.measurement(ident))
        old = MeasurementInput(source="m-0", ref="m-0") if plan.index == 1 else None
        outcome = run_check(self.deployment, old=old, new=new)
        verdict = str(outcome.check["verdict"])
        self.lawv_verdicts.append(verdict)
        self.register.sign_checkpoint(self.log_signer)
        ranked = rank_branches(self.deployment, plan.branch_set_id)
        merged = [r.branch_id for r in ranked if r.branch_id in self.merged]
        best = merged[0] if merged else ranked[0].branch_id
        self.gate_calls.append(run_cli(self.config_path, "gate", best))
        if verdict == "HALT":
            self.review(str(outcome.check["check_id"]), best, plan)
        self.step(f"{plan.branch_set_id}: Law V {outcome.check['check_id']} {verdict}, "
                  f"gate {best}")
        return verdict

    def review(self, check_id: str, candidate: str, plan: RoundPlan) -> None:
        """A human reviews the halt, resumes, and the oracle is recalibrated (epoch change)."""
        from cladelog.lawv.commands import add_review

        self.advance(hours=30.0)
        state = self.register.state()
        window = [e for e in state["entries"].values()
                  if e["kind"] == "gain_test" and e["pass"] and int(e["seq"]) in self.realized
                  and e["candidate"]["version"] in {c.name for c in plan.candidates}]
        worst = max(window, key=lambda e: e["stages"][1]["elo"]) if window else None
        add_review(self.deployment, check=check_id, decision="resume",
                   reviewer="ana (release manager)",
                   reason="The oracle overfit its test openings: the gains it confirmed in "
                          "this window did not reach the anchor set. Recalibrating the oracle "
                          "(new epoch) and reverting the largest unconfirmed gain; resuming "
                          "merges under contract v8.")
        self.gate_calls.append(run_cli(self.config_path, "gate", candidate))
        self.advance(hours=2.0)
        self.epoch += 1
        self.record_entry(epoch_change_entry, epoch=self.epoch,
                          reason=f"recalibrated against the anchor set after the halt at "
                                 f"{check_id}")
        if worst is not None:
            seq = int(worst["seq"])
            self.record_entry(reversion_entry, reverts=seq,
                              reason=f"{worst['candidate']['version']}'s claimed "
                                     f"{worst['stages'][1]['elo']:+.2f} Elo did not reach the "
                                     f"anchors ({check_id})")
            self.strength -= self.realized.pop(seq)


def _graph_step(story: _Story) -> tuple[str | None, str]:
    from .graph import run_graph_session

    return run_graph_session(story.deployment)


def _consensus_step(story: _Story) -> None:
    from .consensus_story import CONSENSUS_DIR, run_consensus_story

    summary = run_consensus_story(story.directory / CONSENSUS_DIR, story.config.seed)
    slashed = [v["validator"] for v in summary["validators"] if v["slashes"]]
    story.step(f"consensus: four validators, {', '.join(slashed) or 'nobody'} slashed")


def run_demo(directory: Path, *, config: DemoConfig, store: str | None = None,
             force: bool = False, progress: ProgressFn | None = None) -> DemoResult:
    """Create the demo deployment in ``directory`` and drive the whole history into it.

    Raises :class:`DemoError` for a non-empty folder (unless ``force``) or a
    store that is not empty; the caller renders the report. A relative
    ``store`` path is relative to the current folder. The store is checked
    before anything is written or removed: a refused store (or folder) leaves
    no trace, not even a folder this call created.
    """
    store = resolve_store(store)
    busy = check_directory(directory, force=force)
    created = _make_directory(directory)
    plans = plan_rounds(config)
    total = 1 + config.candidates + len(plans) + 3
    try:
        if store is not None:
            check_store(store)
        if busy:
            _remove_demo_files(directory)
        story = _Story(directory, store, config, progress or (lambda *_: None), total)
    except BaseException:
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)
        raise
    try:
        story.setup()
        for plan in plans:
            story.run_round(plan)
            story.checkpoint(plan)
        graph_session, graph_note = _graph_step(story)
        story.step(f"graph-engine session {graph_session}" if graph_session
                   else f"graph-engine: {graph_note}")
        _consensus_step(story)
        kinds = Counter(e["kind"] for e in story.register.state()["entries"].values())
        branch_verdicts = Counter(
            row["verdict"]
            for rows in story.deployment.state("fork_score.branch_sets")["sets"].values()
            for row in rows.values())
    finally:
        story.deployment.close()
    calls = [run_cli(story.config_path, "replay", "--rebuild", "--json"),
             run_cli(story.config_path, "verify", "--json"),
             run_cli(story.config_path, "receipts", "verify", "--json")]
    if graph_session is not None:
        calls.append(run_cli(story.config_path, "graph", "replay", graph_session, "--json"))
    story.step("replay from scratch, verify the chain and every receipt")
    replayed = _replay_doc(calls[0])
    return DemoResult(
        directory=directory, config_path=story.config_path,
        head_position=int(replayed["head"]["position"]), head_hash=str(replayed["head"]["hash"]),
        digests={p["name"]: p["digest"] for p in replayed["projections"]},
        branch_verdicts=dict(sorted(branch_verdicts.items())),
        lawv_verdicts=tuple(story.lawv_verdicts), register_kinds=dict(sorted(kinds.items())),
        gate_calls=tuple(story.gate_calls), verify_calls=tuple(calls[1:]),
        graph_session=graph_session, graph_note=graph_note)


def _replay_doc(call: CliCall) -> dict[str, Any]:
    if call.exit_code != 0:
        raise DemoError(f"replay: exit {call.exit_code}: {call.output.strip()[:300]}")
    doc = json.loads(call.output)
    if not isinstance(doc, dict):
        raise DemoError("replay: unexpected output")
    return doc
