"""AuditResult: the one shape of a cell's audit. Labelled pandas objects for the numbers, plain
values for the rest; `to_json()` is the content of stats.json and `radar stats --json`, and
`from_json()` reads it back exactly (schema_version checked)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from pydantic import Field, ValidationError, create_model

from radar_local.common import json_number
from radar_local.errors import InputError
from radar_local.stats.attacks import Attacks, PairAttacks
from radar_local.stats.bias import Bias, BiasRow
from radar_local.stats.bootstrap import LEVEL
from radar_local.stats.coupling import LeakageDefinition
from radar_local.stats.drift import Drift
from radar_local.stats.halo import Halo
from radar_local.stats.item_pairs import ItemPairs
from radar_local.stats.joint import JointCalls
from radar_local.stats.jurors import JuryBlock
from radar_local.stats.order import OrderEffects
from radar_local.stats.pairwise import Pairwise
from radar_local.stats.pairwise_audit import KIND, PairwiseAudit
from radar_local.stats.per_prompt import PerPrompt
from radar_local.stats.raters import LabelsBlock
from radar_local.stats.repeats import Repeats
from radar_local.stats.reward import RewardProfile
from radar_local.stats.stored import (
    AdaptiveRecord,
    B,
    Baselines,
    Block,
    BudgetRow,
    Calibration,
    DoubleCount,
    Evidence,
    Interval,
    Matrix,
    Num,
    PairCoupling,
    ProbeCounts,
    ReferenceAgreement,
    Resampling,
    Scales,
    Unscored,
)
from radar_local.stats.wording import Wording

# 2: pair 'flags' is a list; gating causes; unscored counts and warnings. 3: judge bias is `bias` (was `nuisance`).
# 4: what the audit measured beyond its coupling is stored by name under `measurements` (MEASURED).
SCHEMA_VERSION = 4

NUMBERS = ("leak_ab", "leak_ba", "sym", "asym", "human_r")  # a pair's numbers (null: NaN in the frame)


class PairCI(Block):
    sym: Interval
    asym: Interval


class PairFile(PairCoupling):
    reliable: bool
    flags: list[str]
    ci: PairCI | None
    human_r: Num
    upstream: str | None = None
    downstream: str | None = None
    evidence: dict[str, Evidence | None] | None = None
    settle_n: int | None = None


# A pair's columns in AuditResult.pairs: its stored fields, the interval pair split in two.
PAIR_COLUMNS = [c for f in PairFile.model_fields for c in (("sym_ci", "asym_ci") if f == "ci" else (f,))]


class GateFile(Block):
    criterion: str
    self_effect: Num
    cause: str
    reason: str
    evidence: Evidence | None = None


class FlagsFile(Block):
    thresholds: dict[str, Any]
    unreliable: list[GateFile]
    gates: dict[str, Evidence] | None = None


class GlobalFile(Block):
    positive: Num
    tension: Num
    max_coupling: Num
    ci: dict[str, Interval] | None


class ScreeningFile(Block):
    fdr: float  # the false discovery rate the flags were screened at
    method: str
    hypotheses: int
    passed: int


class FamilyFile(Block):
    level: float
    method: str
    cells: int
    critical: Num
    gate_level: float | None = None  # absent before issue 43: one band held every quantity
    pair_level: float | None = None
    self_effect: dict[str, Interval | None]
    leakage: dict[str, dict[str, Interval | None]]
    sym: dict[str, dict[str, Interval | None]]
    asym: dict[str, dict[str, Interval | None]]
    screening: ScreeningFile | None = None  # only where the audit asked for one


# What an audit measures beyond its coupling, stored by name (schema 4): the name in stats.json's `measurements`
# says which block it holds, so a new measurement is its block here and its function in measures.MEASUREMENTS or
# audited.RUN_MEASUREMENTS; nothing else of the file or the result changes. In the order stats.json writes them.
MEASURED: dict[str, type[Block]] = {
    "double_count": DoubleCount,  # the rubric's weighted aggregate: weights, share, by_source
    "bias": Bias,  # judge bias: each criterion's sensitivity to each nuisance attribute (stats/bias.py)
    "halo": Halo,  # joint calls' added coupling over per-criterion calls on the same probes (stats/halo.py)
    "joint": JointCalls,  # a joint judge's reading (the rubric's coupling or as deployed), the claims its halo demoted
    "repeats": Repeats,  # the same verdicts asked again: the judge's repeat agreement (stats/repeats.py)
    "wording": Wording,  # the same probes under each paraphrase of the judge's template (stats/wording.py)
    "thinking": Drift,  # a thinking judge against itself answering at once on the same probes (stats/drift.py)
    "order": OrderEffects,  # a joint judge's scores by the place it shows each criterion at (stats/order.py)
    "pairwise": Pairwise,  # the verifier asked pairwise about the probes' up/down pairs (stats/pairwise.py)
    "item_pairs": ItemPairs,  # the pairwise judge on a per-prompt rubric's items' pairs (stats/item_pairs.py)
    "reward": RewardProfile,  # a reward model's sensitivity to each criterion's steer (stats/reward.py)
    "jury": JuryBlock,  # a jury against its jurors, and their agreement (stats/jurors.py)
    "labels": LabelsBlock,  # agreement with the team's human labels, per judge and criterion (stats/raters.py)
    "attacks": Attacks,  # how far each attack moves the judge's verdicts over its base probe's (stats/attacks.py)
    "pairwise_attacks": PairAttacks,  # how far each attack moves the pairwise judge to the attacked response
}
NAMED = {kind: name for name, kind in MEASURED.items()}  # each block type is one measurement's

# `measurements`: one key per measurement the audit made, its block read strictly as the type its name says.
Measurements = create_model(  # type: ignore[call-overload]
    "Measurements", __base__=Block, **{name: (kind | None, None) for name, kind in MEASURED.items()}
)


class StatsFile(Block):
    schema_version: int
    generator: str
    verifier: str
    criteria: list[str]
    tasks: list[str]
    tau: float
    bootstrap: Resampling
    probes: ProbeCounts
    unscored: Unscored
    warnings: list[str]
    self_effect: dict[str, Num]
    self_effect_ci: dict[str, Interval] | None
    reliable: dict[str, bool]
    self_effect_by_task: Matrix
    leakage: Matrix
    leakage_ci: dict[str, dict[str, Interval]] | None
    leakage_sd: Matrix
    leakage_by_task: dict[str, Matrix]
    pairs: list[PairFile]
    global_: GlobalFile = Field(alias="global")
    flags: FlagsFile
    baselines: Baselines
    agreement: ReferenceAgreement | None = None
    budget: list[BudgetRow] | None = None
    adaptive: AdaptiveRecord | None = None
    leakage_definition: LeakageDefinition = "ratio_of_means"  # the default is left unwritten
    rubric: str | None  # written even when null
    calibration: Calibration | None
    family: FamilyFile | None = None
    scales: Scales | None = None
    per_prompt: PerPrompt | None = None
    measurements: Measurements  # written even when empty


@dataclass(frozen=True)
class Gate:
    """A criterion that fails the reliability gate, and why (App. C)."""

    criterion: str
    self_effect: float | None
    cause: str  # below_tau, negative, unscored
    reason: str
    evidence: str | None = None  # confirmed: the family interval lies below tau; possible: it does not


@dataclass(frozen=True)
class AuditResult:
    """One cell's audit, complete when constructed: a block added later is a new result
    (`dataclasses.replace`), never an assignment."""

    generator: str
    verifier: str
    criteria: list[str]
    tasks: list[str]
    tau: float
    bootstrap: Resampling
    probes: ProbeCounts
    unscored: Unscored
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
    baselines: Baselines
    agreement: ReferenceAgreement | None = None  # against the human reference
    budget: list[BudgetRow] | None = None
    rubric: str | None = None
    calibration: Calibration | None = None
    adaptive: AdaptiveRecord | None = None  # an adaptive audit's waves and the decisions that settled
    # the simultaneous intervals that confirm flags: {level, method, cells, critical, self_effect {c: [lo, hi]},
    # leakage, sym, asym {a: {b: [lo, hi]}}} (stats/intervals.Family)
    family: dict[str, Any] | None = None
    gate_evidence: dict[str, str] | None = None  # criterion -> confirmed / possible: its gate decision, either way
    # each criterion's scale and the footing the effects are on: {footing, criteria {c: '0-4'}}
    scales: Scales | None = None
    # a per-prompt rubric's items: gate, sign errors, redundant pairs, tag matrix, double counting (stats/per_prompt.py)
    per_prompt: PerPrompt | None = None
    # what the audit measured beyond its coupling, by name (MEASURED): the halo check, repeats, a jury, ...
    measurements: dict[str, Block] = field(default_factory=dict)
    # how a leakage is taken over tasks: the ratio of means, or the paper's eq. 5 (stats/coupling.py)
    leakage_definition: LeakageDefinition = "ratio_of_means"
    schema_version: int = SCHEMA_VERSION

    # ---- JSON -------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """stats.json: each StatsFile field in its order, a block dumped as its producer set it; an optional field
        at its default is left out."""
        made = self._made_for_file()
        out: dict[str, Any] = {}
        for key, spec in StatsFile.model_fields.items():
            value = made[key] if key in made else getattr(self, key)
            if spec.is_required() or value != spec.default:
                out[spec.alias or key] = _stored(value)
        return out

    def _made_for_file(self) -> dict[str, Any]:
        """The fields stats.json holds in another shape than the result (frames as nested objects)."""
        crit = self.criteria
        return {
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
            "global_": {
                **{k: json_number(v) for k, v in self.global_.items()},
                "ci": None if self.global_ci is None else {k: _pair(*v) for k, v in self.global_ci.items()},
            },
            "flags": {
                "thresholds": self.thresholds,
                "unreliable": [vars(g) for g in self.unreliable],
                **({} if self.gate_evidence is None else {"gates": self.gate_evidence}),
            },
            "measurements": Measurements(**self.measurements),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], where: object = "stats") -> AuditResult:
        data = upgraded(data)
        version = data.get("schema_version") if isinstance(data, dict) else None
        rewrite = "re-run `radar audit` or `radar stats --json` to rewrite it"
        stored = _validated(StatsFile, data, version, where, rewrite)
        try:
            return cls._from_stored(stored)
        except KeyError as exc:  # a criterion or task the file names but does not fill in
            raise InputError(where, f"is not a complete RADAR stats file (no entry for {exc}); {rewrite}") from None

    @classmethod
    def _from_stored(cls, d: StatsFile) -> AuditResult:
        crit = d.criteria

        def frame(m: Matrix) -> pd.DataFrame:
            return pd.DataFrame([[_nan(m[a][b]) for b in crit] for a in crit], index=crit, columns=crit, dtype=float)

        pairs = pd.DataFrame(
            [
                {
                    **{k: _nan(v) if k in NUMBERS else v for k, v in p.model_dump(exclude={"ci"}).items()},
                    "sym_ci": None if p.ci is None else _floats(p.ci.sym),
                    "asym_ci": None if p.ci is None else _floats(p.ci.asym),
                }
                for p in d.pairs
            ],
            columns=PAIR_COLUMNS,
        )
        ci, lci = d.self_effect_ci, d.leakage_ci
        return cls(
            **{key: getattr(d, key) for key in AS_STORED},
            self_effect=pd.Series({c: _nan(d.self_effect[c]) for c in crit}, dtype=float),
            self_effect_ci=None
            if ci is None
            else pd.DataFrame([_floats(ci[c]) for c in crit], index=crit, columns=["low", "high"]),
            reliable=pd.Series({c: d.reliable[c] for c in crit}, dtype=bool),
            self_effect_by_task=pd.DataFrame(
                [[_nan(d.self_effect_by_task[t][c]) for c in crit] for t in d.tasks],
                index=d.tasks,
                columns=crit,
                dtype=float,
            ),
            leakage=frame(d.leakage),
            leakage_ci=None
            if lci is None
            else tuple(frame({a: {b: lci[a][b][end] for b in crit} for a in crit}) for end in (0, 1)),
            leakage_sd=frame(d.leakage_sd),
            leakage_by_task={t: frame(m) for t, m in d.leakage_by_task.items()},
            pairs=pairs,
            global_={k: _nan(getattr(d.global_, k)) for k in ("positive", "tension", "max_coupling")},
            global_ci=None if d.global_.ci is None else {k: _floats(v) for k, v in d.global_.ci.items()},
            thresholds=d.flags.thresholds,
            gate_evidence=None if d.flags.gates is None else {c: d.flags.gates[c] for c in crit},
            unreliable=[Gate(**g.model_dump()) for g in d.flags.unreliable],
            # as written: a block the audit did not ask for (screening) stays absent
            family=None if d.family is None else d.family.model_dump(mode="json", exclude_unset=True),
            measurements={
                name: getattr(d.measurements, name) for name in MEASURED if name in d.measurements.model_fields_set
            },
        )

    # ---- views ------------------------------------------------------------------------------
    def measured(self, kind: type[B]) -> B | None:
        """The block of the measurement that makes `kind` (MEASURED), where the audit made it."""
        block = self.measurements.get(NAMED[kind])
        return block if isinstance(block, kind) else None

    def adding(self, **found: Any) -> AuditResult:
        """This result with `found` added: a measurement's block (MEASURED) by its name, any other field as itself."""
        made = {k: v for k, v in found.items() if k in MEASURED}
        rest = {k: v for k, v in found.items() if k not in MEASURED}
        return replace(self, measurements={**self.measurements, **made}, **rest)

    @property
    def bias_rows(self) -> list[BiasRow]:
        """Judge bias, one row per (attribute, criterion); none where no nuisance attribute was measured."""
        return b.rows if (b := self.measured(Bias)) is not None else []

    def pair(self, a: str, b: str) -> dict[str, Any]:
        """One pair's row, whichever order its criteria are named in."""
        rows = self.pairs[
            ((self.pairs["a"] == a) & (self.pairs["b"] == b)) | ((self.pairs["a"] == b) & (self.pairs["b"] == a))
        ]
        return rows.iloc[0].to_dict()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AuditResult) and self.to_json() == other.to_json()


