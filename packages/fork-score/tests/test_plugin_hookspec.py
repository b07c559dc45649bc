"""The fork_score_terms hook spec, settings checks, and scoring inside a deployment."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cladelog.core import ConfigError, PluginInfo, hookimpl
from cladelog.core.testing import CladelogEnv
from cladelog.fork_score import ScoringTerm, ScoringTermError, collect_terms, scoring_context
from cladelog.fork_score import hookspecs as fs_hookspecs
from cladelog.fork_score.service import ScoringContext, score_in_context
from fork_score_docs import make_doc
from fork_score_plugin_helpers import all_5s

PARENT = make_doc(0.5)
CHILD = make_doc(0.5, all_5s(0.75))  # delta_5S = 0.25


def constant(value: float) -> Any:
    return lambda parent, child, inputs: value


class TermPlugin:
    """A term plugin defined in the test (registered as a module-like object)."""

    def __init__(self, name: str, terms: Any, version: int | None = None) -> None:
        self.PLUGIN = PluginInfo(name=name, version="1", requires=("fork-score",))
        if version is not None:
            self.FORK_SCORE_HOOKSPEC_VERSION = version

        @hookimpl
        def fork_score_terms() -> Any:
            return terms() if callable(terms) else terms

        self.fork_score_terms = fork_score_terms


def make_env(tmp_path: Path, modules: list[Any], settings: Any = None) -> CladelogEnv:
    return CladelogEnv(tmp_path, ["fork-score"], modules, settings)


def test_hook_spec_is_versioned_and_documented() -> None:
    assert fs_hookspecs.HOOKSPEC_VERSION == 1
    assert "Sequence[ScoringTerm]" in str(fs_hookspecs.fork_score_terms.__annotations__)
    assert "fork_score_terms" in fs_hookspecs.__all__
    assert len(fs_hookspecs.fork_score_terms.__doc__ or "") > 100


def test_terms_reach_the_breakdown(tmp_path: Path) -> None:
    reward = ScoringTerm(name="novelty", weight_name="mu", default_weight=0.5, sign=1,
                         fn=constant(0.25))
    risk = ScoringTerm(name="cve_count", weight_name="iota", default_weight=0.125, sign=-1,
                       fn=constant(2.0))
    env = make_env(tmp_path, [TermPlugin("reward", [reward]), TermPlugin("risk", [risk])])
    try:
        context = scoring_context(env.deployment)
        assert [t.name for t in context.terms] == ["cve_count", "novelty"]
        result = score_in_context(context, PARENT, CHILD)
    finally:
        env.close()
    # novelty: +0.5 * 0.25 = 0.125; security risk (iota): -0.125 * 2 = -0.25
    assert result.breakdown["mu_x_novelty"] == 0.125
    assert result.breakdown["minus_iota_x_security_risk_penalty"] == -0.25
    # 0.25 (delta_5S) - 0.25 (iota) + 0.125 (mu) = 0.125
    assert result.score == 0.125


def test_weights_file_setting_overrides_a_term_weight(tmp_path: Path) -> None:
    (tmp_path / "w.json").write_text(json.dumps({"mu": 2.0, "alpha": 0.5}), encoding="utf-8")
    reward = ScoringTerm(name="novelty", weight_name="mu", default_weight=0.5, sign=1,
                         fn=constant(0.25))
    env = make_env(tmp_path, [TermPlugin("reward", [reward])],
                   {"fork-score": {"weights_file": "w.json", "signal_floor": 0.75}})
    try:
        result = score_in_context(scoring_context(env.deployment), PARENT, CHILD)
    finally:
        env.close()
    # alpha 0.5 * 0.25 = 0.125; mu 2.0 * 0.25 = 0.5; total 0.625 < signal floor 0.75
    assert result.breakdown["alpha_x_delta_5s"] == 0.125
    assert result.breakdown["mu_x_novelty"] == 0.5
    assert result.score == 0.625
    assert result.verdict == "MARGINAL"
    assert result.weights.get("mu") == 2.0


def test_duplicate_terms_refuse_the_configuration(tmp_path: Path) -> None:
    first = ScoringTerm(name="same", weight_name="mu", default_weight=1.0, sign=1,
                        fn=constant(0.0))
    second = ScoringTerm(name="same", weight_name="nu", default_weight=1.0, sign=1,
                         fn=constant(0.0))
    with pytest.raises(ConfigError, match=r"term same: registered twice"):
        make_env(tmp_path, [TermPlugin("one", [first]), TermPlugin("two", [second])])


@pytest.mark.parametrize(
    ("terms", "fragment"),
    [
        ("not terms", "plugin bad: fork_score_terms: must return a sequence of ScoringTerm"),
        ([42], "plugin bad: fork_score_terms[0]: must be a ScoringTerm, got int"),
        (lambda: 1 / 0, "plugin bad: fork_score_terms raised ZeroDivisionError"),
    ],
)
def test_a_bad_hook_result_names_the_plugin(tmp_path: Path, terms: Any, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        make_env(tmp_path, [TermPlugin("bad", terms)])
    assert fragment in str(info.value)


def test_a_plugin_built_for_another_hookspec_version_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"'old' was built for fork-score hook specs v0"):
        make_env(tmp_path, [TermPlugin("old", [], version=0)])


def test_a_term_that_fails_at_scoring_time_is_bad_input(tmp_path: Path) -> None:
    broken = ScoringTerm(name="broken", weight_name="mu", default_weight=1.0, sign=1,
                         fn=lambda p, c, i: float("nan"))
    env = make_env(tmp_path, [TermPlugin("broken", [broken])])
    try:
        with pytest.raises(ScoringTermError, match=r"^term broken: fn returned a non-finite"):
            score_in_context(scoring_context(env.deployment), PARENT, CHILD)
    finally:
        env.close()


def test_collect_terms_without_fork_score_is_empty() -> None:
    class NoHook:
        class hook:  # mimics pluggy's attribute namespace
            pass

    assert collect_terms(NoHook()) == ()


@pytest.mark.parametrize(
    ("settings", "fragment"),
    [
        ({"softmax_temperature": 0.0},
         "[settings.fork-score] softmax_temperature: must be finite and > 0, got 0.0"),
        ({"hard_regression_floor": 2.0},
         "[settings.fork-score] hard_regression_floor: must lie in (0, 1], got 2.0"),
        ({"signal_floor": -0.1},
         "[settings.fork-score] signal_floor: must be finite and >= 0, got -0.1"),
        ({"weights_file": "missing.json"}, "[settings.fork-score] weights_file: "),
        ({"weights_file": "missing.json"}, "missing.json: cannot read"),
        ({"softmax_temperature": "hot"},
         "[settings.fork-score] softmax_temperature: must be a finite number, got string 'hot'"),
        ({"colour": "red"}, "[settings.fork-score] colour: unknown setting (known: "),
        ({"signal_flor": 0.1},
         "[settings.fork-score] signal_flor: unknown setting (did you mean 'signal_floor'?)"),
        ({"gate_unscored": "blok"}, "[settings.fork-score] gate_unscored: must be one of "
                                    "'block', 'abstain', got string 'blok' (did you mean "
                                    "'block'?)"),
        ({"hard_flag_gating": "no"},
         "[settings.fork-score] hard_flag_gating: must be true or false, got string 'no'"),
    ],
)
def test_bad_settings_refuse_the_configuration(
    tmp_path: Path, settings: dict[str, Any], fragment: str
) -> None:
    with pytest.raises(ConfigError) as info:
        make_env(tmp_path, [], {"fork-score": settings})
    assert fragment in str(info.value)


def test_a_weights_file_with_an_unknown_weight_is_refused(tmp_path: Path) -> None:
    (tmp_path / "w.json").write_text(json.dumps({"lamda": 1.0}), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"weights\.lamda: unknown weight"):
        make_env(tmp_path, [], {"fork-score": {"weights_file": "w.json"}})


def test_hard_regression_floor_setting_reaches_the_scoring(tmp_path: Path) -> None:
    child = make_doc(0.5, {"5S.syntax": 0.4})  # a 10pp drop on one sub-battery
    plain = score_in_context(ScoringContext(), PARENT, child)
    assert plain.flags == ["REGRESSION_5S:syntax"]  # 0.10 >= default floor 0.05
    env = make_env(tmp_path, [], {"fork-score": {"hard_regression_floor": 0.2}})
    try:
        context = scoring_context(env.deployment)
        result = score_in_context(context, PARENT, child)
    finally:
        env.close()
    assert context.hard_regression_floor == 0.2
    # 0.10 < 0.2: no flag. delta_5S = -0.1 / 5 = -0.02; penalty eta 2 * 0.02 = 0.04;
    # score = -0.02 - 0.04 = -0.06 -> REJECT on the negative score alone
    assert result.flags == []
    assert result.score == pytest.approx(-0.06)
    assert result.verdict == "REJECT"
    assert result.thresholds["hard_regression_floor"] == 0.2
