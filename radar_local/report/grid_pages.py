"""The grid summary (grid.md, grid.html, `radar grid`'s output): an outline rendered as the audit report is."""

from __future__ import annotations

from radar_local.report.html import page, render_html
from radar_local.report.markdown import render_markdown
from radar_local.report.outline import Part, Section, Table, Untrusted, at_levels, calibration_tables
from radar_local.report.text import CI, interval, num
from radar_local.stats.bootstrap import LEVEL
from radar_local.stats.stored import Calibration

CELL_HEAD = ["generator", "verifier", "Pearson", "Spearman", "MAE", "pairs", "reliable criteria"]
PAIR_HEAD = ["pair", "mean Sym", "sd across cells", "cells", "stability"]
JUDGE_HEAD = ["verifier", "worst coupling", "rank", "kappa with labels", "rank", "overall rank"]
BIAS_HEAD = ["generator", "verifier", "attribute", "criterion", "sensitivity", CI, "flag"]
PAIRWISE_HEAD = [
    "generator", "verifier", "gates passed", "confirmed leakage", "position bias", CI, "orders disagree",
    "agrees with your pairwise labels",
]  # fmt: skip
PER_PROMPT_HEAD = [
    "generator",
    "verifier",
    "items",
    "cannot read",
    "sign errors (confirmed)",
    "redundant pairs",
    "double counting",
    "asked pairwise: cannot tell apart, sign errors, position",
]
ATTACKS_HEAD = ["generator", "verifier", "attack", "attacked on", "resists on", "largest lift"]
REWARD_HEAD = [
    "generator",
    "verifier",
    "reward model",
    "its reward moves with",
    "does not see",
    "Spearman with the judge",
]


