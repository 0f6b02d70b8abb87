"""A thinking judge (issue 48, radar_local/reasoning.py): it reasons freely up to its budget, then answers under
the verdict's constraint; a reasoning that hits the budget or never ends leaves its verdict unscored, never cut
short into a score."""

import json

import pytest

from radar_local.engines.base import Completion, chat_text
from radar_local.judge import Reasoning
from radar_local.reasoning import OVER_BUDGET, UNENDED, continued, thought_of
from radar_local.stats.drift import Drift
from tests.conftest import planted_config

QWEN = Reasoning(budget=64)


@pytest.mark.parametrize(
    ("completion", "text", "unscored"),
    [
        (Completion("<think> weigh it </think> 4", 9, 6, "stop"), "<think> weigh it </think>", None),
        (Completion("<think> still weighing", 9, 64, "length"), "", OVER_BUDGET),
        (Completion("<think> I give up.", 9, 5, "stop"), "", UNENDED),
        (Completion("", 9, 0, "error"), "", None),  # the engine's failure: its verdict says so
    ],
)
def test_a_reasoning_ends_at_its_marker_or_says_why_not(completion, text, unscored):
    thought = thought_of(completion, QWEN)
    assert (thought.text, thought.unscored, thought.tokens) == (text, unscored, completion.output_tokens)


def test_tags_name_their_end_and_the_others_have_theirs():
    assert Reasoning(budget=32, parser="tags", end="</reasoning>").ends_with == "</reasoning>"
    assert Reasoning(budget=32, parser="deepseek_r1").ends_with == "</think>"
    with pytest.raises(ValueError, match="parser tags names its `end`"):
        Reasoning(budget=32, parser="tags")


def thinking_config(think: int, budget: int, **options) -> dict:
    config = planted_config(n=2, bootstrap=50, options={"noise": 0.5})
    config["verifier"] = {
        **config["verifier"],
        "options": {"noise": 0.5, "think": think, **options},
        "judge": {"reasoning": {"budget": budget}},
    }
    return config


def test_a_thinking_judge_reasons_then_answers_under_its_constraint(tmp_path):
    """30 tokens of planted reasoning under a budget of 64: every verdict scored after its reasoning, kept with
    it; run.json counts the reasoning's tokens apart from the verdicts'; the judge's keys are not the same judge's
    without reasoning (another judge)."""
    from radar_local import load_run
    from radar_local.auditing import run_audit

    run_audit(thinking_config(30, 64), tmp_path / "run", progress=False)
    verdicts = list(load_run(tmp_path / "run").store.scores.values())
    assert verdicts and all(v.score is not None and v.thought.endswith("</think>") for v in verdicts)
    stage = json.loads((tmp_path / "run" / "run.json").read_text())["stages"]["score"]
    # the reasoning's 32 tokens (<think>, 30 steps, </think>): the first request stops at its end (issue 60 item 9),
    # so the answer the planted judge would write after it ("It is a 3.", 4 more) is never written nor counted
    assert stage["reasoning_tokens"] == stage["calls"] * 32 and stage["reasoning_unended"] == 0
    assert stage["parse_rate"] == 1.0
    plain = thinking_config(30, 64)
    del plain["verifier"]["judge"]
    run_audit(plain, tmp_path / "plain", progress=False)
    assert not {v.key for v in verdicts} & set(load_run(tmp_path / "plain").store.scores)


def test_a_reasoning_over_budget_or_unended_leaves_its_verdict_unscored(tmp_path):
    """A third of the reasonings never end: their verdicts are unscored with that reason (no score from a cut
    reasoning), the others scored; with a budget under the reasoning's length, none is scored."""
    from radar_local import load_run
    from radar_local.auditing import run_audit

    run_audit(thinking_config(10, 64, think_unended=0.33), tmp_path / "run", progress=False)
    verdicts = list(load_run(tmp_path / "run").store.scores.values())
    unended = [v for v in verdicts if v.unscored == OVER_BUDGET]
    assert 0.2 < len(unended) / len(verdicts) < 0.45
    assert all(v.score is None and v.thought is None for v in unended)
    assert all(v.score is not None for v in verdicts if v.unscored is None)
    stage = json.loads((tmp_path / "run" / "run.json").read_text())["stages"]["score"]
    run_audit(thinking_config(30, 16), tmp_path / "short", progress=False)  # 30 tokens of reasoning, 16 allowed
    assert {(v.score, v.unscored) for v in load_run(tmp_path / "short").store.scores.values()} == {(None, OVER_BUDGET)}
    assert stage["reasoning_unended"] == len(unended) and stage["parse_rate"] == round(
        1 - len(unended) / len(verdicts), 4
    )