def upgraded(data: Any) -> Any:
    """A stats.json an earlier release wrote, as this one writes it: schema 2 named judge bias `nuisance`, schema 3
    kept each measurement at the top level. Anything else is returned as it is (and checked as it is)."""
    if not isinstance(data, dict) or data.get("schema_version") not in (2, 3):
        return data
    if data.get("kind") == KIND:  # a pairwise-only audit: its shape is schema 3's
        return data | {"schema_version": SCHEMA_VERSION}
    data = {("bias" if k == "nuisance" and data["schema_version"] == 2 else k): v for k, v in data.items()}
    measured = {k: v for k, v in data.items() if k in MEASURED}
    if isinstance(measured.get("bias"), dict):  # judge bias did not say its band's level: every audit's was 95%
        measured["bias"] = {"threshold": measured["bias"].get("threshold"), "level": LEVEL} | measured["bias"]
    kept = {k: v for k, v in data.items() if k not in MEASURED}
    return kept | {"schema_version": SCHEMA_VERSION, "measurements": measured}


def read_stats(data: Any, where: object = "stats") -> AuditResult | PairwiseAudit:
    """A stats.json of either kind: a judge's audit, or a judge asked only pairs (`kind: pairwise`)."""
    data = upgraded(data)
    if isinstance(data, dict) and data.get("kind") == KIND:
        return _validated(PairwiseAudit, data, data.get("schema_version"), where, "re-run `radar audit` to rewrite it")
    return AuditResult.from_json(data, where)


