"""The audit config file: pydantic models that reject unknown keys, with described, bounded fields."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, ClassVar, Literal, TypeVar, overload

from pydantic import BaseModel, Discriminator, Field, Tag, model_validator

from radar_local.attack_probes import DEFAULT_KINDS as DEFAULT_ATTACKS
from radar_local.attack_probes import KINDS as ATTACK_KINDS
from radar_local.attack_probes import Kind as AttackKind
from radar_local.attack_probes import asked_of
from radar_local.common import Strict, parse_model, refusing, slug
from radar_local.defences import Defence
from radar_local.inputs import read_mapping
from radar_local.interactions import conflict
from radar_local.nuisance import ATTRIBUTES, Measure, NuisanceSpec
from radar_local.placement import ClusterSpec
from radar_local.prompts import Layout
from radar_local.rubric import BUNDLED, Task, unique_ids
from radar_local.scoring import ScoreFormat
from radar_local.specs import MOST_REPEATS, Jury, ModelSpec, PairwiseJudge
from radar_local.stats.attacks import MARGIN
from radar_local.stats.bias import BIAS
from radar_local.stats.bootstrap import LEVEL, RESAMPLES
from radar_local.stats.coupling import TAU, LeakageDefinition
from radar_local.stats.settings import StatsSettings
from radar_local.tasks import TaskSource

if TYPE_CHECKING:
    pass


def _verifier_kind(value: object) -> str:
    return "Jury" if isinstance(value, Jury) or (isinstance(value, dict) and "jury" in value) else "ModelSpec"


# Tags named as their classes: an error's key path leaves them out (common.parse_model).
Verifier = Annotated[
    Annotated[ModelSpec, Tag("ModelSpec")] | Annotated[Jury, Tag("Jury")], Discriminator(_verifier_kind)
]


class Generation(Strict):
    temperature: float = Field(0.9, ge=0, le=2, description="Paper App. D: 0.9")
    max_new_tokens: int = Field(800, ge=1, le=32768)
    shows: Literal["target", "rubric"] = Field(
        "target",
        description="What the generator is shown of the rubric: the steered criterion alone (the paper's B.1), or "
        "every criterion of the task with the steered one named and the others to be left as they are (issue 63)",
    )


class Adaptive(Strict):
    """An audit that spends probes where a decision is still open (radar_local/adaptive.py)."""

    start_n: int = Field(3, ge=2, le=1000, description="Probes per (task, criterion, direction) in the first wave")
    max_n: int = Field(20, ge=2, le=1000, description="The most probes a (task, criterion, direction) gets")
    step: int = Field(3, ge=1, le=1000, description="Probes added to each open (task, criterion, direction) per wave")
    confidence: float = Field(LEVEL, gt=0.5, lt=1, description="Level of the intervals that settle a decision")
    fail_on_sym: float | None = Field(
        None, ge=-1, le=2, description="A Sym policy you will gate on (`radar compare --fail-on-sym`): settle it too"
    )
    budget: int | None = Field(
        None,
        ge=1,
        description="The most verifier calls the audit plans: it stops before a wave that would pass them, with the "
        "open decisions named (default: max_n alone bounds it)",
    )

    @property
    def looks(self) -> int:
        """The waves a stratum can have: start_n, start_n + step, ... up to max_n."""
        return 1 + -(-(self.max_n - self.start_n) // self.step)

    @model_validator(mode="after")
    def _max_at_least_start(self) -> Adaptive:
        if self.max_n < self.start_n:
            raise ValueError(f"max_n ({self.max_n}) must be at least start_n ({self.start_n})")
        return self


class Consistency(Strict):
    """The verifier's verdicts asked again (stats/repeats.py): its repeat agreement."""

    repeats: int = Field(ge=2, le=MOST_REPEATS, description="Askings of each verdict, the first one included")
    share: float = Field(
        1.0,
        gt=0,
        le=1,
        description="Of each stratum's probes, the first ceil(share x N) are asked again (the same on resume)",
    )


