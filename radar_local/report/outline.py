"""The report's outline: its sections in order, each a title and blocks (lines, tables, a figure, example
texts). The console, the Markdown report and the HTML report render this one list, so what a report
says, and in which order, is decided here alone. Text a model or a user wrote is marked Untrusted:
each renderer makes it inert its own way (a Markdown code span or fence, HTML escaping, no rich markup)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from radar_local.nuisance import WAYS
from radar_local.report.attacks_text import (
    ATTACKS_HEAD,
    DEFENCES_HEAD,
    PAIR_ATTACKS_HEAD,
    attacks_line,
    attacks_rows,
    defences_line,
    defences_rows,
    pair_attacks_line,
    pair_attacks_rows,
)
from radar_local.report.bias_text import (
    NUISANCE_HEAD,
    REWARD_HEAD,
    nuisance_line,
    nuisance_rows,
    reward_line,
    reward_rows,
)
from radar_local.report.halo_text import HALO_HEAD, halo_line, halo_rows
from radar_local.report.item_pairs_text import item_pairs_lines, item_pairs_tables
from radar_local.report.order_text import ORDER_HEAD, order_line, order_rows
from radar_local.report.paired_text import (
    REPEATS_HEAD,
    THINKING_HEAD,
    WORDING_HEAD,
    repeats_line,
    repeats_rows,
    thinking_line,
    thinking_rows,
    wording_line,
    wording_rows,
)
from radar_local.report.pairwise_text import (
    DRIVERS_HEAD,
    PAIRWISE_HEAD,
    PAIRWISE_LEAKAGE_HEAD,
    PAIRWISE_PAIR_HEAD,
    driver_rows,
    pairwise_findings,
    pairwise_leakage_rows,
    pairwise_line,
    pairwise_pair_rows,
    pairwise_rows,
)
from radar_local.report.panel import (
    JUROR_AGREEMENT_HEAD,
    JURY_HEAD,
    LABELS_HEAD,
    confusion_rows,
    juror_agreement_line,
    juror_agreement_rows,
    jury_line,
    jury_rows,
    labels_line,
    labels_rows,
    side_by_side_rows,
)
from radar_local.report.per_prompt_text import per_prompt_lines, per_prompt_tables
from radar_local.report.text import (
    ADAPTIVE_HEAD,
    PAIR_HEAD,
    SELF_EFFECT_HEAD,
    adaptive_line,
    adaptive_rows,
    agreement_line,
    at_level,
    cost_rows,
    double_count_line,
    finding_cell,
    global_line,
    injection_line,
    leakage_definition,
    leakage_rows,
    num,
    pair_rows,
    scores_line,
    self_effect_rows,
    verdict,
)
from radar_local.stats.item_pairs import ItemPairs
from radar_local.stats.order import OrderEffects
from radar_local.stats.pairwise_audit import PairwiseAudit
from radar_local.stats.stored import Calibration

if TYPE_CHECKING:
    from radar_local.records import RunInfo
    from radar_local.stats.result import AuditResult


@dataclass(frozen=True)
class Untrusted:
    text: str


@dataclass(frozen=True)
class Link:
    """A link radar makes (into the viewer): its text and address are radar's own, never a model's."""

    text: str
    href: str


Part = str | Untrusted | Link


def plain(p: Part) -> str:
    """A part's text, with no markup: what a console or the viewer shows."""
    return p if isinstance(p, str) else p.text


Line = tuple[Part, ...]  # one paragraph, its parts joined


@dataclass(frozen=True)
class Table:
    head: list[str]
    rows: Sequence[Sequence[Part]]
    marked: Sequence[bool] | None = None  # rows to draw attention to (an unreliable criterion, a gated pair)
    numeric: bool = False  # columns after the first are numbers (right-aligned; short heads on a console)


@dataclass(frozen=True)
class Figure:
    name: str  # the report's figures/<name>.svg
    title: str


