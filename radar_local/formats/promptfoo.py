"""promptfoo's `promptfooconfig.yaml`: its `llm-rubric` or `g-eval` assertions are the criteria, its
`rubricPrompt` the judge's template, `tests[].vars` rendered into the first prompt the tasks.

The shapes follow promptfoo's documentation (promptfoo.dev/docs/configuration/expected-outputs/model-graded/
llm-rubric and .../g-eval) and its sources (src/prompts/grading.ts: DEFAULT_GRADING_PROMPT answers
{reason, pass, score} with a score of 0.0-1.0; GEVAL_PROMPT_EVALUATE answers {score, reason} with a score
of 0-maxScore, 10, which promptfoo divides by 10). An assertion passes at `threshold` on promptfoo's 0-1
score (g-eval's default 0.7); without one, llm-rubric passes on the judge's own `pass`. The import keeps
the scores the judge writes (0.0-1.0 in steps of 0.1; g-eval's integer 0-10) and records the threshold.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from radar_local.answer import JsonShape
from radar_local.errors import InputError
from radar_local.formats import shared
from radar_local.formats.promptfoo_items import Entry, placed, rewrite
from radar_local.formats.promptfoo_tasks import CODE, Files, as_dict, first_prompt, task_of, tasks_of, tests_inline
from radar_local.formats.shared import Imported
from radar_local.rubric import Criterion, Rubric, Task
from radar_local.scale import Scale

TYPES = ("llm-rubric", "g-eval")
# promptfoo's other model-graded assertions: a model judges them, but not on a criterion radar can steer
OTHER_JUDGED = {
    "factuality": "grades against a reference answer",
    "model-graded-closedqa": "a Y/N check with OpenAI's closedqa prompt, which radar does not import: write it as an "
    "llm-rubric",
    "select-best": "picks the best of several outputs: a comparison, not a score",
    "answer-relevance": "a RAG metric on promptfoo's fixed question",
    "context-faithfulness": "a RAG metric on promptfoo's fixed question",
    "context-relevance": "a RAG metric on promptfoo's fixed question",
    "context-recall": "a RAG metric on promptfoo's fixed question",
}
ZERO_ONE = Scale(levels={"0": 0, **{f"0.{k}": k / 10 for k in range(1, 10)}, "1": 1})  # llm-rubric's score
G_EVAL = Scale(min=0, max=10)  # G-Eval's maxScore
G_EVAL_THRESHOLD = 0.7

# radar's words after promptfoo's default grading prompts (not a copy); the criterion is the rubric text.
LLM_RUBRIC_SYSTEM = (
    "You grade an output against a rubric written by a user. The output passes when what the rubric states "
    "is true of it. Answer with a JSON object: a short reason, then a score from 0.0 (the rubric is not met "
    "at all) to 1.0 (fully met)."
)
LLM_RUBRIC_USER = "<Output>\n{{ output }}\n</Output>\n<Rubric>\n{{ rubric }}\n</Rubric>"
G_EVAL_USER = (
    "Rate the reply to the prompt below on one metric.\n\nEvaluation criteria:\n{{ criteria }}\n\n"
    'Return a JSON object with a "score" from 0 to {{ maxScore }} ({{ maxScore }}: the reply follows the '
    'criteria fully; 0: it does not), then a brief "reason" that does not quote the score.\n\n'
    "Prompt:\n{{ input }}\n\nReply:\n{{ output }}"
)
NAMES = {
    "llm-rubric": {"output": "response", "rubric": "criterion.description", "prompt": "prompt"},
    "g-eval": {
        "output": "response",
        "criteria": "criterion.description",
        "input": "prompt",
        "maxScore": "criterion.scale.max",
    },
}


def _inline(files: Files, value: Any) -> Any:
    """A `file://` value as the file's text (promptfoo loads it), any other value as it is."""
    return files.text(value).strip() if isinstance(value, str) and value.startswith("file://") else value


