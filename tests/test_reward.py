"""A reward model audited with the probes' own steers (issue 48, stats/reward.py): each criterion's steer effect on
its reward (its sensitivity profile), the criteria it does not see, its agreement with the judge's scores."""

import json

import numpy as np
import pytest

from radar_local.stats.reward import RewardProfile, reward_profile
from tests.conftest import planted_config

TASKS = [{"id": f"t{i}", "prompt": f"Customer request {i}."} for i in range(5)]
WEIGHTS = {"Helpfulness / Understanding": 1.0, "Correctness / Completeness": 0.5}


def test_a_hand_computed_profile():
    """Two tasks, one variant: criterion a's reward differences 2 and 4 (sd units of the rewards' sd), b's 0."""
    rows = [
        ("t0", "a", "+", 0, 3.0), ("t0", "a", "-", 0, 1.0), ("t1", "a", "+", 0, 4.0), ("t1", "a", "-", 0, 0.0),
        ("t0", "b", "+", 0, 2.0), ("t0", "b", "-", 0, 2.0), ("t1", "b", "+", 0, 2.0), ("t1", "b", "-", 0, 2.0),
    ]  # fmt: skip
    profile = reward_profile("rm", ["a", "b"], rows)
    sd = float(np.std([3, 1, 4, 0, 2, 2, 2, 2], ddof=1))
    assert profile.sd == pytest.approx(sd)
    assert [c.effect for c in profile.criteria] == pytest.approx([3 / sd, 0.0])
    # one pair per task: no within-task spread, no interval, nothing claimed
    assert [c.verdict for c in profile.criteria] == ["open", "open"] and profile.criteria[0].band is None


def reward_config(**reward_options) -> dict:
    reward = {"engine": "testing", "model": "rm", "options": {"noise": 0.1, **reward_options}}
    return planted_config(tasks=TASKS, n=5, bootstrap=300, options={"noise": 0.5}, reward=reward)


def test_a_planted_reward_models_profile_and_its_blind_spots(tmp_path):
    """The planted reward model weighs helpfulness 1 and correctness 0.5 and nothing else: both steers move it
    (helpfulness about twice as far), the other three criteria are confirmed unseen; it agrees with the judge's
    helpfulness scores; the section is in the report, stats.json reads back, and a rerun asks nothing again."""
    from radar_local import load_run
    from radar_local.auditing import run_audit
    from radar_local.report.markdown import audit_markdown

    result = run_audit(reward_config(reward=WEIGHTS), tmp_path / "run", progress=False)
    profile = {c.criterion: c for c in result.measured(RewardProfile).criteria}
    assert {c: x.verdict for c, x in profile.items()} == {
        "helpfulness": "moves", "correctness": "moves", "coherence": "blind", "complexity": "blind",
        "verbosity": "blind",
    }  # fmt: skip
    assert profile["helpfulness"].effect == pytest.approx(2 * profile["correctness"].effect, rel=0.15)
    assert profile["helpfulness"].agreement > 0.5
    report = audit_markdown(result)
    assert "## Reward model" in report and "it does not see coherence, complexity, verbosity" in report
    assert load_run(tmp_path / "run").result() == result
    again = run_audit(reward_config(reward=WEIGHTS), tmp_path / "run", progress=False)
    stage = json.loads((tmp_path / "run" / "run.json").read_text())["stages"]["reward"]
    assert (
        stage["requests"] == 5 * 5 * 2 * 5
        and stage.get("calls", 0) == 0
        and again.measured(RewardProfile) == result.measured(RewardProfile)
    )


def test_a_reward_model_that_sees_nothing_claims_no_effect(tmp_path):
    from radar_local.auditing import run_audit

    result = run_audit(reward_config(), tmp_path / "run", progress=False)
    assert not any(c.verdict == "moves" for c in result.measured(RewardProfile).criteria)


def test_a_reward_model_that_writes_text_is_one_line(tmp_path):
    from tests.conftest import radar_run

    config = planted_config(tasks=TASKS, reward={"engine": "transformers", "model": "smollm2-135m"})
    (tmp_path / "config.yaml").write_text(json.dumps(config))
    res = radar_run("audit", tmp_path / "config.yaml", "--out", tmp_path / "run")
    assert (
        res.returncode == 2
        and "a reward model runs on vllm or transformers with options: {runner: reward}" in res.stderr
    )


def test_a_causal_lm_as_a_vllm_reward_model_is_refused_before_any_model_loads(tmp_path):
    """Issue 60 item 2: vLLM's pooling runner gives a causal LM a reward head of uninitialised memory (rewards of a
    converted SmolLM2: -4.9e-43, inf, 2.3e36 in three fresh runs; the docs blamed another engine running beside it).
    A checkpoint without a *ForSequenceClassification head is refused on vllm, naming what to do."""
    from radar_local.hardware import reward_head_problem
    from tests.conftest import radar_run

    causal, head = tmp_path / "causal", tmp_path / "head"
    for folder, architecture in ((causal, "LlamaForCausalLM"), (head, "LlamaForSequenceClassification")):
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps({"architectures": [architecture]}))
    assert reward_head_problem(head) is None
    assert "has no reward head (architectures: LlamaForCausalLM)" in reward_head_problem(causal)
    reward = {"engine": "vllm", "model": str(causal), "options": {"runner": "reward"}}
    (tmp_path / "config.yaml").write_text(json.dumps(planted_config(tasks=TASKS, reward=reward)))
    res = radar_run("audit", tmp_path / "config.yaml", "--out", tmp_path / "run")
    assert res.returncode == 2 and "reward: " in res.stderr and "transformers" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr and not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("band", "verdict"),
    [
        ((-0.2, 0.1), "open"),  # at the margin: not inside it
        ((-0.19999999999999998, 0.19999999999999998), "blind"),  # the floats just inside
        ((0.0, 1.0), "open"),  # touching 0: 0 is not excluded
        ((5e-324, 1.0), "moves"),  # the smallest float above 0
        ((-1.0, -5e-324), "moves"),
        (None, "open"),
    ],
)
def test_the_verdicts_compare_exactly_at_zero_and_the_margin(band, verdict):
    from radar_local.stats.reward import MARGIN, _verdict

    assert _verdict(band, MARGIN) == verdict


