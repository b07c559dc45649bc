"""The gate rule (pure): settled allows; finalized blocks unless the setting allows it."""

from __future__ import annotations

from cladelog.consensus.gate import decide
from ledger_helpers import Driver


def test_gate_levels() -> None:
    d = Driver({"v1": 1, "v2": 1, "v3": 1})
    assert decide("c", d.state, False)[0] == "block"          # never proposed
    d.propose("c")
    assert decide("c", d.state, True) == ("block", "voting open (0/3 power accepted; more "
                                                   "than 2/3 needed)")
    for v in ("v1", "v2", "v3"):
        d.vote(v, "c")
    assert decide("c", d.state, False)[0] == "block"
    assert decide("c", d.state, True)[0] == "allow"
    d.tick(2)
    assert decide("c", d.state, False) == ("allow", "settled in epoch 1 (3/3 power accepted)")
    d.propose("x", parent="c")
    d.tick(2)
    assert decide("x", d.state, True) == ("block", "not finalized (no_quorum; 0/3 power "
                                                   "accepted)")
