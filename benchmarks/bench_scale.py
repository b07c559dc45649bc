"""Scale (issue 25): the main job's cost as the history grows.

1. Demo histories of 100, 1,000 and 10,000 candidates (``--sizes``): the demo's and the
   report's time per candidate, each one's peak memory, the ``replay --rebuild`` rate,
   and in one open deployment the first replay (checkpoints loaded and verified) and the
   slowest of a second ``replay``/``gate``/``states`` with nothing new (held states).
   Each step runs in a process of its own, so its peak resident memory is its own.
2. ``gate``, ``status`` and ``replay`` with nothing new to apply, on a log of
   ``--log-events`` events (default 1,000,000) against the same commands on an empty log
   of the same deployment: as command-line processes (what an operator waits for) and
   inside one open deployment (the second call, once the checkpoints are verified).
   The big log is written with the store's batch append (not through the demo):
   ``notes.note_added`` events beside the enabled fork-score, receipts and lawv plugins,
   so every projection is folded and checkpointed at the head.

Targets (the issue): per-candidate time at 10,000 within 1.5x of the time at 100;
memory sub-linear in the history and the 10,000-candidate report under 1 GB; the
nothing-new commands on the big log within 2x of the empty log.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PLUGINS = ("notes", "fork-score", "receipts", "lawv")
BATCH = 20_000
REPEATS = 3  # timings of the nothing-new commands (the best counts)
_SCRIPT = Path(sys.executable).parent / "cladelog"
#: The command line as an operator runs it (the installed script, else the module).
CLADELOG = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "cladelog.core.cli"]


def _child(code: str, *args: str) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter; it prints one JSON object (its last line)."""
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         check=False)
    if out.returncode != 0:
        raise SystemExit(f"benchmark child failed ({out.returncode}): {out.stderr[-2000:]}")
    doc: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return doc


_PEAK = ("import resource, json, time\n"
         "def peak():\n"
         "    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n")

DEMO = _PEAK + """
import sys
from pathlib import Path
from cladelog.demo.model import DemoConfig
from cladelog.demo.runner import run_demo
t = time.perf_counter()
result = run_demo(Path(sys.argv[1]), config=DemoConfig(seed=0, candidates=int(sys.argv[2])))
print(json.dumps({"seconds": time.perf_counter() - t, "events": result.head_position,
                  "peak_mb": peak()}))
"""

REPORT = _PEAK + """
import sys
from pathlib import Path
from cladelog.demo.report import write_report
t = time.perf_counter()
data = write_report(Path(sys.argv[1]) / "cladelog.toml", Path(sys.argv[1]) / "report.html")
print(json.dumps({"seconds": time.perf_counter() - t, "gate_rows": len(data.gate),
                  "peak_mb": peak()}))
"""

REBUILD = _PEAK + """
import sys
from cladelog.core import Deployment
with Deployment.open(sys.argv[1]) as dep:
    t = time.perf_counter()
    result = dep.replay(rebuild=True)
    seconds = time.perf_counter() - t
print(json.dumps({"seconds": seconds, "events": result.events_read, "peak_mb": peak()}))
"""

IN_PROCESS = """
import json, sys, time
from cladelog.core import Deployment
out = {}
with Deployment.open(sys.argv[1]) as dep:
    t = time.perf_counter(); dep.replay(); out["first replay"] = time.perf_counter() - t
    for name, call in (("replay", dep.replay), ("gate", lambda: dep.gate("c1")),
                       ("states", dep.states)):
        best = float("inf")
        for _ in range(5):
            t = time.perf_counter(); call(); best = min(best, time.perf_counter() - t)
        out[name] = best
print(json.dumps(out))
"""


def _config(root: Path) -> Path:
    from cladelog.core import DeploymentConfig

    root.mkdir(parents=True, exist_ok=True)
    path = root / "cladelog.toml"
    cfg = DeploymentConfig.from_dict({"store": "log.sqlite3", "plugins": list(PLUGINS),
                                      "actor": "bench"}, path=path)
    path.write_text(cfg.to_toml(store_as_written="log.sqlite3"), encoding="utf-8")
    return path


def build_log(root: Path, events: int) -> Path:
    """A deployment whose log holds ``events`` notes (batch appends), replayed to the head."""
    from cladelog.core import Deployment, NewEvent

    path = _config(root)
    with Deployment.open(path, create=True) as dep:
        dep.record_plugins()
        left = events - dep.store.head().position
        n = 0
        while left > 0:
            size = min(BATCH, left)
            batch = [NewEvent(f"notes-{n // BATCH % 64}", "notes.note_added",
                              {"text": f"note {n + i}", "tags": [f"t{(n + i) % 13}"]})
                     for i in range(size)]
            dep.store.append(dep.prepare(batch))
            n += size
            left -= size
    return path


def _cli(config: Path, *args: str) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        t = time.perf_counter()
        done = subprocess.run([*CLADELOG, "--config", str(config), *args],
                              capture_output=True, text=True, check=False)
        best = min(best, time.perf_counter() - t)
        if done.returncode not in (0, 1):
            raise SystemExit(f"cladelog {' '.join(args)}: exit {done.returncode}: "
                             f"{done.stderr[-500:]}")
    return best


