"""fork-score: in-process scoring throughput, and the CLI's cold start against a bare
interpreter (``python -c 'import json'``), measured in the same run.

``python benchmarks/run.py fork-score [--events N]`` scores N (parent, child) pairs
(default 100,000) and times ``cladelog fork-score score ...`` in a temporary
deployment, ``python -m cladelog.fork_score score ...`` without one, and the bare
interpreter: the median of several runs each, and the ratios. Nothing here is a
pass/fail test.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RATES = {
    "5S": {"syntax": "parse_pass_rate", "semantics": "equivalence_recovery_rate",
           "syllogism": "step_validity_rate", "synthesis": "derivation_pass_rate",
           "semiotics": "invariance_under_swap"},
    "5T": {"transfer-learning": "transfer_learning_success_rate",
           "triangulation": "triangulation_agreement_rate",
           "truthtables": "truth_table_coverage_rate", "transitivity": "full_chain_pass_rate",
           "time": "temporal_context_preservation_rate"},
    "5F": {"function": "function_pass_rate", "finetuning": "adaptation_improvement_rate",
           "falsification": "error_detection_rate", "formulate": "structural_match_rate",
           "feedback-loop": "integration_coverage_rate"},
}
COLD_RUNS = 7
POOL = 256


def battery_doc(rng: random.Random) -> dict[str, Any]:
    """A full battery result with seeded random rates (all 15 sub-batteries)."""
    return {"batteries": {battery: {sub: {key: round(rng.uniform(0.3, 0.95), 4)}
                                    for sub, key in subs.items()}
                          for battery, subs in RATES.items()}}


def pairs(n: int) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """``n`` (parent, child) pairs drawn from a seeded pool of distinct documents."""
    rng = random.Random(20260101)
    pool = [(battery_doc(rng), battery_doc(rng)) for _ in range(min(POOL, n))]
    return [pool[i % len(pool)] for i in range(n)]


def bench_in_process(n: int) -> float:
    from cladelog.fork_score import score

    work = pairs(n)
    score(*work[0])  # warm the imports
    start = time.perf_counter()
    for parent, child in work:
        score(parent, child, capital_delta=0.1, audit_completeness=0.9)
    elapsed = time.perf_counter() - start
    return n / elapsed if elapsed > 0 else float("inf")


def median_seconds(cmd: list[str], cwd: Path, env: dict[str, str], ok: tuple[int, ...]) -> float:
    times = []
    for _ in range(COLD_RUNS):
        start = time.perf_counter()
        done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=120, check=False)
        times.append(time.perf_counter() - start)
        if done.returncode not in ok:
            raise RuntimeError(f"{' '.join(cmd[:4])}...: exit {done.returncode}: "
                               f"{done.stderr.strip()[:200]}")
    return statistics.median(times)


def cladelog_command() -> list[str]:
    script = Path(sys.executable).parent / "cladelog"
    return [str(script)] if script.exists() else [sys.executable, "-m", "cladelog.core.cli"]


def bench_cold_start(root: Path) -> dict[str, float]:
    from bench_core import compile_bytecode

    compile_bytecode()
    rng = random.Random(7)
    (root / "p.json").write_text(json.dumps(battery_doc(rng)), encoding="utf-8")
    (root / "c.json").write_text(json.dumps(battery_doc(rng)), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "CLADELOG_CONFIG"}
    args = ["score", "--parent", "p.json", "--child", "c.json"]
    bare = median_seconds([sys.executable, "-c", "import json"], root, env, (0,))
    standalone = median_seconds([sys.executable, "-m", "cladelog.fork_score", *args], root, env,
                                (0, 1))
    cladelog = cladelog_command()
    subprocess.run([*cladelog, "init", "-p", "fork-score"], cwd=root, env=env, check=True,
                   capture_output=True, timeout=120)
    deployed = median_seconds([*cladelog, "fork-score", *args], root, env, (0, 1))
    return {"bare": bare, "standalone": standalone, "deployed": deployed}


def run(args: Any) -> int:
    n = int(getattr(args, "events", 100_000) or 100_000)
    rate = bench_in_process(n)
    print(f"fork-score in-process: {n} (parent, child) pairs scored, {rate:,.0f} pairs/s")
    with tempfile.TemporaryDirectory(prefix="bench-fork-score-") as tmp:
        try:
            cold = bench_cold_start(Path(tmp))
        except (RuntimeError, subprocess.CalledProcessError) as exc:
            detail = getattr(exc, "stderr", None) or str(exc)
            print(f"cold start: could not run the CLI ({str(detail).strip()[:300]})",
                  file=sys.stderr)
            return 1
    print(f"cold start, median of {COLD_RUNS}:")
    print(f"  python -c 'import json'                    {cold['bare'] * 1000:8.1f} ms")
    print(f"  cladelog fork-score score (deployment)     {cold['deployed'] * 1000:8.1f} ms  "
          f"ratio {cold['deployed'] / cold['bare']:.1f}x")
    print(f"  python -m cladelog.fork_score score        {cold['standalone'] * 1000:8.1f} ms  "
          f"ratio {cold['standalone'] / cold['bare']:.1f}x")
    return 0
