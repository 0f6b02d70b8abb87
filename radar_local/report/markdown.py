"""The audit as a Markdown document."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from radar_local.report.text import (
    ADAPTIVE_HEAD,
    NUISANCE_HEAD,
    PAIR_HEAD,
    SELF_EFFECT_HEAD,
    adaptive_line,
    adaptive_rows,
    agreement_line,
    double_count_line,
    global_line,
    leakage_rows,
    nuisance_line,
    nuisance_rows,
    pair_rows,
    scores_line,
    self_effect_rows,
    verdict,
)

if TYPE_CHECKING:
    from radar_local.stats.result import AuditResult


def fenced(text: str) -> str:
    """Untrusted text (a probe, a rewrite) as an inert code block: no HTML, image, link or heading in it
    renders, and its fence is longer than any run of backticks inside, so the text cannot close it."""
    fence = "`" * max(3, _longest_backticks(text) + 1)
    return f"{fence}text\n{text}\n{fence}"


def inline(text: object, in_table: bool = False) -> str:
    """Untrusted text within a line (a rationale, a task id, a model label) as an inert code span, on one
    line; in a table cell its pipes are escaped (GFM splits cells on them even inside code)."""
    flat = " ".join(str(text).split())
    flat = flat.replace("|", "\\|") if in_table else flat
    if not flat:
        return ""
    ticks = "`" * (_longest_backticks(flat) + 1)
    return f"{ticks} {flat} {ticks}"


def _longest_backticks(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)


def md_table(head: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + ["| " + " | ".join(r) + " |" for r in rows]


def audit_markdown(result: AuditResult) -> str:
    out = [f"# RADAR audit: {inline(result.generator)} -> {inline(result.verifier)}", ""]
    out += [f"- {line}" for line in verdict(result)] + [""]
    out += ["## Self-effects", ""] + md_table(SELF_EFFECT_HEAD, self_effect_rows(result))
    head, rows = leakage_rows(result)
    out += ["", f"## Leakage (row -> column; tau = {result.tau})", ""] + md_table(head, rows)
    out += ["", "## Pairs", ""] + md_table(PAIR_HEAD, [cells for cells, _ in pair_rows(result)])
    out += ["", global_line(result), scores_line(result)]
    if (line := double_count_line(result)) is not None:
        out.append(line)
    if (line := agreement_line(result)) is not None:
        out.append(line)
    if (line := adaptive_line(result)) is not None:
        out += ["", "## Adaptive audit", "", line, ""] + md_table(ADAPTIVE_HEAD, adaptive_rows(result))
    if (line := nuisance_line(result)) is not None:
        out += ["", "## Judge bias", "", line, ""] + md_table(NUISANCE_HEAD, nuisance_rows(result))
    return "\n".join(out) + "\n"
