"""Adaptive audits on the planted engine: the same decisions as a fixed N = max_n audit for fewer
verifier calls, resume, shared probes, expected mode; and the three-valued decision logic."""

import json
import shutil
from fractions import Fraction
from pathlib import Path

import pytest

from radar_local.auditing import run_audit
from radar_local.errors import InputError
from radar_local.report.build import write_report
from radar_local.rundir import PROBES, SCORES, load_run
from radar_local.stats.decisions import Tri, interval_at_least, interval_at_most
from tests.conftest import planted_config

REPO = Path(__file__).resolve().parents[1]
TASKS = [{"id": f"t{i}", "prompt": f"Customer request number {i}: reply to it."} for i in range(12)]
# Two planted couplings: helpfulness -> correctness far above every flag threshold, coherence ->
# verbosity near the directional leakage threshold (0.5).
COUPLING = {
    "Helpfulness / Understanding": {"Correctness / Completeness": 0.9},
    "Coherence / Clarity": {"Verbosity": 0.45},
}


def config(**kw) -> dict:
    return planted_config(options={"coupling": COUPLING, "noise": 1.0}, **{"tasks": TASKS, "bootstrap": 200, **kw})


def decided(result) -> tuple[dict, dict]:
    return result.reliable.to_dict(), {frozenset((p["a"], p["b"])): p["flags"] for p in result.pairs.to_dict("records")}


def without_calls(result):
    """The result with the calls this process made left out (a replayed wave makes none)."""
    record = {k: v for k, v in result.adaptive.stored().items() if k != "verifier_calls"}
    record["waves"] = [{k: v for k, v in w.items() if k != "verifier_calls"} for w in record["waves"]]
    return {**result.to_json(), "adaptive": record}


@pytest.fixture(scope="session")
def fixed_and_adaptive(tmp_path_factory, worker_id):
    """Both audits, made once for the whole session, however many xdist workers share it (the first
    to ask makes them under a file lock; the tests only read them or copy them)."""
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp() if worker_id == "master" else tmp_path_factory.getbasetemp().parent
    root = shared / "fixed-and-adaptive"
    with FileLock(f"{root}.lock"):
        if not (root / "made").exists():
            run_audit(config(n=20), root / "fixed", base=REPO)
            run_audit(config(adaptive={"max_n": 20}), root / "adaptive", base=REPO)
            (root / "made").touch()
    return root, load_run(root / "fixed").result(), load_run(root / "adaptive").result()


def test_adaptive_reaches_the_fixed_decisions_with_fewer_verifier_calls(fixed_and_adaptive):
    root, fixed, adaptive = fixed_and_adaptive
    assert decided(adaptive) == decided(fixed)
    flags = decided(fixed)[1]
    assert flags[frozenset(("helpfulness", "correctness"))] == ["directional"]
    for result in (fixed, adaptive):
        assert result.pair("helpfulness", "correctness")["evidence"] == {"directional": "confirmed"}
    calls = {name: load_run(root / name).info().stages["score"].calls for name in ("fixed", "adaptive")}
    assert calls["fixed"] == 12 * 5 * 2 * 20 * 5
    # Decisions settle over the family's simultaneous intervals, wider than one cell's 95%: 8,160 of the fixed
    # audit's 12,000 calls (under per-cell intervals it was under half).
    assert calls["adaptive"] <= 0.75 * calls["fixed"], calls
    record = adaptive.adaptive.stored()
    assert record["verifier_calls"] == calls["adaptive"] == sum(w["verifier_calls"] for w in record["waves"])
    assert record["verdicts"] == calls["adaptive"] == record["probes"] * 5
    assert len(record["waves"]) >= 2 and record["waves"][0]["cells"] == 12 * 5 * 2
    # every decision is settled or sits at the budget, and the open ones of the last wave are those
    assert {d["kind"] for d in record["settled"]} >= {"gate", "directional", "tradeoff"}
    assert record["at_budget"] == record["waves"][-1]["open"]
    assert record["stopped_by"] == ("max_n" if record["at_budget"] else "settled") and record["budget"] is None
    assert load_run(root / "adaptive").info().adaptive == record