Stored = TypeVar("Stored", StatsFile, PairwiseAudit)


def _validated(model: type[Stored], data: dict[str, Any], version: object, where: object, rewrite: str) -> Stored:
    """A stats file of this schema read strictly as `model`: another version or a file radar could not have
    written is one line saying what to do."""
    if version != SCHEMA_VERSION:
        newer = isinstance(version, int) and version > SCHEMA_VERSION
        fix = "upgrade radar_local" if newer else rewrite
        raise InputError(where, f"stats schema_version {version!r}, this radar_local reads {SCHEMA_VERSION}; {fix}")
    try:
        return model.model_validate_json(json.dumps(data), strict=True)
    except (ValidationError, ValueError) as exc:  # ValueError: a number beyond JSON's (10**400)
        why = _first_error(exc) if isinstance(exc, ValidationError) else str(exc)
        kind = "pairwise stats" if model is PairwiseAudit else "stats"
        raise InputError(where, f"is not a complete RADAR {kind} file ({why}); {rewrite}") from None


# The fields an AuditResult holds as stats.json does (the same name and type): read and written as they are.
AS_STORED = [k for k in StatsFile.model_fields if AuditResult.__annotations__.get(k) == StatsFile.__annotations__[k]]


def _stored(value: Any) -> Any:
    """A value as stats.json holds it: a block as its producer set it, a list of blocks each so."""
    if isinstance(value, Block):
        return value.stored()
    if isinstance(value, list):
        return [_stored(v) for v in value]
    return value


def _nan(x: float | None) -> float:
    """A stored number: null is NaN."""
    return np.nan if x is None else float(x)


def _floats(v: Interval) -> tuple[float, float]:
    return (_nan(v[0]), _nan(v[1]))


def _pair(lo: object, hi: object) -> list[float | None]:
    return [json_number(lo), json_number(hi)]


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    return f"key '{'.'.join(str(p) for p in err['loc'])}': {err['msg']}"


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