def _entries(files: Files, data: dict) -> list[Entry]:
    path = files.source
    default = as_dict(data.get("defaultTest"))
    fallback = as_dict(default.get("options")).get("rubricPrompt")
    owners = [(default, fallback)]
    owners += [
        (t, as_dict(t.get("options")).get("rubricPrompt", fallback)) for t in tests_inline(data) if isinstance(t, dict)
    ]
    found = []
    for owner, owner_prompt in owners:  # a tests file gives tasks only
        for asserts, i, a in _placed(data, owner.get("assert")):
            if a.get("type") not in TYPES:
                continue
            value = a.get("value")
            listed = a["type"] == "g-eval" and isinstance(value, list)
            texts: list[tuple[int | None, Any]] = list(enumerate(value or [])) if listed else [(None, value)]
            texts = [(sub, _inline(files, text)) for sub, text in texts]
            if not texts:
                raise InputError(path, "a g-eval assertion lists no criteria in its 'value'; name what it scores")
            for sub, text in texts:
                if not isinstance(text, str) or not text.strip():
                    raise InputError(
                        path,
                        f"a {a['type']} assertion's 'value' must be the rubric text"
                        + (" (it has none: a rubric written into the rubricPrompt is not one radar can audit)"
                           if text is None else ""),
                    )  # fmt: skip
                found.append(Entry(asserts, i, sub, text, a, a.get("rubricPrompt", owner_prompt), owner))
    return found


def _scoped(files: Files, data: dict) -> tuple[list[Entry], list[Entry]]:
    """The entries a RADAR criterion can stand for (in defaultTest, or the same text in every test: scored on
    every task as promptfoo scores it) and those written for some tests only, which radar leaves to promptfoo
    rather than widen their scope to every task."""
    found = _entries(files, data)
    tests = [t for t in tests_inline(data) if isinstance(t, dict)]
    try:
        first = first_prompt(files, data)[0]
    except InputError:  # said where the tasks are read
        first = None
    task = {id(t): task_of(first, t) or id(t) for t in tests}  # tests that ask one prompt: one task
    owners: dict[str, set] = {}
    for e in found:
        owners.setdefault(e.text, set()).add(task.get(id(e.owner), id(e.owner)))
    everywhere = set(task.values())
    default = id(as_dict(data.get("defaultTest"))) if isinstance(data.get("defaultTest"), dict) else None

    def global_(text: str) -> bool:
        return default in owners[text] or (bool(everywhere) and everywhere <= owners[text])

    return [e for e in found if global_(e.text)], [e for e in found if not global_(e.text)]


def _ids(found: list[Entry]) -> dict[str, str]:
    """text -> criterion id: an assertion's `metric` (the name promptfoo reports), else the text's first words."""
    taken: set[str] = set()
    ids: dict[str, str] = {}
    for e in found:
        if e.text not in ids:
            metric = e.assertion.get("metric") if e.sub is None else None
            ids[e.text] = shared.criterion_id(metric if isinstance(metric, str) and metric else e.text, taken)
    return ids


def _rubric_prompt(path: Path, found: list[Entry]) -> Any:
    prompts = {json.dumps(e.rubric_prompt, default=str) for e in found}
    if len(prompts) > 1:
        raise InputError(path, "assertions run with different rubricPrompts; radar audits one judge prompt at a time")
    return json.loads(prompts.pop())


def _messages(files: Files, prompt: Any) -> list[dict]:
    path = files.source
    if isinstance(prompt, str) and prompt.startswith("file://"):
        prompt = files.text(prompt)
    if isinstance(prompt, str) and prompt.lstrip().startswith("["):
        try:
            prompt = json.loads(prompt)
        except json.JSONDecodeError:
            raise InputError(path, "rubricPrompt looks like a JSON chat but does not parse") from None
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    roles = (
        [m.get("role") for m in prompt] if isinstance(prompt, list) and all(isinstance(m, dict) for m in prompt) else []
    )
    if roles not in (["user"], ["system", "user"]) or not all(isinstance(m.get("content"), str) for m in prompt):
        raise InputError(path, "rubricPrompt: radar maps a user message, optionally after one system message")
    return prompt


def _config(path: Path, loaded: Any) -> dict:
    """The config; a standalone assertions file (a list, run by `promptfoo eval --assertions` on every output) as
    the defaultTest that applies it to every task. The list stays the loaded object, so an export edits it."""
    if isinstance(loaded, list) and loaded and all(isinstance(a, dict) and "type" in a for a in loaded):
        return {"defaultTest": {"assert": loaded}}
    return shared.mapping(path, loaded, "a promptfooconfig, or a list of assertions")


def _placed(data: dict, asserts: Any, depth: int = 0) -> list[tuple[list, int, dict]]:
    """Each assertion of an assert list with its place (the list, its index there), as promptfoo runs them: a
    `$ref: '#/...'` as the part of the config it points to (promptfoo dereferences the config on load), an
    `assert-set` as the assertions it groups."""
    if not isinstance(asserts, list) or depth > 8:  # a set of sets of sets...: promptfoo's own nesting is shallow
        return []
    out = []
    for i, a in enumerate(asserts):
        a = _dereferenced(data, a)
        if not isinstance(a, dict):
            continue
        if a.get("type") == "assert-set":
            out += _placed(data, a.get("assert"), depth + 1)
        else:
            out.append((asserts, i, a))
    return out


