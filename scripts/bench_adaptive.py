"""An adaptive audit against a fixed N = max_n audit on the planted engine (tests/test_adaptive.py's
scenario): verifier calls, waves, and whether the gate and flag decisions agree.

K = 5 (helpsteer2), 12 tasks, noise 1 Likert point, two planted couplings: helpfulness -> correctness
0.9 (far above every flag threshold) and coherence -> verbosity 0.45 (a leakage near the directional
threshold 0.5).

    .venv/bin/python scripts/bench_adaptive.py [--max-n 20] [--step 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from radar_local.auditing import run_audit  # noqa: E402
from radar_local.rundir import load_run  # noqa: E402
from tests.test_adaptive import config, decided  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-n", type=int, default=20)
    ap.add_argument("--step", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = {}
        for label, kw in (
            ("fixed", {"n": args.max_n}),
            ("adaptive", {"adaptive": {"max_n": args.max_n, "step": args.step}}),
        ):
            start = time.perf_counter()
            result = run_audit(config(**kw), Path(tmp) / label, base=REPO)
            out[label] = (
                result,
                load_run(Path(tmp) / label).info().stages["score"].calls,
                time.perf_counter() - start,
            )
        (fixed, fixed_calls, fixed_s), (adaptive, calls, adaptive_s) = out["fixed"], out["adaptive"]
        print(f"fixed n={args.max_n}: {fixed_calls} verifier calls ({fixed_s:.1f} s)")
        print(
            f"adaptive 3..{args.max_n} step {args.step}: {calls} verifier calls = {calls / fixed_calls:.2f} of fixed, "
            f"{len(adaptive.adaptive.waves)} waves ({adaptive_s:.1f} s)"
        )
        for w in adaptive.adaptive.stored()["waves"]:
            print(
                f"  wave {w['wave']}: +{w['probes']} probes, {w['verdicts']} verdicts, {len(w['open'])} open, "
                f"grow {', '.join(w['grow']) or '-'}"
            )
        print("same gate and flag decisions:", decided(adaptive) == decided(fixed))
        print(
            "open at max_n:",
            [f"{d['kind']} {'/'.join(d['criteria'])}" for d in adaptive.adaptive.stored()["at_budget"]],
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
