"""`cladelog report` verifies the hash chain first: it makes no report of a tampered log.

Replay resumes from the projections' stored checkpoints, so without this check a
receipt edited in the database would be reported as if nothing had happened. The
report refuses: exit 1 (as ``cladelog verify``), one line naming the first
position that does not verify, no page written.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

Cli = Callable[..., Result]


def _tamper_a_receipt(store: Path) -> int:
    """Raise the long-stage Elo of the first passed gain test in place; return its position."""
    db = sqlite3.connect(store, isolation_level=None)
    try:
        rows = db.execute("SELECT position, data FROM events WHERE type = "
                          "'receipts.entry_recorded' ORDER BY position").fetchall()
        for position, data in rows:
            doc = json.loads(bytes(data))
            entry = doc["entry"]
            if entry["kind"] == "gain_test" and entry["stages"][1]["pass"]:
                entry["stages"][1]["elo"] = round(entry["stages"][1]["elo"] + 25.0, 2)
                edited = json.dumps(doc, sort_keys=True, separators=(",", ":"))
                db.execute("DROP TRIGGER events_no_update")  # the log refuses UPDATE
                db.execute("UPDATE events SET data = ? WHERE position = ?",
                           (edited.encode(), position))
                return int(position)
    finally:
        db.close()
    raise AssertionError("no passed gain test in the demo's register")


def test_report_of_a_tampered_log_exits_1_naming_the_position(
        demo_dir: Path, cli: Cli, tmp_path: Path) -> None:
    copy = tmp_path / "tampered"
    shutil.copytree(demo_dir, copy)
    (copy / "report.html").unlink()
    config = str(copy / "cladelog.toml")
    # the copy reports fine before the edit (its checkpoints are current)
    assert cli("report", "--config", config, "--html", str(tmp_path / "ok.html")).exit_code == 0
    position = _tamper_a_receipt(copy / "cladelog.sqlite3")

    verify = cli("--config", config, "verify", "--json")
    assert verify.exit_code == 1
    assert json.loads(verify.stdout)["position"] == position

    page = tmp_path / "tampered.html"
    result = cli("report", "--config", config, "--html", str(page))
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith(f"error: {config}: the log does not verify at position "
                               f"{position}: "), lines[0]
    assert not page.exists()
    # the same through the Python API
    from cladelog.demo.errors import ReportError, ReportVerificationError
    from cladelog.demo.report import write_report

    with pytest.raises(ReportVerificationError, match=f"at position {position}:") as info:
        write_report(config, page)
    assert isinstance(info.value, ReportError)
    assert not page.exists()
