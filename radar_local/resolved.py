"""A config resolved once: its paths absolute, its judge's template read in, its rubric, tasks, human reference and
labels read and checked against it, and the checks of a judge against the rubric it scores (one line each)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from radar_local.answer import Answer, GradeShape
from radar_local.defences import Defence, problem
from radar_local.engines.registry import build_engine, score_token_problem
from radar_local.errors import InputError, RadarError
from radar_local.hardware import reward_head_problem
from radar_local.inputs import read_text, regular_file
from radar_local.judge import missing_reference, pair_template_problem, render, render_pair, template_problem
from radar_local.models import resolve as local_model
from radar_local.plan import OVERALL
from radar_local.presets import JUDGE_PRESETS
from radar_local.rubric import Rubric, Task, load_rubric, load_tasks, resolve_reference, with_items
from radar_local.tasks import TaskSource, is_task_table, load_task_table

if TYPE_CHECKING:
    from radar_local.labels import LabelSet

from radar_local.config import AuditConfig, AuditSettings, with_absolute_paths
from radar_local.specs import Jury, ModelSpec


@dataclass(frozen=True)
class Resolved:
    """A config resolved once: its file references absolute (taken from the folder of its file), its
    rubric, tasks and human reference read and checked against it, and what names it in errors. A run is
    created from one (run.Run.create) and keeps these inputs as data (inputs.json)."""

    config: AuditConfig
    rubric: Rubric
    tasks: tuple[Task, ...]
    reference: dict | None
    source: object = "config"
    labels: LabelSet | None = None


def resolve(config: AuditConfig, base: Path, source: object = "config") -> Resolved:
    """`config` with relative paths taken from `base`, its judge's template file read into the config (a
    run keeps the text it was audited with), and its inputs read and checked."""
    config = with_absolute_paths(config, base)
    verifier = config.verifier
    if isinstance(verifier, Jury):
        verifier = verifier.model_copy(update={"jurors": [with_template(j, base) for j in verifier.jurors]})
    else:
        verifier = with_template(verifier, base)
    config = config.model_copy(update={"verifier": verifier})
    rubric, tasks, reference = resolve_inputs(config)
    judges = list(verifier.jurors) if isinstance(verifier, Jury) else [verifier]
    problem = (
        rubric_conflict(config, rubric)
        or next((p for spec in judges if (p := judge_conflict(config, spec, rubric, tasks)) is not None), None)
        or pairwise_problem(config, rubric, tasks)
        or reward_problem(config)
        or items_problem(config, rubric)
        or attack_problem(config, tasks)
    )
    if problem is not None:
        raise InputError(source, problem)
    labels = None
    if config.labels is not None:
        from radar_local.labels import load_labels  # scipy: the labels' agreement statistics; a config names them

        labels = load_labels(Path(config.labels), rubric, tasks)
        if labels.pairs and getattr(config, "pairwise", None) is None:
            raise InputError(
                Path(config.labels),
                "holds pairwise labels (a preferred column): they are asked of a pairwise judge; add `pairwise:` to "
                "the config (docs/pairwise.md), or leave those rows out",
            )
        templates = [t for spec in judges if spec.judge is not None for t in (spec.judge.template, spec.judge.system)]
        pairwise = getattr(config, "pairwise", None)
        if missing_reference([*templates, pairwise.template if pairwise is not None else None], labels.tasks):
            raise InputError(
                Path(config.labels),
                "a row names its task by `prompt`, which carries no reference answer, and the judge's template shows "
                "{{ reference }}; name one of the audit's tasks by `task_id` (its reference is shown), or leave "
                "those rows out",
            )
    return Resolved(config, rubric, tasks, reference, source, labels)


def pairwise_problem(config: AuditConfig, rubric: Rubric, tasks: Sequence[Task]) -> str | None:
    """What keeps the config's pairwise judge from asking its pairs, in one line; None where nothing does (its
    template is rendered once on the first task, as a judge's is)."""
    spec = config.pairwise
    if spec is None:
        return None
    if OVERALL.id in rubric.ids:  # the overall question's own id: its verdicts and a criterion's would share a column
        return (
            f"pairwise: the rubric has a criterion with id '{OVERALL.id}', the id pairwise verdicts give the "
            "overall question; rename that criterion (say overall_quality)"
        )
    problem = pair_template_problem(spec.template, spec.asks_criteria) or missing_reference([spec.template], tasks)
    if problem is not None:
        return f"pairwise: {problem}"
    try:
        for task in tasks[:1]:
            render_pair(spec.template, task, "A response.", "Another response.", rubric.criteria[0])
    except InputError as exc:
        return f"pairwise: {exc}"
    return None


