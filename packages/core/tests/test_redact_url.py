"""A store URL is shown without its password (``status``, the demo's report)."""

from __future__ import annotations

import pytest
from cladelog.core.store import redact_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://alice:s3cret@db.example:5432/log", "postgresql://alice:***@db.example:5432/log"),
        ("postgres://alice:p%40ss:word@h/db", "postgres://alice:***@h/db"),
        ("postgresql://alice@h/db", "postgresql://alice@h/db"),
        ("postgresql://h/db?user=a&password=s3cret&sslmode=require",
         "postgresql://h/db?user=a&password=***&sslmode=require"),
        ("postgresql://h/db?sslmode=require", "postgresql://h/db?sslmode=require"),
        ("sqlite:///tmp/x:y@z.db", "sqlite:///tmp/x:y@z.db"),
        ("events.db", "events.db"),
    ],
)
def test_the_password_is_never_shown(url: str, shown: str) -> None:
    assert redact_url(url) == shown
    assert "s3cret" not in redact_url(url)


def test_status_hides_the_password(tmp_path, monkeypatch, pg_harness) -> None:
    """``status`` on a PostgreSQL store named with a password (the server trusts the
    connection, so the password is ignored): the URL is shown, the password is not."""
    from cladelog.core.cli import main
    from click.testing import CliRunner

    url = pg_harness.url().replace("postgresql://postgres@", "postgresql://postgres:s3cret@")
    assert "s3cret" in url
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    made = runner.invoke(main, ["init", "--store", url])
    assert made.exit_code == 0, made.output
    for args in (["status"], ["status", "--json"]):
        got = runner.invoke(main, args)
        assert got.exit_code == 0, got.output
        assert "s3cret" not in got.output
        assert "postgres:***@" in got.output
