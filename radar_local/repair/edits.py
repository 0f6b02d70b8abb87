"""Rubric edits: the editor's constrained answer (an action on named criteria with the new criteria
it writes), the prompt that asks for it with the audit's evidence, and the candidate rubric it makes."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from radar_local.answer import SAFE_CHAR
from radar_local.audited import audited_set
from radar_local.prompts import Messages, chat
from radar_local.report.examples import pair_examples
from radar_local.rubric import Criterion, Rubric

if TYPE_CHECKING:
    from radar_local.repair.findings import Finding
    from radar_local.rundir import RunDir
    from radar_local.stats.result import AuditResult

ACTIONS = ("rewrite", "merge", "split", "drop")
# action -> (criteria it names, new criteria it writes)
SHAPE = {"rewrite": (1, 1), "merge": (2, 1), "split": (1, 2), "drop": (1, 0)}
LIMITS = {"id": 30, "label": 40, "description": 200, "end": 30, "keeps": 200, "rationale": 300}


class NewCriterion(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    label: str
    description: str
    kind: Literal["evaluative", "descriptive"]
    low: str
    high: str


class Edit(BaseModel):
    model_config = ConfigDict(extra="forbid")
    action: Literal["rewrite", "merge", "split", "drop"]
    criteria: list[str]
    new: list[NewCriterion]
    keeps: str = Field(description="merge, drop: which dimension of the original the rubric keeps")
    rationale: str


@dataclass(frozen=True)
class EditFormat:
    """The editor's answer as a strict regex: each action with exactly its shape, existing ids only."""

    ids: tuple[str, ...]

    @property
    def regex(self) -> str:
        text = lambda n, least=1: SAFE_CHAR + "{%d,%d}" % (least, n)
        ids = "(" + "|".join(self.ids) + ")"
        crit = (
            r'\{"id": "[a-z][a-z0-9_]{0,%d}", "label": "' % (LIMITS["id"] - 1)
            + text(LIMITS["label"])
            + r'", "description": "'
            + text(LIMITS["description"])
            + r'", "kind": "(evaluative", "low": "", "high": "|descriptive", "low": "'
            + text(LIMITS["end"])
            + r'", "high": "'
            + text(LIMITS["end"])
            + r')"\}'
        )
        named = {1: r'\["' + ids + r'"\]', 2: r'\["' + ids + r'", "' + ids + r'"\]'}
        written = {0: r"\[\]", 1: r"\[" + crit + r"\]", 2: r"\[" + crit + ", " + crit + r"\]"}
        bodies = [f'"{a}", "criteria": {named[n]}, "new": {written[m]}' for a, (n, m) in SHAPE.items()]
        return (
            r'\{"action": ('
            + "|".join(bodies)
            + r'), "keeps": "'
            + text(LIMITS["keeps"], 0)
            + r'", "rationale": "'
            + text(LIMITS["rationale"])
            + r'"\}'
        )

    @property
    def max_tokens(self) -> int:
        """The longest admissible answer in characters, hence an upper bound in tokens."""
        new = {
            "id": "x" * LIMITS["id"],
            "label": "x" * LIMITS["label"],
            "description": "x" * LIMITS["description"],
            "kind": "descriptive",
            "low": "x" * LIMITS["end"],
            "high": "x" * LIMITS["end"],
        }
        longest = max(self.ids, key=len)
        return len(
            json.dumps(
                {
                    "action": "rewrite",
                    "criteria": [longest, longest],
                    "new": [new, new],
                    "keeps": "x" * LIMITS["keeps"],
                    "rationale": "x" * LIMITS["rationale"],
                }
            )
        )

    def json_schema(self) -> dict:
        string = {"type": "string", "minLength": 1}
        crit = {
            "type": "object",
            "additionalProperties": False,
            "required": list(NewCriterion.model_fields),
            "properties": {
                "id": {"type": "string", "pattern": "^[a-z][a-z0-9_]*$"},
                "label": string,
                "description": string,
                "kind": {"enum": ["evaluative", "descriptive"]},
                "low": {"type": "string"},
                "high": {"type": "string"},
            },
        }
        return {
            "type": "object",
            "additionalProperties": False,
            "required": list(Edit.model_fields),
            "properties": {
                "action": {"enum": list(ACTIONS)},
                "criteria": {"type": "array", "items": {"enum": list(self.ids)}, "minItems": 1, "maxItems": 2},
                "new": {"type": "array", "items": crit, "maxItems": 2},
                "keeps": {"type": "string"},
                "rationale": string,
            },
        }


