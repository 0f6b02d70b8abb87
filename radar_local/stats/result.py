"""AuditResult: the one shape of a cell's audit. Labelled pandas objects for the numbers, plain
values for the rest; `to_json()` is the content of stats.json and `radar stats --json`, and
`from_json()` reads it back exactly (schema_version checked)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from radar_local.common import json_number
from radar_local.errors import InputError
from radar_local.stats.flags import EVIDENCE

SCHEMA_VERSION = 2  # 2: pair 'flags' is a list; gating causes; unscored counts and warnings
PAIR_COLUMNS = [
    "a",
    "b",
    "leak_ab",
    "leak_ba",
    "sym",
    "asym",
    "reliable",
    "flags",
    "sym_ci",
    "asym_ci",
    "human_r",
    "upstream",
    "downstream",
    "evidence",
    "settle_n",
]


@dataclass(frozen=True)
class Gate:
    """A criterion that fails the reliability gate, and why (App. C)."""

    criterion: str
    self_effect: float | None
    cause: str  # below_tau, negative, unscored
    reason: str
    evidence: str | None = None  # confirmed: the family interval lies below tau; possible: it does not


@dataclass
class AuditResult:
    generator: str
    verifier: str
    criteria: list[str]
    tasks: list[str]
    tau: float
    bootstrap: dict[str, Any]  # resamples, seed, level
    probes: dict[str, Any]  # directed, unconditioned, min_per_stratum, unscored_cells
    unscored: dict[str, Any]  # verdicts, verdicts_total, strata, strata_total, tasks {task: unscored strata}
    warnings: list[str]
    self_effect: pd.Series  # criterion -> eq. 1
    self_effect_ci: pd.DataFrame | None  # criterion x (low, high)
    reliable: pd.Series  # criterion -> bool
    self_effect_by_task: pd.DataFrame  # task x criterion
    leakage: pd.DataFrame  # source x target, eq. 5
    leakage_ci: tuple[pd.DataFrame, pd.DataFrame] | None  # (low, high)
    leakage_sd: pd.DataFrame  # eq. 6; NaN with fewer than two tasks
    leakage_by_task: dict[str, pd.DataFrame]
    pairs: pd.DataFrame  # PAIR_COLUMNS, ranked: reliable first, then by Sym
    global_: dict[str, Any]  # positive, tension, max_coupling (eq. 10-11)
    global_ci: dict[str, Any] | None  # same keys -> (low, high)
    thresholds: dict[str, Any]
    unreliable: list[Gate]
    baselines: dict[str, Any]
    agreement: dict[str, Any] | None = None
    budget: list[dict[str, Any]] | None = None
    rubric: str | None = None
    calibration: dict[str, Any] | None = None
    double_count: dict[str, Any] | None = None  # the rubric's weighted aggregate: weights, share, by_source
    adaptive: dict[str, Any] | None = None  # an adaptive audit's waves and the decisions that settled
    nuisance: dict[str, Any] | None = None  # judge bias: {threshold, rows} (stats/nuisance.py)
    # the simultaneous intervals that confirm flags: {level, method, cells, critical, self_effect {c: [lo, hi]},
    # leakage, sym, asym {a: {b: [lo, hi]}}} (stats/intervals.Family)
    family: dict[str, Any] | None = None
    gate_evidence: dict[str, str] | None = None  # criterion -> confirmed / possible: its gate decision, either way
    schema_version: int = SCHEMA_VERSION

    # ---- JSON -------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        crit = self.criteria
        out = {
            "schema_version": self.schema_version,
            "generator": self.generator,
            "verifier": self.verifier,
            "criteria": crit,
            "tasks": self.tasks,
            "tau": self.tau,
            "bootstrap": self.bootstrap,
            "probes": self.probes,
            "unscored": self.unscored,
            "warnings": self.warnings,
            "self_effect": _series(self.self_effect),
            "self_effect_ci": None
            if self.self_effect_ci is None
            else {c: _pair(self.self_effect_ci.loc[c, "low"], self.self_effect_ci.loc[c, "high"]) for c in crit},
            "reliable": {c: bool(v) for c, v in self.reliable.items()},
            "self_effect_by_task": {t: _series(row) for t, row in self.self_effect_by_task.iterrows()},
            "leakage": _frame(self.leakage),
            "leakage_ci": None
            if self.leakage_ci is None
            else {
                a: {b: _pair(self.leakage_ci[0].loc[a, b], self.leakage_ci[1].loc[a, b]) for b in crit} for a in crit
            },
            "leakage_sd": _frame(self.leakage_sd),
            "leakage_by_task": {t: _frame(m) for t, m in self.leakage_by_task.items()},
            "pairs": [_pair_json(p) for p in self.pairs.to_dict("records")],
            "global": {
                **{k: json_number(v) for k, v in self.global_.items()},
                "ci": None if self.global_ci is None else {k: _pair(*v) for k, v in self.global_ci.items()},
            },
            "flags": {
                "thresholds": self.thresholds,
                "unreliable": [vars(g) for g in self.unreliable],
                **({} if self.gate_evidence is None else {"gates": self.gate_evidence}),
            },
            "baselines": self.baselines,
        }
        for key in ("agreement", "budget", "adaptive"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        out["rubric"] = self.rubric
        out["calibration"] = self.calibration
        if self.double_count is not None:
            out["double_count"] = self.double_count
        if self.nuisance is not None:
            out["nuisance"] = _nuisance(self.nuisance)
        if self.family is not None:
            out["family"] = self.family
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any], where: object = "stats") -> AuditResult:
        version = data.get("schema_version") if isinstance(data, dict) else None
        if version != SCHEMA_VERSION:
            newer = isinstance(version, int) and version > SCHEMA_VERSION
            fix = "upgrade radar_local" if newer else "re-run `radar audit` or `radar stats --json` to rewrite it"
            raise InputError(where, f"stats schema_version {version!r}, this radar_local reads {SCHEMA_VERSION}; {fix}")
        try:
            return cls._from_json(data)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
            raise InputError(
                where,
                f"is not a complete RADAR stats file ({type(exc).__name__}: {exc}); "
                "re-run `radar audit` or `radar stats --json` to rewrite it",
            ) from None

    @classmethod
    def _from_json(cls, d: dict[str, Any]) -> AuditResult:
        crit = [_name(c) for c in d["criteria"]]

        def frame(m: dict[str, Any]) -> pd.DataFrame:
            return pd.DataFrame([[_nan(m[a][b]) for b in crit] for a in crit], index=crit, columns=crit, dtype=float)

        ci = d["self_effect_ci"]
        lci = d["leakage_ci"]
        pairs = pd.DataFrame(
            [
                {
                    "a": _name(p["a"]),
                    "b": _name(p["b"]),
                    "leak_ab": _nan(p["leak_ab"]),
                    "leak_ba": _nan(p["leak_ba"]),
                    "sym": _nan(p["sym"]),
                    "asym": _nan(p["asym"]),
                    "reliable": bool(p["reliable"]),
                    "flags": list(p["flags"]),
                    "sym_ci": _tuple(p["ci"]["sym"]) if p["ci"] else None,
                    "asym_ci": _tuple(p["ci"]["asym"]) if p["ci"] else None,
                    "human_r": _nan(p["human_r"]),
                    "upstream": p.get("upstream"),
                    "downstream": p.get("downstream"),
                    "evidence": None if p.get("evidence") is None else _evidence(p["evidence"]),
                    "settle_n": None if p.get("settle_n") is None else int(p["settle_n"]),
                }
                for p in d["pairs"]
            ],
            columns=PAIR_COLUMNS,
        )
        g = d["global"]
        return cls(
            generator=_name(d["generator"]),
            verifier=_name(d["verifier"]),
            criteria=crit,
            tasks=[_name(t) for t in d["tasks"]],
            tau=_nan(d["tau"]),
            bootstrap=d["bootstrap"],
            probes=d["probes"],
            unscored=d["unscored"],
            warnings=[_name(w) for w in d["warnings"]],
            self_effect=pd.Series({c: _nan(d["self_effect"][c]) for c in crit}, dtype=float),
            self_effect_ci=None
            if ci is None
            else pd.DataFrame([[_nan(ci[c][0]), _nan(ci[c][1])] for c in crit], index=crit, columns=["low", "high"]),
            reliable=pd.Series({c: bool(d["reliable"][c]) for c in crit}, dtype=bool),
            self_effect_by_task=pd.DataFrame(
                [[_nan(d["self_effect_by_task"][t][c]) for c in crit] for t in d["tasks"]],
                index=list(d["tasks"]),
                columns=crit,
                dtype=float,
            ),
            leakage=frame(d["leakage"]),
            leakage_ci=None
            if lci is None
            else (
                frame({a: {b: lci[a][b][0] for b in crit} for a in crit}),
                frame({a: {b: lci[a][b][1] for b in crit} for a in crit}),
            ),
            leakage_sd=frame(d["leakage_sd"]),
            leakage_by_task={t: frame(m) for t, m in d["leakage_by_task"].items()},
            pairs=pairs,
            global_={k: _nan(g[k]) for k in ("positive", "tension", "max_coupling")},
            global_ci=None if g["ci"] is None else {k: _tuple(v) for k, v in g["ci"].items()},
            thresholds=d["flags"]["thresholds"],
            gate_evidence=None
            if d["flags"].get("gates") is None
            else {c: str(_evidence(d["flags"]["gates"])[c]) for c in crit},
            unreliable=[_gate(u) for u in d["flags"]["unreliable"]],
            baselines=d["baselines"],
            agreement=d.get("agreement"),
            budget=d.get("budget"),
            adaptive=d.get("adaptive"),
            rubric=d.get("rubric"),
            calibration=d.get("calibration"),
            double_count=d.get("double_count"),
            nuisance=None if d.get("nuisance") is None else _nuisance(d["nuisance"]),
            family=None if d.get("family") is None else _family(d["family"], crit),
            schema_version=d["schema_version"],
        )

    # ---- views ------------------------------------------------------------------------------
    def pair(self, a: str, b: str) -> dict[str, Any]:
        """One pair's row, whichever order its criteria are named in."""
        rows = self.pairs[
            ((self.pairs["a"] == a) & (self.pairs["b"] == b)) | ((self.pairs["a"] == b) & (self.pairs["b"] == a))
        ]
        return rows.iloc[0].to_dict()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AuditResult) and self.to_json() == other.to_json()


