"""A model as an audit names it (ModelSpec: engine, model, options, judge) and a jury of them; config.py builds
on them."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from radar_local.answer import GradeShape, Shape
from radar_local.common import Strict, slug
from radar_local.engines.base import EngineOptions
from radar_local.engines.registry import EngineName, engine_class, output_options, parse_options
from radar_local.judge import CALL_MODES, Judge
from radar_local.presets import PAIR_PRESETS, with_preset
from radar_local.scale import Scale

MAX_LABEL = 100  # characters of a model label: it becomes part of file names


def label_problem(label: str) -> None:
    """A label names a grid cell's folder and a stats file: '.' or '..' would be another folder."""
    if slug(label) in ("", ".", ".."):
        raise ValueError(f"the label '{label}' cannot name a folder; give this model a `name`")
    if len(slug(label)) > MAX_LABEL:  # it becomes part of file names (stats.<label>.json)
        raise ValueError(
            f"the label '{label[:40]}...' is longer than {MAX_LABEL} characters, too long for "
            "a file name; give this model a shorter `name`"
        )


MOST_REPEATS = 20


class ModelSpec(Strict):
    engine: EngineName = Field(
        description="Which engine runs the model; `testing` is the planted engine of the orchestration tests"
    )
    model: str = Field(
        min_length=1, description="Registry name, local weights directory, or served model name (openai)"
    )
    name: str | None = Field(None, description="Label in the score table; defaults to `model`")
    options: dict[str, Any] = Field(default_factory=dict, description="Engine options, passed through")
    judge: Judge | None = Field(
        None, description="A verifier's judge: its prompt template, answer shape and calls (radar_local.judge)"
    )
    repeat: int = Field(
        1,
        ge=1,
        le=MOST_REPEATS,
        description="Which asking of each verdict this is: 2 .. R are the repeats `consistency: {repeats: R}` asks, "
        "labelled '<label>-repeat-r' (set by radar, not by hand)",
    )

    @property
    def label(self) -> str:
        return self.name or Path(self.model).name

    @model_validator(mode="after")
    def _label_names_a_folder(self) -> ModelSpec:
        label_problem(self.label)
        return self

    _parsed: EngineOptions | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _options_the_engine_takes(self) -> ModelSpec:
        self._parsed = parse_options(self.engine, self.options)  # checked when the config is read, kept parsed
        return self

    @property
    def parsed(self) -> EngineOptions:
        """The engine's options as its Options model (parsed once, when the config was read)."""
        assert self._parsed is not None
        return self._parsed

    def same_engine(self, other: ModelSpec) -> bool:
        """One loaded engine serves both: the same model with the same options, operational ones too."""
        return (self.engine, self.model, self.options) == (other.engine, other.model, other.options)

    def output_identity(self) -> dict:
        """What a content key holds of this model: its engine, name or path, and the options that change
        what it writes (each engine's Options.OPERATIONAL ones, memory, concurrency, timeouts, batch sizes,
        left out; the weights' own identity is the run directory's record, rundir.WEIGHTS)."""
        identity: dict[str, Any] = {
            "engine": self.engine,
            "model": self.model,
            "options": output_options(self.engine, self.options),
        }
        if self.judge is not None:  # what it is asked and how it answers change its verdicts
            # (a halo check or a paraphrase adds verdicts of another label; this one's stay what they are)
            identity["judge"] = self.judge.model_dump(
                mode="json", exclude={"template_file", "halo_check", "paraphrases", "preset", "reading"}
            )
            if self.judge.reasoning is not None:
                identity["judge"]["reasoning"] = self.judge.reasoning.identity()
            if not self.judge.defences:  # a judge without defences keeps the keys it had before they existed
                del identity["judge"]["defences"]
        if self.repeat > 1:  # the same requests asked again: their own keys, or the store answers the first asking
            identity["repeat"] = self.repeat
        return identity

    def paraphrased(self) -> list[ModelSpec]:
        """The judge under each of its paraphrases (`judge: {paraphrases: [...]}`), labelled '<label>-paraphrase-k'
        (k from 2: the judge's own template is the first wording)."""
        if self.judge is None or not self.judge.paraphrases:
            return []
        return [
            self.model_copy(
                update={
                    "judge": self.judge.model_copy(
                        update={"template": text, "template_file": None, "paraphrases": None}
                    ),
                    "name": f"{self.label}-paraphrase-{k}",
                }
            )
            for k, text in enumerate(self.judge.paraphrases, 2)
        ]

    def defended(self, defence: str) -> ModelSpec:
        """This judge with one more defence switched on (`attacks: {defences: [...]}`, defences.py), labelled
        '<label>-defended-<defence>'."""
        judge = self.judge or Judge()
        on = judge.model_copy(update={"defences": [*judge.defences, defence], "paraphrases": None})
        return self.model_copy(update={"judge": on, "name": f"{self.label}-defended-{defence}"})

    def unreasoned(self) -> ModelSpec | None:
        """A thinking judge's ablation (`reasoning: {ablation: true}`): the same judge answering at once after an
        empty reasoning, labelled '<label>-no-reasoning'; None without one."""
        reasoning = self.judge.reasoning if self.judge is not None else None
        if reasoning is None or not reasoning.ablation:
            return None
        off = reasoning.model_copy(update={"ablation": False, "think": False})
        assert self.judge is not None
        return self.model_copy(
            update={"judge": self.judge.model_copy(update={"reasoning": off}), "name": f"{self.label}-no-reasoning"}
        )

    def repeats(self, count: int) -> list[ModelSpec]:
        """The repeats of this verifier's verdicts (`consistency: {repeats: count}`): askings 2 .. count, each
        labelled '<label>-repeat-r'."""
        return [self.model_copy(update={"repeat": r, "name": f"{self.label}-repeat-{r}"}) for r in range(2, count + 1)]

    def joint_twin_of(self, other: ModelSpec) -> bool:
        """This verifier is `other`'s judge in one call for all criteria: the same model and options, the same
        template and answer, joint where `other` calls per criterion (their halo is measurable)."""
        mine, theirs = self.judge, other.judge or Judge()
        if mine is None or mine.calls != "joint" or theirs.calls != "per-criterion" or not self.same_engine(other):
            return False
        skip = {"calls", "order", "halo_check", "paraphrases", "preset", "reading"}
        return mine.model_dump(exclude=skip) == theirs.model_dump(exclude=skip)

    def halo_check(self) -> tuple[ModelSpec, float] | None:
        """A joint judge's halo check (`judge: {calls: joint, halo_check: share}`): the same judge per criterion,
        labelled '<label>-per-criterion', and the share of each stratum's probes it scores; None without one."""
        if self.judge is None or self.judge.halo_check is None:
            return None
        twin = self.judge.model_copy(update={"calls": "per-criterion", "halo_check": None, **_unordered(self.judge)})
        return self.model_copy(update={"judge": twin, "name": f"{self.label}-per-criterion"}), self.judge.halo_check

    def per_mode(self) -> list[ModelSpec]:
        """This verifier once per call mode its judge names: `calls: [per-criterion, joint]` is two verifiers
        on the same probes, the joint one labelled '<label>-joint'."""
        if self.judge is None or not isinstance(self.judge.calls, list):
            return [self]
        return [
            self.model_copy(
                update={
                    "judge": self.judge.model_copy(
                        update={"calls": mode, **(_unordered(self.judge) if mode == "per-criterion" else {})}
                    ),
                    "name": self.label if mode == "per-criterion" else f"{self.label}-joint",
                }
            )
            for mode in sorted(self.judge.calls, key=CALL_MODES.index)  # per-criterion first: the halo's base
        ]

    @property
    def local_weights(self) -> bool:
        """Weights on this machine (vllm, transformers), whose identity a key includes."""
        return engine_class(self.engine).LOCAL_WEIGHTS