def grid_sections(summary: dict) -> list[Section]:
    cells: list[list[Part]] = [
        [
            Untrusted(c["generator"]),
            Untrusted(c["verifier"]),
            num(c.get("pearson")),
            num(c.get("spearman")),
            num(c.get("mae"), signed=False),
            str(c.get("n_pairs", "-")),
            str(c["reliable_criteria"]),
        ]
        for c in summary["cells"]
    ]
    dist = summary["verifier_distance"]
    distances = [[Untrusted(v)] + [num(dist[v][w], signed=False) for w in dist] for v in dist]
    pairs = [
        [
            f"{p['a']} / {p['b']}",
            num(p["sym_mean"]),
            num(p["sym_sd"], signed=False),
            str(p["cells"]),
            p["stability"] or "-",
        ]
        for p in summary["pairs"]
    ]
    bias: list[list[Part]] = [
        [
            Untrusted(b["generator"]),
            Untrusted(b["verifier"]),
            b["attribute"],
            b["criterion"],
            num(b["sensitivity"]),
            interval(b["ci"]),
            " ".join(x for x in (b["flag"], b.get("evidence")) if x),
        ]
        for b in summary.get("bias") or []
    ]
    judges: list[list[Part]] = [
        [
            Untrusted(j["verifier"]),
            num(j["worst_coupling"]),
            str(j["rank_coupling"] or "-"),
            num(j["kappa"]),
            str(j["rank_agreement"] or "-"),
            "-" if j["rank"] is None else f"{j['rank']:g}",
        ]
        for j in summary.get("judges") or []
    ]
    pairwise: list[list[Part]] = [
        [
            Untrusted(p["generator"]),
            Untrusted(_pair_judge(p)),
            f"{p['gates_passed']} of {p['criteria']}",
            ", ".join(p["confirmed_leakage"]) or "none",
            num(p["position_bias"]) + (" (confirmed)" if p["position_confirmed"] else ""),
            interval(p["position_ci"]),
            num(p["flip_rate"], signed=False),
            num(p["agreement_with_labels"], signed=False),
        ]
        for p in summary.get("pairwise") or []
    ]
    rewards: list[list[Part]] = [
        [
            Untrusted(w["generator"]),
            Untrusted(w["verifier"]),
            Untrusted(w["model"]),
            ", ".join(f"{c} {num(e)}" for c, e in w["moves"].items()) or "none",
            ", ".join(w["blind"]) or "none",
            num(w["agreement_with_judge"]),
        ]
        for w in summary.get("reward") or []
    ]
    per_prompt: list[list[Part]] = [
        [
            Untrusted(c["generator"]),
            Untrusted(c["verifier"]),
            str(c["items"]),
            str(c["unread"]),
            ", ".join(c["sign_errors"]) or "none",
            str(c["redundant_pairs"]),
            num(c["double_count"], signed=False),
            _pairwise_cell(c.get("pairwise")),
        ]
        for c in summary.get("per_prompt") or []
    ]
    attacked: list[list[Part]] = [
        [
            Untrusted(c["generator"]),
            Untrusted(c["verifier"]),
            c["attack"],
            ", ".join(c["attacked"]) or "none",
            f"{len(c['resists'])} of {c['criteria']}",
            num(c["largest_lift"]),
        ]
        for c in summary.get("attacks") or []
    ]
    sections = [
        Section(
            "Judges ranked on coupling and agreement with your labels",
            [
                (
                    "Worst coupling: MaxCoupling averaged over the judge's cells (lower is better); kappa: quadratic-"
                    "weighted kappa with the human labels averaged over criteria and cells (higher is better); "
                    "ranked by the mean of the two ranks.",
                ),
                Table(JUDGE_HEAD, judges),
            ],
        ),
        Section("Agreement with the human reference per cell (Table 9)", [Table(CELL_HEAD, cells)]),
        Section(
            "Distance between verifiers' leakage matrices (RMS over reliable off-diagonal cells)",
            [Table(["", *dist], distances, numeric=True)],
        ),
        Section("Pair coupling across cells", [Table(PAIR_HEAD, pairs)]),
    ]
    optional = [
        ("Pairwise judges per cell (each cell's verifier asked which of each up/down pair is better)", PAIRWISE_HEAD,
         pairwise),
        ("Per-prompt rubric per cell (the judges on the same items; confirmed: a third of the 5% error each)",
         PER_PROMPT_HEAD, per_prompt),
        ("Reward model per cell (how far each criterion's steer moves it, in reward sd; family-wise {level})",
         REWARD_HEAD, rewards),
        ("Judge bias per cell (sensitivity to nuisance attributes, 0-1 scale)", BIAS_HEAD, bias),
        ("Under attack per cell (each judge's own format; attacked: the family band above 0, 0-1 scale)", ATTACKS_HEAD,
         attacked),
    ]  # fmt: skip
    sections += [Section(title, [Table(head, rows)]) for title, head, rows in optional if rows]
    sections += [
        Section(
            ("Judge calibration on ", Untrusted(gen), "'s probes"), calibration_tables(Calibration.model_validate(cal))
        )
        for gen, cal in summary.get("calibration", {}).items()
        if cal is not None
    ]
    return at_levels(sections, summary.get("level", LEVEL))  # a grid.json before the level was written: LEVEL's


def grid_markdown(summary: dict) -> str:
    return render_markdown(("RADAR grid",), grid_sections(summary))


def grid_html(summary: dict) -> str:
    return page(("RADAR grid",), render_html(grid_sections(summary)))


def _pair_judge(row: dict) -> str:
    """The judge asked a cell's pairs: its verifier, or pairwise's own model beside it."""
    judge = row.get("pairwise_judge", row["verifier"])  # grid.json files written before it was named
    return row["verifier"] if judge == row["verifier"] else f"{judge} (beside {row['verifier']})"


def _pairwise_cell(q: dict | None) -> str:
    """A cell's pairwise judge of the items in a few words (grid.per_prompt_by_cell), or that none was asked."""
    if q is None:
        return "not asked"
    bias = f"{num(q['position_bias'])}{' confirmed' if q['position_confirmed'] else ''}"
    return f"{q['unread']}, {', '.join(q['sign_errors']) or 'none'}, {bias}"
