"""Judge calibration metrics after the ARTS-Hybrid calibration objective (seed 001, App. B.1):
discrimination, cross-judge agreement, judge stability and score-profile redundancy."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from radar_local.common import to_json
from radar_local.scale import LIKERT, Scale
from radar_local.score_table import PROBE_KEY
from radar_local.stats.baselines import score_profile_redundancy
from radar_local.stats.stored import Calibration

MAX_SD = 0.5  # the largest standard deviation of scores on [0, 1]


def calibration(df: pd.DataFrame, criteria: list[str], scales: dict[str, Scale] | None = None) -> Calibration:
    """Per verifier and criterion, from a score table (each criterion on its scale, default 0-4; NaN =
    unscored), its scores put on 0-1 (minus the scale's low end, over its span).

    discrimination: sd of a judge's normalized scores across probes (a judge that gives every probe
        the same score cannot discriminate);
    agreement: 1 - mean |p1 - p2| of two judges on the same (probe, criterion);
    stability: 1 - (largest - smallest judge sd) / 0.5 per criterion: do judges spread probes alike;
    redundancy: Spearman correlation of two criteria's score profiles under one judge.
    """
    probe = [c for c in PROBE_KEY if c != "verifier"]
    of = {c: (scales or {}).get(c, LIKERT) for c in df["criterion"].unique()}  # once per criterion, not per row
    low = df["criterion"].map({c: float(sc.low) for c, sc in of.items()})
    span = df["criterion"].map({c: float(sc.span) for c, sc in of.items()})
    wide = df.assign(p=(df["score"] - low) / span).pivot_table(
        index=probe, columns=["verifier", "criterion"], values="p", aggfunc="first", dropna=False
    )
    verifiers = sorted(df["verifier"].unique())
    out: dict = {"verifiers": {}, "agreement": {}, "stability": {}, "redundancy": {}}
    sds: dict[str, dict[str, float]] = {}
    for v in verifiers:
        out["verifiers"][v] = {}
        for c in criteria:
            col = wide[(v, c)] if (v, c) in wide.columns else pd.Series(dtype=float)
            sd = float(np.nanstd(col)) if col.notna().sum() >= 2 else np.nan
            sds.setdefault(c, {})[v] = sd
            out["verifiers"][v][c] = {"discrimination": sd, "n": int(col.notna().sum())}
        matrix = np.column_stack(
            [wide[(v, c)] if (v, c) in wide.columns else np.full(len(wide), np.nan) for c in criteria]
        )
        red = score_profile_redundancy(matrix)
        out["redundancy"][v] = {
            f"{a}/{b}": red[i, j] for (i, a), (j, b) in itertools.combinations(enumerate(criteria), 2)
        }
    for v1, v2 in itertools.combinations(verifiers, 2):
        per = {}
        for c in criteria:
            if (v1, c) not in wide.columns or (v2, c) not in wide.columns:
                continue
            both = wide[[(v1, c), (v2, c)]].dropna()
            per[c] = {
                "agreement": float(1 - np.mean(np.abs(both.iloc[:, 0] - both.iloc[:, 1]))) if len(both) else np.nan,
                "n": int(len(both)),
            }
        out["agreement"][f"{v1} vs {v2}"] = per
    if len(verifiers) >= 2:
        for c, by_v in sds.items():
            vals = np.array([x for x in by_v.values() if not np.isnan(x)])
            out["stability"][c] = float(1 - (vals.max() - vals.min()) / MAX_SD) if len(vals) >= 2 else np.nan
    return Calibration.model_validate(to_json(out))
