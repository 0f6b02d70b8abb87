"""The report as one self-contained HTML page: inline CSS, figures as data URIs, no script."""

from __future__ import annotations

import base64
from html import escape
from typing import TYPE_CHECKING

from radar_local.report.outline import (
    Block,
    Example,
    Figure,
    Line,
    Link,
    Section,
    Table,
    audit_sections,
    plain,
    report_sections,
    subtitle,
    title,
)

if TYPE_CHECKING:
    from radar_local.records import RunInfo
    from radar_local.stats.result import AuditResult
    from radar_local.stats.stored import Calibration

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
    src = f"data:image/svg+xml;base64,{base64.b64encode(data).decode()}"
    return f'<figure><img id="fig-{name}" alt="{escape(alt)}" src="{src}"></figure>'


def html_table(head: list[str], rows: list[list[str]], classes: list[str] | None = None) -> str:
    out = ["<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>"]
    for i, r in enumerate(rows):
        cls = f' class="{classes[i]}"' if classes and classes[i] else ""
        out.append(f"<tr{cls}>" + "".join(f"<td>{escape(str(c))}</td>" for c in r) + "</tr>")
    return "".join(out) + "</table>"


def _line(line: str | Line) -> str:
    return (
        escape(line)
        if isinstance(line, str)
        else "".join(
            f'<a href="{escape(p.href)}">{escape(p.text)}</a>' if isinstance(p, Link) else escape(plain(p))
            for p in line
        )  # fmt: skip
    )


def render_html(sections: list[Section], figures: dict[str, bytes] | None = None, level: int = 2) -> str:
    """The outline (radar_local.report.outline) as HTML: every text escaped, figures as data URIs."""
    return "\n".join(
        f"<h{level}>{_line(s.title)}</h{level}>\n" + blocks_html(s.blocks, figures, level, s.bullets) for s in sections
    )


def blocks_html(
    blocks: list[Block], figures: dict[str, bytes] | None = None, level: int = 2, bullets: bool = False
) -> str:
    parts = []
    if bullets:
        items = "".join(f"<li>{_line(b)}</li>" for b in blocks if isinstance(b, tuple))
        parts.append(f"<ul class='verdict'>{items}</ul>")
    for b in blocks:
        if isinstance(b, Table):
            cells = [[plain(c) for c in row] for row in b.rows]
            marks = None if b.marked is None else ["gated" if m else "" for m in b.marked]
            parts.append(html_table(b.head, cells, marks))
        elif isinstance(b, Figure):
            if figures and b.name in figures:
                parts.append(html_img(b.name, figures[b.name], b.title))
        elif isinstance(b, Example):
            if b.heading:
                parts.append(f"<h{level + 1}>{escape(b.heading)}</h{level + 1}>")
            notes = " ".join(_line(n) for n in b.notes)
            parts.append(f"<p>{_line(b.caption)}</p><div class='probe'>{escape(b.text)}</div><p><i>{notes}</i></p>")
        elif not bullets:
            parts.append(f"<p>{_line(b)}</p>")
    return "\n".join(parts)


def result_tables_html(r: AuditResult) -> str:
    """The audit's own sections: what a notebook shows for an AuditResult."""
    return render_html(audit_sections(r), level=3)


def page(heading: Line, body: str, subtitle: str | None = None) -> str:
    """A self-contained HTML page: inline CSS, figures as data URIs, no script."""
    title = _line(heading)
    head = f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title><style>{CSS}</style></head>"
    intro = f"<p>{escape(subtitle)}</p>" if subtitle else ""
    return f"{head}<body>\n<h1>{title}</h1>{intro}\n{body}\n</body></html>"


def audit_html(
    r: AuditResult,
    figures: dict[str, bytes],
    examples: list[dict],
    info: RunInfo,
    calibration: Calibration | None = None,
    bias: list[dict] | None = None,
    viewer: str | None = None,
) -> str:
    sections = report_sections(r, examples, bias or [], info, calibration, viewer)
    return page(title(r), render_html(sections, figures), subtitle(r))
