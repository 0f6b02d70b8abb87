"""`radar score`: re-score a run's stored probes with another verifier, without regenerating."""

from __future__ import annotations

from pathlib import Path

import click

from radar_local.cli.options import ray_option, verbose_option, with_ray


def parse_option(value: str) -> tuple[str, object]:
    """KEY=VALUE, the value read as YAML by the one reader (an alias bomb here is refused too)."""
    from radar_local.errors import InputError
    from radar_local.inputs import load_yaml

    if "=" not in value:
        raise click.BadParameter(f"'{value}' is not KEY=VALUE")
    key, raw = value.split("=", 1)
    try:
        return key, load_yaml(raw, key)
    except InputError as exc:
        reason = str(exc).removeprefix(f"{key}: ")
        raise click.BadParameter(f"'{value}': the value is not YAML ({reason})", param_hint="--option") from None


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option(
    "--verifier",
    "verifier_arg",
    required=True,
    metavar="ENGINE:MODEL",
    help="e.g. vllm:qwen2.5-7b-instruct or openai:my-served-model",
)
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE", help="Engine option (repeatable).")
@click.option("--name", help="Verifier label in the score table (default: the model's name).")
@click.option("--quiet", is_flag=True)
@verbose_option
@ray_option
def score(
    run_dir: Path,
    verifier_arg: str,
    options: tuple[str, ...],
    name: str | None,
    quiet: bool,
    verbose: bool,
    ray_address: str | None,
) -> None:
    """Score RUN_DIR's probes with another verifier; writes its stats next to the first."""
    from radar_local.auditing import rescore
    from radar_local.common import parse_model
    from radar_local.errors import InputError
    from radar_local.quiet import engine_output_to
    from radar_local.report.console import print_audit
    from radar_local.run import Run
    from radar_local.specs import ModelSpec

    engine, sep, model = verifier_arg.partition(":")
    if not sep or not model:
        raise InputError("--verifier", f"'{verifier_arg}' is not ENGINE:MODEL, e.g. vllm:smollm2-135m")
    spec = parse_model(
        ModelSpec,
        {"engine": engine, "model": model, "name": name, "options": dict(parse_option(o) for o in options)},
        "--verifier",
    )
    from radar_local.pool import EnginePool

    run = Run.open(run_dir)
    with EnginePool(with_ray(run.config.cluster, ray_address)) as pool, engine_output_to(run.engine_log, verbose):
        result = rescore(run, spec, pool, progress=not quiet)
    print_audit(result)
