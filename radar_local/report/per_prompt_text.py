"""A per-prompt rubric's text (outline.py): the items the judge cannot read, its sign errors, the redundant pairs
with both items' text, the tag matrix and the score's double counting (stats/per_prompt.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from radar_local.report.text import CI, interval, num

if TYPE_CHECKING:
    from radar_local.stats.per_prompt import PerPrompt, TagMatrix

UNREAD_HEAD = ["item", "task", "text", "points", "self-effect", "probes + / -"]
SIGN_HEAD = ["item", "task", "text", "points", "self-effect", "p (reversed)", "evidence"]
PAIR_HEAD = ["task", "item a", "item b", "a -> b", "b -> a", "Sym", "p", "evidence"]


def per_prompt_lines(p: PerPrompt) -> list[str]:
    """The findings, in plain words: what the judge cannot read, reads backwards, and counts twice."""
    items = len(p.items)
    signs = [r for r in p.items if r.sign_error]
    confirmed = [r for r in signs if r.sign_error == "confirmed"]
    lines = [
        f"Per-prompt rubric: {items} items over {p.prompts} prompts, each steered present and absent and every item "
        f"of its prompt graded on every probe; {len(p.unread)} of {items} items fail the gate (self-effect below "
        f"tau = {p.tau}: the judge's verdict does not follow what the item describes)."
    ]
    if signs:
        lines.append(
            f"Sign errors: {len(signs)} item(s) the judge reads backwards ({len(confirmed)} confirmed, Holm over the "
            f"{items} items at a third of the audit's {1 - p.level:.0%} error; the rest screened at a false discovery "
            f"rate of {p.fdr:g}): " + ", ".join(r.id for r in signs) + "."
        )
    else:
        lines.append(f"No sign error found (none confirmed or screened among {items} items).")
    if p.pairs:
        lines.append(
            f"Redundant pairs: {len(p.pairs)} of {p.pairs_tested} item pairs move together both ways "
            f"({sum(r.evidence == 'confirmed' for r in p.pairs)} confirmed, Holm over every pair of every prompt at a "
            f"third of the audit's {1 - p.level:.0%} error)."
        )
    else:
        lines.append(f"No redundant pair found (none confirmed or screened among {p.pairs_tested} item pairs).")
    for kind, what, tests in (("sign_errors", "sign error", "items"), ("pairs", "redundant pair", "pairs")):
        if (r := p.reach.get(kind)) is not None and not r.confirmable:
            lines.append(
                f"At this design no {what} can be confirmed: the smallest p-value its probes can give ({r.floor:.2g}, "
                f"every probe on the extreme side) is above Holm's first bound over its {r.tests} {tests} "
                f"({r.bound:.2g}); `radar audit --plan` names the N a side that can."
            )
    if p.sign_error_rate is not None:
        lines.append(
            f"Pitfalls' sign-error rate (the share of their verdicts on the wrong side, pooled over prompts): "
            f"{num(p.sign_error_rate, signed=False)} {interval(p.sign_error_ci)}".rstrip()
            + "."
        )
    if p.double_count is not None:
        lines.append(
            f"Double counting: {num(p.double_count, signed=False)} {interval(p.double_count_ci)} of the score's move "
            "when one item is steered comes from the other items of its prompt (pooled over prompts).".replace(
                "  ", " "
            )
        )
    if confirmed_cells := [c for m in p.tags.values() for c in m.confirmed]:
        cells = ", ".join(f"{a} -> {b}" for a, b in confirmed_cells)
        lines.append(
            f"Tags: items of one tag move the judge's verdicts on another's, beyond 0 at {p.level:.0%}: {cells}."
        )
    return lines


def per_prompt_tables(p: PerPrompt) -> list[tuple[list[str], list[list[str]], tuple[int, ...]]]:
    """The unread items, the sign errors, the redundant pairs and the tag matrix, each where it has a row: its head,
    its rows and the columns that hold text a user or a model wrote (outline.py marks them untrusted)."""
    out: list[tuple[list[str], list[list[str]], tuple[int, ...]]] = []
    unread = [r for r in p.items if not r.reads]
    if unread:
        rows = [
            [r.id, r.task, r.text, f"{r.points:g}", num(r.self_effect), f"{r.probes[0]} / {r.probes[1]}"]
            for r in unread
        ]
        out.append((UNREAD_HEAD, rows, (1, 2)))
    signs = [r for r in p.items if r.sign_error]
    if signs:
        rows = [
            [r.id, r.task, r.text, f"{r.points:g}", num(r.self_effect), f"{r.p_reversed:.2g}", r.sign_error or ""]
            for r in signs
        ]
        out.append((SIGN_HEAD, rows, (1, 2)))
    if p.pairs:
        rows = [
            [
                r.task,
                f"{r.a}: {r.a_text}",
                f"{r.b}: {r.b_text}",
                num(r.leak_ab),
                num(r.leak_ba),
                num(r.sym),
                f"{r.p:.2g}",
                r.evidence,
            ]  # fmt: skip
            for r in p.pairs
        ]
        out.append((PAIR_HEAD, rows, (0, 1, 2)))
    return out + tag_tables(p.tags)


def tag_tables(tags: Mapping[str, TagMatrix]) -> list[tuple[list[str], list[list[str]], tuple[int, ...]]]:
    """Each tag family's matrix: source tag -> target tag, the prompts' mean with its interval."""
    out: list[tuple[list[str], list[list[str]], tuple[int, ...]]] = []
    for m in tags.values():
        rows = [
            [a, *(f"{num(m.leakage[a].get(b))} {interval(m.ci[a].get(b))}".strip() for b in m.tags)] for a in m.tags
        ]
        out.append(([f"source tag -> target tag ({CI})", *m.tags], rows, (0,)))
    return out
