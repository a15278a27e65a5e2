"""Compares two dtc training runs: per-step losses (metrics JSONL) and the
final weights (saved ONNX), within a relative tolerance.

usage: compare_runs.py A.jsonl B.jsonl A.onnx B.onnx --rtol R
"""
import argparse
import json
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def losses(path):
    with open(path) as f:
        return [json.loads(line)["loss"] for line in f if '"loss"' in line]


def weights(path):
    model = onnx.load(path)
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("metrics", nargs=2)
    p.add_argument("models", nargs=2)
    p.add_argument("--rtol", type=float, required=True)
    a = p.parse_args()
    la, lb = losses(a.metrics[0]), losses(a.metrics[1])
    if len(la) != len(lb) or not la:
        sys.exit(f"MISMATCH: {len(la)} vs {len(lb)} logged steps")
    worst = max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(la, lb))
    wa, wb = weights(a.models[0]), weights(a.models[1])
    wworst = 0.0
    for name, ref in wb.items():
        diff = np.abs(wa[name].astype(np.float64) - ref) / max(np.abs(ref).max(), 1e-12)
        wworst = max(wworst, float(diff.max()))
    print(f"{len(la)} steps: max loss difference {worst:.2e}, max weight difference "
          f"{wworst:.2e} (relative, tolerance {a.rtol:g})")
    if worst > a.rtol or wworst > a.rtol:
        sys.exit("MISMATCH")


if __name__ == "__main__":
    main()