class AttackSettings(Strict):
    """`attacks:` the same probes with and without each attack (attack_probes.py), scored by the verifier."""

    kinds: list[AttackKind] = Field(
        default_factory=lambda: list(DEFAULT_ATTACKS),
        min_length=1,
        description=f"The attacks: {', '.join(ATTACK_KINDS)} (default {', '.join(DEFAULT_ATTACKS)}; reference: "
        "tasks with a reference answer; pair_claim: a pairwise judge's only)",
    )
    share: float = Field(
        1.0, gt=0, le=1, description="The share of each stratum's probes attacked (the first of its variants)"
    )
    margin: float = Field(
        MARGIN, gt=0, lt=1, description="A judge resists an attack whose lift is confirmed below this"
    )
    defences: list[Defence] = Field(
        [],
        description="Defences measured (radar_local/defences.py: fence, untrusted, neutralise): the attacked probes "
        "and their bases scored again by the judge with each one switched on beside its own, as "
        "'<label>-defended-<name>'",
    )

    def of(self, pairwise: bool) -> list[AttackKind]:
        """The kinds a pairwise judge (all) or a pointwise one (all but a pairwise judge's own) is attacked with."""
        return asked_of(self.kinds, pairwise)

    @model_validator(mode="after")
    def _each_defence_once(self) -> AttackSettings:
        if len(set(self.defences)) < len(self.defences):
            raise ValueError("attacks.defences: name each defence once")
        return self


