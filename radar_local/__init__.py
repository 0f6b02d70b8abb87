"""radar_local: RADAR rubric coupling audits on local open-weight models.

import radar_local
result = radar_local.analyze("scores.csv", rubric="helpsteer2")   # any score table -> AuditResult
result = radar_local.run_audit("configs/quickstart.yaml")          # models -> run directory -> AuditResult
run = radar_local.load_run("runs/quickstart")                      # a stored run: .result(), .info(), .probes()
run.stats()                                                         # its stats of either kind (a pairwise audit too)
radar_local.write_report(run)                                      # its report.html and report.md
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from radar_local.analysis import analyze
    from radar_local.auditing import run_audit
    from radar_local.errors import InputError, RadarError
    from radar_local.report.build import write_report
    from radar_local.rubric import Criterion, Reference, Rubric, Task, load_reference, load_rubric, load_tasks
    from radar_local.run import Run
    from radar_local.rundir import RunDir, load_run
    from radar_local.score_table import read_scores, write_scores
    from radar_local.stats.result import AuditResult

# Loaded on first use (PEP 562): `radar` starts without pandas and the statistics, so a bad input's one
# line comes at once, and Ctrl-C in the first second meets radar's handler, not a traceback mid-import.
# The public API: each name and the module it lives in, listed once (the imports above, for type checkers,
# are checked against it by tests/test_api.py).
_HOMES = {
    "analyze": "analysis",
    "run_audit": "auditing",
    "InputError": "errors",
    "RadarError": "errors",
    "write_report": "report.build",
    "Criterion": "rubric",
    "Reference": "rubric",
    "Rubric": "rubric",
    "Task": "rubric",
    "load_reference": "rubric",
    "load_rubric": "rubric",
    "load_tasks": "rubric",
    "Run": "run",
    "RunDir": "rundir",
    "load_run": "rundir",
    "read_scores": "score_table",
    "write_scores": "score_table",
    "AuditResult": "stats.result",
}
__all__ = sorted(_HOMES)
__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    if name not in _HOMES:
        raise AttributeError(f"module 'radar_local' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"radar_local.{_HOMES[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))


def _register_notebook_view() -> None:
    """In IPython (Jupyter), an AuditResult shows as the report's tables. Registered by the class's name
    from the top of the package, so the statistics know nothing of reports and nothing loads for it."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is not None:
        html = shell.display_formatter.formatters["text/html"]
        html.for_type_by_name("radar_local.stats.result", "AuditResult", _result_html)


def _result_html(result: AuditResult) -> str:
    from radar_local.report.html import result_tables_html  # numpy: loaded when a notebook first shows a result

    return result_tables_html(result)


_register_notebook_view()
