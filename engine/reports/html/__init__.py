"""Self-contained HTML reports of a saved run or trial (``socialsim report``).

A report is one file: plotly.js and every style are inlined, so it opens from ``file://``
on a machine without network and makes no request to any host. The figures are built with
plotly (``figures``), the page with Jinja2 templates (``templates/``), both imported on first
use.
"""

from .page import report_modules
from .page import write as write_html
from .run import run_report, write_run_report
from .trial import trial_report, write_trial_report

__all__ = [
    "report_modules",
    "run_report",
    "trial_report",
    "write_html",
    "write_run_report",
    "write_trial_report",
]
