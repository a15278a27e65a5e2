#!/usr/bin/env python3
"""Stage-owned state: what each rank of a 2-stage pipeline holds, against
ddp on 2 ranks (every rank the whole state); and of 2 replicas of that
pipeline on 4 ranks, without and with each stage's optimizer state sharded
over its replicas (--dp=2 --shard=optimizer).

The model: fsdp_memory.py's MLP of 53.6M parameters (784 -> 4 x 4096 ->
10), trained with Adam (float32) on synthetic data, one thread per rank:
ddp with batch 32 per rank, and --strategy=pipeline --stages=2 with 4
micro-batches of 16 (the cost model splits the layers); the hybrids with
--dp=2 and 4 micro-batches of 8 per replica (the same 64 samples a step).
Prints, per rank,
the planned state (its weights and Adam moments, the whole buffer), what
the OS holds of the state buffer after step 1 (mincore), the process's peak
resident set (getrusage), and --report's planned state per rank.

Run:  /usr/bin/python3 bench/pipeline_state_memory.py [--build DIR] [--out FILE.md]
"""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fsdp_memory import ROOT, export, run  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--out")
    p.add_argument("--steps", type=int, default=4)
    a = p.parse_args()
    work = os.path.join(a.build, "bench", "pipeline-state")
    os.makedirs(work, exist_ok=True)
    onnx = os.path.join(work, "mlp53m.onnx")
    params = export(onnx)
    dtc = os.path.join(a.build, "bin", "dtc")
    common = ["--optimizer=adam", "--lr=1e-4"]
    flags = {"ddp": ["--strategy=ddp", "--batch-size=32"],
             "pipeline": ["--strategy=pipeline", "--stages=2", "--micro-batches=4",
                          "--batch-size=64"],
             "hybrid": ["--strategy=pipeline", "--stages=2", "--dp=2", "--micro-batches=4",
                        "--batch-size=32"],
             "hybrid ZeRO-1": ["--strategy=pipeline", "--stages=2", "--dp=2",
                               "--micro-batches=4", "--batch-size=32", "--shard=optimizer"]}
    ranks = {"ddp": 2, "pipeline": 2, "hybrid": 4, "hybrid ZeRO-1": 4}
    mib = 1024.0 * 1024.0
    lines = ["# Pipeline ranks hold only their stage's state\n",
             f"Command: `/usr/bin/python3 bench/pipeline_state_memory.py"
             f"{' --out ' + a.out if a.out else ''}`\n",
             f"Model: MLP 784 -> 4x4096 -> 10, {params:,} parameters; Adam float32, synthetic "
             f"data, 1 thread per rank, {a.steps} steps; ddp: batch 32 per rank; pipeline: 2 "
             "stages, 4 micro-batches of 16; hybrid: 2 replicas of the 2-stage pipeline on 4 "
             "ranks (rank r: stage r % 2), 4 micro-batches of 8 each; hybrid ZeRO-1: the same "
             "with each stage's optimizer state sharded over its 2 replicas "
             "(--shard=optimizer).\n",
             "| strategy | rank | weights MiB | optimizer MiB | state planned MiB | "
             "state resident MiB | process peak MiB |",
             "|---|---|---|---|---|---|---|"]
    reports = []
    for strategy in ("ddp", "pipeline", "hybrid", "hybrid ZeRO-1"):
        name = strategy.replace(" ", "-")
        program = os.path.join(work, f"train-{name}")
        subprocess.run([dtc, onnx, *flags[strategy], *common, "-o", program], check=True)
        if strategy != "ddp":
            out = subprocess.run([dtc, onnx, *flags[strategy], *common, "--report"], check=True,
                                 capture_output=True, text=True).stdout
            reports.append(f"{strategy}: " + re.search(r"^  planned state per rank.*$", out,
                                                        re.M).group(0).strip())
        _, memory = run(a.build, program, ranks[strategy], a.steps,
                        os.path.join(work, f"{name}.jsonl"))
        for m in memory:
            lines.append(
                f"| {strategy} | {m['rank']} | {m['weight_bytes'] / mib:.1f} | "
                f"{m['optimizer_bytes'] / mib:.1f} | {m['state_bytes'] / mib:.1f} | "
                f"{m['state_resident_bytes'] / mib:.1f} | {m['process_peak_bytes'] / mib:.1f} |")
    lines.append("\n`dtc --report`:\n")
    lines += [f"- {r}" for r in reports]
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    sys.exit(main())
