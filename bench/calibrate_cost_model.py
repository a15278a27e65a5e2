#!/usr/bin/env python3
"""Calibrates the cost model's op costs for this machine, by measuring.

The roofline (passes/CostModel.h) charges every memory-bound op the same
bandwidth and every op the same few FLOPs per element; on this CPU the small
transformers' elementwise ops run from cache far above it, GELU and softmax
are compute-bound far below it, and small convolutions miss the GEMM rate.
This script measures instead: it compiles training programs (the
calibration set below, at the batch a rank of a 2-device plan runs and at a
pipeline micro-batch) for ddp on this machine's 2 cores, runs each with
--trace five times (rank 0's kernels of step 2; each op keeps its median
time), as a 2-device plan's ranks run (--ranks 1: one process while a
second copy trains on the other core, as sessions 20-35 calibrated; the
copy's steps do not line up with the process's, and ResNet-18's optimizer
updates, which a ddp rank runs while the other rank runs its own, were
priced 20% short), and fits, per op kind
(the profile's kinds: op name, and a convolution's algorithm), seconds per
call + bytes / byte rate + FLOPs / FLOP rate (the FLOP term for matrix
products and convolutions only; for those also seconds per call + the
larger of the two terms, a grid search, kept where it fits better:
"overlap" in the cluster file), by non-negative least squares weighted
toward relative error, on the ops that fit the cache (with the kernels of 2-stage pipelines,
PIPELINE_SET, whose in-place gradient sums are a kind of their own); ops that touch
more (CACHE_BYTES; the 53.6M-parameter MLP's, ResNet-18's larger ones) give
the kind a rate for the bytes beyond it. The
FLOPs and bytes are the compiler's own estimates, the ones the cost model
applies the rates to. --profile's "the rest" gives the step's overhead
beyond its kernels: its data wait and the bytes it filled give the rate a
rank fills its batch at (synthetic data, as the sweeps use), the rest
beyond that the training loop's own.

It writes the fitted kinds into the cluster file's device.op_costs (with
--op-times also each measured op shape's median time into device.op_times,
which the cost model prices those ops by instead of the fit: no better
across runs on this host, docs/cluster-model.md), device.step_overhead_s and
device.batch_fill_bytes_per_s (docs/cluster-model.md), and a report: per program,
the measured kernel time against the fit's prediction, both with every
program in the fit and with the program's model left out of it (the second
is the honest figure for a model the calibration has not seen).

Run:  /usr/bin/python3 bench/calibrate_cost_model.py [--build DIR] [--ranks 2|1]
          [--cluster clusters/this-machine-cpu.json] [--out FILE.md] [--passes N]
          [--op-times] [--raw FILE.json]
"""
import argparse
import collections
import itertools
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import numpy as np
from scipy.optimize import nnls

