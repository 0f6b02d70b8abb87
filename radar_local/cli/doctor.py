"""`radar doctor`: what this machine can do, in one screen or as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--smoke", is_flag=True, help="Also run two probes and ten constrained verdicts on a model on disk.")
@click.option(
    "--config", "config_path", type=click.Path(path_type=Path), help="Smoke-test this audit config's verifier."
)
@click.option("--engine", default=None, help="Smoke-test engine (default: vllm where it imports, else transformers).")
@click.option("--model", default="smollm2-135m", show_default=True, help="Smoke-test model.")
@click.option(
    "--runs",
    type=click.Path(path_type=Path),
    default=Path("runs"),
    show_default=True,
    help="Runs directory to check for space.",
)
@click.option("--ray", "ray_address", help="Ray cluster address to check (default: $RAY_ADDRESS).")
def doctor(
    as_json: bool,
    smoke: bool,
    config_path: Path | None,
    engine: str | None,
    model: str,
    runs: Path,
    ray_address: str | None,
) -> None:
    """Python, torch, vLLM, transformers/outlines, models on disk, offline switches, free disk and Ray.
    Every problem is one line with its fix; exit 1 when there is one."""
    from radar_local.doctor import examine, render

    spec = None
    if smoke:
        spec = _smoke_spec(config_path, engine, model)
    report = examine(runs, ray_address, spec)
    click.echo(json.dumps(report, indent=2) if as_json else "\n".join(render(report)))
    if report["problems"]:
        raise SystemExit(1)


def _smoke_spec(config_path: Path | None, engine: str | None, model: str) -> tuple[str, str, dict]:
    if config_path is not None:
        from radar_local.config import load_config

        verifier = load_config(config_path).verifiers[0]  # a jury's first juror
        return verifier.engine, verifier.model, verifier.options
    if engine is None:
        import importlib.util

        engine = "vllm" if importlib.util.find_spec("vllm") else "transformers"
    from radar_local.engines.registry import engine_class

    return engine, model, dict(engine_class(engine).SMOKE_OPTIONS)
