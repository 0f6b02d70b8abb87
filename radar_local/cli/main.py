"""The `radar` command group. Commands are thin: they call library functions and print."""

from __future__ import annotations

import click

from radar_local.errors import RadarError


class RadarGroup(click.Group):
    """Turns domain errors into one line on stderr and their exit code, never a traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except RadarError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(exc.exit_code)


@click.group(cls=RadarGroup, context_settings={"auto_envvar_prefix": "RADAR", "help_option_names": ["-h", "--help"]})
@click.version_option(package_name="radar_local")
def cli() -> None:
    """RADAR rubric coupling audits on local open-weight models, fully offline."""


def _register() -> None:
    from radar_local.cli import audit, models, report, score, stats

    for command in (stats.stats, audit.audit, audit.generate, score.score, report.report, report.compare, report.grid, models.models):
        cli.add_command(command)


_register()


def main() -> None:
    cli()
