#!/usr/bin/env python3
"""Tensor parallelism on this machine: memory per rank and speed of
dtc --tp=2 against one process and against --strategy=ddp on 2 ranks; and
on 4 ranks (2 groups of 2) ddp between the groups against fsdp, each
slice's optimizer state (and gradients) sharded over its 2 groups.

The model: the MLP of bench/fsdp_memory.py (784 -> 4 x 4096 -> 10, 53.6M
parameters), Adam (float32), synthetic batches of 32, one thread per rank.
--tp=2 splits two layer pairs (784->4096->4096 and 4096->4096->4096): each
rank holds half of 99.9% of the weights, their gradients and Adam's
moments, and both ranks work on the same 32 rows (one all-reduce of a
32 x 4096 activation per pair forward, one of the input's gradient
backward). ddp on 2 ranks holds everything twice and trains 2 x 32 rows
per step. With --tp=2 on 4 ranks each group trains 32 rows; fsdp halves a
rank's moments again (ZeRO-3: and its weights). For each: per-rank planned weights, optimizer state and arena,
what the OS holds of the state buffer after step 1, the process peak
(getrusage), and samples/s (best of 3 runs).

Run:  /usr/bin/python3 bench/tp_memory.py [--build DIR] [--out FILE.md]
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fsdp_memory  # noqa: E402  (export, run: the same model and runner)

ROOT = fsdp_memory.ROOT


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--out")
    p.add_argument("--steps", type=int, default=8)
    a = p.parse_args()
    work = os.path.join(a.build, "bench", "tp")
    os.makedirs(work, exist_ok=True)
    onnx = os.path.join(work, "mlp53m.onnx")
    params = fsdp_memory.export(onnx)
    mib = 1024.0 * 1024.0
    lines = ["# Tensor parallelism: memory and speed\n",
             f"Command: `/usr/bin/python3 bench/tp_memory.py{' --out ' + a.out if a.out else ''}`\n",
             f"Model: MLP 784 -> 4x4096 -> 10, {params:,} parameters; Adam float32, batch 32 per "
             f"step (ddp: per rank), synthetic data, 1 thread per rank, {a.steps} steps, best of "
             "3 runs.\n",
             "| program | ranks | rank | weights MiB | optimizer MiB | state resident MiB | "
             "arena MiB | process peak MiB | samples/s |",
             "|---|---|---|---|---|---|---|---|---|"]
    configs = [("one process", [], 1), ("--tp=2", ["--tp=2"], 2),
               ("--strategy=ddp", ["--strategy=ddp"], 2),
               ("--strategy=ddp --tp=2", ["--strategy=ddp", "--tp=2"], 4),
               ("--strategy=fsdp --tp=2", ["--strategy=fsdp", "--tp=2"], 4),
               ("--strategy=fsdp --shard=gradients --tp=2",
                ["--strategy=fsdp", "--shard=gradients", "--tp=2"], 4),
               ("--strategy=fsdp --shard=parameters --tp=2",
                ["--strategy=fsdp", "--shard=parameters", "--tp=2"], 4)]
    rates = {}
    for name, flags, ranks in configs:
        program = os.path.join(work, "train-" + (name.strip("-").replace("=", "").replace(" ", "")))
        subprocess.run([os.path.join(a.build, "bin", "dtc"), onnx] + flags +
                       ["--batch-size=32", "--optimizer=adam", "--lr=1e-4", "-o", program],
                       check=True)
        best, memory = 0.0, None
        for attempt in range(3):
            # --tp=2: the 2 ranks of a group train the same rows.
            groups = ranks // 2 if "--tp=2" in flags else ranks
            rate, memory = fsdp_memory.run(a.build, program, ranks, a.steps,
                                           os.path.join(work, f"{ranks}-{attempt}.jsonl"),
                                           rows_per_step=fsdp_memory.BATCH * groups)
            best = max(best, rate)
        rates[name] = best
        if not memory or ranks == 1:  # one process logs no per-rank memory
            lines.append(f"| {name} | 1 | 0 | (as ddp's rank) | | | | | {best:.1f} |")
            continue
        for m in memory:
            lines.append(f"| {name} | {ranks} | {m['rank']} | {m['weight_bytes'] / mib:.1f} | "
                         f"{m['optimizer_bytes'] / mib:.1f} | "
                         f"{m['state_resident_bytes'] / mib:.1f} | {m['arena_bytes'] / mib:.1f} | "
                         f"{m['process_peak_bytes'] / mib:.1f} | {best:.1f} |")
    one = rates["one process"]
    lines.append("")
    lines.append(f"samples/s against one process: --tp=2 {rates['--tp=2'] / one:.2f}x, "
                 f"ddp on 2 ranks {rates['--strategy=ddp'] / one:.2f}x.")
    lines.append("")
    hybrid = rates["--strategy=ddp --tp=2"]
    lines.append("4 ranks, 2 groups of 2 (4 processes on this machine's 2 cores: compare these "
                 "rows with each other only): samples/s against ddp with --tp=2: fsdp ZeRO-1 "
                 f"{rates['--strategy=fsdp --tp=2'] / hybrid:.2f}x, ZeRO-2 "
                 f"{rates['--strategy=fsdp --shard=gradients --tp=2'] / hybrid:.2f}x, ZeRO-3 "
                 f"{rates['--strategy=fsdp --shard=parameters --tp=2'] / hybrid:.2f}x.")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    sys.exit(main())
