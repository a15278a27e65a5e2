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
gets their gradient back once per step) and simulates each row as it ran:
each copy's batch in one step (--strategy=ddp with --tp) or, for the
pipeline, in micro-batches of one sequence (--strategy=pipeline --stages=P
--tp=8, 1F1B), with activation recomputation (--recompute), as the paper's
runs. The first row fixes the GEMM rate (the rate that puts the 1.7B run at
its published 137 TFLOP/s per GPU, the cluster file's); the others are
predictions with that rate. The same rows without recomputation, on a copy
of the cluster file with the rate fitted the same way, are shown beside
them. FLOPs are counted as the paper counts them, with activation
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


def command(dtc, model, cluster, row, recompute):
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
    if recompute:
        cmd.append("--recompute")
    return cmd


def simulate(dtc, model, cluster, row, recompute):
    """The command, its output, the step (seconds) and the memory per device
    (MiB) at the row's GPUs."""
    cmd = command(dtc, model, cluster, row, recompute)
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"simulate_megatron2021.py: {' '.join(cmd)} failed: {p.stderr.strip()}")
    last = p.stdout.strip().splitlines()[-1].split()
    memory = float(last[last.index("MiB") - 1])
    return cmd, p.stdout, float(last[2]) / 1e3, memory


def per_gpu(row, step):
    name, tp, pp, gpus, batch, _ = row
    return step_flops(name, batch) / step / gpus


def with_rate(spec, rate, path):
    spec = json.loads(json.dumps(spec))
    spec["device"]["gemm_flops"] = spec["device"]["conv_flops"] = rate
    with open(path, "w") as f:
        json.dump(spec, f, indent=2)
    return path


def calibrated_rate(dtc, model, row, recompute, work):
    """The GEMM rate that puts `row` at its published TFLOP/s per GPU."""
    spec = json.load(open(CLUSTER))
    lo, hi = 1e13, 1e15
    trial = os.path.join(work, "trial.json")
    for _ in range(24):
        mid = (lo * hi) ** 0.5
        with_rate(spec, mid, trial)
        rate = per_gpu(row, simulate(dtc, model, trial, row, recompute)[2])
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

    # As published (with recomputation) on the cluster file, whose GEMM rate
    # is the one fitted here; without it on a copy with its own fitted rate.
    spec = json.load(open(CLUSTER))
    file_rate = spec["device"]["gemm_flops"]
    rate = calibrated_rate(args.dtc, models[ROWS[0][0]], ROWS[0], True, args.work)
    plain_rate = calibrated_rate(args.dtc, models[ROWS[0][0]], ROWS[0], False, args.work)
    plain_cluster = with_rate(spec, plain_rate, os.path.join(args.work, "selene-no-recompute.json"))

    lines = []
    out = lines.append
    out("# Megatron-LM 2021's GPT runs on Selene, predicted by dtc --simulate")
    out("")
    out(f"Produced by `{' '.join(['python3 bench/simulate_megatron2021.py'] + sys.argv[1:])}` "
        f"on {datetime.date.today()}. Nothing runs: dtc compiles each step and replays it on "
        "the cluster file.")
    out("")
    out("Each row as the paper ran it: activation recomputation (`--recompute`: backward "
        "runs the forward again, as Megatron-LM does for every layer), tensor parallelism "
        "inside a server, 1F1B pipelines of micro-batches of one sequence across servers, "
        "data parallelism over the rest. The first row, without model parallelism, fixes "
        "the GEMM rate; the others are predictions. The cluster file's GEMM rate is "
        f"{file_rate / 1e12:.1f} TFLOP/s; the rate that puts the first row at its published "
        f"{ROWS[0][5]} TFLOP/s per GPU is {rate / 1e12:.1f} with recomputation and "
        f"{plain_rate / 1e12:.1f} without (the columns on the right: the same rows on a copy "
        "of the cluster file with that rate).")
    out("")
    results, outputs = [], []
    for row in rows:
        cmd, text, step, memory = simulate(args.dtc, models[row[0]], CLUSTER, row, True)
        outputs.append((cmd, text))
        _, _, plain_step, plain_memory = simulate(args.dtc, models[row[0]], plain_cluster,
                                                  row, False)
        results.append((row, step, memory, plain_step, plain_memory))
    out("| model | tensor | pipeline | GPUs | batch | published TFLOP/s per GPU | step s | "
        "predicted | error | memory per GPU | without recomputation: predicted | error | "
        "memory per GPU |")
    out("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row, step, memory, plain_step, plain_memory in results:
        name, tp, pp, gpus, batch, published = row
        note = " (fixes the GEMM rate)" if row is ROWS[0] else ""
        cells = [f"{name.replace('-2021', '').upper()}{note}", str(tp), str(pp), str(gpus),
                 str(batch), str(published), f"{step:.3f}"]
        for s_, m_ in ((step, memory), (plain_step, plain_memory)):
            achieved = per_gpu(row, s_)
            cells += [f"{achieved / 1e12:.1f} ({100 * achieved / PEAK:.0f}% of peak)",
                      f"{100 * (achieved / (published * 1e12) - 1):+.1f}%",
                      f"{m_ / 1024:.1f} GiB"]
        out("| " + " | ".join(cells) + " |")
    out("")
    out("```")
    for cmd, text in outputs:
        out("$ " + " ".join(shown(c) for c in cmd))
        out(text.rstrip())
    out("```")
    out("")
    out("The memory column is dtc's own plan (a ddp row holds every sequence of a copy's "
        "batch at once; a pipeline's first stage holds the activations of as many "
        "micro-batches as there are stages), not Megatron's; the A100s have 80 GB. What the "
        "predictions leave out: docs/cluster-model.md, Validation.")
    text = "\n".join(lines) + "\n"
    with open(args.out, "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