def _unordered(judge: Judge) -> dict:
    """A per-criterion twin of a joint judge has no order to balance (one criterion a call) and no joint reading."""
    return {"reading": "rubric", **({"order": "rubric"} if judge.order == "balanced" else {})}


Aggregate = Literal["mean", "median", "majority", "trimmed_mean"]


class Jury(Strict):
    """`verifier: {jury: [spec, ...]}`: several judges score every probe, each under its own label and keys, and
    the jury's verdict on a (probe, criterion) aggregates theirs (radar_local/jury.py)."""

    # the config's key is `jury` (`verifier: {jury: [...]}`); in code a jury's members are its jurors
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, serialize_by_alias=True)

    jurors: list[ModelSpec] = Field(
        alias="jury", min_length=1, description="The jurors: verifiers, each with its own engine and judge"
    )
    aggregate: Aggregate = Field(
        "mean",
        description="mean, median, majority (the level most jurors gave; a tie is unscored) or trimmed_mean (the "
        "mean without the lowest and highest score, from three scores on)",
    )
    min_jurors: int | None = Field(
        None, ge=1, description="Scores a verdict needs, else it is unscored; default: a majority of the jury"
    )
    name: str = Field("jury", min_length=1, description="The jury's label in the score table and its files")

    @property
    def label(self) -> str:
        return self.name

    @property
    def quorum(self) -> int:
        return self.min_jurors or len(self.jurors) // 2 + 1

    @model_validator(mode="after")
    def _a_jury(self) -> Jury:
        label_problem(self.name)
        if len(self.jurors) < 2:
            raise ValueError("a jury needs two jurors or more; a single judge is the verifier itself")
        labels = [slug(j.label) for j in self.jurors]
        dup = next((j.label for j, s in zip(self.jurors, labels) if labels.count(s) > 1), None)
        if dup is not None:
            raise ValueError(f"two jurors share the label '{dup}'; give each its own `name`")
        if slug(self.name) in labels:
            raise ValueError(f"the jury and a juror share the label '{self.name}'; give the jury another `name`")
        if self.quorum > len(self.jurors):
            raise ValueError(f"min_jurors ({self.quorum}) is more than the jury's {len(self.jurors)} jurors")
        both = next((j.label for j in self.jurors if j.judge is not None and isinstance(j.judge.calls, list)), None)
        if both is not None:
            raise ValueError(f"juror '{both}' names two call modes; a juror calls one way (per-criterion or joint)")
        reworded = next((j.label for j in self.jurors if j.paraphrased()), None)
        if reworded is not None:
            raise ValueError(f"juror '{reworded}' has paraphrases; audit that judge alone to measure its wording")
        checked = next((j.label for j in self.jurors if j.halo_check() is not None), None)
        if checked is not None:
            raise ValueError(f"juror '{checked}' has a halo_check; audit that judge alone to check its halo")
        ablated = next((j.label for j in self.jurors if j.unreasoned() is not None), None)
        if ablated is not None:
            raise ValueError(f"juror '{ablated}' has a reasoning ablation; audit that judge alone to see what "
                             "thinking buys")  # fmt: skip
        return self


