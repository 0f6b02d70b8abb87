"""Option decorators shared by several commands."""

from __future__ import annotations

from pathlib import Path

import click

from radar_local.stats.bootstrap import RESAMPLES
from radar_local.stats.coupling import TAU


def check_output(path: Path | None) -> None:
    """Before any work: an output file's folder must exist (nothing is created behind the user's back), and the
    path must not be a FIFO, socket or device (store.write_atomic, every output's one writer, refuses those too)."""
    from radar_local.errors import InputError

    if path is not None and not path.parent.is_dir():
        raise InputError(path, f"the folder {path.parent} does not exist; create it or write somewhere else")
    if path is not None and not path.is_symlink() and path.exists() and not (path.is_file() or path.is_dir()):
        raise InputError(path, "is not a regular file (a FIFO, socket or device); pick another output path")


class Unit(click.FloatRange):
    """A number in [0, 1]; NaN is not one (it compares false with both bounds)."""

    def __init__(self, open_ends: bool = False):
        super().__init__(0, 1, min_open=open_ends, max_open=open_ends)

    def convert(self, value, param, ctx):
        value = super().convert(value, param, ctx)
        if value != value:
            self.fail("nan is not a number in [0, 1]", param, ctx)
        return value


class SymPolicy(click.ParamType):
    """A Sym ceiling for a CI gate: a finite number. NaN would compare false with every Sym and never fail."""

    name = "float"

    def convert(self, value, param, ctx):
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if number != number or number in (float("inf"), float("-inf")):
            self.fail(f"{value} is not a finite Sym ceiling (a policy that can never fail is no gate)", param, ctx)
        return number


def stats_options(fn):
    for deco in reversed(
        [
            click.option("--rubric", "rubric_arg", metavar="NAME|PATH", help="Bundled rubric name or rubric file."),
            click.option(
                "--human", metavar="NAME|PATH", help="Human inter-criterion reference (default: the bundled rubric's)."
            ),
            click.option("--tau", type=Unit(), default=TAU, show_default=True, help="Reliability gate on self-effect."),
            click.option(
                "--bootstrap",
                "resamples",
                type=click.IntRange(0, 100_000),
                default=RESAMPLES,
                show_default=True,
                help="Bootstrap resamples (0 = no CIs).",
            ),
            click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True),
        ]
    ):
        fn = deco(fn)
    return fn


def verbose_option(fn):
    return click.option(
        "--verbose",
        is_flag=True,
        help="Stream vLLM's, torch's and transformers' own output to the "
        "console (default: the run directory's engine.log; also RADAR_LOG=debug).",
    )(fn)


def ray_option(fn):
    return click.option(
        "--ray",
        "ray_address",
        metavar="ADDRESS",
        help="Run on a Ray cluster: auto, host:port, or local (overrides the config's cluster.ray).",
    )(fn)


def with_ray(cluster, address: str | None):
    """The config's cluster settings with --ray's address, or as they were."""
    from radar_local.placement import ClusterSpec

    if address is None:
        return cluster
    return (cluster or ClusterSpec()).model_copy(update={"ray": address})
