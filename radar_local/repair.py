"""Rubric repair: diagnose an audit, let an editor model propose edits (constrained JSON), re-audit each
candidate rubric on the same tasks and seeds as an ordinary Run, select by a stated objective that
respects the intervals, and iterate from the best. Probes and scores are keyed by the text of the
criterion they depend on, so a candidate re-does only what its edit touches (`Run.adopt`).

The paper stops at "merge, rewrite, split or drop strongly coupled axes" (seed 000, §G) and warns
that coupling may be intended (§1): `intended` pairs are left alone, and no repaired rubric is
written unless a candidate beats the original beyond its confidence intervals.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from radar_local.config import AuditConfig, ModelSpec
from radar_local.errors import InputError
from radar_local.inputs import yaml_text
from radar_local.plan import cell_seed
from radar_local.prompts import Messages
from radar_local.report.examples import pair_examples
from radar_local.rubric import Criterion, Rubric
from radar_local.run import EnginePool, Run
from radar_local.scoring import SAFE_CHAR
from radar_local.stats.correlation import pearson
from radar_local.stats.flags import CLUSTER, DIRECTIONAL, TRADEOFF
from radar_local.stats.result import AuditResult
from radar_local.store import make_folder, write_atomic

ACTIONS = ("rewrite", "merge", "split", "drop")
# action -> (criteria it names, new criteria it writes)
SHAPE = {"rewrite": (1, 1), "merge": (2, 1), "split": (1, 2), "drop": (1, 0)}
LIMITS = {"id": 30, "label": 40, "description": 200, "end": 30, "keeps": 200, "rationale": 300}
EDITOR_TEMPERATURE = 0.9  # candidates differ by their seeds, like probes


# ---- 1. diagnose ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Finding:
    kind: str  # cluster, directional, tradeoff, unreadable
    criteria: tuple[str, ...]
    text: str


def _ci(ci) -> str:
    return "" if not ci or ci[0] != ci[0] else f" [{ci[0]:+.2f}, {ci[1]:+.2f}]"


def diagnose(result: AuditResult, intended: set[frozenset]) -> tuple[list[Finding], list[str]]:
    """Findings an edit may address, and the flagged pairs left alone because they are intended."""
    findings = [Finding("unreadable", (g.criterion,), f"{g.criterion}: {g.reason}; this verifier cannot observe the "
                                                      "description as written") for g in result.unreliable]
    left_alone = []
    for p in result.pairs.to_dict("records"):
        flags = [f for f in p["flags"] if f in (CLUSTER, DIRECTIONAL, TRADEOFF)]
        if not flags:
            continue
        pair = f"{p['a']} / {p['b']}"
        if frozenset((p["a"], p["b"])) in intended:
            left_alone.append(f"{pair} ({', '.join(flags)}): intended, left alone")
            continue
        moves = (f"leakage {p['a']} -> {p['b']} {p['leak_ab']:+.2f}, {p['b']} -> {p['a']} {p['leak_ba']:+.2f}, "
                 f"Sym {p['sym']:+.2f}{_ci(p['sym_ci'])}")
        for flag in flags:
            kind = {CLUSTER: "cluster", DIRECTIONAL: "directional", TRADEOFF: "tradeoff"}[flag]
            what = {"cluster": "the two move together both ways: possible double counting",
                    "directional": f"{p['upstream']} drives {p['downstream']}",
                    "tradeoff": "raising one lowers the other"}[kind]
            findings.append(Finding(kind, (p["a"], p["b"]), f"{pair}: {what} ({moves})"))
    return findings, left_alone


# ---- 2. propose ----------------------------------------------------------------------------------
class NewCriterion(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    label: str
    description: str
    kind: Literal["evaluative", "descriptive"]
    low: str
    high: str


class Edit(BaseModel):
    model_config = ConfigDict(extra="forbid")
    action: Literal["rewrite", "merge", "split", "drop"]
    criteria: list[str]
    new: list[NewCriterion]
    keeps: str = Field(description="merge, drop: which dimension of the original the rubric keeps")
    rationale: str


@dataclass(frozen=True)
class EditFormat:
    """The editor's answer as a strict regex: each action with exactly its shape, existing ids only."""

    ids: tuple[str, ...]

    @property
    def regex(self) -> str:
        text = lambda n, least=1: SAFE_CHAR + "{%d,%d}" % (least, n)  # noqa: E731
        ids = "(" + "|".join(self.ids) + ")"
        crit = (r'\{"id": "[a-z][a-z0-9_]{0,%d}", "label": "' % (LIMITS["id"] - 1) + text(LIMITS["label"])
                + r'", "description": "' + text(LIMITS["description"])
                + r'", "kind": "(evaluative", "low": "", "high": "|descriptive", "low": "' + text(LIMITS["end"])
                + r'", "high": "' + text(LIMITS["end"]) + r')"\}')
        named = {1: r'\["' + ids + r'"\]', 2: r'\["' + ids + r'", "' + ids + r'"\]'}
        written = {0: r"\[\]", 1: r"\[" + crit + r"\]", 2: r"\[" + crit + ", " + crit + r"\]"}
        bodies = [f'"{a}", "criteria": {named[n]}, "new": {written[m]}' for a, (n, m) in SHAPE.items()]
        return (r'\{"action": (' + "|".join(bodies) + r'), "keeps": "' + text(LIMITS["keeps"], 0)
                + r'", "rationale": "' + text(LIMITS["rationale"]) + r'"\}')

    @property
    def max_tokens(self) -> int:
        """The longest admissible answer in characters, hence an upper bound in tokens."""
        new = {"id": "x" * LIMITS["id"], "label": "x" * LIMITS["label"], "description": "x" * LIMITS["description"],
               "kind": "descriptive", "low": "x" * LIMITS["end"], "high": "x" * LIMITS["end"]}
        longest = max(self.ids, key=len)
        return len(json.dumps({"action": "rewrite", "criteria": [longest, longest], "new": [new, new],
                               "keeps": "x" * LIMITS["keeps"], "rationale": "x" * LIMITS["rationale"]}))

    def json_schema(self) -> dict:
        string = {"type": "string", "minLength": 1}
        crit = {"type": "object", "additionalProperties": False, "required": list(NewCriterion.model_fields),
                "properties": {"id": {"type": "string", "pattern": "^[a-z][a-z0-9_]*$"}, "label": string,
                               "description": string, "kind": {"enum": ["evaluative", "descriptive"]},
                               "low": {"type": "string"}, "high": {"type": "string"}}}
        return {"type": "object", "additionalProperties": False, "required": list(Edit.model_fields),
                "properties": {"action": {"enum": list(ACTIONS)},
                               "criteria": {"type": "array", "items": {"enum": list(self.ids)}, "minItems": 1, "maxItems": 2},
                               "new": {"type": "array", "items": crit, "maxItems": 2},
                               "keeps": {"type": "string"}, "rationale": string}}


