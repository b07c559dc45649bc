"""Law V end to end on REAL register entries, signed and recorded through cladelog.receipts.

The other plugin tests use a stand-in for the receipts plugin. Here the real one
records the register: an oracle key is registered, entries are signed as DSSE
receipts and recorded with ``Register.record`` (first window) and with
``cladelog receipts add`` (second window); the register re-derives every claimed
Elo from the game counts and would refuse a claim that disagrees. lawv then runs
its checks, the gate, the review and the replays through its own CLI.

The whole module is skipped when ``cladelog.receipts`` is not importable (the tox
env of lawv installs only core and lawv). lawv itself never imports it.

Claims are computed in this file from the game counts with the textbook trinomial
formulas (independent of ``cladelog.core.elo``); with counts [L, D, W] and N games:

    s = (W + D/2) / N           var = (L s² + D (1/2 − s)² + W (1 − s)²) / N
    elo(x) = −400 log10(1/x − 1)            se = √(var / N)
    half_width = (elo(s + 1.959964 se) − elo(s − 1.959964 se)) / 2
    nelo = (800 / ln 10) (s − 1/2) / √var
    a fixed criterion with threshold 0 passes when elo − half_width > 0

and rounded to 0.01, the precision at which the register compares claims.
"""

from __future__ import annotations

import json
import math
from typing import Any

import cladelog.receipts as receipts  # lawv requires receipts: its tox env installs it
import pytest

Z95 = 1.959963984540054
GENESIS_PREV = "0" * 64  # prev of seq 0 (receipts docs/schema.md)
ORACLE = {"name": "arena", "version": "3"}
STATE = "lawv.state"

ANCHOR_A = {"name": "anchor-a", "hash": "sha256:" + "a1" * 32, "rating": 3000.0,
            "rating_uncertainty": 12.0}
ANCHOR_B = {"name": "anchor-b", "hash": "sha256:" + "b2" * 32, "rating": 2900.0,
            "rating_uncertainty": 5.0}
# statistical uncertainties h_i of the two anchors, the same at every endpoint
H_A, H_B = 9.8, 14.0


@pytest.fixture
def cladelog_plugins() -> list[str]:
    """The real, installed receipts and lawv plugins."""
    return ["receipts", "lawv"]


@pytest.fixture
def cladelog_plugin_modules() -> list[Any]:
    """No stand-in: this module runs against the real receipts plugin."""
    return []


# -- independent statistics and entry builders ----------------------------------------------


def _elo(score: float) -> float:
    return -400.0 * math.log10(1.0 / score - 1.0)


def stage(name: str, losses: int, draws: int, wins: int) -> dict[str, Any]:
    """A gain-test stage whose claims are computed here from the counts (see the docstring)."""
    n = losses + draws + wins
    s = (wins + draws / 2.0) / n
    var = (losses * s**2 + draws * (0.5 - s) ** 2 + wins * (1.0 - s) ** 2) / n
    se = math.sqrt(var / n)
    elo = _elo(s)
    half = (_elo(s + Z95 * se) - _elo(s - Z95 * se)) / 2.0
    nelo = 800.0 / math.log(10.0) * (s - 0.5) / math.sqrt(var)
    return {"name": name, "results": {"losses": losses, "draws": draws, "wins": wins},
            "elo": round(elo, 2), "half_width": round(half, 2), "nelo": round(nelo, 2),
            "criterion": {"type": "fixed", "threshold": 0}, "pass": elo - half > 0}


def artifact(name: str) -> dict[str, str]:
    digest = "sha256:" + name.encode().hex().ljust(64, "0")
    return {"name": "engine", "version": name, "digest": digest}


class Oracle:
    """Signs the register's entries in order (seq, prev), as the arena's oracle would."""

    def __init__(self) -> None:
        skey, self.vkey = receipts.generate_key("arena.test", bytes(range(32)))
        self.signer = receipts.parse_signer_key(skey)
        self.seq = 0
        self.prev = GENESIS_PREV

    def sign(self, kind: str, **fields: Any) -> dict[str, Any]:
        entry = {"seq": self.seq, "prev": self.prev, "kind": kind, **fields}
        envelope: dict[str, Any] = receipts.make_receipt(entry, self.signer)
        self.prev = receipts.entry_hash(entry)
        self.seq += 1
        return envelope

    def gain_test(self, version: str, epoch: int, short: dict[str, Any],
                  long: dict[str, Any]) -> dict[str, Any]:
        return self.sign("gain_test", candidate=artifact(version), baseline=artifact("base"),
                         oracle=ORACLE, epoch=epoch, stages=[short, long])


# -- the deployment's documents ---------------------------------------------------------------


