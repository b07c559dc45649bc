"""Test helpers: deterministic keys and entry builders whose claims come from receipts_stats."""

from __future__ import annotations

from typing import Any

import receipts_stats as ind
from cladelog.receipts import entry_hash, generate_key, make_receipt, parse_signer_key
from cladelog.receipts.entries import GENESIS_PREV

ORACLE_SEED = bytes(range(32))
LOG_SEED = bytes(range(32, 64))
OTHER_SEED = bytes(range(64, 96))


class Keys:
    """Three deterministic key pairs: the oracle, the log, and an unregistered one."""

    def __init__(self) -> None:
        self.oracle_skey, self.oracle_vkey = generate_key("oracle.example", ORACLE_SEED)
        self.log_skey, self.log_vkey = generate_key("log.example", LOG_SEED)
        self.other_skey, self.other_vkey = generate_key("rogue.example", OTHER_SEED)
        self.oracle = parse_signer_key(self.oracle_skey)
        self.log = parse_signer_key(self.log_skey)
        self.other = parse_signer_key(self.other_skey)


def stage(name: str, counts: tuple[int, int, int], *, sprt: bool = False,
          **override: Any) -> dict[str, Any]:
    """A stage whose claims are computed with the independent formulas of ``independent``."""
    elo, half = ind.logistic(counts)
    doc: dict[str, Any] = {
        "name": name,
        "results": {"losses": counts[0], "draws": counts[1], "wins": counts[2]},
        "elo": round(elo, 4), "half_width": round(half, 4),
    }
    if sprt:
        llr = ind.llr(counts, 0.0, 5.0)
        doc["criterion"] = {"type": "sprt", "elo0": 0, "elo1": 5, "alpha": 0.05, "beta": 0.05,
                            "model": "logistic", "llr": round(llr, 4)}
        doc["pass"] = llr >= ind.sprt_upper(0.05, 0.05)
    else:
        doc["criterion"] = {"type": "fixed", "threshold": 0}
        doc["pass"] = elo - half > 0
    doc.update(override)
    return doc


def gain_test(seq: int, prev: str, *, short: tuple[int, int, int] = (10, 20, 30),
              long: tuple[int, int, int] = (100, 200, 300), epoch: int = 0,
              version: str | None = None, **override: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "seq": seq, "prev": prev, "kind": "gain_test",
        "candidate": {"name": "engine", "version": version or f"1.{seq}",
                      "digest": f"sha256:{seq:064x}"},
        "baseline": {"name": "engine", "version": "1.0", "digest": "sha256:" + "a" * 64},
        "oracle": {"name": "arena", "version": "3"}, "epoch": epoch,
        "stages": [stage("short", short), stage("long", long)],
    }
    doc.update(override)
    return doc


class Chain:
    """Builds a chain of signed receipts (seq, prev) the way an oracle would."""

    def __init__(self, keys: Keys) -> None:
        self.keys = keys
        self.prev = GENESIS_PREV
        self.seq = 0

    def next(self, doc: dict[str, Any] | None = None, signer: Any = None,
             **kw: Any) -> dict[str, Any]:
        entry = doc if doc is not None else gain_test(self.seq, self.prev, **kw)
        env = make_receipt(entry, signer or self.keys.oracle)
        self.prev = entry_hash(entry)
        self.seq += 1
        return env

    def entry(self, kind: str, **fields: Any) -> dict[str, Any]:
        return {"seq": self.seq, "prev": self.prev, "kind": kind, **fields}




def register_events(env: Any) -> list[Any]:
    """The events of the register stream."""
    return list(env.events(stream="receipts.register"))