def _nan(x: object) -> float:
    """A stored number: null is NaN; anything but a number (a string, a bool, a list) is refused."""
    if x is None:
        return np.nan
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ValueError(f"{x!r:.40} is not a number")
    return float(x)  # an integer beyond a float's range raises OverflowError


def _pair(lo: object, hi: object) -> list[float | None]:
    return [json_number(lo), json_number(hi)]


def _tuple(v: object) -> tuple[float, float] | None:
    if v is None:
        return None
    if not isinstance(v, list) or len(v) != 2:
        raise ValueError(f"an interval must be [low, high], not {v!r:.40}")
    return (_nan(v[0]), _nan(v[1]))


def _nuisance(n: dict[str, Any]) -> dict[str, Any]:
    """The nuisance section as JSON, checked: names are text, numbers numbers, flags known."""

    def number(x: object) -> float | None:
        return None if x is None else _nan(x)

    rows = []
    for r in n["rows"]:
        if r["flag"] not in (None, "biased", "intended"):
            raise ValueError(f"unknown nuisance flag {r['flag']!r:.40}")
        rows.append(
            {
                "attribute": _name(r["attribute"]),
                "criterion": _name(r["criterion"]),
                "pairs": int(r["pairs"]),
                "sensitivity": number(r["sensitivity"]),
                "ci": None if r["ci"] is None else list(_tuple(list(r["ci"])) or ()),
                "family_ci": None if r.get("family_ci") is None else list(_tuple(list(r["family_ci"])) or ()),
                "evidence": _evidence({"bias": r.get("evidence")})["bias"],
                "by_task": {_name(t): number(v) for t, v in r["by_task"].items()},
                "bias_share": number(r["bias_share"]),
                "flag": r["flag"],
                "steered": None if r.get("steered") is None else bool(r["steered"]),
            }
        )
    manipulation = n.get("manipulation")
    if manipulation is not None and not all(isinstance(m, dict) for m in manipulation.values()):
        raise ValueError("the nuisance manipulation check must map each attribute to its counts")
    return {"threshold": _nan(n["threshold"]), "rows": rows, "manipulation": manipulation}


