"""`radar order`: whether the place a joint judge shows a criterion at moves its score (stats/order.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from radar_local.cli.options import check_output

if TYPE_CHECKING:
    from radar_local.stats.order import OrderEffects


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--verifier", "label", required=True, help="The joint judge's verifier label.")
@click.option("--json", "json_out", type=click.Path(path_type=Path), help="Write the effects as JSON.")
def order(run_dir: Path, label: str, json_out: Path | None) -> None:
    """Per criterion, the score a joint judge gives it when shown first minus when shown later, on RUN_DIR's stored
    verdicts (best with `judge: {calls: joint, order: balanced}`), with intervals and a flag on the band over
    the criteria. Reads the run; writes nothing in it."""
    from radar_local.report.markdown import md_table
    from radar_local.report.order_text import ORDER_HEAD, order_line, order_rows
    from radar_local.store import write_atomic

    if json_out is not None:
        check_output(json_out)
    result = effects_of(run_dir, label)
    click.echo("\n".join([str(order_line(result)), "", *md_table(ORDER_HEAD, order_rows(result))]))
    if json_out is not None:
        write_atomic(json_out, result.model_dump_json(indent=2) + "\n")  # never through a FIFO, device or link


def effects_of(run_dir: Path, label: str) -> OrderEffects:
    """The run's stored joint verdicts of `label` as stats/order.order_effects reads them."""
    from radar_local.audited import order_of
    from radar_local.errors import InputError
    from radar_local.rundir import load_run

    run = load_run(run_dir)
    run.require_pointwise("`radar order`")
    if label not in run.verifiers():
        raise InputError(run_dir, f"no verifier '{label}' scored this run (it holds {', '.join(run.verifiers())})")
    probes = run.probes()
    found = order_of(run, label, probes, run.verdicts(probes, {label}))
    if found is None:
        raise InputError(
            run_dir, f"'{label}' made no joint call here (no verdict records a position): nothing to order"
        )
    return found