EDITOR_SYSTEM = ("You edit evaluation rubrics so that every criterion measures one thing a judge can observe and no "
                 "two criteria move together. Answer with one edit as JSON.")


def editor_messages(rubric: Rubric, result: AuditResult, findings: list[Finding], evidence: list[str],
                    left_alone: list[str], k: int, count: int) -> Messages:
    lines = [f"Rubric '{rubric.name}':"]
    lines += [f"- {c.id} ({c.label}, {c.kind}): {c.description}" for c in rubric.criteria]
    lines += ["", f"An audit (probes steered up and down on each criterion, every probe scored on every criterion by "
                  f"the verifier; reliability gate tau = {result.tau}) found:"]
    lines += [f"- {f.kind}: {f.text}" for f in findings]
    if evidence:
        lines += ["", "Evidence:"] + [f"- {e}" for e in evidence]
    if left_alone:
        lines += ["", "Intended couplings (do not edit for these):"] + [f"- {x}" for x in left_alone]
    lines += ["", "Actions: rewrite one criterion (new wording that the verifier can observe and that does not share "
                  "what another criterion measures); merge two criteria into one (say in `keeps` which dimension the "
                  "merged criterion keeps); split one criterion into two; drop one criterion (say in `keeps` which "
                  "remaining criterion covers what it measured).",
              f"Candidate {k} of {count}: propose one edit that addresses the findings; where you can, propose a "
              "different edit from the other candidates."]
    return [{"role": "system", "content": EDITOR_SYSTEM}, {"role": "user", "content": "\n".join(lines)}]


