"""The context window a vLLM engine is given, sized from the longest request the audit sends it (issue 48).

A checkpoint's declared window (131,072 tokens for Llama 3.1 and the judges built on it) makes vLLM reserve KV
cache for one request that long, and such a judge fails to start on a 24 GB card; radar's requests are far
shorter. Each request's bound is its prompt's tokens under the model's own chat template with every response it
holds at the longest the generator may write (`generation.max_new_tokens` each), plus the longest answer it may
write: the generator's max_new_tokens, a verdict's constraint (answer.Answer.max_tokens) after a thinking judge's
reasoning budget (a pairwise verdict's too). With `max_model_len` unset an engine gets the longest bound of every
model it serves, with a quarter of headroom, rounded up to 256 tokens; a `max_model_len` set under that bound, or a
bound over the model's own window, is one line before any model loads. A judge's engine that loads after the probes
are written is sized again from them (Run.sized), each response counted in its own tokenizer (issue 60: the
generator's max_new_tokens may be twice as many of another tokenizer's); the team's labelled responses and pairs are
counted as written.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from radar_local.askings import askings, beside
from radar_local.attack_probes import insertions, task_insertions
from radar_local.common import digest
from radar_local.engines.base import prompt_token_ids
from radar_local.hardware import checkpoint_config
from radar_local.models import local_tokenizer, resolve
from radar_local.plan import Plan
from radar_local.prompts import Messages
from radar_local.records import ProbeRecord
from radar_local.specs import ModelSpec

if TYPE_CHECKING:
    from radar_local.config import AuditConfig
    from radar_local.labels import LabelSet

HEADROOM = 1.25
STEP = 256  # vLLM's max_model_len rounded up to this
ENGINES = ("vllm",)  # the engines that take a max_model_len (a server sets its own)


@dataclass(frozen=True)
class Bound:
    """A request's tokens at most: its prompt (the responses it holds at their longest) and its answer."""

    tokens: int
    what: str  # the request, in words


def engine_key(spec: ModelSpec) -> str:
    """One loaded engine's identity: the models it serves are the same_engine ones."""
    return digest([spec.engine, spec.model, spec.options])


def verifier_specs(config: AuditConfig) -> Iterator[ModelSpec]:
    """Every judge that scores: each verifier (each juror, each call mode) and what is asked beside its verdicts
    (radar_local.askings: the twins that ask with their own template)."""
    for spec in config.verifiers:
        yield spec
        yield from (a.judge for a in askings(config, spec))
        yield from (a.judge for a in beside(config, spec) if a.kind == "defended")  # a defence: its own prompt


def engines(config: AuditConfig) -> list[ModelSpec]:
    """One model per vLLM engine the audit loads (the first it serves): the engines sized."""
    models = [config.generator, *verifier_specs(config)]
    models += [config.reward] if config.reward is not None else []
    models += [config.pairwise.verifier] if config.pairwise is not None and config.pairwise.verifier else []
    unique: dict[str, ModelSpec] = {}
    for m in models:
        if m.engine in ENGINES:
            unique.setdefault(engine_key(m), m)
    return list(unique.values())


def longest_request(
    plan: Plan, spec: ModelSpec, labels: LabelSet | None = None, probes: Sequence[ProbeRecord] = ()
) -> Bound:
    """The longest request the audit of `plan` sends the engine that serves `spec`, bounded."""
    return max(request_bounds(plan, spec, labels, probes), key=lambda b: b.tokens)


