#!/usr/bin/env python3
"""Single-process training throughput: dtc against PyTorch eager, same run.

For each model (the MNIST MLP at batch 64, the DDP tutorial's ToyModel at
batch 20, the LeNet CNN at batch 64) this compiles the ONNX file with dtc
(SGD, lr 0.01), runs the training binary on synthetic data, and trains the
same PyTorch module (from examples/models/export_models.py) with the same
optimizer on 16 pre-made random batches (dtc reads its synthetic dataset's
batches in order, --shuffle=false, copying each into the step's input).
Both sides use one thread (OMP_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1,
torch.set_num_threads(1)). The sides alternate, --rounds timed runs each,
and each side's best run counts: a slow spell of this shared machine then
hits both.

Kernels: dtc's GEMMs are OpenBLAS sgemm (OPENBLAS_CORETYPE as set in the
environment); PyTorch 1.13 from Debian calls the same OpenBLAS for its GEMMs
(BLAS_INFO=generic -> libblas.so.3 -> OpenBLAS) and oneDNN (MKL-DNN) or its
own im2col+GEMM for convolutions. The script prints what each side used.

Run:  /usr/bin/python3 bench/train_throughput.py [--steps N] [--rounds R] [--out FILE.md]
"""
import argparse
import importlib.util
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")

import torch  # noqa: E402  (after the thread variables)

MODELS = [  # name, batch size
    ("toy", 20),
    ("mlp", 64),
    ("lenet", 64),
]


def load_model_classes():
    spec = importlib.util.spec_from_file_location(
        "export_models", os.path.join(ROOT, "examples", "models", "export_models.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_dtc(name, batch, build):
    program = os.path.join(build, "bench", f"train_{name}")
    os.makedirs(os.path.dirname(program), exist_ok=True)
    subprocess.run([os.path.join(build, "bin", "dtc"),
                    os.path.join(ROOT, "examples", "models", f"{name}.onnx"),
                    f"--batch-size={batch}", "--optimizer=sgd", "--lr=0.01", "-o", program],
                   check=True)
    return program


def dtc_steps_per_s(program, batch, steps):
    """One run of the training binary (it reports its own rate)."""
    # Batches in order, as PyTorch's side reads its pre-made batches.
    out = subprocess.run([program, "--data=synthetic", "--shuffle=false", "--epochs=100000",
                          f"--max-steps={steps}", "--threads=1"],
                         check=True, capture_output=True, text=True).stdout
    m = re.search(r"done: \d+ steps in [0-9.]+ s \(([0-9.]+) samples/s\)", out)
    return float(m.group(1)) / batch


def torch_stepper(name, batch, steps, classes):
    """A function that times `steps` PyTorch eager training steps (after a warm-up)."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = classes.MODELS[name].make_model()
    model.train()
    shape = {"toy": (batch, 10), "mlp": (batch, 1, 28, 28), "lenet": (batch, 1, 28, 28)}[name]
    n_classes = 5 if name == "toy" else 10
    xs = [torch.rand(shape) for _ in range(16)]
    ys = [torch.randint(0, n_classes, (batch,)) for _ in range(16)]
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step(i):
        opt.zero_grad()
        loss = loss_fn(model(xs[i % 16]), ys[i % 16])
        loss.backward()
        opt.step()

    for i in range(min(steps // 10, 200)):
        step(i)

    def timed():
        start = time.perf_counter()
        for i in range(steps):
            step(i)
        return steps / (time.perf_counter() - start)

    return timed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000, help="timed steps per model")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--rounds", type=int, default=5,
                        help="timed runs per side, alternating (best kept)")
    parser.add_argument("--out", help="also write the table to this Markdown file")
    args = parser.parse_args()

    classes = load_model_classes()
    rows = []
    for name, batch in MODELS:
        steps = args.steps if name != "lenet" else max(args.steps // 10, 100)
        # Alternate the two sides, `rounds` timed runs each, and keep each
        # side's best: a slow spell of this shared machine then hits both.
        program = build_dtc(name, batch, args.build)
        torch_timed = torch_stepper(name, batch, steps, classes)
        dtc = ref = 0.0
        for _ in range(args.rounds):
            dtc = max(dtc, dtc_steps_per_s(program, batch, steps))
            ref = max(ref, torch_timed())
        rows.append((name, batch, dtc, ref, dtc / ref))
        print(f"{name:6s} batch {batch:3d}: dtc {dtc:10.1f} steps/s   PyTorch {ref:9.1f} steps/s"
              f"   ratio {dtc / ref:5.2f}x", flush=True)

    blas = "OpenBLAS (" + os.environ.get("OPENBLAS_CORETYPE", "auto-detected core") + ")"
    lines = [
        "| model | batch | dtc steps/s | PyTorch eager steps/s | dtc / PyTorch |",
        "|---|---|---|---|---|",
    ] + [f"| {n} | {b} | {d:.1f} | {r:.1f} | {x:.2f}x |" for n, b, d, r, x in rows]
    footer = [
        "",
        f"One thread each. dtc: GEMMs via {blas}; LeNet's two convolutions (small channels, "
        f"stride 1) by dtc's direct AVX2 kernels (runtime/cpu/ConvDirect.cpp), other "
        f"convolutions im2col + the same sgemm. PyTorch {torch.__version__}: "
        f"GEMM via {blas} (BLAS_INFO=generic), convolution via "
        f"{'oneDNN' if torch.backends.mkldnn.is_available() else 'im2col'}.",
        f"CPU: {platform_cpu()}.",
        f"Best of {args.rounds} timed runs per side, the sides alternating.",
        "Command: `/usr/bin/python3 bench/train_throughput.py" +
        (f" --steps {args.steps}" if args.steps != 2000 else "") +
        (f" --rounds {args.rounds}" if args.rounds != 5 else "") + "`",
    ]
    print("\n".join(lines + footer))
    if args.out:
        with open(args.out, "w") as f:
            f.write("# Single-process training throughput, dtc vs PyTorch eager\n\n")
            f.write("\n".join(lines + footer) + "\n")


def platform_cpu():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip() + f", {os.cpu_count()} cores"
    except OSError:
        pass
    return "unknown"


if __name__ == "__main__":
    main()