def evidence_lines(run: Run, result: AuditResult, findings: list[Finding], max_chars: int = 300) -> list[str]:
    """For each coupled pair: the probe steered up on one criterion that the verifier scored highest
    on the other, with the verifier's rationale for that score."""
    out = []
    for f in findings:
        if len(f.criteria) != 2:
            continue
        for a, b in (f.criteria, f.criteria[::-1]):
            shown = pair_examples(result, run.store, a, b, max_chars)
            up = next((p for p in shown if p["direction"] == "+"), None)
            if up is not None:
                why = up["rationale"].get(b)
                out.append(f"a probe steered up on {a} scored {up['scores'].get(b)} on {b}: \"{up['text']}\""
                           + (f"; the verifier's rationale for {b}: \"{why}\"" if why else ""))
    return out


def apply_edit(rubric: Rubric, edit: Edit) -> Rubric:
    """The candidate rubric, validated like any rubric; ValueError says why an edit cannot apply."""
    named, written = SHAPE[edit.action]
    if len(edit.criteria) != named or len(edit.new) != written or len(set(edit.criteria)) != named:
        raise ValueError(f"{edit.action} names {named} criteria and writes {written}")
    unknown = [c for c in edit.criteria if c not in rubric.ids]
    if unknown:
        raise ValueError(f"unknown criterion {unknown[0]}")
    if edit.action in ("merge", "drop") and not edit.keeps.strip():
        raise ValueError(f"a {edit.action} must say which dimension of the original it keeps")
    try:
        new = [Criterion(**{**n.model_dump(), "low": n.low or None, "high": n.high or None}) for n in edit.new]
    except ValidationError as exc:
        raise ValueError(exc.errors()[0]["msg"]) from None
    first = rubric.ids.index(edit.criteria[0])
    kept = [c for c in rubric.criteria if c.id not in edit.criteria]
    criteria = kept[:first] + new + kept[first:] if first <= len(kept) else kept + new
    weights = None
    if rubric.weights:
        removed = [rubric.weights.get(c, 1.0) for c in edit.criteria]
        weights = {c.id: rubric.weights.get(c.id, 1.0) for c in kept} | {n.id: sum(removed) / max(len(new), 1) for n in new}
    try:
        candidate = Rubric(id=rubric.id, name=rubric.name, criteria=tuple(criteria), weights=weights)
    except ValidationError as exc:
        raise ValueError(exc.errors()[0]["msg"].removeprefix("Value error, ")) from None
    if candidate == rubric:
        raise ValueError("the edit changes nothing")
    return candidate


# ---- 3. re-audit, 4. select ----------------------------------------------------------------------
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
    pairs = [p for p in result.pairs.to_dict("records") if p["reliable"] and frozenset((p["a"], p["b"])) not in intended]
    worst = max(pairs, key=lambda p: p["sym"], default=None)
    interval = lambda value, ci: (value, value) if not ci or ci[0] != ci[0] else (ci[0], ci[1])  # noqa: E731
    se_ci = result.self_effect_ci
    disc = [d["discrimination"] for per in (result.calibration or {}).get("verifiers", {}).values() for d in per.values()
            if d["discrimination"] is not None]
    red = [abs(v) for per in (result.calibration or {}).get("redundancy", {}).values() for v in per.values() if v is not None]
    human = None
    if reference:
        shared = [(p["sym"], reference[frozenset((p["a"], p["b"]))]) for p in pairs if frozenset((p["a"], p["b"])) in reference]
        if shared:
            human = pearson(*map(np.array, zip(*shared)))
    return {
        "criteria": len(result.criteria), "reliable": int(result.reliable.sum()),
        "reliable_beyond_ci": all((se_ci.loc[c, "low"] if se_ci is not None else result.self_effect[c]) >= result.tau
                                  for c in result.criteria),
        "worst_pair": None if worst is None else [worst["a"], worst["b"]],
        "worst_sym": None if worst is None else worst["sym"],
        "worst_sym_ci": None if worst is None else list(interval(worst["sym"], worst["sym_ci"])),
        "global_pos": result.global_["positive"],
        "global_pos_ci": list(interval(result.global_["positive"], (result.global_ci or {}).get("positive"))),
        "discrimination": sum(disc) / len(disc) if disc else None,
        "redundancy": sum(red) / len(red) if red else None,
        "human_r": human,
    }


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
    return False, "coupling did not fall beyond its interval"


