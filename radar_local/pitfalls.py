"""The sign lint of a per-prompt rubric: items whose phrasing and points disagree. A pitfall (points below zero)
is met when the response commits it, so it reads as a fault ("Fails to ...", "Gives unsafe advice"); an item
of positive points reads as what a good response does. An item worded one way with the other sign is scored
backwards by every judge that reads it right. A lint reads words, never verdicts: it is never a finding."""

from __future__ import annotations

import re
from collections.abc import Iterable

from radar_local.rubric import Item

# What an item says before its verb: RaR's "Essential Criteria:", a subject ("The response", "Model").
_LEAD = r"^\s*(?:[\w-]+(?:\s+[\w-]+){0,2}\s*:\s*)?(?:(?:the\s+)?(?:response|model|assistant|answer|completion)\s+)?"
_FAULT = re.compile(
    _LEAD + r"(?:fails?\s+to|failed\s+to|does\s+not|doesn'?t|did\s+not|omits|neglects|ignores|lacks|misses|"
    r"incorrectly|inaccurately|wrongly|falsely|mistakenly|poorly|inappropriately|unnecessarily|excessively|"
    r"(?:gives|provides|suggests|recommends|states|makes|offers|uses|includes)\s+(?:[\w-]+\s+){0,2}?"
    r"(?:harmful|unsafe|dangerous|incorrect|inaccurate|misleading|false|wrong|fabricated|unsupported|"
    r"contraindicated|irrelevant)\b)",
    re.I,
)
_QUALITY = re.compile(
    _LEAD + r"(?:correctly|accurately|appropriately|clearly|safely|helpfully|thoroughly|precisely|properly|"
    r"effectively|concisely)\b",
    re.I,
)


def sign_lints(items: Iterable[Item]) -> list[str]:
    """One line for each item whose phrasing reads against its sign: a pitfall worded as a quality, or an item of
    positive points worded as a fault."""
    found = []
    for item in items:
        fault, quality = bool(_FAULT.search(item.description)), bool(_QUALITY.search(item.description))
        if item.pitfall and quality and not fault:
            reads, should = "a quality", "a pitfall is met when the response commits it"
        elif item.points > 0 and fault and not quality:
            reads, should = "a fault", "an item of positive points is met when the response does what it says"
        else:
            continue
        found.append(
            f"lint: item '{item.id}' of task '{item.task}' has {item.points:g} points and reads as {reads} "
            f"('{_opening(item.description)}'): {should}; check its sign"
        )
    return found


def _opening(text: str) -> str:
    words = text.split()
    return " ".join(words[:6]) + (" ..." if len(words) > 6 else "")
