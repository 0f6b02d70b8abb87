"""The audited set, and the audit assembled from it in one place.

The audited set is what one audit reads of a run directory: the probes its config plans (an adaptive
audit's up to its last wave; keys under today's weights, so records of old weights or of a larger `n`
are not among them), less the probes that address the judge where `exclude_flagged_probes` says so, the
nuisance rewrites whose pair passed the manipulation check, and the stored verdicts on those. The
statistics, the injection scan, the manipulation check and the report's examples all read this set,
so a report never shows evidence the audit did not use.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from functools import cached_property

import pandas as pd

from radar_local.analysis import stats_for_table
from radar_local.config import Jury, ModelSpec
from radar_local.injection import answer_patterns, flagged_probes
from radar_local.nuisance import manipulation_check
from radar_local.records import ProbeRecord, VerdictRecord
from radar_local.rundir import RunDir
from radar_local.score_table import COLUMNS, validate_scores
from radar_local.stats.result import AuditResult


@dataclass(frozen=True)
class AuditedSet:
    probes: tuple[ProbeRecord, ...]  # planned, flagged ones left out where the config says
    rewrites: tuple[ProbeRecord, ...]  # nuisance rewrites of kept pairs
    verdicts: tuple[tuple[str, VerdictRecord], ...]  # (verifier label, verdict) on those records
    injection: dict  # the scan of every planned probe, as run.json keeps it
    manipulation: dict | None  # per attribute: pairs, passed, steered; None without nuisance attributes

    @cached_property
    def verdicts_by_probe(self) -> dict[str, dict[str, dict[str, VerdictRecord]]]:
        """verifier label -> probe key -> criterion -> verdict."""
        out: dict[str, dict[str, dict[str, VerdictRecord]]] = {}
        for label, v in self.verdicts:
            out.setdefault(label, {}).setdefault(v.probe_key, {})[v.criterion] = v
        return out

    def table(self) -> pd.DataFrame:
        """The long score table of the set (score_table.COLUMNS), one row per verdict."""
        by_key = {p.key: p for p in self.probes + self.rewrites}
        rows = [
            (p.generator, label, p.task_id, p.target, p.direction, str(p.variant), v.criterion, v.score)
            for label, v in self.verdicts
            for p in (by_key[v.probe_key],)
        ]
        df = pd.DataFrame(rows, columns=list(COLUMNS))
        df["score"] = df["score"].astype("float64")
        return df


def audited_set(
    run: RunDir, probes: list[ProbeRecord] | None = None, verifiers: Collection[str] | None = None
) -> AuditedSet:
    """The records an audit of `run` reads: of `probes` (default the planned ones) and, of the verifiers
    stored there, those named in `verifiers` (default every one)."""
    config = run.config
    planned = run.probes() if probes is None else probes
    shapes = [spec.judge.answer for spec in config.verifiers if spec.judge is not None and spec.judge.template]
    injection = {**flagged_probes(planned, answers=answer_patterns(shapes)), "excluded": config.exclude_flagged_probes}
    flagged = set(injection["keys"])
    used = [p for p in planned if p.key not in flagged] if config.exclude_flagged_probes else planned
    specs = config.nuisance_specs
    rewrites = run.rewrites(planned) if specs else []
    kept, manipulation = manipulation_check(specs, rewrites)  # pairs the attribute did not move are left out
    rewrites = [r for r in rewrites if r.key in kept]
    verdicts = run.verdicts(used + rewrites, verifiers)
    return AuditedSet(tuple(used), tuple(rewrites), tuple(verdicts), injection, manipulation if specs else None)


def audit(run: RunDir, verifier: ModelSpec | Jury, records: AuditedSet, **options) -> tuple[AuditResult, pd.DataFrame]:
    """The statistics of the audited set's verdicts, and the validated score table they were computed from."""
    config = run.config
    table = validate_scores(records.table(), run.table_path, run.rubric.scales, both_directions=False)
    result = stats_for_table(
        table,
        run.table_path,
        rubric=run.rubric,
        reference=run.reference,
        tau=config.tau,
        leakage=config.leakage,
        resamples=config.bootstrap,
        seed=config.seed,
        generator=config.generator.label,
        verifier=verifier.label,
        bias_threshold=config.bias_threshold,
        intended={frozenset(p) for p in config.intended},
        manipulation=records.manipulation,
        **options,
    )
    return result, table