def test_the_reasoning_is_continued_as_written_after_the_generation_prompt(embedded_model):
    """The local engines render the verdict's request as the chat template's generation prompt followed by the
    reasoning as written (the template never rewrites it); the HTTP engine asks vLLM to continue the turn."""
    from transformers import AutoTokenizer

    from radar_local.engines.openai import continuing
    from radar_local.prompts import Prompt

    tokenizer = AutoTokenizer.from_pretrained(embedded_model)
    asked = Prompt([{"role": "user", "content": "Rate it."}], kind="score")
    head = tokenizer.apply_chat_template(list(asked), add_generation_prompt=True, tokenize=False)
    following = continued(asked, "<think> fine </think>")
    assert chat_text(tokenizer, following) == head + "<think> fine </think>"
    assert following.fields == {"kind": "score"} and chat_text(tokenizer, asked) == head
    assert continuing(following) == {"continue_final_message": True, "add_generation_prompt": False}
    assert continuing(asked) == {}


COUPLED = {"Helpfulness / Understanding": {"Correctness / Completeness": 0.8}}


def test_the_ablation_reports_what_thinking_buys_with_paired_intervals(tmp_path):
    """`reasoning: {ablation: true}`: the same probes scored by the judge answering at once after an empty
    reasoning ('<label>-no-reasoning'). Planted: without reasoning a noisy judge (sd 1) whose helpfulness leaks
    into correctness; after reasoning a sharp one without the leak. The report says the self-effects rise and
    the leak falls, with paired intervals; the thinking judge's own verdicts keep their keys."""
    from radar_local import load_run
    from radar_local.auditing import run_audit
    from radar_local.report.markdown import audit_markdown

    config = thinking_config(8, 64, noise=1.0, coupling=COUPLED, reasoned={"noise": 0.2, "coupling": {}})
    config.update(n=6, bootstrap=400)
    run_audit(config, tmp_path / "thinks", progress=False)
    config["verifier"]["judge"]["reasoning"]["ablation"] = True
    result = run_audit(config, tmp_path / "run", progress=False)
    store = load_run(tmp_path / "run").store
    thinking = {k for k, v in store.scores.items() if v.thought is not None}
    assert thinking == set(load_run(tmp_path / "thinks").store.scores)  # the ablation adds verdicts, keeps these
    d = result.measured(Drift)
    assert d is not None and d.before == "planted-no-reasoning" and d.after == "planted"
    assert all(c.self_effect_change_ci[0] > 0 for c in d.criteria), [c.self_effect_change_ci for c in d.criteria]
    assert [(p.source, p.target, p.flag) for p in d.pairs if p.flag] == [("helpfulness", "correctness", "falls")]
    stats = json.loads((tmp_path / "run" / "stats.json").read_text())
    assert (
        stats["measurements"]["thinking"]["pairs"]
        and stats["measurements"]["thinking"]["before"] == "planted-no-reasoning"
    )
    report = audit_markdown(result)
    assert "## What thinking buys" in report and "helpfulness -> correctness falls by" in report
    assert "self-effects that change (interval per criterion): helpfulness rises" in report


def test_without_reasoning_the_judge_answers_after_an_empty_block_of_its_family():
    """The ablation's arm is the judge as its family runs without thinking: Qwen3's enable_thinking=False turn
    (an empty <think> block) for qwen3 and deepseek_r1, a plain answer for a tags judge; its keys are its own."""
    from radar_local.judge import NO_THOUGHT
    from radar_local.specs import ModelSpec

    spec = ModelSpec(engine="testing", model="m", judge={"reasoning": {"budget": 32, "ablation": True}})
    twin = spec.unreasoned()
    assert twin is not None and twin.label == "m-no-reasoning" and not twin.judge.reasoning.think
    assert NO_THOUGHT["qwen3"] == "<think>\n\n</think>\n\n" and NO_THOUGHT["tags"] == ""
    assert twin.output_identity() != spec.output_identity()
    plain = ModelSpec(engine="testing", model="m", judge={"reasoning": {"budget": 32}})
    assert plain.output_identity() == spec.output_identity() and plain.unreasoned() is None
    assert "think" not in json.dumps(spec.output_identity()["judge"]["reasoning"])