def reward_problem(config: AuditSettings) -> str | None:
    """A reward model on vLLM's pooling runner whose checkpoint has no reward head, in one line (hardware.
    reward_head_problem); None where it has one, or where it is not a local vLLM one."""
    spec = config.reward
    if spec is None or spec.engine != "vllm":
        return None
    try:  # a model missing here is the engine's one line later
        path, _ = local_model(spec.model)
    except RadarError:
        return None
    problem = reward_head_problem(path)
    return None if problem is None else f"reward: {problem}"


def with_template(spec: ModelSpec, base: Path) -> ModelSpec:
    """A verifier whose judge names a template file, with the file's text as its template."""
    judge = spec.judge
    if judge is None or judge.template_file is None:
        return spec
    path = Path(judge.template_file)
    path = path if path.is_absolute() else base / path
    regular_file(path, "judge template")
    text = read_text(path)  # capped in size, a FIFO or device refused, UTF-8 checked
    if not text.strip():
        raise InputError(path, "the judge template is empty; write the prompt the judge is given")
    return spec.model_copy(update={"judge": judge.model_copy(update={"template": text, "template_file": None})})


def judge_conflict(config: AuditSettings, spec: ModelSpec, rubric: Rubric, tasks: Sequence[Task]) -> str | None:
    """What keeps `spec`'s judge from auditing `rubric` under `config`, in one line; else None. Its templates
    are rendered once on the first task, so a construct the sandbox refuses is found before any model loads
    (with no task there is nothing to render, and nothing will be)."""
    judge = spec.judge
    if config.scoring.expected:
        levels = list({s.tokens for s in rubric.scales.values()})
        if (problem := score_token_problem(spec.engine, spec.model, levels)) is not None:
            return f"verifier '{spec.label}': {problem}"
    if judge is None:
        return schema_problem(config, spec, rubric)
    where = f"verifier '{spec.label}' judge: "
    if judge.defences and (why := defence_problem(config, spec, judge.defences)) is not None:
        return where + f"defences: {why}"
    if judge.template is None and "answer" in judge.model_fields_set:
        return (
            where
            + "radar's own prompts ask for the paper's JSON answer (`scoring` bounds it); other shapes need a template"
        )
    if config.scoring.expected and (judge.answer.kind != "bare" or "joint" in judge.modes):
        return where + "scoring mode 'expected' reads one bare score token per call: use answer kind bare"
    if (
        judge.preset
        and JUDGE_PRESETS[judge.preset].boolean
        and (other := next((s for s in rubric.scales.values() if not s.boolean), None))
    ):
        return where + (
            f"the {judge.preset} preset answers true or false, and the rubric's scale is {other.name}: give it the "
            'scale {levels: {"true": 1, "false": 0}} (met / not met)'
        )
    if isinstance(judge.answer, GradeShape):
        if "joint" in judge.modes:
            return where + "a grade pattern answers one criterion; a joint call needs answer kind json or bare"
        for scale in {s.name: s for s in rubric.scales.values()}.values():
            if (problem := judge.answer.check(scale)) is not None:
                return where + problem
    if (problem := schema_problem(config, spec, rubric)) is not None:
        return problem
    if judge.template is None:
        return None
    if (problem := template_problem(judge)) is not None:
        return where + problem
    if (problem := missing_reference([judge.template, judge.system], tasks)) is not None:
        return where + problem
    shown = [(c, rubric.scale_of(c.id)) for c in rubric.criteria]
    try:
        for mode, task in itertools.product(judge.modes, tasks[:1]):
            render(judge, task, "A response.", shown if mode == "joint" else shown[:1])
    except InputError as exc:
        return where + str(exc).removeprefix("judge template: ")
    return paraphrase_problem(config, spec, rubric, tasks)


