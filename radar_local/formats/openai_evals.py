"""OpenAI evals' model-graded evals, in the registry's layout since openai/evals #804 (April 2023): an eval file
(`evals/registry/evals/*.yaml`) names a model-graded spec (`modelgraded_spec`, a name defined in one of
`evals/registry/modelgraded/*.yaml`) and the arguments it formats into the spec's prompt
(`modelgraded_spec_args`, the criterion among them: closedqa's `{criteria}`). The criteria of an audit are the
evals of one file that run one spec, each with its own `criteria` (coqa-ex.yaml: correctness, relevance,
conciseness). A spec file alone imports where it carries its criteria itself (`args.criteria`, name -> text, the
layout before #804).

What radar keeps is what openai/evals does (evals/elsuite/modelgraded/classify.py and classify_utils.py at
4bfc1f58): the spec's prompt, Python's format style (`{input}`, `{completion}`, `{criteria}`, the eval's other
arguments as constants); its answer words (ANSWER_PROMPTS) appended only where the eval itself names an
`eval_type`, the spec's own words standing otherwise; the choice read from the last line for `cot_classify`
(the spec's eval_type first, then the eval's), the whole answer for `classify`; each choice's score its level's
value on radar's scale.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from radar_local.answer import BareShape, GradeShape
from radar_local.errors import InputError
from radar_local.formats import shared
from radar_local.formats.shared import Imported
from radar_local.inputs import read_text
from radar_local.rubric import Rubric, load_benchmark
from radar_local.scale import Scale, literal_regex

REASONING = 600  # characters of reasoning before the choice (one line)
CLASSIFY = "evals.elsuite.modelgraded.classify:ModelBasedClassify"
# openai/evals' own answer words (classify_utils.ANSWER_PROMPTS), appended where an eval names its eval_type
ANSWER_PROMPTS = {
    "classify": "Answer the question by printing only a single choice from {choices} (without quotes or "
    "punctuation) corresponding to the correct answer with no other text.",
    "cot_classify": "First, write out in a step by step manner your reasoning to be sure that your conclusion is "
    "correct. Avoid simply stating the correct answer at the outset. Then print only a single choice from "
    "{choices} (without quotes or punctuation) on its own line corresponding to the correct answer. At the end, "
    "repeat just the answer by itself on a new line.\n\nReasoning:",
    "cot_classify_jp": "まず、一歩一歩あなたの推論を書き出してください。"
    "単に正しい答えを最初に述べることを避けてください。"
    "次に、{choices}（引用符や句読点なし）から正しい答えに対応する1つの選択肢を単独の行に書きだしてください。"
    "最後に、答えだけを新しい行に繰り返してください。\n\n推論：",
}
SPEC_NAME = re.compile(r"[A-Za-z0-9_.-]+")


def read(path: Path, root: Path | None = None) -> Imported:
    data = shared.mapping(path, shared.load_yaml(path), "an openai/evals registry file (name -> eval or spec)")
    if "prompt" in data:  # a spec file without its name (the registry's layout before #392)
        return _from_spec(path, path.stem, data)
    evals = {str(k): v for k, v in data.items() if isinstance(v, dict) and "class" in v}
    if evals:
        return _from_evals(path, evals, root)
    specs = {str(k): v for k, v in data.items() if isinstance(v, dict) and "prompt" in v}
    if not specs:
        raise InputError(
            path,
            "holds neither evals (name -> {class, args}) nor model-graded specs (name -> {prompt, choice_strings}): "
            "import an eval file from evals/registry/evals/ or a spec from evals/registry/modelgraded/",
        )
    if len(specs) > 1:
        raise InputError(
            path,
            f"holds {len(specs)} model-graded specs ({', '.join(specs)}); an eval file names the one it runs and its "
            "criteria: import that eval file (evals/registry/evals/*.yaml)",
        )
    ((name, spec),) = specs.items()
    return _from_spec(path, name, spec)


def _from_spec(path: Path, name: str, spec: dict) -> Imported:
    """A spec alone: its criteria must be its own (`args.criteria`, before #804)."""
    args = spec.get("args")
    criteria = args.get("criteria") if isinstance(args, dict) else None
    if criteria is None and _compares(spec):
        return _pairwise(path, name, spec, None, [])
    if criteria is None:
        if "criteria" in _fields(spec.get("prompt")):
            raise InputError(
                path,
                f"spec '{name}' formats {{criteria}}, which each eval that runs it supplies "
                "(modelgraded_spec_args.criteria in evals/registry/evals/*.yaml): import such an eval file",
            )
        raise InputError(
            path,
            f"spec '{name}' judges one thing (its prompt formats no {{criteria}}): what it judges is written into "
            "its prompt, and radar shows its judge each criterion's text",
        )
    criteria = shared.named_texts(path, criteria, "args.criteria")
    ids = shared.named_ids(criteria)
    texts = {ids[str(k)]: (f"args.criteria.{k}", str(v)) for k, v in criteria.items()}
    return _imported(path, name, spec, None, {}, texts, [f"spec '{name}': {len(texts)} criteria from args.criteria"])


def _criteria_evals(path: Path, evals: dict[str, dict]) -> tuple[dict[str, dict], dict[str, dict], dict[str, dict]]:
    """(the model-graded evals, those that name a criterion, each one's modelgraded_spec_args)."""
    graded = {k: v.get("args") or {} for k, v in evals.items() if v.get("class") == CLASSIFY}
    if not graded:
        raise InputError(path, "holds no model-graded eval (class ModelBasedClassify): no judge in it to audit")
    spec_args = {k: a.get("modelgraded_spec_args") or {} for k, a in graded.items()}
    named = {k: a for k, a in graded.items() if isinstance(spec_args[k], dict) and "criteria" in spec_args[k]}
    return graded, named, spec_args


def _texts(path: Path, named: dict[str, dict], spec_args: dict[str, dict]) -> tuple[dict, list[str]]:
    """criterion id -> (its eval, its text), one per distinct text, and what the account says of them."""
    texts: dict[str, tuple[str, str]] = {}
    account: list[str] = []
    taken: set[str] = set()
    for eval_name in named:
        text = _criterion_text(path, eval_name, spec_args[eval_name]["criteria"], account)
        same = next((cid for cid, (_, t) in texts.items() if t == text), None)
        if same is not None:
            account.append(f"{eval_name}: the same criterion as {same} (a meta-evaluation of one judge): one criterion")
            continue
        head = text.split(":", 1)[0].strip() if ":" in text[:40] else eval_name.split(".")[0]
        texts[shared.criterion_id(head, taken)] = (eval_name, text)
    return texts, account


def _from_evals(path: Path, evals: dict[str, dict], root: Path | None) -> Imported:
    graded, named, spec_args = _criteria_evals(path, evals)
    if not named and (compared := _compared(path, graded, root)) is not None:
        return compared
    if not named:
        specs = sorted({str(a.get("modelgraded_spec")) for a in graded.values()})
        asked = f"spec {specs[0]}'s own question" if len(specs) == 1 else f"specs {', '.join(specs)}' own questions"
        if any("criteria" in _fields(_spec_prompt(path, s, root)) for s in specs):
            asked = f"spec {', '.join(specs)} with the criterion each sample supplies (samples_jsonl)"
        raise InputError(
            path,
            f"no eval here names a criterion (modelgraded_spec_args.criteria): its {len(graded)} model-graded "
            f"eval(s) ask {asked}; radar audits criteria named in the eval file, at least two",
        )
    used = {str(a.get("modelgraded_spec")) for a in named.values()}
    if len(used) > 1:
        raise InputError(path, f"its criteria run on {len(used)} specs ({', '.join(sorted(used))}); radar audits "
                         "the criteria of one judge: split the evals into one file per spec")  # fmt: skip
    eval_types = {str(a.get("eval_type")) for a in named.values()}
    constants = [{k: v for k, v in spec_args[e].items() if k != "criteria"} for e in named]
    if len(eval_types) > 1 or any(c != constants[0] for c in constants):
        raise InputError(
            path, "its criteria's evals ask the spec differently (eval_type or other modelgraded_spec_args): "
            "radar audits criteria one judge scores the same way",
        )  # fmt: skip
    (spec_name,) = used
    spec = _load_spec(path, spec_name, root)
    texts, account = _texts(path, named, spec_args)
    left = [k for k in graded if k not in named]
    if left:
        account.append(f"left to openai/evals: {', '.join(left)} (model-graded evals that name no criterion)")
    eval_type = next(iter(named.values())).get("eval_type")
    return _imported(
        path,
        spec_name,
        spec,
        eval_type if isinstance(eval_type, str) else None,
        constants[0],
        {cid: (f"{e}: modelgraded_spec_args.criteria", t) for cid, (e, t) in texts.items()},
        [f"spec '{spec_name}' (run by {len(named)} evals): {len(texts)} criteria from modelgraded_spec_args", *account],
    )


def _criterion_text(path: Path, eval_name: str, value: Any, account: list[str]) -> str:
    """An eval's criterion: text; a mapping of one (openai/evals formats the mapping itself into the prompt)."""
    if isinstance(value, dict) and len(value) == 1 and isinstance(next(iter(value.values())), str):
        account.append(f"{eval_name}: its criterion is a one-entry mapping, which openai/evals formats as Python's "
                       "repr of the mapping; radar's judge sees the entry's text")  # fmt: skip
        value = next(iter(value.values()))
    if not isinstance(value, str) or not value.strip():
        raise InputError(
            path,
            f"{eval_name}: modelgraded_spec_args.criteria must be one criterion's text (radar audits one criterion "
            "per verdict)",
        )
    return value


def _load_spec(path: Path, name: str, root: Path | None) -> dict:
    """The spec `name`, from the registry's modelgraded/*.yaml (the registry: --root, else the eval file's folder's
    parent, as in openai/evals)."""
    registry = root or path.parent.parent
    folder = registry / "modelgraded"
    if SPEC_NAME.fullmatch(name) and folder.is_dir():
        for spec_file in sorted(folder.glob("*.yaml")):  # only the file that defines it is read (others may not parse)
            if not re.search(rf"^['\"]?{re.escape(name)}['\"]?\s*:", read_text(spec_file), re.M):
                continue
            data = shared.load_yaml(spec_file)
            if isinstance(data, dict) and isinstance(data.get(name), dict):
                return data[name]
    raise InputError(
        path,
        f"spec '{name}' is in none of {folder}/*.yaml: name the registry folder (the one holding evals/ and "
        "modelgraded/) with --root",
    )


def _spec_prompt(path: Path, name: str, root: Path | None) -> Any:
    """The spec's prompt, None where the registry lacks it (for a refusal's wording only)."""
    try:
        return _load_spec(path, name, root).get("prompt")
    except InputError:
        return None


def _fields(prompt: Any) -> set[str]:
    messages = [prompt] if isinstance(prompt, str) else prompt if isinstance(prompt, list) else []
    texts = [m if isinstance(m, str) else m.get("content") for m in messages if isinstance(m, str | dict)]
    return set().union(*(shared.variables(t, style="format") for t in texts if isinstance(t, str)))


def _scale(path: Path, spec: dict) -> Scale:
    choices = spec.get("choice_strings")
    choices = list(choices) if isinstance(choices, str) else choices
    if not isinstance(choices, list) or len(choices) < 2 or not all(isinstance(c, str | int) for c in choices):
        raise InputError(path, "'choice_strings' must list the judge's choices (e.g. 'YN' or [A, B, C])")
    scores = spec.get("choice_scores")
    if scores is None:
        raise InputError(path, "the spec gives its choices no scores (choice_scores): openai/evals only counts them; "
                         "radar needs each choice's score to put it on a scale")  # fmt: skip
    if scores == "from_strings":
        try:
            scores = {c: float(c) for c in choices}
        except ValueError:
            raise InputError(path, "choice_scores: from_strings needs numeric choice_strings") from None
    if not isinstance(scores, dict) or any(str(c) not in map(str, scores) for c in choices):
        raise InputError(path, "'choice_scores' must give every choice a score: radar puts the choices on a scale")
    values = {str(k): v for k, v in scores.items()}
    try:
        return Scale(levels={str(c): float(values[str(c)]) for c in choices})
    except (ValueError, TypeError) as exc:
        raise InputError(path, f"the choices do not make a scale ({str(exc).splitlines()[-1]})") from None


def _imported(
    path: Path,
    name: str,
    spec: dict,
    eval_type: str | None,
    constants: dict,
    texts: dict[str, tuple[str, str]],
    account: list[str],
) -> Imported:
    """The rubric and judge of spec `name` asked about `texts` (id -> (where, criterion text)); `eval_type`: the
    eval's (its answer words appended), None where the spec's own words stand; `constants`: the eval's other
    arguments, formatted into the prompt as they are."""
    scale = _scale(path, spec)
    reads = _reading(path, name, spec, eval_type)
    io = spec.get("input_outputs") or {"input": "completion"}
    if not isinstance(io, dict) or len(io) != 1 or not all(isinstance(v, str) for v in (*io, *io.values())):
        raise InputError(path, "input_outputs: radar maps one input and its completion")
    ((inp, out),) = io.items()
    names = {str(inp): "prompt", str(out): "response", "criteria": "criterion.description"}
    prompt = spec.get("prompt")
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
    if (
        not isinstance(messages, list)
        or not all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in messages)
        or [m.get("role") for m in messages] not in (["user"], ["system", "user"])
    ):
        raise InputError(path, "prompt: radar maps text, or a user message after an optional system message")
    contents = [str(m["content"]) for m in messages]
    unknown = sorted(_fields(prompt) - set(names) - set(constants))
    if unknown:
        raise InputError(
            path,
            f"spec '{name}' formats {', '.join('{' + u + '}' for u in unknown)}, which each sample supplies "
            "(samples_jsonl); radar's probes hold a task and a response only",
        )
    for key, value in constants.items():  # the eval's other arguments are constants of its prompt
        escaped = str(value).replace("{", "{{").replace("}", "}}")
        contents = [c.replace("{" + str(key) + "}", escaped) for c in contents]
    contents[-1] += _answer_words(path, eval_type, scale)
    bound = [shared.bind(c, names, path, "prompt", style="format") for c in contents]
    answer, chain = _answer(scale, reads), reads.startswith("cot_classify")
    jud = shared.judge(path, template=bound[-1], system=bound[0] if len(bound) == 2 else None, answer=answer)
    crit = [
        shared.criterion(path, where, id=cid, label=shared.label_of(cid), description=text)
        for cid, (where, text) in texts.items()
    ]
    rub = shared.rubric(path, name, name, crit, scale)
    account = [
        *account,
        f"choices {', '.join(scale.tokens)} scored "
        + ", ".join(f"{t}={v:g}" for t, v in zip(scale.tokens, scale.values)),
        (
            f"eval_type {eval_type}: openai/evals' own answer words for it are appended to the spec's prompt"
            if eval_type is not None
            else "the spec's prompt is the judge's as written (no eval names an eval_type, so openai/evals appends "
            "no answer words)"
        )
        + "; the choice "
        + ("is read from the line after the reasoning" if chain else "is the whole answer"),
        *(f"{{{k}}}: '{v}' as the eval sets it" for k, v in constants.items()),
        "tasks: an eval's samples are a separate file (samples_jsonl): the config uses the bundled helpsteer2 tasks",
    ]
    return Imported("openai-evals", path, rub, jud, (), {}, account)