import host_speed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# name, source, batches (a 2-device plan's per-rank batch, a micro-batch), flags
CALIBRATION_SET = [
    ("mlp", "examples", [32, 8], ["--optimizer=adam", "--lr=0.001"]),
    ("lenet", "examples", [32, 8], ["--optimizer=sgd", "--lr=0.05", "--momentum=0.9"]),
    ("lenet5_avgpool", "zoo", [32, 8], ["--optimizer=sgd", "--lr=0.05", "--momentum=0.9"]),
    ("bert_encoder", "zoo", [8, 2], ["--optimizer=adamw", "--lr=0.001"]),
    ("nanogpt", "zoo", [8, 2], ["--optimizer=adamw", "--lr=0.001"]),
    ("vit_tiny", "zoo", [8, 2], ["--optimizer=adamw", "--lr=0.001"]),
    ("resnet18", "zoo", [4, 1], ["--optimizer=sgd", "--lr=0.01", "--momentum=0.9"]),
    ("mlp_mixer", "zoo", [8], ["--optimizer=adamw", "--lr=0.001"]),
    ("bert_padding_mask", "zoo", [8], ["--optimizer=adamw", "--lr=0.001"]),
    # bench/fsdp_memory.py's 53.6M-parameter MLP: its GEMMs and updates touch
    # more than the cache holds, which the streaming rates are fitted to.
    ("mlp53m", "bench", [32], ["--optimizer=adam", "--lr=0.001"]),
]
# An op touching more bytes than this streams the rest from memory. Chosen by
# the fit (2026-11-27): 1, 2, 4 and 8 MiB fit the programs equally well
# (mean absolute error 8.5-8.6%), 16 MiB (half the shared L3) worse (10.3%):
# beside a rank streaming its own tensors, little more than the 1 MiB L2
# of each core stays put.
CACHE_BYTES = 2 * 2**20
# 2-stage 1F1B pipelines of 4 micro-batches (rows per micro-batch): their
# kernels run between messages, on weights the previous micro-batch used,
# and sum each weight gradient in place ("dtc.gemm (accumulate)", a kind
# only pipelines have). Traced per kernel (the program's --trace, steps 2-4,
# both ranks), their messages left out.
PIPELINE_SET = [
    ("mlp", "examples", 8, ["--optimizer=adam", "--lr=0.001"]),
    ("lenet", "examples", 8, ["--optimizer=sgd", "--lr=0.05", "--momentum=0.9"]),
    ("lenet5_avgpool", "zoo", 8, ["--optimizer=sgd", "--lr=0.05", "--momentum=0.9"]),
    ("bert_encoder", "zoo", 2, ["--optimizer=adamw", "--lr=0.001"]),
    ("vit_tiny", "zoo", 2, ["--optimizer=adamw", "--lr=0.001"]),
    ("resnet18", "zoo", 1, ["--optimizer=sgd", "--lr=0.01", "--momentum=0.9"]),
]
PIPELINE_MICRO_BATCHES = 4
# Kinds whose time is a message's or a collective's, waits included: priced
# by the cluster's links, not fitted here.
COMMUNICATION = ("dtc.send", "dtc.recv", "dtc.all_reduce", "dtc.broadcast", "dtc.gather_",
                 "dtc.tp_reduce", "dtc.tp_gather")
RUNS = 5
# Past these the host was not in a state worth calibrating at (host_unsteady).
MAX_CONTENTION = 1.10
MAX_PROBE_SPREAD = 1.15
# --ranks: how each calibration program runs while its kernels are traced.
HOW_RUN = {
    1: "single-process programs on this machine, the other core running a second copy "
       "(as a 2-device plan's other rank)",
    2: "programs compiled for ddp on this machine's 2 cores, the batch a rank as listed, "
       "rank 0's kernels (collectives left out)",
}
FLOP_KINDS = ("dtc.gemm", "dtc.matmul", "dtc.conv")  # prefixes; not dtc.conv_columns
REST = re.compile(r"the rest \(data, loop, logging\) ([0-9.]+) ms")
DATA_WAIT = re.compile(r"data wait: ([0-9.]+) ms per step .*: ([0-9.]+) MB a step")


def is_flop_kind(kind):
    return kind.startswith(FLOP_KINDS) and not kind.startswith("dtc.conv_columns")


def onnx_path(name, source, work):
    if source == "examples":
        return os.path.join(ROOT, "examples", "models", name + ".onnx")
    if source == "bench":
        path = os.path.join(work, name + ".onnx")
        sys.path.insert(0, os.path.join(ROOT, "bench"))
        import fsdp_memory
        fsdp_memory.export(path)
        return path
    path = os.path.join(work, name + ".onnx")
    if not os.path.exists(path):
        sys.path.insert(0, os.path.join(ROOT, "test", "zoo"))
        import run_zoo
        import zoo_models
        run_zoo.export(name, zoo_models.MODELS[name], path)
    return path


