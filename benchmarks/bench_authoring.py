"""Authoring benchmark: the decompose loop and the master loop (``run.py authoring``).

1. A decompose run over a generated task tree of 10,000 segments with deterministic
   content functions (reactive synthesis inside stabilization), then its replay from the
   records (no provider, so no content function, is called), then the post-order regime.
2. ``--events`` master-loop solves (default 100,000) over a mixed workload: 40 method classes
   × 25 contents drawn from a fixed LCG, with a drift every 500 solves.
3. The same two on cladelog's event log (a temporary SQLite deployment): the decompose run
   as a recorded session and its replay from the log, and the solves through a
   ``LibraryLog`` (batches of 100 solves) plus rebuilding the library from the log.

``--segments N`` (direct runs only) shrinks the task tree. Prints rates; nothing here is a
pass/fail test.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from cladelog.graph_engine import Engine
from cladelog.graph_engine.authoring import (
    MasterLoop,
    SegmentView,
    loop_concept_tree,
    make_decompose_providers,
    reactive_loop_concept_tree,
    synthesize,
)

SEGMENTS = 10_000
BRANCH = 10


def _content(total_segments: int) -> dict[str, Any]:
    budget = {"made": 1}

    def eval_fn(seg: SegmentView) -> bool:
        return budget["made"] >= total_segments  # split while the budget lasts

    def expand_fn(seg: SegmentView) -> list[str]:
        k = min(BRANCH, total_segments - budget["made"])
        budget["made"] += k
        return [f"{seg.label}.{i}" for i in range(k)]

    def answer_fn(seg: SegmentView) -> str:
        return f"a{len(str(seg.label))}"

    def rollup_fn(seg: SegmentView, kids: list[Any]) -> str:
        return f"{seg.label}:{len(kids)}"  # bounded, as a real summary must be

    return {"eval_fn": eval_fn, "expand_fn": expand_fn, "answer_fn": answer_fn,
            "rollup_fn": rollup_fn}


def _seed() -> dict[str, Any]:
    return {"nodes": [{"_id": "start"}, {"_id": "goal"}],
            "segments": [{"_id": "root", "originNode": "start", "targetNode": "goal",
                          "depth": 0, "label": "R"}]}


def bench_decompose(total: int) -> None:
    records: list[tuple[str, dict[str, Any]]] = []
    providers = make_decompose_providers(**_content(total), max_depth=64, max_branch=BRANCH)
    t0 = time.perf_counter()
    eng = Engine(reactive_loop_concept_tree(), providers=providers, seed=_seed(),
                 sink=lambda k, d: records.append((k, d)))
    report = eng.settle()
    live = time.perf_counter() - t0
    segments = len(eng.select(["Segment"]))
    applies = sum(eng.provider_calls.values())
    print(f"decompose (reactive): {segments} segments, {applies} provider applies, "
          f"{report.passes} passes in {live:.2f} s = {segments / live:,.0f} segments/s, "
          f"{applies / live:,.0f} applies/s; root answer {eng.get('root')['answer']!r}")  # type: ignore[index]
    t0 = time.perf_counter()
    replayed = Engine.replay(records)
    rep = time.perf_counter() - t0
    assert replayed.digest() == eng.digest()
    print(f"replay: {len(records)} records in {rep:.2f} s = {len(records) / rep:,.0f} records/s, "
          f"{segments / rep:,.0f} segments/s, 0 content calls")
    post = make_decompose_providers(**{k: v for k, v in _content(total).items()
                                       if k != "rollup_fn"}, max_depth=64, max_branch=BRANCH)
    eng2 = Engine(loop_concept_tree(), providers=post, seed=_seed())
    t0 = time.perf_counter()
    eng2.settle()
    mid = time.perf_counter()
    answer = synthesize(eng2, "root", _content(total)["rollup_fn"])
    end = time.perf_counter()
    print(f"decompose (post-order): settle {mid - t0:.2f} s + synthesize {end - mid:.2f} s; "
          f"same root answer: {answer == eng.get('root')['answer']}")  # type: ignore[index]


def _workload(solves: int) -> list[tuple[str, int]]:
    state = 12345

    def rand(n: int) -> int:
        nonlocal state
        state = (state * 1103515245 + 12345) % 2**31
        return state % n

    return [(f"op{rand(40)}", rand(25)) for _ in range(solves)]


def _signature(p: tuple[str, int]) -> dict[str, Any]:
    return {"structure": {"op": p[0]}, "content": {"x": p[1]}}


def _forge(p: tuple[str, int], ctx: Any) -> dict[str, Any]:
    return {"result": {"op": p[0], "x": p[1]}, "cost": 10}


def bench_master_loop(solves: int) -> None:
    problems = _workload(solves)
    signature, forge = _signature, _forge
    records: list[tuple[str, dict[str, Any]]] = []
    loop = MasterLoop(signature, forge, sink=lambda k, d: records.append((k, d)))
    t0 = time.perf_counter()
    for i, p in enumerate(problems, 1):
        loop.solve(p)
        if i % 500 == 0:
            loop.drift(p)
    took = time.perf_counter() - t0
    s = loop.stats
    print(f"master loop: {solves:,} solves in {took:.2f} s = {solves / took:,.0f} solves/s "
          f"(match {s.match:,}, recall-full {s.recall_full:,}, recall-partial "
          f"{s.recall_partial:,}, forge {s.forge:,}, escalate {s.escalate:,}; "
          f"{len(records):,} records)")


def run(args: argparse.Namespace) -> int:
    """Run the three series and print rates."""
    segments = int(getattr(args, "segments", SEGMENTS) or SEGMENTS)
    solves = int(getattr(args, "events", 100_000) or 100_000)
    bench_decompose(segments)
    bench_master_loop(solves)
    bench_on_the_log(segments, solves)
    return 0


# ----------------------------------------------------------------------------- on the log


def _deployment(root: Path) -> Any:
    from cladelog.core import Deployment, DeploymentConfig

    config = DeploymentConfig.from_dict(
        {"store": "log.sqlite3", "plugins": ["graph-engine"], "actor": "bench"},
        path=root / "cladelog.toml")
    return Deployment(config, create=True)


def bench_on_the_log(total: int, solves: int) -> None:
    from cladelog.graph_engine import Session, replay_session
    from cladelog.graph_engine.authoring import LibraryLog, library_state

    with tempfile.TemporaryDirectory() as tmp, _deployment(Path(tmp)) as deployment:
        providers = make_decompose_providers(**_content(total), max_depth=64,
                                             max_branch=BRANCH)
        t0 = time.perf_counter()
        session = Session(deployment, "decompose", reactive_loop_concept_tree(),
                          providers=providers, seed=_seed())
        session.settle()
        live = time.perf_counter() - t0
        segments = len(session.engine.select(["Segment"]))
        t0 = time.perf_counter()
        replayed = replay_session(deployment, "decompose", from_checkpoint=False)
        rep = time.perf_counter() - t0
        assert replayed.digest() == session.engine.digest()
        print(f"decompose on the log: {segments} segments, {session.events_written} events "
              f"in {live:.2f} s = {segments / live:,.0f} segments/s; replay from the log "
              f"{rep:.2f} s = {segments / rep:,.0f} segments/s, 0 content calls")
        problems = _workload(solves)
        with LibraryLog(deployment, "bench", flush_every=100) as log:
            loop = log.open_loop(_signature, _forge)
            t0 = time.perf_counter()
            for i, p in enumerate(problems, 1):
                loop.solve(p)
                if i % 500 == 0:
                    loop.drift(p)
        took = time.perf_counter() - t0
        t0 = time.perf_counter()
        state = library_state(deployment, "bench")
        rebuild = time.perf_counter() - t0
        assert state.stats == loop.stats
        print(f"master loop on the log: {solves:,} solves in {took:.2f} s = "
              f"{solves / took:,.0f} solves/s ({log.events_written:,} events); library "
              f"rebuilt from the log in {rebuild:.2f} s = "
              f"{log.events_written / rebuild:,.0f} events/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--segments", type=int, default=SEGMENTS)
    raise SystemExit(run(parser.parse_args()))
