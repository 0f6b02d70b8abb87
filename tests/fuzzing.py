"""Shared hypothesis settings and checks of the fuzzing tests: exit 0, or exit 2 with one line naming the file."""

from pathlib import Path

import pandas as pd
from click.testing import CliRunner
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st

from radar_local.cli.main import cli

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])  # examples: conftest


ANY_VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 10),
    st.floats(allow_nan=True),
    st.text(max_size=8),
    st.lists(st.integers(0, 4), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


CELL = st.one_of(
    st.sampled_from(["", "nan", "+", "-", "none", "a", "b", "0", "4", "5", "-1", "2.5", "t1", "x,y", '"']),
    st.text(max_size=6),
)


def broken(draw, df: pd.DataFrame, most: int, ops: list[str]) -> pd.DataFrame:
    """`df` after 1 to `most` of `ops`: a cell set, a column dropped or renamed, rows cut, a row twice, a column
    added."""
    for _ in range(draw(st.integers(1, most))):
        op = draw(st.sampled_from(ops))
        if op == "cell" and len(df):
            df.iat[draw(st.integers(0, len(df) - 1)), draw(st.integers(0, df.shape[1] - 1))] = draw(CELL)
        elif op == "drop_col" and df.shape[1]:
            df = df.drop(columns=draw(st.sampled_from(list(df.columns))))
        elif op == "rename_col" and df.shape[1]:
            df = df.rename(columns={draw(st.sampled_from(list(df.columns))): draw(st.text(max_size=5))})
        elif op == "drop_rows":
            df = df.iloc[draw(st.integers(0, len(df))) :]
        elif op == "dup_row" and len(df):
            df = pd.concat([df, df.iloc[[draw(st.integers(0, len(df) - 1))]]])
        elif op == "extra_col":
            df[draw(st.text(min_size=1, max_size=5))] = "x"
    return df


def check(res, named: Path | str, written: list[Path]) -> None:
    """Exit 0; or 2 with one line naming the file (or, for a config, the file it refers to, which
    lives in its folder). No traceback; no half-written output."""
    event(f"exit {res.exit_code}")  # --hypothesis-show-statistics: both outcomes are exercised
    assert res.exit_code in (0, 2), (res.exit_code, res.output, res.exception)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    if res.exit_code == 2:
        assert res.stderr.count("\n") == 1 and res.stderr.startswith("error: "), res.stderr
        assert str(named) in res.stderr or "--" in res.stderr, res.stderr
        assert not any(p.exists() for p in written)
    for p in written:
        assert not p.with_name(p.name + ".tmp").exists()


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _mutate(draw, obj):
    """Replace, drop or add one key somewhere in a nested mapping / list."""
    if isinstance(obj, dict) and obj:
        key = draw(st.sampled_from(list(obj)))
        op = draw(st.sampled_from(["replace", "drop", "add", "recurse", "recurse"]))
        if op == "replace":
            return {**obj, key: draw(ANY_VALUE)}
        if op == "drop":
            return {k: v for k, v in obj.items() if k != key}
        if op == "add":
            return {**obj, draw(st.text(min_size=1, max_size=6)): draw(ANY_VALUE)}
        return {**obj, key: _mutate(draw, obj[key])}
    if isinstance(obj, list) and obj:
        i = draw(st.integers(0, len(obj) - 1))
        op = draw(st.sampled_from(["replace", "duplicate", "recurse"]))
        if op == "replace":
            return obj[:i] + [draw(ANY_VALUE)] + obj[i + 1 :]
        if op == "duplicate":
            return obj + [obj[i]]
        return obj[:i] + [_mutate(draw, obj[i])] + obj[i + 1 :]
    return draw(ANY_VALUE)


@st.composite
def mutated(draw, base):
    obj = base
    for _ in range(draw(st.integers(1, 3))):
        obj = _mutate(draw, obj)
    return obj
