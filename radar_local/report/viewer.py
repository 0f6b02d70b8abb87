"""`radar view`: one self-contained HTML file where every number of an audit opens the probes and verdicts behind
it (issue 65). The page is static: its data is one JSON block (every `<`, `>` and `&` escaped, so no text in it can
close the block), its script and style are inline and allowed by their hashes alone (a Content-Security-Policy with
`default-src 'none'`: no request leaves the page, no other script runs), and the script writes model text with
`textContent` only, so a response or an explanation stays text whatever it holds.

It opens from disk in any browser with no server (air-gapped machines have a browser, rarely a free port), the run
directory's own file beside report.html, whose findings link into it (`viewer.html#from=a&to=b`)."""

from __future__ import annotations

import base64
import hashlib
import json
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from radar_local.common import json_number
from radar_local.errors import InputError
from radar_local.report.outline import (
    Block,
    Example,
    Figure,
    Section,
    Table,
    plain,
    report_sections,
    subtitle,
    title,
)
from radar_local.report.text import finding_cell, pair_records, verdict
from radar_local.specs import ModelSpec
from radar_local.stats.flags import EVIDENCE, GATED
from radar_local.stats.pairwise_audit import PairwiseAudit
from radar_local.store import write_atomic

if TYPE_CHECKING:
    from radar_local.audited import AuditedSet
    from radar_local.records import VerdictRecord
    from radar_local.rundir import RunDir
    from radar_local.stats.result import AuditResult

FORMAT = 1  # the data block's layout; the script refuses another
# What one probe can weigh: a response and each explanation are cut here (the page says so; the whole texts stay in
# probes.jsonl and scores.jsonl), so the file is at most probes x (RESPONSE + judges x criteria x EXPLANATION).
RESPONSE, EXPLANATION = 20_000, 2_000
CHOICE = {1.0: "A", 0.0: "B", 0.5: "tie"}  # a pairwise verdict's stored score (config.PairwiseJudge.choices)
# What the matrix itself shows: the report's other sections are the checks beside it.
SHOWN = ("Findings", "Self-effects", "Leakage", "Per-task spread", "Probe budget", "Example probes", "Cost")


def viewer_data(run: RunDir, records: AuditedSet, primary: AuditResult | PairwiseAudit | None = None) -> dict:
    """Everything the page shows, as plain data: the rubric and tasks, each judge's audit (its matrix, findings and
    checks) in lanes (the run's own judge first), the audited probes and every judge's verdicts on each."""
    by_probe = records.verdicts_by_probe
    own = run.config.verifier.label
    labels = sorted(by_probe, key=lambda label: (label != own, label))
    probes = list(records.probes)
    criteria = run.rubric.ids
    place = {c: i for i, c in enumerate(criteria)}
    tasks = [t.id for t in run.tasks]
    task_place = {t: i for i, t in enumerate(tasks)}
    results = {
        label: primary if primary is not None and primary.verifier == label else _stored_result(run, label)
        for label in labels or [own]
    }
    judges = [{"label": label, "audit": None if r is None else audit_view(run, r)} for label, r in results.items()]
    first = next((r for r in results.values() if r is not None), primary)  # the run's own judge's, where it has one
    return {
        "format": FORMAT,
        "title": "".join(map(plain, title(first))) if first is not None else "RADAR",
        "subtitle": subtitle(first) if first is not None else "",
        "criteria": criteria,
        "names": [run.rubric.criterion(c).label for c in criteria],
        "texts": [run.rubric.criterion(c).description for c in criteria],
        "items": {place[i.id]: {"task": i.task, "points": i.points, "tags": list(i.tags)} for i in run.rubric.items},
        "tasks": [{"id": t.id, "prompt": t.prompt} for t in run.tasks],
        "judges": judges,
        "probes": {
            "key": [p.key for p in probes],
            "task": [task_place[p.task_id] for p in probes],
            "target": [place.get(p.target, -1) for p in probes],
            "direction": [p.direction for p in probes],
            "variant": [p.variant for p in probes],
            "seed": [p.seed for p in probes],
            "text": [cut(p.text, RESPONSE) for p in probes],
        },
        # per judge, per probe: [criterion, score or null, explanation, unscored reason or ""] for each verdict
        "verdicts": [[_verdicts(by_probe.get(j, {}).get(p.key, {}), place) for p in probes] for j in labels],
        "pairs": pair_verdicts(run, probes),
        "rewards": rewards(run, probes),
    }