def _dereferenced(data: dict, value: Any) -> Any:
    """A `{$ref: '#/a/b'}` as what the JSON pointer names in the config; a reference elsewhere stays itself (an
    assertion of no type radar judges)."""
    ref = value.get("$ref") if isinstance(value, dict) else None
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return value
    found: Any = data
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(found, list):
            found = found[int(part)] if part.isdigit() and int(part) < len(found) else None
        else:
            found = found.get(part) if isinstance(found, dict) else None
    return found


def _asserts(data: dict) -> list[dict]:
    """Every assertion written in the config (defaultTest's and the tests')."""
    owners = [as_dict(data.get("defaultTest")), *(t for t in tests_inline(data) if isinstance(t, dict))]
    return [a for t in owners for _, _, a in _placed(data, t.get("assert"))]


def _others(data: dict) -> str:
    """promptfoo's other model-graded assertions in the config, counted with what each does."""
    counts: dict[str, int] = {}
    for a in _asserts(data):
        if a.get("type") in OTHER_JUDGED:
            counts[a["type"]] = counts.get(a["type"], 0) + 1
    return "; ".join(f"{kind} x{n} ({OTHER_JUDGED[kind]})" for kind, n in counts.items())


def _generated_tests(data: dict) -> str | None:
    """`tests` named as a function promptfoo runs to make them (`path: file://x.ts:fn`, or the reference alone)."""
    tests = data.get("tests")
    ref = tests.get("path") if isinstance(tests, dict) else tests
    if isinstance(ref, str) and Path(ref.removeprefix("file://").split(":", 1)[0]).suffix.lower() in CODE:
        return ref.removeprefix("file://")
    return None


def _judged(files: Files, data: dict, path: Path) -> tuple[list[Entry], list[Entry], str, list[str]]:
    """The rubric's entries (scored on every task), the tests' own (a templated one once for each test), the kind
    of assertion audited (where the config holds both, the one with more criteria), and the account's line on the
    other."""
    found, per_test = _scoped(files, data)
    templated = [e for e in found if shared.variables(e.text)]  # one text a test: each task's own item
    found = [e for e in found if not shared.variables(e.text)]
    inline = [t for t in tests_inline(data) if isinstance(t, dict)]
    if templated and not inline:
        e, var = templated[0], sorted(shared.variables(templated[0].text))[0]
        raise InputError(
            path,
            f"the {e.assertion['type']} value '{e.text[:40]}' uses the test variable '{var}', and no test is written "
            "in the config: radar renders a rubric with a test's vars for the tests it holds",
        )
    per_test += [replace(e, owner=t) for e in templated for t in inline]
    kinds = {e.assertion["type"] for e in found + per_test}
    if not kinds:
        others, generated = _others(data), _generated_tests(data)
        raise InputError(
            path,
            "has no llm-rubric or g-eval assertion: nothing a judge scores on a rubric"
            + (f"; its model-graded assertions: {others}" if others else "")
            + (f"; its tests come from {generated}, code promptfoo runs and radar does not" if generated else ""),
        )
    mixed: list[str] = []
    if len(kinds) > 1:  # two judges: audit the one with more criteria (llm-rubric on a tie), name the other's
        every = found + per_test
        texts = {k: list(dict.fromkeys(e.text for e in every if e.assertion["type"] == k)) for k in sorted(kinds)}
        kind = max(sorted(kinds, key=lambda k: k != "llm-rubric"), key=lambda k: len(texts[k]))
        other = next(k for k in kinds if k != kind)
        found = [e for e in found if e.assertion["type"] == kind]
        per_test = [e for e in per_test if e.assertion["type"] == kind]
        mixed.append(
            f"left to promptfoo: the {len(texts[other])} {other} criteria ({', '.join(t[:30] for t in texts[other])}): "
            f"another judge (its own prompt and scale); radar audits the {kind} judge, which scores "
            + ("more criteria" if len(texts[kind]) > len(texts[other]) else "as many (llm-rubric on a tie)")
        )
    else:
        (kind,) = kinds
    return found, per_test, kind, mixed


