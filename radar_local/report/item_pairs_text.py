"""A pairwise judge of a per-prompt rubric in words (outline.py): the items it cannot tell apart, those it reads
backwards, the redundant pairs with both items' text, its position bias and the tag matrix (stats/item_pairs.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from radar_local.report.per_prompt_text import PAIR_HEAD, tag_tables
from radar_local.report.text import interval, num

if TYPE_CHECKING:
    from radar_local.stats.item_pairs import ItemPairs

ITEM_HEAD = ["item", "task", "text", "points", "pairs", "self-effect", "p (reversed)", "evidence"]


def item_pairs_lines(p: ItemPairs) -> list[str]:
    """What the pairwise judge does with the items, in plain words."""
    items = len(p.items)
    who = "The pairwise judge" if p.judge is None else f"The pairwise judge {p.judge}"
    lines = [
        f"{who} asked which response of each item's steered pair is better on every item of its prompt, in both "
        f"orders ({p.verdicts} verdicts over {p.prompts} prompts; the better one on a pitfall is the response that "
        f"avoids it): {len(p.unread)} of {items} items fail the gate (net preference for the better response below "
        f"{p.tau}: the judge cannot tell a pair apart on what the item describes)."
    ]
    signs = [r for r in p.items if r.sign_error]
    if signs:
        confirmed = sum(r.sign_error == "confirmed" for r in signs)
        lines.append(
            f"Sign errors: {len(signs)} item(s) on which it prefers the worse response ({confirmed} confirmed, Holm "
            f"over the {items} items at a quarter of the audit's {1 - p.level:.0%} error; the rest screened at a false "
            f"discovery rate of {p.fdr:g}): " + ", ".join(r.id for r in signs) + "."
        )
    else:
        lines.append(f"No sign error found (none confirmed or screened among {items} items).")
    if p.pairs:
        lines.append(
            f"Redundant pairs: {len(p.pairs)} of {p.pairs_tested} item pairs move its preference together both ways "
            f"({sum(r.evidence == 'confirmed' for r in p.pairs)} confirmed, Holm over every pair)."
        )
    elif p.pairs_tested:
        lines.append(f"No redundant pair found (none confirmed or screened among {p.pairs_tested} item pairs).")
    for kind, what in (("sign_errors", "sign error"), ("pairs", "redundant pair")):
        if (r := p.reach.get(kind)) is not None and not r.confirmable:
            lines.append(
                f"At this design no {what} can be confirmed: the smallest p-value its pairs can give ({r.floor:.2g}) "
                f"is above Holm's first bound over its {r.tests} tests ({r.bound:.2g}); ask more pairs (`n`)."
            )
    if p.sign_error_rate is not None:
        lines.append(
            "Pitfalls: the share of its verdicts preferring the response that commits one, pooled over prompts: "
            f"{num(p.sign_error_rate, signed=False)} {interval(p.sign_error_ci)}".rstrip()
            + "."
        )
    pos = p.position
    if pos.bias is not None:
        lines.append(
            f"Position: the first slot is chosen at {num(pos.first_slot, signed=False)} (bias {num(pos.bias)} "
            f"{interval(pos.ci)}, p = {pos.p:.2g}: {'a position bias, confirmed' if pos.confirmed else 'not confirmed'}"
            f"); the two orders disagree on {num(pos.flip_rate, signed=False)} of the questions; ties "
            f"{num(pos.ties, signed=False)}, unscored {pos.unscored}."
        )
    if confirmed_cells := [c for m in p.tags.values() for c in m.confirmed]:
        cells = ", ".join(f"{a} -> {b}" for a, b in confirmed_cells)
        lines.append(f"Tags: a steer on one tag's items moves its preference on another's: {cells}.")
    return lines


def item_pairs_tables(p: ItemPairs) -> list[tuple[list[str], list[list[str]], tuple[int, ...]]]:
    """The items failing the gate or read backwards, the redundant pairs and the tag matrix, each where it has a row
    (the columns holding a user's or a model's text named, as per_prompt_tables names them)."""
    out: list[tuple[list[str], list[list[str]], tuple[int, ...]]] = []
    if shown := [r for r in p.items if not r.reads or r.sign_error]:
        rows = [
            [r.id, r.task, r.text, f"{r.points:g}", str(r.pairs), num(r.self_effect), f"{r.p_reversed:.2g}",
             r.sign_error or ("fails the gate" if not r.reads else "")]
            for r in shown
        ]  # fmt: skip
        out.append((ITEM_HEAD, rows, (1, 2)))
    if p.pairs:
        rows = [
            [r.task, f"{r.a}: {r.a_text}", f"{r.b}: {r.b_text}", num(r.leak_ab), num(r.leak_ba), num(r.sym),
             f"{r.p:.2g}", r.evidence]
            for r in p.pairs
        ]  # fmt: skip
        out.append((PAIR_HEAD, rows, (0, 1, 2)))
    return out + tag_tables(p.tags)
