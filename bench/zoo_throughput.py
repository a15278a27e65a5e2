#!/usr/bin/python3
"""Training speed of the model zoo: dtc against PyTorch eager, same run.

For each architecture of test/zoo/zoo_models.py (all, or --models a,b):
export it as run_zoo.py does (training mode, dynamic batch), compile it with
`dtc --batch-size=8 --optimizer=sgd --lr=0.01`, and time training steps of
the compiled program and of the same PyTorch module (same optimizer, same
loss, the same four batches of run_zoo.py's data, in order).

Timing: the sides alternate, --rounds runs each; a run's figure is its
median step time (dtc: from --metrics with --log-every=1, whose per-step
rate times the step alone; PyTorch: perf_counter around each step), after
two warm-up steps. Each side keeps its best (lowest) run: a slow spell of
this shared machine then hits both sides rather than one.

Each model runs in a fresh process: PyTorch's step time for a small model
grew several-fold after a run of large convolutional models in the same
process.

Threads: --threads N sets OMP_NUM_THREADS / OPENBLAS_NUM_THREADS /
MKL_NUM_THREADS before torch is imported, torch.set_num_threads(N), and
the program's --threads=N.

torch.compile: with --compile-python PY (an interpreter with PyTorch 2.x
and torchvision, e.g. a virtual environment: Debian's PyTorch 1.13 has no
torch.compile), each model also trains under torch.compile in that
interpreter (bench/torch_compile_step.py: same module, optimizer, loss and
batches; the compiling first steps untimed; --rounds runs after the dtc and
eager ones, in one process so that it compiles once).

Usage:
  zoo_throughput.py [--models a,b] [--threads N] [--rounds R] [--seconds S]
                    [--compile-python PY] [--out bench/results/zoo-throughput.md]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", help="comma-separated zoo names (default: all)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=3, help="timed runs per side, alternating")
    p.add_argument("--seconds", type=float, default=1.0,
                   help="rough length of one timed run (sets the step count)")
    p.add_argument("--max-steps", type=int, default=300, help="at most this many steps a run")
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--work", default="/tmp/dtc-zoo-throughput")
    p.add_argument("--out", help="write the Markdown table here")
    p.add_argument("--compile-python", help="a Python with PyTorch 2.x: add a torch.compile column")
    p.add_argument("--single", help=argparse.SUPPRESS)  # internal: one model, JSON out
    return p.parse_args()


ARGS = parse_args()
# Before torch (and OpenBLAS) load: they read these once.
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(ARGS.threads)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "test", "zoo"))
import run_zoo  # noqa: E402
import zoo_models  # noqa: E402

BATCH = run_zoo.BATCH
WARMUP = 2


def compile_dtc(name, spec, work):
    onnx_path = os.path.join(work, name + ".onnx")
    model = run_zoo.export(name, spec, onnx_path)
    data = os.path.join(work, "data")
    x, y = run_zoo.make_data(spec, model, data)
    program = os.path.join(work, "train")
    cmd = [os.path.join(ARGS.build, "bin", "dtc"), onnx_path, "-o", program,
           f"--batch-size={BATCH}", "--optimizer=sgd", "--lr=0.01"]
    if spec.task == "mse":
        cmd.append("--loss=mse")
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return program, data, x, y


def dtc_median_step(program, data, steps, work):
    metrics = os.path.join(work, "metrics.jsonl")
    if os.path.exists(metrics):
        os.remove(metrics)
    subprocess.run([program, f"--data={data}", "--shuffle=false", "--epochs=1000000",
                    f"--max-steps={steps + WARMUP}", f"--threads={ARGS.threads}", "--quiet",
                    "--log-every=1", f"--metrics={metrics}"], check=True)
    rates = [json.loads(l)["samples_per_s"] for l in open(metrics) if '"loss"' in l]
    return statistics.median(BATCH / r for r in rates[WARMUP:])


def torch_stepper(spec, x, y):
    """A function(steps) -> median step time of PyTorch eager training."""
    torch.set_num_threads(ARGS.threads)
    torch.manual_seed(0)
    module = spec.make_model()
    module.train()
    opt = torch.optim.SGD(module.parameters(), lr=0.01)
    batches = []
    for i in range(len(x) // BATCH):
        xb = torch.from_numpy(x[i * BATCH:(i + 1) * BATCH])
        yb = torch.from_numpy(y[i * BATCH:(i + 1) * BATCH])
        batches.append((xb, yb))

    def step(i):
        xb, yb = batches[i % len(batches)]
        opt.zero_grad()
        if spec.task == "inside":
            loss = module(xb, yb)
        else:
            out = module(xb)
            loss = F.mse_loss(out, yb) if spec.task == "mse" else run_zoo.loss_of(spec, out, yb)
        loss.backward()
        opt.step()

    def timed(steps):
        times = []
        for i in range(steps + WARMUP):
            start = time.perf_counter()
            step(i)
            times.append(time.perf_counter() - start)
        return statistics.median(times[WARMUP:])

    return timed


def measure(name):
    spec = zoo_models.MODELS[name]
    work = os.path.join(ARGS.work, name)
    os.makedirs(work, exist_ok=True)
    program, data, x, y = compile_dtc(name, spec, work)
    torch_timed = torch_stepper(spec, x, y)
    estimate = torch_timed(3)  # also the warm-up of PyTorch's allocator
    steps = max(5, min(ARGS.max_steps, int(ARGS.seconds / max(estimate, 1e-6))))
    dtc = ref = float("inf")
    for _ in range(ARGS.rounds):
        dtc = min(dtc, dtc_median_step(program, data, steps, work))
        ref = min(ref, torch_timed(steps))
    return spec.family, steps, dtc, ref, compiled_step(name, data, steps)


def compiled_step(name, data, steps):
    """{"step": s, ...} of torch.compile in --compile-python, or {"error": why}."""
    if not ARGS.compile_python:
        return None
    cmd = [ARGS.compile_python, os.path.join(ROOT, "bench", "torch_compile_step.py"),
           "--model", name, "--data", data, "--steps", str(steps), "--rounds", str(ARGS.rounds),
           "--threads", str(ARGS.threads), "--batch", str(BATCH)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    if p.returncode != 0 or not lines:
        why = (p.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": why[:200]}
    return json.loads(lines[-1])


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip() + f", {os.cpu_count()} cores"
    except OSError:
        pass
    return "unknown"


def measure_in_subprocess(name):
    """measure(name) in a fresh interpreter; None (after printing why) on failure."""
    cmd = [sys.executable, os.path.abspath(__file__), "--single", name]
    for flag in ("threads", "rounds", "seconds", "max_steps", "build", "work", "compile_python"):
        if getattr(ARGS, flag) is not None:
            cmd += ["--" + flag.replace("_", "-"), str(getattr(ARGS, flag))]
    p = subprocess.run(cmd, capture_output=True, text=True)
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    if p.returncode != 0 or not lines:
        why = (p.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"{name}: failed: {why[:300]}", flush=True)
        return None
    return json.loads(lines[-1])


def main():
    if ARGS.single:
        family, steps, dtc, ref, compiled = measure(ARGS.single)
        print(json.dumps({"family": family, "steps": steps, "dtc": dtc, "ref": ref,
                          "compiled": compiled}))
        return 0
    names = ARGS.models.split(",") if ARGS.models else list(zoo_models.MODELS)
    unknown = [n for n in names if n not in zoo_models.MODELS]
    if unknown:
        sys.exit("zoo_throughput.py: unknown models: " + ", ".join(unknown))
    rows = []
    compiled = {}  # name -> torch.compile's step time, or why it did not run
    compile_version = "2.x"
    for name in names:
        r = measure_in_subprocess(name)
        if r is None:
            continue
        family, steps, dtc, ref = r["family"], r["steps"], r["dtc"], r["ref"]
        rows.append((name, family, steps, dtc, ref, ref / dtc))
        line = (f"{name:20s} dtc {dtc * 1e3:9.3f} ms/step  PyTorch {ref * 1e3:9.3f} ms/step  "
                f"dtc/PyTorch {ref / dtc:5.2f}x")
        c = r.get("compiled")
        if c is not None:
            compiled[name] = c.get("step", c.get("error"))
            if "step" in c:
                line += f"  torch.compile {c['step'] * 1e3:9.3f} ms/step ({c['step'] / dtc:5.2f}x)"
                compile_version = c["torch"]
            else:
                line += f"  torch.compile failed: {c['error']}"
        print(line, flush=True)
    if not rows:
        return 1
    ratios = [r[5] for r in rows]
    command = "/usr/bin/python3 bench/zoo_throughput.py " + " ".join(sys.argv[1:])
    with_compile = bool(compiled)
    header = "| model | family | steps/run | dtc ms/step | PyTorch ms/step | dtc / PyTorch (steps/s) |"
    rule = "|---|---|---|---|---|---|"
    if with_compile:
        header += " torch.compile ms/step | dtc / torch.compile |"
        rule += "---|---|"

    def row(n, f, s, d, r, x):
        cells = f"| {n} | {f} | {s} | {d * 1e3:.3f} | {r * 1e3:.3f} | {x:.2f}x |"
        if with_compile:
            c = compiled.get(n)
            cells += (f" {c * 1e3:.3f} | {c / d:.2f}x |" if isinstance(c, float)
                      else " failed | - |")
        return cells

    lines = [
        f"# Model zoo training speed, dtc vs PyTorch eager ({ARGS.threads} thread"
        f"{'s' if ARGS.threads > 1 else ''})",
        "",
        f"Command: `{command.strip()}`",
        "",
        header,
        rule,
    ] + [row(*r) for r in rows] + [
        "",
        f"{len(rows)} models: median ratio {statistics.median(ratios):.2f}x, lowest "
        f"{min(ratios):.2f}x ({rows[ratios.index(min(ratios))][0]}), highest "
        f"{max(ratios):.2f}x ({rows[ratios.index(max(ratios))][0]}).",
    ]
    compile_ratios = [compiled[n] / d for n, _, _, d, _, _ in rows
                      if isinstance(compiled.get(n), float)]
    if compile_ratios:
        lines.append(
            f"Against torch.compile ({len(compile_ratios)} models it compiled): median ratio "
            f"{statistics.median(compile_ratios):.2f}x, lowest {min(compile_ratios):.2f}x.")
    failed = {n: c for n, c in compiled.items() if not isinstance(c, float)}
    if failed:
        lines.append("torch.compile failed on: " + "; ".join(f"{n} ({c})" for n, c in failed.items()))
    compile_note = ("torch.compile is not compared in this run (--compile-python not given; "
                    "docs/performance.md)." if not with_compile else
                    f"torch.compile: PyTorch {compile_version} from PyPI in a virtual environment, "
                    "default mode (inductor), its compiling first steps untimed, its "
                    f"{ARGS.rounds} runs after the other sides' (one process, one compilation).")
    lines += [
        "",
        f"Batch {BATCH}, SGD lr 0.01, the zoo's sizes (test/zoo/zoo_models.py). Each side "
        f"alternates {ARGS.rounds} timed runs with the other; a run's figure is its median "
        "step time after 2 warm-up steps, and each side's best run counts. dtc's step time "
        "is the program's own per-step measurement (--metrics, --log-every=1); each model "
        "runs in a fresh process. "
        f"PyTorch {torch.__version__} eager, default backends (oneDNN "
        f"{'on' if torch.backends.mkldnn.is_available() else 'off'}), "
        f"torch.set_num_threads({ARGS.threads}); " + compile_note,
        f"CPU: {cpu_name()}, shared with other work: figures move by 10-20% between runs.",
    ]
    print("\n".join(lines))
    if ARGS.out:
        with open(ARGS.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