CONTRACT = {"version": 7, "date": "2026-10-16", "T": 36.9, "transfer_band": 51,
            "halt_below": 0.40, "warn_below": 0.75, "mc_samples": 2000,
            "anchors": [ANCHOR_A, ANCHOR_B]}


def measurement(ident: str, shift: float, nshift: float) -> dict[str, Any]:
    """Both anchors moved by ``shift`` (normalized: ``nshift``) from the baseline m0.

    With the same uncertainties at both endpoints the weights w_i are the same, so
    A(new) − A(old) = Σ w_i shift / Σ w_i = shift exactly; likewise ΔA_nelo = nshift.
    """
    return {"id": ident, "version": f"main-{ident}", "anchors": [
        {**ANCHOR_A, "delta": -60.0 + shift, "uncertainty": H_A, "ndelta": -80.0 + nshift},
        {**ANCHOR_B, "delta": 30.0 + shift, "uncertainty": H_B, "ndelta": 45.0 + nshift},
    ]}


def _write(root: Any, name: str, doc: Any) -> str:
    path = root / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return str(path)


def _cli(env: Any, *args: str, code: int = 0) -> Any:
    result = env.cli(*args)
    assert result.exit_code == code, (args, result.output, result.stderr)
    return result


def _register_window_one(env: Any, oracle: Oracle) -> None:
    """seq 0..5 through ``Register.record``: the receipts plugin's Python API."""
    register = receipts.Register(env.deployment)
    register.register_key(oracle.vkey, "oracle")
    batch = [
        # seq 0: passes both stages; long 25.31 (hw 16.17, nelo 32.28), short 58.45
        oracle.gain_test("c1", 0, stage("short", 30, 40, 50), stage("long", 300, 420, 380)),
        # seq 1: a special path claims nothing
        oracle.sign("special_path", candidate=artifact("c2"), path="speed",
                    reason="faster search, same strength"),
        # seq 2: short passes, long fails (9.65 - 27.47 <= 0): counts zero
        oracle.gain_test("c3", 0, stage("short", 40, 60, 80), stage("long", 100, 150, 110)),
        # seq 3: the oracle changes epoch: counts zero
        oracle.sign("epoch_change", oracle=ORACLE, epoch=1, reason="new opening book"),
        # seq 4: passes both stages; long 44.09 (hw 15.24, nelo 62.10), short 63.88
        oracle.gain_test("c4", 1, stage("short", 20, 50, 40), stage("long", 200, 500, 330)),
        # seq 5: a reversion of seq 4 subtracts nothing
        oracle.sign("reversion", reverts=4, reason="crash on one platform"),
    ]
    register.record(batch)


def _register_window_two(env: Any, oracle: Oracle) -> None:
    """seq 6..7 through ``cladelog receipts add`` (JSONL): the receipts plugin's CLI."""
    batch = [
        # seq 6: passes both stages; long 25.31 (hw 14.92, nelo 34.97), short 78.52
        oracle.gain_test("c5", 1, stage("short", 40, 60, 80), stage("long", 250, 520, 330)),
        # seq 7: the short stage fails (14.48 - 49.50 <= 0), the long passes: counts zero
        oracle.gain_test("c6", 1, stage("short", 35, 45, 40), stage("long", 300, 420, 380)),
    ]
    path = _write(env.root, "window-two.jsonl", "\n".join(json.dumps(e) for e in batch) + "\n")
    _cli(env, "receipts", "add", path)


def test_the_independent_claims_are_what_the_comments_say() -> None:
    long0 = stage("long", 300, 420, 380)
    assert (long0["elo"], long0["half_width"], long0["nelo"], long0["pass"]) == (
        25.31, 16.17, 32.28, True)
    long2 = stage("long", 100, 150, 110)
    assert (long2["elo"], long2["half_width"], long2["pass"]) == (9.65, 27.47, False)
    assert stage("short", 35, 45, 40)["pass"] is False


