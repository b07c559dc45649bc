"""Benchmark runner: ``python benchmarks/run.py NAME [--events N]``.

Each benchmark measures cladelog and a baseline in the same run and prints
rates and ratios; nothing here is a pass/fail test. Names: core, and those the
plugin benchmarks add (see benchmarks/README.md; their history is docs/benchmarks-history.md).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

BENCHES = {
    "core": "bench_core",
    "fork-score": "bench_fork_score",
    "consensus": "bench_consensus",
    "receipts": "bench_receipts",
    "graph": "bench_graph",
    "authoring": "bench_authoring",
    "postgres": "bench_postgres",
    "postgres-ceiling": "bench_pg_ceiling",
    "append-memory": "bench_append_memory",
    "scale": "bench_scale",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("name", choices=sorted(BENCHES))
    parser.add_argument("--events", type=int, default=100_000,
                        help="events per measured series (default 100000)")
    parser.add_argument("--sizes", default=None,
                        help="scale: demo sizes in candidates (default 100,1000,10000)")
    parser.add_argument("--log-events", type=int, default=None,
                        help="scale: events of the big log (default 1000000)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        module = importlib.import_module(BENCHES[args.name])
    except ModuleNotFoundError as exc:
        print(f"benchmark {args.name!r} is not available yet ({exc})", file=sys.stderr)
        return 2
    return int(module.run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
