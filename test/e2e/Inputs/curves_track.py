#!/usr/bin/python3
"""Checks that one training run's loss curve tracks another's.

  curves_track.py REFERENCE.jsonl CANDIDATE.jsonl --window N --rtol X

Both files are dtc --metrics output with a loss per step (--log-every=1).
The curves are compared as the means of their losses over consecutive
windows of N steps (single steps of two runs that round differently drift
apart; their averages must not): every window's means must agree within
rtol relative, and both runs must have the same number of steps.
"""

import argparse
import json
import sys


def losses(path):
    return [r["loss"] for r in map(json.loads, open(path)) if "loss" in r and "step" in r]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("reference")
    p.add_argument("candidate")
    p.add_argument("--window", type=int, default=50)
    p.add_argument("--rtol", type=float, default=0.02)
    args = p.parse_args()
    ref, got = losses(args.reference), losses(args.candidate)
    if len(ref) != len(got) or len(ref) < args.window:
        print(f"MISMATCH: {len(ref)} and {len(got)} steps (need equal counts >= {args.window})")
        return 1
    worst = 0.0
    for start in range(0, len(ref) - args.window + 1, args.window):
        a = sum(ref[start:start + args.window]) / args.window
        b = sum(got[start:start + args.window]) / args.window
        rel = abs(a - b) / abs(a)
        worst = max(worst, rel)
        if rel > args.rtol:
            print(f"MISMATCH: steps {start + 1}-{start + args.window}: mean loss {b:.6f} vs {a:.6f} "
                  f"(relative {rel:.4f} > {args.rtol})")
            return 1
    print(f"curves: {len(ref)} steps, windows of {args.window}, worst relative difference of the "
          f"window means {worst:.4f} (tolerance {args.rtol})")
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