def _reading(path: Path, name: str, spec: dict, eval_type: str | None) -> str:
    """How openai/evals reads the spec's answer (the spec's eval_type first, then the eval's), where radar maps it."""
    reads = spec.get("eval_type") or eval_type
    if not isinstance(reads, str) or not (reads.startswith("cot_classify") or reads == "classify"):
        raise InputError(
            path,
            f"eval_type '{reads}': radar maps cot_classify (reasoning, then the choice on its own line) and "
            "classify; a choice before its reasoning is not an answer shape radar constrains"
            if reads
            else f"spec '{name}' names no eval_type, nor does an eval that runs it: openai/evals would not know "
            "how to read its answer",
        )
    return reads


def _answer_words(path: Path, eval_type: str | None, scale: Scale) -> str:
    """openai/evals' own answer words for the eval's eval_type, appended to the prompt ("" where it names none)."""
    if eval_type is None:
        return ""
    if eval_type not in ANSWER_PROMPTS:
        raise InputError(path, f"eval_type '{eval_type}': radar maps {', '.join(ANSWER_PROMPTS)}")
    choices = " or ".join(f'"{t}"' for t in scale.tokens)  # classify_utils.choice_to_str
    return "\n\n" + ANSWER_PROMPTS[eval_type].replace("{choices}", choices.replace("{", "{{"))