def measure(program, work):
    """Each op of step 2 as (kind, flops, bytes, median seconds); the overhead.

    A second copy of the program trains on the other core meanwhile, as the
    other rank of a 2-device plan does: the two share the caches and the
    memory, and the op costs are those a rank sees. The median of the runs,
    not the fastest: bench/auto_plan.py compares predictions with median
    steps, and on a host whose speed drifts by 10-20% the sum of each op's
    fastest time is a step that never happens (the AVX2 host's sweep was
    5-14% slower than predicted on every 2-rank plan of the small models)."""
    samples = collections.defaultdict(list)
    trace = os.path.join(work, "trace.json")
    busy = subprocess.Popen(["taskset", "-c", "1", program, "--data=synthetic",
                             "--epochs=1000000", "--max-steps=1000000", "--threads=1",
                             "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(RUNS):
            subprocess.run(["taskset", "-c", "0", program, "--data=synthetic", "--epochs=1000",
                            "--max-steps=4", "--threads=1", "--quiet", f"--trace={trace}"],
                           check=True, capture_output=True)
            with open(trace) as f:
                events = json.load(f)
            events = events["traceEvents"] if isinstance(events, dict) else events
            ops = [e for e in events if e.get("ph") == "X" and "op" in e.get("args", {})]
            for i, e in enumerate(ops):
                a = e["args"]
                samples[i].append((a["op"], a["flops"], a["bytes"], e["dur"] * 1e-6))
        profile = subprocess.run(["taskset", "-c", "0", program, "--data=synthetic",
                                  "--epochs=1000", "--max-steps=30", "--threads=1", "--quiet",
                                  "--profile"], check=True, capture_output=True, text=True)
    finally:
        busy.kill()
        busy.wait()
    text = profile.stdout + profile.stderr
    rest, wait = REST.search(text), DATA_WAIT.search(text)
    ops = [samples[i][0][:3] + (statistics.median(s[3] for s in samples[i]),)
           for i in sorted(samples)]
    if not rest or not wait:
        return ops, None
    # The rest of the step: its batch fill (seconds, bytes), and the loop.
    return ops, (float(rest.group(1)) * 1e-3, float(wait.group(1)) * 1e-3,
                 float(wait.group(2)) * 1e6)


def measure_ranks(build, program, work):
    """measure(), for a data-parallel program on 2 ranks: rank 0's ops of
    step 2 (collectives left out, the cluster's links price them), the
    median of RUNS runs, and its overhead. The ranks run the same kernels
    at the same moments, as the sweep's plans do: their optimizer updates
    start together after each bucket's all-reduce and stream weights,
    gradients and state from memory at once. Beside an unsynchronised copy
    (measure()) ResNet-18's updates took 8.4 ms a step, on a ddp rank 10.7
    (2026-11-30, --profile)."""
    samples = collections.defaultdict(list)
    trace = os.path.join(work, "trace.json")
    command = [os.path.join(build, "bin", "dtcrun"), "--nproc-per-node=2", "--master-port=0",
               program, "--data=synthetic", "--epochs=1000", "--threads=1", "--quiet"]
    for _ in range(RUNS):
        subprocess.run(command + ["--max-steps=4", f"--trace={trace}"], check=True,
                       capture_output=True, timeout=600)
        with open(trace) as f:
            events = json.load(f)
        events = events["traceEvents"] if isinstance(events, dict) else events
        ops = [e for e in events if e.get("ph") == "X" and "op" in e.get("args", {})
               and not e["args"]["op"].startswith(COMMUNICATION)]
        for i, e in enumerate(ops):
            a = e["args"]
            samples[i].append((a["op"], a["flops"], a["bytes"], e["dur"] * 1e-6))
    profile = subprocess.run(command + ["--max-steps=30", "--profile"], check=True,
                             capture_output=True, text=True, timeout=600)
    text = profile.stdout + profile.stderr
    rest, wait = REST.search(text), DATA_WAIT.search(text)
    ops = [samples[i][0][:3] + (statistics.median(s[3] for s in samples[i]),)
           for i in sorted(samples)]
    if not rest or not wait:
        return ops, None
    return ops, (float(rest.group(1)) * 1e-3, float(wait.group(1)) * 1e-3,
                 float(wait.group(2)) * 1e6)


def measure_pipeline(build, program, work):
    """Each kernel of a pipeline step (both stages) as (kind, flops, bytes,
    median seconds over steps 2-4 of RUNS runs); messages left out."""
    samples = collections.defaultdict(list)
    trace = os.path.join(work, "pipeline-trace.json")
    for _ in range(RUNS):
        subprocess.run([os.path.join(build, "bin", "dtcrun"), "--nproc-per-node=2",
                        "--master-port=0", program, "--data=synthetic", "--epochs=1000",
                        "--max-steps=5", "--threads=1", "--quiet", f"--trace={trace}"],
                       check=True, capture_output=True, timeout=600)
        with open(trace) as f:
            events = json.load(f)["traceEvents"]
        kernels = collections.defaultdict(list)  # (stage, step): in time order
        for e in events:
            if e.get("ph") == "X" and "op" in e.get("args", {}):
                kernels[(e["tid"], e["args"]["step"])].append(e)
        for (stage, _), ops in kernels.items():
            for i, e in enumerate(sorted(ops, key=lambda e: e["ts"])):
                a = e["args"]
                samples[(stage, i)].append((a["op"], a["flops"], a["bytes"], e["dur"] * 1e-6))
    ops = []
    for key in sorted(samples):
        kind, flops, nbytes, _ = samples[key][0]
        if not kind.startswith(COMMUNICATION):
            ops.append((kind, flops, nbytes, statistics.median(s[3] for s in samples[key])))
    return ops


def fit_overlapping(f, b, t, weight):
    """seconds per call + max(per FLOP * FLOPs, per byte * bytes), the rates
    searched on a logarithmic grid, the call cost the weighted mean of what
    the larger term leaves (at least 0): (call, per_flop, per_byte, error)."""
    per_flop = 1.0 / np.logspace(9, 12.5, 71)[:, None, None]
    per_byte = 1.0 / np.logspace(8.5, 11.5, 61)[None, :, None]
    larger = np.maximum(per_flop * f[None, None, :], per_byte * b[None, None, :])
    w2 = weight ** 2
    call = np.maximum(0.0, ((t - larger) * w2).sum(-1) / w2.sum())
    error = (((t - larger - call[..., None]) * weight) ** 2).sum(-1)
    i, j = np.unravel_index(np.argmin(error), error.shape)
    return float(call[i, j]), float(per_flop[i, 0, 0]), float(per_byte[0, j, 0]), float(error[i, j])


def fit(programs):
    """Per kind: (seconds per call, per FLOP, per byte, per streamed byte,
    overlap).

    The first three from the ops that fit the cache, as their sum or, for
    matrix products and convolutions where that fits better, with the FLOPs
    and the bytes overlapping (the larger of the two terms; overlap True);
    the streaming cost from the ops beyond it, as what they take over the
    in-cache cost of their first CACHE_BYTES, per byte beyond (0: no op of
    the kind streamed, or none was slower for it)."""
    points = collections.defaultdict(list)
    for ops in programs:
        for kind, flops, nbytes, seconds in ops:
            points[kind].append((flops, nbytes, seconds))
    table = {}
    for kind, pts in points.items():
        cached = [p for p in pts if p[1] <= CACHE_BYTES] or pts
        f = np.array([p[0] for p in cached])
        b = np.array([p[1] for p in cached])
        t = np.array([p[2] for p in cached])
        if not np.any(b > 0):
            continue  # costs nothing by the estimates: the roofline's per-call cost stays
        weight = 1.0 / np.sqrt(np.maximum(t, 1e-7))  # between absolute and relative error
        columns = [np.ones_like(t), b] + ([f] if is_flop_kind(kind) else [])
        coef, _ = nnls(np.stack(columns, 1) * weight[:, None], t * weight)
        call, per_byte = float(coef[0]), float(coef[1])
        per_flop = float(coef[2]) if len(coef) > 2 else 0.0
        if per_byte <= 0 and per_flop <= 0:  # no size dependence seen: per byte through 0
            call, per_byte = 0.0, float(t.sum() / b.sum())
        overlap = False
        if is_flop_kind(kind) and np.any(f > 0):
            summed = (((t - call - per_byte * b - per_flop * f) * weight) ** 2).sum()
            o_call, o_flop, o_byte, o_error = fit_overlapping(f, b, t, weight)
            if o_error < summed:
                call, per_flop, per_byte, overlap = o_call, o_flop, o_byte, True
        per_stream = 0.0
        streamed = [p for p in pts if p[1] > CACHE_BYTES]
        if streamed and len(streamed) < len(pts):
            in_cache = (call, per_flop, per_byte, 0.0, overlap)
            extra = sum(s - op_seconds(in_cache, f, CACHE_BYTES) for f, _, s in streamed)
            beyond = sum(b - CACHE_BYTES for _, b, _ in streamed)
            if extra > 0:
                per_stream = extra / beyond
        table[kind] = (call, per_flop, per_byte, per_stream, overlap)
    return table


def op_seconds(cost, flops, nbytes):
    """As passes/CostModel.cpp's estimateSeconds prices a calibrated kind."""
    call, per_flop, per_byte, per_stream, overlap = cost
    memory = 0.0
    if per_stream > 0 and nbytes > CACHE_BYTES:
        memory += per_stream * (nbytes - CACHE_BYTES)
        nbytes = CACHE_BYTES
    memory += per_byte * nbytes
    compute = per_flop * flops
    return call + (max(compute, memory) if overlap else compute + memory)


def predict(table, ops):
    total = 0.0
    for kind, flops, nbytes, _ in ops:
        kind = kind if kind in table else kind.split(" (")[0]  # the cost model's fallback
        if kind in table:
            total += op_seconds(table[kind], flops, nbytes)
        else:  # the roofline of the shipped file's fallback rates
            total += 0.25e-6 + max(flops / 95e9, nbytes / 8e9)
    return total


def fit_batch_fill(overheads):
    """The batch fill's rate (bytes/s) and fixed seconds a step, from each
    program's --profile (rest, data wait, bytes filled): a line through
    (bytes, wait), Theil-Sen (the median of the pairwise slopes, then the
    median intercept). Robust, not least squares: the programs whose steps
    evict everything (ResNet-18, the 53.6M MLP) wait 45-85 us for 12-100 KB,
    where the rest fill 1 KB to 0.4 MB at 9 us + 9 GB/s; a ratio of sums
    (2.7 GB/s on the AVX2 host) would price LeNet-5's 0.8 MB 3x too slow."""
    points = [(nbytes, wait) for _, wait, nbytes in overheads]
    slopes = [(w2 - w1) / (b2 - b1) for (b1, w1), (b2, w2) in itertools.combinations(points, 2)
              if abs(b2 - b1) > 0.1 * max(b1, b2)]
    if not slopes or statistics.median(slopes) <= 0:
        return 0.0, 0.0
    slope = statistics.median(slopes)
    return 1.0 / slope, max(0.0, statistics.median(w - slope * b for b, w in points))


def median_of_passes(passes):
    """The programs' ops with each op's median time over the passes. The
    host's speed drifts 5-15% over tens of minutes: a calibration whose
    kernels ran 5-16% slower than later ones predicted later sweeps 20-31
    of 55 plans within 15%, the later ones 48-55 (bench/results/
    auto-plan-avx2.md). Passes a minute apart guard against a short spell
    only. A program whose ops differ between passes (they should not)
    keeps the first pass's."""
    merged = []
    for runs in zip(*passes):
        name, batch, ops, overhead = runs[0]
        shapes = [[tuple(o[:3]) for o in run[2]] for run in runs]
        if all(shape == shapes[0] for shape in shapes):
            ops = [tuple(op[:3]) + (statistics.median(run[2][i][3] for run in runs),)
                   for i, op in enumerate(ops)]
        overheads = [run[3] for run in runs if run[3] is not None]
        merged.append((name, batch, ops,
                       tuple(statistics.median(o[k] for o in overheads) for k in range(3))
                       if overheads else None))
    return merged


def measured_times(measured):
    """Each measured op signature (kind, FLOPs, bytes) with its median time
    over every program that ran it: the cluster file's device.op_times,
    which the cost model prices those ops by before the kind's fit."""
    times = collections.defaultdict(list)
    for _, _, ops, _ in measured:
        for kind, flops, nbytes, seconds in ops:
            if not kind.startswith(COMMUNICATION):
                times[(kind, round(flops), round(nbytes))].append(seconds)
    return [[kind, flops, nbytes, float(f"{statistics.median(t):.4g}")]
            for (kind, flops, nbytes), t in sorted(times.items())]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--cluster", default=os.path.join(ROOT, "clusters", "this-machine-cpu.json"))
    p.add_argument("--out")
    p.add_argument("--raw", help="also write the measured ops here (JSON)")
    p.add_argument("--passes", type=int, default=1,
                   help="measure every program this many times, minutes apart, and keep "
                        "each op's median (the host's speed drifts)")
    p.add_argument("--ranks", type=int, choices=[1, 2], default=2,
                   help="2 (default): each program compiled for ddp on 2 ranks (the listed "
                        "batch a rank), rank 0's kernels; 1: each in one process beside a "
                        "busy copy on the other core")
    p.add_argument("--op-times", action="store_true",
                   help="also write each measured op shape's time (device.op_times), which "
                        "the cost model then uses before the fit")
    a = p.parse_args()
    dtc = os.path.join(a.build, "bin", "dtc")
    work = tempfile.mkdtemp(prefix="dtc-calibrate-")
    start_load = os.getloadavg()
    probe = host_speed.compile_probe(a.build, work)
    probes = [host_speed.probe_seconds(probe)]  # the host's speed: start, each half pass
    pair_probes = [host_speed.pair_probe_seconds(probe)]  # and beside a busy copy
    programs = []  # (model, batch, program, pipeline?)
    for name, source, batches, flags in CALIBRATION_SET:
        onnx = onnx_path(name, source, work)
        for batch in batches:
            program = os.path.join(work, f"{name}-{batch}")
            ddp = ["--strategy=ddp", f"--batch-size={2 * batch}"] if a.ranks == 2 else \
                [f"--batch-size={batch}"]
            subprocess.run([dtc, onnx, "-o", program] + ddp + flags,
                           check=True, capture_output=True)
            programs.append((name, batch, program, False))
    for name, source, rows, flags in PIPELINE_SET:
        onnx = onnx_path(name, source, work)
        program = os.path.join(work, f"{name}-pipeline-{rows}")
        subprocess.run([dtc, onnx, "-o", program, "--strategy=pipeline", "--stages=2",
                        f"--micro-batches={PIPELINE_MICRO_BATCHES}",
                        f"--batch-size={rows * PIPELINE_MICRO_BATCHES}"] + flags,
                       check=True, capture_output=True)
        programs.append((name, f"{rows} x {PIPELINE_MICRO_BATCHES} (pipeline)", program, True))
    passes = []  # per pass: (model, batch, ops, overhead) per program
    for number in range(a.passes):
        measured, probed = [], False
        for name, batch, program, pipeline in programs:
            if pipeline and not probed:  # between the programs and the pipelines
                probes.append(host_speed.probe_seconds(probe))
                pair_probes.append(host_speed.pair_probe_seconds(probe))
                probed = True
            if pipeline:
                ops, overhead = measure_pipeline(a.build, program, work), None
            elif a.ranks == 2:
                ops, overhead = measure_ranks(a.build, program, work)
            else:
                ops, overhead = measure(program, work)
            measured.append((name, batch, ops, overhead))
            print(f"pass {number + 1}: {name} {batch}: {len(ops)} kernels, "
                  f"{sum(o[3] for o in ops) * 1e3:.3f} ms", flush=True)
        probes.append(host_speed.probe_seconds(probe))
        pair_probes.append(host_speed.pair_probe_seconds(probe))
        passes.append(measured)
    measured = median_of_passes(passes)
    table = fit([ops for _, _, ops, _ in measured])
    overheads = [o for *_, o in measured if o is not None]
    fill_rate, fill_call = fit_batch_fill(overheads)
    # The loop's own time beyond the fill, and the fill's fixed part: both
    # paid once a step.
    overhead = (statistics.median(max(0.0, rest - wait) for rest, wait, _ in overheads) + fill_call
                if overheads else 0.0)

    rows = ["| model | batch | kernels measured ms | fitted, all programs | fitted, model left out |",
            "|---|---|---|---|---|"]
    for name, batch, ops, _ in measured:
        actual = sum(o[3] for o in ops)
        left_out = fit([o for n, _, o, _ in measured if n != name])
        rows.append(f"| {name} | {batch} | {actual * 1e3:.3f} | "
                    f"{(predict(table, ops) / actual - 1) * 100:+.0f}% | "
                    f"{(predict(left_out, ops) / actual - 1) * 100:+.0f}% |")

    if a.raw:
        with open(a.raw, "w") as f:
            json.dump(measured, f)
    with open(a.cluster) as f:
        cluster = json.load(f)
    device = cluster["device"]
    costs = {}
    for kind in sorted(table):
        call, per_flop, per_byte, per_stream, overlap = table[kind]
        entry = {"call_s": float(f"{call:.3g}")}
        if overlap:
            entry["overlap"] = True
        if per_flop > 0:
            entry["flops_per_s"] = float(f"{1 / per_flop:.3g}")
        if per_byte > 0:
            entry["bytes_per_s"] = float(f"{1 / per_byte:.3g}")
        if per_stream > 0:
            entry["stream_bytes_per_s"] = float(f"{1 / per_stream:.3g}")
        costs[kind] = entry
    device["op_costs"] = costs
    device.pop("op_times", None)
    if a.op_times:
        device["op_times"] = measured_times(measured)
    device["step_overhead_s"] = float(f"{overhead:.3g}")
    if fill_rate > 0:
        device["batch_fill_bytes_per_s"] = float(f"{fill_rate:.3g}")
    # dtc ignores it; auto_plan.py compares its own probes with it.
    cluster["calibration_probe_s"] = float(f"{statistics.median(probes):.4g}")
    cluster["calibration_pair_probe_s"] = float(f"{statistics.median(pair_probes):.4g}")
    device["cache_bytes"] = CACHE_BYTES
    cluster["sources"] = [s for s in cluster.get("sources", []) if not s.startswith("op_costs")]
    cluster["sources"].append(
        "op_costs, step_overhead_s, batch_fill_bytes_per_s: bench/calibrate_cost_model.py "
        "(bench/results/cost-calibration.md): per op kind, seconds per call + bytes / rate + FLOPs / rate "
        "(or the larger of the two where that fits a matrix product's kind better), "
        "fitted to the median of 5 traced steps of " + HOW_RUN[a.ranks] + "; the batch fill from --profile's data wait and "
        "bytes filled (synthetic data), the step overhead its rest beyond the fill" +
        ("; op_times: each measured op shape's "
        "median time, used before the fit for ops of that kind, FLOPs and bytes"
        if a.op_times else ""))
    with open(a.cluster, "w") as f:
        json.dump(cluster, f, indent=2)
        f.write("\n")

    text = "\n".join([
        "# Cost model calibration for this machine\n",
        f"Command: `/usr/bin/python3 bench/calibrate_cost_model.py {' '.join(sys.argv[1:])}` "
        f"(writes device.op_costs{', device.op_times' if a.op_times else ''} and "
        f"device.step_overhead_s and device.batch_fill_bytes_per_s of "
        f"{os.path.relpath(a.cluster, ROOT)})\n",
        "Each program: " + HOW_RUN[a.ranks] + ", one thread a process, synthetic data; "
        "step 2's kernels traced 5 times, each op's median time kept. Each pipeline: 2 stages (one a core), "
        f"{PIPELINE_MICRO_BATCHES} micro-batches, 1F1B; every kernel of steps 2-4 traced in 5 runs, "
        "the median kept, messages left out. Fitted per op kind: seconds per call "
        "+ bytes / rate + FLOPs / rate (FLOPs: matrix products and convolutions only), "
        "non-negative least squares weighted by 1/sqrt(time), on ops of at most 2 MiB; "
        "the bytes beyond that are charged at a streaming rate per kind, fitted on the "
        "ops that touch more (the 53.6M MLP's, ResNet-18's larger ones). The columns: the fit's prediction of the "
        "program's kernel time against the measured one, first with every program in the "
        "fit, then with all programs of that model left out (kinds the rest never run "
        "fall back to the roofline).\n",
        "Load average (1, 5, 15 min) at the start: {:.2f} {:.2f} {:.2f}; at the end: "
        "{:.2f} {:.2f} {:.2f}.\n".format(*start_load, *os.getloadavg()),
        f"Step overhead beyond the kernels and the batch fill's bytes (--profile's \"the "
        f"rest\" less its data wait, median of the programs, + the fill's fixed "
        f"{fill_call * 1e3:.3f} ms): {overhead * 1e3:.3f} ms. Batch fill (synthetic data; "
        f"--profile's data wait against the bytes filled, a Theil-Sen line through the "
        f"programs): {fill_rate * 1e-9:.2f} GB/s.\n",
        f"Passes: {a.passes} (each op's median over them).\n",
        "Host speed probe (bench/host_speed.py, LeNet batch 32 alone on core 0) at the start, "
        "then between the programs and the pipelines and at the end of each pass: "
        + ", ".join(f"{p * 1e3:.3f}" for p in probes) + " ms a step; the median is the "
        "cluster file's calibration_probe_s. The same beside a busy copy on core 1 (the pair "
        "probe; the contention a 2-rank program's kernels run under): "
        + ", ".join(f"{p * 1e3:.3f}" for p in pair_probes) + " ms, the median "
        "calibration_pair_probe_s; the two vCPUs' contention, pair / alone: "
        f"{statistics.median(pair_probes) / statistics.median(probes):.2f}.\n",
    ] + rows + ["", f"{len(table)} op kinds fitted; the table is in the cluster file"
                    + ("." if not a.op_times else
                       f", with the measured times of {len(device['op_times'])} op shapes "
                       "(device.op_times), which the cost model uses before the fit.")]) + "\n"
    unsteady = host_unsteady(probes, pair_probes)
    if unsteady:
        text += "\n**Warning:** " + unsteady + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    if unsteady:
        print("warning: " + unsteady, file=sys.stderr)


def host_unsteady(probes, pair_probes):
    """Why this calibration will predict other moments badly, or "". A
    calibration made while the two vCPUs slowed each other 1.48x (pair /
    alone; 1.00-1.04 in quiet spells) over-predicted the next sweep by a
    median 51% (bench/results/auto-plan-avx2.md, session 36, T11)."""
    contention = statistics.median(pair_probes) / statistics.median(probes)
    spread = max(probes + pair_probes) / min(probes + pair_probes)
    if contention > MAX_CONTENTION:
        return (f"the cores slowed each other {contention:.2f}x during the calibration (pair "
                f"probe / probe alone; quiet: under {MAX_CONTENTION}): rerun it in a quiet spell")
    if spread > MAX_PROBE_SPREAD:
        return (f"the host's speed moved {spread:.2f}x during the calibration (slowest probe / "
                f"fastest): rerun it in a steady spell")
    return ""


if __name__ == "__main__":
    main()
