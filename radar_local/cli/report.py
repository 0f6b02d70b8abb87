"""`radar report` and `radar compare`."""

from __future__ import annotations

import json
from pathlib import Path

import click

from radar_local.cli.options import SymPolicy, Unit


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), help="Output folder (default: RUN_DIR/report).")
@click.option("--verifier", help="Report a verifier added by `radar score` (default: the audit's own).")
def report(run_dir: Path, out: Path | None, verifier: str | None) -> None:
    """Write report.html (self-contained) and report.md with PNG figures for an audit run."""
    from radar_local.report.build import write_report
    from radar_local.run import load_run

    folder = write_report(load_run(run_dir), verifier, out)
    click.echo(f"wrote {folder / 'report.html'} and {folder / 'report.md'}")


@click.command()
@click.argument("run_a", type=click.Path(path_type=Path))
@click.argument("run_b", type=click.Path(path_type=Path))
@click.option("--fail-on-sym", type=SymPolicy(), help="Exit 1 when a reliable pair in RUN_B has Sym at or above this.")
@click.option(
    "--fail-on-bias",
    type=Unit(),
    help="Exit 1 when a criterion of RUN_B moves at least this much (0-1 scale) with a nuisance attribute.",
)
@click.option("--json", "json_out", type=click.Path(path_type=Path), help="Write the diff as JSON.")
def compare(
    run_a: Path, run_b: Path, fail_on_sym: float | None, fail_on_bias: float | None, json_out: Path | None
) -> None:
    """Diff two audits (before/after a rubric edit, or two judges)."""
    from radar_local.cli.options import check_output
    from radar_local.compare import compare as diff
    from radar_local.compare import load_stats
    from radar_local.report.text import interval, num
    from radar_local.store import write_atomic

    check_output(json_out)
    result = diff(load_stats(run_a), load_stats(run_b), fail_on_sym, fail_on_bias, run_b)
    for r in result["moved"]:
        click.echo(
            f"moved: {r['a']} / {r['b']}: Sym {num(r['sym_before'])} {interval(r['ci_before'])} -> "
            f"{num(r['sym_after'])} {interval(r['ci_after'])}"
        )
    for r in result["bias_moved"]:
        click.echo(
            f"bias moved: {r['criterion']} with {r['attribute']}: {num(r['sensitivity_before'])} "
            f"{interval(r['ci_before'])} -> {num(r['sensitivity_after'])} {interval(r['ci_after'])}"
        )
    for g in result["gate_changes"]:
        state = "now passes" if g["reliable_after"] else "now fails"
        click.echo(f"gate: {g['criterion']} {state} the reliability gate")
    if not result["moved"] and not result["gate_changes"] and not result["bias_moved"]:
        click.echo("no pair moved beyond its confidence interval and no criterion crossed the gate")
    if json_out:
        from radar_local.common import to_json

        write_atomic(json_out, json.dumps(to_json(result), indent=2))
    for v in result["violations"]:
        click.echo(f"policy: {v['a']} / {v['b']} has Sym {num(v['sym_after'])} >= {fail_on_sym}", err=True)
    for v in result["bias_violations"]:
        click.echo(
            f"policy: {v['criterion']} moves {num(v['sensitivity'])} with {v['attribute']}, |bias| >= {fail_on_bias}",
            err=True,
        )
    if result["violations"] or result["bias_violations"]:
        raise SystemExit(1)
