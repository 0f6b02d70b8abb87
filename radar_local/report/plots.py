"""Audit figures (matplotlib, Agg backend) built from a stats dict. Each returns a Figure."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from radar_local.report.text import CI, at_level, flag_text, pair_records

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from radar_local.stats.result import AuditResult

FLAG_COLOURS = {
    "bidirectional cluster": "#d62728",
    "directional": "#ff7f0e",
    "tradeoff": "#1f77b4",
    None: "#7f7f7f",
    "gated": "#c7c7c7",
}


def _figure(w: float, h: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(w, h), dpi=100, layout="constrained")


def leakage_heatmap(result: AuditResult) -> Figure:
    """Leakage (row -> column) with CI half-widths; gated (unreliable) rows hatched and labelled."""
    crit = result.criteria
    k = len(crit)
    lk = result.leakage.to_numpy()
    fig = _figure(1.3 * k + 2.5, 1.0 * k + 1.5)
    ax = fig.add_subplot()
    im = ax.imshow(np.ma.masked_invalid(lk), cmap="RdBu_r", vmin=-1, vmax=1)
    fig.colorbar(im, ax=ax, label="leakage")
    half = None if result.leakage_ci is None else ((result.leakage_ci[1] - result.leakage_ci[0]) / 2).to_numpy()
    for i, a in enumerate(crit):
        if not result.reliable[a]:
            ax.add_patch(_hatch(i, k))
        for j in range(len(crit)):
            text = "n/a" if np.isnan(lk[i, j]) else f"{lk[i, j]:+.2f}"
            if half is not None and not np.isnan(half[i, j]) and i != j:
                text += f"\n±{half[i, j]:.2f}"
            dark = not np.isnan(lk[i, j]) and abs(lk[i, j]) > 0.6
            ax.text(j, i, text, ha="center", va="center", fontsize=8, color="white" if dark else "black")
    ax.set_xticks(range(k), crit, rotation=30, ha="right")
    ax.set_yticks(range(k), [f"{c} (gated)" if not result.reliable[c] else c for c in crit])
    ax.set_xlabel("target criterion (scored)")
    ax.set_ylabel("source criterion (steered)")
    ax.set_title(at_level(f"Leakage with {CI} half-width", result.bootstrap.level))
    return fig


def _hatch(row: int, k: int):
    from matplotlib.patches import Rectangle

    return Rectangle((-0.5, row - 0.5), k, 1, fill=False, hatch="//", edgecolor="#999999", lw=0)


def self_effect_bars(result: AuditResult) -> Figure:
    crit = result.criteria
    se = result.self_effect[crit].to_numpy()
    fig = _figure(1.0 * len(crit) + 2, 3.5)
    ax = fig.add_subplot()
    colours = ["#2ca02c" if result.reliable[c] else "#d62728" for c in crit]
    ax.bar(crit, np.nan_to_num(se), color=colours)
    if result.self_effect_ci is not None:
        lo, hi = result.self_effect_ci["low"].to_numpy(), result.self_effect_ci["high"].to_numpy()
        # Drawn from its ends, not as distances from the point: an interval need not bracket its estimate.
        ax.errorbar(
            range(len(crit)),
            np.nan_to_num((lo + hi) / 2),
            yerr=np.nan_to_num((hi - lo) / 2),
            fmt="none",
            ecolor="black",
            capsize=3,
        )
    ax.axhline(result.tau, color="black", ls="--", label=f"tau = {result.tau}")
    ax.set_ylabel("self-effect")
    ax.set_ylim(min(-0.1, np.nanmin(np.r_[se, 0]) - 0.1), 1.05)
    ax.set_title("Self-effects (red: below the gate)")
    ax.legend(loc="upper right")
    ax.tick_params(axis="x", rotation=30)
    return fig


def sym_asym_scatter(result: AuditResult) -> Figure:
    fig = _figure(6, 4.5)
    ax = fig.add_subplot()
    th = result.thresholds
    plotted = False
    for p in pair_records(result):
        if np.isnan(p["sym"]) or np.isnan(p["asym"]):
            continue
        ax.scatter(p["sym"], p["asym"], color=FLAG_COLOURS.get((p["flags"] or [None])[0], "#7f7f7f"), s=40)
        label = f"{p['a']}/{p['b']}"
        if p["flags"] and p["flags"] != ["gated"]:
            label += f" ({flag_text(p)})"
        ax.annotate(label, (p["sym"], p["asym"]), fontsize=7, xytext=(4, 3), textcoords="offset points")
        plotted = True
    if not plotted:
        ax.text(
            0.5,
            0.5,
            "no pair has defined leakage\n(every criterion gated)",
            ha="center",
            va="center",
            transform=ax.transAxes,
        )
    ax.axvline(th["cluster_sym"], color="#d62728", ls=":", lw=1)
    ax.axhline(th["directional_asym"], color="#ff7f0e", ls=":", lw=1)
    ax.set_xlabel("SymCoupling")
    ax.set_ylabel("Asymmetry")
    ax.set_title("Pairs: symmetric coupling vs asymmetry")
    return fig


def task_spread_heatmap(result: AuditResult) -> Figure:
    """sigma_ij (eq. 6): which couplings depend on the task."""
    crit = result.criteria
    sd = result.leakage_sd.to_numpy().copy()
    np.fill_diagonal(sd, np.nan)
    fig = _figure(1.3 * len(crit) + 2.5, 1.0 * len(crit) + 1.5)
    ax = fig.add_subplot()
    im = ax.imshow(np.ma.masked_invalid(sd), cmap="Oranges", vmin=0, vmax=max(0.5, np.nanmax(np.r_[sd.ravel(), 0])))
    fig.colorbar(im, ax=ax, label="sd of leakage across tasks")
    for i in range(len(crit)):
        for j in range(len(crit)):
            if i != j:  # undefined with fewer than two tasks: n/a, never a reassuring 0
                ax.text(j, i, "n/a" if np.isnan(sd[i, j]) else f"{sd[i, j]:.2f}", ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(crit)), crit, rotation=30, ha="right")
    ax.set_yticks(range(len(crit)), crit)
    ax.set_title(f"Per-task leakage spread over {len(result.tasks)} tasks")
    return fig


def nuisance_heatmap(result: AuditResult) -> Figure:
    """Sensitivity of each criterion (column) to each nuisance attribute (row), 0-1 scale; * marks a biased
    cell, a hatched row an attribute the manipulation check found not steered."""
    rows = result.bias_rows
    attributes, crit = sorted({r.attribute for r in rows}), result.criteria
    value = np.full((len(attributes), len(crit)), np.nan)
    marks = {}
    for r in rows:
        i, j = attributes.index(r.attribute), crit.index(r.criterion)
        value[i, j] = np.nan if r.sensitivity is None else r.sensitivity
        marks[i, j] = "*" if r.flag == "biased" else ""
    fig = _figure(1.3 * len(crit) + 2.5, 0.8 * max(len(attributes), 1) + 1.8)
    ax = fig.add_subplot()
    top = max(0.3, float(np.nanmax(np.abs(np.r_[value.ravel(), 0]))))
    im = ax.imshow(np.ma.masked_invalid(value), cmap="RdBu_r", vmin=-top, vmax=top, aspect="auto")
    fig.colorbar(im, ax=ax, label="score(up) - score(down), 0-1 scale")
    for (i, j), mark in marks.items():
        text = "n/a" if np.isnan(value[i, j]) else f"{value[i, j]:+.2f}{mark}"
        ax.text(j, i, text, ha="center", va="center", fontsize=8)
    steered = (result.bias.manipulation if result.bias else None) or {}
    for i, a in enumerate(attributes):
        if steered.get(a, {}).get("steered") is False:
            ax.add_patch(_hatch(i, len(crit)))
    ax.set_xticks(range(len(crit)), crit, rotation=30, ha="right")
    ax.set_yticks(range(len(attributes)), attributes)
    ax.set_title("Judge bias: sensitivity to nuisance attributes (* biased)")
    return fig


def budget_curve(result: AuditResult) -> Figure:
    """Appendix G: agreement (or Sym) against the probe budget N, mean +- sd over subsets."""
    fig = _figure(6, 3.8)
    ax = fig.add_subplot()
    rows = result.budget or []
    ns = [r.n for r in rows]
    if rows and rows[0].pearson is not None:
        for key, colour in (("pearson", "#1f77b4"), ("spearman", "#2ca02c"), ("mae", "#d62728")):
            spreads = [getattr(r, key) for r in rows]
            mean = [np.nan if s is None or s.mean is None else s.mean for s in spreads]
            sd = [np.nan if s is None or s.sd is None else s.sd for s in spreads]
            ax.errorbar(ns, mean, yerr=sd, marker="o", capsize=3, color=colour, label=key)
        ax.set_ylabel("agreement with human r")
    elif rows:
        for idx in range(len(rows[0].sym or [])):
            mean = [np.nan if r.sym is None or r.sym[idx].mean is None else r.sym[idx].mean for r in rows]
            ax.plot(ns, mean, marker="o", lw=1)
        ax.set_ylabel("SymCoupling per pair")
    if not any(np.isfinite(np.asarray(line.get_ydata(), float)).any() for line in ax.get_lines()):
        ax.text(0.5, 0.5, "no defined value at any budget", ha="center", va="center", transform=ax.transAxes)
    ax.set_xscale("log")
    ax.set_xticks(ns or [1], [f"all ({r.n})" if r.all_probes else str(r.n) for r in rows] or ["1"])
    ax.set_xlabel("probes per (task, criterion, direction)")
    ax.set_title("Probe budget (30 stratified subsets per N; last: all probes)")
    if ax.get_legend_handles_labels()[0]:
        ax.legend()
    return fig


def png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


FIGURES: dict[str, Callable[[AuditResult], Figure]] = {
    "leakage": leakage_heatmap,
    "self_effect": self_effect_bars,
    "sym_asym": sym_asym_scatter,
    "task_spread": task_spread_heatmap,
    "budget": budget_curve,
}


COUPLING = ("leakage", "sym_asym", "task_spread", "budget")  # drawn where a rubric has two criteria or more


def figures_for(result: AuditResult) -> dict[str, Callable[[AuditResult], Figure]]:
    """The report's figures for this result: the bias heatmap where it measured nuisance attributes; of a rubric of
    one criterion, no coupling's."""
    figures = {**FIGURES, "nuisance": nuisance_heatmap} if result.bias_rows else FIGURES
    return figures if len(result.criteria) > 1 else {k: f for k, f in figures.items() if k not in COUPLING}
