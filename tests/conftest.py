import numpy as np
import pandas as pd
import pytest

from radar_local.scores import COLUMNS


def table(rows: list[tuple], generator: str = "g", verifier: str = "v") -> pd.DataFrame:
    """Rows of (task_id, target, direction, variant, criterion, score) as a score table."""
    return pd.DataFrame([(generator, verifier, *r) for r in rows], columns=list(COLUMNS))


def probes(task: str, target: str, direction: str, scored: list[dict[str, int]]) -> list[tuple]:
    """One probe per dict of {criterion: score}."""
    return [(task, target, direction, str(v), c, s) for v, d in enumerate(scored) for c, s in d.items()]


@pytest.fixture
def two_criteria_table() -> pd.DataFrame:
    """The known-answer table of test_coupling.py::test_known_answer_two_criteria."""
    rows = (
        probes("t1", "a", "+", [{"a": 4, "b": 3}, {"a": 4, "b": 1}])
        + probes("t1", "a", "-", [{"a": 0, "b": 1}, {"a": 2, "b": 1}])
        + probes("t1", "b", "+", [{"a": 3, "b": 4}, {"a": 3, "b": 4}])
        + probes("t1", "b", "-", [{"a": 1, "b": 0}, {"a": 1, "b": 2}])
    )
    return table(rows)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)