EDITOR_SYSTEM = (
    "You edit evaluation rubrics so that every criterion measures one thing a judge can observe and no "
    "two criteria move together. Answer with one edit as JSON."
)


def editor_messages(
    rubric: Rubric,
    result: AuditResult,
    findings: list[Finding],
    evidence: list[str],
    left_alone: list[str],
    k: int,
    count: int,
) -> Messages:
    lines = [f"Rubric '{rubric.name}':"]
    lines += [f"- {c.id} ({c.label}, {c.kind}): {c.description}" for c in rubric.criteria]
    lines += [
        "",
        f"An audit (probes steered up and down on each criterion, every probe scored on every criterion by "
        f"the verifier; reliability gate tau = {result.tau}) found:",
    ]
    lines += [f"- {f.kind}: {f.text}" for f in findings]
    if evidence:
        lines += ["", "Evidence:"] + [f"- {e}" for e in evidence]
    if left_alone:
        lines += ["", "Intended couplings (do not edit for these):"] + [f"- {x}" for x in left_alone]
    lines += [
        "",
        "Actions: rewrite one criterion (new wording that the verifier can observe and that does not share "
        "what another criterion measures); merge two criteria into one (say in `keeps` which dimension the "
        "merged criterion keeps); split one criterion into two; drop one criterion (say in `keeps` which "
        "remaining criterion covers what it measured).",
        f"Candidate {k} of {count}: propose one edit that addresses the findings; where you can, propose a "
        "different edit from the other candidates.",
    ]
    return chat(EDITOR_SYSTEM, "\n".join(lines))


def evidence_lines(run: RunDir, result: AuditResult, findings: list[Finding], max_chars: int = 300) -> list[str]:
    """For each coupled pair: the probe steered up on one criterion that the verifier scored highest
    on the other, with the verifier's rationale for that score."""
    out = []
    records = audited_set(run, verifiers={result.verifier})
    for f in findings:
        if len(f.criteria) != 2:
            continue
        for a, b in (f.criteria, f.criteria[::-1]):
            shown = pair_examples(result, records, a, b, max_chars)
            up = next((p for p in shown if p["direction"] == "+"), None)
            if up is not None:
                why = up["rationale"].get(b)
                out.append(
                    f'a probe steered up on {a} scored {up["scores"].get(b)} on {b}: "{up["text"]}"'
                    + (f'; the verifier\'s rationale for {b}: "{why}"' if why else "")
                )
    return out


def apply_edit(rubric: Rubric, edit: Edit) -> Rubric:
    """The candidate rubric, validated like any rubric; ValueError says why an edit cannot apply."""
    named, written = SHAPE[edit.action]
    if len(edit.criteria) != named or len(edit.new) != written or len(set(edit.criteria)) != named:
        raise ValueError(f"{edit.action} names {named} criteria and writes {written}")
    unknown = [c for c in edit.criteria if c not in rubric.ids]
    if unknown:
        raise ValueError(f"unknown criterion {unknown[0]}")
    if edit.action in ("merge", "drop") and not edit.keeps.strip():
        raise ValueError(f"a {edit.action} must say which dimension of the original it keeps")
    try:
        new = [Criterion(**{**n.model_dump(), "low": n.low or None, "high": n.high or None}) for n in edit.new]
    except ValidationError as exc:
        raise ValueError(exc.errors()[0]["msg"]) from None
    first = rubric.ids.index(edit.criteria[0])
    kept = [c for c in rubric.criteria if c.id not in edit.criteria]
    criteria = kept[:first] + new + kept[first:] if first <= len(kept) else kept + new
    weights = None
    if rubric.weights:
        removed = [rubric.weights.get(c, 1.0) for c in edit.criteria]
        weights = {c.id: rubric.weights.get(c.id, 1.0) for c in kept} | {
            n.id: sum(removed) / max(len(new), 1) for n in new
        }
    try:
        candidate = Rubric(
            id=rubric.id, name=rubric.name, criteria=tuple(criteria), weights=weights, scale=rubric.scale
        )
    except ValidationError as exc:
        raise ValueError(exc.errors()[0]["msg"].removeprefix("Value error, ")) from None
    if candidate == rubric:
        raise ValueError("the edit changes nothing")
    return candidate


# ---- 3. re-audit, 4. select ----------------------------------------------------------------------