def _answer(scale: Scale, reads: str) -> GradeShape | BareShape:
    """The choice after a reasoning line (cot_classify), else the whole answer (classify)."""
    pattern = "(" + "|".join(literal_regex(t) for t in scale.tokens) + ")"
    if reads.startswith("cot_classify"):
        return GradeShape(kind="grade", pattern=pattern, reasoning=REASONING)
    return BareShape(kind="bare")


def _compares(spec: dict) -> bool:
    """A spec that compares two completions (battle: input1 -> completion1, input2 -> completion2)."""
    io = spec.get("input_outputs")
    return isinstance(io, dict) and len(io) == 2


def _compared(path: Path, graded: dict[str, dict], root: Path | None) -> Imported | None:
    """The evals of a file that all run one comparing spec, as its pairwise judge; None where they do not."""
    specs = {str(a.get("modelgraded_spec")) for a in graded.values()}
    if len(specs) != 1:
        return None
    (name,) = specs
    try:
        spec = _load_spec(path, name, root)
    except InputError:
        return None  # the refusal that follows names what the evals ask
    if not _compares(spec):
        return None
    eval_types = {a.get("eval_type") for a in graded.values()}
    if len(eval_types) > 1:
        raise InputError(path, f"its evals run spec '{name}' with eval_types {sorted(map(str, eval_types))}: radar "
                         "imports one judge, asked one way; split the evals into one file per eval_type")  # fmt: skip
    (eval_type,) = eval_types
    account = [f"spec '{name}' (run by {len(graded)} evals: {', '.join(graded)})"]
    return _pairwise(path, name, spec, eval_type if isinstance(eval_type, str) else None, account)


