"""Configuration errors in one form for every plugin: did-you-mean, the value given, the prefix.

Every plugin's ``[settings.<plugin>]`` table is read by core's ``structure_settings``; this
checks, through the ``cladelog`` command line, that each installed plugin with settings
gets the same treatment: a misspelt key names the right one, a wrong type shows the value,
and every message starts ``<file>: [settings.<plugin>] <key>: ``. Nothing is created.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
from cladelog.core.cli import main
from cladelog.core.plugins import installed_plugins
from click.testing import CliRunner

#: plugin -> the plugins it needs enabled with it
PLUGINS = {
    "fork-score": [],
    "receipts": [],
    "lawv": ["receipts"],
    "graph-engine": [],
    "consensus": ["fork-score"],
}


def run(tmp_path: Path, plugin: str, table: str) -> tuple[int, str, Path]:
    config = tmp_path / "cladelog.toml"
    names = ", ".join(f'"{p}"' for p in [plugin, *PLUGINS[plugin]])
    config.write_text(
        f'store = "log.sqlite3"\nplugins = [{names}]\n\n[settings.{plugin}]\n{table}\n',
        encoding="utf-8",
    )
    result = CliRunner().invoke(main, ["--config", str(config), "replay"])
    return result.exit_code, result.stderr, config


def settings_fields(plugin: str) -> list[attrs.Attribute]:  # type: ignore[type-arg]
    info = installed_plugins()[plugin].load().PLUGIN
    return list(attrs.fields(info.settings))


def misspelt(name: str) -> str:
    """``name`` with its last two letters swapped (``signal_floor`` -> ``signal_flori``)."""
    return name[:-2] + name[-1] + name[-2]


@pytest.mark.parametrize("plugin", sorted(PLUGINS))
def test_a_misspelt_setting_names_the_one_meant(tmp_path: Path, plugin: str) -> None:
    for field in settings_fields(plugin):
        wrong = misspelt(field.name)
        code, err, config = run(tmp_path, plugin, f"{wrong} = 1")
        assert code == 2
        assert err == (
            f"error: {config}: [settings.{plugin}] {wrong}: unknown setting "
            f"(did you mean '{field.name}'?)\n"
        )
        assert not (tmp_path / "log.sqlite3").exists()


@pytest.mark.parametrize("plugin", sorted(PLUGINS))
def test_a_wrong_type_shows_the_value_given(tmp_path: Path, plugin: str) -> None:
    for field in settings_fields(plugin):
        # a string where a number or boolean belongs, a boolean where a string belongs
        value, shown = (
            ("true", "boolean true")
            if "str" in str(field.type) or "Literal" in str(field.type)
            else ('"lots"', "string 'lots'")
        )
        code, err, config = run(tmp_path, plugin, f"{field.name} = {value}")
        assert code == 2, err
        assert err.startswith(f"error: {config}: [settings.{plugin}] {field.name}: must be ")
        assert err.endswith(f", got {shown}\n")


def test_the_signal_flor_of_the_issue(tmp_path: Path) -> None:
    code, err, config = run(tmp_path, "fork-score", "signal_flor = 0.1")
    assert (code, err) == (
        2,
        f"error: {config}: [settings.fork-score] signal_flor: unknown "
        "setting (did you mean 'signal_floor'?)\n",
    )


def test_a_range_error_of_a_plugin_takes_the_same_form(tmp_path: Path) -> None:
    code, err, config = run(tmp_path, "graph-engine", "flush_every = -1")
    assert (code, err) == (
        2,
        f"error: {config}: [settings.graph-engine] flush_every: must be an integer >= 0, got -1\n",
    )
    code, err, config = run(tmp_path, "receipts", 'on_mismatch = "recrod"')
    assert (code, err) == (
        2,
        f"error: {config}: [settings.receipts] on_mismatch: must be one "
        "of 'refuse', 'record', got string 'recrod' (did you mean "
        "'record'?)\n",
    )


def test_top_level_keys_and_tables_get_did_you_mean(tmp_path: Path) -> None:
    config = tmp_path / "cladelog.toml"
    config.write_text('store = "log.sqlite3"\nplugin = ["fork-score"]\n', encoding="utf-8")
    result = CliRunner().invoke(main, ["--config", str(config), "replay"])
    assert result.stderr == (f"error: {config}: plugin: unknown key (did you mean 'plugins'?)\n")
    config.write_text(
        'store = "log.sqlite3"\nplugins = ["fork-score"]\n'
        "[settings.fork-scor]\nsignal_floor = 0.1\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(main, ["--config", str(config), "replay"])
    assert result.stderr == (
        f"error: {config}: [settings.fork-scor]: plugin 'fork-scor' is "
        "not enabled (did you mean 'fork-score'?)\n"
    )