def pair_verdicts(run: RunDir, probes: list) -> dict | None:
    """A pairwise judge's verdicts (pairwise:), each [its pair's up probe, the criterion asked, the order (0: the up
    response shown as A), its choice (A, B, tie; null unscored), explanation, why unscored]; None without one."""
    verifier = run.config.verifier
    if run.config.pairwise is None or not isinstance(verifier, ModelSpec):  # a jury is asked no pairs (interactions)
        return None
    judge = run.config.pairwise.judge(verifier)
    place = {p.key: i for i, p in enumerate(probes)}
    rows = []
    for r in run.plan.pairs.requests(probes, judge):
        v = run.store.scores.get(r.key)
        choice = None if v is None or v.score is None else CHOICE.get(float(v.score))
        why = "not asked yet" if v is None else v.unscored or ""
        rows.append([place[r.probe_key.split("|")[0]], r.criterion, r.order, choice, "" if v is None else
                     explanation(v), why])  # fmt: skip
    return {"judge": judge.label, "pairs": rows}


def rewards(run: RunDir, probes: list) -> dict | None:
    """A reward model's scalar on each probe (reward:), null where it has none; None without one."""
    if run.config.reward is None:
        return None
    steered = [p for p in probes if p.direction in ("+", "-")]
    stored = (run.store.scores.get(r.key) for r in run.plan.reward_requests(steered, run.config.reward))
    by_key = {p.key: None if v is None else v.score for p, v in zip(steered, stored)}
    return {"label": run.config.reward.label, "values": [by_key.get(p.key) for p in probes]}


def _stored_result(run: RunDir, label: str) -> AuditResult | PairwiseAudit | None:
    """The judge's own audit where it has one (a repeat, a paraphrase or a juror scored within another's has none:
    its verdicts are still a lane)."""
    try:
        return run.stats(label)
    except InputError:
        return None


def _verdicts(on_probe: dict[str, VerdictRecord], place: dict[str, int]) -> list[list]:
    return [
        [place[c], v.score, explanation(v), v.unscored or ""]
        for c, v in sorted(on_probe.items(), key=lambda cv: place.get(cv[0], len(place)))
        if c in place
    ]


def explanation(v: VerdictRecord) -> str:
    """What the judge said of its verdict: its reasoning, then its rationale (either may be missing)."""
    return cut("\n".join(s for s in (v.reasoning, v.rationale) if s), EXPLANATION)


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]} [cut: {len(text) - limit} more characters]"


def audit_view(run: RunDir, r: AuditResult | PairwiseAudit) -> dict:
    """One judge's matrix (leakage off the diagonal, self-effects on it), each cell with its interval, family
    interval and evidence mark; its findings, each naming the cell it links to; the report's other sections."""
    if isinstance(r, PairwiseAudit):  # a judge asked only pairs: its pairs are beside each row
        return {"criteria": [], "cells": [], "findings": [], "checks": [], "level": None}
    info = run.info(r.verifier) if run.info_path(r.verifier).is_file() else None
    checks = [] if info is None else [_section(s) for s in report_sections(r, [], [], info, r.calibration)]
    return {
        "criteria": r.criteria,
        "level": r.bootstrap.level,
        "family_level": None if r.family is None else r.family["level"],
        "cells": [[cell(r, a, b) for b in r.criteria] for a in r.criteria],
        "findings": [{"text": line, "cell": finding_cell(r, line)} for line in verdict(r)],
        "checks": [c for c in checks if not c["title"].startswith(SHOWN) and (c["lines"] or c["tables"])],
    }


