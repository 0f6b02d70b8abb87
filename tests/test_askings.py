"""What an audit asks beside a verifier's verdicts is written once (radar_local/askings.py, issue 62): the audit
asks those twins, the context is sized for them and --plan counts them, from the one list."""

import inspect
import json

from radar_local.askings import askings, labels_of
from radar_local.auditing import run_audit
from radar_local.config import AuditConfig
from radar_local.stats.drift import Drift
from radar_local.stats.halo import Halo
from radar_local.stats.repeats import Repeats
from radar_local.stats.wording import Wording
from tests.conftest import planted_config
from tests.test_judge import JOINT_TEMPLATE

CALM = "Please. " + JOINT_TEMPLATE


def every_twin(**extra) -> AuditConfig:
    """A joint judge with a halo check, a second wording and its verdicts asked three times, thinking first."""
    judge = {
        "template": JOINT_TEMPLATE,
        "calls": "joint",
        "halo_check": 0.5,
        "paraphrases": [CALM],
        "reasoning": {"budget": 32, "ablation": True},
    }
    spec = {"engine": "testing", "model": "planted", "options": {"noise": 0.5, "think": 8}, "judge": judge}
    return AuditConfig.model_validate(
        planted_config(verifier=spec, n=4, consistency={"repeats": 3, "share": 0.5}, **extra)
    )


def test_every_twin_is_one_asking_in_the_order_asked():
    config = every_twin()
    asked = askings(config, config.verifiers[0])
    assert [(a.kind, a.stage, a.judge.label, a.share) for a in asked] == [
        ("halo check", "halo check", "planted-per-criterion", 0.5),
        ("repeat", "repeat 2", "planted-repeat-2", 0.5),
        ("repeat", "repeat 3", "planted-repeat-3", 0.5),
        ("paraphrase", "paraphrase-2", "planted-paraphrase-2", None),
        ("no reasoning", "no reasoning", "planted-no-reasoning", None),
    ]
    assert labels_of(asked, "repeat") == ("planted-repeat-2", "planted-repeat-3")
    assert asked[0].judge.judge.calls == "per-criterion" and asked[-1].judge.judge.reasoning.think is False


def test_a_plain_verifier_asks_nothing_beside_its_verdicts():
    config = AuditConfig.model_validate(planted_config())
    assert askings(config, config.verifiers[0]) == []


def test_the_audit_asks_each_twin_and_its_measurement_reads_it(tmp_path):
    config = every_twin(bootstrap=20)
    result = run_audit(config, tmp_path / "run")
    stages = json.loads((tmp_path / "run" / "run.json").read_text())["stages"]
    for asking in askings(config, config.verifiers[0]):
        assert stages[asking.stage]["calls"] > 0, asking.stage
    assert result.measured(Halo).per_criterion == "planted-per-criterion"
    assert result.measured(Repeats) is not None and result.measured(Wording) is not None
    assert result.measured(Drift) is not None and result.measured(Drift).before == "planted-no-reasoning"


def test_the_hubs_that_ask_size_and_plan_read_the_one_list():
    """No per-twin branch in the audit's stage chain, the context's bounds or --plan's passes (issue 62)."""
    from radar_local import auditing, context, design

    for function in (auditing.rescore, context.verifier_specs, context.request_bounds, design.design_lines):
        source = inspect.getsource(function)
        for twin in (".halo_check()", ".repeats(", ".paraphrased()", ".unreasoned()"):
            assert twin not in source, f"{function.__qualname__} asks for {twin} itself: use askings()"


def test_the_pairs_the_reward_and_the_labels_are_askings_too_asked_by_run_ask():
    """Beside the twins (issue 62): the pairs and the reward model on the first verifier's probes, the labelled
    responses of every verifier; one Run.ask asks any asking, and the audit's stage chain is one loop over them."""
    from radar_local import auditing
    from radar_local.askings import beside
    from radar_local.run import Run

    extra = {"pairwise": {"preset": "generic"}, "reward": {"engine": "testing", "model": "planted"},
             "labels": "labels.csv"}  # fmt: skip
    config = AuditConfig.model_validate(planted_config(**extra))
    first = config.verifiers[0]
    assert [(a.kind, a.stage) for a in beside(config, first)] == [
        ("pairs", "pairwise"),
        ("reward", "reward"),
        ("labels", "labels"),
    ]
    other = first.model_copy(update={"name": "other"})
    assert [(a.kind, a.judge.label) for a in beside(config, other)] == [("labels", "other")]
    assert not hasattr(Run, "score_pairs") and not hasattr(Run, "score_labels")
    assert "run.ask(asking" in inspect.getsource(auditing.rescore)
