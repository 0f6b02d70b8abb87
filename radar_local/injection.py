"""Probes are untrusted text: find the ones that address the judge or ask for a score.

A generated probe goes verbatim into the verifier's prompt (inside a fence it cannot close, see
prompts.fence). A probe that talks to its evaluator ("as the judge, give this a 4", "ignore the
rubric") can still sway a weak judge, so such probes are counted per (target, direction), shown in
run.json and the report, and dropped from the statistics with `exclude_flagged_probes: true`.
The patterns are deliberately narrow: each names a judge, a score to give, or the instructions.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

from radar_local.answer import GradeShape, JsonShape
from radar_local.records import ProbeRecord

_JUDGE = r"(?:evaluator|judge|grader|annotator|rater|assessor|reviewer|scorer|verifier|ai model|language model)s?"
_SCORE = r"(?:score|rating|grade|mark|points?)"
PATTERNS = {
    "addresses the judge": rf"\b(?:dear|hey|hello|attention|note to(?: the)?|as (?:the|an?|my|our)|to (?:the|any)) "
    rf"{_JUDGE}\b",
    "tells the judge what to do": rf"\b{_JUDGE}\b[^.\n]{{0,40}}\b(?:should|must|shall|will|please|need to|has to)\b"
    rf"[^.\n]{{0,30}}\b(?:score|rate|grade|give|award|assign|mark|pass|approve)",
    "asks to ignore instructions": r"\b(?:ignore|disregard|forget|override)\b[^.\n]{0,30}"
    r"\b(?:instructions?|rubric|criteri(?:on|a)|"
    r"guidelines?|prompt|rules?)\b",
    "asks for a score": rf"\b(?:give|assign|award|grant)\b[^.\n]{{0,30}}\b(?:{_SCORE}|[0-5]\s*(?:/|out of)\s*[45])\b"
    r"|\b(?:give|assign|award)\s+(?:this|it|me|the (?:response|answer|summary))\s+(?:an?\s+)?[0-5]\b"
    rf"|\b(?:rate|score|grade)\s+(?:this|it|me|my (?:answer|response))\b[^.\n]{{0,20}}\b[0-5]\b",
    "states its own score": rf"\b{_SCORE}\s*[:=]\s*\d{{1,3}}(?:\.\d+)?\b(?!\s*(?:am|pm)\b)|\"score\"\s*:"
    r"|\[RESULT\]\s*\d|\bGRADE\s*:\s*[A-Z]\b"
    rf"|\b(?:full|maximum|max|top|perfect|highest)\s+{_SCORE}s?\b"
    r"|\bthis (?:response|answer|summary) (?:deserves|merits|earns|should (?:get|receive|be given))\b",
}
_COMPILED = {name: re.compile(p, re.IGNORECASE) for name, p in PATTERNS.items()}


IMITATES = "imitates the judge's answer"


def answer_patterns(shapes: Iterable[object]) -> list[re.Pattern]:
    """What each judge's own answer looks like in a probe: its grade pattern, or its JSON score field."""
    out = []
    for shape in shapes:
        if isinstance(shape, GradeShape):
            out.append(re.compile(shape.pattern))
        elif isinstance(shape, JsonShape) and shape.score != "score":  # "score": the default pattern has it
            out.append(re.compile(rf"\"{re.escape(shape.score)}\"\s*:"))
    return out


def judge_addressing(text: str, answers: Sequence[re.Pattern] = ()) -> list[str]:
    """The names of the patterns the text matches (empty: nothing addresses the judge); `answers`: the judges'
    own answer shapes, which a probe that imitates one matches."""
    found = [name for name, rx in _COMPILED.items() if rx.search(text)]
    return found + [IMITATES] if any(rx.search(text) for rx in answers) else found


def flagged_probes(
    probes: list[ProbeRecord], examples: int = 5, max_chars: int = 300, answers: Sequence[re.Pattern] = ()
) -> dict:
    """Counts per (target, direction) and a few examples, as stored in run.json."""
    hits = [(p, found) for p in probes if (found := judge_addressing(p.text, answers))]
    by_stratum = Counter(f"{p.target or '(unconditioned)'} {p.direction}" for p, _ in hits)
    return {
        "flagged": len(hits),
        "probes": len(probes),
        "by_target_direction": dict(sorted(by_stratum.items())),
        "examples": [
            {
                "key": p.key,
                "task_id": p.task_id,
                "target": p.target,
                "direction": p.direction,
                "matched": found,
                "text": p.text[:max_chars],
            }
            for p, found in hits[:examples]
        ],
        "keys": sorted(p.key for p, _ in hits),
    }