def read(path: Path, root: Path | None = None) -> Imported:
    """`root`: the folder `file://` references may read from (default the config's own)."""
    files = Files(path, root)
    loaded = shared.load_yaml(path)
    data = _config(path, loaded)
    found, per_test, kind, mixed = _judged(files, data, path)
    ids = _ids(found)
    scale = ZERO_ONE if kind == "llm-rubric" else G_EVAL
    criteria: list[Criterion] = []
    thresholds: dict[str, float] = {}
    lists: dict[int, tuple[float, list[str]]] = {}  # a g-eval list's assertion -> its threshold and criteria
    account: list[str] = []
    for e in found:
        text, a = e.text, e.assertion
        cid = ids[text]
        threshold = a.get("threshold", G_EVAL_THRESHOLD if kind == "g-eval" else None)
        if threshold is not None and e.sub is not None:  # promptfoo passes a list on the mean of its scores
            listed = lists.setdefault(id(a), (float(threshold) * float(scale.high), []))[1]
            listed += [cid] if cid not in listed else []
        elif threshold is not None and cid not in thresholds:
            thresholds[cid] = float(threshold) * float(scale.high)
        if any(c.id == cid for c in criteria):
            continue
        criteria.append(
            shared.criterion(path, f"criterion {cid}", id=cid, label=shared.label_of(cid), description=text)
        )
    name = str(data.get("description") or path.stem)
    rub = (
        shared.rubric(path, name, name, criteria, scale)
        if criteria or not per_test
        else Rubric(id=shared.criterion_id(name, set()), name=name, scale=scale)  # every rubric is a test's own
    )
    prompt = _rubric_prompt(path, found + per_test)
    if prompt is None:
        messages = [{"role": "user", "content": LLM_RUBRIC_USER if kind == "llm-rubric" else G_EVAL_USER}]
        if kind == "llm-rubric":
            messages.insert(0, {"role": "system", "content": LLM_RUBRIC_SYSTEM})
        account.append(f"judge prompt: radar's words after promptfoo's default {kind} prompt (no rubricPrompt)")
    else:
        messages = _messages(files, prompt)
        account.append("judge prompt: the config's rubricPrompt, its variables bound to radar's")
    bound = [shared.bind(m["content"], NAMES[kind], path, "rubricPrompt") for m in messages]
    if kind == "llm-rubric":
        answer = JsonShape(before={"reason": 300}, score="score", after={})
        account.append(
            "answer: {reason, score}; promptfoo's `pass` (the threshold's or the judge's verdict) is not asked"
        )
    else:
        answer = JsonShape(before={}, score="score", after={"reason": 300})
        account.append(
            "g-eval's evaluation steps (a first call per criterion) are not made: the judge sees the criteria alone"
        )
    jud = shared.judge(path, template=bound[-1], system=bound[0] if len(bound) == 2 else None, answer=answer)
    for cid, t in thresholds.items():
        account.append(
            f"threshold: {cid} passes at {t:g} on the judge's {scale.name} scale (recorded; the audit reads the scores)"
        )
    for t, listed in lists.values():
        account.append(
            f"threshold: the g-eval list {', '.join(listed)} passes when the mean of its scores reaches {t:g} on the "
            f"judge's {scale.name} scale, as promptfoo's g-eval does (src/assertions/geval.ts)"
            + ("" if not (within := [c for c in listed if c not in thresholds]) else
               f"; {', '.join(within)} pass only within it" if len(within) < len(listed) else
               "; no criterion passes alone")
            + " (recorded; the audit reads the scores)"
        )  # fmt: skip
    unjudged = sum(1 for a in _asserts(data) if a.get("type") not in (*TYPES, *OTHER_JUDGED))
    if others := _others(data):
        account.append(f"left to promptfoo: its other model-graded assertions, {others}")
    if unjudged:
        account.append(f"left to promptfoo: {unjudged} assertion(s) of other types (not judged on a rubric)")
    tasks, notes, owners = tasks_of(files, data)
    tasks, left = _with_items(path, tasks, owners, per_test)
    items = sum(len(t.items) for t in tasks)
    if per_test and not items:
        first = per_test[0]
        raise InputError(
            path,
            f"every {first.assertion['type']} rubric it holds is a test's own ('{first.text[:40]}'), and no test "
            "names a prompt radar can render to audit it on (tests need vars that prompts[0] shows, or one var)",
        )
    if items and not criteria:  # every rubric is a test's own: a task that holds none has nothing to audit
        bare = sum(not t.items for t in tasks)
        tasks = tuple(t for t in tasks if t.items)
        notes += [f"{bare} task(s) whose tests hold no rubric left out: nothing to grade them on"] if bare else []
    if items:
        account.append(
            f"per-test rubrics: {items} item(s) over {sum(bool(t.items) for t in tasks)} task(s), each graded on its "
            "own task's probes (a templated rubric rendered with its test's vars; docs/per-prompt.md)"
            + (f"; {left} left to promptfoo (their test names no task radar renders)" if left else "")
        )
    account += mixed + notes
    if isinstance(data.get("tests"), str):
        account.append(f"tests from {data['tests']}: their vars are the tasks; assertions there are not read")
    if tasks:
        rendered = "prompts[0] rendered with each test's vars" if data.get("prompts") else "each test's one var"
        if not any(as_dict(t.get("vars")) for t in tests_inline(data) if isinstance(t, dict)):
            rendered = "prompts[0] as written, which every test asks"
        account.append(f"tasks: {len(tasks)}, {rendered}")
    else:
        account.append("tasks: no test has vars: the config uses the bundled helpsteer2 tasks")
    if isinstance(loaded, list):
        account.append("a standalone assertions file (promptfoo eval --assertions): each applies to every output")
    account += [f"read {name} (a file:// reference)" for name in files.read]
    return Imported("promptfoo", path, rub, jud, tasks, thresholds, account, root)


