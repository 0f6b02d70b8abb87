"""Benchmark: the same audit workload in one process, then on 1 and on 2 replicas of a local Ray
cluster, in one run; the speed-up and each replica's throughput.

Usage (Ray's servers bind every interface; a loopback-only namespace keeps them on 127.0.0.1):
  unshare -n sh -c 'ip link set lo up && .venv/bin/python scripts/bench_cluster.py [--tasks 2] [--json out.json]'
The cluster is a Ray instance started in this process (`ray: local`) with --cpus CPUs, one CPU per
replica. Prints one Markdown row per variant.
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from radar_local.config import load_config
from radar_local.placement import ClusterSpec
from radar_local.pool import EnginePool
from radar_local.resolved import resolve
from radar_local.run import Run

REPO = Path(__file__).resolve().parents[1]


def run_variant(cfg, base: Path, out: Path, cluster: ClusterSpec | None) -> dict:
    pool = EnginePool(cluster)
    try:
        start = time.monotonic()
        pool.get(cfg.generator)  # replicas start here: not part of the stage times
        started = time.monotonic() - start
        run = Run.create(resolve(cfg, base), out)
        gen = run.generate(pool, progress=False)
        score = run.score(cfg.verifier, pool, progress=False)
    finally:
        pool.close()
    return {"start_s": round(started, 1), "generate": gen, "score": score}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", type=Path, default=REPO / "configs" / "quickstart.yaml")
    ap.add_argument("--tasks", type=int, default=2, help="The first N tasks of the config")
    ap.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray instance")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    base = args.config.parent
    cfg = load_config(args.config)
    cfg = cfg.model_copy(update={"tasks": list(resolve(cfg, base).tasks[: args.tasks]), "bootstrap": 0})
    import ray

    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    variants = [("one process", None)] + [
        (f"{r} replica{'s' * (r > 1)}", ClusterSpec(ray="local", replicas=r)) for r in (1, 2)
    ]
    rows = {}
    print("| variant | replica start s | generate s | score s | score calls/s | per replica: score calls, calls/s |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, cluster in variants:
            r = run_variant(cfg, base, Path(tmp) / name.replace(" ", "-"), cluster)
            rows[name] = r
            s = r["score"]
            per = "-"
            if "cluster" in s:
                per = ", ".join(
                    f"{x['calls']} calls, {x['calls'] / x['seconds']:.2f}/s" for x in s["cluster"]["replicas"]
                )
            print(
                f"| {name} | {r['start_s']} | {r['generate']['seconds']:.1f} | {s['seconds']:.1f} | "
                f"{s['calls'] / s['seconds']:.2f} | {per} |",
                flush=True,
            )
    one, two = rows["1 replica"]["score"]["seconds"], rows["2 replicas"]["score"]["seconds"]
    print(f"\nscore stage speed-up, 2 replicas over 1: {one / two:.2f}x")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":  # vllm.LLM() starts its engine in a new process
    sys.exit(main())
