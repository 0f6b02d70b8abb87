"""radar_local: RADAR rubric coupling audits on local open-weight models."""

from radar_local.errors import InputError, RadarError
from radar_local.rubric import Criterion, Reference, Rubric, Task, load_reference, load_rubric, load_tasks
from radar_local.scores import read_scores, write_scores

__all__ = [
    "Criterion", "InputError", "RadarError", "Reference", "Rubric", "Task",
    "load_reference", "load_rubric", "load_tasks", "read_scores", "write_scores",
]
__version__ = "0.1.0"
