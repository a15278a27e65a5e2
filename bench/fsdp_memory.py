#!/usr/bin/env python3
"""Sharded data parallelism on this machine: memory per rank and speed of
dtc --strategy=fsdp --shard=optimizer (ZeRO-1), --shard=gradients (ZeRO-2)
and --shard=parameters (ZeRO-3) against --strategy=ddp.

The model: an MLP of 53.6M parameters (784 -> 4 x 4096 -> 10), exported
from PyTorch like the example models, trained with Adam (float32) on
synthetic batches of 32 per rank, one thread per rank. For 2 and 4 ranks
and each strategy this prints, per rank, what the program planned
(weights, optimizer state: Adam's two moments or their shard), what the
OS holds of the state buffer after step 1 (mincore), and the process's
peak resident set (getrusage); then the bytes per parameter of weights +
optimizer state against the ZeRO paper's formula (4 + 8 for ddp,
4 + 8/N with the optimizer state sharded, 12/N with the weights too), the
planned arena (activations and gradients: ddp and ZeRO-1 hold every
gradient to the step's end, ZeRO-2 and ZeRO-3 only the buckets in flight;
ZeRO-3's also holds the gathered weight groups), and the samples/s of each
against ddp on 2 ranks: the strategies take turns for --rounds rounds of
--speed-steps steps; a run's figure is its steady state, the global batch
over the median step time of rank 0 after two warm-up steps (the first
step faults in the state and the arena), and each strategy's best run
counts.

Run:  /usr/bin/python3 bench/fsdp_memory.py [--build DIR] [--out FILE.md]
"""
import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
BATCH = 32   # per rank
WARMUP = 2   # steps left out of the steady state


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def export(path):
    import torch
    torch.manual_seed(0)
    layers = [torch.nn.Flatten(), torch.nn.Linear(784, 4096), torch.nn.ReLU()]
    for _ in range(3):
        layers += [torch.nn.Linear(4096, 4096), torch.nn.ReLU()]
    layers.append(torch.nn.Linear(4096, 10))
    model = torch.nn.Sequential(*layers).train()
    torch.onnx.export(model, torch.randn(2, 1, 28, 28), path, input_names=["input"],
                      output_names=["logits"], dynamic_axes={"input": {0: "batch"}},
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    return sum(p.numel() for p in model.parameters())


def run(build, program, ranks, steps, metrics, rows_per_step=None):
    """Trains `steps` steps; returns (steady-state samples/s, rank memory rows).
    A step trains BATCH rows per rank, or `rows_per_step` (--tp: per group)."""
    args = [os.path.join(build, "bin", "dtcrun"), f"--nproc-per-node={ranks}",
            f"--master-port={free_port()}", program, "--data=synthetic", "--epochs=1000",
            f"--max-steps={steps}", "--threads=1", f"--metrics={metrics}", "--timeout=600",
            "--log-every=1"]
    subprocess.run(args, check=True, capture_output=True, text=True)
    records = [json.loads(l) for l in open(metrics)]
    step_s = sorted(r["step_s"] for r in records if "step_s" in r and r["step"] > WARMUP)
    rate = (rows_per_step or BATCH * ranks) / statistics.median(step_s)
    rows = [r["rank_memory"] for r in records if "rank_memory" in r]
    memory = rows[0] if rows else None  # one process logs none
    return rate, memory


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--out")
    p.add_argument("--steps", type=int, default=8, help="steps of the memory runs")
    p.add_argument("--speed-steps", type=int, default=20, help="steps of each timed run")
    p.add_argument("--rounds", type=int, default=3, help="timed runs per strategy (2 ranks)")
    a = p.parse_args()
    work = os.path.join(a.build, "bench", "fsdp")
    os.makedirs(work, exist_ok=True)
    onnx = os.path.join(work, "mlp53m.onnx")
    params = export(onnx)
    mib = 1024.0 * 1024.0
    lines = [f"# Sharded data parallelism: memory and speed\n",
             f"Command: `/usr/bin/python3 bench/fsdp_memory.py --steps {a.steps} --speed-steps "
             f"{a.speed_steps} --rounds {a.rounds}{' --out ' + a.out if a.out else ''}`\n",
             f"Model: MLP 784 -> 4x4096 -> 10, {params:,} parameters; Adam float32, batch 32 per "
             f"rank, synthetic data, 1 thread per rank, {a.steps} steps.\n",
             "| strategy | ranks | rank | weights MiB | optimizer MiB | state planned MiB | "
             "state resident MiB | arena MiB | process peak MiB | (weights+optimizer)/param | "
             "formula |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    rates = {}
    flags = {"ddp": ["--strategy=ddp"], "fsdp": ["--strategy=fsdp", "--shard=optimizer"],
             "fsdp-gradients": ["--strategy=fsdp", "--shard=gradients"],
             "fsdp-parameters": ["--strategy=fsdp", "--shard=parameters"]}
    for strategy in ("ddp", "fsdp", "fsdp-gradients", "fsdp-parameters"):
        program = os.path.join(work, f"train-{strategy}")
        subprocess.run([os.path.join(a.build, "bin", "dtc"), onnx] + flags[strategy] +
                       ["--batch-size=32", "--optimizer=adam", "--lr=1e-4", "-o", program],
                       check=True)
        for ranks in (2, 4):
            rate, memory = run(a.build, program, ranks, a.steps,
                               os.path.join(work, f"{strategy}-{ranks}.jsonl"))
            rates[(strategy, ranks)] = rate
            formula = (12 / ranks if strategy == "fsdp-parameters"
                       else 4 + (8 / ranks if strategy.startswith("fsdp") else 8))
            for m in memory:
                per_param = (m["weight_bytes"] + m["optimizer_bytes"]) / params
                lines.append(
                    f"| {strategy} | {ranks} | {m['rank']} | {m['weight_bytes'] / mib:.1f} | "
                    f"{m['optimizer_bytes'] / mib:.1f} | {m['state_bytes'] / mib:.1f} | "
                    f"{m['state_resident_bytes'] / mib:.1f} | {m['arena_bytes'] / mib:.1f} | "
                    f"{m['process_peak_bytes'] / mib:.1f} | "
                    f"{per_param:.3f} | {formula:.3f} |")
    # Speed on 2 ranks: the strategies take turns, so a load that comes and
    # goes on the machine falls on each of them alike.
    order = ["ddp", "fsdp", "fsdp-gradients", "fsdp-parameters"]
    for round_ in range(a.rounds):
        for strategy in order[round_ % 4:] + order[:round_ % 4]:
            rate, _ = run(a.build, os.path.join(work, f"train-{strategy}"), 2, a.speed_steps,
                          os.path.join(work, f"speed-{strategy}.jsonl"))
            rates[(strategy, 2)] = max(rate, rates[(strategy, 2)] if round_ else 0.0)
    lines.append("")
    lines.append(f"Samples/s in the steady state: global batch / median step time after "
                 f"{WARMUP} warm-up steps; 2 ranks: best of {a.rounds} runs of "
                 f"{a.speed_steps} steps, the strategies taking turns; 4 ranks: the memory "
                 f"run ({a.steps} steps).\n")
    lines.append("| ranks | ddp samples/s | fsdp (optimizer) samples/s | fsdp / ddp | "
                 "fsdp (gradients) samples/s | fsdp (gradients) / ddp | "
                 "fsdp (parameters) samples/s | fsdp (parameters) / ddp |")
    lines.append("|---|---|---|---|---|---|---|---|")
    for ranks in (2, 4):
        d, f, g = rates[("ddp", ranks)], rates[("fsdp", ranks)], rates[("fsdp-gradients", ranks)]
        z = rates[("fsdp-parameters", ranks)]
        lines.append(f"| {ranks} | {d:.1f} | {f:.1f} | {f / d:.3f} | {g:.1f} | {g / d:.3f} | "
                     f"{z:.1f} | {z / d:.3f} |")
    lines.append("\n4 ranks share this machine's 2 cores (one run each; their speed is not a "
                 "scaling figure).")
    # --memory-limit between the fsdp and the ddp plans of 2 ranks: ddp is
    # refused, fsdp compiles (and trained above).
    # And limits that only the finer shardings meet.
    for limit, ranks in (("700M", 2), ("470M", 2), ("350M", 4)):
        lines.append(f"\n`--memory-limit={limit} --ranks={ranks}`:\n")
        for strategy in ("ddp", "fsdp", "fsdp-gradients", "fsdp-parameters"):
            run_ = subprocess.run([os.path.join(a.build, "bin", "dtc"), onnx] + flags[strategy] +
                                  ["--batch-size=32", "--optimizer=adam",
                                   f"--memory-limit={limit}", f"--ranks={ranks}", "-o",
                                   os.path.join(work, f"limited-{strategy}")],
                                  capture_output=True, text=True)
            verdict = "compiles" if run_.returncode == 0 else "refused: " + run_.stderr.strip()
            lines.append(f"- {strategy}: {verdict}")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    sys.exit(main())
