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
    from radar_local.config import load_config, resolve
    from radar_local.errors import InputError
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
    "--plan-self-effect", type=click.FloatRange(0.01, 1), default=0.6, show_default=True, help="--plan: self-effects."
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
    plan_self_effect: float,
) -> None:
    """Generate probes, score them, print the audit and write the report. Re-running resumes: stored
    calls are skipped. `--plan` only says what the design can confirm."""
    from radar_local.report.build import write_report
    from radar_local.report.console import print_audit, print_run

    if plan:
        for line in _plan(config_path, plan_sd, plan_self_effect):
            click.echo(line)
        return
    run = _create(config_path, out, ray_address)
    with engine_output_to(run.engine_log, verbose):
        result = run.audit(progress=not quiet)
    print_audit(result)
    print_run(run)
    if not no_report:
        click.echo(f"Report: {write_report(run, result=result) / 'report.html'}")


def _plan(config_path: Path, sd: float | None, self_effect: float) -> list[str]:
    """The power of the config's design (stats/power.py), from its rubric and tasks alone."""
    from radar_local.config import load_config, resolve
    from radar_local.stats.bootstrap import LEVEL
    from radar_local.stats.power import minimum_confirmed, plan_lines

    resolved = resolve(load_config(config_path), config_path.parent, config_path)
    config, rubric, tasks = resolved.config, resolved.rubric, resolved.tasks
    k, n = len(rubric.criteria), config.adaptive.max_n if config.adaptive else config.n
    narrowest = min(rubric.scales.values(), key=lambda s: s.span)  # mixed scales: the least span, conservative
    span = float(narrowest.span)
    sd = sd if sd is not None else span / 4
    level = config.adaptive.confidence if config.adaptive else LEVEL
    power = minimum_confirmed(
        k,
        len(tasks),
        n,
        sd=sd,
        span=span,
        self_effect=self_effect,
        tau=config.tau,
        level=level,
        attributes=len(config.nuisance_specs),
        pairs_per_task=config.unconditioned,
        bias_threshold=config.bias_threshold,
    )
    joint = [spec.judge is not None and spec.judge.joint for spec in config.verifiers]  # every juror and call mode
    return plan_lines(
        k,
        len(tasks),
        n,
        power,
        sd=sd,
        self_effect=self_effect,
        level=level,
        adaptive=bool(config.adaptive),
        joint=joint,
        scale=narrowest.name,
    )


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
