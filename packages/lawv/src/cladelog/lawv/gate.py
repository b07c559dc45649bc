"""The lawv gate vote and the plugin's settings (pure: state in, vote out).

* An open HALT (a HALT check whose latest review is not ``resume``) blocks.
* So does a check with anomalies (its references or its recorded numbers
  disagree with the rules and its own re-derivation: a forged or inconsistent
  check event) until its latest review is ``resume``; the reason names it.
  Resumed, it still warns while it is the last check (it closed nothing).
* Otherwise the last check decides: WARNING warns; GAP and DEFECTIVE vote as
  the settings ``gap_vote`` / ``defective_vote`` say (``warn`` by default: the
  rule could not be evaluated, which a human should see, but nothing showed a
  halt); CONTINUE allows.
* No check yet: allow, saying so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import attrs

__all__ = ["VOTE_CHOICES", "LawVSettings", "decide"]

#: The votes a GAP or DEFECTIVE check may be mapped to.
VOTE_CHOICES = ("allow", "warn", "block")


@attrs.frozen
class LawVSettings:
    """``[settings.lawv]``: how the gate treats a last check without a verdict."""

    gap_vote: Literal["allow", "warn", "block"] = "warn"
    defective_vote: Literal["allow", "warn", "block"] = "warn"

    def __attrs_post_init__(self) -> None:
        for name in ("gap_vote", "defective_vote"):
            value = getattr(self, name)
            if value not in VOTE_CHOICES:
                raise ValueError(f"{name}: must be one of {', '.join(VOTE_CHOICES)}, "
                                 f"got {value!r}")


def _number(value: Any) -> str:
    from cladelog.core import human_number

    return "n/a" if value is None else human_number(float(value), 3)


def _first(check: Mapping[str, Any]) -> str:
    """The first anomaly of a check, plus how many more there are."""
    anomalies = check["anomalies"]
    more = f" (+{len(anomalies) - 1} more)" if len(anomalies) > 1 else ""
    return f"{anomalies[0]}{more}"


def decide(
    state: Mapping[str, Any], settings: LawVSettings | None = None
) -> tuple[Literal["allow", "warn", "block"], str]:
    """(decision, reason) of the lawv vote for the current ``lawv.state``."""
    settings = settings or LawVSettings()
    halt = state["halt"]
    checks = state["checks"]
    if halt["blocked"]:
        by_id = {c["check_id"]: c for c in checks}
        halts, anomalous = [], []
        for ident in halt["open"]:
            check = by_id[ident]
            result = check["result"]
            kept = " (review: keep-halted)" if ident in halt["kept_halted"] else " (no review)"
            if check.get("anomalies"):
                anomalous.append(f"{ident} ({check['verdict']} as recorded) {_first(check)}"
                                 f"{kept}")
            else:
                halts.append(f"{ident} R={_number(result.get('r'))} < "
                             f"{result.get('halt_below')}{kept}")
        sections = []
        if halts:
            sections.append("Law V HALT: " + "; ".join(halts))
        if anomalous:
            sections.append("Law V check(s) inconsistent with the log: " + "; ".join(anomalous))
        return ("block", "; ".join(sections)
                + "; no merge without human review (cladelog lawv review)")
    if not checks:
        return ("allow", "no Law V check recorded yet")
    last = checks[-1]
    result = last["result"]
    verdict = last["verdict"]
    ident = last["check_id"]
    if last.get("anomalies"):  # an inconsistent check whose latest review resumed
        return ("warn", f"Law V {ident} is inconsistent with the log (reviewed: resume); "
                        "it closed nothing, its window waits for the next check")
    if verdict == "WARNING":
        return ("warn", f"Law V WARNING at {ident}: R={_number(result.get('r'))} in "
                        f"[{result.get('halt_below')}, {result.get('warn_below')})")
    if verdict in ("GAP", "DEFECTIVE"):
        choice = settings.gap_vote if verdict == "GAP" else settings.defective_vote
        reasons = "; ".join(result.get("reasons") or []) or verdict.lower()
        return (choice, f"Law V {verdict} at {ident}: {reasons}")
    if verdict == "HALT":  # a reviewed halt whose latest review resumed
        return ("allow", f"Law V {ident} HALT was reviewed: resume")
    return ("allow", f"Law V CONTINUE at {ident}: R={_number(result.get('r'))}")
