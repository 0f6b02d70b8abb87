"""Expand an audit into requests with deterministic seeds and content keys (pure, no model)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from radar_local.answer import Answer
from radar_local.common import digest
from radar_local.config import AuditConfig
from radar_local.defences import markers, neutralised, placed, with_note
from radar_local.judge import render, render_pair
from radar_local.nuisance import WAYS, NuisanceSpec
from radar_local.prompts import (
    PROMPT_VERSION,
    REWRITE_VERSION,
    Messages,
    Prompt,
    generation_prompt,
    joint_messages,
    rewrite_messages,
    score_prompt,
    verification_messages,
)
from radar_local.records import ProbeRecord
from radar_local.rubric import Criterion, Item, Rubric, Task
from radar_local.scale import LIKERT, Scale
from radar_local.specs import ModelSpec, PairwiseJudge


def cell_seed(run_seed: int, task: str, target: str, direction: str) -> int:
    """The sampling seed of one (task, target, direction) prompt: stable across runs and machines."""
    return int(digest([run_seed, task, target, direction])[:8], 16)


# The key formula of new run directories (rundir.InputsSnapshot.keys). 3: a probe is keyed by what it is
# (task, target, direction, seed rule and variant), not by the planned n, so raising n adds only the new
# variants. 2 and 1 keep the planned n in the key, so their directories' records keep their keys. 4: a local
# model's identity holds its chat template's digest (models.weights_identity): a changed template is a new judge.
KEYS = 4


def model_identity(spec: ModelSpec, weights: Mapping[str, str], keys: int = KEYS) -> dict:
    """A model as content keys see it. Formulas 2 and 3: its output identity and the identity of its weights as
    last recorded (a served or planted model has none). Formula 1, of run directories made before it: the
    engine, model and every option, so their stored records keep their keys, and a judge or a repeat where the spec
    has one (formula 1's records have neither: a new judge in an old run is asked, never handed its verdicts)."""
    if keys == 1:  # a judge or a repeat came after formula 1: none of its records has one, so one is asked anew
        asked = {k: v for k, v in spec.output_identity().items() if k in ("judge", "repeat")}
        return {"engine": spec.engine, "model": spec.model, "options": spec.options, **asked}
    return {**spec.output_identity(), "weights": weights.get(spec.model)}


def answer_key(task: Task) -> dict:
    """What a verdict's key holds of its task beyond the probe: the reference answer a judge may be shown (none
    where the task has none, so keys made before references stay theirs)."""
    return {"reference": task.reference} if task.reference is not None else {}


Stratum = tuple[str, str, str]  # (task id, target criterion id or "", direction)


@dataclass(frozen=True)
class GenerationRequest:
    """Variants first .. first + n - 1 of one stratum's prompt. Variant v is the sample of seed
    `seed + v` (vLLM's rule for n samples of one seed), so a stratum's variants are the same probes
    whether they are asked for at once or in an adaptive audit's waves."""

    key: str  # content key of the prompt; variant v is stored as f"{key}:{v}"
    task: Task
    target: str  # criterion id, "" when unconditioned
    direction: str
    n: int
    seed: int  # the stratum's seed: variant v is sampled under seed + v
    messages: Messages
    first: int = 0

    @property
    def stratum(self) -> Stratum:
        return (self.task.id, self.target, self.direction)

    @property
    def variants(self) -> range:
        return range(self.first, self.first + self.n)

    @property
    def call_seed(self) -> int:
        """The seed of the engine call that samples this request's n variants."""
        return self.seed + self.first

    def variant_key(self, v: int) -> str:
        return f"{self.key}:{v}"


def shown_rubric(
    config: AuditConfig, rubric: Rubric, task: Task, criterion: Criterion | None
) -> list[Criterion] | None:
    """The rubric the generator is shown beside a steered criterion (generation.shows: rubric): the task's."""
    if criterion is None or config.generation.shows != "rubric":
        return None
    return rubric.criteria_of(task.id)


def criterion_text(criterion: Criterion) -> dict:
    """A criterion as a content key holds it: its words (its scale enters a verdict's key apart, and never
    a probe's: the generator is not shown it)."""
    return criterion.model_dump(exclude={"scale"})


def scored_text(criterion: Criterion, scale: Scale) -> dict:
    """A criterion as a verdict's key holds it: its words, and its scale where it is not the paper's 0-4 (so
    a rubric that says nothing of scales keeps the keys it always had)."""
    return {**criterion_text(criterion), **({"scale": scale.model_dump(mode="json")} if scale != LIKERT else {})}


@dataclass(frozen=True)
class ScoreRequest:
    """One verifier call on one probe: one criterion, or every criterion at once (a joint call)."""

    key: str  # the call's content key; a per-criterion call's verdict is stored under it
    probe_key: str
    criteria: tuple[str, ...]  # the criteria it scores, in the order its prompt shows them
    messages: Messages
    answer: Answer

    @property
    def criterion(self) -> str:
        return self.criteria[0]

    def verdict_key(self, criterion: str) -> str:
        """A joint call's verdicts share the call's key, each under its criterion."""
        return f"{self.key}:{criterion}" if self.answer.joint else self.key

    @property
    def verdict_keys(self) -> list[str]:
        return [self.verdict_key(c) for c in self.criteria]


@dataclass(frozen=True)
class PairRequest(ScoreRequest):
    """One pairwise call: a stratum's up- and down-steered responses of one variant, asked which is better on one
    criterion, in one order (A is the up response in order 0, the down one in order 1)."""

    task_id: str = ""
    source: str = ""  # the criterion the pair was steered on
    variant: int = 0
    order: int = 0


@dataclass(frozen=True)
class RewardRequest:
    """One reward model call: the task and one probe's response as a conversation, one scalar back."""

    key: str
    probe_key: str
    messages: Messages


REWARD = "reward"  # a reward's verdict record's criterion
UP_FIRST, DOWN_FIRST = 0, 1
# the question a pairwise judge is asked besides the rubric's criteria (config.PairwiseJudge.overall)
OVERALL = Criterion(id="overall", label="Overall quality", description="Which response is better overall?")


@dataclass(frozen=True)
class Plan:
    """What an audit asks of its models: the config, the rubric and the tasks, as keyed requests."""

    config: AuditConfig
    rubric: Rubric
    tasks: tuple[Task, ...]
    weights: Mapping[str, str] = field(default_factory=dict)  # model -> identity of its weights (rundir.WEIGHTS)
    keys: int = KEYS
    label_tasks: tuple[Task, ...] = ()  # tasks that human labels name by prompt alone (radar_local/labels.py)
    _score_cache: dict = field(default_factory=dict, compare=False, repr=False)

    def strata(self) -> list[Stratum]:
        """Every (task, target, direction) the audit probes: directed first, then unconditioned."""
        strata = [(t.id, c.id, d) for t in self.tasks for c in self.rubric.criteria_of(t.id) for d in ("+", "-")]
        return strata + ([(t.id, "", "none") for t in self.tasks] if self.config.unconditioned else [])

    def planned_size(self, stratum: Stratum) -> int:
        """Variants a stratum may have: n, the adaptive audit's max_n, or the unconditioned count."""
        return self.config.unconditioned if stratum[2] == "none" else self.config.planned_n

    def generation_requests(self, sizes: Mapping[Stratum, tuple[int, int]] | None = None) -> list[GenerationRequest]:
        """One request per stratum for its variants [first, first + n), `sizes[stratum] = (first, n)`;
        by default every planned variant. Cells with no variant asked for are left out."""
        config, rubric = self.config, self.rubric
        # Keyed by the target criterion's own text, not the rubric's digest: a rubric edit re-generates
        # only the probes of the criteria it touches (rubric repair re-audits many such edits).
        base = {
            "generator": model_identity(config.generator, self.weights, self.keys),
            "template": PROMPT_VERSION,
            "sampling": config.generation.model_dump(exclude={"shows"}),
        }
        by_id = {t.id: t for t in self.tasks}
        out = []
        for stratum in self.strata():
            task_id, target, direction = stratum
            first, count = sizes[stratum] if sizes is not None else (0, self.planned_size(stratum))
            if count <= 0:
                continue
            task, n = by_id[task_id], self.planned_size(stratum)
            seed = cell_seed(config.seed, task_id, target, direction)
            crit = rubric.criterion(target) if target else None
            key = digest(
                {
                    **base,
                    "task": task.keyed(),
                    "target": target,
                    "direction": direction,
                    **({"n": n} if self.keys < 3 else {}),
                    "seed": seed,
                    "criterion": criterion_text(crit) if crit else None,
                    # the rubric shown beside it (absent from the paper's prompt's keys, so its probes keep theirs)
                    **(
                        {"shown": [criterion_text(c) for c in shown]}
                        if (shown := shown_rubric(config, rubric, task, crit))
                        else {}
                    ),
                }
            )
            messages = generation_prompt(task, crit, direction, shown)
            out.append(GenerationRequest(key, task, target, direction, count, seed, messages, first))
        return out

    def rewrite_requests(self, bases: list[ProbeRecord], specs: list[NuisanceSpec]) -> list[GenerationRequest]:
        """Two rewrites (up, down) of each base probe per nuisance attribute, as one-variant requests under
        the base's variant: a pair is (task, attribute, variant), its rewrites keyed by the base's text."""
        config = self.config
        base = {
            "generator": model_identity(config.generator, self.weights, self.keys),
            "template": REWRITE_VERSION,
            "sampling": config.generation.model_dump(exclude={"shows"}),
        }
        by_id = {t.id: t for t in self.tasks}
        out = []
        for probe in bases:
            task = by_id[probe.task_id]
            for spec in specs:
                for way in WAYS:
                    seed = cell_seed(config.seed, task.id, spec.id, way)  # the call's: seed + the base's variant
                    key = digest({**base, "base": probe.key, "attribute": spec.model_dump(), "way": way})
                    messages = Prompt(
                        rewrite_messages(task, probe.text, spec.id, way, getattr(spec, way)),
                        kind="rewrite",
                        attribute=spec.id,
                        way=way,
                        response=probe.text,
                    )
                    out.append(GenerationRequest(key, task, spec.id, way, 1, seed, messages, probe.variant))
        return out

    def score_requests(self, probes: list[ProbeRecord], verifier: ModelSpec) -> list[ScoreRequest]:
        """Per probe, one request per criterion (probe-major, so a probe's K calls run together), or one
        joint request for all of them where the verifier's judge says `calls: joint`."""
        config, rubric = self.config, self.rubric
        by_id = {t.id: t for t in (*self.tasks, *self.label_tasks)}
        base = {
            "verifier": model_identity(verifier, self.weights, self.keys),  # its judge, where it has one
            "template": PROMPT_VERSION,
            "layout": config.layout,
            "format": config.scoring.model_dump(),
        }
        scope = digest({**base, "scales": {cid: s.model_dump(mode="json") for cid, s in rubric.scales.items()}})
        out: list[ScoreRequest] = []
        for probe in probes:
            # An adaptive audit asks for every stored probe's requests after each wave: built once.
            if (cached := self._score_cache.get((scope, probe.key))) is None:
                cached = self._probe_requests(probe, by_id[probe.task_id], verifier, base)
                self._score_cache[(scope, probe.key)] = cached
            out += cached
        return out

    def reward_requests(self, probes: list[ProbeRecord], model: ModelSpec) -> list[RewardRequest]:
        """The reward model's calls (config.reward): each probe once, as the conversation of its task and response."""
        identity = model_identity(model, self.weights, self.keys)
        labels = [c.label for c in self.rubric.criteria]
        return [
            RewardRequest(
                digest({"reward": identity, "probe": p.key}),
                p.key,
                Prompt(
                    [
                        {"role": "user", "content": self.tasks_by_id[p.task_id].prompt},
                        {"role": "assistant", "content": p.text},
                    ],
                    kind="reward",
                    response=p.text,
                    rubric=labels,
                ),
            )
            for p in probes
        ]

    @cached_property
    def pairs(self) -> PairPlan:
        """The pairwise judge's calls (config.pairwise)."""
        return PairPlan(self)

    @cached_property
    def tasks_by_id(self) -> dict[str, Task]:
        return {t.id: t for t in (*self.tasks, *self.label_tasks)}

    def _probe_requests(self, probe: ProbeRecord, task: Task, verifier: ModelSpec, base: dict) -> list[ScoreRequest]:
        config, judge = self.config, verifier.judge
        shown = [(c, self.rubric.scale_of(c.id)) for c in self.rubric.criteria_of(task.id)]
        own = judge is None or judge.template is None  # radar's own prompt
        defences = tuple(judge.defences) if judge is not None else ()
        seen = probe.text  # the response as the judge reads it: neutralised where it is defended so
        if judge is not None and "neutralise" in defences:
            seen = neutralised(seen, markers(config.scoring.shape if own else judge.answer, judge.template))
        in_place = placed(defences, seen)  # as its template places it: fenced where it is defended so

        def judged(messages: Messages, criteria: list[Criterion], answer: Answer, key: str) -> ScoreRequest:
            messages = with_note(messages, defences, seen)
            return ScoreRequest(key, probe.key, tuple(c.id for c in criteria),
                                score_prompt(messages, seen, criteria, defences), answer)  # fmt: skip

        if judge is not None and judge.joint:
            if judge.order == "shuffled":  # a seeded order per probe, recorded with each verdict
                random.Random(digest([config.seed, probe.key])).shuffle(shown)
            elif judge.order == "balanced":  # each criterion at each position equally often over a stratum's variants
                start = random.Random(digest([config.seed, probe.task_id, probe.target, probe.direction])).randrange(
                    len(shown)
                )
                turn = (start + probe.variant) % len(shown)
                shown = shown[turn:] + shown[:turn]
            criteria = [c for c, _ in shown]
            key = digest(
                {**base, **answer_key(task), "probe": probe.key, "criteria": [scored_text(c, s) for c, s in shown]}
            )
            messages = render(judge, task, in_place, shown) if not own else joint_messages(task, in_place, shown)
            shape = config.scoring.shape if own else judge.answer  # radar's prompt: the paper's answer
            return [judged(messages, criteria, Answer(shape, tuple((c.id, s) for c, s in shown), joint=True), key)]
        out = []
        for crit, scale in shown:
            if own:
                messages = verification_messages(task, in_place, crit, config.layout, config.scoring.expected, scale)
                answer = config.scoring.answer(crit.id, scale)
            else:
                assert judge is not None
                messages = render(judge, task, in_place, [(crit, scale)])
                answer = Answer(judge.answer, ((crit.id, scale),), expected=config.scoring.expected)
            key = digest({**base, **answer_key(task), "probe": probe.key, "criterion": scored_text(crit, scale)})
            out.append(judged(messages, [crit], answer, key))
        return out


@dataclass(frozen=True)
class PairPlan:
    """A plan's pairwise calls (config.pairwise): the steered pairs, the team's labelled pairs and the attacked
    pairs, each asked in both orders under keys that hold all they show."""

    plan: Plan
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    def requests(self, probes: list[ProbeRecord], verifier: ModelSpec) -> list[PairRequest]:
        """The pairwise judge's calls (config.pairwise): per task, steered criterion and variant (the first
        `pairs`), the up and down responses asked about each criterion (or the steered one) in both orders."""
        spec, base = self._spec, self._base(verifier)
        up = {(p.task_id, p.target, p.variant): p for p in probes if p.direction == "+"}
        down = {(p.task_id, p.target, p.variant): p for p in probes if p.direction == "-"}
        out = []
        for key, first in sorted(up.items()):
            second = down.get(key)
            _, source, variant = key
            if second is None or (spec.pairs is not None and variant >= spec.pairs):
                continue
            asked = [  # a per-prompt rubric's pair is asked about its own task's items, not another's
                c
                for c in self.plan.rubric.criteria_of(key[0])
                if spec.asked == "all" or spec.asked == "diagonal" and c.id == source
            ]
            asked += [OVERALL] if spec.asks_overall else []
            out += [self._request(base, first, second, c, source or "", variant) for c in asked]
        return [r for both in out for r in both]

    def attacked(self, pairs: Sequence[tuple[ProbeRecord, ProbeRecord]], verifier: ModelSpec) -> list[PairRequest]:
        """The pairwise judge's calls on its attacked pairs (RunDir.pair_attacks: the better response, the worse
        one attacked): each asked about the criterion it was steered on (where the judge asks criteria) and overall
        (where it asks that), in both orders (UP_FIRST: the better one first), as its steered pair is."""
        spec, base = self._spec, self._base(verifier)
        out = []
        for better, worse in pairs:
            asked = [self.plan.rubric.criterion(better.target)] if spec.asks_criteria else []
            asked += [OVERALL] if spec.asks_overall else []
            out += [self._request(base, better, worse, c, better.target or "", better.variant) for c in asked]
        return [r for both in out for r in both]

    def labelled(self, pairs: list[tuple[ProbeRecord, ProbeRecord, str]], verifier: ModelSpec) -> list[PairRequest]:
        """The pairwise judge's calls on the team's pairwise labels (labels.LabelSet.pair_probes): each labelled
        pair asked about its criterion (or overall) in both orders, as the steered pairs are."""
        asked, base = {c.id: c for c in (*self.plan.rubric.criteria, OVERALL)}, self._base(verifier)
        return [r for a, b, c in pairs for r in self._request(base, a, b, asked[c], "", 0)]

    @property
    def _spec(self) -> PairwiseJudge:
        spec = self.plan.config.pairwise
        assert spec is not None, "pair requests need `pairwise:` in the config"
        return spec

    def _base(self, verifier: ModelSpec) -> dict:
        """What every pairwise call of `verifier` shares in its key: the judge, and the pairwise spec it asks with."""
        return {
            "verifier": model_identity(verifier, self.plan.weights, self.plan.keys),
            # what it asks and how it answers; the criteria asked, its model and its words are in each call's key
            "pairwise": self._spec.model_dump(
                mode="json", exclude={"pairs", "asked", "preset", "verifier", "words", "only"}
            ),
        }

    def _request(
        self, base: dict, first: ProbeRecord, second: ProbeRecord, crit: Criterion, source: str, variant: int
    ) -> tuple[PairRequest, PairRequest]:
        """`first` and `second` asked about `crit` in both orders (A is `first` in order 0, `second` in order 1)."""
        spec = self._spec
        task = self.plan.tasks_by_id[first.task_id]
        out = []
        for order in (UP_FIRST, DOWN_FIRST):
            a, b = (first, second) if order == UP_FIRST else (second, first)
            call = digest(
                {**base, **answer_key(task), "pair": [a.key, b.key], "criterion": scored_text(crit, spec.choices)}
            )
            # scored, then read back by the audit: each prompt rendered once (the key holds all it shows)
            if (cached := self._cache.get(("pair", call))) is None:
                shown = self.plan.rubric.criteria_of(task.id)
                prompt = Prompt(
                    render_pair(spec.template, task, a.text, b.text, crit),
                    kind="pair",
                    response_a=a.text,
                    response_b=b.text,
                    criterion={"label": crit.label, "description": crit.description},
                    rubric=[c.label for c in shown],
                    pitfalls=[c.label for c in shown if isinstance(c, Item) and c.pitfall],
                )
                answer = Answer(spec.answer, ((crit.id, spec.choices),))  # the choice, as the criterion's verdict
                pair = f"{first.key}|{second.key}"
                cached = PairRequest(call, pair, (crit.id,), prompt, answer, task.id, source, variant, order)
                self._cache["pair", call] = cached
            out.append(cached)
        return out[0], out[1]
