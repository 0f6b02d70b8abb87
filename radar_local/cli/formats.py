"""`radar import` and `radar export`: rubrics from the tools teams evaluate with, and back."""

from __future__ import annotations

import re
from pathlib import Path

import click

from radar_local.formats import EXPORTS, FORMATS, ITEMS

ENGINES = ["vllm", "transformers", "openai", "testing"]


@click.command(name="import")
@click.argument("fmt", type=click.Choice(FORMATS), metavar="FORMAT")
@click.argument("source", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), help="Folder for rubric.yaml, config.yaml, import.md.")
@click.option("--engine", type=click.Choice(ENGINES), default="vllm", show_default=True)
@click.option("--generator", default="smollm2-135m", show_default=True, help="Generator model (registry name or path).")
@click.option("--verifier", default="smollm2-135m", show_default=True, help="The judge's model.")
@click.option(
    "--root",
    type=click.Path(path_type=Path, file_okay=False),
    help="The folder the file's references are read from: promptfoo's file:// (default: the file's own folder), "
    "openai/evals' registry, holding evals/ and modelgraded/ (default: the eval file's folder's parent).",
)
@click.option("--force", is_flag=True, help="Replace files in --out that an earlier import did not write as they are.")
def import_rubric(
    fmt: str, source: Path, out: Path | None, engine: str, generator: str, verifier: str, root: Path | None, force: bool
) -> None:
    """Read SOURCE, a FORMAT file (promptfoo, openai-evals, mlflow, prometheus, inspect, helpsteer, healthbench), into a
    radar rubric, judge and tasks, with an account of what mapped."""
    from radar_local.formats import read, write_import

    imported = read(fmt, source, root)
    out = out or source.with_name(f"{source.stem}.radar")
    if engine == "testing":
        generator, verifier = "planted", "planted"
    written = write_import(imported, out, engine, generator, verifier, force)  # a refusal is the only line
    for line in imported.account:
        click.echo(f"- {line}")
    for path in written:
        click.echo(f"wrote {path}")
    click.echo(f"next: radar audit {out / 'config.yaml'}")


@click.command()
@click.argument("fmt", type=click.Choice(FORMATS), metavar="FORMAT")
@click.argument("original", type=click.Path(path_type=Path))
@click.argument("rubric", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), help="The new file (default: ORIGINAL with .repaired).")
@click.option(
    "--root",
    type=click.Path(path_type=Path, file_okay=False),
    help="The folder the file's references are read from: promptfoo's file:// (default: the file's own folder), "
    "openai/evals' registry, holding evals/ and modelgraded/ (default: the eval file's folder's parent).",
)
def export(fmt: str, original: Path, rubric: Path, out: Path | None, root: Path | None) -> None:
    """Write RUBRIC (a repaired one, say) back into ORIGINAL's FORMAT: the criteria that changed are
    rewritten, everything else of ORIGINAL is kept. For healthbench, RUBRIC is the import's config.yaml: its
    tasks' items (edited) are written back as each conversation's rubric; for promptfoo, an import's config.yaml
    whose tasks carry items writes them back into the tests that hold them."""
    from radar_local.errors import InputError
    from radar_local.formats import export as export_rubric
    from radar_local.formats import export_items, holds_items, tasks_with_items
    from radar_local.rubric import load_rubric
    from radar_local.store import write_atomic

    if fmt not in EXPORTS or (fmt in ITEMS and holds_items(rubric)):
        text, account = export_items(fmt, original, tasks_with_items(rubric), root)
    else:
        text, account = export_rubric(fmt, original, load_rubric(rubric), root)
    out = out or original.with_name(f"{original.stem}.repaired{original.suffix}")
    base = (root or original.parent).resolve()
    if (found := re.search(r"file://(?![/~])([^\s'\"]+)", text)) and out.parent.resolve() != base:
        raise InputError(  # promptfoo reads a relative file:// from the config's own folder
            out, f"the export names files relative to {base} (file://{found.group(1)}), so written elsewhere it "
            "would not import again; write it in that folder (leave --out out), or copy those files beside it",
        )  # fmt: skip
    write_atomic(out, text)
    for line in account:
        click.echo(f"- {line}")
    click.echo(f"wrote {out}")