@dataclass(frozen=True)
class Example:
    """A text a model wrote, shown whole: its caption, the text, and notes (the verifier's rationales)."""

    heading: str | None  # a group's heading, on its first example
    caption: Line
    text: str
    notes: Sequence[Line] = ()


Block = Line | Table | Figure | Example


@dataclass(frozen=True)
class Section:
    title: str | Line
    blocks: list[Block]
    bullets: bool = False  # lines as a list (the findings)


COST_HEAD = [
    "stage",
    "calls",
    "prompt tokens",
    "output tokens",
    "seconds",
    "tokens/s",
    "parse rate",
    "prefix-cache hits (prompt tokens)",
]


def _lines(*lines: str | None) -> list[Block]:
    return [(line,) for line in lines if line is not None]


def audit_sections(r: AuditResult, figures: bool = False, bias: Sequence[dict] = ()) -> list[Section]:
    """The audit's own sections (findings, self-effects, leakage, pairs, the halo of joint calls, adaptive
    waves, judge bias), with their figures where `figures` and the judge-bias examples `bias` (the written
    report). A rubric of one criterion has its gate and the measurements, no coupling."""

    def figure(name: str, title: str) -> list[Block]:
        return [Figure(name, title)] if figures else []

    found = Section("Findings", _lines(*verdict(r), *(per_prompt_lines(r.per_prompt) if r.per_prompt else [])), True)
    if not r.criteria:  # every task brings its own items: no shared criterion, its findings are the items'
        return at_levels([found] + [s for m in MEASURED for s in m(r, figure, bias)], r.bootstrap.level)
    sections = [
        found,
        Section(
            "Self-effects (reliability gate)",
            [
                Table(SELF_EFFECT_HEAD, list(self_effect_rows(r)), [not ok for ok in r.reliable]),
                *figure("self_effect", "Self-effects"),
                *(_lines(scores_line(r)) if len(r.criteria) == 1 else []),  # else beside the pairs
            ],
        ),
    ]
    if len(r.criteria) > 1:  # one criterion has no coupling: its leakage is its own self-effect, it has no pair
        sections += coupling_sections(r, figure)
    for measured in MEASURED:
        sections += measured(r, figure, bias)
    return at_levels(sections, r.bootstrap.level)


def coupling_sections(r: AuditResult, figure: Callable) -> list[Section]:
    """The leakage matrix and the pairs ranked by their coupling, with what is computed over them."""
    head, rows = leakage_rows(r)
    pairs = pair_rows(r)
    base = r.baselines.agreement or {}
    baselines = [[k, num(v.pearson), num(v.spearman), num(v.mae, signed=False)] for k, v in base.items()]
    return [
        Section(
            f"Leakage (row -> column; tau = {r.tau})",
            [Table(head, list(rows), numeric=True), (leakage_definition(r),), *figure("leakage", "Leakage")],
        ),
        Section(
            "Pairs ranked by symmetric coupling",
            [
                Table(PAIR_HEAD, [cells for cells, _ in pairs], [not ok for _, ok in pairs]),
                *figure("sym_asym", "Sym against Asym"),
                *_lines(global_line(r), scores_line(r), double_count_line(r), agreement_line(r)),
                *([Table(["passive baseline", "Pearson", "Spearman", "MAE"], baselines, numeric=True)] if base else []),
            ],
        ),
    ]


def at_levels(sections: list[Section], level: float) -> list[Section]:
    """The sections with their titles and their tables' interval columns at `level`, the level the audit's
    intervals were drawn at (every block's, stats.json's `level`)."""
    return [
        replace(
            s,
            title=at_level(s.title, level) if isinstance(s.title, str) else s.title,
            blocks=[
                replace(b, head=[at_level(h, level) for h in b.head]) if isinstance(b, Table) else b for b in s.blocks
            ],
        )
        for s in sections
    ]


Measured = Callable[..., list[Section]]  # (the audit, its figure maker, the bias examples) -> its sections


