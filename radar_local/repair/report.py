"""repair.md, repair.html and repair.json: the findings, every candidate edit with its rationale,
re-audit and reuse, the selection, before/after heatmaps and the pairs that moved beyond their CIs."""

from __future__ import annotations

import json
from html import escape

from radar_local.compare import compare
from radar_local.repair.selection import Candidate, Repair, repair_json
from radar_local.report.html import CSS, html_img, html_table
from radar_local.report.markdown import md_table
from radar_local.report.text import CI, interval, num
from radar_local.store import make_folder, write_atomic

CANDIDATE_HEAD = [
    "candidate",
    "edit",
    "audited",
    "reliable",
    f"worst pair (Sym, {CI})",
    f"GlobalPos ({CI})",
    "probes reused",
    "verdicts reused",
    "improved",
    "Pareto",
]


def outcome(rep: Repair) -> str:
    if not rep.findings:
        return (
            "The rubric is clean: no flagged coupling outside the intended pairs and every criterion passes the gate."
        )
    if rep.final is None:
        unreadable = sum(f.kind == "unreadable" for f in rep.findings)
        what = (
            f" The verifier could not read {unreadable} of {rep.summary['criteria']} criteria as written, and no "
            "rewrite made them readable beyond their intervals."
            if unreadable
            else ""
        )
        return (
            "No candidate improved on the original beyond its confidence intervals, so no repaired rubric was "
            f"written.{what}"
        )
    assert rep.final.edit is not None and rep.repaired_rubric is not None  # selected: an audited edit
    return (
        f"Selected {rep.final.name} ({rep.final.edit.action} {', '.join(rep.final.edit.criteria)}): {rep.final.why}. "
        f"The repaired rubric is {rep.repaired_rubric.name}."
    )


def _edit_text(c: Candidate) -> str:
    if c.edit is None:
        return "no edit"
    new = ", ".join(n.id for n in c.edit.new)
    return f"{c.edit.action} {', '.join(c.edit.criteria)}" + (f" -> {new}" if new else "")


def _share(done: int, total: int) -> str:
    return f"{done}/{total} ({done / total:.0%})" if total else "-"


def candidate_rows(rep: Repair) -> list[list[str]]:
    rows = []
    for c in rep.candidates:
        s = c.summary
        worst = (
            "-"
            if not s or not s["worst_pair"]
            else f"{' / '.join(s['worst_pair'])} {num(s['worst_sym'])} {interval(s['worst_sym_ci'])}"
        )
        rows.append(
            [
                c.name,
                _edit_text(c),
                "no: " + c.error if c.error else "yes",
                f"{s['reliable']}/{s['criteria']}" if s else "-",
                worst,
                f"{num(s['global_pos'])} {interval(s['global_pos_ci'])}" if s else "-",
                _share(c.reuse.get("probes_reused", 0), c.reuse.get("probes", 0)) if c.reuse else "-",
                _share(c.reuse.get("scores_reused", 0), c.reuse.get("scores", 0)) if c.reuse else "-",
                ("yes: " if c.improved else "no: ") + c.why if s else "-",
                "yes" if c.pareto else "",
            ]
        )
    return rows


def moved_rows(rep: Repair) -> list[list[str]]:
    if rep.final is None or rep.final.result is None:
        return []
    diff = compare(rep.result, rep.final.result)
    return [
        [
            f"{m['a']} / {m['b']}",
            num(m["sym_before"]),
            interval(m["ci_before"]),
            num(m["sym_after"]),
            interval(m["ci_after"]),
        ]
        for m in diff["moved"]
    ]


MOVED_HEAD = ["pair", "Sym before", CI, "Sym after", CI]


def repair_markdown(rep: Repair) -> str:
    md = [f"# Rubric repair: {rep.original.rubric.name}", "", outcome(rep), "", "## Findings on the original", ""]
    md += [f"- {f.kind}: {f.text}" for f in rep.findings] or ["- none"]
    md += [f"- {x}" for x in rep.left_alone]
    md += ["", "## Candidates", ""] + md_table(CANDIDATE_HEAD, candidate_rows(rep))
    for c in rep.candidates:
        if c.edit is not None:
            md += ["", f"### {c.name}: {_edit_text(c)}", "", f"Rationale: {c.edit.rationale}"]
            md += [f"Keeps: {c.edit.keeps}"] if c.edit.keeps else []
            md += [f"- new {n.id} ({n.label}): {n.description}" for n in c.edit.new]
    md += ["", "## Before and after", "", "![leakage before](figures/before.png)"]
    if rep.final is not None:
        md += ["![leakage after](figures/after.png)", "", "Pairs that moved beyond their intervals:", ""]
        md += md_table(MOVED_HEAD, moved_rows(rep)) if moved_rows(rep) else ["none of the shared pairs"]
    return "\n".join(md) + "\n"


def repair_html(rep: Repair, figures: dict[str, bytes]) -> str:
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>Rubric repair</title>"
        f"<style>{CSS}</style></head><body>",
        f"<h1>Rubric repair: {escape(rep.original.rubric.name)}</h1>",
        f"<p>{escape(outcome(rep))}</p>",
        "<h2>Findings on the original</h2><ul>"
        + "".join(f"<li>{escape(f.kind)}: {escape(f.text)}</li>" for f in rep.findings)
        + "".join(f"<li>{escape(x)}</li>" for x in rep.left_alone)
        + "</ul>",
        "<h2>Candidates</h2>",
        html_table(CANDIDATE_HEAD, candidate_rows(rep)),
    ]
    for c in rep.candidates:
        if c.edit is not None:
            parts.append(
                f"<h3>{escape(c.name)}: {escape(_edit_text(c))}</h3><p>Rationale: {escape(c.edit.rationale)}</p>"
                + (f"<p>Keeps: {escape(c.edit.keeps)}</p>" if c.edit.keeps else "")
                + "<ul>"
                + "".join(
                    f"<li>new {escape(n.id)} ({escape(n.label)}): {escape(n.description)}</li>" for n in c.edit.new
                )
                + "</ul>"
            )
    parts += ["<h2>Before and after</h2>"] + [html_img(name, data, f"leakage {name}") for name, data in figures.items()]
    if rep.final is not None:
        parts.append(html_table(MOVED_HEAD, moved_rows(rep)))
    return "\n".join(parts + ["</body></html>"])


def write_repair_report(rep: Repair) -> None:
    from radar_local.report.plots import leakage_heatmap, png  # matplotlib: loaded only to draw

    make_folder(rep.out / "figures", own=True)
    figures = {"before": png(leakage_heatmap(rep.result))}
    if rep.final is not None and rep.final.result is not None:
        figures["after"] = png(leakage_heatmap(rep.final.result))
    for name, data in figures.items():
        write_atomic(rep.out / "figures" / f"{name}.png", data)
    write_atomic(rep.out / "repair.json", json.dumps(repair_json(rep), indent=2, default=str))
    write_atomic(rep.out / "repair.md", repair_markdown(rep))
    write_atomic(rep.out / "repair.html", repair_html(rep, figures))