class AuditSettings(Strict):
    """Everything of an audit but its models; shared by one audit and a generator x verifier grid."""

    rubric: str = Field(min_length=1, description="Bundled rubric name or path to a rubric file")
    tasks: Annotated[str, Field(min_length=1)] | list[Task] | TaskSource | None = Field(
        None,
        description="Bundled name, a YAML tasks file, a JSONL/CSV/Parquet file or saved dataset "
        "({path, columns, sample}), or inline; default: the rubric's",
    )
    human: str | None = Field(
        None, min_length=1, description="Human reference (name or path); default: a bundled rubric's own"
    )
    labels: str | None = Field(
        None,
        min_length=1,
        description="Your human labels (JSONL/CSV/Parquet: task_id or prompt, response, criterion, score, rater): "
        "every judge scores them too, and the audit reports its agreement with them (radar_local/labels.py)",
    )
    n: int = Field(5, ge=1, le=1000, description="Probes per (task, criterion, direction); paper recommends 3-5")
    adaptive: Adaptive | None = Field(
        None,
        description="Grow n in waves where a decision is still open, instead of a fixed n (which it then replaces)",
    )
    unconditioned: int = Field(
        0, ge=0, le=1000, description="Unconditioned probes per task (synthetic-correlation baseline)"
    )
    nuisance: list[Measure | NuisanceSpec] = Field(
        default_factory=list,
        description="Attributes no criterion should reward: each unconditioned probe is rewritten up and down on "
        "each, and every rewrite scored (a bundled name, or {id, up, down, measure})",
    )
    bias_threshold: float = Field(BIAS, ge=0, le=1, description="Flag a criterion moving this much with an attribute")
    seed: int = Field(0, ge=0, le=2**32 - 1, description="Run seed: sampling seeds and resamples derive from it")
    layout: Layout = Field(
        "prefix-shared",
        description="Verifier prompt: task and probe first, criterion last (prefix caching); "
        "`paper` keeps Appendix B.2's order (docs/BENCHMARKS.md compares them)",
    )
    generation: Generation = Field(default_factory=Generation)
    scoring: ScoreFormat = Field(default_factory=ScoreFormat)
    batch_size: int = Field(256, ge=1, description="Requests per engine call; a kill loses at most one batch")
    exclude_flagged_probes: bool = Field(
        False, description="Leave probes whose text addresses the judge or asks for a score out of the statistics"
    )
    tau: float = Field(TAU, ge=0, le=1)
    leakage: LeakageDefinition = Field(
        "ratio_of_means",
        description="A leakage over tasks: ratio_of_means (mean shift over mean self-effect) or paper (eq. 5, the "
        "mean of per-task ratios, to reproduce the paper's tables)",
    )
    screening: float | None = Field(
        None,
        gt=0,
        lt=1,
        description="Also mark flags that Benjamini-Hochberg passes at this false discovery rate `screened` (a "
        "screening word beside the family-wise `confirmed`, never one; stats/screening.py)",
    )
    bootstrap: int = Field(RESAMPLES, ge=0, le=100_000, description="Bootstrap resamples (0 = no CIs)")
    out: str | None = Field(None, description="Run directory; `--out` overrides")
    cluster: ClusterSpec | None = Field(
        None, description="Run the models as replicas on a Ray cluster; `--ray` sets it"
    )
    pairwise: PairwiseJudge | None = Field(
        None,
        description="Also ask the verifier (each of a grid's) which of each stratum's up- and down-steered "
        "responses is better, in both orders: a pairwise judge audited with the probes' own ground truth "
        "(docs/pairwise.md)",
    )
    reward: ModelSpec | None = Field(
        None,
        description="A reward model (one scalar per response: transformers with runner: reward) scored on every "
        "probe (each generator's, in a grid): how far each criterion's steer moves its reward, and the criteria it "
        "does not see (docs/judges.md)",
    )
    attacks: AttackSettings | None = Field(
        None,
        description="Attack the verifier (each of a grid's): the probes with a forged verdict, an instruction, a "
        "delimiter escape, ... and without; how far each moves its scores (docs/judge-bias.md, Under attack)",
    )

    @model_validator(mode="after")
    def _a_reward_model_scores_rewards(self) -> AuditSettings:
        r = self.reward
        if r is not None and not (r.engine == "testing" or getattr(r.parsed, "runner", None) == "reward"):
            raise ValueError(
                f"reward: the {r.engine} engine as configured writes text; a reward model runs on vllm or "
                "transformers with options: {runner: reward}"
            )
        return self

    @property
    def stats_settings(self) -> StatsSettings:
        """The statistics' settings this config names, one object (stats/settings.py)."""
        return StatsSettings(
            tau=self.tau,
            resamples=self.bootstrap,
            seed=self.seed,
            bias_threshold=self.bias_threshold,
            leakage=self.leakage,
            screening=self.screening,
            looks=self.adaptive.looks if self.adaptive else 1,
            first_wave=self.adaptive.start_n if self.adaptive else None,
        )

    @property
    def nuisance_specs(self) -> list[NuisanceSpec]:
        return [ATTRIBUTES[n] if isinstance(n, str) else n for n in self.nuisance]

    @property
    def planned_n(self) -> int:
        """The most probes a (task, criterion, direction) gets; a probe's key is stable up to it."""
        return self.adaptive.max_n if self.adaptive else self.n

    @model_validator(mode="after")
    def _features_run_together(self) -> AuditSettings:
        """Each feature set against the settings that take away what it needs (interactions.py)."""
        verifier, pairwise = getattr(self, "verifier", None), self.pairwise
        jury = verifier if isinstance(verifier, Jury) else None
        spec = verifier if isinstance(verifier, ModelSpec) else None
        features = {
            "verifier.judge": spec is not None and spec.judge is not None,
            "verifier.repeat": spec is not None and spec.repeat != 1,
            "nuisance": bool(self.nuisance),
            "unconditioned": self.unconditioned > 0,
            "adaptive": self.adaptive is not None,
            "consistency": getattr(self, "consistency", None) is not None,
            "reward": self.reward is not None,
            "pairwise": pairwise is not None,
            "attacks": self.attacks is not None,
            "aggregate: majority": jury is not None and jury.aggregate == "majority",
        }
        taken = {
            "pairwise.only": pairwise is not None and pairwise.only,
            "a jury": jury is not None,
            "adaptive": self.adaptive is not None,
            "scoring mode 'expected'": self.scoring.expected,
        }
        on = [name for name, given in features.items() if given]
        if (problem := conflict(on, [name for name, given in taken.items() if given])) is not None:
            raise ValueError(problem)
        return self

    @model_validator(mode="after")
    def _paths_without_nul(self) -> AuditSettings:
        """A NUL byte cannot be in a file name: say so here, not as the OS's ValueError later."""
        tasks = self.tasks.path if isinstance(self.tasks, TaskSource) else self.tasks
        paths = (("rubric", self.rubric), ("tasks", tasks), ("human", self.human), ("labels", self.labels))
        for key, value in (*paths, ("out", self.out)):
            if isinstance(value, str) and "\0" in value:
                raise ValueError(f"'{key}' contains a NUL byte; give a bundled name or a file path")
        return self

    @model_validator(mode="after")
    def _nuisance_bases(self) -> AuditSettings:
        """Nuisance pairs rewrite the unconditioned probes: without them there is nothing to rewrite."""
        ids = [s.id for s in self.nuisance_specs]
        if ids and self.unconditioned < 2:
            raise ValueError("nuisance attributes rewrite the unconditioned probes: set unconditioned to 2 or more")
        if len(set(ids)) < len(ids):
            raise ValueError(f"nuisance attribute '{next(i for i in ids if ids.count(i) > 1)}' is named twice")
        return self

    @model_validator(mode="after")
    def _fields_radar_sets(self) -> AuditSettings:
        """`repeat` and `reasoning.think` mark the twins radar makes (a repeat, the ablation's other arm): written in
        a config, a repeat would read its verdicts from the store and a judge would be compared with itself."""
        for spec in _model_specs(self):
            if spec.repeat != 1:
                raise ValueError(
                    f"model '{spec.label}': `repeat` is set by radar for the repeats it asks; remove it (ask repeats "
                    "with consistency: {repeats: R})"
                )
            reasoning = spec.judge.reasoning if spec.judge is not None else None
            if reasoning is not None and not reasoning.think:
                raise ValueError(
                    f"model '{spec.label}': `reasoning.think` is set by radar for the ablation's other arm; remove "
                    "it (reasoning: {ablation: true} scores the judge without reasoning too)"
                )
        return self

    @model_validator(mode="after")
    def _tasks_for_custom_rubric(self) -> AuditSettings:
        if self.tasks is None and self.rubric not in BUNDLED:
            raise ValueError("a custom rubric needs 'tasks' (a bundled name, a file, or a list)")
        if isinstance(self.tasks, list):
            unique_ids(self.tasks)
        return self


