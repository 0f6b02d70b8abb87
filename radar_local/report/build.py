"""`radar report`: report.html (self-contained) and report.md with its figures as PNG files beside it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

from radar_local.nuisance import WAYS
from radar_local.report.examples import example_probes, nuisance_examples
from radar_local.report.html import audit_html
from radar_local.report.markdown import audit_markdown, fenced, inline
from radar_local.report.text import cost_rows, injection_line, num
from radar_local.store import make_folder, write_atomic

if TYPE_CHECKING:
    from radar_local.rundir import RunDir
    from radar_local.stats.result import AuditResult

FIGURE_TITLES = {
    "leakage": "Leakage",
    "self_effect": "Self-effects",
    "sym_asym": "Sym against Asym",
    "task_spread": "Per-task leakage spread",
    "budget": "Probe budget",
}


def write_report(
    run: RunDir, verifier: str | None = None, out: str | Path | None = None, result: AuditResult | None = None
) -> Path:
    """report.html and report.md (figures beside it) for one verifier's audit of a run (default: the
    config's own; `result`: that audit as just computed, else read from its stats file), in `out` or the
    run directory's own report folder."""
    from radar_local.audited import audited_set  # the statistics' imports: not for `radar report --help`

    result = result if result is not None else run.result(verifier)
    info = run.info(result.verifier)
    out = make_folder(Path(out)) if out is not None else make_folder(run.report_dir(result.verifier), own=True)
    figures = _figures(result, make_folder(out / "figures", own=True))
    records = audited_set(run, verifiers={result.verifier})
    examples = example_probes(result, records)
    pairs = nuisance_examples(result, records)
    write_atomic(out / "report.html", audit_html(result, figures, examples, info, result.calibration, pairs))
    write_atomic(out / "report.md", report_markdown(result, examples, info, result.calibration, pairs))
    return out


def _figures(result: AuditResult, folder: Path) -> dict[str, bytes]:
    """The report's PNG figures, drawn again only when the statistics (or the plotting code) changed:
    a report rebuilt for an unchanged audit (a grid run again, `radar report`) reuses them."""
    from radar_local.report import plots  # matplotlib: loaded when figures are drawn, not for `radar report --help`

    stats = json.dumps(result.to_json(), sort_keys=True, default=str).encode()
    digest = hashlib.sha256(stats + Path(plots.__file__).read_bytes()).hexdigest()
    drawn = plots.figures_for(result)
    stamp, files = folder / "figures.sha256", {name: folder / f"{name}.png" for name in drawn}
    if stamp.is_file() and stamp.read_text() == digest and all(f.is_file() for f in files.values()):
        return {name: f.read_bytes() for name, f in files.items()}
    stamp.unlink(missing_ok=True)  # the figures below are being redrawn
    figures = {name: plots.png(make(result)) for name, make in drawn.items()}
    for name, data in figures.items():
        write_atomic(files[name], data)
    write_atomic(stamp, digest)
    return figures


def report_markdown(
    result: AuditResult, examples: list[dict], run: dict, cal: dict | None, pairs: list[dict] | None = None
) -> str:
    md = [audit_markdown(result)]
    md += [f"## {title}\n\n![{title}](figures/{name}.png)\n" for name, title in FIGURE_TITLES.items()]
    if pairs is not None and (result.nuisance or {}).get("rows"):
        md.append("## Judge bias\n\n![Judge bias](figures/nuisance.png)\n")
        for ex in pairs:
            md.append(
                f"### {ex['criterion']} with {ex['attribute']} ({num(ex['sensitivity'])}, {ex['flag'] or 'no flag'})\n"
            )
            for way in WAYS:
                md.append(f"{way} (scored {ex[way]['score']}, task {inline(ex['task_id'])}):\n")
                md.append(fenced(ex[way]["text"]) + "\n")
                md.append(f"- rationale: {inline(ex[way]['rationale'])}\n")
    md.append("## Example probes\n")
    for ex in examples:
        md.append(f"### {ex['a']} / {ex['b']} (Sym {num(ex['sym'])}, {ex['flags'] or 'no flag'})\n")
        for p in ex["probes"]:
            scores = ", ".join(f"{c} {s}" for c, s in p["scores"].items())
            md.append(f"Task {inline(p['task_id'])}, steered {p['target']} {p['direction']}; scores: {scores}\n")
            md.append(fenced(p["text"]) + "\n")
            md += [f"- {c}: {inline(t)}" for c, t in p["rationale"].items()] + [""]
    md += ["## Probes that address the judge\n", injection_line(run), ""]
    md += [
        f"- {ex['target'] or 'unconditioned'} {ex['direction']} ({inline(', '.join(ex['matched']))}): "
        + inline(ex["text"])
        for ex in (run.get("injection") or {}).get("examples", [])
    ] + [""]
    if cal:
        md += ["## Judge calibration\n", "| verifier | criterion | discrimination | stability |", "|---|---|---|---|"]
        md += [
            f"| {inline(v, in_table=True)} | {c} | {num(d['discrimination'], signed=False)} | "
            f"{num(cal['stability'].get(c), signed=False)} |"
            for v, per in cal["verifiers"].items()
            for c, d in per.items()
        ]
    md += [
        "",
        "## Cost",
        "",
        "| stage | calls | prompt tokens | output tokens | seconds | tokens/s | parse rate "
        "| prefix-cache hits (prompt tokens) |",
        "|---|---|---|---|---|---|---|---|",
    ] + ["| " + " | ".join(r) + " |" for r in cost_rows(run)]
    return "\n".join(md) + "\n"