def paraphrase_problem(config: AuditSettings, spec: ModelSpec, rubric: Rubric, tasks: Sequence[Task]) -> str | None:
    """Why a paraphrase of `spec`'s template cannot stand beside it, in one line: one of its own template problems,
    or it renders as the template (or an earlier paraphrase) does, which would measure nothing."""
    shown = [(c, rubric.scale_of(c.id)) for c in rubric.criteria]
    seen: dict[str, str] = {}
    for k, twin in enumerate([spec, *spec.paraphrased()], 1):
        name = "the template" if k == 1 else f"paraphrase {k - 1}"
        if k > 1 and (problem := judge_conflict(config, twin, rubric, tasks)) is not None:
            return f"verifier '{spec.label}' judge, {name}: {problem.split(': ', 1)[1]}"
        assert twin.judge is not None
        rendered = [
            str(render(twin.judge, task, "A response.", shown if mode == "joint" else shown[:1]))
            for mode, task in itertools.product(twin.judge.modes, tasks[:1])
        ]
        key = "\n".join(rendered) if tasks else (twin.judge.template or "")
        if key in seen:
            return (
                f"verifier '{spec.label}' judge: {name} renders as {seen[key]} does; a paraphrase must word the "
                "prompt otherwise"
            )
        seen[key] = name
    return None


def schema_problem(config: AuditSettings, spec: ModelSpec, rubric: Rubric, constraint: str = "") -> str | None:
    """Where `spec` sends JSON schemas (an openai engine's `constraint: json_schema`, or `constraint` as a server
    resolved `auto`): why some answer it asks for has no schema that holds it as the prompt asks for it, in one
    line; else None."""
    if (constraint or getattr(spec.parsed, "constraint", None)) != "json_schema":
        return None
    judge = spec.judge
    shape = judge.answer if judge is not None and judge.template else config.scoring.shape
    modes = judge.modes if judge is not None else ["per-criterion"]
    for mode, scale in itertools.product(modes, {s.name: s for s in rubric.scales.values()}.values()):
        joint, expected = mode == "joint", config.scoring.expected and mode != "joint"
        try:
            Answer(shape, (("score", scale),), joint=joint, expected=expected).json_schema()
        except ValueError as exc:
            return f"verifier '{spec.label}': {exc}; set the openai engine's option `constraint: regex` (or auto)"
    return None


def resolve_inputs(config: AuditSettings) -> tuple[Rubric, tuple[Task, ...], dict | None]:
    """Rubric, tasks and human reference of a config whose paths are absolute (`resolve`)."""
    rubric = load_rubric(config.rubric)
    source = config.tasks
    if isinstance(source, str) and is_task_table(Path(source)):
        source = TaskSource(path=source)
    if isinstance(source, TaskSource):
        tasks = load_task_table(source, config.seed)
    else:
        tasks = tuple(source) if isinstance(source, list) else load_tasks(source or config.rubric)
    try:
        rubric = with_items(rubric, tasks)
    except ValueError as exc:  # the tasks' items against the rubric: where they are written, or the config
        raise InputError(getattr(source, "path", source) if source else "config", str(exc)) from None
    return rubric, tasks, resolve_reference(rubric, config.rubric, config.human)


