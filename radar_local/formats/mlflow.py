"""MLflow's judges from `make_judge`, serialized (`judge.model_dump()`, JSON): a list of them, one per
criterion, each `{name, serialization_version: 1, instructions_judge_pydantic_data: {instructions, model,
feedback_value_type}}`; instructions refer to `{{ inputs }}` and `{{ outputs }}`.

The shapes follow MLflow's sources (mlflow/genai/judges/instructions_judge: the serialized scorer and its
template variables; the judge answers `result` and `rationale`). `feedback_value_type` is the JSON schema
of the result: a boolean, integers, or labels whose words give their order (yes/no, complete/incomplete,
good/neutral/bad) put on a scale; a free string, a float, an object or labels of no readable order are refused
(no scale to audit on).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

from radar_local.answer import JsonShape
from radar_local.errors import InputError
from radar_local.formats import shared
from radar_local.formats.shared import Imported
from radar_local.inputs import read_text
from radar_local.rubric import Criterion, Rubric
from radar_local.scale import Scale

VERSIONS = (1,)
BINARY = {("yes", "no"), ("pass", "fail"), ("true", "false"), ("correct", "incorrect"), ("good", "bad")}
NEGATIONS = ("un", "in", "non-", "non", "not ", "not_", "im", "ir", "dis")  # complete/incomplete, safe/unsafe
# labels whose words say their order (a categorical feedback type, MLflow's Literal[...]): the rank of each
RANKS = {
    **dict.fromkeys(("excellent", "outstanding", "perfect", "very good", "very_good"), 4),
    **dict.fromkeys(("good", "high", "fully", "full", "strong", "yes", "pass", "correct", "complete", "positive"), 3),
    **dict.fromkeys(
        (
            "neutral",
            "partial",
            "partially",
            "mixed",
            "medium",
            "moderate",
            "fair",
            "average",
            "okay",
            "ok",
            "somewhat",
            "unsure",
            "maybe",
            "acceptable",
        ),
        2,
    ),  # fmt: skip
    **dict.fromkeys(("poor", "low", "weak", "bad", "no", "fail", "incorrect", "incomplete", "negative", "not"), 1),
    **dict.fromkeys(("very poor", "very_poor", "very bad", "very_bad", "terrible", "none"), 0),
}
SUFFIX = "\n\nInputs: {{ inputs }}\nOutputs: {{ outputs }}"  # what export adds to instructions that name neither
VARIABLES = ("inputs", "outputs")  # and expectations, a task's reference answer
SYSTEM = (
    "{{ criterion.description }}\n\nAnswer with a JSON object: `result`, the assessment on {{ scale.describe }}, "
    "and a brief `rationale`."
)
USER = "inputs: {{ prompt }}\noutputs: {{ response }}"
EXPECTED = "\nexpectations: {{ reference }}"  # MLflow's expected answer: the task's reference answer


def _judges(path: Path) -> list[dict]:
    try:
        data = json.loads(read_text(path))
    except (json.JSONDecodeError, RecursionError):  # RecursionError: nested past the parser
        raise InputError(
            path, "is not JSON; export MLflow judges with json.dumps([j.model_dump() for j in judges])"
        ) from None
    judges = data if isinstance(data, list) else [data]
    for k, j in enumerate(judges):
        where = f"judge {k + 1}"
        if not isinstance(j, dict) or not isinstance(j.get("instructions_judge_pydantic_data"), dict):
            raise InputError(path, f"{where} is no serialized make_judge judge (no instructions_judge_pydantic_data)")
        if j.get("serialization_version") not in VERSIONS:
            raise InputError(
                path,
                f"{where}: serialization_version {j.get('serialization_version')!r} is not one radar knows "
                f"({', '.join(map(str, VERSIONS))})",
            )
        shared.text_field(path, j, "name", where)
        shared.text_field(path, j["instructions_judge_pydantic_data"], "instructions", f"{where} ({j['name']})")
    return judges


def _scale(path: Path, name: str, schema: object) -> Scale:
    where = f"judge '{name}': feedback_value_type"
    if not isinstance(schema, dict):
        raise InputError(path, f"{where} is missing; radar needs the result's type to put it on a scale")
    enum = schema.get("enum")
    if schema.get("type") == "boolean":
        return Scale(levels={"true": 1, "false": 0})
    if isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum):
        return _labels(path, where, enum)
    if isinstance(enum, list) and enum and all(isinstance(v, int) and not isinstance(v, bool) for v in enum):
        return Scale(levels={str(v): v for v in sorted(enum)})
    if (
        schema.get("type") == "integer"
        and isinstance(schema.get("minimum"), int)
        and isinstance(schema.get("maximum"), int)
    ):
        return Scale(min=schema["minimum"], max=schema["maximum"])
    raise InputError(
        path,
        f"{where} is {json.dumps(schema)[:80]}: radar puts a boolean, a yes/no pair or bounded integers on a "
        "scale, not a free string, a float or an object",
    )


def _labels(path: Path, where: str, enum: list[str]) -> Scale:
    """Categorical labels on a scale where their words say the order: a pair whose one label negates the other
    (yes/no, complete/incomplete, safe/unsafe), or labels each of a known rank (good/neutral/bad,
    excellent/good/fair/poor); otherwise one line asking for values."""
    low = [v.lower().strip() for v in enum]
    if len(enum) == 2:
        pair = tuple(low)
        good = None
        if pair in BINARY or pair[::-1] in BINARY:
            good = enum[0] if pair in BINARY else enum[1]
        else:
            for a, b in (pair, pair[::-1]):
                if any(b == prefix + a for prefix in NEGATIONS):
                    good = enum[low.index(a)]
        if good is not None:
            return Scale(levels={v: int(v == good) for v in enum})
    ranks = [RANKS[v] for v in low if v in RANKS]
    if len(ranks) == len(enum) and len(set(ranks)) == len(ranks):
        return Scale(levels={v: r for v, r in sorted(zip(enum, ranks), key=lambda x: -x[1])})
    raise InputError(
        path,
        f"{where} is the labels {enum}: their words give no order radar can read, so it cannot put them on a scale; "
        "give the judge an integer or boolean feedback type, or labels such as good/neutral/bad",
    )


def _mapped(path: Path, j: dict, cid: str) -> tuple[Criterion, Scale, bool]:
    """One judge as a criterion, its scale, and whether it reads `{{ expectations }}`; one line where it does not
    map."""
    data = j["instructions_judge_pydantic_data"]
    instructions = data["instructions"].removesuffix(SUFFIX)
    unknown = sorted(shared.variables(data["instructions"]) - set(VARIABLES))
    if "trace" in unknown:
        raise InputError(
            path,
            f"judge '{j['name']}' reads {{{{ trace }}}}, an agent's whole trace: radar audits a response to a "
            "task, not agent transcripts (yet)",
        )
    expects = "expectations" in unknown  # each row's expected answer: the task's reference answer
    unknown = [v for v in unknown if v != "expectations"]
    if unknown:
        raise InputError(
            path, f"judge '{j['name']}' uses {{{{ {unknown[0]} }}}}; radar binds inputs (the task) and outputs only"
        )
    scale = _scale(path, j["name"], data.get("feedback_value_type"))
    crit = shared.criterion(path, f"judge '{j['name']}'", id=cid, label=j["name"], description=instructions)
    return crit, scale, expects


def _ids(judges: list[dict]) -> list[str]:
    taken: set[str] = set()
    return [shared.criterion_id(j["name"], taken) for j in judges]


def _unmapped(path: Path, judges: list[dict]) -> dict[int, InputError]:
    """The judges radar leaves to MLflow (by index) and why: the others still make a rubric."""
    out = {}
    for k, (j, cid) in enumerate(zip(judges, _ids(judges))):
        try:
            _mapped(path, j, cid)
        except InputError as exc:
            out[k] = exc
    return out


def read(path: Path) -> Imported:
    judges = _judges(path)
    left = _unmapped(path, judges)
    if left and len(left) == len(judges):  # no judge maps: nothing to audit
        first = str(next(iter(left.values()))).removeprefix(f"{path}: ")
        raise InputError(path, f"{first}; no other judge maps")
    mapped = [_mapped(path, j, cid) for k, (j, cid) in enumerate(zip(judges, _ids(judges))) if k not in left]
    criteria = [c for c, _, _ in mapped]
    scales = [s for _, s, _ in mapped]
    expects = [c.label for c, _, e in mapped if e]
    kept = [j for k, j in enumerate(judges) if k not in left]
    rationale_first = {bool(j["instructions_judge_pydantic_data"].get("generate_rationale_first")) for j in kept}
    if len(rationale_first) > 1:
        raise InputError(path, "some judges give the rationale first and some last; radar audits one answer shape")
    criteria = [c if s == scales[0] else c.model_copy(update={"scale": s}) for c, s in zip(criteria, scales)]
    rub = shared.rubric(path, path.stem, path.stem, criteria, scales[0])
    if rationale_first.pop():
        answer = JsonShape(before={"rationale": 300}, score="result", after={})
    else:
        answer = JsonShape(before={}, score="result", after={"rationale": 300})
    jud = shared.judge(path, template=USER + (EXPECTED if expects else ""), system=SYSTEM, answer=answer)
    account = [
        f"{len(criteria)} judges, one criterion each: the instructions are the criterion, {{{{ inputs }}}} and "
        "{{ outputs }} bound to the task and the response (shown on every call)",
        *(
            [
                f"{{{{ expectations }}}} ({', '.join(expects)}): each task's reference answer, shown on every call; "
                "the audit needs tasks that carry one (`reference`; the bundled tasks carry none)"
            ]
            if expects
            else []
        ),
        "answer: {result, rationale} as MLflow's judge writes them; scales: "
        + ", ".join(f"{c.id} {rub.scale_of(c.id).name}" for c in rub.criteria),
        "judge prompt: radar's words around each judge's instructions (a system message asking for the JSON "
        "answer, a user message with the task and the response), not MLflow's own framing of them",
        "tasks: judges carry none: the config uses the bundled helpsteer2 tasks",
        *(f"left to MLflow: {str(exc).removeprefix(f'{path}: ')}" for exc in left.values()),
    ]
    return Imported("mlflow", path, rub, jud, (), {}, account)


def write(path: Path, imported: Imported, rub: Rubric, account: list[str]) -> str:
    judges = _judges(path)
    left = _unmapped(path, judges)
    out = []
    for k, (j, cid) in enumerate(zip(judges, _ids(judges))):
        if k in left:  # a judge radar does not audit stays as it is
            out.append(j)
            continue
        if cid not in rub.ids:
            continue
        if not shared.unchanged(imported.rubric, rub, cid):
            j = copy.deepcopy(j)
            j["instructions_judge_pydantic_data"]["instructions"] = _instructions(rub.criterion(cid).description)
        out.append(j)
    for c in rub.criteria:
        if c.id not in imported.rubric.ids:
            j = copy.deepcopy(judges[0])
            j["name"] = c.id
            j["instructions_judge_pydantic_data"]["instructions"] = _instructions(c.description)
            out.append(j)
            account.append(f"{c.id}: a new judge, model and feedback type as '{judges[0]['name']}'")
    return shared.json_like(read_text(path), out)


def _instructions(description: str) -> str:
    """MLflow needs a template variable in instructions: one that names neither gets radar's suffix."""
    return description if shared.variables(description) & set(VARIABLES) else description + SUFFIX
