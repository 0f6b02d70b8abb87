"""The report as one self-contained HTML page: inline CSS, figures as data URIs, no script."""

from __future__ import annotations

import base64
from html import escape
from typing import TYPE_CHECKING

from radar_local.nuisance import WAYS
from radar_local.report.text import (
    ADAPTIVE_HEAD,
    NUISANCE_HEAD,
    PAIR_HEAD,
    SELF_EFFECT_HEAD,
    adaptive_line,
    adaptive_rows,
    agreement_line,
    cost_rows,
    double_count_line,
    global_line,
    injection_line,
    leakage_rows,
    nuisance_line,
    nuisance_rows,
    num,
    pair_rows,
    scores_line,
    self_effect_rows,
    verdict,
)

if TYPE_CHECKING:
    from radar_local.stats.result import AuditResult

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;
color:#222}
h1{font-size:1.6em}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:1em 0;font-size:.9em}
td,th{border:1px solid #ddd;padding:.3em .6em;text-align:left}
th{background:#f5f5f5}.gated{color:#999}.verdict li{margin:.3em 0}img{max-width:100%;height:auto}
.probe{background:#fafafa;border-left:3px solid #aaa;padding:.5em 1em;margin:.5em 0;white-space:pre-wrap}
"""


def html_img(name: str, data: bytes, alt: str) -> str:
    src = f"data:image/png;base64,{base64.b64encode(data).decode()}"
    return f'<figure><img id="fig-{name}" alt="{escape(alt)}" src="{src}"></figure>'


def html_table(head: list[str], rows: list[list[str]], classes: list[str] | None = None) -> str:
    out = ["<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>"]
    for i, r in enumerate(rows):
        cls = f' class="{classes[i]}"' if classes and classes[i] else ""
        out.append(f"<tr{cls}>" + "".join(f"<td>{escape(str(c))}</td>" for c in r) + "</tr>")
    return "".join(out) + "</table>"


def result_tables_html(r: AuditResult) -> str:
    """The verdict and the audit's tables (self-effects, leakage, pairs, globals, agreement): the
    report's core, and what a notebook shows for an AuditResult."""
    parts = [
        "<ul class='verdict'>" + "".join(f"<li>{escape(v)}</li>" for v in verdict(r)) + "</ul>",
        "<h3>Self-effects</h3>",
        html_table(SELF_EFFECT_HEAD, self_effect_rows(r)),
    ]
    head, rows = leakage_rows(r)
    parts += ["<h3>Leakage (row -&gt; column)</h3>", html_table(head, rows)]
    pairs = pair_rows(r)
    parts += [
        "<h3>Pairs</h3>",
        html_table(PAIR_HEAD, [cells for cells, _ in pairs], ["" if ok else "gated" for _, ok in pairs]),
    ]
    if (line := agreement_line(r)) is not None:
        parts.append(f"<p>{escape(line)}</p>")
    base = r.baselines.get("agreement")
    if base:
        parts.append(
            html_table(
                ["passive baseline", "Pearson", "Spearman", "MAE"],
                [[k, num(v["pearson"]), num(v["spearman"]), num(v["mae"], signed=False)] for k, v in base.items()],
            )
        )
    parts.append(f"<p>{escape(global_line(r))}</p><p>{escape(scores_line(r))}</p>")
    if (line := double_count_line(r)) is not None:
        parts.append(f"<p>{escape(line)}</p>")
    if (line := adaptive_line(r)) is not None:
        parts += ["<h3>Adaptive audit</h3>", f"<p>{escape(line)}</p>", html_table(ADAPTIVE_HEAD, adaptive_rows(r))]
    if (line := nuisance_line(r)) is not None:
        parts += ["<h3>Judge bias</h3>", f"<p>{escape(line)}</p>", html_table(NUISANCE_HEAD, nuisance_rows(r))]
    return "\n".join(parts)


def audit_html(
    r: AuditResult,
    figures: dict[str, bytes],
    examples: list[dict],
    run: dict,
    calibration: dict | None = None,
    pairs: list[dict] | None = None,
) -> str:
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>RADAR audit: {escape(r.generator)} -&gt; "
        f"{escape(r.verifier)}</title><style>{CSS}</style></head><body>",
        f"<h1>RADAR audit: {escape(r.generator)} &rarr; {escape(r.verifier)}</h1>",
        f"<p>Rubric <b>{escape(str(r.rubric))}</b>, {len(r.tasks)} tasks, {r.probes['directed']} steered probes, "
        f"tau = {r.tau}, {r.bootstrap['resamples']} bootstrap resamples.</p>",
        "<h2>Leakage</h2>",
        html_img("leakage", figures["leakage"], "leakage heatmap"),
        "<h2>Self-effects</h2>",
        html_img("self_effect", figures["self_effect"], "self-effect bars"),
        "<h2>Pairs</h2>",
        html_img("sym_asym", figures["sym_asym"], "Sym against Asym"),
        "<h2>Audit</h2>",
        result_tables_html(r),
    ]
    parts += [
        "<h2>Per-task spread</h2>",
        html_img("task_spread", figures["task_spread"], "per-task leakage spread"),
        "<h2>Probe budget</h2>",
        html_img("budget", figures["budget"], "probe budget curve"),
        "<h2>Example probes</h2>",
    ]
    for ex in examples:
        parts.append(
            f"<h3>{escape(ex['a'])} / {escape(ex['b'])} (Sym {num(ex['sym'])}, {escape(ex['flags'] or 'no flag')})</h3>"
        )
        for pr in ex["probes"]:
            scores = ", ".join(f"{c} {s}" for c, s in pr["scores"].items())
            why = " ".join(f"{c}: {escape(str(t))}" for c, t in pr["rationale"].items())
            parts.append(
                f"<p>Task {escape(pr['task_id'])}, steered {escape(pr['target'])} {escape(pr['direction'])}; "
                f"scores: {escape(scores)}</p><div class='probe'>{escape(pr['text'])}</div><p><i>{why}</i></p>"
            )
    if "nuisance" in figures:
        parts += ["<h2>Judge bias</h2>", html_img("nuisance", figures["nuisance"], "judge bias heatmap")]
        for ex in pairs or []:
            parts.append(
                f"<h3>{escape(ex['criterion'])} with {escape(ex['attribute'])} ({num(ex['sensitivity'])}, "
                f"{escape(ex['flag'] or 'no flag')})</h3>"
            )
            for way in WAYS:
                side = ex[way]
                parts.append(
                    f"<p>{way}, scored {side['score']} (task {escape(ex['task_id'])}):</p>"
                    f"<div class='probe'>{escape(side['text'])}</div><p><i>{escape(str(side['rationale']))}</i></p>"
                )
    parts += ["<h2>Probes that address the judge</h2>", f"<p>{escape(injection_line(run))}</p>"]
    injected = (run.get("injection") or {}).get("examples", [])
    if injected:
        parts.append(
            html_table(
                ["steered", "matched", "probe text"],
                [
                    [f"{ex['target'] or 'unconditioned'} {ex['direction']}", ", ".join(ex["matched"]), ex["text"]]
                    for ex in injected
                ],
            )
        )
    if calibration:
        parts += ["<h2>Judge calibration</h2>", calibration_table_html(calibration)]
    parts += [
        "<h2>Cost</h2>",
        html_table(
            [
                "stage",
                "calls",
                "prompt tokens",
                "output tokens",
                "seconds",
                "tokens/s",
                "parse rate",
                "prefix-cache hits",
            ],
            cost_rows(run),
        ),
    ]
    parts.append("</body></html>")
    return "\n".join(parts)


def calibration_table_html(cal: dict) -> str:
    rows = [
        [v, c, num(d["discrimination"], signed=False), num(cal["stability"].get(c), signed=False)]
        for v, per in cal["verifiers"].items()
        for c, d in per.items()
    ]
    out = html_table(["verifier", "criterion", "discrimination (sd of scores)", "stability across judges"], rows)
    if cal.get("agreement"):
        out += html_table(
            ["verifier pair", "criterion", "agreement (1 - mean |diff|)", "n"],
            [
                [pair, c, num(v["agreement"], signed=False), v["n"]]
                for pair, per in cal["agreement"].items()
                for c, v in per.items()
            ],
        )
    return out
