"""`radar audit` and `radar generate`: run the stages of a config into a run directory."""

from __future__ import annotations

from pathlib import Path

import click

from radar_local.cli.options import ray_option, verbose_option, with_ray
from radar_local.quiet import engine_output_to


def run_options(fn):
    fn = ray_option(fn)
    fn = verbose_option(fn)
    fn = click.option("--quiet", is_flag=True, help="No progress output.")(fn)
    fn = click.option("--out", type=click.Path(path_type=Path), help="Run directory (default: the config's `out`).")(fn)
    return click.argument("config_path", metavar="CONFIG", type=click.Path(path_type=Path))(fn)


def _create(config_path: Path, out: Path | None, ray_address: str | None):
    from radar_local.config import load_config
    from radar_local.errors import InputError
    from radar_local.run import Run

    config = load_config(config_path)
    config = config.model_copy(update={"cluster": with_ray(config.cluster, ray_address)})
    run_dir = out or (Path(config.out) if config.out else None)
    if run_dir is None:
        raise InputError(config_path, "no run directory: set 'out' in the config or pass --out")
    return Run.create(config, run_dir, config_path.parent, config_path)


@click.command()
@run_options
@click.option("--no-report", is_flag=True, help="Skip report.html / report.md.")
def audit(
    config_path: Path, out: Path | None, quiet: bool, verbose: bool, ray_address: str | None, no_report: bool
) -> None:
    """Generate probes, score them, print the audit and write the report. Re-running resumes: stored
    calls are skipped."""
    from radar_local.report.build import write_report
    from radar_local.report.console import print_audit, print_run

    run = _create(config_path, out, ray_address)
    with engine_output_to(run.engine_log, verbose):
        result = run.audit(progress=not quiet)
    print_audit(result)
    print_run(run)
    if not no_report:
        click.echo(f"Report: {write_report(run) / 'report.html'}")


@click.command()
@run_options
def generate(config_path: Path, out: Path | None, quiet: bool, verbose: bool, ray_address: str | None) -> None:
    """Stage 1 only: generate and store the probes."""
    from radar_local.run import EnginePool

    run = _create(config_path, out, ray_address)
    pool = EnginePool(run.config.cluster)
    with engine_output_to(run.engine_log, verbose):
        try:
            stats = run.generate(pool, progress=not quiet)
        finally:
            pool.close()
    click.echo(f"{len(run.store.probes)} probes stored in {run.root} ({stats['calls']} generated now)")
