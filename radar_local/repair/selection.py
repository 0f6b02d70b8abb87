"""Selection: each candidate's summary against the original's, better only beyond the intervals, the
Pareto front over the objectives, and the repair's record (repair.json)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from radar_local.compare import sym_evidence
from radar_local.config import AuditConfig
from radar_local.repair.edits import Edit
from radar_local.repair.findings import Finding
from radar_local.rubric import Rubric
from radar_local.rundir import RunDir
from radar_local.stats.bias import Bias
from radar_local.stats.correlation import pearson
from radar_local.stats.result import AuditResult
from radar_local.stats.stored import Interval


@dataclass
class Candidate:
    round: int
    index: int
    raw: str
    edit: Edit | None = None
    rubric: Rubric | None = None
    error: str | None = None  # why the edit was not audited
    run_dir: Path | None = None
    result: AuditResult | None = None
    reuse: dict = field(default_factory=dict)
    summary: dict | None = None
    improved: bool = False
    why: str = ""
    pareto: bool = False

    @property
    def name(self) -> str:
        return f"round {self.round}, candidate {self.index}"


def summarize(result: AuditResult, intended: set[frozenset], reference: dict | None) -> dict:
    """What selection compares: the worst reliable non-intended pair, GlobalPos, the gate, human
    agreement over the pairs a reference covers, and ARTS-Hybrid's calibration terms."""
    pairs = [
        p for p in result.pairs.to_dict("records") if p["reliable"] and frozenset((p["a"], p["b"])) not in intended
    ]
    worst = max(pairs, key=lambda p: p["sym"], default=None)
    interval = lambda value, ci: (value, value) if not ci or ci[0] != ci[0] else (ci[0], ci[1])
    se_ci = result.self_effect_ci
    disc = [
        d.discrimination
        for per in (result.calibration.verifiers if result.calibration else {}).values()
        for d in per.values()
        if d.discrimination is not None
    ]
    red = [
        abs(v)
        for per in (result.calibration.redundancy if result.calibration else {}).values()
        for v in per.values()
        if v is not None
    ]
    # the worst flagged judge bias; a measured audit with none flagged has 0, an unmeasured one None
    biases = [r for r in result.bias_rows if r.flag == "biased" and r.sensitivity is not None]
    bias = max(biases, key=lambda r: abs(r.sensitivity or 0.0), default=None)
    measured = result.measured(Bias) is not None
    human = None
    if reference:
        shared = [
            (p["sym"], reference[frozenset((p["a"], p["b"]))])
            for p in pairs
            if frozenset((p["a"], p["b"])) in reference
        ]
        if shared:
            human = pearson(*map(np.array, zip(*shared)))
    return {
        "criteria": len(result.criteria),
        "reliable": int(result.reliable.sum()),
        "reliable_beyond_ci": all(
            (se_ci.loc[c, "low"] if se_ci is not None else result.self_effect[c]) >= result.tau for c in result.criteria
        ),
        "worst_pair": None if worst is None else [worst["a"], worst["b"]],
        "worst_sym": None if worst is None else worst["sym"],
        "worst_sym_ci": None if worst is None else list(interval(worst["sym"], worst["sym_ci"])),
        "global_pos": result.global_["positive"],
        "global_pos_ci": list(interval(result.global_["positive"], (result.global_ci or {}).get("positive"))),
        "discrimination": sum(disc) / len(disc) if disc else None,
        "redundancy": sum(red) / len(red) if red else None,
        "human_r": human,
        "worst_bias": (0.0 if measured else None) if bias is None else abs(bias.sensitivity or 0.0),
        "worst_bias_ci": ([0.0, 0.0] if measured else None)
        if bias is None
        else _magnitude(bias.sensitivity or 0.0, bias.ci),
    }


def _magnitude(value: float, ci: Interval | None) -> list[float]:
    """The interval of |value| from value's own (a negative sensitivity's, mirrored; an open end, the value)."""
    low, high = (value, value) if not ci else (value if e is None else e for e in ci)
    return [low, high] if value >= 0 else [-high, -low]


def _below(a: list | None, b: list | None) -> bool:
    """Interval a lies entirely below interval b (a change inside the intervals is no change)."""
    return a is not None and b is not None and a[1] < b[0]


