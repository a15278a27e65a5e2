#!/usr/bin/env python3
"""Compares the evaluations two --metrics files logged.

  compare_evals.py A.jsonl B.jsonl [--rtol=R]

Every {"epoch", "eval_loss", "eval_accuracy", "eval_top5"} record of A must
have one of the same epoch in B, with the same fields, each within R
relative. Prints the
largest difference; exits 1 naming the first epoch beyond R.
"""
import argparse
import json
import sys


def evals(path):
    out = {}
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            if "eval_loss" in record:
                out[record["epoch"]] = record
    if not out:
        sys.exit(f"{path}: no evaluation logged")
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--rtol", type=float, default=0.0)
    args = p.parse_args()
    a, b = evals(args.a), evals(args.b)
    worst = 0.0
    for epoch, x in sorted(a.items()):
        if epoch not in b:
            sys.exit(f"epoch {epoch}: evaluated in {args.a} but not in {args.b}")
        for key in ("eval_loss", "eval_accuracy", "eval_top5"):
            if key not in x and key not in b[epoch]:
                continue
            if key not in x or key not in b[epoch]:
                sys.exit(f"epoch {epoch}: {key} logged in only one of the files")
            y = b[epoch][key]
            diff = abs(x[key] - y) / max(abs(y), 1e-30)
            worst = max(worst, diff)
            if diff > args.rtol:
                sys.exit(f"epoch {epoch}: {key} {x[key]} vs {y} (relative {diff:.3g} > {args.rtol})")
    print(f"evaluations match: largest relative difference {worst:.3g}")


if __name__ == "__main__":
    main()
