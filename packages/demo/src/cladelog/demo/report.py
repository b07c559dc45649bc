"""Make the report of a deployment: collect the data, draw the charts, write the page."""

from __future__ import annotations

import os
from pathlib import Path

from .charts import render_charts
from .html import render_html
from .report_data import ReportData, collect

__all__ = ["write_report"]


def write_report(config_path: str | os.PathLike[str], html_path: str | os.PathLike[str],
                 *, title: str = "cladelog report") -> ReportData:
    """Open the deployment at ``config_path``, write the HTML report to ``html_path``.

    Raises :class:`~cladelog.demo.errors.ReportError` when there is nothing to
    report, and cladelog's own errors for a broken deployment.
    """
    from cladelog.core import Deployment

    with Deployment.open(Path(config_path).resolve()) as deployment:
        data = collect(deployment, shown_as=str(config_path))
    page = render_html(data, render_charts(data), title=title)
    target = Path(html_path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(page, encoding="utf-8")
    return data
