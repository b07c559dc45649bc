"""fork-score's side of the consensus plugin's hooks: terms given as plain mappings (so a
plugin can fill a term without importing fork-score), the zeta fill, and the optional
``consensus_audit`` implementation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cladelog.core import ConfigError
from cladelog.fork_score import ScoringTerm, ScoringTermError, collect_terms, score
from cladelog.fork_score.audit import audit
from cladelog.fork_score.service import ScoringContext, score_in_context
from fork_score_docs import make_doc
from fork_score_plugin_helpers import all_5s
from test_plugin_hookspec import TermPlugin, make_env

PARENT = make_doc(0.5)
CHILD = make_doc(0.5, all_5s(0.75))  # delta_5S = 0.25


def test_a_mapping_term_is_built_and_can_fill_zeta(tmp_path: Path) -> None:
    term = {"name": "consensus_zeta", "weight_name": "zeta", "default_weight": 0.0,
            "sign": 1, "fn": lambda parent, child, inputs: 0.5}
    env = make_env(tmp_path, [TermPlugin("zeta", [term])])
    try:
        (built,) = collect_terms(env.deployment.pm)
        assert isinstance(built, ScoringTerm) and built.fills == "zeta"
        result = score_in_context(ScoringContext(terms=(built,)), PARENT, CHILD,
                                  {"zeta": 0.2})
        # zeta x 0.5 under the built-in key, no extra key
        assert result.breakdown["zeta_x_validator_diversity"] == pytest.approx(0.1)
        assert result.term_values["validator_diversity"] == 0.5
        assert "consensus_zeta" not in result.term_values
    finally:
        env.close()


def test_a_zeta_filling_term_is_a_reward() -> None:
    with pytest.raises(ScoringTermError, match="filling zeta is a reward; sign must be"):
        ScoringTerm("z", "zeta", 0.0, -1, lambda p, c, i: 0.0)


def test_a_mapping_with_other_fields_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"fork_score_terms\[0\]: must be a ScoringTerm"):
        make_env(tmp_path, [TermPlugin("bad", [{"name": "x", "fn": print}])])


def test_audit_is_the_plain_forkscore_of_the_inputs() -> None:
    doc: dict[str, Any] = {"parent": PARENT, "child": CHILD, "weights": None, "scalars": {}}
    expected = score(PARENT, CHILD)
    assert audit(doc) == {"verdict": str(expected.verdict), "hard_flags": expected.flags,
                          "score": expected.score}
    worse = make_doc(0.5, all_5s(0.1))  # a hard regression
    result = audit({**doc, "child": worse})
    assert result["verdict"] == "REJECT" and result["hard_flags"]
    with pytest.raises(ValueError, match="audit inputs"):
        audit({"parent": PARENT})
    # the floors are not inputs: a scalar named like a score() parameter is refused
    for name in ("signal_floor", "hard_regression_floor", "extra_terms", "weights"):
        with pytest.raises(ValueError, match="unknown scalar"):
            audit({**doc, "scalars": {name: 0.0}})


def test_audit_hook_is_optional(tmp_path: Path) -> None:
    # without consensus (no spec), fork-score still registers: the implementation is optional
    env = make_env(tmp_path, [])
    try:
        assert env.deployment.pm.hook.consensus_audit.spec is None
    finally:
        env.close()
