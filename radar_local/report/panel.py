"""The report's sentences and tables on a panel of judges: a jury against its jurors, the jurors side by side and
their agreement, and every judge's agreement with the team's human labels."""

from __future__ import annotations

from typing import TYPE_CHECKING

from radar_local.stats.bootstrap import LEVEL

if TYPE_CHECKING:
    from radar_local.stats.jurors import JudgeSide
    from radar_local.stats.raters import HumanAgreement
    from radar_local.stats.result import AuditResult


from radar_local.report.text import flag_text, interval, num
from radar_local.stats.jurors import JuryBlock
from radar_local.stats.raters import LabelsBlock

JURY_HEAD = ["juror", "juror's worst coupling", "jury's worst coupling", "jury - juror", "interval", "flag"]


def jury_line(result: AuditResult) -> str | None:
    """What the jury is, and whether its worst coupling lies below its jurors' beyond the intervals."""
    j = result.measured(JuryBlock)
    if not j:
        return None
    c = j.coupling
    below = [r.juror for r in c.jurors if r.flag == "below"]
    above = [r.juror for r in c.jurors if r.flag == "above"]
    best = (
        f"below its best juror's ('{c.best_juror}')"
        if c.below_best
        else f"not below its best juror's ('{c.best_juror}') beyond the interval"
    )
    found = [f"below {', '.join(below)}'s" if below else "", f"above {', '.join(above)}'s" if above else ""]
    failed = f" Left out, having failed: {', '.join(j.failed)}." if j.failed else ""
    return (
        f"A jury of {len(j.jurors)} ({', '.join(j.jurors)}), {j.aggregate} of at least {j.min_jurors} "
        f"score(s) per verdict. Its worst coupling (the largest leakage over pairs whose source both judges pass "
        f"as reliable) is {best}; beyond the {c.family_level:.1%} bounds (a simultaneous band over the paired "
        f"leakages, Bonferroni over the jurors) it lies "
        f"{' and '.join(f for f in found if f) or 'neither below nor above any juror'}.{failed}"
    )


def jury_rows(result: AuditResult) -> list[list[str]]:
    j = result.measured(JuryBlock)
    return [
        [
            r.juror,
            num(r.juror_worst),
            num(r.jury_worst),
            num(r.difference),
            interval(r.ci),
            {"below": "jury couples less", "above": "jury couples more"}.get(r.flag or "", ""),
        ]
        for r in (j.coupling.jurors if j else [])
    ]


def side_by_side_rows(result: AuditResult) -> list[tuple[list[str], list[list[str]]]]:
    """(head, rows) of the jury and its jurors side by side: self-effects (with the gate), Sym with flags, and
    every ordered pair's leakage."""
    judges = (j.side_by_side if (j := result.measured(JuryBlock)) else None) or {}
    if not judges:
        return []
    names, first = list(judges), next(iter(judges.values()))

    def gate(j: JudgeSide, c: str) -> str:
        return num(j.self_effect[c]) + ("" if j.reliable[c] else " (gated)")

    def pair(j: JudgeSide, p: str) -> str:
        found = j.pairs.get(p)
        return (
            "n/a" if found is None else num(found.sym) + (f" ({flag_text(found.model_dump())})" if found.flags else "")
        )

    leak = [(a, b) for a, row in first.leakage.items() for b in row]
    return [
        (["criterion", *names], [[c, *(gate(judges[n], c) for n in names)] for c in first.self_effect]),
        (["pair (Sym, flags)", *names], [[p, *(pair(judges[n], p) for n in names)] for p in first.pairs]),
        (
            ["leakage row -> column", *names],
            [[f"{a} -> {b}", *(num(judges[n].leakage[a][b]) for n in names)] for a, b in leak],
        ),
    ]


JUROR_AGREEMENT_HEAD = ["criterion", "level", "alpha", "alpha interval", "effective jurors", "pairwise Spearman"]


def juror_agreement_rows(result: AuditResult) -> list[list[str]]:
    agreement = j.agreement if (j := result.measured(JuryBlock)) else None
    return [
        [
            c,
            row.level_of_measurement,
            num(row.alpha),
            interval(row.alpha_ci),
            num(row.effective_jurors.effective, signed=False),
            ", ".join(f"{pair} {num(r)}" for pair, r in row.correlations.items()),
        ]
        for c, row in (agreement.criteria if agreement else {}).items()
    ]


def juror_agreement_line(result: AuditResult) -> str | None:
    agreement = j.agreement if (j := result.measured(JuryBlock)) else None
    if not agreement:
        return None
    eff = agreement.effective_jurors
    return (
        f"Krippendorff's alpha among the jurors per criterion, with a {agreement.level:.0%} percentile bootstrap "
        f"interval over probes. Effective number of independent jurors (Kish: k / (1 + (k - 1) rho), rho the mean "
        f"error correlation): {num(eff.effective if eff else None, signed=False)} of {eff.jurors if eff else None}; "
        f"{agreement.errors}."
    )


LABELS_HEAD = [
    "judge",
    "criterion",
    "responses",
    "Spearman",
    "kappa (quadratic)",
    "alpha with humans",
    "humans' alpha",
    "MAE",
]


def labels_line(result: AuditResult) -> str | None:
    lab = result.measured(LabelsBlock)
    if not lab:
        return None
    level = next((row.confidence for per in lab.judges.values() for row in per.values()), LEVEL)
    return (
        f"Every judge scored {lab.responses} labelled responses ({lab.raters} rater(s), from "
        f"{lab.source}) with the template and scale it audits with. Each cell: the estimate and its "
        f"{level:.0%} percentile bootstrap interval over responses; humans' alpha is the ceiling, the agreement "
        "of the raters among themselves where a response has two or more."
    )


def labels_rows(result: AuditResult) -> list[list[str]]:
    def cell(row: HumanAgreement, name: str, signed: bool = True) -> str:
        return f"{num(getattr(row, name), signed=signed)} {interval(getattr(row, name + '_ci'))}".rstrip()

    lab = result.measured(LabelsBlock)
    return [
        [
            judge,
            f"{c} ({row.level_of_measurement})",
            f"{row.responses}" + (f" ({row.unscored} unscored)" if row.unscored else ""),
            cell(row, "spearman"),
            cell(row, "kappa"),
            cell(row, "alpha_with_humans"),
            cell(row, "alpha_humans"),
            cell(row, "mae", signed=False),
        ]
        for judge, per in (lab.judges if lab else {}).items()
        for c, row in per.items()
    ]


def confusion_rows(result: AuditResult) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, head, rows) per judge and criterion: human level (rows) against the judge's nearest level."""
    out = []
    for judge, per in (lab.judges if (lab := result.measured(LabelsBlock)) else {}).items():
        for c, row in per.items():
            levels = [f"{v:g}" for v in row.confusion.levels]
            rows = [[f"human {lv}", *map(str, counts)] for lv, counts in zip(levels, row.confusion.counts)]
            out.append((f"{judge}, {c}", ["", *(f"judge {lv}" for lv in levels)], rows))
    return out
