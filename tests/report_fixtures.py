"""A stored audit run built from a planted coupling matrix, for report, compare and grid tests.

The report layer formats stored records; these runs hold real records written through the Store
and the real statistics, with scores drawn from a known coupling instead of a model.
"""

from pathlib import Path

import numpy as np

from radar_local.auditing import conclude
from radar_local.config import AuditConfig
from radar_local.plan import Plan
from radar_local.records import ProbeRecord, VerdictRecord
from radar_local.resolved import resolve
from radar_local.rubric import load_benchmark
from radar_local.run import Run
from radar_local.synthetic import HELPSTEER2_PLANTED


def planted_settings(n: int = 4, tasks: int = 2) -> dict:
    bench = load_benchmark("helpsteer2")
    return {
        "rubric": "helpsteer2",
        "tasks": [t.model_dump() for t in bench.tasks[:tasks]],
        "n": n,
        "seed": 0,
        "bootstrap": 100,
    }


def judge(name: str) -> dict:
    return {"engine": "openai", "model": f"{name}-model", "name": name}


GENERATOR = {"engine": "openai", "model": "gen-model", "name": "gen"}


def planted_run(
    root: Path,
    coupling: np.ndarray = HELPSTEER2_PLANTED,
    *,
    verifier: str = "judge-a",
    seed: int = 0,
    n: int = 4,
    tasks: int = 2,
    response: str = "",
    explanation: str = "r",
) -> Path:
    """`response` is appended to every probe's text and `explanation` is every verdict's reasoning (a viewer's
    benchmark sizes them; a hostile one is markup)."""
    bench = load_benchmark("helpsteer2")
    cfg = AuditConfig.model_validate(
        {**planted_settings(n, tasks), "generator": GENERATOR, "verifier": judge(verifier)}
    )
    rubric, task_set, crit = bench.rubric, bench.tasks[:tasks], bench.rubric.ids
    run = Run.create(resolve(cfg, Path.cwd()), root)
    store = run.store
    rng = np.random.default_rng(seed)
    probes = []
    for req in Plan(cfg, rubric, tuple(task_set)).generation_requests():
        for v in range(req.n):
            probes.append(
                ProbeRecord(
                    key=req.variant_key(v),
                    generator="gen",
                    task_id=req.task.id,
                    target=req.target,
                    direction=req.direction,
                    variant=v,
                    seed=req.seed,
                    text=f"A {req.direction} probe for {req.target} on {req.task.id}, variant {v}.{response}",
                    prompt_tokens=100,
                    output_tokens=50,
                    finish_reason="stop",
                )
            )
    store.add_probes([p for p in probes if p.key not in store.probes])  # a second judge reuses them
    run.register_verifier(cfg.verifier)
    by_key = {p.key: p for p in probes}
    records = []
    for req in Plan(cfg, rubric, tuple(task_set)).score_requests(probes, cfg.verifier):
        p = by_key[req.probe_key]
        sign = 1.0 if p.direction == "+" else -1.0
        shift = sign * coupling[crit.index(p.target), crit.index(req.criterion)] * 0.8
        score = int(np.clip(np.rint(2 + 2 * shift + rng.normal(0, 0.4)), 0, 4))
        records.append(
            VerdictRecord(
                key=req.key,
                probe_key=req.probe_key,
                verifier=verifier,
                criterion=req.criterion,
                score=score,
                reasoning=explanation,
                rationale=f"{req.criterion} looks like {score}.",
                raw="{}",
                prompt_tokens=300,
                output_tokens=40,
                finish_reason="stop",
            )
        )
    store.add_scores(records)
    stages = {
        "generate": {
            "requests": len(probes),
            "calls": len(probes),
            "prompt_tokens": 100 * len(probes),
            "output_tokens": 50 * len(probes),
            "seconds": 10.0,
        },
        "score": {
            "requests": len(records),
            "calls": len(records),
            "prompt_tokens": 300 * len(records),
            "output_tokens": 40 * len(records),
            "seconds": 20.0,
            "layout": "paper",
            "prefix_cache_hit_rate": 0.35,
            "parsed": len(records),
            "unscored": 0,
            "parse_rate": 1.0,
        },
    }
    conclude(run, cfg.verifier, stages)
    return root
