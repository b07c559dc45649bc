"""The graph-engine step: answer a prompt with the decompose-and-synthesize loop, recorded.

The prompt asks whether the engine's latest candidate should be promoted. A
recorded graph session (``cladelog.graph_engine.Session``) runs the
authoring loop (``make_decompose_providers`` with ``loop_concept_tree``, then
``synthesize``) with deterministic content functions: the decomposition is a
fixed table, and every leaf answer is read from the deployment's replayed
projection states, so the same log gives the same session events. Replaying
the session (``replay_session``) rebuilds every answer with no content call.

When the graph-engine's session or authoring API is not installed, the step
is skipped and says so (the demo still runs).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["PROMPT", "SESSION_ID", "answers_from_states", "decomposition", "run_graph_session"]

SESSION_ID: Final = "demo-promotion-question"
PROMPT: Final = "Should lumen promote its latest candidate?"

_PLAN: Final[dict[str, list[str]]] = {
    PROMPT: ["Is the claimed progress real?", "Does the best branch improve the batteries?",
             "Is the register sound?"],
    "Is the claimed progress real?": ["What did the oracle claim?", "What reached the anchors?",
                                      "What does Law V say?"],
}


def decomposition() -> dict[str, list[str]]:
    """The fixed decomposition: a segment label -> its ordered sub-questions."""
    return {k: list(v) for k, v in _PLAN.items()}


def answers_from_states(states: Mapping[str, Any]) -> dict[str, str]:
    """The leaf answers, read from projection states (pure)."""
    lawv = states.get("lawv.state") or {}
    checks = lawv.get("checks") or []
    last = checks[-1] if checks else None
    result = (last or {}).get("result") or {}
    out: dict[str, str] = {}
    if last is None:
        out |= {"What did the oracle claim?": "no Law V window closed yet",
                "What reached the anchors?": "no anchor measurement compared yet",
                "What does Law V say?": "no check recorded"}
    else:
        s, delta = result.get("s"), result.get("delta_a")
        out["What did the oracle claim?"] = (
            f"S = {s:.2f} Elo over seqs {last.get('first_seq')}..{last.get('last_seq')}"
            if isinstance(s, int | float) else "nothing counted")
        out["What reached the anchors?"] = (
            f"dA = {delta:.2f} Elo ({last.get('old_measurement')} -> "
            f"{last.get('new_measurement')})" if isinstance(delta, int | float) else "unknown")
        r = result.get("r")
        shown = f"R = {r:.2f}" if isinstance(r, int | float) else "no R"
        out["What does Law V say?"] = f"{last['check_id']}: {shown}, {last['verdict']}"
    sets = (states.get("fork_score.branch_sets") or {}).get("sets") or {}
    rows = [row for branches in sets.values() for row in branches.values()]
    if rows:
        latest = max(rows, key=lambda r: r["position"])["branch_set_id"]
        best = max(sets[latest].values(), key=lambda r: (r["score"], r["branch_id"]))
        out["Does the best branch improve the batteries?"] = (
            f"{best['branch_id']} of {latest}: ForkScore {best['score']:+.3f}, {best['verdict']}")
    else:
        out["Does the best branch improve the batteries?"] = "no branch set recorded"
    register = states.get("receipts.register") or {}
    flagged = [e for e in (register.get("entries") or {}).values() if e.get("flags")]
    out["Is the register sound?"] = (
        f"{register.get('size', 0)} signed entries, {len(flagged)} flagged, "
        f"{len(register.get('checkpoints') or [])} checkpoints")
    return out


def _rollup(segment: Any, answers: list[Any]) -> str:
    parts = "; ".join("" if a is None else str(a) for a in answers)
    return f"{segment.label} -> {parts}"


def run_graph_session(deployment: Any) -> tuple[str | None, str]:
    """Run the recorded session; return ``(session id, the root answer)``.

    Returns ``(None, reason)`` when the graph-engine session API is unavailable.
    """
    try:
        from cladelog.graph_engine import Session
        from cladelog.graph_engine.authoring import (
            loop_concept_tree,
            make_decompose_providers,
            synthesize,
        )
    except ImportError as exc:  # the graph-engine package without sessions/authoring
        return None, f"skipped: graph-engine sessions API not available ({exc})"
    plan = decomposition()
    leaves = answers_from_states(deployment.states())

    def eval_fn(segment: Any) -> bool:
        return segment.label not in plan

    def expand_fn(segment: Any) -> list[str]:
        return plan.get(segment.label, [])

    def answer_fn(segment: Any) -> str:
        return leaves.get(segment.label, "(no data)")

    providers = make_decompose_providers(eval_fn, expand_fn, answer_fn, max_depth=3,
                                         max_branch=4)
    graph_seed = {
        "nodes": [{"_id": "question", "label": "question"},
                  {"_id": "decision", "label": "decision"}],
        "segments": [{"_id": "root", "originNode": "question", "targetNode": "decision",
                      "depth": 0, "label": PROMPT}],
    }
    session = Session(deployment, SESSION_ID, loop_concept_tree(), providers=providers,
                      seed=graph_seed)
    session.settle()
    answer = synthesize(session.engine, "root", _rollup)
    session.flush()
    return SESSION_ID, str(answer)