def test_plan_counts_the_ablation_as_a_scoring_pass(tmp_path):
    import yaml

    from tests.conftest import invoke

    config = thinking_config(8, 64)
    config["verifier"]["judge"]["reasoning"]["ablation"] = True
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    plan = invoke("audit", tmp_path / "c.yaml", "--plan").output.splitlines()[0]
    probes = 5 * 2 * 2 * 2  # helpsteer2's 5 criteria x 2 tasks x 2 directions x N = 2
    # the thinking judge's calls twice (reasoning, verdict), its ablation's once
    assert f"{probes * 5 * 2} verdicts in {probes * 5 * 3} calls (a thinking judge's calls count twice" in plan, plan
    assert "(2 scoring passes" in plan


# The generation prompts of three templates that open the reasoning block themselves, and Qwen3's hybrid one (its
# enable_thinking=False turn closes an empty block), as their chat_template files write them (the turn markers
# shortened to what the rendering needs).
OPENING = {
    "Qwen3-Thinking-2507": "<|im_start|>assistant\n<think>\n",
    "QwQ-32B": "<|im_start|>assistant\n<think>\n",
    "DeepSeek-R1-Distill": "<｜Assistant｜><think>\n",
}
HYBRID = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}{% endif %}"
)


def tokenizer_with(template: str):
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    fast = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel({"x": 0}, unk_token="x")))
    fast.chat_template = template
    return fast


@pytest.mark.parametrize("family", list(OPENING))
def test_the_ablation_never_opens_a_reasoning_block_twice(family):
    """Issue 60 item 5: where the generation prompt already opens <think>, the no-reasoning arm's empty block
    was appended whole (`<think>\\n<think>\\n\\n</think>\\n\\n`), so 'What thinking buys' compared with a malformed
    prompt; and a thinking judge's reasoning is continued after the one <think> too."""
    from radar_local.judge import NO_THOUGHT

    opening = OPENING[family]
    template = "{% for m in messages %}" + "{{ m.content }}\n{% endfor %}{% if add_generation_prompt %}" + opening
    tokenizer = tokenizer_with(template + "{% endif %}")
    asked = [{"role": "user", "content": "Rate it."}]
    text = chat_text(tokenizer, continued(asked, NO_THOUGHT["qwen3"]))
    assert text.count("<think>") == 1 and text.endswith(opening + "\n</think>\n\n"), text
    assert text.endswith("<think>\n\n</think>\n\n")  # the empty block as the family writes it
    thought = chat_text(tokenizer, continued(asked, "<think>\nfine\n</think>"))
    assert thought.count("<think>") == 1 and thought.endswith(opening + "fine\n</think>")


def test_a_hybrid_judge_without_reasoning_is_asked_in_its_non_thinking_mode():
    """Issue 60 item 5: a Qwen3 hybrid judge without `reasoning` was rendered in thinking mode, its <think> then
    masked by the grammar (neither mode of its model card); an answer asked at once now renders with
    enable_thinking=False, which closes an empty block, and a generation keeps the template's default."""
    tokenizer = tokenizer_with(HYBRID)
    asked = [{"role": "user", "content": "Rate it."}]
    assert chat_text(tokenizer, asked, thinking=False).endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert chat_text(tokenizer, asked).endswith("<|im_start|>assistant\n")


def test_a_template_that_shows_todays_date_renders_the_same_every_day():
    """Issue 60 item 13: a template calling strftime_now (Llama 3.x's "Today Date") rendered a new prompt each day
    under the same content key; radar's rendering shows one pinned date."""
    tokenizer = tokenizer_with("Today {{ strftime_now('%d %b %Y') }}: {{ messages[0].content }}")
    assert chat_text(tokenizer, [{"role": "user", "content": "hi"}]) == "Today 01 Jan 2026: hi"


