"""cladelog-demo: ``cladelog demo`` (a seeded self-improvement history) and ``cladelog report``.

The public API is listed in ``__all__`` and imported lazily (the command line
must start fast; matplotlib is loaded only when a chart is drawn).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cladelog.core import lazy_exports

__version__ = "0.1.0"

_EXPORTS = {
    "DemoClock": "clock",
    "DemoError": "errors",
    "ReportError": "errors",
    "DemoConfig": "model",
    "plan_rounds": "model",
    "DemoResult": "runner",
    "run_demo": "runner",
    "ReportData": "report_data",
    "build_report_data": "report_data",
    "collect": "report_data",
    "render_charts": "charts",
    "render_html": "html",
    "print_summary": "terminal",
    "write_report": "report",
    "run_graph_session": "graph",
}

__all__ = [
    "DemoClock",
    "DemoConfig",
    "DemoError",
    "DemoResult",
    "ReportData",
    "ReportError",
    "__version__",
    "build_report_data",
    "collect",
    "plan_rounds",
    "print_summary",
    "render_charts",
    "render_html",
    "run_demo",
    "run_graph_session",
    "write_report",
]

if TYPE_CHECKING:
    from .charts import render_charts
    from .clock import DemoClock
    from .errors import DemoError, ReportError
    from .graph import run_graph_session
    from .html import render_html
    from .model import DemoConfig, plan_rounds
    from .report import write_report
    from .report_data import ReportData, build_report_data, collect
    from .runner import DemoResult, run_demo
    from .terminal import print_summary


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
