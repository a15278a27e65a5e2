#!/usr/bin/python3
"""Run a dtc training program once per step count, saving the model each time.

  save_each_step.py PROGRAM --steps N --out DIR -- [program flags...]

runs ``PROGRAM --max-steps=K --save=DIR/step-K.onnx [flags]`` for K = 1..N
and keeps the metrics (``--metrics=DIR/metrics.jsonl``) of the N-step run.
A dtc program is deterministic for a fixed thread count, so the K-step run is
the prefix of the N-step one: DIR then holds dtc's model after every step,
which torch_reference.py --stepwise recomputes step by step.
"""

import argparse
import os
import subprocess
import sys


def main(argv):
    if "--" not in argv:
        raise SystemExit("usage: save_each_step.py PROGRAM --steps N --out DIR -- [program flags...]")
    split = argv.index("--")
    p = argparse.ArgumentParser()
    p.add_argument("program")
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv[:split])
    flags = argv[split + 1 :]
    os.makedirs(args.out, exist_ok=True)
    for k in range(1, args.steps + 1):
        cmd = [args.program, f"--max-steps={k}", f"--save={os.path.join(args.out, f'step-{k}.onnx')}"] + flags
        if k == args.steps:
            cmd.append(f"--metrics={os.path.join(args.out, 'metrics.jsonl')}")
        result = subprocess.run(cmd)
        if result.returncode != 0:
            raise SystemExit(f"error: {' '.join(cmd)}: exit code {result.returncode}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
