"""radar_local: RADAR rubric coupling audits on local open-weight models.

    import radar_local
    result = radar_local.analyze("scores.csv", rubric="helpsteer2")   # any score table -> AuditResult
    result = radar_local.run_audit("configs/quickstart.yaml")          # models -> run directory -> AuditResult
    run = radar_local.load_run("runs/quickstart")                      # a stored run: .result(), .info(), .report()
"""

from radar_local.analyze import analyze
from radar_local.errors import InputError, RadarError
from radar_local.rubric import Criterion, Reference, Rubric, Task, load_reference, load_rubric, load_tasks
from radar_local.run import Run, load_run, run_audit
from radar_local.scores import read_scores, write_scores
from radar_local.stats.result import AuditResult

__all__ = [
    "AuditResult", "Criterion", "InputError", "RadarError", "Reference", "Rubric", "Run", "Task",
    "analyze", "load_reference", "load_rubric", "load_run", "load_tasks", "read_scores", "run_audit", "write_scores",
]
__version__ = "0.1.0"
