"""No input reaches "internal error" (exit 70): mutated statement files, evidence pairs,
certificates and policies are refused with exit 2 (or a certificate fails with exit 1)."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

from cli_helpers import GOOD, World, propose
from ledger_helpers import policy_doc

_JUNK = [None, 1, -1, 1.5, "x", [], {}, True, "A" * 100]


def mutate(doc: Any, rng: random.Random) -> Any:
    """A copy of ``doc`` with one member deleted or replaced somewhere inside it."""
    doc = copy.deepcopy(doc)
    node = doc
    while True:
        keys = list(node) if isinstance(node, dict) else list(range(len(node))) \
            if isinstance(node, list) else []
        if not keys:
            return doc
        key = rng.choice(keys)
        child = node[key]
        if rng.random() < 0.35 or not isinstance(child, dict | list) or not child:
            if rng.random() < 0.3 and isinstance(node, dict):
                del node[key]
            else:
                node[key] = rng.choice(_JUNK)
            return doc
        node = child


def test_mutated_inputs_never_reach_an_internal_error(world: World) -> None:
    propose(world, "cand-1", GOOD)
    inputs = str(world.tmp / "cand-1-inputs.json")
    for name in ("v1", "v2", "v3"):
        world.ok("vote", "cand-1", "--key", world.key(name), "--inputs", inputs, "--submit",
                 "--out", str(world.tmp / f"vote-{name}.json"))
    world.ok("certificate", "cand-1", "--out", str(world.tmp / "c.json"))
    keys = "".join((world.tmp / f"{n}.pub").read_text() for n in ("v1", "v2", "v3", "v4"))
    trusted = world.tmp / "trusted.txt"
    trusted.write_text(keys)
    vote = json.loads((world.tmp / "vote-v1.json").read_text())
    cert = json.loads((world.tmp / "c.json").read_text())
    rng = random.Random(20)
    target = world.tmp / "f.json"
    before = len(world.env.events())
    for _ in range(40):
        for args, doc in (
            (("submit",), mutate(vote, rng)),
            (("evidence",), {"first": mutate(vote, rng), "second": mutate(vote, rng)}),
            (("policy", "set"), mutate(policy_doc(version=1), rng)),
        ):
            target.write_text(json.dumps(doc))
            result = world.env.cli("consensus", *args, str(target))
            assert result.exit_code == 2, (args, result.output)
        target.write_text(json.dumps(mutate(cert, rng)))
        result = world.env.cli("consensus", "verify-certificate", str(target),
                               "--trusted-keys", str(trusted))
        assert result.exit_code in (0, 1, 2), result.output
    assert len(world.env.events()) == before
