"""The audit printed to a terminal with rich: the outline's audit sections (radar_local.report.outline)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table as RichTable

from radar_local.report.outline import Line, Table, audit_sections, pairwise_audit_sections, plain
from radar_local.report.text import cost_rows, injection_line
from radar_local.stats.pairwise_audit import PairwiseAudit

if TYPE_CHECKING:
    from radar_local.rundir import RunDir
    from radar_local.stats.result import AuditResult


def _text(line: str | Line) -> str:
    return escape(line if isinstance(line, str) else "".join(map(plain, line)))


def print_audit(result: AuditResult | PairwiseAudit, console: Console | None = None) -> None:
    console = console or Console(width=max(Console().width, 150))
    if isinstance(result, PairwiseAudit):  # a judge asked only pairs
        console.print(f"[bold]RADAR pairwise audit[/bold]  {escape(result.generator)} -> {escape(result.verifier)}"
                      f"  ({result.probes} probes, {len(result.tasks)} tasks, tau={result.block.tau})")  # fmt: skip
        sections = pairwise_audit_sections(result)
    else:
        console.print(
            f"[bold]RADAR audit[/bold]  {escape(result.generator)} -> {escape(result.verifier)}"
            f"  ({result.probes.directed} probes, {len(result.tasks)} tasks, tau={result.tau})"
        )
        sections = audit_sections(result)
    for s in sections[1:] + sections[:1]:  # the findings last, where a terminal leaves them in view
        titled = False
        for b in s.blocks:
            if isinstance(b, Table):
                _table(console, None if titled else _text(s.title), b)
                titled = True
            elif isinstance(b, tuple):
                console.print(("- " if s.bullets else "") + _text(b))


def _table(console: Console, title: str | None, table: Table) -> None:
    t = RichTable(title=title)
    for i, col in enumerate(table.head):
        t.add_column(col[:12] if table.numeric and i else col, justify="right" if table.numeric and i else "left")
    for i, row in enumerate(table.rows):
        marked = table.marked is not None and table.marked[i]
        t.add_row(*(escape(plain(c)) for c in row), style="red" if marked else None)
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
