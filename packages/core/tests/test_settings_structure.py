"""core.config.structure_settings: the one reader of every plugin's settings table."""

from __future__ import annotations

from typing import Any, Literal

import attrs
import pytest
from cladelog.core import ConfigError
from cladelog.core.config import setting_error, structure_settings
from cladelog.core.fields import did_you_mean


def _positive(_: Any, attribute: Any, value: float) -> None:
    if value <= 0:
        raise ValueError(f"{attribute.name}: must be > 0, got {value!r}")  # name said twice


@attrs.frozen
class Knobs:
    rate: float = attrs.field(default=1.0, validator=_positive)
    count: int = 3
    mode: Literal["fast", "slow"] = "fast"
    tags: tuple[str, ...] = ()
    path: str | None = None
    on: bool = False

    def __attrs_post_init__(self) -> None:
        if self.count > 10 and self.mode == "slow":
            raise ValueError("count: at most 10 in slow mode")
        if self.on and not self.tags:
            raise ValueError("on needs tags")


def structured(table: dict[str, Any]) -> Any:
    return structure_settings(Knobs, table, "knobs", source="dep/cladelog.toml")


def refused(table: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        structured(table)
    return str(info.value)


def test_a_good_table_is_structured_and_converted() -> None:
    assert structured({"rate": 2, "tags": ["a", "b"], "mode": "slow", "path": "p"}) == Knobs(
        rate=2.0, tags=("a", "b"), mode="slow", path="p"
    )
    assert structured({}) == Knobs()


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"rat": 1.0}, "rat: unknown setting (did you mean 'rate'?)"),
        ({"zzzzzz": 1}, "zzzzzz: unknown setting (known: count, mode, on, path, rate, tags)"),
        ({"rate": "x"}, "rate: must be a finite number, got string 'x'"),
        ({"rate": True}, "rate: must be a finite number, got boolean true"),
        ({"count": 1.5}, "count: must be an integer, got 1.5"),
        (
            {"mode": "fats"},
            "mode: must be one of 'fast', 'slow', got string 'fats' (did you mean 'fast'?)",
        ),
        ({"mode": 1}, "mode: must be one of 'fast', 'slow', got 1"),
        ({"tags": "a"}, "tags: must be an array, got string 'a'"),
        ({"tags": ["a", 2]}, "tags: must be an array; each item must be a string, got list"),
        ({"path": 5}, "path: must be a string, got 5"),
        ({"on": "yes"}, "on: must be true or false, got string 'yes'"),
        ({"rate": 0.0}, "rate: must be > 0, got 0.0"),  # the validator's own "rate: " dropped
        ({"count": 11, "mode": "slow"}, "count: at most 10 in slow mode"),
    ],
)
def test_every_error_names_file_table_and_key(table: dict[str, Any], message: str) -> None:
    assert refused(table) == f"dep/cladelog.toml: [settings.knobs] {message}"


def test_a_check_across_fields_without_a_field_name_is_the_tables() -> None:
    assert refused({"on": True}) == "dep/cladelog.toml: [settings.knobs]: on needs tags"


def test_a_plugin_without_settings_takes_none() -> None:
    assert structure_settings(None, {}, "bare") is None
    with pytest.raises(
        ConfigError,
        match=r"^cladelog\.toml: \[settings\.bare\]: this plugin "
        r"takes no settings$",
    ):
        structure_settings(None, {"x": 1}, "bare")


def test_setting_error_and_did_you_mean() -> None:
    assert str(setting_error("p", "k", "bad")) == "cladelog.toml: [settings.p] k: bad"
    assert str(setting_error("p", None, "bad", source="x.toml")) == "x.toml: [settings.p]: bad"
    assert did_you_mean("lamda", ["lambda", "alpha"]) == "(did you mean 'lambda'?)"
    assert did_you_mean("q", ["b", "a"]) == "(known: a, b)"
    assert did_you_mean("q", []) == ""