def _pairwise(path: Path, name: str, spec: dict, eval_type: str | None, account: list[str]) -> Imported:
    """A spec that compares two completions as radar's pairwise judge, asked only which is better overall (its
    question names no criterion): the first completion shown as A, the second as B; its choices' scores say which
    word means which (1: the first is better, 0: the second, 0.5: a tie). It judges no criterion of its own, so the
    pairs are steered on the bundled helpsteer2 rubric, and the config's verifier scores them pointwise."""
    scale = _scale(path, spec)
    reads = _reading(path, name, spec, eval_type)
    word = {v: t for t, v in zip(scale.tokens, scale.values)}
    if not {1.0, 0.0} <= set(word) or set(word) - {1.0, 0.0, 0.5} or len(word) != len(scale.tokens):
        raise InputError(
            path,
            f"spec '{name}' compares two completions; radar reads its choices as the first better (score 1), the "
            "second (0) and a tie (0.5): give choice_scores those values",
        )
    (first_in, first), (second_in, second) = ((str(k), str(v)) for k, v in spec["input_outputs"].items())
    names = {first_in: "prompt", second_in: "prompt", first: "response_a", second: "response_b"}
    prompt = spec.get("prompt")
    if not isinstance(prompt, str) and not (
        isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], dict) and prompt[0].get("role")
        == "user" and isinstance(prompt[0].get("content"), str)
    ):  # fmt: skip
        raise InputError(path, "prompt: radar's pairwise judge is one user message; the spec's is not")
    text = prompt if isinstance(prompt, str) else prompt[0]["content"]
    unknown = sorted(_fields(prompt) - set(names))
    if unknown:
        shown = ", ".join("{" + u + "}" for u in unknown)
        raise InputError(path, f"spec '{name}' formats {shown}, which each sample supplies (samples_jsonl); "
                         "radar's pairs hold a task and two responses only")  # fmt: skip
    template = shared.bind(text + _answer_words(path, eval_type, scale), names, path, "prompt", style="format")
    words = {"A": word[1.0], "B": word[0.0], **({"tie": word[0.5]} if 0.5 in word else {})}
    pairwise = {
        "template": template,
        "answer": _answer(scale, reads).model_dump(mode="json", exclude_none=True),
        "asked": "overall",
        "words": words,
        "ties": 0.5 in word,
    }
    account = [
        *account,
        f"a pairwise judge: {{{first}}} is shown as response A, {{{second}}} as B; both instructions "
        f"({{{first_in}}}, {{{second_in}}}) are the pair's task (radar compares two responses to one task)",
        ", ".join(
            f"{t} = {'the first better' if v == 1 else 'the second better' if v == 0 else 'a tie'}"
            for t, v in zip(scale.tokens, scale.values)
        ),  # fmt: skip
        "its question names no criterion: each pair is asked only which is better overall (pairwise.asked: "
        "overall); the report says which steers move that preference and its position bias",
        "no criteria in the file: the pairs are steered on the bundled helpsteer2 rubric's criteria, and the "
        "config's verifier (radar's default judge) scores them pointwise",
        (
            f"eval_type {eval_type}: openai/evals' own answer words for it are appended to the spec's prompt"
            if eval_type is not None
            else "the spec's prompt is the judge's as written"
        )
        + "; the choice "
        + ("is read from the line after the reasoning" if reads.startswith("cot_classify") else "is the whole answer"),
        "tasks: an eval's samples are a separate file (samples_jsonl): the config uses the bundled helpsteer2 tasks",
    ]
    rubric = load_benchmark("helpsteer2").rubric
    return Imported("openai-evals", path, rubric, None, (), {}, account, pairwise=pairwise)