def _objectives(s: dict) -> tuple[float, ...]:
    """Larger is better in each: dimensions measured reliably, less coupling, discrimination, less redundancy."""
    none = lambda x, default: default if x is None else x  # noqa: E731
    return (s["reliable"], -none(s["worst_sym"], 0.0), -none(s["global_pos"], 0.0), none(s["discrimination"], 0.0),
            -none(s["redundancy"], 0.0))


def pareto(candidates: list[Candidate]) -> list[Candidate]:
    """The improved candidates no other improved candidate beats on every objective."""
    pool = [c for c in candidates if c.improved]
    scores = {id(c): _objectives(c.summary) for c in pool}
    dominated = lambda a, b: all(x <= y for x, y in zip(a, b)) and a != b  # noqa: E731
    front = [c for c in pool if not any(dominated(scores[id(c)], scores[id(o)]) for o in pool)]
    for c in front:
        c.pareto = True
    return front


# ---- the loop ------------------------------------------------------------------------------------
@dataclass
class Repair:
    out: Path
    original: Run
    result: AuditResult
    findings: list[Finding]
    left_alone: list[str]
    candidates: list[Candidate]
    final: Candidate | None  # None: no candidate improved on the original
    summary: dict
    fail_on_sym: float | None = None

    @property
    def repaired_rubric(self) -> Path | None:
        return self.out / "rubric.repaired.yaml" if self.final is not None else None

    def worst_sym(self) -> float | None:
        return (self.final.summary if self.final else self.summary)["worst_sym"]

    def fails(self) -> bool:
        """A reliable non-intended pair at or above --fail-on-sym remains (stored Sym is the exact value
        rounded once; compared with the policy's float, the exact order holds, as in `radar compare`)."""
        worst = self.worst_sym()
        return self.fail_on_sym is not None and worst is not None and worst >= self.fail_on_sym


def candidate_config(config: AuditConfig, rubric_path: Path, tasks) -> AuditConfig:
    """The original config on the candidate rubric: same tasks, seeds, models and settings."""
    return config.model_copy(update={"rubric": str(rubric_path.resolve()), "tasks": list(tasks), "human": None, "out": None})


def repair(target: str | Path, out: str | Path | None = None, *, rounds: int = 1, candidates: int = 3,
           fail_on_sym: float | None = None, pool: EnginePool | None = None, progress: bool = False) -> Repair:
    """Repair the rubric of a stored audit (a run directory) or of a config (audited first)."""
    from radar_local.run import config_from

    if rounds < 1 or candidates < 1:
        raise InputError("repair", "--rounds and --candidates must be at least 1")
    target = Path(target)
    if out is not None:
        make_folder(Path(out))  # a file in the way is refused before anything runs
    if target.is_dir():
        original = Run.open(target)
    else:
        config, folder = config_from(target)
        if config.out is None:
            raise InputError(target, "no run directory: set 'out' in the config")
        original = Run.create(config, config.out, folder, target)
    own = pool is None
    pool = pool or EnginePool(original.config.cluster)
    try:
        if not target.is_dir():
            original.audit(pool, progress)
            original.close()  # read from here on: candidates adopt its records
        config = original.config  # its intended pairs were checked against the rubric when the run was made
        intended = {frozenset(p) for p in config.intended}
        out = Path(out) if out else make_folder(original.repair_dir, own=True)
        result = original.result()
        base_summary = summarize(result, intended, original.reference)
        findings, left_alone = diagnose(result, intended)
        all_candidates: list[Candidate] = []
        current, current_run, current_result, current_summary = None, original, result, base_summary
        current_findings, current_left = findings, left_alone
        for r in range(1, rounds + 1):
            if not current_findings:
                break
            made = _propose(current_run, current_result, current_findings, current_left, config, pool, r, candidates)
            for cand in made:
                if cand.rubric is not None:
                    _reaudit(cand, current_run, config, out, pool, progress)
                    cand.summary = summarize(cand.result, intended, original.reference)
                    cand.improved, cand.why = judge(current_summary, cand.summary)
            all_candidates += made
            front = pareto(made)
            if not front:
                break
            best = max(front, key=lambda c: _objectives(c.summary))
            current, current_run, current_result, current_summary = best, Run.open(best.run_dir), best.result, best.summary
            current_findings, current_left = diagnose(best.result, intended)
        rep = Repair(out, original, result, findings, left_alone, all_candidates, current, base_summary, fail_on_sym)
        _write(rep)
        return rep
    finally:
        if own:
            pool.close()


