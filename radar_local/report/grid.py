"""The grid summary as Markdown and as a self-contained HTML page (same tables as the audit report)."""

from __future__ import annotations

from html import escape

from radar_local.report.html import CSS, calibration_table_html, html_table
from radar_local.report.text import CI, interval, num


def _cell_rows(summary: dict) -> list[list[str]]:
    return [
        [
            c["generator"],
            c["verifier"],
            num(c.get("pearson")),
            num(c.get("spearman")),
            num(c.get("mae"), signed=False),
            str(c.get("n_pairs", "-")),
            str(c["reliable_criteria"]),
        ]
        for c in summary["cells"]
    ]


def _distance_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    vs = list(summary["verifier_distance"])
    return [""] + vs, [[v] + [num(summary["verifier_distance"][v][w], signed=False) for w in vs] for v in vs]


def _pair_rows(summary: dict) -> list[list[str]]:
    return [
        [
            f"{p['a']} / {p['b']}",
            num(p["sym_mean"]),
            num(p["sym_sd"], signed=False),
            str(p["cells"]),
            p["stability"] or "-",
        ]
        for p in summary["pairs"]
    ]


CELL_HEAD = ["generator", "verifier", "Pearson", "Spearman", "MAE", "pairs", "reliable criteria"]
PAIR_HEAD = ["pair", "mean Sym", "sd across cells", "cells", "stability"]


BIAS_HEAD = ["generator", "verifier", "attribute", "criterion", "sensitivity", CI, "flag"]


def _bias_rows(summary: dict) -> list[list[str]]:
    return [
        [
            b["generator"],
            b["verifier"],
            b["attribute"],
            b["criterion"],
            num(b["sensitivity"]),
            interval(b["ci"]),
            " ".join(x for x in (b["flag"], b.get("evidence")) if x),
        ]
        for b in summary["bias"]
    ]


def grid_markdown(summary: dict) -> str:
    def table(head, rows):
        return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + ["| " + " | ".join(r) + " |" for r in rows]

    md = ["# RADAR grid", "", "## Agreement with the human reference per cell (Table 9)", ""]
    md += table(CELL_HEAD, _cell_rows(summary))
    head, rows = _distance_rows(summary)
    md += ["", "## Distance between verifiers' leakage matrices (RMS over reliable off-diagonal cells)", ""]
    md += table(head, rows)
    md += ["", "## Pair coupling across cells", ""] + table(PAIR_HEAD, _pair_rows(summary))
    if summary.get("bias"):
        md += ["", "## Judge bias per cell (sensitivity to nuisance attributes, 0-1 scale)", ""]
        md += table(BIAS_HEAD, _bias_rows(summary))
    for gen, cal in summary.get("calibration", {}).items():
        md += ["", f"## Judge calibration on {gen}'s probes", ""]
        md += table(
            ["verifier", "criterion", "discrimination", "stability"],
            [
                [v, c, num(d["discrimination"], signed=False), num(cal["stability"].get(c), signed=False)]
                for v, per in cal["verifiers"].items()
                for c, d in per.items()
            ],
        )
        md += [""] + table(
            ["verifier pair", "criterion", "agreement"],
            [[p, c, num(x["agreement"], signed=False)] for p, per in cal["agreement"].items() for c, x in per.items()],
        )
    return "\n".join(md) + "\n"


def grid_html(summary: dict) -> str:
    head, rows = _distance_rows(summary)
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>RADAR grid</title><style>{CSS}</style></head><body>",
        "<h1>RADAR grid</h1>",
        "<h2>Agreement with the human reference per cell (Table 9)</h2>",
        html_table(CELL_HEAD, _cell_rows(summary)),
        "<h2>Distance between verifiers' leakage matrices</h2>",
        html_table(head, rows),
        "<h2>Pair coupling across cells</h2>",
        html_table(PAIR_HEAD, _pair_rows(summary)),
    ]
    if summary.get("bias"):
        parts += [
            "<h2>Judge bias per cell (sensitivity to nuisance attributes)</h2>",
            html_table(BIAS_HEAD, _bias_rows(summary)),
        ]
    for gen, cal in summary.get("calibration", {}).items():
        parts += [f"<h2>Judge calibration on {escape(gen)}'s probes</h2>", calibration_table_html(cal)]
    return "\n".join(parts + ["</body></html>"])
