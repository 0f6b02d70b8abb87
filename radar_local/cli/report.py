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
    from radar_local.rundir import load_run

    folder = write_report(load_run(run_dir), verifier, out)
    click.echo(f"wrote {folder / 'report.html'} and {folder / 'report.md'}")


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path))
def view(run_dir: Path) -> None:
    """Write RUN_DIR/viewer.html: every number of the audit opens the probes and every judge's verdicts behind it,
    offline in one file (open it in a browser; nothing is served or fetched). A grid's folder: one per generator."""
    from radar_local.report.build import write_run_viewers

    for path in write_run_viewers(run_dir):
        click.echo(f"wrote {path}")


@click.command()
@click.argument("run_a", type=click.Path(path_type=Path))
@click.argument("run_b", type=click.Path(path_type=Path))
@click.option("--fail-on-sym", type=SymPolicy(), help="Exit 1 when a reliable pair in RUN_B has Sym at or above this.")
@click.option(
    "--fail-on-bias",
    type=Unit(),
    help="Exit 1 when a criterion of RUN_B moves at least this much (0-1 scale) with a nuisance attribute.",
)
@click.option(
    "--sym-confirmed",
    type=SymPolicy(),
    help="Evidence policy: exit 1 when a reliable pair's Sym in RUN_B is confirmed at or above this by the family "
    "intervals, 0 when every pair is confirmed below it, 3 when some pair is still open.",
)
@click.option(
    "--bias-confirmed",
    type=Unit(),
    help="Evidence policy: exit 1 when a cell's bias is confirmed at or beyond this (0-1 scale), 0 when every cell "
    "is confirmed within it, 3 when some cell is still open.",
)
@click.option(
    "--fail-on-changed",
    type=Unit(),
    help="Exit 1 when a criterion's verdicts in RUN_B changed between askings (consistency: repeats) on at least "
    "this share of the repeated probes.",
)
@click.option(
    "--fail-on-wording",
    is_flag=True,
    help="Exit 1 when a leakage of RUN_B moves beyond its simultaneous band under a paraphrase of the judge's "
    "template (judge: paraphrases).",
)
@click.option(
    "--fail-on-pairwise",
    is_flag=True,
    help="Exit 1 when RUN_B's pairwise judge (pairwise:) has a confirmed position bias, leakage or flag.",
)
@click.option(
    "--fail-on-sign-errors",
    is_flag=True,
    help="Exit 1 when RUN_B's per-prompt audit confirms a sign error (an item read backwards) RUN_A's does not.",
)
@click.option(
    "--fail-on-attack",
    multiple=True,
    metavar="KIND",
    help="Exit 1 when RUN_B's judge is confirmed moved by this attack (attacks:, e.g. forged_end); repeatable.",
)
@click.option("--json", "json_out", type=click.Path(path_type=Path), help="Write the diff as JSON.")
def compare(run_a: Path, run_b: Path, json_out: Path | None, **policies: float | bool | None) -> None:
    """Diff two audits (before/after a rubric edit, or two judges). Exit 0: every policy passes; 1: one
    fails; 2: bad input; 3: an evidence policy is open (no policy fails, but the intervals settle not all)."""
    from radar_local.cli.options import check_output
    from radar_local.compare import EXIT, load_stats
    from radar_local.compare import compare as diff
    from radar_local.report.text import interval, num
    from radar_local.store import write_atomic

    check_output(json_out)
    result = diff(load_stats(run_a), load_stats(run_b), after_path=run_b, **policies)  # type: ignore[arg-type]
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
    for r in result["pairwise_moved"]:
        click.echo(
            f"pairwise moved: {r['source']} -> {r['target']}: leakage {num(r['leakage_before'])} "
            f"{interval(r['ci_before'])} -> {num(r['leakage_after'])} {interval(r['ci_after'])}"
        )
    for g in result["pairwise_gates"]:
        click.echo(f"pairwise gate: {g['criterion']} {g['gate_before']} -> {g['gate_after']}")
    changes = ("moved", "gate_changes", "bias_moved", "pairwise_moved", "pairwise_gates")
    if not any(result[key] for key in changes):
        click.echo("no pair moved beyond its confidence interval and no criterion crossed the gate")
    if json_out:
        from radar_local.common import to_json

        write_atomic(json_out, json.dumps(to_json(result), indent=2))
    for v in result["violations"]:
        click.echo(f"policy: {v['a']} / {v['b']} has Sym {num(v['sym_after'])} >= {result['fail_on_sym']}", err=True)
    for v in result["bias_violations"]:
        click.echo(
            f"policy: {v['criterion']} moves {num(v['sensitivity'])} with {v['attribute']}, "
            f"|bias| >= {result['fail_on_bias']}",
            err=True,
        )
    for line in result["consistency_violations"]:
        click.echo(f"policy: {line}", err=True)
    for line in result["open"]:
        click.echo(f"open: {line}", err=True)
    for policy in result["evidence"].values():
        if policy is not None:
            for line in evidence_lines(policy):
                click.echo(line, err=True)
    raise SystemExit(EXIT[result["outcome"]])


def evidence_lines(policy: dict) -> list[str]:
    """One line per pair or cell that fails or is open, then the policy's outcome."""
    from radar_local.report.text import interval, num

    kind, limit = policy["kind"], policy["threshold"]
    out = []
    for r in policy["rows"]:
        if r["state"] == "pass":
            continue
        family = interval(r["family"]) or "n/a"
        if kind == "sym":
            what, size = f"{r['a']} / {r['b']}: Sym {num(r['sym'])} family {family}", "Sym"
        else:
            what, size = f"{r['criterion']} with {r['attribute']}: {num(r['sensitivity'])} family {family}", "|bias|"
        if r["state"] == "fail":
            out.append(f"evidence: {what}, {size} >= {limit} confirmed")
            continue
        settle = r.get("settle_n")
        more = f"; about {settle} probes per stratum would settle it" if settle else ""
        out.append(f"evidence: {what}, open against {limit}{more}")
    out.append(f"evidence policy ({kind}, {limit}): {policy['outcome']}")
    return out
