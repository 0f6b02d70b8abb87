"""The audit as a Markdown document."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from radar_local.report.outline import (
    Example,
    Figure,
    Line,
    Link,
    Part,
    Section,
    Table,
    Untrusted,
    audit_sections,
    title,
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


def _part(p: Part, in_table: bool = False) -> str:
    if isinstance(p, Link):
        return f"[{p.text}]({p.href})"
    return inline(p.text, in_table) if isinstance(p, Untrusted) else p


def _line(line: str | Line) -> str:
    return line if isinstance(line, str) else "".join(_part(p) for p in line)


def render_markdown(heading: Line, sections: list[Section], drawn: set[str] | None = None) -> str:
    """The outline (radar_local.report.outline) as Markdown; figures referenced as figures/<name>.svg where
    `drawn` names them (none without)."""
    out = [f"# {_line(heading)}", ""]
    for s in sections:
        out += [f"## {_line(s.title)}", ""]
        for b in s.blocks:
            if isinstance(b, Table):
                out += md_table(b.head, [[_part(c, in_table=True) for c in row] for row in b.rows]) + [""]
            elif isinstance(b, Figure):
                out += [f"![{b.title}](figures/{b.name}.svg)", ""] if b.name in (drawn or ()) else []
            elif isinstance(b, Example):
                out += [f"### {b.heading}", ""] if b.heading else []
                out += [_line(b.caption), "", fenced(b.text), ""] + [f"- {_line(n)}" for n in b.notes] + [""]
            else:
                out += [f"- {_line(b)}"] if s.bullets else [_line(b), ""]
        if s.bullets:
            out.append("")
    return "\n".join(out).rstrip() + "\n"


def audit_markdown(result: AuditResult) -> str:
    """The audit's own sections (`radar stats --markdown`)."""
    return render_markdown(title(result), audit_sections(result))
