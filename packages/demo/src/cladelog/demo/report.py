"""Make the report of a deployment: collect the data, draw the charts, write the page."""

from __future__ import annotations

import os
from pathlib import Path

from .charts import render_charts, shown_charts
from .errors import ReportPathError
from .html import render_html
from .report_data import ReportData, collect

__all__ = ["check_html_target", "write_report"]


def check_html_target(html_path: str | os.PathLike[str]) -> None:
    """Raise :class:`ReportPathError` (``--html: ...``) unless the page can go there.

    The page must be a file: not an existing folder, and not under a path whose
    part is an existing file. Missing folders are created when the page is written.
    """
    target = Path(html_path)
    if target.is_dir():
        raise ReportPathError(f"--html: {target} is a folder; give the file to write "
                              f"(for example {target / 'report.html'})")
    for parent in target.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ReportPathError(f"--html: cannot write {target}: {parent} is not a "
                                      "folder")
            break


def write_report(config_path: str | os.PathLike[str], html_path: str | os.PathLike[str],
                 *, title: str = "cladelog report") -> ReportData:
    """Open the deployment at ``config_path``, write the HTML report to ``html_path``.

    The hash chain is verified first (:func:`~cladelog.demo.report_data.collect`).
    Raises :class:`~cladelog.demo.errors.ReportError` when there is nothing to
    report, its subclasses :class:`~cladelog.demo.errors.ReportVerificationError`
    when the log does not verify and :class:`~cladelog.demo.errors.ReportPathError`
    when the page cannot be written to ``html_path`` (nothing is written in
    these cases), and cladelog's own errors for a broken deployment.
    """
    from cladelog.core import Deployment

    check_html_target(html_path)
    with Deployment.open(Path(config_path).resolve()) as deployment:
        data = collect(deployment, shown_as=str(config_path))
    page = render_html(data, render_charts(data, shown_charts(data)), title=title)
    page = _with_consensus_section(page, Path(config_path).resolve().parent)
    target = Path(html_path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise ReportPathError(f"--html: cannot write {target}: "
                              f"{exc.strerror or type(exc).__name__}") from None
    return data


def _with_consensus_section(page: str, folder: Path) -> str:
    """Add the consensus scenario's section (``consensus_story``) before the end of
    ``<main>`` when the demo folder holds one; the page is unchanged otherwise."""
    from .consensus_story import consensus_section_html

    section = consensus_section_html(folder)
    if not section or "</main>" not in page:
        return page
    head, _, tail = page.rpartition("</main>")
    return head + section + "</main>" + tail