def attack_problem(config: AuditConfig, tasks: Sequence[Task]) -> str | None:
    """A `reference` attack (the task's reference answer pasted into the response) on a task without one; only a
    pairwise judge's kind with no pairwise judge; a defence to measure that the attacked judge has on already or
    cannot apply (defences.py), or any with a judge asked only pairs."""
    if config.attacks is None:
        return None
    bare = next((t.id for t in tasks if t.reference is None), None)
    if "reference" in config.attacks.kinds and bare is not None:
        return (
            f"attacks.kinds has 'reference', which pastes each task's reference answer into its probes, and task "
            f"'{bare}' has none; give every task its `reference`, or drop 'reference' from attacks.kinds"
        )
    pairs = config.pairwise
    if pairs is None and not config.attacks.of(False):
        return (
            "attacks.kinds names only pair_claim, which only a pairwise judge is attacked with; add `pairwise:`, or "
            "another kind"
        )
    if pairs is not None and pairs.only and config.attacks.defences:
        return "attacks.defences: a judge asked only pairs (pairwise.only) has no defence to switch on; drop them"
    spec, measured = config.verifiers[0], config.attacks.defences
    on = [d for d in measured if spec.judge is not None and d in spec.judge.defences]
    if on:
        return (
            f"attacks.defences has '{on[0]}', which the judge '{spec.label}' has on already (judge.defences): "
            "measure the defences it does not have"
        )
    why = defence_problem(config, spec, measured) if measured else None
    return None if why is None else f"attacks.defences: {why}"


def defence_problem(config: AuditSettings, spec: ModelSpec, defences: Sequence[Defence]) -> str | None:
    """Why `defences` cannot apply to `spec`'s judge (radar's own prompt has fence and untrusted built in; a bare
    answer with no closing delimiter gives neutralise nothing to change); else None."""
    judge = spec.judge
    own = judge is None or judge.template is None
    shape = config.scoring.shape if own or judge is None else judge.answer
    return problem(list(defences), own, shape, None if judge is None else judge.template)


def items_problem(config: AuditConfig, rubric: Rubric) -> str | None:
    """What a per-prompt rubric (tasks with their own items) cannot be audited with, in one line (an adaptive first
    wave too small to open a sign error); else None."""
    if not rubric.items:
        return None
    if config.adaptive is None:
        return None
    from radar_local.adaptive import first_wave_problem  # scipy: the waves' statistics; a config asks for them

    return first_wave_problem(config.adaptive, rubric)


def rubric_conflict(config: AuditSettings, rubric: Rubric) -> str | None:
    """What keeps `rubric` from being audited under `config`, in one line: a nuisance attribute sharing a
    criterion's id, an intended pair naming what is neither criterion nor attribute; else None."""
    attributes = [s.id for s in config.nuisance_specs]
    clash = next((a for a in attributes if a in rubric.ids), None)
    if clash is not None:
        return f"nuisance attribute '{clash}' is also a criterion of the rubric; give it another id"
    for a, b in getattr(config, "intended", []):
        unknown = [c for c in (a, b) if c not in rubric.ids + attributes]
        if unknown or (a in attributes and b in attributes):
            what = f"unknown criterion '{unknown[0]}'" if unknown else "two nuisance attributes"
            return f"intended pair [{a}, {b}]: {what}; the rubric has {', '.join(rubric.ids)}" + (
                f" and the attributes {', '.join(attributes)}" if attributes else ""
            )
    return None


def served_schema_problem(config: AuditSettings, spec: ModelSpec, rubric: Rubric) -> str | None:
    """schema_problem for a served judge whose constraint is `auto`: where some answer has no JSON schema, the
    server is asked (GET /v1/models) which constraint it takes, before any probe is generated; a server that is
    not vLLM then cannot hold the answer, in one line. None where nothing needs asking or it holds."""
    if spec.engine != "openai" or getattr(spec.parsed, "constraint", None) != "auto":
        return None
    if schema_problem(config, spec, rubric, constraint="json_schema") is None:
        return None
    engine = build_engine(spec.engine, spec.model, spec.parsed)
    try:
        return schema_problem(config, spec, rubric, constraint=engine.constraint)  # type: ignore[attr-defined]
    finally:
        engine.close()
