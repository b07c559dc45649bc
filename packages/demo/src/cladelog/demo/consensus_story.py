"""The demo's consensus scenario: four validators select upgrades, one is caught equivocating.

It runs in a deployment of its own, ``<demo folder>/consensus/`` (fork-score and
consensus enabled), so the main demo's log and gates are unchanged. Everything goes
through ``cladelog consensus`` commands and the consensus plugin's signing API; keys
and times come from the demo seed and :class:`~cladelog.demo.clock.DemoClock`, so the
same seed writes the same log. The story, epoch by epoch:

* epoch 0: ``lumen-m1`` is proposed on genesis; all four labs audit and accept it;
* epoch 1: ``lumen-m2`` is proposed on ``lumen-m1``; ``lab-d`` also proposes a rival
  sibling ``lumen-m2-rival`` and signs accept on both — the log detects the
  equivocation and slashes half of ``lab-d``'s stake (tombstoned); the three honest
  labs finalize ``lumen-m2``;
* epoch 3: ``lumen-m3`` regresses (a hard flag); the honest labs' audits reject it and
  it ends NOT_FINALIZED;
* the epochs close until everything is settled; a finality certificate of ``lumen-m2``
  is written and verified offline against the labs' public keys.

:func:`consensus_section_html` renders the report section (finality timeline, stake
and slashes) from that deployment.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

__all__ = ["CONSENSUS_DIR", "consensus_section_html", "consensus_summary",
           "run_consensus_story"]

CONSENSUS_DIR = "consensus"
LABS = {"lab-a": 400, "lab-b": 300, "lab-c": 200, "lab-d": 100}
_POLICY = {"version": 1, "weighting": "linear", "cap": "1/2", "voting_window": 2,
           "challenge_window": 2, "unbonding_period": 6, "evidence_max_age": 2,
           "slash": {"equivocation": "1/2", "bad_accept": "1/10"},
           "jail": {"misses": 3, "period": 2}, "reward_per_vote": 1, "min_bond": 10,
           "bootstrap": sorted(LABS), "open_bonding_epoch": None}


def _battery(syntax: float, semantics: float) -> dict[str, Any]:
    return {"batteries": {"5S": {"syntax": {"parse_pass_rate": syntax},
                                 "semantics": {"equivalence_recovery_rate": semantics}}}}


def _inputs(candidate: str, good: bool) -> dict[str, Any]:
    child = _battery(0.72, 0.64) if good else _battery(0.2, 0.61)
    child["candidate"] = candidate
    return {"parent": _battery(0.6, 0.6), "child": child, "weights": None, "scalars": {}}


def run_consensus_story(directory: Path, seed: int) -> dict[str, Any]:
    """Create ``directory`` (a fresh consensus deployment) and play the story into it."""
    from cladelog.consensus import (
        append_inputs,
        current_ledger,
        generate_key,
        input_for_envelope,
        run_audit,
        sign_statement,
        signer_from_key,
    )
    from cladelog.core import Deployment, DeploymentConfig, canonical_digest

    from .clock import DemoClock
    from .model import key_seed
    from .runner import run_cli

    directory.mkdir(parents=True, exist_ok=True)
    keys = directory / "keys"
    keys.mkdir(exist_ok=True)
    signers = {}
    for lab in LABS:
        skey, vkey = generate_key(lab, key_seed(seed, f"consensus/{lab}"))
        signers[lab] = signer_from_key(skey)
        (keys / f"{lab}.pub").write_text(vkey + "\n", encoding="utf-8")
    config_path = directory / "cladelog.toml"
    cfg = DeploymentConfig.from_dict({"store": "cladelog.sqlite3",
                                      "plugins": ["fork-score", "consensus"],
                                      "actor": "lumen-validators"}, path=config_path)
    clock = DemoClock()
    docs: dict[str, dict[str, Any]] = {}
    with Deployment(cfg, clock=clock, create=True) as dep:
        config_path.write_text(cfg.to_toml(store_as_written="cladelog.sqlite3"),
                               encoding="utf-8")

        def signed(lab: str, kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
            predicate = {"kind": kind, "validator": lab, "epoch": current_ledger(dep).epoch,
                         **fields}
            return input_for_envelope(sign_statement(predicate, signers[lab]))

        def propose(lab: str, cid: str, parent: str, good: bool) -> tuple[str, dict[str, Any]]:
            docs[cid] = _inputs(cid, good)
            return signed(lab, "propose", candidate=cid, parent=parent,
                          eval_digest=canonical_digest(docs[cid]),
                          receipts_checkpoint=f"register-{cid}",
                          coverage_diff=canonical_digest({"coverage": cid}),
                          metric_delta=0.04 if good else -0.3)

        def vote(lab: str, cid: str) -> tuple[str, dict[str, Any]]:
            audit = run_audit(dep, docs[cid])
            decision = ("accept" if audit["verdict"] == "ACCEPT" and not audit["hard_flags"]
                        else "reject")
            return signed(lab, "vote", proposal=cid, decision=decision, audit=audit)

        def accept_anyway(lab: str, cid: str) -> tuple[str, dict[str, Any]]:
            return signed(lab, "vote", proposal=cid, decision="accept",
                          audit=run_audit(dep, docs[cid]))

        def tick() -> None:
            clock.advance(hours=24)
            append_inputs(dep, [("consensus.epoch_closed",
                                 {"epoch": current_ledger(dep).epoch})])

        append_inputs(dep, [("consensus.policy_set", {"policy": _POLICY})])
        append_inputs(dep, [signed(lab, "bond", key=signers[lab].public_key, stake=stake)
                            for lab, stake in LABS.items()])
        append_inputs(dep, [propose("lab-a", "lumen-m1", "genesis", True)])
        append_inputs(dep, [vote(lab, "lumen-m1") for lab in LABS])
        tick()
        append_inputs(dep, [propose("lab-b", "lumen-m2", "lumen-m1", True)])
        append_inputs(dep, [propose("lab-d", "lumen-m2-rival", "lumen-m1", True)])
        append_inputs(dep, [accept_anyway("lab-d", "lumen-m2-rival")])
        append_inputs(dep, [accept_anyway("lab-d", "lumen-m2")])   # the equivocation
        append_inputs(dep, [vote(lab, "lumen-m2") for lab in ("lab-a", "lab-b", "lab-c")])
        tick()
        tick()
        append_inputs(dep, [propose("lab-c", "lumen-m3", "lumen-m2", False)])
        append_inputs(dep, [vote(lab, "lumen-m3") for lab in ("lab-a", "lab-b", "lab-c")])
        for _ in range(3):
            tick()
    cert = directory / "lumen-m2.cert.json"
    made = run_cli(config_path, "consensus", "certificate", "lumen-m2", "--out", str(cert))
    trusted = directory / "keys" / "validators.pub"
    trusted.write_text("".join((keys / f"{lab}.pub").read_text(encoding="utf-8")
                               for lab in LABS), encoding="utf-8")
    checked = run_cli(config_path, "consensus", "verify-certificate", str(cert),
                      "--trusted-keys", str(trusted))
    summary = consensus_summary(directory)
    summary["certificate"] = {"written": made.exit_code == 0,
                              "verified": checked.exit_code == 0,
                              "output": checked.output.strip()}
    (directory / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True)
                                            + "\n", encoding="utf-8")
    return summary


def consensus_summary(directory: Path) -> dict[str, Any]:
    """The finality timeline and the validators' stake and slashes, from the deployment."""
    from cladelog.core import Deployment

    with Deployment.open(directory / "cladelog.toml") as dep:
        ledger = dep.state("consensus.state")["ledger"]
    timeline = [{"candidate": p["candidate"], "parent": p["parent"], "opened": p["opened"],
                 "finalized": p["finalized_epoch"], "settled": p["settled_epoch"],
                 "outcome": p["outcome"], "reason": p["reason"],
                 "accept_power": p["accept_power"], "total_power": p["total_power"],
                 "zeta": p["zeta"]}
                for p in sorted(ledger["proposals"].values(), key=lambda p: p["seq"])]
    validators = [{"validator": vid, "stake": v["stake"], "bonded": LABS.get(vid),
                   "state": "slashed" if v["tombstoned"] else
                   ("jailed" if v["jailed"] else v["status"]),
                   "slashes": [{"offense": s["offense"], "amount": s["amount"]}
                               for s in v["slashes"]],
                   "rewards": v["rewards"], "votes": v["votes"]}
                  for vid, v in sorted(ledger["validators"].items())]
    return {"epoch": ledger["epoch"], "timeline": timeline, "validators": validators,
            "evidence": len(ledger["evidence"])}


