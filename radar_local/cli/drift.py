"""`radar drift`: two verifiers of one run compared on the probes both scored (a judge and its upgrade)."""

from __future__ import annotations

from pathlib import Path

import click

from radar_local.cli.options import check_output


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--before", required=True, help="The verifier label of the judge as it was.")
@click.option("--after", required=True, help="The verifier label of the judge that replaces it (`radar score`).")
@click.option("--resamples", default=500, show_default=True, type=click.IntRange(0, 100_000))
@click.option("--json", "json_out", type=click.Path(path_type=Path), help="Write the drift as JSON.")
def drift(run_dir: Path, before: str, after: str, resamples: int, json_out: Path | None) -> None:
    """How a judge's verdicts and audit change from BEFORE to AFTER on RUN_DIR's stored probes (score them with
    `radar score RUN_DIR --verifier ...` first): agreement per criterion, the shift, unscored verdicts, and every
    self-effect's and leakage's change with paired intervals. Reads the run; writes nothing in it."""
    import numpy as np

    from radar_local.errors import InputError
    from radar_local.jury import measurement
    from radar_local.report.drift_text import drift_lines
    from radar_local.rundir import load_run
    from radar_local.score_table import read_scores
    from radar_local.scoring import continuous_scores
    from radar_local.stats.drift import drift as compare
    from radar_local.stats.probes import probe_matrix

    if json_out is not None:
        check_output(json_out)
    run = load_run(run_dir)
    table = read_scores(run.table_path, run.rubric.scales)
    labels = sorted(table["verifier"].unique())
    for label in (before, after):
        if label not in labels:
            raise InputError(run_dir, f"no verifier '{label}' scored this run (it holds {', '.join(labels)})")
    if before == after:
        raise InputError(run_dir, "--before and --after name the same verifier; name two")
    criteria = list(run.rubric.ids)
    scales = {c: run.rubric.scale_of(c) for c in criteria}
    spans = [scales[c].span for c in criteria]
    generator = str(table["generator"].iloc[0])
    first, second = (probe_matrix(table, criteria, generator, label, spans) for label in (before, after))
    continuous = continuous_scores(first.scores) or continuous_scores(second.scores)
    result = compare(
        first,
        second,
        {c: [float(v) for v in scales[c].values] for c in criteria},
        {c: measurement(scales[c], continuous) for c in criteria},
        resamples=resamples,
    )
    if not np.isfinite(result.probes) or result.probes == 0:
        raise InputError(run_dir, f"'{before}' and '{after}' scored no probe in common")
    click.echo("\n".join(drift_lines(result)))
    if json_out is not None:
        json_out.write_text(result.model_dump_json(indent=2) + "\n")
