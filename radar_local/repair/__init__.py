"""Rubric repair: diagnose an audit, let an editor model propose edits (constrained JSON), re-audit each
candidate rubric on the same tasks and seeds as an ordinary Run, select by a stated objective that
respects the intervals, and iterate from the best. Probes and scores are keyed by the text of the
criterion they depend on, so a candidate re-does only what its edit touches (`Run.adopt`).

The paper stops at "merge, rewrite, split or drop strongly coupled axes" (seed 000, §G) and warns
that coupling may be intended (§1): `intended` pairs are left alone, and no repaired rubric is
written unless a candidate beats the original beyond its confidence intervals.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from radar_local.auditing import adopt, audit, config_from
from radar_local.calls import ENGINE_FAILED
from radar_local.config import AuditConfig
from radar_local.errors import InputError
from radar_local.inputs import yaml_text
from radar_local.plan import cell_seed
from radar_local.pool import EnginePool, pool_for
from radar_local.quiet import engine_output_to
from radar_local.repair.edits import Edit, EditFormat, apply_edit, editor_messages, evidence_lines
from radar_local.repair.findings import Finding, diagnose
from radar_local.repair.pages import write_repair_report
from radar_local.repair.selection import Candidate, Repair, candidate_config, judge, objectives, pareto, summarize
from radar_local.resolved import resolve, rubric_conflict
from radar_local.rubric import Rubric
from radar_local.run import Run
from radar_local.rundir import RunDir
from radar_local.specs import ModelSpec
from radar_local.stats.result import AuditResult
from radar_local.store import make_folder, write_atomic

__all__ = ["Candidate", "Edit", "EditFormat", "Finding", "Repair", "apply_edit", "diagnose", "repair"]
EDITOR_TEMPERATURE = 0.9  # candidates differ by their seeds, like probes


def repair(
    target: str | Path,
    out: str | Path | None = None,
    *,
    rounds: int = 1,
    candidates: int = 3,
    fail_on_sym: float | None = None,
    sym_confirmed: float | None = None,
    pool: EnginePool | None = None,
    progress: bool = False,
    engine_log: bool = False,
) -> Repair:
    """Repair the rubric of a stored audit (a run directory) or of a config (audited first). `engine_log`:
    the engines' own output goes to the audited run's engine.log (as `radar audit` sends it), not the console."""
    if rounds < 1 or candidates < 1:
        raise InputError("repair", "--rounds and --candidates must be at least 1")
    target = Path(target)
    if out is not None:
        make_folder(Path(out))  # a file in the way is refused before anything runs
    original: RunDir
    if target.is_dir():
        original = RunDir.open(target)
    else:
        config, folder = config_from(target)
        if config.out is None:
            raise InputError(target, "no run directory: set 'out' in the config")
        original = Run.create(resolve(config, folder, target), config.out)
    if (pairs := original.config.pairwise) is not None and pairs.only:
        raise InputError(target, "asks its judge only pairs (pairwise.only): a repair reads the pointwise leakage; "
                         "audit the judge pointwise to repair its rubric")  # fmt: skip
    with pool_for(pool, original.config.cluster) as pool, engine_output_to(original.engine_log, not engine_log):
        return _repair(original, out, rounds, candidates, fail_on_sym, pool, progress, sym_confirmed)


def _repair(
    original: RunDir,
    out: str | Path | None,
    rounds: int,
    candidates: int,
    fail_on_sym: float | None,
    pool: EnginePool,
    progress: bool,
    sym_confirmed: float | None = None,
) -> Repair:
    """The repair itself, engines at hand."""
    if isinstance(original, Run):
        with original:  # read from here on: candidates adopt its records
            audit(original, pool, progress)
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
                cand.result = _reaudit(cand, cand.rubric, current_run, config, out, pool, progress)
                cand.summary = summarize(cand.result, intended, original.reference)
                cand.improved, cand.why = judge(current_summary, cand.summary)
        all_candidates += made
        front = pareto(made)
        if not front:
            break
        best = max(front, key=lambda c: objectives(c.summary or {}))
        assert best.result is not None and best.summary is not None and best.run_dir is not None  # audited
        current, current_run, current_result, current_summary = (
            best,
            RunDir.open(best.run_dir),
            best.result,
            best.summary,
        )
        current_findings, current_left = diagnose(best.result, intended)
    rep = Repair(
        out, original, result, findings, left_alone, all_candidates, current, base_summary, fail_on_sym, sym_confirmed
    )
    _write(rep)
    return rep


def _propose(
    run: RunDir,
    result: AuditResult,
    findings: list[Finding],
    left_alone: list[str],
    config: AuditConfig,
    pool: EnginePool,
    r: int,
    count: int,
) -> list[Candidate]:
    editor: ModelSpec = config.editor or config.generator
    fmt = EditFormat(tuple(run.rubric.ids))
    evidence = evidence_lines(run, result, findings)
    prompts = [
        editor_messages(run.rubric, result, findings, evidence, left_alone, k, count) for k in range(1, count + 1)
    ]
    seeds = [cell_seed(config.seed, f"repair-{r}", str(k), "edit") for k in range(1, count + 1)]
    answers = pool.get(editor).constrained(prompts, fmt=fmt, temperature=EDITOR_TEMPERATURE, seeds=seeds)
    made = []
    for k, answer in enumerate(answers, 1):
        cand = Candidate(r, k, answer.text)
        if answer.finish_reason == "error":  # vLLM failed the request before the model wrote a token
            cand.error = f"not proposed: {ENGINE_FAILED}"
            made.append(cand)
            continue
        try:
            cand.edit = Edit.model_validate_json(answer.text)
            cand.rubric = apply_edit(run.rubric, cand.edit)
            problem = rubric_conflict(config, cand.rubric)  # its audit would be refused: skip it, as any bad edit
            if problem is not None:
                cand.error, cand.rubric = f"not an edit ({problem})", None
        except ValidationError as exc:
            cand.error = f"not an edit ({exc.errors()[0]['msg']})"
        except ValueError as exc:
            cand.error = str(exc)
        made.append(cand)
    return made


def _reaudit(
    cand: Candidate, rubric: Rubric, parent: RunDir, config: AuditConfig, out: Path, pool: EnginePool, progress: bool
) -> AuditResult:
    folder = out / f"round-{cand.round}"
    rubric_path = folder / f"candidate-{cand.index}.rubric.yaml"
    make_folder(folder)
    write_atomic(rubric_path, yaml_text(rubric.model_dump(mode="json", exclude_none=True)))
    cand.run_dir = folder / f"candidate-{cand.index}"
    with Run.create(resolve(candidate_config(config, rubric_path, parent.tasks), folder), cand.run_dir) as run:
        cand.reuse, *_ = [adopt(run, parent, spec) for spec in config.verifiers]  # a judge audited both ways: both
        result = audit(run, pool, progress)
    assert isinstance(result, AuditResult)  # a pairwise-only config is refused before any round
    return result


def _write(rep: Repair) -> None:
    make_folder(rep.out)
    if rep.final is not None and rep.final.rubric is not None:
        write_atomic(
            rep.out / "rubric.repaired.yaml", yaml_text(rep.final.rubric.model_dump(mode="json", exclude_none=True))
        )
    write_repair_report(rep)
