"""Pure rules over the ``lawv.state`` projection: which contract governs, which window, who halts.

The projection (``projections.py``) and the commands (``commands.py``) share
these functions, so what a command records and what a replay accepts follow
one set of rules. Everything here reads a state dict and returns values; no I/O.

The rules (documented in the README):

* **Closing a window.** A check *closes* its window when its verdict is
  CONTINUE, WARNING or HALT (and its inputs are consistent). GAP and DEFECTIVE
  checks close nothing: their register entries stay in the next check's window
  and their old measurement stays the next check's old, so no claimed gain ever
  drops out of S.
* **The window.** It starts after the last seq of the last closing check (for
  the first window, at the first entry of the register) and ends at the
  register head, or at ``to_seq``.
* **When a window opens.** At the log position of the last closing check; the
  first window (no closing check yet) opens at the log position of the first
  register entry Law V read. While the register is empty the first window has
  not opened (recorded as ``window_opened_at`` 0).
* **The governing contract.** The newest version registered before the window
  opened. When none existed then (the register started before the first
  contract), the *first* version registered afterwards: every later one was
  registered while the window was open and applies from the next check on.
  While the window has not opened, the newest version registered before the check.
* **The old measurement** of a check is the new measurement of the last
  closing check (none for the first: then it must be given, or the check is a GAP).
* **Re-derivation.** A recorded check must re-derive from its recorded inputs:
  :func:`result_differences` compares its recorded result with
  :func:`reevaluate`'s (strings, integers and lists exactly, floats to
  :data:`REDERIVE_REL_TOL`). A check that does not is anomalous.
* **Halt.** Every HALT check, and every check with anomalies (its numbers or
  references disagree with the rules), blocks until its latest review says ``resume``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import attrs
from cladelog.lawv._fields import MAX_COUNT, fail
from cladelog.lawv.traffic import CONTINUE, HALT, WARNING

__all__ = [
    "LIGHTS",
    "REDERIVE_ABS_TOL",
    "REDERIVE_REL_TOL",
    "WindowSelection",
    "check_inputs",
    "closes_window",
    "expected_old",
    "find_check",
    "governing_contract",
    "halt_status",
    "initial_state",
    "reevaluate",
    "result_differences",
    "reviewable",
    "select_window",
    "window_opened_at",
    "window_start",
]

#: The verdicts that close a window (a real R was reached).
LIGHTS = (CONTINUE, WARNING, HALT)


def initial_state() -> dict[str, Any]:
    """The empty ``lawv.state``."""
    return {
        "contracts": {},
        "latest_contract": None,
        "measurements": {},
        "register": {"entries": {}, "first": None, "head": None, "events": 0,
                     "first_position": None},
        "checks": [],
        "closed": {"check_id": None, "position": 0, "last_seq": None, "new_measurement": None},
        "reviews": [],
        "halt": {"blocked": False, "open": [], "kept_halted": []},
        "ignored": [],
    }


def closes_window(check: Mapping[str, Any]) -> bool:
    """True when ``check`` reached a verdict from consistent inputs (it closes its window)."""
    return check.get("verdict") in LIGHTS and not check.get("anomalies")


def window_opened_at(state: Mapping[str, Any], *, empty: bool = False) -> int:
    """The log position at which the next check's window opened; 0 while it has not.

    After a closing check: that check's position. The first window opens at the
    log position of the first register entry; while the register is empty (or
    ``empty``: the check's window holds no entry) it has not opened and the
    result is 0 (positions start at 1).
    """
    closed = int(state["closed"]["position"])
    if closed:
        return closed
    first = state["register"].get("first_position")
    if first is None or empty:
        return 0
    return int(first)


def governing_contract(state: Mapping[str, Any], opened_at: int | None = None) -> int | None:
    """The contract version that governs a check whose window opened at ``opened_at``.

    The newest version registered at a position before ``opened_at``. When no
    version existed then, the first version registered after it (any later
    version was registered while the window was open and applies from the next
    check on). ``opened_at`` 0 means the window has not opened: the newest
    version registered (before the check) governs. None when no contract is
    registered. ``opened_at`` defaults to the next check's.
    """
    if opened_at is None:
        opened_at = window_opened_at(state)
    contracts = list(state["contracts"].values())
    if not contracts:
        return None
    if opened_at == 0:
        return int(max(c["version"] for c in contracts))
    before = [c["version"] for c in contracts if c["position"] < opened_at]
    if before:
        return int(max(before))
    return int(min(contracts, key=lambda c: c["position"])["version"])


def expected_old(state: Mapping[str, Any]) -> str | None:
    """The old measurement of the next check: the new one of the last closing check."""
    old = state["closed"]["new_measurement"]
    return None if old is None else str(old)


def window_start(state: Mapping[str, Any]) -> int | None:
    """The first seq of the next window (None while the register is empty)."""
    last = state["closed"]["last_seq"]
    if last is not None:
        return int(last) + 1
    first = state["register"]["first"]
    return None if first is None else int(first)


@attrs.frozen
class WindowSelection:
    """The register window of a check.

    ``first_seq``/``last_seq`` are None for an empty window. ``entries`` are the
    readable entries in seq order (Law V's reduced form) and ``entry_seqs`` their
    seqs; ``unreadable`` maps each unreadable seq in the window to the reason.
    """

    first_seq: int | None
    last_seq: int | None
    entries: tuple[dict[str, Any], ...]
    entry_seqs: tuple[int, ...]
    unreadable: tuple[tuple[int, str], ...]

    @property
    def window(self) -> tuple[int, int] | None:
        """(first_seq, last_seq), or None for an empty window."""
        if self.first_seq is None or self.last_seq is None:
            return None
        return (self.first_seq, self.last_seq)


def _entries_between(
    register: Mapping[str, Any], first: int, last: int
) -> tuple[list[dict[str, Any]], list[int], list[tuple[int, str]]]:
    entries: list[dict[str, Any]] = []
    seqs: list[int] = []
    unreadable: list[tuple[int, str]] = []
    present = sorted(int(key) for key in register["entries"])
    for seq in present:
        if seq < first or seq > last:
            continue
        for variant in register["entries"][str(seq)]:
            if "unreadable" in variant:
                unreadable.append((seq, str(variant["unreadable"])))
            else:
                entries.append(variant)
                seqs.append(seq)
    return entries, seqs, unreadable


def select_window(
    state: Mapping[str, Any], to_seq: int | None = None, *, path: str = "--to-seq"
) -> WindowSelection:
    """The window of the next check: from :func:`window_start` to the head or ``to_seq``.

    Raises :class:`~cladelog.lawv.errors.LawVInputError` (naming ``path``) when
    ``to_seq`` lies beyond the register head or before the window's start.
    """
    start = window_start(state)
    head = state["register"]["head"]
    if to_seq is not None:
        if type(to_seq) is not int or not 0 <= to_seq <= MAX_COUNT:
            raise fail(path, "must be an integer seq >= 0", to_seq)
        if head is None or to_seq > head:
            raise fail(path, f"seq {to_seq} lies beyond the register head ({head})")
        if start is not None and to_seq < start - 1:
            raise fail(path, f"seq {to_seq} is already covered (the window starts at {start})")
    end = head if to_seq is None else to_seq
    if start is None or end is None or end < start:
        return WindowSelection(None, None, (), (), ())
    entries, seqs, unreadable = _entries_between(state["register"], start, int(end))
    return WindowSelection(start, int(end), tuple(entries), tuple(seqs), tuple(unreadable))


def find_check(state: Mapping[str, Any], ref: str) -> dict[str, Any] | None:
    """The recorded check called ``ref`` (``check-3`` or just ``3``), or None."""
    wanted = ref.strip()
    if wanted.isdigit():
        wanted = f"check-{int(wanted)}"
    for check in state["checks"]:
        if check["check_id"] == wanted:
            return dict(check)
    return None


def check_inputs(
    state: Mapping[str, Any], check: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any] | None, dict[str, Any] | None, list[dict[str, Any]],
           tuple[int, int] | None]:
    """The inputs a recorded check referenced, looked up in ``state``.

    Returns (contract, old, new, entries, window) as ``evaluate`` takes them.
    Raises :class:`~cladelog.lawv.errors.LawVInputError` when a reference is unknown.
    """
    contract = state["contracts"].get(str(check["contract_version"]))
    if contract is None:
        raise fail("contract_version", "is not a registered contract", check["contract_version"])

    def measurement(key: str) -> dict[str, Any] | None:
        ident = check[key]
        if ident is None:
            return None
        found = state["measurements"].get(ident)
        if found is None:
            raise fail(key, "is not a recorded measurement", ident)
        return dict(found["document"])

    used: dict[int, int] = {}
    entries: list[dict[str, Any]] = []
    for seq in check["entry_seqs"]:
        variants = [v for v in state["register"]["entries"].get(str(seq), [])
                    if "unreadable" not in v]
        index = used.get(seq, 0)
        if index >= len(variants):
            raise fail("entry_seqs", "names a register entry that is not recorded", seq)
        used[seq] = index + 1
        entries.append(variants[index])
    window = None
    if check["first_seq"] is not None and check["last_seq"] is not None:
        window = (int(check["first_seq"]), int(check["last_seq"]))
    return (dict(contract["document"]), measurement("old_measurement"),
            measurement("new_measurement"), entries, window)


def reevaluate(state: Mapping[str, Any], check: Mapping[str, Any]) -> Any:
    """Run ``evaluate`` again on a recorded check's inputs; returns a ``CheckResult``."""
    from cladelog.lawv.evaluate import evaluate

    contract, old, new, entries, window = check_inputs(state, check)
    return evaluate(contract, old, new, entries, window=window)


#: Relative tolerance for floats when a recorded result is compared with its
#: re-derivation (the arithmetic is deterministic; this only absorbs last-bit
#: differences between C math libraries, far below every reported digit).
REDERIVE_REL_TOL = 1e-9
#: Absolute tolerance for floats near zero in the same comparison.
REDERIVE_ABS_TOL = 1e-12


def _same(recorded: Any, again: Any) -> bool:
    if isinstance(recorded, bool) or isinstance(again, bool):
        return type(recorded) is type(again) and recorded == again
    if isinstance(recorded, int | float) and isinstance(again, int | float):
        if isinstance(recorded, int) and isinstance(again, int):
            return recorded == again
        return math.isclose(recorded, again, rel_tol=REDERIVE_REL_TOL,
                            abs_tol=REDERIVE_ABS_TOL)
    if isinstance(recorded, Mapping) and isinstance(again, Mapping):
        return recorded.keys() == again.keys() and all(
            _same(recorded[key], again[key]) for key in recorded)
    if isinstance(recorded, list | tuple) and isinstance(again, list | tuple):
        return len(recorded) == len(again) and all(
            _same(a, b) for a, b in zip(recorded, again, strict=True))
    return bool(recorded == again)


def result_differences(recorded: Mapping[str, Any], again: Mapping[str, Any]) -> list[str]:
    """The fields in which a recorded ``result`` differs from its re-derivation ``again``.

    Both are ``CheckResult.to_dict()`` forms. Strings, booleans, integers and
    the structure compare exactly; floats to :data:`REDERIVE_REL_TOL` (relative)
    or :data:`REDERIVE_ABS_TOL` (absolute). A field present on one side only differs.
    """
    missing = object()
    return sorted(key for key in set(recorded) | set(again)
                  if not _same(recorded.get(key, missing), again.get(key, missing)))


def reviewable(check: Mapping[str, Any]) -> bool:
    """True when a human review applies to ``check``: it is a HALT or it has anomalies."""
    return check.get("verdict") == HALT or bool(check.get("anomalies"))


def halt_status(state: Mapping[str, Any]) -> dict[str, Any]:
    """Which checks still block: the reviewable ones whose latest review is not ``resume``.

    Reviewable: HALT checks and checks with anomalies (see :func:`reviewable`).
    Returns ``{"blocked", "open": [check ids], "kept_halted": [check ids]}``.
    """
    latest: dict[str, str] = {}
    for review in state["reviews"]:
        latest[review["check_id"]] = review["decision"]
    open_ids = [c["check_id"] for c in state["checks"]
                if reviewable(c) and latest.get(c["check_id"]) != "resume"]
    kept = [ident for ident in open_ids if latest.get(ident) == "keep-halted"]
    return {"blocked": bool(open_ids), "open": open_ids, "kept_halted": kept}
