"""The score table: the contract between the model half and the statistics half.

Long format, one row per (probe, scored criterion). A probe is identified by
(generator, verifier, task_id, target, direction, variant). `score` is on the criterion's scale (the
paper's 0-4 unless the rubric or `--scale` says otherwise), as the judge gave it: a level's value (a
reasoned verdict), a number between the scale's ends (an expected-score verdict), or empty where the
verifier's answer could not be parsed.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from radar_local.errors import InputError
from radar_local.inputs import regular_file
from radar_local.nuisance import WAYS
from radar_local.scale import LIKERT, Scale, range_scale
from radar_local.scoring import continuous_scores
from radar_local.store import write_atomic

COLUMNS = ("generator", "verifier", "task_id", "target", "direction", "variant", "criterion", "score")
PROBE_KEY = ("generator", "verifier", "task_id", "target", "direction", "variant")
STEERED = ("+", "-")
DIRECTIONS = (*STEERED, "none", *WAYS)  # up, down: a nuisance pair's rewrites (radar_local.nuisance)


# A cell a spreadsheet would run as a formula (OWASP's CSV injection): written with a leading quote, which reading
# takes off again. A text cell that already begins with a quote gets one more, so the two are each other's inverse.
FORMULA_START = tuple("=+-@\t\r'")
TEXT_COLUMNS = ("generator", "verifier", "task_id", "target", "criterion")


def _inert(cell: str) -> str:
    return "'" + cell if cell.startswith(FORMULA_START) else cell


def _as_written(cell: str) -> str:
    return cell[1:] if cell.startswith("'") and cell[1:].startswith(FORMULA_START) else cell


def _csv_row(index: int) -> int:
    return index + 2  # 1-based, after the header line


Scales = Scale | str | Mapping[str, Scale]  # one scale for every criterion ('1-10' names one), or each criterion's


def read_scores(path: str | Path, scales: Scales = LIKERT, declared_by: object = None) -> pd.DataFrame:
    """Read a CSV or Parquet score table and validate its shape and scores (not yet its criteria)."""
    path = Path(path)
    regular_file(path, "score file")
    try:
        if path.suffix == ".parquet":
            df = pd.read_parquet(path)
            for col in df.columns:
                if col != "score":
                    df[col] = df[col].astype(str)
        else:
            df = pd.read_csv(path, dtype=str, keep_default_na=False)
            for col in set(TEXT_COLUMNS) & set(df.columns):
                quoted = df[col].str.startswith("'")  # vectorized: a cell written inert is rare, mapping each cell
                if quoted.any():  # of a million-row table tripled `radar stats`'s time (issue 60 item 25)
                    df.loc[quoted, col] = df.loc[quoted, col].map(_as_written)
    except pd.errors.EmptyDataError:
        raise InputError(path, "the score file is empty; expected a header and score rows") from None
    except (pd.errors.ParserError, UnicodeDecodeError, OSError, ValueError) as exc:
        raise InputError(path, f"cannot parse the score table ({str(exc).splitlines()[0]})") from None
    return validate_scores(df, path, scales, declared_by=declared_by)


def validate_scores(
    df: pd.DataFrame, path: object, scales: Scales = LIKERT, both_directions: bool = True, declared_by: object = None
) -> pd.DataFrame:
    """Check a table's shape and values. `both_directions=False` lets a target lack + or - probes
    (an audit that excluded flagged probes); the statistics then gate it and say why. `declared_by` names
    where per-criterion scales come from (a rubric file), so a score off them names both files."""
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise InputError(path, f"missing column(s) {', '.join(missing)}; expected {', '.join(COLUMNS)}")
    if df.empty:
        raise InputError(path, "the score table has no rows")
    df = df.loc[:, list(COLUMNS)].copy()
    for col in PROBE_KEY + ("criterion",):
        df[col] = df[col].astype(str)

    raw = df["score"]
    numeric = pd.to_numeric(raw.replace("", np.nan), errors="coerce")
    bad = numeric.isna() & raw.notna() & (raw.astype(str) != "") & (raw.astype(str) != "nan")

    if isinstance(scales, str):
        try:
            scales = range_scale(scales)
        except ValueError as exc:
            raise InputError(path, str(exc)) from None

    def scale_of(criterion: str) -> Scale:
        return scales if isinstance(scales, Scale) else scales.get(criterion, LIKERT)

    of = {c: scale_of(c) for c in df["criterion"].unique()}  # once per criterion, not per row
    low = df["criterion"].map({c: sc.low for c, sc in of.items()}).astype(float)
    high = df["criterion"].map({c: sc.high for c, sc in of.items()}).astype(float)
    bad |= numeric.notna() & ((numeric < low) | (numeric > high))
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        scale = scale_of(df["criterion"].iloc[i])
        whose = "" if isinstance(scales, Scale) else f" of criterion '{df['criterion'].iloc[i]}'"
        whose += f", as {declared_by} declares it" if declared_by is not None else ""
        raise InputError(
            path,
            f"row {_csv_row(i)}: score '{raw.iloc[i]}' is off the {scale.name} scale{whose}; use a number from "
            f"{scale.low:g} to {scale.high:g} or leave it empty",
        )
    df["score"] = numeric.astype("float64")

    bad_dir = ~df["direction"].isin(DIRECTIONS)
    if bad_dir.any():
        i = int(np.flatnonzero(bad_dir.to_numpy())[0])
        raise InputError(
            path, f"row {_csv_row(i)}: direction '{df['direction'].iloc[i]}' must be one of {' '.join(DIRECTIONS)}"
        )
    unnamed = df["direction"].isin(WAYS) & (df["target"].str.strip() == "")
    if unnamed.any():
        i = int(np.flatnonzero(unnamed.to_numpy())[0])
        raise InputError(
            path, f"row {_csv_row(i)}: a nuisance rewrite ({df['direction'].iloc[i]}) names its attribute in target"
        )
    empty_crit = df["criterion"].str.strip() == ""
    if empty_crit.any():
        i = int(np.flatnonzero(empty_crit.to_numpy())[0])
        raise InputError(path, f"row {_csv_row(i)}: criterion is empty")

    dup = df.duplicated(list(PROBE_KEY) + ["criterion"], keep="first")
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise InputError(
            path, f"row {_csv_row(i)}: duplicate of an earlier row for the same probe and criterion; keep one"
        )

    if not both_directions:
        return df
    directed = df[df["direction"].isin(STEERED)]
    dirs = directed.groupby(["generator", "verifier", "task_id", "target"], sort=False)["direction"].nunique()
    lonely = dirs[dirs < 2]
    if len(lonely):
        gen, ver, task, target = lonely.index[0]
        have = directed[(directed["task_id"] == task) & (directed["target"] == target)]["direction"].iloc[0]
        raise InputError(
            path,
            f"target '{target}' in task '{task}' ({gen} -> {ver}) has only '{have}' probes; each target needs both "
            "+ and - probes",
        )
    return df


def check_criteria(df: pd.DataFrame, criteria: list[str], path: object) -> None:
    """Every scored criterion and every steered target belongs to the rubric; a nuisance attribute is none of them."""
    known = set(criteria)
    for col in ("criterion", "target"):
        values = df[col] if col == "criterion" else df.loc[df["direction"].isin(STEERED), "target"]
        unknown = ~values.isin(known)
        if unknown.any():
            i = int(np.flatnonzero(unknown.to_numpy())[0])
            row = values.index[i]
            raise InputError(
                path,
                f"row {_csv_row(int(row))}: unknown {col} '{values.iloc[i]}'; the rubric has {', '.join(criteria)}",
            )
    rewrites = df["direction"].isin(WAYS) & df["target"].isin(known)
    if rewrites.any():
        row = int(rewrites.index[np.flatnonzero(rewrites.to_numpy())[0]])
        raise InputError(
            path,
            f"row {_csv_row(row)}: a nuisance rewrite ({df.at[row, 'direction']}) names the criterion "
            f"'{df.at[row, 'target']}' as its attribute; an attribute (length, hedging, ...) may not share a "
            "criterion's id, and a probe steered on a criterion is + or -",
        )


def write_scores(df: pd.DataFrame, path: str | Path) -> None:
    path = Path(path)
    out = df.loc[:, list(COLUMNS)]
    if path.suffix == ".parquet":
        buf = io.BytesIO()
        out.to_parquet(buf, index=False)
        data: str | bytes = buf.getvalue()
    else:
        score = (
            out["score"] if continuous_scores(out["score"].to_numpy()) else out["score"].astype("Int64")
        )  # reasoned verdicts stay integers
        text = {col: out[col].astype(str).map(_inert) for col in TEXT_COLUMNS}
        data = out.assign(score=score, **text).to_csv(index=False)
    write_atomic(path, data)  # a crash never leaves a half-written table


def cells(df: pd.DataFrame) -> list[tuple[str, str]]:
    pairs = df[["generator", "verifier"]].drop_duplicates()
    return sorted(zip(pairs["generator"], pairs["verifier"]))