def _gate(u: dict[str, Any]) -> Gate:
    _evidence({"gate": u.get("evidence")})  # checked: a known level or none
    return Gate(**u)


def _evidence(e: object) -> dict[str, str | None]:
    if not isinstance(e, dict) or any(v not in (*EVIDENCE, None) for v in e.values()):
        raise ValueError(f"evidence must map a flag to one of {EVIDENCE}, not {e!r:.40}")
    return {_name(k): v for k, v in e.items()}


def _family(f: dict[str, Any], crit: list[str]) -> dict[str, Any]:
    """The family section, checked: every interval a pair of numbers (or null), for every criterion."""

    def ci(v: object) -> list[float | None] | None:
        pair = _tuple(v)
        return None if pair is None else _pair(*pair)

    return {
        "level": _nan(f["level"]),
        "method": _name(f["method"]),
        "cells": int(f["cells"]),
        "critical": json_number(_nan(f["critical"])),
        "self_effect": {c: ci(f["self_effect"][c]) for c in crit},
        **{key: {a: {b: ci(f[key][a][b]) for b in crit} for a in crit} for key in ("leakage", "sym", "asym")},
    }


def _name(x: object) -> str:
    if not isinstance(x, str):
        raise ValueError(f"a name must be text, not {x!r:.40}")  # a criterion, model, task or warning
    return x


def _series(s: pd.Series) -> dict[str, Any]:
    return {str(k): json_number(v) for k, v in s.items()}


def _frame(m: pd.DataFrame) -> dict[str, Any]:
    return {str(a): {str(b): json_number(v) for b, v in row.items()} for a, row in m.iterrows()}


def _pair_json(p: dict[str, Any]) -> dict[str, Any]:
    out = {
        "a": p["a"],
        "b": p["b"],
        "leak_ab": json_number(p["leak_ab"]),
        "leak_ba": json_number(p["leak_ba"]),
        "sym": json_number(p["sym"]),
        "asym": json_number(p["asym"]),
        "reliable": bool(p["reliable"]),
        "flags": list(p["flags"]),
        "ci": None if p["sym_ci"] is None else {"sym": _pair(*p["sym_ci"]), "asym": _pair(*p["asym_ci"])},
        "human_r": json_number(p["human_r"]),
    }
    if isinstance(p.get("upstream"), str):
        out["upstream"], out["downstream"] = p["upstream"], p["downstream"]
    if isinstance(p.get("evidence"), dict):
        out["evidence"] = p["evidence"]
        out["settle_n"] = None if json_number(p.get("settle_n")) is None else int(p["settle_n"])
    return out
