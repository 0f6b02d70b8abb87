"""`radar grid`: generators x verifiers, and the judges compared."""

from __future__ import annotations

from pathlib import Path

import click

from radar_local.cli.options import ray_option, verbose_option, with_ray


@click.command()
@click.argument("config_path", metavar="CONFIG", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), help="Grid folder (default: the config's `out`).")
@click.option("--quiet", is_flag=True, help="No progress output.")
@click.option("--no-report", is_flag=True, help="Skip each cell's report.html / report.md (the grid's pages stay).")
@verbose_option
@ray_option
def grid(
    config_path: Path, out: Path | None, quiet: bool, no_report: bool, verbose: bool, ray_address: str | None
) -> None:
    """Run generators x verifiers (self-pairs excluded) and compare the judges."""
    from radar_local.config import GridConfig, load_config
    from radar_local.errors import InputError
    from radar_local.grid import run_grid
    from radar_local.quiet import engine_output_to
    from radar_local.report.grid_pages import grid_markdown
    from radar_local.rundir import ENGINE_LOG

    config = load_config(config_path, GridConfig)
    config = config.model_copy(update={"cluster": with_ray(config.cluster, ray_address)})
    folder = out or (Path(config.out) if config.out else None)
    if folder is None:
        raise InputError(config_path, "no grid folder: set 'out' in the config or pass --out")
    with engine_output_to(folder / ENGINE_LOG, verbose):
        result = run_grid(config, folder, config_path.parent, progress=not quiet, reports=not no_report)
    click.echo(grid_markdown(result))
    click.echo(f"wrote {folder / 'grid.html'}")
