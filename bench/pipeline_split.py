#!/usr/bin/env python3
"""Splitting one model over two devices: sequential split vs pipelining.

The experiment of PyTorch's "model parallel" tutorial (ResNet-50 split over
two GPUs, then pipelined with micro-batches), on this machine's CPU: two
ranks (one core each, one thread each, bound to their cores by dtcrun) play
the two devices. The model is examples/models/export_models.py's `deepmlp`
(784 -> 6 x 1024 -> 10, 5.8M weights), batch 256, SGD; it is split into 2
stages by dtc's cost model. Configurations, all measured in this run:

  one process   dtc, no split, 1 rank (the single-device baseline)
  PyTorch       the same module in PyTorch eager, 1 thread (for reference)
  sequential    dtc --strategy=model --stages=2 --send-early=false: stage 1
                waits while stage 0 works and vice versa, one stage busy at a
                time (the tutorial's first experiment, and what autograd does
                in PyTorch's version of it)
  model split   dtc --strategy=model --stages=2 (the default --send-early):
                still one micro-batch, but stage 1 sends its input gradient
                before computing its weight gradients, so stage 0's backward
                overlaps them
  pipeline M    dtc --strategy=pipeline --stages=2 --micro-batches=M, for a
                sweep of M (GPipe and 1F1B)
  auto          the M dtc's --micro-batches=auto picks from its cost model

Each dtc configuration trains on synthetic data for --steps steps; the step
time is the median over the steps after the first two (warm-up), from the
program's per-step metrics; with --repeats R each configuration (baselines
included) runs R times and keeps its fastest median, since interference on
this shared machine only ever slows a run down. Prints a table, writes it (with the command) to
bench/results/pipeline-split-batchB.md and a plot to the same name's .png.

Run:  /usr/bin/python3 bench/pipeline_split.py [--steps N] [--batch-size B] [--repeats R]
The recorded results: --steps 40 --repeats 2 --batch-size 1024 and
--steps 40 --batch-size 256 (bench/results/).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def export_model(build):
    path = os.path.join(build, "generated-models", "deepmlp.onnx")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        run(["/usr/bin/python3", os.path.join(ROOT, "examples", "models", "export_models.py"),
             "--out", os.path.dirname(path), "deepmlp"])
    return path


def step_seconds(metrics, samples_per_step):
    """Median step time from the logged samples/s, skipping 2 warm-up steps."""
    rates = []
    with open(metrics) as f:
        for line in f:
            record = json.loads(line)
            if "step" in record and "samples_per_s" in record and record["step"] > 2:
                rates.append(record["samples_per_s"])
    return samples_per_step / statistics.median(rates)


REPEATS = 1  # set from --repeats in main()


def dtc_config(build, model, work, name, flags, ranks, steps, batch, port):
    program = os.path.join(work, name)
    run([os.path.join(build, "bin", "dtc"), model, f"--batch-size={batch}", "--optimizer=sgd",
         "--lr=0.01", "-o", program] + flags)
    metrics = os.path.join(work, name + ".jsonl")
    args = [program, "--data=synthetic", "--epochs=1000", f"--max-steps={steps}",
            "--log-every=1", f"--metrics={metrics}", "--quiet"]
    best = float("inf")
    for _ in range(REPEATS):
        if ranks == 1:
            run(args + ["--threads=1"])
        else:
            run([os.path.join(build, "bin", "dtcrun"), f"--nproc-per-node={ranks}",
                 f"--master-port={port}", "--threads-per-rank=1"] + args)
        best = min(best, step_seconds(metrics, batch))
    return best


def auto_choice(build, model, batch):
    out = run([os.path.join(build, "bin", "dtc"), model, f"--batch-size={batch}",
               "--strategy=pipeline", "--stages=2", "--micro-batches=auto", "--report"]).stdout
    m = re.search(r"^\s+(\d+) x\s+\d+\s+[0-9.]+ ms\s+<- chosen", out, re.M)
    return int(m.group(1)), out


def torch_step_seconds(batch, steps):
    import importlib.util
    import torch
    torch.set_num_threads(1)
    spec = importlib.util.spec_from_file_location(
        "export_models", os.path.join(ROOT, "examples", "models", "export_models.py"))
    models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(models)
    torch.manual_seed(0)
    model = models.DeepMLP()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(batch, 1, 28, 28), torch.randint(0, 10, (batch,))
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times[2:])


def plot(rows, auto_m, batch, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels = [r[0] for r in rows]
    ms = [r[1] * 1e3 for r in rows]
    colors = []
    for label, _ in rows:
        if label.startswith("pipeline"):
            colors.append("tab:green" if f"M={auto_m} " in label + " " else "tab:blue")
        elif label.startswith("sequential"):
            colors.append("tab:red")
        elif label.startswith("model"):
            colors.append("tab:orange")
        else:
            colors.append("tab:gray")
    fig, ax = plt.subplots(figsize=(10, 4.8))
    bars = ax.bar(range(len(rows)), ms, color=colors)
    for bar, label in zip(bars, labels):
        if label.endswith(f"M={auto_m}") and label.startswith("pipeline 1f1b"):
            ax.annotate("auto", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                        ha="center", va="bottom", fontweight="bold")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels, rotation=35, ha="right", fontsize=8)
    ax.set_ylabel("step time (ms), lower is better")
    ax.set_title(f"deepmlp, batch {batch}, 2 CPU ranks: sequential split vs pipelined "
                 "(green: --micro-batches=auto)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--repeats", type=int, default=1,
                   help="runs per dtc configuration; the fastest median is kept")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--sweep", default="2,4,8,16,32")
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--out", help="results path without extension (default: "
                   "bench/results/pipeline-split-batchB)")
    args = p.parse_args()
    model = export_model(args.build)
    batch, steps = args.batch_size, args.steps
    if not args.out:
        args.out = os.path.join(ROOT, "bench", "results", f"pipeline-split-batch{batch}")
    global REPEATS
    REPEATS = max(1, args.repeats)
    auto_m, report = auto_choice(args.build, model, batch)
    rows = []
    port = 29900
    with tempfile.TemporaryDirectory() as work:
        def add(label, seconds):
            rows.append((label, seconds))
            print(f"{label:24s} {seconds * 1e3:9.1f} ms/step  {batch / seconds:8.0f} samples/s",
                  flush=True)
        add("PyTorch, 1 process", torch_step_seconds(batch, steps))
        add("dtc, 1 process", dtc_config(args.build, model, work, "one", [], 1, steps, batch, 0))
        add("sequential split", dtc_config(args.build, model, work, "sequential",
                                           ["--strategy=model", "--stages=2",
                                            "--send-early=false"], 2, steps, batch, port))
        port += 2
        add("model split", dtc_config(args.build, model, work, "model",
                                      ["--strategy=model", "--stages=2"], 2, steps, batch, port))
        for schedule in ("gpipe", "1f1b"):
            for m in [int(v) for v in args.sweep.split(",")]:
                if batch % m:
                    continue
                port += 2
                add(f"pipeline {schedule} M={m}",
                    dtc_config(args.build, model, work, f"{schedule}{m}",
                               ["--strategy=pipeline", "--stages=2", f"--micro-batches={m}",
                                f"--schedule={schedule}"], 2, steps, batch, port))
    sequential = dict(rows)["sequential split"]
    model_split = dict(rows)["model split"]
    one = dict(rows)["dtc, 1 process"]
    best = min((r for r in rows if r[0].startswith("pipeline")), key=lambda r: r[1])
    auto = dict(rows).get(f"pipeline 1f1b M={auto_m}")
    lines = [
        "# Pipeline split benchmark (2 CPU ranks)",
        "",
        "Command: `/usr/bin/python3 bench/pipeline_split.py "
        + " ".join(sys.argv[1:]) + "`",
        "",
        f"Model: deepmlp (784 -> 6 x 1024 -> 10), batch {batch}, SGD, synthetic data; "
        f"step time = median over steps 3..{steps}"
        + (f", fastest of {REPEATS} runs per configuration" if REPEATS > 1 else "")
        + "; each rank 1 thread on its own core.",
        "",
        "| configuration | step time (ms) | samples/s | vs sequential split | vs model split "
        "| vs dtc 1 process |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, seconds in rows:
        lines.append(f"| {label} | {seconds * 1e3:.1f} | {batch / seconds:.0f} | "
                     f"{sequential / seconds:.2f}x | {model_split / seconds:.2f}x | {one / seconds:.2f}x |")
    lines += [
        "",
        f"Best pipelined: {best[0]}, {sequential / best[1]:.2f}x faster than the sequential split "
        f"and {model_split / best[1]:.2f}x faster than dtc's model split.",
        f"--micro-batches=auto chose M={auto_m}"
        + (f" (1f1b: {auto * 1e3:.1f} ms, {sequential / auto:.2f}x the sequential split)."
           if auto else "."),
        "",
        "The cost model's prediction (`dtc --report`):",
        "",
        "```",
        report.rstrip(),
        "```",
    ]
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    plot(rows, auto_m, batch, args.out + ".png")
    print("\n".join(lines[-len(lines) + 8:][:len(rows) + 4]))
    print(f"wrote {args.out}.md and {args.out}.png")


if __name__ == "__main__":
    main()