def _with_items(
    path: Path, tasks: tuple[Task, ...], owners: dict[int, str], entries: list[Entry]
) -> tuple[tuple[Task, ...], int]:
    """The tasks with the rubrics their tests hold as their own items (promptfoo_items.placed), and how many could
    not be placed."""
    found, left = placed(path, owners, entries)
    return tuple(t.model_copy(update={"items": tuple(i for i, _ in found.get(t.id, ()))}) for t in tasks), left


def write_items(path: Path, imported: Imported, tasks: tuple[Task, ...]) -> tuple[str, list[str]]:
    """The config's new text with each task's items (the import's config.yaml, edited) written into the tests that
    hold them (promptfoo_items.rewrite), and the account; the file byte for byte where no task's items changed."""
    loaded = shared.load_yaml(path)
    data = _config(path, loaded)
    files = Files(path, imported.root)
    _, per_test, kind, _ = _judged(files, data, path)
    _, _, owners = tasks_of(files, data)
    found, _ = placed(path, owners, per_test)
    tests = [t for t in tests_inline(data) if isinstance(t, dict)]
    account = rewrite(path, found, imported.tasks, tasks, tests, owners, kind)
    if len(account) == 1:  # every task kept
        return path.read_text(encoding="utf-8"), account
    return shared.dump_yaml(loaded if isinstance(loaded, list) else data, path), account


def write(path: Path, imported: Imported, rub: Rubric, account: list[str]) -> str:
    """The config with `rub`'s criteria: unchanged assertions untouched, rewritten ones given their new
    text (and `metric: <id>` so the criterion keeps its id; a g-eval list element keeps its place in the list,
    which has no name for it), dropped ones removed, new ones appended to defaultTest.assert with the first
    criterion's assertion as their model."""
    loaded = shared.load_yaml(path)
    data = _config(path, loaded)
    found, _ = _scoped(Files(path, imported.root), data)  # a test's own rubric is left as it is
    ids = _ids(found)
    old = imported.rubric
    model = {k: v for k, v in found[0].assertion.items() if k in ("type", "threshold", "weight", "provider")}
    for e in reversed(found):  # from the end, so indices stay valid
        asserts, i, sub, text, a = e.asserts, e.index, e.sub, e.text, e.assertion
        cid = ids[text]
        if cid in rub.ids and shared.unchanged(old, rub, cid):
            continue
        if cid in rub.ids:
            description = rub.criterion(cid).description
            if sub is None:
                a["value"] = shared.block(description)
                a["metric"] = cid
            else:  # in its list: promptfoo averages a g-eval list, which a criterion of its own would change
                a["value"][sub] = shared.block(description)
            continue
        if sub is None:
            del asserts[i]
        else:
            del a["value"][sub]
            if not a["value"]:
                del asserts[i]
    for c in rub.criteria:
        if c.id not in old.ids:
            default = data.setdefault("defaultTest", {})
            default.setdefault("assert", []).append({**model, "metric": c.id, "value": shared.block(c.description)})
            like = ids[found[0].text]
            where = "the list" if isinstance(loaded, list) else "defaultTest.assert"
            account.append(f"{c.id}: a new {model['type']} assertion in {where}, its other keys as {like}'s")
    return shared.dump_yaml(loaded if isinstance(loaded, list) else data, path)