def _cell(value: Any) -> str:
    return "–" if value is None else html.escape(str(value))


def consensus_section_html(demo_directory: Path) -> str:
    """The report section, or "" when the folder holds no consensus scenario."""
    path = demo_directory / CONSENSUS_DIR / "summary.json"
    if not path.is_file():
        return ""
    summary = json.loads(path.read_text(encoding="utf-8"))
    rows = "".join(
        "<tr>" + "".join(f"<td>{_cell(x)}</td>" for x in (
            t["candidate"], t["parent"], t["opened"], t["finalized"], t["settled"],
            t["outcome"] + (f" ({t['reason']})" if t["reason"] else ""),
            f"{t['accept_power']}/{t['total_power']}",
            None if t["zeta"] is None else f"{t['zeta']:.3f}")) + "</tr>"
        for t in summary["timeline"])
    stakes = "".join(
        "<tr>" + "".join(f"<td>{_cell(x)}</td>" for x in (
            v["validator"], v["state"], v["bonded"], v["stake"],
            ", ".join(f"{s['offense']} −{s['amount']}" for s in v["slashes"]) or None,
            v["votes"], v["rewards"])) + "</tr>"
        for v in summary["validators"])
    cert = summary.get("certificate", {})
    verdict = "verified offline" if cert.get("verified") else "NOT verified"
    return (
        '<section id="consensus"><h2>Consensus: independent validators</h2>'
        "<p>Four labs bond stake and vote with signed statements; a candidate is finalized "
        "when more than two thirds of the frozen voting power accepts, settled when its "
        f"challenge window closes. Finality certificate of lumen-m2: {verdict}.</p>"
        "<h3>Finality timeline (epochs)</h3><table><thead><tr><th>candidate</th>"
        "<th>parent</th><th>opened</th><th>finalized</th><th>settled</th><th>outcome</th>"
        "<th>accept/total power</th><th>ζ</th></tr></thead><tbody>" + rows
        + "</tbody></table><h3>Stake and slashes</h3><table><thead><tr><th>validator</th>"
        "<th>state</th><th>bonded</th><th>stake</th><th>slashes</th><th>votes</th>"
        "<th>rewards</th></tr></thead><tbody>" + stakes + "</tbody></table></section>")
