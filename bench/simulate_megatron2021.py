#!/usr/bin/env python3
"""Megatron-LM 2021's GPT runs on Selene, predicted by dtc --simulate.

Narayanan et al. 2021 (arXiv:2104.04473, Table 1) trained GPT models of
1.7B to 1T parameters on DGX A100 servers (clusters/a100-selene-megatron2021.json),
weak scaling the GPUs with the model: tensor parallelism inside a server,
pipeline parallelism across servers, data parallelism over the rest:

  model   tensor  pipeline  GPUs  global batch  TFLOP/s per GPU (published)
  1.7B       1        1       32       512          137
  3.6B       2        1       64       512          138
  7.5B       4        1      128       512          142
  18.4B      8        1      256      1024          135
  39.1B      8        2      512      1536          138
  76.1B      8        4     1024      1792          140
  145.6B     8        8     1536      2304          148
  310.1B     8       16     1920      2160          155
  529.6B     8       35     2520      2520          163
  1008B      8       64     3072      3072          163

This exports each model shape-only (bench/megatron_export.py; the pipelined
ones with the output layer untied, as the recorded results were made when
dtc refused a weight shared by two stages; tied, the 39.1B row simulates
+0.03% slower: the first stage sends the embedding's slices to the last and
gets their gradient back once per step), fixes the cluster file's GEMM rate on the first row (the rate that
puts the 1.7B run at its published 137 TFLOP/s per GPU, the cluster file's)
and predicts the others with that rate:
each copy's batch in one step (--strategy=ddp with --tp) or, for the
pipeline, in micro-batches of one sequence (--strategy=pipeline --stages=2
--tp=8, 1F1B). FLOPs are counted as the paper counts them, with activation
recomputation: 96 B s l h^2 (1 + s/6h + V/16lh) for a step of B sequences.

Run:  python3 bench/simulate_megatron2021.py [--work DIR] [--out FILE.md]
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import megatron_export  # noqa: E402

CLUSTER = os.path.join(ROOT, "clusters", "a100-selene-megatron2021.json")
PEAK = 312e12
# name, tensor, pipeline, GPUs, global batch, published TFLOP/s per GPU
ROWS = [("1.7b-2021", 1, 1, 32, 512, 137), ("3.6b-2021", 2, 1, 64, 512, 138),
        ("7.5b-2021", 4, 1, 128, 512, 142), ("18.4b-2021", 8, 1, 256, 1024, 135),
        ("39.1b-2021", 8, 2, 512, 1536, 138), ("76.1b-2021", 8, 4, 1024, 1792, 140),
        ("145.6b-2021", 8, 8, 1536, 2304, 148), ("310.1b-2021", 8, 16, 1920, 2160, 155),
        ("529.6b-2021", 8, 35, 2520, 2520, 163), ("1008b-2021", 8, 64, 3072, 3072, 163)]


def step_flops(name, batch):
    hidden, _, layers, seq = megatron_export.CONFIGS[name]
    b, s, l, h, v = batch, seq, layers, hidden, megatron_export.VOCAB
    return 96 * b * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h))


def command(dtc, model, cluster, row):
    name, tp, pp, gpus, batch, _ = row
    per_copy = batch // (gpus // (tp * pp))
    cmd = [dtc, model, "--simulate", "--simulate-precision=mixed", f"--cluster={cluster}",
           f"--devices={gpus}", f"--batch-size={per_copy}", "--optimizer=adam"]
    if tp > 1:
        cmd.append(f"--tp={tp}")
    if pp > 1:
        cmd += ["--strategy=pipeline", f"--stages={pp}", f"--micro-batches={per_copy}"]
    else:
        cmd.append("--strategy=ddp")
    return cmd


def simulate(dtc, model, cluster, row):
    """The command, its output and the step (seconds) at the row's GPUs."""
    cmd = command(dtc, model, cluster, row)
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"simulate_megatron2021.py: {' '.join(cmd)} failed: {p.stderr.strip()}")
    last = p.stdout.strip().splitlines()[-1].split()
    return cmd, p.stdout, float(last[2]) / 1e3


