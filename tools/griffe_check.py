"""Run ``griffe check`` for each package against its last release tag, when one exists.

Release tags are named ``<distribution>-v<version>`` (e.g. ``cladelog-core-v0.1.0``).
Without a tag there is nothing to compare against and the package is skipped
(the public-API snapshot tests still guard every change).
"""

from __future__ import annotations

import subprocess
import sys

PACKAGES = {
    "cladelog-core": ("cladelog.core", "packages/core/src"),
    "cladelog-fork-score": ("cladelog.fork_score", "packages/fork-score/src"),
    "cladelog-receipts": ("cladelog.receipts", "packages/receipts/src"),
    "cladelog-lawv": ("cladelog.lawv", "packages/lawv/src"),
    "cladelog-graph-engine": ("cladelog.graph_engine", "packages/graph-engine/src"),
    "cladelog-consensus": ("cladelog.consensus", "packages/consensus/src"),
}


def last_tag(dist: str) -> str | None:
    out = subprocess.run(["git", "tag", "--list", f"{dist}-v*", "--sort=-v:refname"],
                         capture_output=True, text=True, check=False).stdout.split()
    return out[0] if out else None


def main() -> int:
    failed = 0
    for dist, (module, src) in PACKAGES.items():
        tag = last_tag(dist)
        if tag is None:
            print(f"griffe: {dist}: no release tag yet, skipped")
            continue
        rc = subprocess.run(["griffe", "check", module, "--against", tag, "--search", src],
                            check=False).returncode
        print(f"griffe: {dist} against {tag}: {'ok' if rc == 0 else 'BREAKING CHANGES'}")
        failed |= rc != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
