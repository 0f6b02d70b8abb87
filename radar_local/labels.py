"""The team's own human labels: responses people scored on the rubric's criteria, which every judge (and jury)
scores too, with the template and scale it audits with, so its agreement with the people is measured beside its
coupling.

A labels file is JSONL, CSV or Parquet, a row per (response, criterion, rater): `response`, `criterion`, `score`
(a level as the judge writes it, else a level's value: the same in every file type, a JSON number read as a CSV
cell writes it), the task as `task_id` (one of the audit's) or `prompt`,
and optionally `rater` (several raters per response are allowed; without the column, a response's ratings of a
criterion are raters 1, 2, ... in file order). A row with a `preferred` value is a pairwise label instead (issue
46): `response_a`, `response_b`, the `criterion` asked (or `overall`) and which one the rater preferred (A, B or
tie), which the audit's pairwise judge is asked too, in both orders. A run keeps the labels it read in labels.json,
as data.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
from pydantic import Field, model_validator

from radar_local.common import Frozen, Strict, digest
from radar_local.errors import InputError
from radar_local.inputs import MAX_BYTES
from radar_local.records import ProbeRecord, VerdictRecord
from radar_local.rubric import Rubric, Task
from radar_local.scale import Scale
from radar_local.stats.raters import HumanAgreement, LabelsBlock, Measurement, against_humans
from radar_local.tasks import read_table

LABELLED = "labels"  # the generator label of a labelled response's probe record
REQUIRED = ("response", "criterion", "score")
PAIR_REQUIRED = ("response_a", "response_b", "criterion", "preferred")
OVERALL = "overall"  # a pairwise label's criterion where the rater chose the better response overall (plan.OVERALL)
PREFERRED = {"a": "A", "b": "B", "tie": "tie"}


class HumanLabel(Frozen):
    """One rater's score of one response on one criterion."""

    task_id: str
    response: str = Field(min_length=1)
    criterion: str
    score: float
    rater: str


class PairLabel(Frozen):
    """One rater's choice between two responses to one task on one criterion (or overall)."""

    task_id: str
    response_a: str = Field(min_length=1)
    response_b: str = Field(min_length=1)
    criterion: str
    preferred: str  # A, B or tie
    rater: str


class LabelSet(Strict):
    """labels.json: the labels a run scores (pointwise scores, pairwise choices), and the tasks they name by prompt
    alone."""

    source: str
    tasks: tuple[Task, ...] = ()
    labels: tuple[HumanLabel, ...] = ()
    pairs: tuple[PairLabel, ...] = ()

    @model_validator(mode="after")
    def _some_label(self) -> LabelSet:
        if not self.labels and not self.pairs:
            raise ValueError("a label set holds some label")
        return self

    def problem(self, rubric: Rubric, tasks: Sequence[Task]) -> str | None:
        """What keeps these labels (as a run keeps them) from fitting the rubric and tasks, in one line; else None."""
        known = {t.id for t in (*tasks, *self.tasks)}
        for number, lab in enumerate(self.labels, 1):
            if lab.criterion not in rubric.ids:
                return f"label {number}: criterion '{lab.criterion}' is not the rubric's"
            scale = rubric.scale_of(lab.criterion)
            if lab.score not in {float(v) for v in scale.values}:
                return f"label {number}: score {lab.score:g} is not a level of {lab.criterion}'s scale ({scale.name})"
            if lab.task_id not in known:
                return f"label {number}: task '{lab.task_id}' is none of the run's"
        for number, pair in enumerate(self.pairs, 1):
            if pair.criterion not in (*rubric.ids, OVERALL) or pair.task_id not in known:
                return f"pairwise label {number}: criterion {pair.criterion} or task {pair.task_id} is not the run's"
        return None

    @property
    def criteria(self) -> set[str]:
        return {lab.criterion for lab in self.labels}

    def probes(self) -> list[ProbeRecord]:
        """Each labelled response once, as a record a judge scores like a probe (keyed by task and text)."""
        return _records((lab.task_id, lab.response) for lab in self.labels)

    def pair_probes(self) -> list[tuple[ProbeRecord, ProbeRecord, str]]:
        """Each labelled (response A, response B, criterion) once, its responses as records a pairwise judge is
        asked about, in the file's order."""
        seen: dict[tuple[str, str, str], tuple[ProbeRecord, ProbeRecord, str]] = {}
        for pair in self.pairs:
            a, b = _records([(pair.task_id, pair.response_a), (pair.task_id, pair.response_b)])
            seen.setdefault((a.key, b.key, pair.criterion), (a, b, pair.criterion))
        return list(seen.values())


def _records(responses: Iterable[tuple[str, str]]) -> list[ProbeRecord]:
    """Each (task, response) once, as a record a judge scores like a probe (keyed by task and text)."""
    seen: dict[str, ProbeRecord] = {}
    for task_id, text in responses:
        key = item_key_of(task_id, text)
        if key not in seen:
            seen[key] = ProbeRecord(
                key=key, generator=LABELLED, task_id=task_id, target="", direction="none", variant=0, text=text
            )
    return list(seen.values())