def test_a_reward_that_never_varies_claims_nothing_and_the_report_says_so():
    """A constant reward (a head that sees nothing of the responses) has no unit: every
    effect undefined, every verdict open, and the report's line says the reward carries nothing."""
    from types import SimpleNamespace

    from radar_local.report.bias_text import reward_line

    rows = [(f"t{t}", c, d, 0, 0.0) for t in range(3) for c in ("a", "b") for d in "+-"]
    profile = reward_profile("rm", ["a", "b"], rows)
    assert profile.sd == 0 and all(c.effect is None and c.verdict == "open" for c in profile.criteria)
    result = SimpleNamespace(measured={RewardProfile: profile}.get)  # the one block reward_line reads
    assert "gave the same reward to all 12 probes" in reward_line(result)


@pytest.mark.thorough  # a grid's two cells and pages: `make test` runs it; the profile's statistics are checked above
def test_a_grid_scores_each_generators_probes_once_and_sets_the_reward_beside_each_judge(tmp_path):
    """`reward:` in a grid: the reward model scores each generator's probes once (not once per judge); grid.md's
    "Reward model per cell" row of every cell names what moves it and what it does not see, and its Spearman
    with that cell's judge (the sharp judge agrees more than the noisy one)."""
    from radar_local.config import GridConfig
    from radar_local.grid import run_grid

    reward = {"engine": "testing", "model": "rm", "options": {"noise": 0.1, "reward": WEIGHTS}}
    grid = GridConfig.model_validate(
        {
            "rubric": "helpsteer2",
            "tasks": TASKS,
            "n": 3,
            "bootstrap": 100,
            "generators": [{"engine": "testing", "model": "planted"}],
            "verifiers": [
                {"engine": "testing", "model": "sharp", "options": {"noise": 0.3}},
                {"engine": "testing", "model": "noisy", "options": {"noise": 2.0}},
            ],
            "reward": reward,
        }
    )
    summary = run_grid(grid, tmp_path / "grid", base=tmp_path, progress=False, reports=False)
    rows = {row["verifier"]: row for row in summary["reward"]}
    assert set(rows) == {"sharp", "noisy"} and all(
        set(r["moves"]) == {"helpfulness", "correctness"} for r in rows.values()
    )
    assert rows["sharp"]["agreement_with_judge"] > rows["noisy"]["agreement_with_judge"]
    run = json.loads((tmp_path / "grid" / "planted" / "run.json").read_text())
    assert run["stages"]["reward"]["calls"] == run["stages"]["reward"]["requests"] == 5 * 5 * 2 * 3
    md = (tmp_path / "grid" / "grid.md").read_text()
    assert "Reward model per cell" in md and "helpfulness +" in md
    assert "in reward sd; family-wise 95%)" in md and "{level}" not in md  # the grid's level, written in


def test_the_transformers_reward_head_reads_each_rows_last_token(tmp_path):
    """Issue 60 item 8: a tokenizer without a pad token was padded with eos and the checkpoint's pad id overwritten
    with it, so the head read the rightmost token that is not eos: one early where a turn ends with eos (as
    Llama-3.1's <|eot_id|>). On a tiny random Llama sequence classifier whose template ends each turn with eos, each
    batched reward equals the same conversation's head output at its last token, one at a time."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForSequenceClassification, PreTrainedTokenizerFast

    from radar_local.engines.hf import TransformersEngine

    words = ["<eos>", "<pad>", "user", "assistant", ":", "a", "short", "reply", "longer", "one", "here", "hello"]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>")  # no pad token
    fast.chat_template = "{% for m in messages %}{{ m.role }} : {{ m.content }} <eos> {% endfor %}"
    config = LlamaConfig(vocab_size=len(words), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=4, num_labels=1, pad_token_id=1,
                         eos_token_id=0)  # fmt: skip
    torch.manual_seed(1)
    LlamaForSequenceClassification(config).save_pretrained(tmp_path / "rm")
    fast.save_pretrained(tmp_path / "rm")
    engine = TransformersEngine(str(tmp_path / "rm"), TransformersEngine.Options(runner="reward", device="cpu"))
    conversations = [
        [{"role": "user", "content": "hello"}, {"role": "assistant", "content": text}]
        for text in ("a short reply", "a longer one here a longer one here", "reply")
    ]
    batched = engine.reward(conversations)
    for conversation, reward in zip(conversations, batched):
        ids = torch.tensor([fast.encode(fast.apply_chat_template(conversation, tokenize=False))])
        with torch.inference_mode():
            hidden = engine.hf.model(input_ids=ids).last_hidden_state
            alone = float(engine.hf.score(hidden[:, -1])[0, 0])
        assert ids[0, -1] == fast.eos_token_id and reward == pytest.approx(alone, abs=1e-5)
    assert engine.hf.config.pad_token_id == 1  # the checkpoint's own, kept
