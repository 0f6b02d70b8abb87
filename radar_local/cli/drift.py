"""`radar drift`: two verifiers of one run compared on the probes both scored (a judge and its upgrade)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from radar_local.cli.options import check_output
from radar_local.stats.bootstrap import RESAMPLES

if TYPE_CHECKING:
    from radar_local.rundir import RunDir


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--before", required=True, help="The verifier label of the judge as it was.")
@click.option("--after", required=True, help="The verifier label of the judge that replaces it (`radar score`).")
@click.option(
    "--bootstrap",
    "resamples",
    default=RESAMPLES,
    show_default=True,
    type=click.IntRange(0, 100_000),
    help="Bootstrap resamples (0 = no intervals).",
)
@click.option("--json", "json_out", type=click.Path(path_type=Path), help="Write the drift as JSON.")
@click.option(
    "--fail-on-change",
    is_flag=True,
    help="Exit 1 when a leakage moves beyond its simultaneous band (the paired evidence, family-wise 95%); findings "
    "that only one judge's own audit confirms are listed, not gated.",
)
def drift(run_dir: Path, before: str, after: str, resamples: int, json_out: Path | None, fail_on_change: bool) -> None:
    """How a judge's verdicts and audit change from BEFORE to AFTER on RUN_DIR's stored probes (score them with
    `radar score RUN_DIR --verifier ...` first): agreement per criterion, the shift, unscored verdicts, and every
    self-effect's and leakage's change with paired intervals. Reads the run; writes nothing in it."""
    from radar_local.errors import InputError
    from radar_local.jury import measurement
    from radar_local.report.drift_text import drift_lines
    from radar_local.rundir import load_run
    from radar_local.score_table import read_scores
    from radar_local.scoring import continuous_scores
    from radar_local.stats.drift import drift as compare
    from radar_local.stats.probes import probe_matrix
    from radar_local.store import write_atomic

    if json_out is not None:
        check_output(json_out)
    run = load_run(run_dir)
    run.require_pointwise("`radar drift`")
    table = read_scores(run.table_path, run.rubric.scales)
    labels = sorted(table["verifier"].unique())
    for label in (before, after):
        if label not in labels:
            raise InputError(run_dir, f"no verifier '{label}' scored this run (it holds {', '.join(labels)})")
    if before == after:
        raise InputError(run_dir, "--before and --after name the same verifier; name two")
    criteria = list(run.rubric.ids)
    scales = {c: run.rubric.scale_of(c) for c in criteria}
    keys = ["task_id", "target", "direction", "variant"]
    probe = table[keys].fillna("").astype(str).agg("|".join, axis=1)  # an unconditioned probe has no target
    scored = {label: set(probe[(table["verifier"] == label) & table["score"].notna()]) for label in (before, after)}
    common = scored[before] & scored[after]
    if len(common) * 2 < len(scored[before]):  # drift compares verdicts on the same probes
        raise InputError(
            run_dir,
            f"'{before}' and '{after}' scored {len(common)} probes in common of the {len(scored[before])} "
            f"'{before}' scored; score this run's probes with '{after}' (radar score) before comparing",
        )
    shared = table[probe.isin(common)].sort_values([*keys, "criterion"])
    spans = [scales[c].span for c in criteria]
    generator = str(shared["generator"].iloc[0])
    first, second = (probe_matrix(shared, criteria, generator, label, spans) for label in (before, after))
    continuous = continuous_scores(first.scores) or continuous_scores(second.scores)
    result = compare(
        first,
        second,
        {c: [float(v) for v in scales[c].values] for c in criteria},
        {c: measurement(scales[c], continuous) for c in criteria},
        resamples=resamples,
    )
    findings = {label: _confirmed(run, label) for label in (before, after)}
    appear, disappear = findings[after] - findings[before], findings[before] - findings[after]
    click.echo("\n".join(drift_lines(result)))
    moved = (
        f"that appear: {', '.join(sorted(appear)) or 'none'}; that disappear: {', '.join(sorted(disappear)) or 'none'}"
    )
    held = (
        " (each judge's own audit, not a paired comparison: two audits of one judge differ so by chance, so "
        "--fail-on-change gates on the bands above)"
    )
    click.echo(f"Confirmed findings {moved + held if appear or disappear else 'are the same in both audits'}.")
    if json_out is not None:
        write_atomic(json_out, result.model_dump_json(indent=2) + "\n")  # never through a FIFO, device or link
    if fail_on_change and any(p.flag for p in result.pairs):  # the paired band alone holds its level (issue 61)
        raise SystemExit(1)


def _confirmed(run: RunDir, label: str) -> set[str]:
    """The findings the verifier's own audit of the run confirmed ('a -> b directional'), from its stats.json."""
    pairs = run.result(label).pairs.to_dict("records")
    return {
        f"{p['a']} -> {p['b']} {flag}"
        for p in pairs
        for flag, level in (p.get("evidence") or {}).items()
        if level == "confirmed"
    }
