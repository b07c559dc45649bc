"""Helpers of the CLI tests: a deployment with four bonded validators, file writers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cladelog.core.testing import CladelogEnv
from ledger_helpers import policy_doc

GOOD = {"parent": {"batteries": {"5S": {"syntax": {"parse_pass_rate": 0.5}}}},
        "child": {"batteries": {"5S": {"syntax": {"parse_pass_rate": 0.8}}}},
        "weights": None, "scalars": {}}
BAD = {**GOOD, "child": {"batteries": {"5S": {"syntax": {"parse_pass_rate": 0.1}}}}}


class World:
    def __init__(self, env: CladelogEnv, tmp: Path) -> None:
        self.env, self.tmp = env, tmp

    def ok(self, *args: str) -> str:
        result = self.env.cli("consensus", *args)
        assert result.exit_code == 0, result.output
        return str(result.output)

    def refused(self, *args: str) -> str:
        before = len(self.env.events())
        result = self.env.cli("consensus", *args)
        lines = result.output.strip().splitlines()
        assert result.exit_code == 2, result.output
        assert len(lines) == 1 and lines[0].startswith("error: "), result.output
        assert len(self.env.events()) == before  # nothing appended
        return lines[0]

    def file(self, name: str, doc: Any) -> str:
        path = self.tmp / name
        path.write_text(json.dumps(doc))
        return str(path)

    def key(self, name: str) -> str:
        return str(self.tmp / f"{name}.key")


def make_world(cladelog_env: CladelogEnv, tmp_path: Path) -> World:
    w = World(cladelog_env, tmp_path)
    for name in ("v1", "v2", "v3", "v4"):
        w.ok("keygen", name, "--out", str(tmp_path))
    w.ok("policy", "set", w.file("policy.json", policy_doc()))
    for name in ("v1", "v2", "v3", "v4"):
        w.ok("bond", "--key", w.key(name), "--stake", "10")
    return w


def propose(w: World, cid: str, inputs: dict[str, Any], parent: str = "genesis") -> str:
    return w.ok("propose", "--key", w.key("v1"), "--candidate", cid, "--parent", parent,
                "--inputs", w.file(f"{cid}-inputs.json", inputs), "--receipts-checkpoint",
                "cp-1", "--coverage-diff", "c" * 64, "--metric-delta", "0.1")
