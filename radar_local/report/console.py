"""The audit printed to a terminal with rich."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from radar_local.report.text import flag_text, injection_line, interval, num, verdict


def print_audit(result: dict, console: Console | None = None) -> None:
    console = console or Console(width=max(Console().width, 150))
    crit = result["criteria"]
    console.print(f"[bold]RADAR audit[/bold]  {result['generator']} -> {result['verifier']}"
                  f"  ({result['probes']['directed']} probes, {len(result['tasks'])} tasks, tau={result['tau']})")

    t = Table(title="Self-effects (reliability gate)")
    for col in ("criterion", "self-effect", "95% CI", "reliable"):
        t.add_column(col)
    for c in crit:
        ci = (result["self_effect_ci"] or {}).get(c)
        t.add_row(c, num(result["self_effect"][c]), interval(ci), "yes" if result["reliable"][c] else "[red]no[/red]")
    console.print(t)

    t = Table(title="Leakage (row -> column)")
    t.add_column("source")
    for c in crit:
        t.add_column(c[:12], justify="right")
    for a in crit:
        mark = "" if result["reliable"][a] else " (gated)"
        t.add_row(a + mark, *(num(result["leakage"][a][b]) for b in crit))
    console.print(t)

    t = Table(title="Pairs ranked by symmetric coupling")
    for col in ("pair", "l_ab", "l_ba", "Sym", "Sym 95% CI", "Asym", "human r", "flag"):
        t.add_column(col)
    for p in result["pairs"]:
        t.add_row(f"{p['a']} / {p['b']}", num(p["leak_ab"]), num(p["leak_ba"]), num(p["sym"]),
                  interval((p["ci"] or {}).get("sym")), num(p["asym"], signed=False), num(p["human_r"]), flag_text(p))
    console.print(t)

    g = result["global"]
    console.print(f"Global: positive {num(g['positive'])}, tension {num(g['tension'])}, max coupling {num(g['max_coupling'])}")
    if "agreement" in result:
        a = result["agreement"]
        console.print(f"Agreement with human r over {a['n_pairs']} reliable pairs: Pearson {num(a['pearson'])}, "
                      f"Spearman {num(a['spearman'])}, MAE {num(a['mae'], signed=False)}")
    for line in verdict(result):
        console.print(f"- {line}")


def print_run(run_dir, console: Console | None = None) -> None:
    """Cost and parse-rate lines of a run (run.json), the report's cost table as text."""
    import json
    from pathlib import Path

    from radar_local.report.build import cost_rows

    console = console or Console()
    run = json.loads((Path(run_dir) / "run.json").read_text())
    for stage, calls, prompt, output, seconds, tps, rate, cache in cost_rows(run):
        extra = "".join(f", {label} {v}" for label, v in (("parse rate", rate), ("prefix-cache hit rate", cache)) if v != "-")
        console.print(f"{stage}: {calls} calls, {prompt} prompt + {output} output tokens, {seconds} s, {tps} tokens/s{extra}")
    console.print(injection_line(run))
    console.print(f"Run directory: {run_dir}")