def titled(title: str, line: Callable, head: list[str], rows: Callable, numeric: bool = False) -> Measured:
    """A measurement's section: its line, then its table, where the audit measured it (its line is not None)."""

    def sections(r: AuditResult, _figure: Callable, _bias: Sequence[dict]) -> list[Section]:
        said = line(r)
        return [] if said is None else [Section(title, [(said,), Table(head, rows(r), numeric=numeric)])]

    return sections


def jury_sections(r: AuditResult, _figure: Callable, _bias: Sequence[dict]) -> list[Section]:
    """A jury: its line, the jury beside its jurors, and how far the jurors agree."""
    if (line := jury_line(r)) is None:
        return []
    return [
        Section("Jury", [(line,), Table(JURY_HEAD, jury_rows(r))]),
        Section("The jury and its jurors", [Table(head, rows) for head, rows in side_by_side_rows(r)]),
        Section(
            "Agreement among jurors",
            [*_lines(juror_agreement_line(r)), Table(JUROR_AGREEMENT_HEAD, juror_agreement_rows(r))],
        ),
    ]


def bias_sections(r: AuditResult, figure: Callable, bias: Sequence[dict]) -> list[Section]:
    """Judge bias: its line, its table, its figure and the rewrites that show it."""
    if (line := nuisance_line(r)) is None:
        return []
    parts = [(line,), Table(NUISANCE_HEAD, nuisance_rows(r)), *figure("nuisance", "Judge bias"), *_bias_examples(bias)]
    return [Section("Judge bias", parts)]


def per_prompt_sections(r: AuditResult, _figure: Callable, _bias: Sequence[dict]) -> list[Section]:
    """A per-prompt rubric: what its items' audit found, then its tables (item and tag text marked untrusted)."""
    if r.per_prompt is None:
        return []
    tables = [
        Table(head, [[Untrusted(c) if i in marked else c for i, c in enumerate(row)] for row in rows])
        for head, rows, marked in per_prompt_tables(r.per_prompt)
    ]
    said = "Each prompt's items (its own rubric): the items failing the gate, the sign errors, the redundant pairs and "
    said += "the tag matrix (tag -> tag leakage, the prompts' mean), each where it has a row."
    return [Section("Per-prompt rubric", [(said,), *tables])]


def item_pairs_sections(r: AuditResult | PairwiseAudit, *_: object) -> list[Section]:
    """A pairwise judge of a per-prompt rubric: what it does with the items, then its tables (text marked untrusted)."""
    if (p := r.measured(ItemPairs)) is None:
        return []
    tables = [
        Table(head, [[Untrusted(c) if i in marked else c for i, c in enumerate(row)] for row in rows])
        for head, rows, marked in item_pairs_tables(p)
    ]
    return [Section("Pairwise judge: per-prompt rubric", [*((line,) for line in item_pairs_lines(p)), *tables])]


# Each measurement's sections, in the report's order, after the coupling's (a new measurement adds its line here).
MEASURED: tuple[Measured, ...] = (
    per_prompt_sections,
    titled("Halo of joint calls", halo_line, HALO_HEAD, halo_rows),
    titled("Consistency: repeat agreement", repeats_line, REPEATS_HEAD, repeats_rows),
    titled("Consistency: template wording", wording_line, WORDING_HEAD, wording_rows),
    titled("What thinking buys", thinking_line, THINKING_HEAD, thinking_rows),
    titled(
        "Consistency: criterion order",
        lambda r: order_line(r.measured(OrderEffects)),
        ORDER_HEAD,
        lambda r: order_rows(r.measured(OrderEffects)),
    ),
    lambda r, _figure, _bias: [s for s in [pairwise_section(r)] if s is not None],
    item_pairs_sections,
    titled("Reward model", reward_line, REWARD_HEAD, reward_rows),
    jury_sections,
    titled("Agreement with human labels", labels_line, LABELS_HEAD, labels_rows),
    titled("Adaptive audit", adaptive_line, ADAPTIVE_HEAD, adaptive_rows, numeric=True),
    bias_sections,
    titled("Under attack", attacks_line, ATTACKS_HEAD, attacks_rows),
    titled("Defences under attack", defences_line, DEFENCES_HEAD, defences_rows),
    titled("Pairwise judge under attack", pair_attacks_line, PAIR_ATTACKS_HEAD, pair_attacks_rows),
)


