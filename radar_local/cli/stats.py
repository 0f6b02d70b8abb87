"""`radar stats`: the audit statistics of a score table from anywhere."""

from __future__ import annotations

import json
from pathlib import Path

import click

from radar_local.cli.options import Unit, check_output, stats_options
from radar_local.scoring import SCALE
from radar_local.stats.bias import BIAS


@click.command()
@click.argument("scores", type=click.Path(path_type=Path))
@stats_options
@click.option(
    "--scale",
    default=SCALE,
    show_default=True,
    help="Score scale of the table, an integer range (1-5, 1-10); a rubric's own scales win.",
)
@click.option("--generator", help="Pick one generator when the table holds several.")
@click.option("--verifier", help="Pick one verifier when the table holds several.")
@click.option("--json", "json_out", type=click.Path(path_type=Path), help="Write the full result as JSON.")
@click.option("--markdown", "md_out", type=click.Path(path_type=Path), help="Write the audit as Markdown.")
@click.option(
    "--bias-threshold",
    type=Unit(),
    default=BIAS,
    show_default=True,
    help="Flag a criterion whose score moves at least this much (0-1 scale) with a nuisance attribute.",
)
@click.option(
    "--leakage",
    type=click.Choice(["ratio_of_means", "paper"]),  # stats/coupling.LEAKAGE_DEFINITIONS (numpy stays unloaded)
    default="ratio_of_means",
    show_default=True,
    help="A leakage over tasks: mean shift over mean self-effect, or the paper's eq. 5 (a mean of per-task ratios).",
)
@click.option(
    "--screening",
    type=Unit(open_ends=True),
    metavar="FDR",
    help="Also mark flags that Benjamini-Hochberg passes at this false discovery rate `screened` (never confirmed).",
)
def stats(scores: Path, json_out: Path | None, md_out: Path | None, **kwargs) -> None:
    """Print the RADAR audit of a score table (CSV or Parquet)."""
    from radar_local.analysis import analyze
    from radar_local.report.console import print_audit
    from radar_local.report.markdown import audit_markdown
    from radar_local.store import write_atomic

    check_output(json_out)
    check_output(md_out)
    result = analyze(scores, rubric=kwargs.pop("rubric_arg"), bootstrap=kwargs.pop("resamples"), **kwargs)
    print_audit(result)
    if json_out:
        write_atomic(json_out, json.dumps(result.to_json(), indent=2))
    if md_out:
        write_atomic(md_out, audit_markdown(result))
