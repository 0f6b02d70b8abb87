"""`radar repair`."""

from __future__ import annotations

from pathlib import Path

import click

from radar_local.cli.options import SymPolicy, verbose_option


@click.command()
@click.argument("target", type=click.Path(exists=True, path_type=Path), metavar="CONFIG_OR_RUN_DIR")
@click.option("--out", type=click.Path(path_type=Path), help="Repair folder (default: RUN_DIR/repair).")
@click.option(
    "--rounds", type=click.IntRange(1, 20), default=1, show_default=True, help="Rounds, each from the best so far."
)
@click.option(
    "--candidates", type=click.IntRange(1, 50), default=3, show_default=True, help="Candidate edits per round."
)
@click.option(
    "--fail-on-sym", type=SymPolicy(), help="Exit 1 when a reliable non-intended pair keeps Sym at or above this."
)
@click.option(
    "--sym-confirmed",
    type=SymPolicy(),
    help="Evidence policy on the repaired rubric: exit 1 when a reliable non-intended pair's Sym is confirmed at or "
    "above this by the family intervals, 0 when every one is confirmed below it, 3 when some pair is still open.",
)
@click.option("--quiet", is_flag=True, help="No progress output.")
@verbose_option
def repair(
    target: Path,
    out: Path | None,
    rounds: int,
    candidates: int,
    fail_on_sym: float | None,
    sym_confirmed: float | None,
    quiet: bool,
    verbose: bool,
) -> None:
    """Propose rubric edits for an audit's findings, re-audit each on the same probes budget, keep what
    improves beyond the intervals (CONFIG_OR_RUN_DIR: a stored audit, or a config to audit first)."""
    from radar_local.cli.report import evidence_lines
    from radar_local.compare import EXIT
    from radar_local.compare import outcome as verdict
    from radar_local.repair import repair as run_repair
    from radar_local.repair.pages import outcome

    rep = run_repair(
        target,
        out,
        rounds=rounds,
        candidates=candidates,
        fail_on_sym=fail_on_sym,
        sym_confirmed=sym_confirmed,
        progress=not quiet,
        engine_log=not verbose,
    )
    click.echo(outcome(rep))
    for f in rep.findings:
        click.echo(f"- {f.kind}: {f.text}")
    click.echo(f"Report: {rep.out / 'repair.html'} and repair.md")
    if rep.fails():
        click.echo(f"policy: a reliable pair keeps Sym {rep.worst_sym():+.2f} >= {fail_on_sym}", err=True)
    policy = rep.evidence()
    for line in evidence_lines(policy) if policy else []:
        click.echo(line, err=True)
    raise SystemExit(EXIT[verdict([policy] if policy else [], rep.fails())])
