"""What the report shows, read from projection states and events.

:func:`collect` is the only function here that touches a deployment: it asks
for the replayed projection states (``Deployment.replay``), the
``recorded_at`` of the events the report places on a time axis, and the gate's
answer for every candidate (``Deployment.gate_all``: one replay for all of them, each
answer the same as ``cladelog gate CANDIDATE``; Law V's current vote is read from
those answers).
:func:`build_report_data` turns those into a :class:`ReportData` and is pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from .errors import ReportError, ReportVerificationError

__all__ = [
    "REGISTER_LANES",
    "Branch",
    "CheckPoint",
    "GainPoint",
    "GateRow",
    "Halt",
    "RegisterItem",
    "ReportData",
    "build_report_data",
    "collect",
]

REGISTER_LANES: Final = ("gain test passed", "gain test failed", "special path",
                         "epoch change", "reversion")
#: The candidate name the report asks the gate about for Law V's vote when no candidate
#: is recorded (lawv votes the same for every candidate).
LAWV_PROBE: Final = "(any candidate)"
_TIMED_TYPES: Final = ("receipts.entry_recorded", "lawv.check_recorded",
                       "lawv.measurement_recorded", "lawv.review_recorded")


@attrs.frozen
class CheckPoint:
    """One Law V check: R with its Monte Carlo band, S, ΔA and the verdict."""

    check_id: str
    number: int
    verdict: str
    contract_version: int
    recorded_at: str
    r: float | None
    mc_low: float | None
    mc_mid: float | None
    mc_high: float | None
    s: float
    delta_a: float | None
    a_new: float | None
    sigma_new: float | None
    halt_below: float
    warn_below: float
    review: str | None
    flags: tuple[str, ...]


@attrs.frozen
class GainPoint:
    """A point of the gains chart: cumulative claimed or external Elo at a time."""

    recorded_at: str
    value: float
    band: float | None = None
    label: str = ""
    #: The datum the point stands for: the register seq of a passed gain test, the
    #: measurement or check id for an external point; empty for the claimed
    #: curve's start and end.
    key: str = ""


@attrs.frozen
class RegisterItem:
    """One register entry placed on the timeline."""

    seq: int
    kind: str
    lane: str
    recorded_at: str
    candidate: str | None
    long_elo: float | None
    detail: str
    reverts: int | None = None
    reverted_by: int | None = None


@attrs.frozen
class Branch:
    """One branch of a branch set with its ForkScore breakdown."""

    rank: int
    branch_id: str
    score: float
    weight: float
    verdict: str
    flags: tuple[str, ...]
    breakdown: tuple[tuple[str, float], ...]


@attrs.frozen
class GateRow:
    """The gate's answer for one candidate: allowed, and every plugin's vote."""

    candidate: str
    allowed: bool
    votes: tuple[tuple[str, str, str], ...]

    @property
    def blocked_by(self) -> tuple[str, ...]:
        return tuple(plugin for plugin, decision, _ in self.votes if decision == "block")


@attrs.frozen
class Halt:
    """A Law V HALT and the human reviews of it."""

    check_id: str
    recorded_at: str
    r: float | None
    reviews: tuple[tuple[str, str, str, str], ...]  # (recorded_at, decision, reviewer, reason)

    @property
    def open(self) -> bool:
        return not self.reviews or self.reviews[-1][1] != "resume"


@attrs.frozen
class ReportData:
    """Everything the terminal summary and the HTML page show."""

    config: str
    store: str
    head_position: int
    head_hash: str
    plugins: dict[str, str]
    digests: dict[str, str]
    checks: tuple[CheckPoint, ...]
    claimed: tuple[GainPoint, ...]
    external: tuple[GainPoint, ...]
    register: tuple[RegisterItem, ...]
    branch_set_id: str | None
    branches: tuple[Branch, ...]
    branch_sets: tuple[tuple[str, int, dict[str, int]], ...]
    gate: tuple[GateRow, ...]
    lawv_vote: tuple[str, str] | None
    graph_sessions: tuple[dict[str, Any], ...]
    halts: tuple[Halt, ...] = ()

    def enables(self, plugin: str) -> bool:
        """Whether the deployment enables ``plugin``: the report shows a plugin's sections
        (tables, charts, cards) only then."""
        return plugin in self.plugins

    @property
    def empty(self) -> bool:
        """True when no plugin has recorded anything worth a report."""
        return not (self.checks or self.register or self.branches or self.graph_sessions)

    @property
    def verdict_mix(self) -> dict[str, int]:
        """ForkScore verdicts over every branch set."""
        mix: dict[str, int] = {}
        for _, _, verdicts in self.branch_sets:
            for verdict, n in verdicts.items():
                mix[verdict] = mix.get(verdict, 0) + n
        return dict(sorted(mix.items()))


def _percentile(result: Mapping[str, Any], key: str) -> float | None:
    mc = result.get("monte_carlo")
    if not isinstance(mc, Mapping):
        return None
    value = (mc.get("percentiles") or {}).get(key)
    return float(value) if isinstance(value, int | float) else None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else None


def _checks(lawv: Mapping[str, Any], times: Mapping[int, str]) -> tuple[CheckPoint, ...]:
    reviews: dict[str, str] = {}
    for review in lawv.get("reviews", []):
        reviews[review["check_id"]] = f"{review['decision']} by {review['reviewer']}"
    out = []
    for check in lawv.get("checks", []):
        result = check.get("result") or {}
        out.append(CheckPoint(
            check_id=check["check_id"], number=int(check["number"]), verdict=check["verdict"],
            contract_version=int(check["contract_version"]),
            recorded_at=times.get(int(check["position"]), ""),
            r=_number(result.get("r")), mc_low=_percentile(result, "2.5"),
            mc_mid=_percentile(result, "50"), mc_high=_percentile(result, "97.5"),
            s=float(result.get("s") or 0.0), delta_a=_number(result.get("delta_a")),
            a_new=_number(result.get("a_new")), sigma_new=_number(result.get("sigma_new")),
            halt_below=float(result.get("halt_below") or 0.0),
            warn_below=float(result.get("warn_below") or 0.0),
            review=reviews.get(check["check_id"]), flags=tuple(result.get("flags") or ())))
    return tuple(out)


def _halts(lawv: Mapping[str, Any], times: Mapping[int, str]) -> tuple[Halt, ...]:
    out = []
    for check in lawv.get("checks", []):
        if check.get("verdict") != "HALT":
            continue
        reviews = tuple(
            (times.get(int(r["position"]), ""), r["decision"], r["reviewer"], r["reason"])
            for r in lawv.get("reviews", []) if r.get("check_id") == check["check_id"])
        out.append(Halt(check["check_id"], times.get(int(check["position"]), ""),
                        _number((check.get("result") or {}).get("r")), reviews))
    return tuple(out)


def _register(receipts: Mapping[str, Any], times: Mapping[int, str]) -> tuple[RegisterItem, ...]:
    entries = receipts.get("entries", {})
    reverted = {int(k): int(v) for k, v in receipts.get("reverted", {}).items()}
    out = []
    for summary in sorted(entries.values(), key=lambda e: int(e["seq"])):
        seq, kind = int(summary["seq"]), summary["kind"]
        candidate = (summary.get("candidate") or {}).get("version")
        long_elo = None
        if kind == "gain_test":
            stages = {s.get("name"): s for s in summary.get("stages", [])}
            long_elo = _number((stages.get("long") or {}).get("elo"))
            lane = REGISTER_LANES[0] if summary.get("pass") else REGISTER_LANES[1]
            detail = f"{candidate}: long {long_elo:+.2f} Elo" if long_elo is not None \
                else str(candidate)
        elif kind == "special_path":
            lane, detail = REGISTER_LANES[2], f"{candidate}: {summary.get('path')} path"
        elif kind == "epoch_change":
            lane, detail = REGISTER_LANES[3], f"oracle epoch {summary.get('epoch')}"
        else:
            lane, detail = REGISTER_LANES[4], f"reverts seq {summary.get('reverts')}"
        out.append(RegisterItem(seq, kind, lane, times.get(int(summary["position"]), ""),
                                candidate, long_elo, detail,
                                reverts=summary.get("reverts"), reverted_by=reverted.get(seq)))
    return tuple(out)


def _gains(register: Sequence[RegisterItem], lawv: Mapping[str, Any], times: Mapping[int, str]
           ) -> tuple[tuple[GainPoint, ...], tuple[GainPoint, ...]]:
    """Cumulative claimed gains (passed gain tests) and the external gain (anchors)."""
    claimed: list[GainPoint] = []
    total = 0.0
    for item in register:
        if item.lane == REGISTER_LANES[0] and item.long_elo is not None:
            total += item.long_elo
            claimed.append(GainPoint(item.recorded_at, total, label=item.detail,
                                     key=str(item.seq)))
    external: list[GainPoint] = []
    base: float | None = None
    for check in lawv.get("checks", []):
        result = check.get("result") or {}
        a_old, a_new = _number(result.get("a_old")), _number(result.get("a_new"))
        if base is None and a_old is not None:
            base = a_old
            old_id = check.get("old_measurement")
            position = (lawv.get("measurements", {}).get(old_id) or {}).get("position")
            when = times.get(int(position), "") if isinstance(position, int) else ""
            external.append(GainPoint(when, 0.0, _number(result.get("sigma_old")), str(old_id),
                                      key=str(old_id)))
        if base is not None and a_new is not None:
            external.append(GainPoint(times.get(int(check["position"]), ""), a_new - base,
                                      _number(result.get("sigma_new")), check["check_id"],
                                      key=check["check_id"]))
    if claimed and external:
        claimed.insert(0, GainPoint(external[0].recorded_at, 0.0, label="start"))
        if external[-1].recorded_at > claimed[-1].recorded_at:
            claimed.append(GainPoint(external[-1].recorded_at, total, label="last check"))
    return tuple(claimed), tuple(external)


def _branches(states: Mapping[str, Any]) -> tuple[str | None, tuple[Branch, ...],
                                                  tuple[tuple[str, int, dict[str, int]], ...]]:
    from cladelog.fork_score import list_branch_sets, rank_branches

    if "fork_score.branch_sets" not in states:
        return None, (), ()
    summaries = list_branch_sets(states)
    sets = []
    raw = states["fork_score.branch_sets"]["sets"]
    for summary in sorted(summaries, key=lambda s: s.last_position):
        mix: dict[str, int] = {}
        for row in raw[summary.branch_set_id].values():
            mix[row["verdict"]] = mix.get(row["verdict"], 0) + 1
        sets.append((summary.branch_set_id, summary.density, dict(sorted(mix.items()))))
    if not summaries:
        return None, (), ()
    latest = max(summaries, key=lambda s: s.last_position).branch_set_id
    rows = raw[latest]
    branches = tuple(
        Branch(rank=b.rank, branch_id=b.branch_id, score=b.score, weight=b.weight,
               verdict=b.verdict, flags=b.flags,
               breakdown=tuple(sorted((k, float(v)) for k, v in
                                      rows[b.branch_id]["breakdown"].items())))
        for b in rank_branches(states, latest))
    return latest, branches, tuple(sets)


def _graph_sessions(states: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    state = states.get("graph_engine.sessions")
    sessions = state.get("sessions") if isinstance(state, Mapping) else None
    if not isinstance(sessions, Mapping):
        return ()
    out = []
    for sid, info in sorted(sessions.items()):
        row = {"session": sid}
        if isinstance(info, Mapping):
            row |= {k: v for k, v in info.items() if isinstance(v, str | int | float | bool)}
        out.append(row)
    return tuple(out)


def build_report_data(
    states: Mapping[str, Any],
    times: Mapping[int, str],
    gate: Sequence[GateRow],
    *,
    config: str = "",
    store: str = "",
    head: tuple[int, str] = (0, ""),
    plugins: Mapping[str, str] | None = None,
    digests: Mapping[str, str] | None = None,
    lawv_vote: tuple[str, str] | None = None,
) -> ReportData:
    """Assemble the report from projection states, event times and gate answers (pure)."""
    lawv = states.get("lawv.state") or {}
    receipts = states.get("receipts.register") or {}
    checks = _checks(lawv, times)
    register = _register(receipts, times)
    claimed, external = _gains(register, lawv, times)
    set_id, branches, sets = _branches(states)
    return ReportData(
        config=config, store=store, head_position=head[0], head_hash=head[1],
        plugins=dict(plugins or {}), digests=dict(digests or {}), checks=checks,
        claimed=claimed, external=external, register=register, branch_set_id=set_id,
        branches=branches, branch_sets=sets, gate=tuple(gate), lawv_vote=lawv_vote,
        graph_sessions=_graph_sessions(states), halts=_halts(lawv, times))


def _candidates(states: Mapping[str, Any]) -> list[str]:
    """Every branch id of every branch set, in the order they were scored."""
    sets = (states.get("fork_score.branch_sets") or {}).get("sets", {})
    rows = [row for branches in sets.values() for row in branches.values()]
    return [row["branch_id"] for row in sorted(rows, key=lambda r: r["position"])]


def _store_label(url: str) -> str:
    """How the report names the store: an SQLite store as the absolute path of its file
    (a reader can open it from anywhere), any other store by its URL without a password."""
    from cladelog.core import redact_url

    prefix = "sqlite:///"
    if url.startswith(prefix):
        from pathlib import Path

        return str(Path(url[len(prefix):]).resolve())
    return redact_url(url)


def collect(deployment: Any, *, shown_as: str | None = None) -> ReportData:
    """Read a deployment through its public API and build the report data.

    ``shown_as`` is how the report names the deployment file (default: its path).
    The whole hash chain is verified first (``Deployment.verify``, as ``cladelog
    verify``): replay resumes from stored checkpoints and would not notice an
    event changed behind them, so a log that does not verify raises
    :class:`ReportVerificationError` naming the first bad position, and no
    report is made of it.
    """
    config_path = getattr(deployment.config, "path", None)
    verified = deployment.verify()
    if not verified.ok:
        raise ReportVerificationError(
            f"{shown_as or config_path or 'deployment'}: the log does not verify at position "
            f"{verified.position}: {verified.reason}; no report written (see 'cladelog "
            "verify')")
    replayed = deployment.replay()
    states = {p.name: p.state for p in replayed.projections}
    digests = {p.name: p.digest for p in replayed.projections}
    times = {e.position: e.recorded_at for e in deployment.store.read(types=_TIMED_TYPES)}
    lawv_vote = None
    candidates = _candidates(states)
    # one replay for every candidate: the states above are the ones the gate reads
    # (Deployment.gate_all folds nothing new), each candidate asked as `cladelog gate` does
    answers = deployment.gate_all(candidates or ([LAWV_PROBE] if "lawv.state" in states
                                                 else []))
    rows = [GateRow(r.candidate, r.allowed,
                    tuple((v.plugin, v.decision, v.reason) for v in r.votes)) for r in answers]
    gate = rows if candidates else []
    if "lawv.state" in states and rows:
        # lawv's vote does not depend on the candidate (lawv README: an open HALT blocks,
        # otherwise the last check decides), so it is read from the gate's public answer
        lawv_vote = next(((d, r) for p, d, r in rows[0].votes if p == "lawv"), None)
    data = build_report_data(
        states, times, gate, config=shown_as or str(config_path or ""),
        store=_store_label(deployment.store.url),
        head=(replayed.head.position, replayed.head.hash), plugins=deployment.plugin_versions,
        digests=digests, lawv_vote=lawv_vote)
    if data.empty:
        enabled = ", ".join(sorted(set(deployment.plugin_versions) - {"core"})) or "none"
        raise ReportError(
            f"{config_path or 'deployment'}: nothing to report: no branch set, register "
            f"entry, Law V check or graph session recorded (plugins enabled: {enabled}); "
            "run 'cladelog demo' for an example")
    return data