def request_bounds(
    plan: Plan, spec: ModelSpec, labels: LabelSet | None = None, probes: Sequence[ProbeRecord] = ()
) -> list[Bound]:
    """Every kind of request the audit of `plan` sends the engine that serves `spec`, each bounded. `probes`: the
    stored ones, where the engine loads after they were written: a response it holds then counts as the longest of
    its task's probes in this engine's own tokenizer (a generator's max_new_tokens in its tokenizer may be twice as
    many of another's: 2.16x between tekken and SmolLM2's on Chinese text), else as max_new_tokens."""
    config = plan.config
    path, _ = resolve(spec.model)
    try:
        tokenizer = local_tokenizer(path, spec.engine)  # vLLM's own for a Mistral-format folder
    except (OSError, ValueError) as exc:  # no tokenizer files, or ones transformers cannot read
        raise ValueError(
            f"{spec.label}: cannot read its tokenizer at {path} ({str(exc).splitlines()[0][:120]})"
        ) from None
    reply = config.generation.max_new_tokens
    bounds: list[Bound] = []
    written: dict[str, int] = {}  # task -> its longest stored probe, in this tokenizer's tokens
    texts = [p.text for p in probes]
    if getattr(tokenizer, "IS_MISTRAL_TOKENIZER", False):
        held = [tokenizer.encode(t, add_special_tokens=False) for t in texts]
    else:
        held = tokenizer(texts, add_special_tokens=False)["input_ids"] if texts else []  # one call
    for p, ids in zip(probes, held):
        written[p.task_id] = max(written.get(p.task_id, 0), len(ids))

    def count(messages: Messages, held: int, answer: int, what: str, task: str = "", more: int = 0) -> None:
        tokens = len(prompt_token_ids(tokenizer, messages))  # the ids the engine sends
        bounds.append(Bound(tokens + held * written.get(task, reply) + answer + more, what))

    def longest(made: Iterable[dict]) -> int:
        """The most tokens one insertion of `made` (each task's, attack_probes.insertions) adds to a response."""
        texts = [text for insertions_of in made for text, _ in insertions_of.values()]
        return max((len(tokenizer.encode(text, add_special_tokens=False)) for text in texts), default=0)

    def attack_tokens(judge: ModelSpec) -> int:
        """The longest insertion an attack adds to a response this judge reads (attack_probes.py)."""
        if config.attacks is None:
            return 0
        own = judge.judge if judge.judge is not None and judge.judge.template else None
        shape = own.answer if own is not None else config.scoring.shape
        joint, template = judge.judge is not None and judge.judge.joint, own.template if own else None
        kinds = config.attacks.of(False)
        return longest(task_insertions(kinds, shape, plan.rubric, t, joint, template) for t in plan.tasks)

    def pair_attack_tokens() -> int:
        """The longest insertion an attack adds to the down response of a pair (RunDir.pair_attacks)."""
        if config.attacks is None or (spec := config.pairwise) is None:
            return 0
        kinds = config.attacks.of(True)
        return longest(insertions(kinds, spec.answer, spec.choices, (), spec.template, t.reference) for t in plan.tasks)

    # one empty response per task: a verdict's prompt differs by task and criterion, never by the steer
    first = plan.rubric.criteria[0].id
    empty = [
        ProbeRecord(key=f"bound:{t.id}", generator="", task_id=t.id, target=first, direction="+", variant=0, text="")
        for t in plan.tasks
    ]
    if config.generator.same_engine(spec):
        for g in plan.generation_requests():
            count(g.messages, 0, reply, f"the generator's probe of task '{g.task.id}'")
        if config.nuisance_specs:  # a rewrite holds a probe and writes one
            for r in plan.rewrite_requests(empty, config.nuisance_specs):
                count(r.messages, 1, reply, f"the rewrite of a probe of task '{r.task.id}'", r.task.id)
    judges = [j for j in verifier_specs(config) if j.same_engine(spec)]
    for judge in judges:
        budget, attack = _reasoning_budget(judge), attack_tokens(judge)  # an attacked probe: its base and more
        for s in plan.score_requests(empty, judge):
            task = s.probe_key.removeprefix("bound:")
            what = f"a verdict of '{judge.label}' on task '{task}'" + (" (an attacked probe)" if attack else "")
            count(s.messages, 1, budget + s.answer.max_tokens, what, task, attack)
        if labels is not None:
            for s in plan.score_requests(labels.probes(), judge):
                count(
                    s.messages, 0, budget + s.answer.max_tokens, f"a verdict of '{judge.label}' on a labelled response"
                )
    # the model asked the pairs: pairwise's own, else the first judge this engine serves
    pair_judge = None if config.pairwise is None else config.pairwise.verifier or next(iter(judges), None)
    if pair_judge is not None and pair_judge.same_engine(spec):
        pairs = [*empty, *(p.model_copy(update={"direction": "-"}) for p in empty)]
        budget = _reasoning_budget(pair_judge)  # a thinking judge reasons before its pairwise verdict too
        attack = pair_attack_tokens()  # an attacked pair: its down response and more
        for s in plan.pairs.requests(pairs, pair_judge):
            what = f"a pairwise verdict of '{pair_judge.label}'" + (" (an attacked pair)" if attack else "")
            count(s.messages, 2, budget + s.answer.max_tokens, what, s.task_id, attack)
        if labels is not None and labels.pairs:  # the team's labelled pairs: their responses as written
            for s in plan.pairs.labelled(labels.pair_probes(), pair_judge):
                count(s.messages, 0, budget + s.answer.max_tokens, f"a pairwise verdict of '{pair_judge.label}' on a "
                      "labelled pair")  # fmt: skip
    if config.reward is not None and config.reward.same_engine(spec):
        for w in plan.reward_requests(empty, config.reward):
            count(w.messages, 1, 1, "the reward of a probe", w.probe_key.removeprefix("bound:"))
    return bounds


def _reasoning_budget(judge: ModelSpec) -> int:
    """The tokens a thinking judge may reason before its answer (0 for one that answers at once)."""
    thinking = judge.judge.reasoning if judge.judge is not None else None
    return thinking.budget if thinking is not None and thinking.think else 0


def window(spec: ModelSpec) -> int | None:
    """The model's own context window: the registry's, else its config.json's max_position_embeddings."""
    path, entry = resolve(spec.model)
    if entry is not None:
        return entry.context_length
    found = checkpoint_config(path).get("max_position_embeddings")
    return found if isinstance(found, int) and found > 0 else None


def sized(need: Bound, spec: ModelSpec, limit: int | None) -> int:
    """The max_model_len for `spec`'s engine: the bound with headroom, rounded up to STEP (at most the model's
    window, `limit`); ValueError in one line where the config's own max_model_len is under the bound, or the bound
    over the window."""
    given = spec.options.get("max_model_len")
    if limit is not None and need.tokens > limit:
        raise ValueError(
            f"{spec.label}: its longest request, {need.what}, may take {need.tokens} tokens, more than the model's "
            f"window of {limit}; lower generation.max_new_tokens or shorten the tasks"
        )
    if given is not None:
        if given < need.tokens:
            raise ValueError(
                f"{spec.label}: max_model_len {given} is under the {need.tokens} tokens its longest request may take "
                f"({need.what}); raise it, or leave it unset for radar to size"
            )
        return int(given)
    wanted = STEP * math.ceil(need.tokens * HEADROOM / STEP)
    return wanted if limit is None else min(limit, wanted)
