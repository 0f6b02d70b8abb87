"""`radar audit` and `radar generate`: run the stages of a config into a run directory."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from radar_local.cli.options import ray_option, verbose_option, with_ray
from radar_local.quiet import engine_output_to

if TYPE_CHECKING:
    pass


def run_options(fn):
    fn = ray_option(fn)
    fn = verbose_option(fn)
    fn = click.option("--quiet", is_flag=True, help="No progress output.")(fn)
    fn = click.option("--out", type=click.Path(path_type=Path), help="Run directory (default: the config's `out`).")(fn)
    return click.argument("config_path", metavar="CONFIG", type=click.Path(path_type=Path))(fn)


def _create(config_path: Path, out: Path | None, ray_address: str | None):
    from radar_local.config import load_config
    from radar_local.errors import InputError
    from radar_local.resolved import resolve
    from radar_local.run import Run

    config = load_config(config_path)
    config = config.model_copy(update={"cluster": with_ray(config.cluster, ray_address)})
    run_dir = out or (Path(config.out) if config.out else None)
    if run_dir is None:
        raise InputError(config_path, "no run directory: set 'out' in the config or pass --out")
    return Run.create(resolve(config, config_path.parent, config_path), run_dir)


@click.command()
@run_options
@click.option("--no-report", is_flag=True, help="Skip report.html / report.md.")
@click.option(
    "--plan",
    is_flag=True,
    help="Print the design and the smallest coupling or bias it would confirm with 80% probability; call nothing.",
)
@click.option(
    "--plan-sd",
    type=click.FloatRange(0.01, 1000),
    default=None,
    help="--plan: score sd in the rubric's scale points (default: a quarter of its span, 1 Likert point on 0-4).",
)
@click.option(
    "--plan-self-effect",
    type=click.FloatRange(0.01, 1),
    default=None,
    help="--plan: self-effects (default: the run directory's observed ones where it holds an audit, else 0.6).",
)
def audit(
    config_path: Path,
    out: Path | None,
    quiet: bool,
    verbose: bool,
    ray_address: str | None,
    no_report: bool,
    plan: bool,
    plan_sd: float | None,
    plan_self_effect: float | None,
) -> None:
    """Generate probes, score them, print the audit and write the report. Re-running resumes: stored
    calls are skipped. `--plan` only says what the design can confirm."""
    from radar_local.auditing import audit
    from radar_local.report.build import write_report
    from radar_local.report.console import print_audit, print_run

    if plan:
        from radar_local.design import design_lines

        for line in design_lines(config_path, plan_sd, plan_self_effect, out):
            click.echo(line)
        return
    run = _create(config_path, out, ray_address)
    with engine_output_to(run.engine_log, verbose):
        result = audit(run, progress=not quiet)
    print_audit(result)
    print_run(run)
    if not no_report:
        click.echo(f"Report: {write_report(run, result=result) / 'report.html'}")


@click.command()
@run_options
def generate(config_path: Path, out: Path | None, quiet: bool, verbose: bool, ray_address: str | None) -> None:
    """Stage 1 only: generate and store the probes."""
    from radar_local.pool import EnginePool

    run = _create(config_path, out, ray_address)
    with EnginePool(run.config.cluster) as pool, engine_output_to(run.engine_log, verbose):
        stats = run.generate(pool, progress=not quiet)
    click.echo(f"{len(run.store.probes)} probes stored in {run.root} ({stats['calls']} generated now)")
