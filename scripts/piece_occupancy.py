"""How full a replica's batch stays over one piece: a model, not a measurement.

A replica is fed a piece at a time (radar_local/cluster.py). Within a piece, vLLM admits requests
first come first served up to `max_num_seqs` running at once, each decoding one token a step; at the
end of the piece the batch drains. This counts running requests per step over the piece, assuming
every request's prompt is admitted at once and output lengths are uniform in [lo, hi].

Usage: python scripts/piece_occupancy.py [--slots 1024] [--pieces 64,2048,8192] [--lengths 1-800]
"""

from __future__ import annotations

import argparse
import heapq
import random


def occupancy(lengths: list[int], slots: int) -> float:
    """Mean running requests per step over `slots`, from the first step to the last request's end."""
    running: list[int] = []  # end steps of the running requests
    step = busy = admitted = 0
    while admitted < len(lengths) or running:
        while admitted < len(lengths) and len(running) < slots:
            heapq.heappush(running, step + lengths[admitted])
            admitted += 1
        step += 1
        busy += len(running)
        while running and running[0] <= step:
            heapq.heappop(running)
    return busy / (step * slots)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slots", type=int, default=1024, help="max_num_seqs (vLLM 0.32 on a 70 GB+ GPU: 1024)")
    ap.add_argument("--pieces", default="64,1024,2048,2500,4096,8192")
    ap.add_argument("--lengths", default="1-800", help="output tokens, uniform in lo-hi")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    lo, hi = map(int, args.lengths.split("-"))
    rng = random.Random(args.seed)
    for piece in map(int, args.pieces.split(",")):
        lengths = [rng.randint(lo, hi) for _ in range(piece)]
        print(f"piece {piece:>6} over {args.slots} slots, lengths {lo}-{hi}: {occupancy(lengths, args.slots):.1%}")


if __name__ == "__main__":
    main()
