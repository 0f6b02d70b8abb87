"""repair.md, repair.html and repair.json: the findings, every candidate edit with its rationale,
re-audit and reuse, the selection, before/after heatmaps and the pairs that moved beyond their CIs."""

from __future__ import annotations

import json

from radar_local.compare import compare
from radar_local.repair.selection import Candidate, Repair, repair_json
from radar_local.report.html import page, render_html
from radar_local.report.markdown import render_markdown
from radar_local.report.outline import Block, Example, Figure, Line, Section, Table, Untrusted
from radar_local.report.plots import leakage_heatmap
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


def repair_sections(rep: Repair) -> list[Section]:
    """The repair report's outline: the outcome, the findings, every candidate (its edit's rationale and
    new criteria are the editor model's text: shown inert), and the leakage before and after."""
    findings: list[Block] = [(f"{f.kind}: {f.text}",) for f in rep.findings] or [("none",)]
    candidates: list[Block] = [Table(CANDIDATE_HEAD, candidate_rows(rep))]
    for c in rep.candidates:
        if c.edit is not None:
            keeps: list[Line] = [("Keeps: ", Untrusted(c.edit.keeps))] if c.edit.keeps else []
            new: list[Line] = [
                ("new ", Untrusted(n.id), " (", Untrusted(n.label), "): ", Untrusted(n.description)) for n in c.edit.new
            ]
            candidates.append(Example(f"{c.name}: {_edit_text(c)}", ("Rationale:",), c.edit.rationale, keeps + new))
    after: list[Block] = [Figure("before", "leakage before")]
    if rep.final is not None:
        moved = moved_rows(rep)
        after += [Figure("after", "leakage after"), ("Pairs that moved beyond their intervals:",)]
        after += [Table(MOVED_HEAD, moved)] if moved else [("none of the shared pairs",)]
    return [
        Section("Outcome", [(outcome(rep),)]),
        Section("Findings on the original", findings + [(x,) for x in rep.left_alone], bullets=True),
        Section("Candidates", candidates),
        Section("Before and after", after),
    ]


def write_repair_report(rep: Repair) -> None:
    make_folder(rep.out / "figures", own=True)
    figures = {"before": leakage_heatmap(rep.result).svg()}
    if rep.final is not None and rep.final.result is not None:
        figures["after"] = leakage_heatmap(rep.final.result).svg()
    for name, data in figures.items():
        write_atomic(rep.out / "figures" / f"{name}.svg", data)
    write_atomic(rep.out / "repair.json", json.dumps(repair_json(rep), indent=2, default=str))
    heading, sections = ("Rubric repair: ", Untrusted(rep.original.rubric.name)), repair_sections(rep)
    write_atomic(rep.out / "repair.md", render_markdown(heading, sections, set(figures)))
    write_atomic(rep.out / "repair.html", page(heading, render_html(sections, figures)))
