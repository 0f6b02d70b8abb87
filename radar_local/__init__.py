"""radar_local: RADAR rubric coupling audits on local open-weight models.

    import radar_local
    result = radar_local.analyze("scores.csv", rubric="helpsteer2")   # any score table -> AuditResult
    result = radar_local.run_audit("configs/quickstart.yaml")          # models -> run directory -> AuditResult
    run = radar_local.load_run("runs/quickstart")                      # a stored run: .result(), .info(), .report()
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from radar_local.analysis import analyze
    from radar_local.errors import InputError, RadarError
    from radar_local.rubric import Criterion, Reference, Rubric, Task, load_reference, load_rubric, load_tasks
    from radar_local.run import Run, load_run, run_audit
    from radar_local.scores import read_scores, write_scores
    from radar_local.stats.result import AuditResult

# Loaded on first use (PEP 562): `radar` starts without pandas and the statistics, so a bad input's one
# line comes at once, and Ctrl-C in the first second meets radar's handler, not a traceback mid-import.
_HOMES = {
    "analyze": "analysis", "InputError": "errors", "RadarError": "errors", "Criterion": "rubric", "Reference": "rubric",
    "Rubric": "rubric", "Task": "rubric", "load_reference": "rubric", "load_rubric": "rubric", "load_tasks": "rubric",
    "Run": "run", "load_run": "run", "run_audit": "run", "read_scores": "scores", "write_scores": "scores",
    "AuditResult": "stats.result",
}
__all__ = [
    "AuditResult", "Criterion", "InputError", "RadarError", "Reference", "Rubric", "Run", "Task",
    "analyze", "load_reference", "load_rubric", "load_run", "load_tasks", "read_scores", "run_audit", "write_scores",
]
__version__ = "0.1.0"


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'radar_local' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"radar_local.{_HOMES[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
