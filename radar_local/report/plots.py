"""Audit figures, drawn as SVG (report/svg.py) from an AuditResult. Each returns a Chart; `Chart.svg()` is the file."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from radar_local.report.svg import FONT, ORANGES, RDBU_R, Chart, colour, dark, labelled, slant_room, span, text_width
from radar_local.report.text import CI, at_level, flag_text, pair_records
from radar_local.stats.bias import Bias

if TYPE_CHECKING:
    from collections.abc import Sequence

    from radar_local.stats.result import AuditResult

FLAG_COLOURS = {
    "bidirectional cluster": "#d62728",
    "directional": "#ff7f0e",
    "tradeoff": "#1f77b4",
    None: "#7f7f7f",
    "gated": "#c7c7c7",
}
CELL = (84, 54)  # a heatmap cell, px


def _heatmap(
    chart_title: str,
    rows: Sequence[str],
    cols: Sequence[str],
    value: np.ndarray,
    texts: dict[tuple[int, int], str],
    scale: tuple[Sequence[str], float, float, str],
    hatched: Sequence[int] = (),
    labels: tuple[str, str] = ("", ""),
) -> Chart:
    """Cells coloured by value (blank where undefined), each with its text; hatched rows are gated or unsteered."""
    cmap, lo, hi, bar = scale
    chart = Chart(
        chart_title,
        CELL[0] * len(cols),
        CELL[1] * max(len(rows), 1),
        left=max(map(text_width, rows), default=0) + (40 if labels[1] else 14),
        bottom=slant_room(cols) + (24 if labels[0] else 4),
        right=90,
    )
    chart.scales(("band", 0, len(cols)), ("band", 0, max(len(rows), 1)))
    for i in range(len(rows)):
        for j in range(len(cols)):
            v = value[i, j]
            fill = "#ffffff" if np.isnan(v) else colour(cmap, (v - lo) / (hi - lo))
            chart.rect(chart.px(j), chart.py(i), CELL[0], CELL[1], fill, "#ffffff")
            if (i, j) in texts:
                chart.text(chart.px(j + 0.5), chart.py(i + 0.5), texts[i, j], FONT - 2,
                           fill="#ffffff" if dark(fill) else "#000000", role="texts")  # fmt: skip
    for i in hatched:
        chart.rect(chart.left, chart.py(i), chart.width, CELL[1], "url(#hatch)")
    chart.frame()
    chart.x_ticks([(j + 0.5, c) for j, c in enumerate(cols)], labels[0], slanted=True)
    chart.y_ticks([(i + 0.5, r) for i, r in enumerate(rows)], labels[1])
    chart.colorbar(cmap, lo, hi, bar)
    return chart


def leakage_heatmap(result: AuditResult) -> Chart:
    """Leakage (row -> column) with CI half-widths; gated (unreliable) rows hatched and labelled."""
    crit = result.criteria
    lk = result.leakage.to_numpy()
    half = None if result.leakage_ci is None else ((result.leakage_ci[1] - result.leakage_ci[0]) / 2).to_numpy()
    texts = {}
    for i in range(len(crit)):
        for j in range(len(crit)):
            texts[i, j] = "n/a" if np.isnan(lk[i, j]) else f"{lk[i, j]:+.2f}"
            if half is not None and not np.isnan(half[i, j]) and i != j:
                texts[i, j] += f"\n±{half[i, j]:.2f}"
    return _heatmap(
        at_level(f"Leakage with {CI} half-width", result.bootstrap.level),
        [f"{c} (gated)" if not result.reliable[c] else c for c in crit],
        crit,
        lk,
        texts,
        (RDBU_R, -1.0, 1.0, "leakage"),
        [i for i, c in enumerate(crit) if not result.reliable[c]],
        ("target criterion (scored)", "source criterion (steered)"),
    )


def self_effect_bars(result: AuditResult) -> Chart:
    crit = result.criteria
    se = result.self_effect[crit].to_numpy(float)
    low = min(-0.1, float(np.nanmin(np.r_[se, 0])) - 0.1)
    chart = Chart("Self-effects (red: below the gate)", 70 * len(crit), 230, left=64, bottom=slant_room(crit))
    chart.scales(("band", 0, len(crit)), ("linear", low, 1.05))
    for i, c in enumerate(crit):
        v = float(np.nan_to_num(se[i]))
        top, base = chart.py(max(v, 0.0)), chart.py(min(v, 0.0))
        chart.rect(chart.px(i + 0.1), top, chart.px(i + 0.9) - chart.px(i + 0.1), base - top,
                   "#2ca02c" if result.reliable[c] else "#d62728")  # fmt: skip
        chart.mark("bars", v)
    if result.self_effect_ci is not None:
        # Drawn from its ends, not as distances from the point: an interval need not bracket its estimate.
        for i, (lo, hi) in enumerate(zip(result.self_effect_ci["low"], result.self_effect_ci["high"])):
            if np.isnan(lo) or np.isnan(hi):
                continue
            x = chart.px(i + 0.5)
            chart.line(x, chart.py(lo), x, chart.py(hi))
            for end in (lo, hi):
                chart.line(x - 4, chart.py(end), x + 4, chart.py(end))
            chart.mark("intervals", (float(lo), float(hi)))
    chart.reference("y", result.tau, "#000", "5,3")
    chart.frame()
    chart.x_ticks([(i + 0.5, c) for i, c in enumerate(crit)], slanted=True)
    chart.y_ticks(labelled(low, 1.05), "self-effect")
    chart.legend([(f"tau = {result.tau}", "#000", "5,3")])
    return chart


def sym_asym_scatter(result: AuditResult) -> Chart:
    th = result.thresholds
    points = [p for p in pair_records(result) if not (np.isnan(p["sym"]) or np.isnan(p["asym"]))]
    chart = Chart("Pairs: symmetric coupling vs asymmetry", 480, 330, left=64, bottom=44)
    x = span([p["sym"] for p in points] + [th["cluster_sym"], 0.0])
    y = span([p["asym"] for p in points] + [th["directional_asym"], 0.0])
    chart.scales(("linear", *x), ("linear", *y))
    chart.reference("x", th["cluster_sym"], "#d62728", "2,2")
    chart.reference("y", th["directional_asym"], "#ff7f0e", "2,2")
    for p in points:
        chart.circle(chart.px(p["sym"]), chart.py(p["asym"]), 4, FLAG_COLOURS.get((p["flags"] or [None])[0], "#7f7f7f"))
        label = f"{p['a']}/{p['b']}"
        if p["flags"] and p["flags"] != ["gated"]:
            label += f" ({flag_text(p)})"
        at = chart.px(p["sym"]) + 6  # right of its point, the figure widened to hold it
        chart.right = max(chart.right, at + text_width(label, FONT - 3) - chart.left - chart.width + 6)
        chart.text(at, chart.py(p["asym"]) - 7, label, FONT - 3, "start", role="texts")
    if not points:
        chart.message("no pair has defined leakage\n(every criterion gated)")
    chart.frame()
    chart.x_ticks(labelled(*x), "SymCoupling")
    chart.y_ticks(labelled(*y), "Asymmetry")
    return chart


def task_spread_heatmap(result: AuditResult) -> Chart:
    """sigma_ij (eq. 6): which couplings depend on the task."""
    crit = result.criteria
    sd = result.leakage_sd.to_numpy().copy()
    np.fill_diagonal(sd, np.nan)
    texts = {  # undefined with fewer than two tasks: n/a, never a reassuring 0
        (i, j): "n/a" if np.isnan(sd[i, j]) else f"{sd[i, j]:.2f}"
        for i in range(len(crit))
        for j in range(len(crit))
        if i != j
    }
    top = max(0.5, float(np.nanmax(np.r_[sd.ravel(), 0])))
    title = f"Per-task leakage spread over {len(result.tasks)} tasks"
    return _heatmap(title, crit, crit, sd, texts, (ORANGES, 0.0, top, "sd of leakage across tasks"))


def nuisance_heatmap(result: AuditResult) -> Chart:
    """Sensitivity of each criterion (column) to each nuisance attribute (row), 0-1 scale; * marks a biased
    cell, a hatched row an attribute the manipulation check found not steered."""
    rows = result.bias_rows
    attributes, crit = sorted({r.attribute for r in rows}), result.criteria
    value = np.full((len(attributes), len(crit)), np.nan)
    texts = {}
    for r in rows:
        i, j = attributes.index(r.attribute), crit.index(r.criterion)
        value[i, j] = np.nan if r.sensitivity is None else r.sensitivity
        texts[i, j] = "n/a" if np.isnan(value[i, j]) else f"{value[i, j]:+.2f}{'*' if r.flag == 'biased' else ''}"
    top = max(0.3, float(np.nanmax(np.abs(np.r_[value.ravel(), 0]))))
    steered = (b.manipulation if (b := result.measured(Bias)) else None) or {}
    unsteered = [i for i, a in enumerate(attributes) if steered.get(a, {}).get("steered") is False]
    title = "Judge bias: sensitivity to nuisance attributes (* biased)"
    scale = (RDBU_R, -top, top, "score(up) - score(down), 0-1 scale")
    return _heatmap(title, attributes, crit, value, texts, scale, unsteered)


def budget_curve(result: AuditResult) -> Chart:
    """Appendix G: agreement (or Sym) against the probe budget N, mean +- sd over subsets."""
    rows = result.budget or []
    ns = [r.n for r in rows] or [1]
    lines: list[tuple[str, str, list[float], list[float]]] = []  # (label, colour, means, sds)
    if rows and rows[0].pearson is not None:
        for key, stroke in (("pearson", "#1f77b4"), ("spearman", "#2ca02c"), ("mae", "#d62728")):
            spreads = [getattr(r, key) for r in rows]
            mean = [np.nan if s is None or s.mean is None else s.mean for s in spreads]
            sd = [np.nan if s is None or s.sd is None else s.sd for s in spreads]
            lines.append((key, stroke, mean, sd))
        ylabel = "agreement with human r"
    else:
        for idx in range(len(rows[0].sym or []) if rows else 0):
            mean = [np.nan if r.sym is None or r.sym[idx].mean is None else r.sym[idx].mean for r in rows]
            lines.append(("", "#1f77b4", mean, [np.nan] * len(rows)))
        ylabel = "SymCoupling per pair" if rows else ""
    ends = [v for _, _, m, s in lines for a, b in zip(m, s) for v in (a - np.nan_to_num(b), a + np.nan_to_num(b))]
    defined = [float(v) for v in ends if np.isfinite(v)]
    chart = Chart("Probe budget (30 stratified subsets per N; last: all probes)", 440, 250, left=64, bottom=44)
    y = span(defined or [0.0, 1.0])
    chart.scales(("log", min(ns) / 1.3, max(ns) * 1.3), ("linear", *y))
    for _, stroke, mean, sd in lines:
        drawn = [(chart.px(n), chart.py(m)) for n, m in zip(ns, mean) if np.isfinite(m)]
        if drawn:
            chart.polyline(drawn, stroke)
        for n, m, s in zip(ns, mean, sd):
            if np.isfinite(m):
                chart.circle(chart.px(n), chart.py(m), 3, stroke)
                if np.isfinite(s):
                    chart.line(chart.px(n), chart.py(m - s), chart.px(n), chart.py(m + s), stroke)
    if not defined:
        chart.message("no defined value at any budget")
    chart.frame()
    names = [f"all ({r.n})" if r.all_probes else str(r.n) for r in rows] or ["1"]
    chart.x_ticks(list(zip(ns, names)), "probes per (task, criterion, direction)")
    chart.y_ticks(labelled(*y), ylabel)
    if named := [(name, stroke, "") for name, stroke, _, _ in lines if name]:
        chart.legend(named)
    return chart


FIGURES: dict[str, Callable[[AuditResult], Chart]] = {
    "leakage": leakage_heatmap,
    "self_effect": self_effect_bars,
    "sym_asym": sym_asym_scatter,
    "task_spread": task_spread_heatmap,
    "budget": budget_curve,
}


COUPLING = ("leakage", "sym_asym", "task_spread", "budget")  # drawn where a rubric has two criteria or more


def figures_for(result: AuditResult) -> dict[str, Callable[[AuditResult], Chart]]:
    """The report's figures for this result: the bias heatmap where it measured nuisance attributes; of a rubric of
    one criterion, no coupling's."""
    figures = {**FIGURES, "nuisance": nuisance_heatmap} if result.bias_rows else FIGURES
    return figures if len(result.criteria) > 1 else {k: f for k, f in figures.items() if k not in COUPLING}
