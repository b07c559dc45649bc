"""Peak memory of one large ``cladelog append`` against ``cladelog import`` of the same events.

Issue 18: an append of a 200,000-event JSONL file peaked at about 25x the file while an
import of those events streamed. Each command runs in a fresh process of its own (the
``cladelog`` executable beside this Python) on a fresh SQLite deployment; its peak resident
set comes from the kernel's accounting of that child (``wait4``'s ``ru_maxrss``). The
import reads the export of the appended log, so both commands write the same events.
Run: ``python benchmarks/run.py append-memory [--events N]`` (default 200,000 here).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CLADELOG = str(Path(sys.executable).with_name("cladelog"))


def _peak(cmd: list[str], cwd: Path) -> tuple[float, float, str]:
    """(peak RSS in MB, seconds, stdout) of one child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = proc.stdout.read() if proc.stdout else b""  # type: ignore[union-attr]
    err = proc.stderr.read() if proc.stderr else b""  # type: ignore[union-attr]
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    took = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd}: exit {proc.returncode}: {err.decode()[-2000:]}")
    return usage.ru_maxrss / 1024, took, out.decode()


def _deployment(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "cladelog.toml").write_text('store = "cladelog.sqlite3"\nplugins = ["notes"]\n'
                                        'actor = "bench"\n')
    subprocess.run([CLADELOG, "init"], cwd=root, check=True, capture_output=True)
    return root


def run(args: Any) -> int:
    n = args.events if args.events != 100_000 else 200_000  # run.py's default is for core
    with tempfile.TemporaryDirectory(prefix="cladelog-append-memory-") as tmp:
        root = Path(tmp)
        source = root / "events.jsonl"
        with source.open("w", encoding="utf-8") as fh:
            for i in range(n):
                fh.write(json.dumps({"stream": f"notebook-{i % 100}", "type": "notes.note_added",
                                     "data": {"text": f"note number {i}",
                                              "tags": ["bench", f"t{i % 7}"]}}) + "\n")
        size = source.stat().st_size / 1e6
        a = _deployment(root / "append")
        append_mb, append_s, _ = _peak([CLADELOG, "append", str(source)], a)
        export = root / "export.jsonl"
        subprocess.run([CLADELOG, "export", str(export)], cwd=a, check=True,
                       capture_output=True)
        b = _deployment(root / "import")
        import_mb, import_s, _ = _peak([CLADELOG, "import", str(export)], b)
        idle_mb, _, _ = _peak([CLADELOG, "status"], b)
        exported = export.stat().st_size / 1e6
    print(f"append-memory benchmark: {n} events, JSONL file {size:.1f} MB, export "
          f"{exported:.1f} MB, Python {sys.version.split()[0]}")
    print(f"  cladelog status (start-up, for scale)  peak {idle_mb:7.1f} MB")
    print(f"  cladelog append FILE (one batch)       peak {append_mb:7.1f} MB  {append_s:6.1f} s")
    print(f"  cladelog import EXPORT                 peak {import_mb:7.1f} MB  {import_s:6.1f} s")
    print(f"  ratio append/import peak {append_mb / import_mb:.2f}; append peak / file "
          f"{append_mb / size:.1f}x")
    return 0