def pairwise_section(r: AuditResult | PairwiseAudit) -> Section | None:
    """The judge asked pairwise: its line, its gates per criterion, and what its overall preference is made of."""
    if (line := pairwise_line(r)) is None:
        return None
    tables = [Table(PAIRWISE_HEAD, rows)] if (rows := pairwise_rows(r)) else []
    tables += [Table(DRIVERS_HEAD, rows)] if (rows := driver_rows(r)) else []
    return Section("Pairwise judge", [(line,), *tables])


def pairwise_audit_sections(r: PairwiseAudit) -> list[Section]:
    """A judge asked only pairs (pairwise.only): its findings, the pairwise section, and its leakage and pairs in
    full, as a judge's audit shows its pointwise ones; on a per-prompt rubric, what it does with the items."""
    items = r.item_pairs
    findings = [*(pairwise_findings(r.pairwise) if r.pairwise else []), *(item_pairs_lines(items) if items else [])]
    sections = [Section("Findings", _lines(*findings), bullets=True)]
    sections += [s for s in [pairwise_section(r)] if s is not None]
    if r.pairwise and r.pairwise.leakage:
        sections.append(
            Section(
                f"Pairwise leakage (steered -> asked; gate tau = {r.pairwise.tau})",
                [
                    Table(PAIRWISE_LEAKAGE_HEAD, pairwise_leakage_rows(r.pairwise)),
                    Table(PAIRWISE_PAIR_HEAD, pairwise_pair_rows(r.pairwise)),
                ],
            )
        )
    if items:  # its lines are the findings above
        sections += [replace(s, blocks=[b for b in s.blocks if isinstance(b, Table)]) for s in item_pairs_sections(r)]
    if (line := pair_attacks_line(r)) is not None:
        sections.append(
            Section("Pairwise judge under attack", [(line,), Table(PAIR_ATTACKS_HEAD, pair_attacks_rows(r))])
        )
    return at_levels(sections, r.block.level)


def pairwise_report_sections(r: PairwiseAudit, info: RunInfo) -> list[Section]:
    """The written report of a judge asked only pairs: its sections, the probes that address the judge, the cost."""
    return [
        *pairwise_audit_sections(r),
        Section("Probes that address the judge", [(injection_line(info),), *_injected(info)]),
        Section("Cost", [Table(COST_HEAD, list(cost_rows(info)), numeric=True)]),
    ]


def report_sections(
    r: AuditResult,
    examples: list[dict],
    bias: list[dict],
    info: RunInfo,
    calibration: Calibration | None,
    viewer: str | None = None,
) -> list[Section]:
    """The written report: the audit's sections with figures, the example probes, the probes that address
    the judge, the judges' calibration and the cost; with `viewer` (its address from the report), each finding
    about a pair links to its probes there."""
    sections = audit_sections(r, figures=True, bias=bias)
    if viewer is not None:
        sections[0] = replace(sections[0], blocks=[_linked(r, b, viewer) for b in sections[0].blocks])
    confusion: list[Block] = [block for name, head, rows in confusion_rows(r) for block in ((name,), Table(head, rows))]
    if confusion:
        sections.append(Section("Human labels against each judge (confusion matrices)", confusion))
    if len(r.criteria) > 1:  # the coupling's figures and probes
        sections += [
            Section("Per-task spread", [Figure("task_spread", "Per-task leakage spread")]),
            Section("Probe budget", [Figure("budget", "Probe budget")]),
            Section("Example probes", _pair_examples(examples)),
        ]
    sections.append(Section("Probes that address the judge", [(injection_line(info),), *_injected(info)]))
    if calibration:
        sections.append(Section("Judge calibration", calibration_tables(calibration)))
    sections.append(Section("Cost", [Table(COST_HEAD, list(cost_rows(info)), numeric=True)]))
    return sections