@pytest.mark.thorough  # a third adaptive audit; the fast tier keeps the first two (the shared fixture)
def test_an_adaptive_run_resumes_where_it_stopped(fixed_and_adaptive, tmp_path):
    """A kill after half the verdicts: the re-run replays the stored waves and calls only for the rest."""
    root, _, adaptive = fixed_and_adaptive
    shutil.copytree(root / "adaptive", tmp_path / "run")
    scores = (tmp_path / "run" / SCORES).read_text().splitlines(keepends=True)
    (tmp_path / "run" / SCORES).write_text("".join(scores[: len(scores) // 2]))
    (tmp_path / "run" / "adaptive.json").unlink()
    again = run_audit(config(adaptive={"max_n": 20}), tmp_path / "run", base=REPO)
    assert without_calls(again) == without_calls(adaptive)  # the same waves and statistics
    assert again.adaptive.stored()["verifier_calls"] == len(scores) - len(scores) // 2


@pytest.mark.thorough  # a third adaptive audit, replayed from the fixed run's records
def test_a_fixed_run_at_max_n_holds_every_probe_an_adaptive_run_needs(fixed_and_adaptive, tmp_path):
    root, _, adaptive = fixed_and_adaptive
    shutil.copytree(root / "fixed", tmp_path / "run")
    again = run_audit(config(adaptive={"max_n": 20}), tmp_path / "run", base=REPO)
    assert without_calls(again) == without_calls(adaptive)  # the same probes and verdicts
    stages = load_run(tmp_path / "run").info().stages
    assert stages["generate"].calls == 0 and stages["score"].calls == 0
    assert len(load_run(tmp_path / "run").probes()) == adaptive.adaptive.stored()["probes"]


def test_adaptive_in_expected_mode(tmp_path):
    result = run_audit(
        config(adaptive={"start_n": 2, "max_n": 4, "step": 2}, scoring={"mode": "expected"}, tasks=TASKS[:2]),
        tmp_path / "run",
        base=REPO,
    )
    assert result.probes.score_values == "continuous" and result.adaptive.stored()["waves"]
    assert result.adaptive.stored()["probes"] <= 2 * 5 * 2 * 4
    # Expected scores decide as reasoned ones do: every gate settled reliable, the planted coupling far
    # above the thresholds settled directional, and the one near 0.5 (coherence -> verbosity) left open.
    settled = {(d["kind"], tuple(d["criteria"])): d["value"] for d in result.adaptive.stored()["settled"]}
    assert all(settled[("gate", (c,))] is True for c in result.criteria)
    assert settled[("directional", ("helpfulness", "correctness"))] is True
    assert ("directional", ["coherence", "verbosity"]) in [
        (d["kind"], d["criteria"]) for d in result.adaptive.stored()["at_budget"]
    ]


def test_an_adaptive_audit_stops_within_its_call_budget(tmp_path):
    """Issue 43 item 2: `adaptive: {budget: B}` stops before a wave that would plan more than B verifier calls, and
    the report says the open decisions are open within the budget; a budget below the first wave is one line."""
    small = {"start_n": 2, "max_n": 8, "step": 2}
    first = 2 * 5 * 2 * 2 * 5  # 2 tasks x 5 criteria x 2 directions x start_n, 5 per-criterion calls a probe
    result = run_audit(config(adaptive={**small, "budget": first + 50}, tasks=TASKS[:2]), tmp_path / "run", base=REPO)
    record = result.adaptive
    assert record.stopped_by == "budget" and record.budget == first + 50 and record.at_budget
    assert len(record.waves) == 1 and record.verifier_calls == first
    report = (write_report(load_run(tmp_path / "run")) / "report.md").read_text()
    assert f"open within the budget of {first + 50} verifier calls" in report
    with pytest.raises(InputError, match=f"adaptive.budget {first - 1} is below the first wave's {first} verifier"):
        run_audit(config(adaptive={**small, "budget": first - 1}, tasks=TASKS[:2]), tmp_path / "low", base=REPO)


def test_adaptive_needs_intervals(tmp_path):
    with pytest.raises(InputError, match="bootstrap"):
        run_audit(config(adaptive={"max_n": 4}, bootstrap=0), tmp_path / "run", base=REPO)


def test_interval_ends_settle_exactly_at_the_threshold():
    src = frozenset({"a"})
    assert interval_at_least((0.4, 0.9), 0.4, src).value is True  # the low end is exactly tau: settled
    assert interval_at_least((0.39999999999999997, 0.9), 0.4, src).value is None  # one float below: open
    assert interval_at_least((0.1, 0.39999999999999997), 0.4, src).value is False
    assert (
        interval_at_most((-0.5, -0.2), -0.2, src).value is True
        and interval_at_most((-0.2, 0.1), -0.2, src).value is None
    )
    assert interval_at_least(None, 0.4, src) == Tri(None, src)
    assert Fraction(0.39999999999999997) < Fraction(2, 5)


def test_three_valued_logic_keeps_only_what_would_settle_it():
    a, b = frozenset({"a"}), frozenset({"b"})
    assert (Tri(None, a) & Tri(False)).value is False  # settled by the other side
    assert (Tri(None, a) & Tri(True)) == Tri(None, a)
    assert (Tri(None, a) | Tri(True)).value is True
    assert (Tri(None, a) | Tri(None, b)) == Tri(None, a | b)
    assert (~Tri(None, a)) == Tri(None, a) and (~Tri(True)).value is False


def test_waves_are_in_the_report(fixed_and_adaptive, tmp_path):
    root, _, _ = fixed_and_adaptive
    report = write_report(load_run(root / "adaptive"), out=tmp_path / "report")
    text = (report / "report.md").read_text()
    assert "Adaptive audit" in text and "wave" in text
    assert json.loads((root / "adaptive" / "stats.json").read_text())["adaptive"]["waves"]
    assert (root / "adaptive" / PROBES).is_file()


def test_radar_generate_on_an_adaptive_config_generates_the_first_wave(tmp_path):
    from radar_local.pool import EnginePool
    from radar_local.resolved import resolve
    from radar_local.run import Run

    run = Run.create(
        resolve(parse(config(adaptive={"start_n": 2, "max_n": 6}, tasks=TASKS[:2])), REPO), tmp_path / "run"
    )
    pool = EnginePool()
    try:
        info = run.generate(pool, progress=False)
    finally:
        pool.close()
    assert info["calls"] == 2 * 5 * 2 * 2 and len(run.probes()) == info["calls"]


def test_a_grid_refuses_an_adaptive_audit():
    from pydantic import ValidationError

    from radar_local.config import GridConfig

    spec = {"engine": "testing", "model": "planted"}
    settings = {k: v for k, v in config(adaptive={"max_n": 4}).items() if k not in ("generator", "verifier")}
    with pytest.raises(ValidationError, match="per \\(generator, verifier\\) cell"):
        GridConfig.model_validate({**settings, "generators": [spec], "verifiers": [{**spec, "model": "judge"}]})


def parse(raw: dict):
    from radar_local.config import AuditConfig

    return AuditConfig.model_validate(raw)


@pytest.mark.parametrize("size", [10**9, 0, -1])
def test_a_hand_edited_wave_size_outside_the_plan_is_one_line(fixed_and_adaptive, tmp_path, size):
    """Issue 28, item 13: a size of 10**9 in adaptive.json made `radar score` and `generate` run without end."""
    root, _, _ = fixed_and_adaptive
    shutil.copytree(root / "adaptive", tmp_path / "run")
    waves = tmp_path / "run" / "adaptive.json"
    record = json.loads(waves.read_text())
    cell = next(key for key in record["sizes"] if "none" not in key)
    record["sizes"][cell] = size
    waves.write_text(json.dumps(record))
    stored = (tmp_path / "run" / SCORES).read_bytes()
    from tests.conftest import radar_run

    res = radar_run("score", tmp_path / "run", "--verifier", "testing:planted", "--quiet")
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert f"{waves}: gives stratum" in res.stderr and f"{size} probes, outside 1..20" in res.stderr
    assert (tmp_path / "run" / SCORES).read_bytes() == stored
