"""Authoring benchmark: the decompose loop and the master loop (``run.py authoring``).

1. A decompose run over a generated task tree of 10,000 segments with deterministic
   content functions (reactive synthesis inside stabilization), then its replay from the
   records (no provider, so no content function, is called), then the post-order regime.
2. ``--events`` master-loop solves (default 100,000) over a mixed workload: 40 method classes
   × 25 contents drawn from a fixed LCG, with a drift every 500 solves.

Prints rates; nothing here is a pass/fail test.
"""

from __future__ import annotations

import argparse
import time
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


def bench_master_loop(solves: int) -> None:
    state = 12345

    def rand(n: int) -> int:
        nonlocal state
        state = (state * 1103515245 + 12345) % 2**31
        return state % n

    problems = [(f"op{rand(40)}", rand(25)) for _ in range(solves)]
    forged = {"n": 0}

    def signature(p: tuple[str, int]) -> dict[str, Any]:
        return {"structure": {"op": p[0]}, "content": {"x": p[1]}}

    def forge(p: tuple[str, int], ctx: Any) -> dict[str, Any]:
        forged["n"] += 1
        return {"result": {"op": p[0], "x": p[1]}, "cost": 10}

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
    """Run both series and print rates."""
    bench_decompose(SEGMENTS)
    bench_master_loop(int(getattr(args, "events", 100_000) or 100_000))
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=100_000)
    raise SystemExit(run(parser.parse_args()))