def judge(base: dict, cand: dict) -> tuple[bool, str]:
    """Improved beyond the intervals, or why not. Every criterion must pass the gate; coupling must fall
    with disjoint intervals (the worst reliable non-intended pair's Sym, or GlobalPos) and neither may
    rise beyond them; where the original failed the gate, every criterion must now pass it beyond its
    interval instead; agreement with the human reference must not fall."""
    if cand["reliable"] < cand["criteria"]:
        return False, f"{cand['criteria'] - cand['reliable']} of {cand['criteria']} criteria fail the reliability gate"
    if base["human_r"] is not None and cand["human_r"] is not None and cand["human_r"] < base["human_r"]:
        return False, f"agreement with the human reference fell ({base['human_r']:+.2f} -> {cand['human_r']:+.2f})"
    none = [0.0, 0.0]  # no reliable non-intended pair: no coupling to count
    worst, base_worst = cand["worst_sym_ci"] or none, base["worst_sym_ci"]
    if _below(base_worst, worst) or _below(base["global_pos_ci"], cand["global_pos_ci"]):
        return False, "coupling rose beyond its interval"
    if _below(base.get("worst_bias_ci"), cand.get("worst_bias_ci")):
        return False, "judge bias rose beyond its interval"
    if base["reliable"] < base["criteria"]:
        if not cand["reliable_beyond_ci"]:
            return False, "every criterion passes the gate, but not beyond its interval"
        return True, "every criterion now passes the gate beyond its interval"
    sym = f"max Sym {base['worst_sym'] or 0.0:+.2f} -> {cand['worst_sym'] or 0.0:+.2f}"
    pos = f"GlobalPos {base['global_pos'] or 0.0:+.2f} -> {cand['global_pos'] or 0.0:+.2f}"
    if _below(worst, base_worst):
        return True, f"the worst coupling fell beyond its interval ({sym}, {pos})"
    if _below(cand["global_pos_ci"], base["global_pos_ci"]):
        return True, f"overall coupling fell beyond its interval ({pos}, {sym})"
    if _below(cand.get("worst_bias_ci"), base.get("worst_bias_ci")):
        return (
            True,
            f"the worst judge bias fell beyond its interval ({base['worst_bias']:.2f} -> {cand['worst_bias']:.2f})",
        )
    return False, "coupling did not fall beyond its interval"


def objectives(s: dict) -> tuple[float, ...]:
    """Larger is better in each: dimensions measured reliably, less coupling, discrimination, less redundancy."""
    none = lambda x, default: default if x is None else x
    return (
        s["reliable"],
        -none(s["worst_sym"], 0.0),
        -none(s["global_pos"], 0.0),
        none(s["discrimination"], 0.0),
        -none(s["redundancy"], 0.0),
        -none(s.get("worst_bias"), 0.0),
    )


def pareto(candidates: list[Candidate]) -> list[Candidate]:
    """The improved candidates no other improved candidate beats on every objective."""
    pool = [c for c in candidates if c.improved]
    scores = {id(c): objectives(c.summary or {}) for c in pool}  # improved: audited, summarized
    dominated = lambda a, b: all(x <= y for x, y in zip(a, b)) and a != b
    front = [c for c in pool if not any(dominated(scores[id(c)], scores[id(o)]) for o in pool)]
    for c in front:
        c.pareto = True
    return front


# ---- the loop ------------------------------------------------------------------------------------
@dataclass
class Repair:
    out: Path
    original: RunDir
    result: AuditResult
    findings: list[Finding]
    left_alone: list[str]
    candidates: list[Candidate]
    final: Candidate | None  # None: no candidate improved on the original
    summary: dict
    fail_on_sym: float | None = None
    sym_confirmed: float | None = None  # the evidence policy (radar_local.compare.sym_evidence)

    @property
    def repaired_rubric(self) -> Path | None:
        return self.out / "rubric.repaired.yaml" if self.final is not None else None

    def worst_sym(self) -> float | None:
        return ((self.final.summary if self.final else None) or self.summary)["worst_sym"]

    def evidence(self) -> dict | None:
        """The evidence policy on the repaired rubric's audit (the original's when nothing improved on it):
        intended pairs are left out, as for --fail-on-sym."""
        if self.sym_confirmed is None:
            return None
        result = self.final.result if self.final is not None and self.final.result is not None else self.result
        intended = {frozenset(p) for p in self.original.config.intended}
        return sym_evidence(result, self.sym_confirmed, self.out, skip=intended)

    def fails(self) -> bool:
        """A reliable non-intended pair at or above --fail-on-sym remains (stored Sym is the exact value
        rounded once; compared with the policy's float, the exact order holds, as in `radar compare`)."""
        worst = self.worst_sym()
        return self.fail_on_sym is not None and worst is not None and worst >= self.fail_on_sym


def candidate_config(config: AuditConfig, rubric_path: Path, tasks) -> AuditConfig:
    """The original config on the candidate rubric: same tasks, seeds, models and settings."""
    return config.model_copy(
        update={"rubric": str(rubric_path.resolve()), "tasks": list(tasks), "human": None, "out": None}
    )


def repair_json(rep: Repair) -> dict:
    return {
        "original": str(rep.original.root),
        "findings": [vars(f) | {"criteria": list(f.criteria)} for f in rep.findings],
        "intended_left_alone": rep.left_alone,
        "original_summary": rep.summary,
        "candidates": [
            {
                "round": c.round,
                "index": c.index,
                "edit": c.edit.model_dump() if c.edit else None,
                "error": c.error,
                "raw": c.raw if c.edit is None else None,
                "run_dir": str(c.run_dir) if c.run_dir else None,
                "reuse": c.reuse,
                "summary": c.summary,
                "improved": c.improved,
                "why": c.why,
                "pareto": c.pareto,
            }
            for c in rep.candidates
        ],
        "selected": None if rep.final is None else {"round": rep.final.round, "index": rep.final.index},
        "repaired_rubric": str(rep.repaired_rubric) if rep.repaired_rubric else None,
        "fail_on_sym": rep.fail_on_sym,
        "fails": rep.fails(),
        "evidence": rep.evidence(),
    }
