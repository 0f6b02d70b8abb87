"""`radar drift`'s text: agreement and shift per criterion, then what changes in the audit (stats/drift.py)."""

from __future__ import annotations

from radar_local.report.markdown import md_table
from radar_local.report.text import interval, num
from radar_local.stats.drift import RISES, Drift


def drift_lines(d: Drift) -> list[str]:
    def share(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.0%}"

    rows = [
        [
            c.criterion,
            str(c.probes),
            share(c.exact),
            share(c.within_one_level),
            f"{num(c.shift)} {interval(c.shift_ci)}".rstrip(),
            f"{num(c.kappa, signed=False)} {interval(c.kappa_ci)}".rstrip(),
            f"{num(c.alpha, signed=False)} {interval(c.alpha_ci)}".rstrip(),
            f"{c.unscored_before} / {c.unscored_after}",
            f"{num(c.self_effect_before)} -> {num(c.self_effect_after)} ({num(c.self_effect_change)} "
            f"{interval(c.self_effect_change_ci)})".replace(" )", ")"),
        ]
        for c in d.criteria
    ]
    moved = [p for p in d.pairs if p.flag is not None]
    pairs = [
        [f"{p.source} -> {p.target}", num(p.before), num(p.after), num(p.change), interval(p.ci), p.flag or ""]
        for p in moved
    ]
    lines = [
        f"Drift from '{d.before}' to '{d.after}' on the {d.probes} probes both scored ({d.level:.0%} intervals, "
        f"{d.resamples} paired resamples of probes).",
        "",
        *md_table(
            [
                "criterion",
                "probes",
                "same verdict",
                "within one level",
                "shift (after - before)",
                "kappa (quadratic)",
                "Krippendorff's alpha",
                "unscored before / after",
                "self-effect before -> after (change)",
            ],
            rows,
        ),  # fmt: skip
        "",
        f"Mean leakage change over ordered pairs: {num(d.index)} {interval(d.index_ci)}".rstrip() + ".",
    ]
    if pairs:
        rising = sum(p.flag == RISES for p in moved)
        lines += [
            f"Leakages that move beyond the {d.level:.0%} simultaneous band ({rising} rise, {len(moved) - rising} "
            "fall): a flag of one audit may not hold in the other.",
            "",
            *md_table(["pair", "before", "after", "change", "interval", "moves"], pairs),
        ]
    else:
        lines.append(f"No leakage moves beyond the {d.level:.0%} simultaneous band over the ordered pairs.")
    return lines
