"""The audit printed to a terminal with rich."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from radar_local.report.text import (
    NUISANCE_HEAD,
    PAIR_HEAD,
    SELF_EFFECT_HEAD,
    adaptive_line,
    agreement_line,
    cost_rows,
    double_count_line,
    global_line,
    injection_line,
    leakage_rows,
    nuisance_line,
    nuisance_rows,
    pair_rows,
    scores_line,
    self_effect_rows,
    verdict,
)

if TYPE_CHECKING:
    from radar_local.rundir import RunDir
    from radar_local.stats.result import AuditResult


def print_audit(result: AuditResult, console: Console | None = None) -> None:
    console = console or Console(width=max(Console().width, 150))
    console.print(
        f"[bold]RADAR audit[/bold]  {result.generator} -> {result.verifier}"
        f"  ({result.probes['directed']} probes, {len(result.tasks)} tasks, tau={result.tau})"
    )
    _table(
        console,
        "Self-effects (reliability gate)",
        SELF_EFFECT_HEAD,
        [
            (row[:3] + [row[3] if row[3].startswith("yes") else f"[red]{row[3]}[/red]"])
            for row in self_effect_rows(result)
        ],
    )
    head, rows = leakage_rows(result)
    _table(console, "Leakage (row -> column)", [head[0]] + [c[:12] for c in head[1:]], rows, right=True)
    _table(console, "Pairs ranked by symmetric coupling", PAIR_HEAD, [cells for cells, _ in pair_rows(result)])
    console.print(global_line(result))
    console.print(scores_line(result))
    if (line := double_count_line(result)) is not None:
        console.print(line)
    if (line := agreement_line(result)) is not None:
        console.print(line)
    if (line := adaptive_line(result)) is not None:
        console.print(line)
    if (line := nuisance_line(result)) is not None:
        _table(console, "Judge bias: sensitivity to nuisance attributes", NUISANCE_HEAD, nuisance_rows(result))
        console.print(line)
    for line in verdict(result):
        console.print(f"- {line}")


def _table(console: Console, title: str, head: list[str], rows: list[list[str]], right: bool = False) -> None:
    t = Table(title=title)
    for i, col in enumerate(head):
        t.add_column(col, justify="right" if right and i else "left")
    for row in rows:
        t.add_row(*row)
    console.print(t)


def print_run(run: RunDir, console: Console | None = None) -> None:
    """Cost and parse-rate lines of a run, the report's cost table as text."""
    console = console or Console()
    info = run.info()
    for stage, calls, prompt, output, seconds, tps, rate, cache in cost_rows(info):
        extra = "".join(
            f", {label} {v}" for label, v in (("parse rate", rate), ("prefix-cache hit rate", cache)) if v != "-"
        )
        console.print(
            f"{stage}: {calls} calls, {prompt} prompt + {output} output tokens, {seconds} s, {tps} tokens/s{extra}"
        )
    console.print(injection_line(info))
    console.print(f"Run directory: {run.root}")
