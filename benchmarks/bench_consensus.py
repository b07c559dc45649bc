"""Consensus: 100 validators, 1,000 proposals with their signed votes.

Baseline, measured in the same run: the bare ``cryptography`` Ed25519 verify rate
(checking one signature is the irreducible cost of accepting a vote; the target is
to verify votes end to end at >= 50% of it).

    python benchmarks/run.py consensus [--events N]

``--events`` is the number of votes (default 100000 = 1,000 proposals x 100
validators). Measured:

* signing: DSSE envelopes of in-toto Statements (core's transparency code);
* votes verified per second end to end (:func:`cladelog.consensus.signing.open_statement`:
  envelope shape, Ed25519 over the PAE, canonical-JSON Statement, predicate checks)
  against the bare verify rate;
* append: every statement checked by the rules (signature included) and appended with
  its consequences, batches of 1,000 inputs, SQLite;
* replay: a full rebuild of ``consensus.state`` from the log (every signature again);
* certificate: verifying one finality certificate (signatures and inclusion proofs)
  offline.

Rates are printed per wall-clock second and per process CPU second; the ratios
to the bare verify rate use CPU time, because on a shared machine the wall clock
also counts other people's work.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from bench_core import Timer, ed25519_verify

VALIDATORS = 100
BATCH = 1000
PER_EPOCH = 10


def line(label: str, n: int, timer: Timer, base: float | None = None) -> float:
    """Print wall and CPU rates; ``base`` is the bare verify rate per CPU second, and the
    ratio is taken in CPU time (the machine is shared: wall time counts other work)."""
    r = n / timer.wall if timer.wall > 0 else float("inf")
    c = n / timer.cpu if timer.cpu > 0 else float("inf")
    ratio = f"  ({c / base:.3f}x the bare Ed25519 verify rate, CPU)" if base else ""
    print(f"  {label:<48} {n:>8} in {timer.wall:7.2f}s (cpu {timer.cpu:6.2f}s)"
          f"  {r:>9,.0f}/s ({c:,.0f}/cpu-s){ratio}")
    return c


def bare_ed25519(n: int) -> float:
    return line("baseline: cryptography Ed25519 verify", n, ed25519_verify(n))


def run(args: Any) -> int:
    from cladelog.consensus.commands import input_for_envelope, prepare_inputs
    from cladelog.consensus.ledger import Ledger
    from cladelog.consensus.signing import open_statement, sign_statement
    from cladelog.consensus.simulate import SimConfig, sim_policy, sim_signers
    from cladelog.core import Deployment, DeploymentConfig, canonical_digest

    votes_wanted = max(VALIDATORS, args.events)
    proposals = votes_wanted // VALIDATORS
    print(f"consensus benchmark: {VALIDATORS} validators, {proposals} proposals, "
          f"{proposals * VALIDATORS} votes")
    base = bare_ed25519(min(20_000, proposals * VALIDATORS))

    signers = sim_signers(SimConfig(VALIDATORS))
    ids = sorted(signers)
    audit = {"verdict": "ACCEPT", "hard_flags": [], "score": 0.15}
    inputs: list[tuple[str, dict[str, Any]]] = [
        ("consensus.policy_set", {"policy": {**sim_policy(ids), "evidence_max_age": 0,
                                             "unbonding_period": 4}})]
    vote_envelopes: list[dict[str, Any]] = []
    with Timer() as t:
        for vid in ids:
            inputs.append(input_for_envelope(sign_statement(
                {"kind": "bond", "validator": vid, "epoch": 0,
                 "key": signers[vid].public_key, "stake": 1000 + ids.index(vid)},
                signers[vid])))
        epoch, parent = 0, "genesis"
        for p in range(proposals):
            cid = f"cand-{p:05d}"
            proposer = ids[p % VALIDATORS]
            inputs.append(input_for_envelope(sign_statement(
                {"kind": "propose", "validator": proposer, "epoch": epoch, "candidate": cid,
                 "parent": parent, "eval_digest": canonical_digest({"c": cid}),
                 "receipts_checkpoint": "bench", "coverage_diff": "0" * 64,
                 "metric_delta": 0.1}, signers[proposer])))
            for vid in ids:
                envelope = sign_statement({"kind": "vote", "validator": vid, "epoch": epoch,
                                           "proposal": cid, "decision": "accept",
                                           "audit": audit}, signers[vid])
                vote_envelopes.append(envelope)
                inputs.append(("consensus.voted", {"envelope": envelope}))
            parent = cid
            if p % PER_EPOCH == PER_EPOCH - 1:
                inputs.append(("consensus.epoch_closed", {"epoch": epoch}))
                epoch += 1
    signed = len(vote_envelopes) + proposals + VALIDATORS
    line("sign statements (DSSE + in-toto + Ed25519)", signed, t, base)

    # votes verified end to end, outside any store: a ledger that knows the keys
    keys = Ledger()
    for event_type, data in inputs[: VALIDATORS + 1]:
        prepare_inputs(keys, [(event_type, data)])
    sample = vote_envelopes[: min(20_000, len(vote_envelopes))]
    with Timer() as t:
        for envelope in sample:
            open_statement(envelope, keys, "envelope")
    line("verify votes end to end (open_statement)", len(sample), t, base)

    with tempfile.TemporaryDirectory() as tmp:
        cfg = DeploymentConfig.from_dict(
            {"store": "log.sqlite3", "plugins": ["fork-score", "consensus"], "actor": "bench"},
            path=Path(tmp) / "cladelog.toml")
        with Deployment(cfg, create=True) as dep:
            ledger = Ledger()
            appended = 0
            with Timer() as t:
                for i in range(0, len(inputs), BATCH):
                    events, _ = prepare_inputs(ledger, inputs[i:i + BATCH])
                    dep.append(events)
                    appended += len(events)
            line("append inputs (rules + signatures + store)", len(inputs), t)
            print(f"  ({appended} events including consequences; "
                  f"{len(vote_envelopes) / t.cpu:,.0f} votes/cpu-s, "
                  f"{len(vote_envelopes) / t.cpu / base:.3f}x the bare verify rate)")
            with Timer() as t:
                result = dep.replay(rebuild=True)
            line("replay: rebuild consensus.state from the log", result.events_read, t)
            print(f"  ({len(vote_envelopes) / t.cpu:,.0f} votes/cpu-s re-verified, "
                  f"{len(vote_envelopes) / t.cpu / base:.3f}x the bare verify rate)")
            state = dep.state("consensus.state")
            outcomes: dict[str, int] = {}
            for proposal in state["ledger"]["proposals"].values():
                outcomes[proposal["outcome"]] = outcomes.get(proposal["outcome"], 0) + 1
            print(f"  outcomes: {outcomes}; ignored {len(state['ignored'])}, "
                  f"anomalies {len(state['anomalies'])}")
            from cladelog.consensus.certificate import build_certificate, verify_certificate

            record = state["ledger"]["proposals"]["cand-00000"]
            first_votes = []  # the first proposal's votes are the first voted events
            for event in dep.store.read(types=("consensus.voted",)):
                first_votes.append(event)
                if len(first_votes) == VALIDATORS:
                    break
            proposal_event = next(dep.store.read(types=("consensus.proposed",)))
            policy_event = next(dep.store.read(types=("consensus.policy_set",)))
            opened_event = next(dep.store.read(types=("consensus.proposal_opened",)))
            cert = build_certificate(record, proposal_event, policy_event, first_votes,
                                     dep.store, opened_event=opened_event)
            trusted = {vid: s.public_key for vid, s in signers.items()}
            with Timer() as t:
                for _ in range(10):
                    verify_certificate(cert, trusted)
            print(f"  verify one certificate ({VALIDATORS} votes with inclusion proofs): "
                  f"{t.wall / 10 * 1000:.1f} ms (cpu {t.cpu / 10 * 1000:.1f} ms)")
    return 0
