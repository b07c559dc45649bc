"""Receipts: record and verify signed receipts, and prove every index of a large Merkle tree.

Baseline, measured in the same run: the bare ``cryptography`` Ed25519 verify rate
(one signature check is the irreducible cost of accepting a receipt).

    python benchmarks/run.py receipts [--events N]

``--events`` sets the number of tree leaves (default 100000); 10000 receipts are
recorded (fewer when ``--events`` is smaller). Rates are per wall-clock second; the
process CPU time is printed beside them, because on a shared machine the wall clock
also counts other people's work; each ratio is given both ways (wall clock, and per CPU
second against the baseline's rate per CPU second). Recording is then broken down into its parts
(register state, the pure checks of each receipt, the core append and the fold of
the appended events into the cached state) in CPU time.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from bench_core import Timer, ed25519_verify, rate

RECEIPTS = 10_000
BATCH = 500


_BASE_CPU: list[float] = []  # the baseline's rate per CPU second, set by bare_ed25519


def line(label: str, n: int, timer: Timer, base: float | None = None) -> float:
    r = rate(n, timer.wall)
    ratio = ""
    if base:
        ratio = f"  ({r / base:.3f}x the bare Ed25519 verify rate"
        if _BASE_CPU:
            ratio += f"; {rate(n, timer.cpu) / _BASE_CPU[0]:.3f}x in CPU time"
        ratio += ")"
    print(f"  {label:<46} {n:>8} in {timer.wall:7.2f}s (cpu {timer.cpu:6.2f}s)"
          f"  {r:>10,.0f}/s{ratio}")
    return r


def bare_ed25519(n: int) -> float:
    t = ed25519_verify(n)
    _BASE_CPU[:] = [rate(n, t.cpu)]
    return line("baseline: cryptography Ed25519 verify", n, t)


def _stage(name: str, counts: list[int], sprt: bool) -> dict[str, Any]:
    from cladelog.core import elo

    est = elo.logistic_elo(counts)
    doc: dict[str, Any] = {"name": name, "results": dict(zip(("losses", "draws", "wins"),
                                                             counts, strict=True)),
                           "elo": est.elo, "half_width": est.half_width}
    if sprt:
        llr = elo.llr_logistic(counts, 0.0, 5.0)
        doc["criterion"] = {"type": "sprt", "elo0": 0, "elo1": 5, "alpha": 0.05, "beta": 0.05,
                            "model": "logistic", "llr": llr}
        doc["pass"] = llr >= elo.sprt_bounds(0.05, 0.05)[1]
    else:
        doc["criterion"] = {"type": "fixed", "threshold": 0}
        doc["pass"] = est.elo - est.half_width > 0
    return doc


def signed_receipts(n: int, signer: Any) -> list[dict[str, Any]]:
    from cladelog.receipts import entry_hash, make_receipt
    from cladelog.receipts.entries import GENESIS_PREV

    out, prev = [], GENESIS_PREV
    for seq in range(n):
        k = seq % 50
        entry = {"seq": seq, "prev": prev, "kind": "gain_test",
                 "candidate": {"name": "engine", "version": f"1.{seq}", "digest": f"sha256:{seq}"},
                 "baseline": {"name": "engine", "version": "1.0", "digest": "sha256:0"},
                 "oracle": {"name": "arena", "version": "3"}, "epoch": 0,
                 "stages": [_stage("short", [300 + k, 400, 330 + k], seq % 2 == 0),
                            _stage("long", [3000 + k, 4000, 3100 + 2 * k], False)]}
        out.append(make_receipt(entry, signer))
        prev = entry_hash(entry)
    return out


def record_in_parts(reg: Any, envelopes: list[dict[str, Any]]) -> dict[str, float]:
    """Record like :meth:`Register.record`, timing its three parts in CPU seconds."""
    from cladelog.core import NewEvent
    from cladelog.receipts.events import ENTRY_RECORDED, REGISTER_STREAM

    parts = {"state": 0.0, "checks": 0.0, "append": 0.0}
    for i in range(0, len(envelopes), BATCH):
        with Timer() as t:
            state = reg.state()
        parts["state"] += t.cpu
        with Timer() as t:
            prepared = reg.prepare(envelopes[i:i + BATCH], state)
        parts["checks"] += t.cpu
        with Timer() as t:
            cached = reg._cached
            recorded = reg.deployment.append(
                [NewEvent(REGISTER_STREAM, ENTRY_RECORDED.name, p.event_data())
                 for p in prepared], expected_versions={REGISTER_STREAM: state["size"]})
            reg._fold_own(cached, recorded, tuple(p.entry_hash for p in prepared))  # as record()
        parts["append"] += t.cpu
    return parts


def run(args: Any) -> int:
    from cladelog.core import Deployment, DeploymentConfig
    from cladelog.core.transparency.merkle import MerkleTree, leaf_hash, verify_inclusion
    from cladelog.receipts import Register, generate_key, parse_signer_key

    leaves = max(int(getattr(args, "events", 100_000)), 1)
    n = min(RECEIPTS, leaves)
    print(f"receipts benchmark: {n} receipts, a {leaves}-leaf tree")
    base = bare_ed25519(min(n, 5000))

    oracle_s, oracle_v = generate_key("oracle.bench", bytes(range(32)))
    log_s, log_v = generate_key("log.bench", bytes(range(32, 64)))
    with Timer() as t:
        envelopes = signed_receipts(n, parse_signer_key(oracle_s))
    line("sign receipts (build entry + DSSE + Ed25519)", n, t, base)

    with tempfile.TemporaryDirectory() as tmp:
        for parted in (False, True):
            name = "parts.sqlite3" if parted else "bench.sqlite3"
            cfg = DeploymentConfig.from_dict({"store": name, "plugins": ["receipts"],
                                              "actor": "bench"},
                                             path=Path(tmp) / "cladelog.toml")
            with Deployment(cfg, create=True) as dep:
                reg = Register(dep)
                reg.register_key(oracle_v, "oracle")
                reg.register_key(log_v, "log")
                if parted:
                    parts = record_in_parts(reg, envelopes)
                    print("    recording in CPU ms per receipt: " + ", ".join(
                        f"{k} {v * 1000 / n:.3f}" for k, v in parts.items()))
                    continue
                with Timer() as t:
                    for i in range(0, n, BATCH):
                        reg.record(envelopes[i:i + BATCH])
                line(f"record receipts (batches of {BATCH}, all checks)", n, t, base)
                reg.sign_checkpoint(parse_signer_key(log_s))
                with Timer() as t:
                    report = reg.verify()
                line("verify the whole register", n, t, base)
                if not report.ok:
                    print(f"  verification FAILED: {report.failure}")
                    return 1

    hashes = [leaf_hash(i.to_bytes(8, "big")) for i in range(leaves)]
    with Timer() as t:
        tree = MerkleTree(hashes)
    line("build the Merkle tree (leaves)", leaves, t)
    root = tree.root()
    with Timer() as t:
        for i in range(leaves):
            verify_inclusion(hashes[i], i, leaves, tree.inclusion_proof(i), root)
    line("inclusion proof + verify, every index", leaves, t, base)
    return 0