class PairwiseJudge(Strict):
    """The verifier asked pairwise (issue 46): for each pair of a stratum's up- and down-steered responses, which
    is better on a criterion, in both orders (stats/pairwise.py reads the verdicts)."""

    preset: Literal["prometheus-2-relative", "skywork-critic", "generic"] | None = Field(
        None,
        description="A judge's own format (radar_local/presets.py): fills template and answer, each of which "
        "can still be given",
    )
    template: str = Field(
        min_length=1,
        description="Jinja2 text of the user message: prompt, document, response_a, response_b and criterion (id, "
        "label, description) of the criterion asked",
    )
    answer: Shape = Field(
        default_factory=lambda: GradeShape(kind="grade", pattern=r"\[\[(A|B)\]\]"),
        description="How the judge names its choice: a grade pattern whose group reads A and B (and tie, with "
        "ties: true), or json/bare with the choice as the score",
    )
    ties: bool = Field(False, description="The judge may answer tie (counted as a tie, never as half a preference)")
    words: dict[Literal["A", "B", "tie"], str] | None = Field(
        None,
        description="The words the judge names its choices with, where not A, B and tie (openai/evals' battle: Yes, "
        "the first response is better; No, the second)",
    )
    pairs: int | None = Field(
        None, ge=1, le=1000, description="Pairs asked per (task, criterion): the first variants (default: every one)"
    )
    asked: Literal["all", "diagonal", "overall"] = Field(
        "all",
        description="Ask each pair about every criterion (the leakage), only the one it was steered on, or only "
        "which is better overall (a judge whose question names no criterion: openai/evals' battle)",
    )
    overall: bool = Field(
        False, description="Also ask each pair which response is better overall: what the judge's 'better' is made of"
    )
    verifier: ModelSpec | None = Field(
        None,
        description="The pairwise judge's own model (one trained for pairwise verdicts, such as Skywork-Critic), "
        "asked the pairs while the config's verifier scores pointwise; default: the config's verifier asks both",
    )
    only: bool = Field(
        False,
        description="Ask the verifier only the pairs: no pointwise verdict, so the audit is its pairwise judge's "
        "alone (its report and stats.json hold the pairwise section; `radar compare --fail-on-pairwise` gates it)",
    )

    @model_validator(mode="before")
    @classmethod
    def _preset_fills_template_and_answer(cls, data: object) -> object:
        return with_preset(data, PAIR_PRESETS)

    @property
    def choices(self) -> Scale:
        """The choice as a scale of named levels: A (1) over B (0), and tie (1/2), each in the judge's words."""
        word = {"A": "A", "B": "B", "tie": "tie", **(self.words or {})}
        return Scale(levels={word["A"]: 1.0, word["B"]: 0.0, **({word["tie"]: 0.5} if self.ties else {})})

    @property
    def asks_criteria(self) -> bool:
        """Its questions name a criterion (all, diagonal); else each pair is asked only which is better overall."""
        return self.asked != "overall"

    @property
    def asks_overall(self) -> bool:
        """Each pair is asked which is better overall: besides its criteria (`overall`), or alone."""
        return self.overall or not self.asks_criteria

    def judge(self, verifier: ModelSpec) -> ModelSpec:
        """The model asked the pairs in an audit of `verifier`: the pairwise judge's own, else the verifier."""
        return self.verifier or verifier

    @model_validator(mode="after")
    def _own_model_without_a_pointwise_judge(self) -> PairwiseJudge:
        if self.verifier is not None and (self.verifier.judge is not None or self.verifier.repeat != 1):
            raise ValueError(
                "pairwise.verifier: its template and answer are pairwise's own (template, answer, preset); "
                f"give it no '{'judge' if self.verifier.judge is not None else 'repeat'}'"
            )
        return self

    @model_validator(mode="after")
    def _answer_names_every_choice(self) -> PairwiseJudge:
        if isinstance(self.answer, GradeShape) and (problem := self.answer.check(self.choices)) is not None:
            raise ValueError(f"pairwise answer: {problem.replace('level', 'choice')}")
        return self