@pytest.mark.parametrize(("parser", "end", "after"), [("qwen3", None, "\n\n"), ("tags", "</r>", "")])
def test_the_verdict_is_asked_after_the_templates_own_break(parser, end, after):
    """Issue 60 item 4: a server continuing the turn renders it through the template, which writes
    `</think>\\n\\n` before the answer (Qwen3, R1), while the local engines asked the verdict right after
    `</think>`: the same judge asked two prompts. Every engine now asks it after the family's break (the ablation's
    empty block ends with it too), and the stored thought is the reasoning as written."""
    from radar_local.judge import NO_THOUGHT
    from radar_local.reasoning import think_then_answer
    from radar_local.scoring import ScoreFormat

    marker = end or "</think>"

    class Engine:
        asked: list = []

        def generate_stream(self, prompts, sampling, **_):
            yield [(i, [Completion(f"<think> fine {marker} It is 3.", 1, 6, "stop")]) for i in range(len(prompts))]

        def score(self, prompts, **_):
            self.asked += prompts
            return [Completion('{"score": 3}', 1, 1, "stop") for _ in prompts]

    engine, reasoning = Engine(), Reasoning(budget=32, parser=parser, end=end)
    (done,) = think_then_answer(engine, [[{"role": "user", "content": "hi"}]], fmt=ScoreFormat(), reasoning=reasoning,
                                chunk=4, seed=0)  # fmt: skip
    sent = f"<think>\n fine \n{marker}" if parser == "qwen3" else f"<think> fine {marker}"  # as Qwen3's turn writes it
    assert engine.asked[0][-1]["content"] == sent + after and done[0][2].text == f"<think> fine {marker}"
    assert NO_THOUGHT["qwen3"].endswith("</think>" + after if parser == "qwen3" else "</think>\n\n")


# An assistant turn as each family's chat_template writes it (the lines that handle a turn's reasoning, verbatim in
# substance; turn markers shortened): Qwen3 re-writes the reasoning between one new line each side, R1-Distill drops it.
TURNS = {
    "qwen3": (
        "{%- set content = m.content.split('</think>')[-1].lstrip('\\n') %}"
        "{%- set r = m.content.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') %}"
        "<|im_start|>assistant\n<think>\n{{ r.strip('\\n') }}\n</think>\n\n{{ content.lstrip('\\n') }}"
    ),
    "deepseek_r1": (
        "{% set content = m.content %}{% if '</think>' in content %}{% set content = content.split('</think>')[-1] %}"
        "{% endif %}<｜Assistant｜>{{ content }}"
    ),
}


def family_tokenizer(parser: str):
    return tokenizer_with(
        "{% for m in messages %}{% if m.role == 'assistant' %}" + TURNS[parser] + "{% else %}<|user|>{{ m.content }}"
        "{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )


@pytest.mark.parametrize("raw", ["<think>\nfine\n</think>", "<think>\n\nfine\n\n</think>", "<think>fine</think>"])
def test_a_qwen3_reasoning_is_sent_as_its_template_writes_it_so_a_server_continues_it(raw):
    """Issue 60 item 4: a server continuing the turn (transformers' continue_final_message, which vLLM's server
    applies) refuses a reasoning whose new lines differ from the template's; radar sends it as Qwen3's template
    writes it, which every form continues, and the local engines render the same text."""
    from radar_local.judge import AFTER_THOUGHT
    from radar_local.reasoning import as_the_template_writes

    tokenizer, asked = family_tokenizer("qwen3"), [{"role": "user", "content": "Rate it."}]

    def served(content):
        turn = [*asked, {"role": "assistant", "content": content}]
        return tokenizer.apply_chat_template(turn, tokenize=False, continue_final_message=True)

    sent = as_the_template_writes(raw, "qwen3") + AFTER_THOUGHT["qwen3"]
    assert sent == "<think>\nfine\n</think>\n\n" and served(sent).endswith("<|im_start|>assistant\n" + sent)
    if raw != "<think>\nfine\n</think>":
        with pytest.raises(ValueError, match="final message does not appear"):
            served(raw + AFTER_THOUGHT["qwen3"])  # as sent before
    assert chat_text(tokenizer, continued(asked, sent)).endswith("<|im_start|>assistant\n" + sent)


def test_an_r1_distill_template_cannot_continue_a_reasoning_turn():
    """Why a served R1-Distill (or QwQ) thinking judge is refused before its stage: its template drops the turn's
    reasoning, so no reasoning is ever continued (the probe, engines/openai.continuation_problem, finds it)."""
    from radar_local.judge import NO_THOUGHT

    tokenizer, asked = family_tokenizer("deepseek_r1"), [{"role": "user", "content": "Rate it."}]
    for content in ("<think>\nA check.\n</think>\n\n", NO_THOUGHT["deepseek_r1"]):
        with pytest.raises(ValueError, match="final message does not appear"):
            tokenizer.apply_chat_template([*asked, {"role": "assistant", "content": content}], tokenize=False,
                                          continue_final_message=True)  # fmt: skip
