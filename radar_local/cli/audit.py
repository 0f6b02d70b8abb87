"""`radar audit` and `radar generate`: run the stages of a config into a run directory."""

from __future__ import annotations

from pathlib import Path

import click


def run_options(fn):
    fn = click.option("--quiet", is_flag=True, help="No progress output.")(fn)
    fn = click.option("--out", type=click.Path(path_type=Path), help="Run directory (default: the config's `out`).")(fn)
    return click.argument("config_path", metavar="CONFIG", type=click.Path(path_type=Path))(fn)


def _setup(config_path: Path, out: Path | None):
    from radar_local.config import load_config
    from radar_local.errors import InputError

    config = load_config(config_path)
    run_dir = out or (Path(config.out) if config.out else None)
    if run_dir is None:
        raise InputError(config_path, "no run directory: set 'out' in the config or pass --out")
    return config, run_dir


@click.command()
@run_options
@click.option("--no-report", is_flag=True, help="Skip report.html / report.md.")
def audit(config_path: Path, out: Path | None, quiet: bool, no_report: bool) -> None:
    """Generate probes, score them, print the audit and write the report. Re-running resumes: stored
    calls are skipped."""
    from radar_local.pipeline import run_audit
    from radar_local.report.console import print_audit, print_run

    config, run_dir = _setup(config_path, out)
    result = run_audit(config, run_dir, config_path.parent, progress=not quiet)
    print_audit(result)
    print_run(run_dir)
    if not no_report:
        from radar_local.report.build import write_report

        click.echo(f"Report: {write_report(run_dir) / 'report.html'}")


@click.command()
@run_options
def generate(config_path: Path, out: Path | None, quiet: bool) -> None:
    """Stage 1 only: generate and store the probes."""
    from radar_local.pipeline import EnginePool, generate_stage, open_audit

    config, run_dir = _setup(config_path, out)
    config, rubric, tasks, _, store = open_audit(config, run_dir, config_path.parent)
    pool = EnginePool()
    try:
        stats = generate_stage(config, rubric, tasks, store, pool, progress=not quiet)
    finally:
        pool.close()
    click.echo(f"{len(store.probes)} probes stored in {run_dir} ({stats['calls']} generated now)")