class AuditConfig(AuditSettings):
    generator: ModelSpec
    verifier: Verifier
    editor: ModelSpec | None = Field(None, description="`radar repair`'s rubric editor; default: the generator")
    intended: list[tuple[str, str]] = Field(
        default_factory=list,
        description="Criterion pairs coupled on purpose (a hierarchy, a product preference): "
        "`radar repair` leaves them alone; an (attribute, criterion) pair is a wanted nuisance effect",
    )
    consistency: Consistency | None = Field(
        None,
        description="Ask the verifier's verdicts again, in another order and batch: its repeat agreement "
        "(docs/consistency.md)",
    )

    # What a run directory's probes answer. A config that differs here is another audit, refused in
    # that directory (its stats would replace the first audit's). Every other setting may change
    # there: n or adaptive waves extend or shrink what is used, a verifier, tau or bootstrap
    # re-analyse; the stored records, content-keyed, stay valid for both.
    IDENTITY: ClassVar[tuple[str, ...]] = ("rubric", "tasks", "generator", "generation", "seed")

    @model_validator(mode="after")
    def _judge_on_the_verifier(self) -> AuditConfig:
        for role in ("generator", "editor"):
            spec = getattr(self, role)
            if spec is not None and spec.judge is not None:  # (a `repeat` is radar's own: _fields_radar_sets)
                raise ValueError(f"'judge' is a verifier's: the {role} writes text, it judges nothing")
        return self

    @model_validator(mode="after")
    def _only_pairs_asked(self) -> AuditConfig:
        """A judge asked only pairs (pairwise.only): nothing that reads its pointwise verdicts."""
        if self.pairwise is None or not self.pairwise.only:
            return self
        if self.pairwise.verifier is not None:
            raise ValueError(
                "pairwise.only asks the config's verifier the pairs: give the pairwise judge's model as `verifier` "
                "and leave pairwise.verifier out"
            )
        return self  # what else it cannot run with: _features_run_together

    @property
    def jury(self) -> Jury | None:
        return self.verifier if isinstance(self.verifier, Jury) else None

    @property
    def verifiers(self) -> list[ModelSpec]:
        """The verifiers that score: the jurors of a jury, else the verifier once per call mode (ModelSpec.per_mode)."""
        return list(self.verifier.jurors) if isinstance(self.verifier, Jury) else self.verifier.per_mode()

    def differences(self, other: AuditConfig) -> list[str]:
        """The IDENTITY settings in which two configs differ (the generator's operational options aside)."""
        mine, theirs = self.model_dump(mode="json"), other.model_dump(mode="json")
        mine["generator"], theirs["generator"] = self.generator.output_identity(), other.generator.output_identity()
        return [key for key in self.IDENTITY if mine.get(key) != theirs.get(key)]


ONE_JUDGE = (
    "'consistency' audits one judge: run `radar audit` on a cell's config (one generator, one verifier); a grid "
    "compares judges"
)