def bench_demo(root: Path, sizes: list[int]) -> list[dict[str, Any]]:
    rows = []
    for n in sizes:
        folder = root / f"demo-{n}"
        shutil.rmtree(folder, ignore_errors=True)
        demo = _child(DEMO, str(folder), str(n))
        report = _child(REPORT, str(folder))
        rebuild = _child(REBUILD, str(folder / "cladelog.toml"))
        held = _child(IN_PROCESS, str(folder / "cladelog.toml"))
        size = (folder / "report.html").stat().st_size
        rows.append({"candidates": n, "events": demo["events"], "demo_s": demo["seconds"],
                     "report_s": report["seconds"], "demo_mb": demo["peak_mb"],
                     "report_mb": report["peak_mb"], "page_mb": size / 1e6,
                     "rebuild_rate": rebuild["events"] / rebuild["seconds"],
                     "again_ms": max(held["replay"], held["gate"], held["states"]) * 1000,
                     "first_ms": held["first replay"] * 1000})
        r = rows[-1]
        print(f"  {n:>6} candidates: demo {r['demo_s']:.1f} s, report {r['report_s']:.1f} s, "
              f"peak {r['demo_mb']:.0f} / {r['report_mb']:.0f} MB", flush=True)
    return rows


def bench_nothing_new(root: Path, events: int) -> dict[str, Any]:
    big, empty = root / "big", root / "empty"
    for folder in (big, empty):
        shutil.rmtree(folder, ignore_errors=True)
    t = time.perf_counter()
    big_cfg = build_log(big, events)
    written = time.perf_counter() - t
    empty_cfg = build_log(empty, 0)
    rebuild = _child(REBUILD, str(big_cfg))  # also leaves every checkpoint at the head
    _child(REBUILD, str(empty_cfg))
    out: dict[str, Any] = {"events": events, "write_rate": events / written,
                           "rebuild_rate": rebuild["events"] / rebuild["seconds"],
                           "rebuild_mb": rebuild["peak_mb"], "cli": {}, "in_process": {}}
    for args in (("gate", "c1"), ("status",), ("replay",)):
        out["cli"][args[0]] = (_cli(big_cfg, *args), _cli(empty_cfg, *args))
    a, b = _child(IN_PROCESS, str(big_cfg)), _child(IN_PROCESS, str(empty_cfg))
    out["in_process"] = {k: (a[k], b[k]) for k in a}
    return out


def run(args: Any) -> int:
    sizes = [int(s) for s in (getattr(args, "sizes", None) or "100,1000,10000").split(",")]
    events = getattr(args, "log_events", None) or 1_000_000
    keep = os.environ.get("CLADELOG_BENCH_DIR")
    root = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="cladelog-scale-"))
    try:
        print(f"scale: demo histories of {', '.join(map(str, sizes))} candidates")
        rows = bench_demo(root, sizes) if sizes != [0] else []
        print(f"scale: nothing new on a {events:,}-event log vs an empty log")
        nothing = bench_nothing_new(root, events) if events else None
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    if rows:
        base = rows[0]
        print()
        print("| candidates | events | demo s | per cand. ms | x first | report s | "
              "per cand. ms | x first | demo peak MB | report peak MB | page MB | "
              "rebuild ev/s | first replay ms | again, nothing new ms |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            d, rp = r["demo_s"] / r["candidates"], r["report_s"] / r["candidates"]
            d0, rp0 = base["demo_s"] / base["candidates"], base["report_s"] / base["candidates"]
            print(f"| {r['candidates']:,} | {r['events']:,} | {r['demo_s']:.1f} | "
                  f"{d * 1000:.1f} | {d / d0:.2f} | {r['report_s']:.1f} | {rp * 1000:.1f} | "
                  f"{rp / rp0:.2f} | {r['demo_mb']:.0f} | {r['report_mb']:.0f} | "
                  f"{r['page_mb']:.2f} | {r['rebuild_rate']:,.0f} | {r['first_ms']:.0f} | "
                  f"{r['again_ms']:.2f} |")
    if nothing:
        print()
        print(f"log of {nothing['events']:,} events: written at {nothing['write_rate']:,.0f} "
              f"events/s (batch append), `replay --rebuild` at {nothing['rebuild_rate']:,.0f} "
              f"events/s (peak {nothing['rebuild_mb']:.0f} MB)")
        print()
        print("| nothing new | big log s | empty log s | ratio |")
        print("|---|---|---|---|")
        for name, (big_s, empty_s) in nothing["cli"].items():
            print(f"| cladelog {name} (process) | {big_s:.3f} | {empty_s:.3f} | "
                  f"{big_s / empty_s:.2f} |")
        for name, (big_s, empty_s) in nothing["in_process"].items():
            print(f"| {name} (in process) | {big_s * 1000:.2f} ms | {empty_s * 1000:.2f} ms | "
                  f"{big_s / empty_s:.2f} |")
    return 0