def item_key(label: HumanLabel) -> str:
    return item_key_of(label.task_id, label.response)


def load_labels(path: Path, rubric: Rubric, tasks: Sequence[Task]) -> LabelSet:
    """Read and check a labels file against the rubric and tasks; InputError (one line, the row) where it does not
    fit."""
    if path.is_dir():
        raise InputError(path, "is a folder; name the labels file (JSONL, CSV or Parquet)")
    if path.is_file() and path.stat().st_size > MAX_BYTES:  # labels.json keeps every label: it must read back
        raise InputError(path, f"is larger than {MAX_BYTES >> 20} MiB; radar reads no labels file this large")
    df = read_table(path, "labels file")
    pairwise = "preferred" in df.columns
    needed = [c for c in (PAIR_REQUIRED if pairwise else REQUIRED) if c not in df.columns]
    if needed or ("task_id" not in df.columns and "prompt" not in df.columns):
        need = needed or ["task_id or prompt"]
        raise InputError(
            path,
            f"no column {', '.join(need)}; a labels file has response, criterion, score, task_id or prompt, and "
            "optionally rater (or, for pairwise labels, response_a, response_b, criterion and preferred) (it has "
            f"{', '.join(map(str, df.columns)) or 'none'})",
        )
    by_id = {t.id: t for t in tasks}
    by_prompt = {t.prompt: t for t in tasks}
    new_tasks: dict[str, Task] = {}
    labels: list[HumanLabel] = []
    pairs: list[PairLabel] = []
    seen: dict[tuple[str, str, str], int] = {}  # (response or pair, criterion, rater) -> its first row
    count: dict[tuple[str, str], int] = {}  # ratings so far of a (response, criterion) without a rater column
    for number, row in enumerate(df.to_dict("records"), 1):
        where = f"row {number}: "
        preferred = _text(row.get("preferred")).lower() if pairwise else ""
        criterion = _text(row.get("criterion"))
        if preferred:
            responses = (_text(row.get("response_a")), _text(row.get("response_b")))
            if not all(responses):
                raise InputError(path, where + "a pairwise label needs both responses (response_a, response_b)")
            if responses[0] == responses[1]:
                raise InputError(path, where + "response_a and response_b are the same text; a pair compares two")
            if preferred not in PREFERRED:
                raise InputError(path, where + f"preferred {row.get('preferred')!r} is none of A, B and tie")
            if criterion not in (*rubric.ids, OVERALL):
                raise InputError(
                    path, where + f"criterion '{criterion}' is not the rubric's; it has {', '.join(rubric.ids)} "
                    "(and overall, for a pairwise label)",
                )  # fmt: skip
        else:
            response = _text(row.get("response"))
            if not response:
                raise InputError(
                    path, where + "the response is empty or not text; every label needs the response scored"
                )
            if criterion not in rubric.ids:
                raise InputError(
                    path, where + f"criterion '{criterion}' is not the rubric's; it has {', '.join(rubric.ids)}"
                )
        task = _task(row, by_id, by_prompt, new_tasks, path, where)
        item = item_key_of(task.id, "|".join(responses)) if preferred else item_key_of(task.id, response)
        rated = (item, criterion)
        if "rater" in df.columns:
            rater = _text(row.get("rater"), ids=True)
            if not rater:
                raise InputError(path, where + "the rater is empty; name every row's rater, or leave out the column")
        else:
            count[rated] = count.get(rated, 0) + 1
            rater = f"rater {count[rated]}"
        if (first := seen.get((*rated, rater))) is not None:
            what = "chose between these responses" if preferred else "scored this response"
            raise InputError(path, where + f"{rater} {what} on {criterion} already (row {first})")
        seen[(*rated, rater)] = number
        if preferred:
            a, b = responses
            pairs.append(PairLabel(task_id=task.id, response_a=a, response_b=b, criterion=criterion,
                                   preferred=PREFERRED[preferred], rater=rater))  # fmt: skip
            continue
        scale = rubric.scale_of(criterion)
        score = _score(row.get("score"), scale)
        if score is None:
            raise InputError(
                path, where + f"score {row.get('score')!r} is not a level of {criterion}'s scale ({scale.name})"
            )
        labels.append(HumanLabel(task_id=task.id, response=response, criterion=criterion, score=score, rater=rater))
    if not labels and not pairs:
        raise InputError(path, "holds no labels; give a row per (response, criterion, rater)")
    return LabelSet(source=str(path), tasks=tuple(new_tasks.values()), labels=tuple(labels), pairs=tuple(pairs))


def item_key_of(task_id: str, response: str) -> str:
    return "label:" + digest([task_id, response])