def cell(r: AuditResult, a: str, b: str) -> dict[str, Any]:
    """A matrix cell: a self-effect (a == b) with its gate's evidence, or the leakage a -> b with the evidence of
    its pair's strongest flag ('gated' where either criterion fails the gate, '' where no flag applies)."""
    family = r.family or {}
    if a == b:
        ci = None if r.self_effect_ci is None else _interval(r.self_effect_ci.loc[a])
        gate = (r.gate_evidence or {}).get(a)
        return {
            "value": json_number(r.self_effect[a]),
            "ci": ci,
            "family": _interval(family.get("self_effect", {}).get(a)),
            "mark": gate or "" if r.reliable[a] else GATED,
            "flags": [] if r.reliable[a] else [GATED],
        }
    ci = None if r.leakage_ci is None else _interval((r.leakage_ci[0].loc[a, b], r.leakage_ci[1].loc[a, b]))
    pair = next((p for p in pair_records(r) if {p["a"], p["b"]} == {a, b}), None)
    flags = [] if pair is None else list(pair["flags"])
    evidence = [] if pair is None or not pair["evidence"] else [e for e in pair["evidence"].values() if e]
    mark = GATED if GATED in flags else next((e for e in EVIDENCE if e in evidence), "possible" if flags else "")
    return {
        "value": json_number(r.leakage.loc[a, b]),
        "ci": ci,
        "family": _interval(family.get("leakage", {}).get(a, {}).get(b)),
        "mark": mark,
        "flags": flags,
    }


def _interval(pair: Any) -> list[float | None] | None:
    if pair is None:
        return None
    lo, hi = (json_number(float(x)) for x in pair)
    return None if lo is None and hi is None else [lo, hi]


def _section(s: Section) -> dict:
    lines = [_text(b) for b in s.blocks if isinstance(b, tuple)]
    tables = [{"head": b.head, "rows": [[_text((c,)) for c in row] for row in b.rows]} for b in s.blocks
              if isinstance(b, Table)]  # fmt: skip
    return {"title": _text(s.title if isinstance(s.title, tuple) else (s.title,)), "lines": lines, "tables": tables}


def _text(line: Block) -> str:
    if isinstance(line, (Table, Figure, Example)):
        return ""
    return "".join(map(plain, line))


# ---- the page ----


def _asset(name: str) -> str:
    return resources.files("radar_local.report").joinpath(name).read_text(encoding="utf-8")


def _hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode() + "'"


def data_block(data: dict) -> str:
    """The data as JSON that no text in it can end early: `<`, `>` and `&` only occur inside JSON strings, where
    their escapes read back the same."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def viewer_page(data: dict) -> str:
    """The page: the data block, the inline style and script, and a policy that allows those two alone."""
    script, style = _asset("viewer.js"), _asset("viewer.css")
    policy = (f"default-src 'none'; script-src {_hash(script)}; style-src {_hash(style)}; img-src data:; "
              "base-uri 'none'; form-action 'none'")  # fmt: skip
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta http-equiv='Content-Security-Policy' content=\"{policy}\">"
        "<meta name='referrer' content='no-referrer'><title>RADAR viewer</title>"
        f"<style>{style}</style></head><body><div id='app'><p id='loading'>Loading the audit...</p></div>"
        f"<script type='application/json' id='data'>{data_block(data)}</script>"
        f"<script>{script}</script></body></html>"
    )


def write_viewer(run: RunDir, records: AuditedSet, primary: AuditResult | PairwiseAudit | None = None) -> Path:
    """The run directory's viewer.html, written whole (an atomic file)."""
    path = run.viewer_path
    write_atomic(path, viewer_page(viewer_data(run, records, primary)))
    return path
