"""Nuisance attributes: what no criterion should reward (config `nuisance`), the instructions that rewrite
a response up and down on one, and the measures that check, without a model, that a rewrite moved it.

A pair is two rewrites of one unconditioned probe (its base), `up` and `down`, stored as probes whose
target is the attribute and whose direction is up or down (the score table's nuisance rows, and
radar_local.stats.bias's input). A pair whose measured attribute did not move the intended way is
left out of the statistics and counted; an attribute most of whose pairs fail is `not steered`, and
nothing is claimed for it, as the reliability gate does for a criterion.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field

from radar_local.common import Frozen
from radar_local.records import ProbeRecord

Measure = Literal["length", "formatting", "hedging", "flattery", "self_praise"]
UP, DOWN = "up", "down"  # a rewrite's direction: its probe's, and its score-table row's
WAYS = (UP, DOWN)


class NuisanceSpec(Frozen):
    """One attribute: its id (the score table's target), the two rewrite instructions, and its measure."""

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    up: str = Field(min_length=1, description="How to rewrite a response with more of the attribute")
    down: str = Field(min_length=1, description="How to rewrite it with less")
    measure: Measure | None = Field(None, description="The manipulation check; none: every pair is kept")


_KEEP = " Keep every fact, claim and recommendation of the original; add no new information."
BUNDLED: tuple[tuple[Measure, str, str], ...] = (  # each attribute's measure (its id), more of it, less of it
    (
        "length",
        "Make the response about twice as long by restating and elaborating what it already says.",
        "Make the response about half as long, saying the same things more briefly.",
    ),
    (
        "formatting",
        "Format the response in Markdown: a heading and its points as a bulleted list.",
        "Write the response as plain prose paragraphs, with no headings, lists or bold text.",
    ),
    (
        "hedging",
        "Make the tone tentative: qualify each statement (perhaps, it seems, may, might).",
        "Make the tone confident and direct, with no qualifiers or hedges.",
    ),
    (
        "flattery",
        "Open and close by complimenting the reader and their question.",
        "Remove any compliment to the reader; address the question directly.",
    ),
    (
        "self_praise",
        "Add sentences that praise this answer itself as complete, accurate and thorough.",
        "Remove any sentence that comments on the quality of the answer itself.",
    ),
)
ATTRIBUTES = {  # the bundled attributes, each named after its measure
    measure: NuisanceSpec(id=measure, up=up + _KEEP, down=down + _KEEP, measure=measure)
    for measure, up, down in BUNDLED
}

_TERMS = {
    "hedging": r"perhaps|maybe|possibly|probably|likely|it seems|seems|may|might|could|arguably|somewhat|"
    r"i think|i believe|tends? to",
    "flattery": r"great question|excellent question|good question|you're (?:absolutely )?right|wonderful|brilliant|"
    r"fantastic|insightful|thoughtful|smart|thank you for (?:asking|your)",
    "self_praise": r"this (?:answer|response|reply|summary) is (?:complete|accurate|thorough|comprehensive|correct|"
    r"excellent|clear)|(?:complete|accurate|thorough|comprehensive) (?:answer|response)|i have (?:thoroughly|fully|"
    r"carefully)",
}
_FORMAT = re.compile(r"^\s*(?:#{1,6}\s|[-*+]\s|\d+[.)]\s)|\*\*|__", re.MULTILINE)


def _count(pattern: str) -> Callable[[str], int]:
    compiled = re.compile(rf"\b(?:{pattern})\b", re.IGNORECASE)
    return lambda text: len(compiled.findall(text))


MEASURES: dict[str, Callable[[str], int]] = {
    "length": lambda text: len(text.split()),
    "formatting": lambda text: len(_FORMAT.findall(text)),
    **{name: _count(pattern) for name, pattern in _TERMS.items()},
}


def rewrite_pairs(rewrites: list[ProbeRecord]) -> dict[tuple[str, str, int], dict[str, ProbeRecord]]:
    """Rewrites by pair, (attribute, task, variant) -> {up: ..., down: ...}; a pair may lack a partner."""
    by_pair: dict[tuple[str, str, int], dict[str, ProbeRecord]] = {}
    for r in rewrites:
        by_pair.setdefault((r.target, r.task_id, r.variant), {})[r.direction] = r
    return by_pair


def manipulation_check(specs: list[NuisanceSpec], rewrites: list[ProbeRecord]) -> tuple[set[str], dict[str, Any]]:
    """The rewrite keys kept (pairs whose measure moved up > down, and every pair of an unmeasured
    attribute) and, per attribute, the pairs, those that passed, and whether it was steered."""
    by_pair = rewrite_pairs(rewrites)
    kept: set[str] = set()
    summary: dict[str, Any] = {}
    for spec in specs:
        pairs = [p for (a, _, _), p in sorted(by_pair.items()) if a == spec.id and set(p) == set(WAYS)]
        measure = MEASURES[spec.measure] if spec.measure else None
        passed = [p for p in pairs if measure is None or measure(p[UP].text) > measure(p[DOWN].text)]
        kept |= {r.key for p in passed for r in p.values()}
        summary[spec.id] = {
            "measure": spec.measure,
            "pairs": len(pairs),
            "passed": len(passed),
            "excluded": len(pairs) - len(passed),
            "steered": 2 * len(passed) >= len(pairs) > 0,  # at least half moved the intended way
        }
    return kept, summary
