#!/usr/bin/env python3
"""Stage-owned state: what each rank of a 2-stage pipeline holds, against
ddp on 2 ranks (every rank the whole state); and of 2 replicas of that
pipeline on 4 ranks, without and with each stage's optimizer state sharded
over its replicas (--dp=2 --shard=optimizer), and its gradients too
(--shard=gradients, ZeRO-2: freed in backward, so the arena), and its
weights too (--shard=parameters, ZeRO-3: gathered per phase).

The model: fsdp_memory.py's MLP of 53.6M parameters (784 -> 4 x 4096 ->
10), trained with Adam (float32) on synthetic data, one thread per rank:
ddp with batch 32 per rank, and --strategy=pipeline --stages=2 with 4
micro-batches of 16 (the cost model splits the layers); the hybrids with
--dp=2 and 4 micro-batches of 8 per replica (the same 64 samples a step).
Prints, per rank,
the planned state (its weights and Adam moments, the whole buffer), what
the OS holds of the state buffer after step 1 (mincore), its arena, the
process's peak resident set (getrusage), and --report's planned state per
rank. Then the hybrids' speed: each trains --speed-steps steps, --rounds
times, taking turns (so a load that comes and goes falls on each alike);
samples/s = 64 / median step time after the warm-up, the best round.

Run:  /usr/bin/python3 bench/pipeline_state_memory.py [--build DIR] [--out FILE.md]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fsdp_memory import ROOT, WARMUP, export, run  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--out")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--speed-steps", type=int, default=12, help="steps of each timed run")
    p.add_argument("--rounds", type=int, default=3, help="timed runs per hybrid")
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
                               "--micro-batches=4", "--batch-size=32", "--shard=optimizer"],
             "hybrid ZeRO-2": ["--strategy=pipeline", "--stages=2", "--dp=2",
                               "--micro-batches=4", "--batch-size=32", "--shard=gradients"],
             "hybrid ZeRO-3": ["--strategy=pipeline", "--stages=2", "--dp=2",
                               "--micro-batches=4", "--batch-size=32", "--shard=parameters"]}
    ranks = {"ddp": 2, "pipeline": 2, "hybrid": 4, "hybrid ZeRO-1": 4, "hybrid ZeRO-2": 4,
             "hybrid ZeRO-3": 4}
    mib = 1024.0 * 1024.0
    lines = ["# Pipeline ranks hold only their stage's state\n",
             f"Command: `/usr/bin/python3 bench/pipeline_state_memory.py --speed-steps "
             f"{a.speed_steps} --rounds {a.rounds}{' --out ' + a.out if a.out else ''}`\n",
             f"Model: MLP 784 -> 4x4096 -> 10, {params:,} parameters; Adam float32, synthetic "
             f"data, 1 thread per rank, {a.steps} steps; ddp: batch 32 per rank; pipeline: 2 "
             "stages, 4 micro-batches of 16; hybrid: 2 replicas of the 2-stage pipeline on 4 "
             "ranks (rank r: stage r % 2), 4 micro-batches of 8 each; hybrid ZeRO-1: the same "
             "with each stage's optimizer state sharded over its 2 replicas "
             "(--shard=optimizer); hybrid ZeRO-2: and its gradients (--shard=gradients); "
             "hybrid ZeRO-3: and its weights, gathered in each schedule phase that reads "
             "them (--shard=parameters).\n",
             "| strategy | rank | weights MiB | optimizer MiB | state planned MiB | "
             "state resident MiB | arena MiB | process peak MiB |",
             "|---|---|---|---|---|---|---|---|"]
    reports = []
    for strategy in flags:
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
                f"{m['state_resident_bytes'] / mib:.1f} | {m['arena_bytes'] / mib:.1f} | "
                f"{m['process_peak_bytes'] / mib:.1f} |")
    lines.append("\n`dtc --report`:\n")
    lines += [f"- {r}" for r in reports]
    # The hybrids' speed, taking turns.
    hybrids = ["hybrid", "hybrid ZeRO-1", "hybrid ZeRO-2", "hybrid ZeRO-3"]
    rates = {h: 0.0 for h in hybrids}
    for round_ in range(a.rounds):
        turn = round_ % len(hybrids)
        for h in hybrids[turn:] + hybrids[:turn]:
            name = h.replace(" ", "-")
            metrics = os.path.join(work, f"speed-{name}.jsonl")
            run(a.build, os.path.join(work, f"train-{name}"), 4, a.speed_steps, metrics)
            records = [json.loads(l) for l in open(metrics)]
            step_s = [r["step_s"] for r in records if "step_s" in r and r["step"] > WARMUP]
            rates[h] = max(rates[h], 64 / statistics.median(step_s))
    lines.append(f"\nSpeed of the hybrids on 4 ranks (2 cores, so two ranks per core): 64 "
                 f"samples / median step time after {WARMUP} warm-up steps, best of "
                 f"{a.rounds} runs of {a.speed_steps} steps, taking turns.\n")
    lines.append("| strategy | samples/s | / hybrid |")
    lines.append("|---|---|---|")
    for h in hybrids:
        lines.append(f"| {h} | {rates[h]:.1f} | {rates[h] / rates['hybrid']:.3f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    sys.exit(main())