def _task(row: dict, by_id: dict, by_prompt: dict, new: dict, path: Path, where: str) -> Task:
    task_id, prompt = _text(row.get("task_id"), ids=True), _text(row.get("prompt"))
    if task_id:
        if task_id not in by_id:
            raise InputError(
                path, where + f"task '{task_id}' is not one of the audit's tasks; give its text in a `prompt` column"
            )
        return by_id[task_id]
    if not prompt:
        raise InputError(path, where + "neither a task_id nor a prompt; every label names the task it answers")
    if prompt in by_prompt:
        return by_prompt[prompt]
    return new.setdefault(prompt, Task(id=f"labelled-{digest(prompt)[:8]}", prompt=prompt))


def _text(value: object, ids: bool = False) -> str:
    if isinstance(value, str):
        return value.strip()
    if ids and (written := _written(value)) is not None:
        return written
    return ""


def _written(value: object) -> str | None:
    """A number as it is written in a CSV cell (1, not 1.0: JSONL with a null in the column reads 1 as 1.0)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    number = float(value)
    if number != number or abs(number) == float("inf"):
        return None
    return str(int(number)) if number.is_integer() and abs(number) < 2**53 else repr(number)


def _score(value: object, scale: Scale) -> float | None:
    """A level's value from a cell, by one rule in every file type: the cell as written (a JSON number as a CSV
    cell writes it) names a level (as the judge writes it); else it is a number that is a level's value."""
    text = value.strip() if isinstance(value, str) else _written(value)
    if text is None:
        return None
    if (named := scale.value(text)) is not None:
        return float(named)
    try:
        number = float(text)
    except ValueError:
        return None
    return number if number in {float(v) for v in scale.values} else None


def human_scores(labels: LabelSet, criterion: str, items: list[str]) -> np.ndarray:
    """(raters, items) of one criterion's human scores, NaN where a rater gave none."""
    raters = sorted({lab.rater for lab in labels.labels})
    out = np.full((len(raters), len(items)), np.nan)
    row, column = {r: i for i, r in enumerate(raters)}, {k: i for i, k in enumerate(items)}
    for lab in labels.labels:
        if lab.criterion == criterion:
            out[row[lab.rater], column[item_key(lab)]] = lab.score
    return out


def judge_scores(
    verdicts: Iterable[tuple[str, VerdictRecord]], judge: str, criterion: str, items: list[str]
) -> np.ndarray:
    """(items,) of one judge's scores of one criterion, NaN where unscored or not scored."""
    column = {k: i for i, k in enumerate(items)}
    out = np.full(len(items), np.nan)
    for label, v in verdicts:
        if label == judge and v.criterion == criterion and v.probe_key in column and v.score is not None:
            out[column[v.probe_key]] = v.score
    return out


def agreement(
    labels: LabelSet,
    verdicts: list[tuple[str, VerdictRecord]],
    judges: list[str],
    criteria: list[str],
    measurements: dict[str, Measurement],
    scales: dict[str, Scale],
    *,
    resamples: int,
    seed: int,
    confidence: float,
) -> LabelsBlock:
    """stats.json's `labels` block: per judge and labelled criterion (in the rubric's order), its agreement with
    the human raters (stats/raters.against_humans), each row naming the level of measurement its alphas are at."""
    items = [p.key for p in labels.probes()]
    labelled = [c for c in criteria if c in labels.criteria]
    humans = {c: human_scores(labels, c, items) for c in labelled}
    scores = {(j, c): judge_scores(verdicts, j, c, items) for j in judges for c in labelled}

    def measurement_of(c: str) -> Measurement:
        """The criterion's level of measurement for every judge, or interval where some judge scores between
        levels (a jury's mean, an expected score): one per criterion, so the judges and the humans' ceiling compare."""
        values = np.concatenate([scores[j, c][~np.isnan(scores[j, c])] for j in judges])
        return measurements[c] if np.isin(values, scales[c].values).all() else "interval"

    def one(judge: str, c: str, at: Measurement) -> HumanAgreement:
        return against_humans(
            scores[judge, c], humans[c], at, scales[c].values, resamples=resamples, seed=seed, confidence=confidence
        )

    at = {c: measurement_of(c) for c in labelled}
    return LabelsBlock(
        source=labels.source,
        responses=len(items),
        raters=len({lab.rater for lab in labels.labels}),
        judges={judge: {c: one(judge, c, at[c]) for c in labelled} for judge in judges},
    )


def errors(labels: LabelSet, verdicts: list[tuple[str, VerdictRecord]], jurors: list[str]) -> dict[str, np.ndarray]:
    """Per labelled criterion, (jurors, items) of each juror's score minus the mean human score: their errors."""
    items = [p.key for p in labels.probes()]
    out = {}
    for c in labels.criteria:
        humans = human_scores(labels, c, items)
        rated = (~np.isnan(humans)).sum(axis=0)
        truth = np.where(rated > 0, np.nansum(humans, axis=0) / np.maximum(rated, 1), np.nan)
        out[c] = np.vstack([judge_scores(verdicts, j, c, items) - truth for j in jurors])
    return out