def per_gpu(row, step):
    name, tp, pp, gpus, batch, _ = row
    return step_flops(name, batch) / step / gpus


def calibrated_rate(dtc, model, row):
    """The GEMM rate that puts `row` at its published TFLOP/s per GPU."""
    spec = json.load(open(CLUSTER))
    lo, hi = 1e13, 1e15
    with tempfile.TemporaryDirectory() as tmp:
        trial = os.path.join(tmp, "trial.json")
        for _ in range(24):
            mid = (lo * hi) ** 0.5
            spec["device"]["gemm_flops"] = spec["device"]["conv_flops"] = mid
            json.dump(spec, open(trial, "w"))
            rate = per_gpu(row, simulate(dtc, model, trial, row)[2])
            lo, hi = (mid, hi) if rate < row[5] * 1e12 else (lo, mid)
    return float(f"{mid:.4g}")


def shown(arg):
    return arg.replace(ROOT + os.sep, "")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "dtc-megatron"))
    p.add_argument("--rows", type=int, default=len(ROWS), help="the first N rows only")
    p.add_argument("--dtc", default=os.path.join(ROOT, "build", "bin", "dtc"))
    p.add_argument("--out", default=os.path.join(ROOT, "bench", "results",
                                                 "simulate-megatron2021.md"))
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    rows = ROWS[:args.rows]
    models = {}
    for row in rows:
        name, untied = row[0], row[2] > 1
        path = os.path.join(args.work, f"gpt-{name}{'-untied' if untied else ''}.onnx")
        if not os.path.exists(path):
            megatron_export.export(name, args.work, untied)
        models[name] = path

    rate = calibrated_rate(args.dtc, models[ROWS[0][0]], ROWS[0])
    file_rate = json.load(open(CLUSTER))["device"]["gemm_flops"]

    lines = []
    out = lines.append
    out("# Megatron-LM 2021's GPT runs on Selene, predicted by dtc --simulate")
    out("")
    out(f"Produced by `{' '.join(['python3 bench/simulate_megatron2021.py'] + sys.argv[1:])}` "
        f"on {datetime.date.today()}. Nothing runs: dtc compiles each step and replays it on "
        "the cluster file.")
    out("")
    out(f"The cluster file's GEMM rate is {file_rate / 1e12:.1f} TFLOP/s: the rate that puts "
        f"the first row at its published {ROWS[0][5]} TFLOP/s per GPU is {rate / 1e12:.1f}. "
        "The other rows are predictions.")
    out("")
    results, outputs = [], []
    for row in rows:
        cmd, text, step = simulate(args.dtc, models[row[0]], CLUSTER, row)
        outputs.append((cmd, text))
        results.append((row, step, per_gpu(row, step)))
    out("| model | tensor | pipeline | GPUs | batch | step s | predicted TFLOP/s per GPU | "
        "published | error |")
    out("|---|---|---|---|---|---|---|---|---|")
    for row, step, rate_gpu in results:
        name, tp, pp, gpus, batch, published = row
        note = " (fixes the GEMM rate)" if row is ROWS[0] else ""
        out(f"| {name.replace('-2021', '').upper()}{note} | {tp} | {pp} | {gpus} | {batch} | "
            f"{step:.3f} | {rate_gpu / 1e12:.1f} ({100 * rate_gpu / PEAK:.0f}% of peak) | "
            f"{published} | {100 * (rate_gpu / (published * 1e12) - 1):+.1f}% |")
    out("")
    out("```")
    for cmd, text in outputs:
        out("$ " + " ".join(shown(c) for c in cmd))
        out(text.rstrip())
    out("```")
    out("")
    out("The memory column is dtc's own plan (every sequence of a copy's batch at once in "
        "the ddp rows, no activation recomputation), not Megatron's; what the predictions "
        "leave out: docs/cluster-model.md, Validation.")
    text = "\n".join(lines) + "\n"
    with open(args.out, "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
