"""How long a run directory's records take to load (the store checks every line against its record type).

Writes N probes and K verdicts per probe as JSONL lines in a temporary run directory, then times
opening the store for reading. Run it in two checkouts to compare their loaders on the same lines:

    python scripts/bench_store.py --probes 20000 --criteria 5 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from radar_local.hardware import cpu_info
from radar_local.store import Store


def write_records(root: Path, probes: int, criteria: int) -> None:
    with (root / "probes.jsonl").open("w") as fh:
        for i in range(probes):
            fh.write(
                json.dumps(
                    {"v": 1, "key": f"p{i}:0", "generator": "g", "task_id": f"t{i % 50}", "target": "helpfulness"}
                    | {"direction": "+-"[i % 2], "variant": 0, "seed": i, "text": "A probe. " * 40}
                    | {"prompt_tokens": 300, "output_tokens": 120, "finish_reason": "stop"}
                )
                + "\n"
            )
    with (root / "scores.jsonl").open("w") as fh:
        for i in range(probes):
            for c in range(criteria):
                fh.write(
                    json.dumps(
                        {"v": 1, "key": f"s{i}-{c}", "probe_key": f"p{i}:0", "verifier": "v", "criterion": f"c{c}"}
                        | {"score": (i + c) % 5, "reasoning": "r" * 200, "rationale": "x" * 120, "raw": "{}" * 100}
                        | {"prompt_tokens": 500, "output_tokens": 90, "finish_reason": "stop"}
                    )
                    + "\n"
                )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--probes", type=int, default=20000)
    ap.add_argument("--criteria", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_records(root, args.probes, args.criteria)
        seconds = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            store = Store(root, probes="probes.jsonl", scores="scores.jsonl", lock=".radar.lock", writer=False)
            seconds.append(time.perf_counter() - start)
        lines = len(store.probes) + len(store.scores)
    best = min(seconds)
    print(
        json.dumps(
            {"cpu": cpu_info().model, "lines": lines, "best_s": round(best, 3), "lines_per_s": round(lines / best)}
        )
    )


if __name__ == "__main__":
    main()
