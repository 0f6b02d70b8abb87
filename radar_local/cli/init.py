"""`radar init`: a commented starter config."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--rubric",
    default="helpsteer2",
    show_default=True,
    help="A bundled rubric, or 'skeleton' for a rubric file to edit.",
)
@click.option("--tasks", help="Your prompts: a .jsonl, .csv or .parquet file, or a saved Hugging Face dataset folder.")
@click.option("--engine", type=click.Choice(["vllm", "transformers", "openai"]), default="vllm", show_default=True)
@click.option("--generator", default="smollm2-135m", show_default=True, help="Generator model (registry name or path).")
@click.option("--verifier", default="smollm2-135m", show_default=True, help="Verifier (judge) model.")
def init(path: Path, rubric: str, tasks: str | None, engine: str, generator: str, verifier: str) -> None:
    """Write a commented starter config at PATH (and PATH.rubric.yaml with --rubric skeleton)."""
    from radar_local.starter import write_starter

    for written in write_starter(path, rubric, tasks, engine, generator, verifier):
        click.echo(f"wrote {written}")
    click.echo(f"next: edit it, then `radar audit {path}`")
