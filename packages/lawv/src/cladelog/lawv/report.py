"""Read-only views of ``lawv.state``: the status overview and the full arithmetic of one check.

Each view is a JSON-ready dict (what ``--json`` prints) plus a plain-text
renderer. Pure: the state goes in, text comes out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from cladelog.lawv._fields import fail
from cladelog.lawv.contract import parse_contract
from cladelog.lawv.endpoint import resolve_endpoint
from cladelog.lawv.errors import LawVInputError
from cladelog.lawv.evaluate import evaluate
from cladelog.lawv.gate import LawVSettings, decide
from cladelog.lawv.ledger import (
    check_inputs,
    expected_old,
    find_check,
    governing_contract,
    result_differences,
    select_window,
)
from cladelog.lawv.measurement import parse_measurement

__all__ = ["explain_check", "render_explain", "render_status", "status_report"]


def _num(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    from cladelog.core import human_number

    return human_number(value, digits)


def _bar(r: Any, width: int = 12) -> str:
    """R as a bar of ``width`` characters over [0, 1.2] (clipped)."""
    if r is None:
        return ""
    filled = max(0, min(width, round(float(r) / 1.2 * width)))
    return "#" * filled + "." * (width - filled)


def _review_of(state: Mapping[str, Any], check_id: str) -> str | None:
    decision = None
    for review in state["reviews"]:
        if review["check_id"] == check_id:
            decision = f"{review['decision']} ({review['reviewer']})"
    return decision


def status_report(
    state: Mapping[str, Any], *, limit: int = 10, settings: LawVSettings | None = None
) -> dict[str, Any]:
    """The current Law V state: gate vote, what blocks, the next check, the last checks."""
    decision, reason = decide(state, settings)
    window = select_window(state)
    rows = []
    for check in state["checks"][-limit:] if limit > 0 else []:
        result = check["result"]
        rows.append({
            "check_id": check["check_id"], "position": check["position"],
            "contract_version": check["contract_version"],
            "window": None if check["first_seq"] is None
            else [check["first_seq"], check["last_seq"]],
            "s": result.get("s"), "delta_a": result.get("delta_a"), "r": result.get("r"),
            "verdict": check["verdict"], "closes_window": check["closes_window"],
            "review": _review_of(state, check["check_id"]), "anomalies": check["anomalies"],
        })
    return {
        "blocked": state["halt"]["blocked"],
        "open_halts": list(state["halt"]["open"]),
        "kept_halted": list(state["halt"]["kept_halted"]),
        "vote": {"decision": decision, "reason": reason},
        "contracts": {"registered": sorted(int(v) for v in state["contracts"]),
                      "governs_next_check": governing_contract(state)},
        "measurements": len(state["measurements"]),
        "register": {"first": state["register"]["first"], "head": state["register"]["head"]},
        "next_check": {"old_measurement": expected_old(state),
                       "window": None if window.window is None else list(window.window),
                       "entries": len(window.entry_seqs),
                       "unreadable": [seq for seq, _ in window.unreadable]},
        "checks_total": len(state["checks"]),
        "checks": rows,
        "ignored": list(state["ignored"]),
    }


def render_status(doc: Mapping[str, Any]) -> str:
    """The status as text: the vote, what blocks, the next check and a table of R over time."""
    lines = [f"gate      {doc['vote']['decision']}: {doc['vote']['reason']}"]
    if doc["blocked"]:
        lines.append(f"blocked   by {', '.join(doc['open_halts'])} "
                     "(cladelog lawv review --check ID --decision resume|keep-halted ...)")
    contracts = doc["contracts"]
    registered = ", ".join(f"v{v}" for v in contracts["registered"]) or "none"
    governs = contracts["governs_next_check"]
    lines.append(f"contracts {registered}; next check under "
                 f"{'v' + str(governs) if governs is not None else '(none registered)'}")
    nxt = doc["next_check"]
    window = "empty" if nxt["window"] is None else f"seq {nxt['window'][0]}..{nxt['window'][1]}"
    lines.append(f"next      window {window} ({nxt['entries']} entries), old measurement "
                 f"{nxt['old_measurement'] or '(none)'}")
    lines.append(f"checks    {doc['checks_total']} recorded")
    if doc["checks"]:
        lines.append(f"  {'check':<10} {'pos':>6} {'contract':>8} {'window':>12} {'S':>9} "
                     f"{'dA':>9} {'R':>7}  {'R on [0,1.2]':<12}  {'verdict':<9} review")
        for row in doc["checks"]:
            window = "-" if row["window"] is None else f"{row['window'][0]}..{row['window'][1]}"
            mark = (" (anomalous)" if row["anomalies"] else
                    "" if row["closes_window"] else " (open)")
            version = f"v{row['contract_version']}"
            lines.append(
                f"  {row['check_id']:<10} {row['position']:>6} {version:>8} "
                f"{window:>12} {_num(row['s']):>9} {_num(row['delta_a']):>9} {_num(row['r']):>7}  "
                f"{_bar(row['r']):<12}  {row['verdict'] + mark:<9} {row['review'] or '-'}")
    if doc["ignored"]:
        lines.append(f"ignored   {len(doc['ignored'])} event(s); first: "
                     f"position {doc['ignored'][0]['position']}: {doc['ignored'][0]['reason']}")
    return "\n".join(lines)


def _endpoint(contract_doc: dict[str, Any], doc: dict[str, Any] | None, label: str,
              t: float, result: Mapping[str, Any]) -> dict[str, Any]:
    if doc is None:
        return {"missing": True}
    contract = parse_contract(contract_doc)
    measurement = parse_measurement(doc, label)
    resolved = resolve_endpoint(contract, measurement, label)
    out: dict[str, Any] = {"id": measurement.id, "version": measurement.version,
                           "A": result.get(f"a_{label}"), "sigma": result.get(f"sigma_{label}"),
                           "total_band": result.get(f"total_band_{label}")}
    if resolved.terms is None:
        out["defects"] = list(resolved.reasons)
        return out
    terms: list[dict[str, Any]] = []
    for anchor, term in zip(contract.anchors, resolved.terms, strict=True):
        stat = term.uncertainty**2 + term.rating_uncertainty**2
        var = stat + t**2
        terms.append({"name": anchor.name, "rating": term.rating,
                      "rating_uncertainty": term.rating_uncertainty, "delta": term.delta,
                      "uncertainty": term.uncertainty, "value": term.rating + term.delta,
                      "stat_variance": stat, "weight_variance": var,
                      "weight": None if var == 0 else 1.0 / var})
    total = sum(float(item["weight"]) for item in terms if item["weight"] is not None)
    for item in terms:
        item["share"] = None if item["weight"] is None or total == 0 else item["weight"] / total
    out["anchors"] = terms
    return out


def _entry_line(entry: Mapping[str, Any], counted: set[int]) -> dict[str, Any]:
    seq, kind = entry["seq"], entry["kind"]
    if kind == "gain_test":
        stages = {s["name"]: s for s in entry.get("stages", [])}
        short, long = stages.get("short", {}), stages.get("long", {})
        if seq in counted:
            return {"seq": seq, "kind": kind, "adds": long.get("elo"),
                    "adds_short": short.get("elo"),
                    "note": "passed both stages: the long stage's Elo counts"}
        failed = [name for name in ("short", "long") if not stages.get(name, {}).get("pass")]
        return {"seq": seq, "kind": kind, "adds": 0.0,
                "note": f"failed the {' and '.join(failed)} stage: counts 0"}
    if kind == "reversion":
        return {"seq": seq, "kind": kind, "adds": 0.0,
                "note": f"reverts seq {entry.get('reverts')}; subtracts nothing"}
    return {"seq": seq, "kind": kind, "adds": 0.0, "note": f"{kind.replace('_', ' ')}: counts 0"}


_CONTRACT_SHOWN = ("version", "date", "T", "transfer_band", "halt_below", "warn_below",
                   "mc_samples")


def explain_check(state: Mapping[str, Any], ref: str, *, replay: bool = True) -> dict[str, Any]:
    """The full arithmetic of a recorded check (raises ``LawVInputError`` for an unknown one).

    With ``replay`` (the default) the check is evaluated again from its recorded
    inputs and the arithmetic shown is the *recomputed* one; ``replay.identical``
    says whether the recorded result was reproduced, and when it was not,
    ``recorded`` holds the recorded value of every field that differs
    (``replay.differs_in`` names them). When the recorded inputs cannot be looked
    up, the recorded numbers are shown and ``replay.error`` says why. Without
    ``replay`` the recorded numbers are shown as they are.
    """
    check = find_check(state, ref)
    if check is None:
        raise fail("CHECK", "no such check", ref)
    recorded = check["result"]
    result: Mapping[str, Any] = recorded
    replayed: dict[str, Any] | None = None
    differing: list[str] = []
    inputs: tuple[Any, ...] | None = None
    try:
        inputs = check_inputs(state, check)
    except LawVInputError as exc:
        if replay:
            replayed = {"identical": False, "error": str(exc)}
    if inputs is not None and replay:
        contract_doc, old, new, entries, window = inputs
        again = evaluate(contract_doc, old, new, entries, window=window).to_dict()
        differing = result_differences(recorded, again)
        result = again
        replayed = {"identical": True} if not differing else {
            "identical": False, "differs_in": differing}
    if inputs is None:
        contract_doc, old, new, entries, window = None, None, None, [], None
    counted = set(result.get("counted_seqs") or [])
    if contract_doc is not None:
        contract = {key: contract_doc[key] for key in _CONTRACT_SHOWN}
        old_ep = _endpoint(contract_doc, old, "old", float(contract_doc["T"]), result)
        new_ep = _endpoint(contract_doc, new, "new", float(contract_doc["T"]), result)
    else:
        contract = {"version": check["contract_version"], "missing": True}
        old_ep = _recorded_endpoint(check["old_measurement"], "old", result)
        new_ep = _recorded_endpoint(check["new_measurement"], "new", result)
    contract["digest"] = check["contract_digest"]
    doc: dict[str, Any] = {
        "check_id": check["check_id"], "position": check["position"],
        "verdict": result.get("verdict"), "recorded_verdict": check["verdict"],
        "status": result.get("status"),
        "reasons": result.get("reasons"), "flags": result.get("flags"),
        "anomalies": check["anomalies"], "closes_window": check["closes_window"],
        "contract": contract,
        "old": old_ep,
        "new": new_ep,
        "delta_a": result.get("delta_a"),
        "delta_a_uncertainty": result.get("delta_a_uncertainty"),
        "delta_a_nelo": result.get("delta_a_nelo"),
        "window": {"opened_at": check["window_opened_at"],
                   "first_seq": check["first_seq"], "last_seq": check["last_seq"],
                   "entries": [_entry_line(e, counted) for e in entries],
                   "unreadable_seqs": check["unreadable_seqs"]},
        "s": result.get("s"), "s_short": result.get("s_short"), "s_nelo": result.get("s_nelo"),
        "r": result.get("r"), "r_short": result.get("r_short"), "r_nelo": result.get("r_nelo"),
        "halt_below": result.get("halt_below"), "warn_below": result.get("warn_below"),
        "verdict_short": result.get("verdict_short"),
        "overfitting": {"suspected": result.get("overfitting_suspected"),
                        "claimed_excess": result.get("claimed_excess"),
                        "band": result.get("overfitting_band")},
        "monte_carlo": result.get("monte_carlo"),
        "inputs_digest": result.get("inputs_digest"),
        "reviews": [r for r in state["reviews"] if r["check_id"] == check["check_id"]],
    }
    if window is None and entries:  # pragma: no cover - guarded by CheckRecorded
        doc["window"]["note"] = "entries without a window"
    if replayed is not None:
        doc["replay"] = replayed
    if differing:
        doc["recorded"] = {key: {"recorded": recorded.get(key), "recomputed": result.get(key)}
                           for key in differing}
    return doc


def _recorded_endpoint(ident: str | None, label: str, result: Mapping[str, Any]) -> dict[str, Any]:
    """An endpoint whose inputs cannot be looked up: the recorded numbers only."""
    if ident is None:
        return {"missing": True}
    return {"id": ident, "version": result.get(f"{label}_version"),
            "A": result.get(f"a_{label}"), "sigma": result.get(f"sigma_{label}"),
            "total_band": result.get(f"total_band_{label}"),
            "defects": ["the recorded inputs cannot be looked up; recorded numbers shown"]}


def _endpoint_lines(label: str, ep: Mapping[str, Any]) -> list[str]:
    if ep.get("missing"):
        return [f"{label}: missing (a gap, never a confirmation)"]
    lines = [f"{label}: {ep['id']} (main version {ep['version']})"]
    if "defects" in ep:
        lines += [f"  defect: {reason}" for reason in ep["defects"]]
        return lines
    lines.append(f"  {'anchor':<12} {'R_i':>9} {'h_L,i':>7} {'delta_i':>9} {'h_i':>7} "
                 f"{'R_i+d_i':>9} {'w_i':>11} {'share':>7}")
    for a in ep["anchors"]:
        weight = "inf" if a["weight"] is None else f"{a['weight']:.4e}"
        lines.append(f"  {a['name']:<12} {_num(a['rating'], 1):>9} "
                     f"{_num(a['rating_uncertainty'], 1):>7} {_num(a['delta'], 2):>9} "
                     f"{_num(a['uncertainty'], 2):>7} {_num(a['value'], 2):>9} {weight:>11} "
                     f"{_num(a['share'], 3):>7}")
    lines.append(f"  A = sum w_i (R_i + d_i) / sum w_i = {_num(ep['A'])}; "
                 f"sigma = 1/sqrt(sum 1/(h_i^2 + h_L,i^2)) = {_num(ep['sigma'])}; "
                 f"total band = {_num(ep['total_band'])}")
    return lines


def _compact(value: Any) -> str:
    if isinstance(value, float):
        return repr(value)
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def render_explain(doc: Mapping[str, Any]) -> str:
    """The explanation as text, in the order of the computation."""
    c = doc["contract"]
    head = f"{doc['check_id']} at position {doc['position']}: {doc['verdict']}"
    if doc.get("recorded_verdict", doc["verdict"]) != doc["verdict"]:
        head += f" (recomputed; the event records {doc['recorded_verdict']})"
    lines = [head]
    if c.get("missing"):
        lines.append(f"contract v{c['version']}: not registered; the recorded numbers are "
                     "shown")
    else:
        lines += [f"contract v{c['version']} ({c['date']}): T = {c['T']}, transfer band = "
                  f"{c['transfer_band']}, HALT below {c['halt_below']}, WARNING below "
                  f"{c['warn_below']}, {c['mc_samples']} MC samples",
                  f"  w_i = 1 / (h_i^2 + h_L,i^2 + T^2), T^2 = {_num(float(c['T']) ** 2)}"]
    lines += _endpoint_lines("old", doc["old"])
    lines += _endpoint_lines("new", doc["new"])
    lines.append(f"dA = A(new) - A(old) = {_num(doc['delta_a'])} "
                 f"(+/- {_num(doc['delta_a_uncertainty'])} = sqrt(sigma_old^2 + sigma_new^2))")
    w = doc["window"]
    span = "empty" if w["first_seq"] is None else f"seq {w['first_seq']}..{w['last_seq']}"
    opened = ("not opened: no register entry yet" if not w["opened_at"] and w["first_seq"] is None
              else f"opened at log position {w['opened_at']}")
    lines.append(f"window {span} ({opened}):")
    for e in w["entries"]:
        lines.append(f"  seq {e['seq']:<6} {e['kind']:<13} +{_num(e['adds'])}  {e['note']}")
    if w["unreadable_seqs"]:
        lines.append(f"  unreadable (left out, DEFECTIVE): {w['unreadable_seqs']}")
    lines.append(f"S = {_num(doc['s'])} (S_short = {_num(doc['s_short'])}, "
                 f"S_nelo = {_num(doc['s_nelo'])})")
    lines.append(f"R = dA / S = {_num(doc['r'], 4)} (R_short = {_num(doc['r_short'], 4)}, "
                 f"R_nelo = {_num(doc['r_nelo'], 4)}, recorded only)")
    lines.append(f"thresholds: HALT if R < {doc['halt_below']}, WARNING if R < "
                 f"{doc['warn_below']}, else CONTINUE (compared at 9 decimals)")
    lines.append(f"verdict: {doc['verdict']} (short stage: {doc['verdict_short']})")
    for reason in doc["reasons"] or []:
        lines.append(f"  reason: {reason}")
    for anomaly in doc["anomalies"]:
        lines.append(f"  anomaly: {anomaly}")
    o = doc["overfitting"]
    if o["claimed_excess"] is not None:
        lines.append(f"overfitting suspected: {o['suspected']} (S - dA = "
                     f"{_num(o['claimed_excess'])} vs band {_num(o['band'])})")
    mc = doc["monte_carlo"]
    if mc:
        p = mc["percentiles"]
        lines.append(f"Monte Carlo band (decides nothing): 2.5% {_num(p['2.5'], 4)}, "
                     f"50% {_num(p['50'], 4)}, 97.5% {_num(p['97.5'], 4)} "
                     f"({mc['used']} of {mc['samples']} samples used, {mc['skipped']} skipped)")
    for r in doc["reviews"]:
        lines.append(f"review at position {r['position']}: {r['decision']} by {r['reviewer']}: "
                     f"{r['reason']}")
    replay = doc.get("replay")
    if replay is not None:
        if replay["identical"]:
            lines.append("replay from the recorded inputs: identical")
        elif "error" in replay:
            lines.append(f"replay from the recorded inputs: not possible ({replay['error']})")
        else:
            lines.append("replay from the recorded inputs: DIFFERENT; the arithmetic above is "
                         "the recomputed one; the event records:")
            for key, pair in doc.get("recorded", {}).items():
                lines.append(f"  {key}: recorded {_compact(pair['recorded'])}, recomputed "
                             f"{_compact(pair['recomputed'])}")
    return "\n".join(lines)
