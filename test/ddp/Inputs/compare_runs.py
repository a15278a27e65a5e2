#!/usr/bin/python3
"""Compare two dtc training runs: their logged losses and/or saved weights.

  compare_runs.py --losses A.jsonl B.jsonl [--loss-rtol=R] [--steps=N]
                  --weights A.onnx B.onnx [--weight-rtol=R]

A loss by |a - b| / |b| per logged step (both files must log the same steps,
1..N when --steps is given); a weight tensor by max|a - b| / max|b| (the e2e
tests' measure). rtol 0 means bit-identical. Prints the largest difference of
each check and exits 1 naming the first step or tensor beyond the tolerance.
"""

import argparse
import json
import math
import sys

import numpy as np


def losses(path):
    out = {}
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            if "step" in record and "loss" in record and not record.get("eval"):
                out[record["step"]] = record["loss"]
    return out


def weights(path):
    import onnx
    import onnx.numpy_helper

    return {t.name: onnx.numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}


def main(argv):
    p = argparse.ArgumentParser()
    p.add_argument("--losses", nargs=2, metavar=("A.jsonl", "B.jsonl"))
    p.add_argument("--loss-rtol", type=float, default=0.0)
    p.add_argument("--steps", type=int)
    p.add_argument("--weights", nargs=2, metavar=("A.onnx", "B.onnx"))
    p.add_argument("--weight-rtol", type=float, default=0.0)
    args = p.parse_args(argv)

    if args.losses:
        a, b = losses(args.losses[0]), losses(args.losses[1])
        if sorted(a) != sorted(b) or not a:
            print(f"MISMATCH: logged steps differ: {sorted(a)[:5]}... ({len(a)}) vs {sorted(b)[:5]}... ({len(b)})")
            return 1
        if args.steps is not None and sorted(a) != list(range(1, args.steps + 1)):
            print(f"MISMATCH: logged steps are not 1..{args.steps}: {sorted(a)[:5]}... ({len(a)})")
            return 1
        worst = 0.0
        for step in sorted(a):
            rel = abs(a[step] - b[step]) / abs(b[step])
            if not math.isfinite(a[step]) or rel > args.loss_rtol:
                print(f"MISMATCH: losses: step {step}: {a[step]!r} vs {b[step]!r} (relative {rel:.3g} > {args.loss_rtol:g})")
                return 1
            worst = max(worst, rel)
        print(f"losses: {len(a)} steps, max relative difference {worst:.3g} (tolerance {args.loss_rtol:g})")

    if args.weights:
        a, b = weights(args.weights[0]), weights(args.weights[1])
        if sorted(a) != sorted(b):
            print(f"MISMATCH: weights: tensor names differ: {sorted(a)} vs {sorted(b)}")
            return 1
        worst = 0.0
        for name in sorted(a):
            x, y = a[name].astype(np.float64), b[name].astype(np.float64)
            if x.shape != y.shape:
                print(f"MISMATCH: weights: {name}: shape {x.shape} vs {y.shape}")
                return 1
            scale = float(np.max(np.abs(y))) if y.size else 0.0
            diff = float(np.max(np.abs(x - y))) if y.size else 0.0
            rel = diff / scale if scale > 0 else diff
            if not np.all(np.isfinite(x)) or rel > args.weight_rtol:
                print(f"MISMATCH: weights: {name}: relative to max|w| {rel:.3g} > {args.weight_rtol:g}")
                return 1
            worst = max(worst, rel)
        print(f"weights: {len(a)} tensors, max relative difference {worst:.3g} (tolerance {args.weight_rtol:g})")
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