def test_law_v_over_a_real_receipts_register(cladelog_env: Any) -> None:
    env = cladelog_env
    oracle = Oracle()
    _register_window_one(env, oracle)
    recorded = env.events(types=["receipts.entry_recorded"])
    assert [e.data["seq"] for e in recorded] == [0, 1, 2, 3, 4, 5]
    assert all(e.data["flags"] == [] for e in recorded)  # real, unflagged receipts

    _cli(env, "lawv", "contract", "add", _write(env.root, "contract-v7.json", CONTRACT))
    m0 = _write(env.root, "m0.json", measurement("m0", 0.0, 0.0))
    m1 = _write(env.root, "m1.json", measurement("m1", 20.0, 30.0))
    halted = _cli(env, "lawv", "check", "--old", m0, "--new", m1, "--json", code=1)
    check = json.loads(halted.output)
    result = check["result"]

    # The window is the whole register so far: seq 0..5, every entry read.
    assert (check["first_seq"], check["last_seq"]) == (0, 5)
    assert check["entry_seqs"] == [0, 1, 2, 3, 4, 5] and check["unreadable_seqs"] == []
    # Counted: seq 0 and seq 4 (seq 2 failed its long stage; 1, 3, 5 claim nothing).
    assert result["counted_seqs"] == [0, 4]
    # S = 25.31 + 44.09 = 69.40; S_short = 58.45 + 63.88 = 122.33; S_nelo = 32.28 + 62.10
    assert result["s"] == pytest.approx(69.40, abs=1e-9)
    assert result["s_short"] == pytest.approx(122.33, abs=1e-9)
    assert result["s_nelo"] == pytest.approx(94.38, abs=1e-9)
    # Both anchors moved by +20: ΔA = 20. σ = 1/√(1/(9.8² + 12²) + 1/(14² + 5²)) at both
    # endpoints, so u(ΔA) = √2 σ = √2 / √(1/240.04 + 1/221) ≈ 15.17.
    sigma = 1.0 / math.sqrt(1.0 / (H_A**2 + 12.0**2) + 1.0 / (H_B**2 + 5.0**2))
    assert result["delta_a"] == pytest.approx(20.0, abs=1e-9)
    assert result["delta_a_uncertainty"] == pytest.approx(math.sqrt(2.0) * sigma, rel=1e-12)
    # R = 20 / 69.40 = 0.2882 < 0.40: HALT; R_short = 20 / 122.33 = 0.1635 (recorded only);
    # R_nelo = 30 / 94.38 = 0.3179 (recorded only).
    assert result["r"] == pytest.approx(20.0 / 69.40, rel=1e-12)
    assert check["verdict"] == "HALT" and result["verdict_short"] == "HALT"
    assert result["r_nelo"] == pytest.approx(30.0 / 94.38, rel=1e-12)
    # Overfitting: S − ΔA = 49.40 exceeds √(u(ΔA)² + 16.17² + 15.24²) ≈ 26.90.
    band = math.sqrt(2.0 * sigma**2 + 16.17**2 + 15.24**2)
    assert result["overfitting_band"] == pytest.approx(band, rel=1e-12)
    assert result["overfitting_suspected"] is True
    assert set(result["flags"]) == {"overfitting_suspected", "reversion_in_window"}
    assert result["monte_carlo"]["samples"] == 2000

    # HALT blocks the gate until a human review says resume.
    assert "lawv" in _cli(env, "gate", "c5", code=1).output
    _cli(env, "lawv", "review", "--check", "check-1", "--decision", "keep-halted",
         "--reviewer", "ana", "--reason", "want the anchor games re-run")
    _cli(env, "gate", "c5", code=1)
    _cli(env, "lawv", "review", "--check", "check-1", "--decision", "resume",
         "--reviewer", "ana", "--reason", "re-run confirms the measurement")
    _cli(env, "gate", "c5")

    # The second window starts after seq 5; its entries come through the receipts CLI.
    _register_window_two(env, oracle)
    m2 = _write(env.root, "m2.json", measurement("m2", 35.0, 40.0))
    warned = json.loads(_cli(env, "lawv", "check", "--new", m2, "--json").output)
    assert (warned["first_seq"], warned["last_seq"]) == (6, 7)
    assert warned["old_measurement"] == "m1"  # the new measurement of check-1
    assert warned["result"]["counted_seqs"] == [6]
    # ΔA = 35 − 20 = 15, S = 25.31 (seq 7 failed its short stage): R = 0.5927, WARNING
    assert warned["result"]["r"] == pytest.approx(15.0 / 25.31, rel=1e-12)
    assert warned["verdict"] == "WARNING"
    gate = _cli(env, "gate", "c6")  # a WARNING is shown but does not block
    assert "warn" in gate.output and "WARNING" in gate.output

    # A replay from position 0 reaches the same state; explain re-derives both checks.
    live = env.state(STATE)
    result_replay = env.deployment.replay(rebuild=True, save=False)
    fresh = next(p.state for p in result_replay.projections if p.name == STATE)
    assert fresh == live
    assert fresh["halt"] == {"blocked": False, "open": [], "kept_halted": []}
    assert fresh["ignored"] == []
    for ident, recorded_check in (("check-1", check), ("check-2", warned)):
        explained = json.loads(_cli(env, "lawv", "explain", ident, "--json").output)
        # evaluated again from the recorded inputs: every number, the seeded band included
        assert explained["replay"] == {"identical": True}, explained
        assert explained["monte_carlo"] == recorded_check["result"]["monte_carlo"]