def write(path: Path, imported: Imported, rub: Rubric, account: list[str]) -> str:
    if imported.pairwise is not None:
        raise InputError(path, "holds a pairwise judge and no criteria: there is no rubric in it to write back")
    data = shared.load_yaml(path)
    old = imported.rubric
    evals = {str(k): v for k, v in data.items() if isinstance(v, dict) and "class" in v}
    if not evals:  # a spec with its own args.criteria
        spec = data if "prompt" in data else next(v for v in data.values() if isinstance(v, dict) and "prompt" in v)
        shared.write_named(spec["args"]["criteria"], old, rub)
        return shared.dump_yaml(data, path)
    if set(rub.ids) != set(old.ids):
        raise InputError(
            path,
            "each criterion is an eval of its own in this file: add or drop an eval in the registry by hand; "
            "radar's export rewrites the criteria's texts",
        )
    _, named, spec_args = _criteria_evals(path, evals)
    texts, _ = _texts(path, named, spec_args)
    for cid, (eval_name, _) in texts.items():
        if not shared.unchanged(old, rub, cid):
            args, text = spec_args[eval_name], shared.block(rub.criterion(cid).description)
            if isinstance(args["criteria"], dict):
                ((key, _),) = args["criteria"].items()
                args["criteria"][key] = text
            else:
                args["criteria"] = text
    return shared.dump_yaml(data, path)