class GridConfig(AuditSettings):
    generators: list[ModelSpec] = Field(min_length=1)
    verifiers: list[ModelSpec] = Field(min_length=1)
    exclude_self_pairs: bool = Field(True, description="Skip cells where a model judges its own probes (paper §4.2)")

    _one_judge_settings = refusing("consistency", ONE_JUDGE)

    @model_validator(mode="after")
    def _distinct_labels_and_some_cell(self) -> GridConfig:
        self.verifiers = [m for v in self.verifiers for m in v.per_mode()]  # a judge audited both ways is two
        if self.pairwise is not None and self.pairwise.only:  # a grid's pages set each cell's pointwise core apart
            raise ValueError(
                "pairwise.only audits one judge asked only pairs: use `radar audit` on each judge's config (a grid "
                "compares pairwise judges beside their pointwise verdicts)"
            )
        if self.adaptive is not None:  # its waves follow one judge's intervals; a grid scores with several
            raise ValueError(
                "adaptive audits run per (generator, verifier) cell: use `radar audit` on each cell's config"
            )
        reworded = next((v.label for v in self.verifiers if v.paraphrased()), None)
        if reworded is not None:  # a grid compares judges: each wording is one
            raise ValueError(
                f"verifier '{reworded}' has paraphrases; in a grid, list each wording as a verifier of its own"
            )
        ablated = next((v.label for v in self.verifiers if v.unreasoned() is not None), None)
        if ablated is not None:  # a grid compares judges: the judge thinking and not thinking are two
            raise ValueError(
                f"verifier '{ablated}' has a reasoning ablation; in a grid, list the judge twice, once without "
                "reasoning, to compare them"
            )
        checked = next((v.label for v in self.verifiers if v.halo_check() is not None), None)
        if checked is not None:  # a grid measures a halo on every probe: the same judge listed twice
            raise ValueError(
                f"verifier '{checked}' has a halo_check; in a grid, list that judge twice (one with judge: "
                "{calls: joint}) to audit it both ways"
            )
        for role in ("generators", "verifiers"):  # a label names a directory and a score-table column
            labels = [m.label for m in getattr(self, role)]
            slugs = [slug(label) for label in labels]
            dup = next((label for label, s in zip(labels, slugs) if slugs.count(s) > 1), None)
            if dup is not None:
                raise ValueError(f"two {role} share the label '{dup}'; give each its own `name`")
        if not self.cells():
            raise ValueError("every cell is a self-pair; add models or set exclude_self_pairs: false")
        return self

    def cells(self) -> list[tuple[ModelSpec, ModelSpec]]:
        """(generator, verifier) cells, self-pairs excluded unless asked for (paper §4.2)."""
        return [
            (g, v)
            for g in self.generators
            for v in self.verifiers
            if not (self.exclude_self_pairs and g.model == v.model)
        ]

    def halo_base(self, verifier: ModelSpec) -> str | None:
        """The per-criterion verifier of this grid that `verifier` scores jointly (stats/halo.py), if any."""
        return next((v.label for v in self.verifiers if verifier.joint_twin_of(v)), None)

    def cell(self, generator: ModelSpec, verifier: ModelSpec) -> AuditConfig:
        settings = self.model_dump(exclude={"generators", "verifiers", "exclude_self_pairs"})
        return AuditConfig.model_validate(
            {**settings, "generator": generator.model_dump(), "verifier": verifier.model_dump()}
        )


def _model_specs(model: object) -> Iterator[ModelSpec]:
    """Every ModelSpec a parsed config holds, at any depth (a verifier, a juror, a pairwise judge, an editor)."""
    if isinstance(model, ModelSpec):
        yield model
    elif isinstance(model, BaseModel):
        for name in type(model).model_fields:
            yield from _model_specs(getattr(model, name))
    elif isinstance(model, (list, tuple)):
        for item in model:
            yield from _model_specs(item)
    elif isinstance(model, dict):
        for item in model.values():
            yield from _model_specs(item)


Settings = TypeVar("Settings", bound=AuditSettings)


@overload
def load_config(path: str | Path) -> AuditConfig: ...
@overload
def load_config(path: str | Path, model: type[Settings]) -> Settings: ...
def load_config(path: str | Path, model: type[AuditSettings] = AuditConfig) -> AuditSettings:
    path = Path(path)
    return parse_model(model, read_mapping(path), path)


def with_absolute_paths(config: Settings, base: Path) -> Settings:
    """File references made absolute, so a run directory's config snapshot works from anywhere."""

    def rel(value: str | None) -> str | None:
        if value is None or value in BUNDLED or Path(value).is_absolute():
            return value
        return str((base / value).resolve())

    tasks = config.tasks
    if isinstance(tasks, str):
        tasks = rel(tasks)
    elif isinstance(tasks, TaskSource):
        tasks = tasks.model_copy(update={"path": rel(tasks.path)})
    update = {"rubric": rel(config.rubric), "tasks": tasks, "human": rel(config.human), "labels": rel(config.labels)}
    return config.model_copy(update=update)