def _linked(r: AuditResult, block: Block, viewer: str) -> Block:
    if not isinstance(block, tuple) or (cell := finding_cell(r, "".join(map(plain, block)))) is None:
        return block
    return (*block, " ", Link("(see its probes)", f"{viewer}#{urlencode({'from': cell[0], 'to': cell[1]})}"))


def _pair_examples(examples: list[dict]) -> list[Block]:
    blocks: list[Block] = []
    for ex in examples:
        heading: str | None = f"{ex['a']} / {ex['b']} (Sym {num(ex['sym'])}, {ex['flags'] or 'no flag'})"
        for p in ex["probes"]:
            scores = ", ".join(f"{c} {s}" for c, s in p["scores"].items())
            caption = ("Task ", Untrusted(p["task_id"]), f", steered {p['target']} {p['direction']}; scores: {scores}")
            notes = [(f"{c}: ", Untrusted(str(t))) for c, t in p["rationale"].items()]
            blocks.append(Example(heading, caption, p["text"], notes))
            heading = None
    return blocks


def _bias_examples(bias: Sequence[dict]) -> list[Block]:
    blocks: list[Block] = []
    for ex in bias:
        heading: str | None = (
            f"{ex['criterion']} with {ex['attribute']} ({num(ex['sensitivity'])}, {ex['flag'] or 'no flag'})"
        )
        for way in WAYS:
            side = ex[way]
            caption = (f"{way} (scored {side['score']}, task ", Untrusted(ex["task_id"]), "):")
            blocks.append(Example(heading, caption, side["text"], [("rationale: ", Untrusted(str(side["rationale"])))]))
            heading = None
    return blocks


def _injected(info: RunInfo) -> list[Block]:
    shown = [] if info.injection is None else info.injection.examples
    rows: list[list[Part]] = [
        [f"{ex['target'] or 'unconditioned'} {ex['direction']}", ", ".join(ex["matched"]), Untrusted(ex["text"])]
        for ex in shown
    ]
    return [Table(["steered", "matched", "probe text"], rows)] if rows else []


def calibration_tables(cal: Calibration) -> list[Block]:
    """Discrimination and stability per verifier and criterion, and cross-judge agreement where there is one."""
    rows: list[list[Part]] = [
        [Untrusted(v), c, num(d.discrimination, signed=False), num(cal.stability.get(c), signed=False)]
        for v, per in cal.verifiers.items()
        for c, d in per.items()
    ]
    out: list[Block] = [
        Table(["verifier", "criterion", "discrimination (sd of scores)", "stability across judges"], rows)
    ]
    if cal.agreement:
        agreement: list[list[Part]] = [
            [Untrusted(pair), c, num(v.agreement, signed=False), str(v.n)]
            for pair, per in cal.agreement.items()
            for c, v in per.items()
        ]
        out.append(Table(["verifier pair", "criterion", "agreement (1 - mean |diff|)", "n"], agreement))
    return out


def title(r: AuditResult | PairwiseAudit) -> Line:
    kind = "RADAR pairwise audit: " if isinstance(r, PairwiseAudit) else "RADAR audit: "
    return (kind, Untrusted(r.generator), " -> ", Untrusted(r.verifier))


def subtitle(r: AuditResult | PairwiseAudit) -> str:
    if isinstance(r, PairwiseAudit):  # a judge asked only pairs
        p = r.block
        tests = "exact tests within each prompt" if isinstance(p, ItemPairs) else f"{p.resamples} bootstrap resamples"
        return (
            f"Rubric {r.rubric}, {len(r.tasks)} tasks, {r.probes} steered probes, the judge asked only pairs "
            f"({p.verdicts} verdicts), pairwise gate tau = {p.tau}, {tests}."
        )
    return (
        f"Rubric {r.rubric}, {len(r.tasks)} tasks, {r.probes.directed} steered probes, tau = {r.tau}, "
        f"{r.bootstrap.resamples} bootstrap resamples."
    )