def _propose(run: Run, result: AuditResult, findings: list[Finding], left_alone: list[str], config: AuditConfig,
             pool: EnginePool, r: int, count: int) -> list[Candidate]:
    editor: ModelSpec = config.editor or config.generator
    fmt = EditFormat(tuple(run.rubric.ids))
    evidence = evidence_lines(run, result, findings)
    prompts = [editor_messages(run.rubric, result, findings, evidence, left_alone, k, count) for k in range(1, count + 1)]
    seeds = [cell_seed(config.seed, f"repair-{r}", str(k), "edit") for k in range(1, count + 1)]
    answers = pool.get(editor).constrained(prompts, fmt=fmt, temperature=EDITOR_TEMPERATURE, seeds=seeds)
    made = []
    for k, answer in enumerate(answers, 1):
        cand = Candidate(r, k, answer.text)
        try:
            cand.edit = Edit.model_validate_json(answer.text)
            cand.rubric = apply_edit(run.rubric, cand.edit)
        except ValidationError as exc:
            cand.error = f"not an edit ({exc.errors()[0]['msg']})"
        except ValueError as exc:
            cand.error = str(exc)
        made.append(cand)
    return made


def _reaudit(cand: Candidate, parent: Run, config: AuditConfig, out: Path, pool: EnginePool, progress: bool) -> None:
    folder = out / f"round-{cand.round}"
    rubric_path = folder / f"candidate-{cand.index}.rubric.yaml"
    make_folder(folder)
    write_atomic(rubric_path, yaml_text(cand.rubric.model_dump(mode="json", exclude_none=True)))
    cand.run_dir = folder / f"candidate-{cand.index}"
    with Run.create(candidate_config(config, rubric_path, parent.tasks), cand.run_dir, folder) as run:
        cand.reuse = run.adopt(parent, config.verifier)
        cand.result = run.audit(pool, progress)


def _write(rep: Repair) -> None:
    from radar_local.report.repair import write_repair_report

    make_folder(rep.out)
    if rep.final is not None:
        write_atomic(rep.out / "rubric.repaired.yaml",
                     yaml_text(rep.final.rubric.model_dump(mode="json", exclude_none=True)))
    write_repair_report(rep)


def repair_json(rep: Repair) -> dict:
    return {
        "original": str(rep.original.root), "findings": [vars(f) | {"criteria": list(f.criteria)} for f in rep.findings],
        "intended_left_alone": rep.left_alone, "original_summary": rep.summary,
        "candidates": [{"round": c.round, "index": c.index, "edit": c.edit.model_dump() if c.edit else None,
                        "error": c.error, "raw": c.raw if c.edit is None else None,
                        "run_dir": str(c.run_dir) if c.run_dir else None, "reuse": c.reuse, "summary": c.summary,
                        "improved": c.improved, "why": c.why, "pareto": c.pareto} for c in rep.candidates],
        "selected": None if rep.final is None else {"round": rep.final.round, "index": rep.final.index},
        "repaired_rubric": str(rep.repaired_rubric) if rep.repaired_rubric else None,
        "fail_on_sym": rep.fail_on_sym, "fails": rep.fails(),
    }
