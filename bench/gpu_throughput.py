#!/usr/bin/env python3
"""GPU training throughput: dtc's CUDA programs against PyTorch eager (and
torch.compile where it runs), same GPU, same run.

Runs on the GPU machine (the `device` tool) with a bundle made here by
scripts/gpu/bundle.sh, which holds the dtc CUDA programs (dtc cannot be
built there); PyTorch is the machine's own CUDA build.

Configurations (issue 5): the MNIST MLP at batch 64 and 4096, ResNet-50 at
batch 64 on 224x224 images (fp32; bf16: PyTorch under autocast, dtc compiled
with --precision=bf16), the GPT-style decoder (batch 64, 16 tokens,
AdamW). Synthetic data on both sides, and on both sides each step's batch
is copied from pinned host memory to the GPU, as a real training loop does:
dtc --data=synthetic (its loader gathers the batch rows into pinned memory
while the previous step runs), PyTorch pre-made random batches in pinned
host memory, copied with .to(non_blocking=True) (what DataLoader with
pin_memory=True hands over). Both are steady-state rates after a warm-up
(dtc's start-up, cuDNN's algorithm search and the CUDA-graph capture are not
counted, as PyTorch's model building and compilation are not): dtc's from
its own log line over the last `steps` steps of a 2 x `steps` run, PyTorch's
from torch.cuda.synchronize()-bracketed loops after 10 warm-up steps. Each
is the best of three runs.

Run on the device:  python3 bench/gpu_throughput.py .gpu [--steps N] [--out FILE.md]
"""
import argparse
import importlib.util
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

# name, dtc program, batch, PyTorch model key, precision
CONFIGS = [
    ("MLP", "mlp-cuda", 64, "mlp", "fp32"),
    ("MLP", "mlp4096-cuda", 4096, "mlp", "fp32"),
    ("ResNet-50 224x224", "resnet50-cuda", 64, "resnet50", "fp32"),
    ("ResNet-50 224x224", "resnet50-bf16-cuda", 64, "resnet50", "bf16"),
    ("GPT-style decoder", "gpt-cuda", 64, "gpt", "fp32"),
]


def load_models():
    spec = importlib.util.spec_from_file_location(
        "export_models", os.path.join(ROOT, "examples", "models", "export_models.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def library_path(bundle):
    dirs = [os.path.join(bundle, "lib"), "/usr/local/cuda/lib64"]
    import glob
    import site
    for base in site.getsitepackages():
        dirs += sorted(glob.glob(os.path.join(base, "nvidia", "*", "lib")))
    return ":".join(dirs + [os.environ.get("LD_LIBRARY_PATH", "")])


def dtc_rate(bundle, program, steps):
    if not os.path.exists(os.path.join(bundle, "bin", program)):
        print(f"{program}: not in the bundle", file=sys.stderr)
        return None
    env = dict(os.environ, LD_LIBRARY_PATH=library_path(bundle))
    best = 0.0
    for _ in range(3):
        # The last log line's rate covers steps steps+1 .. 2*steps.
        run = subprocess.run([os.path.join(bundle, "bin", program), "--data=synthetic",
                              "--epochs=100000", f"--max-steps={2 * steps}",
                              f"--log-every={steps}"],
                             capture_output=True, text=True, env=env)
        rates = re.findall(r"step \d+/\d+ loss \S+ \(([0-9.]+) samples/s\)", run.stdout)
        if run.returncode != 0 or len(rates) < 2:
            print(f"{program} failed ({run.returncode}):\n{run.stdout[-2000:]}{run.stderr[-2000:]}",
                  file=sys.stderr)
            return None
        best = max(best, float(rates[-1]))
    return best


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def torch_rate(models, key, batch, precision, steps, compiled, device):
    # fp32 means fp32 on both sides: dtc's CUDA kernels keep TF32 off
    # (Context::allowTf32), and so does PyTorch here (its cuDNN default is on).
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    spec = models.MODELS[key]
    model = spec.make_model().to(device).train()
    example = spec.make_input()
    pin = device.type == "cuda"
    if key == "gpt":
        xs = [torch.randint(0, 96, (batch,) + example.shape[1:]) for _ in range(4)]
        ys = [torch.randint(0, 96, (batch,) + example.shape[1:]) for _ in range(4)]
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    else:
        xs = [torch.rand((batch,) + example.shape[1:]) for _ in range(4)]
        ys = [torch.randint(0, 10, (batch,)) for _ in range(4)]
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    if pin:
        xs, ys = [x.pin_memory() for x in xs], [y.pin_memory() for y in ys]
    loss_fn = torch.nn.CrossEntropyLoss()
    forward = torch.compile(model) if compiled else model

    def step(i):
        opt.zero_grad(set_to_none=True)
        x = xs[i % 4].to(device, non_blocking=True)
        y = ys[i % 4].to(device, non_blocking=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16"):
            logits = forward(x)
            loss = loss_fn(logits.reshape(-1, logits.shape[-1]).float(), y.reshape(-1))
        loss.backward()
        opt.step()

    for i in range(min(10, steps)):
        step(i)
    sync(device)
    best = 0.0
    for _ in range(3):
        start = time.perf_counter()
        for i in range(steps):
            step(i)
        sync(device)
        best = max(best, steps * batch / (time.perf_counter() - start))
    return best


def fmt(rate):
    return "n/a" if rate is None else f"{rate:,.0f}"


def ratio(a, b):
    return "n/a" if a is None or b is None else f"{a / b:.2f}x"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle", help="the folder bundle.sh wrote (holding bundle.tar.xz)")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--models", default="mlp,resnet50,gpt",
                        help="comma-separated subset of mlp, resnet50, gpt")
    parser.add_argument("--no-compile", action="store_true",
                        help="skip torch.compile (its compilation takes minutes per model)")
    parser.add_argument("--torch-device", default="cuda",
                        help="cpu: a smoke test of this script without a GPU (dtc runs the "
                        "bundle's CPU programs where it has them)")
    parser.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."),
                                                      "gpu-throughput.md"))
    args = parser.parse_args()

    bundle = subprocess.run([os.path.join(ROOT, "scripts", "gpu", "unpack.sh"), args.bundle],
                            check=True, capture_output=True, text=True).stdout.strip()
    models = load_models()
    device = torch.device(args.torch_device)
    rows = []
    for name, program, batch, key, precision in CONFIGS:
        if key not in args.models.split(","):
            continue
        steps = args.steps if batch <= 64 or key != "mlp" else max(args.steps // 4, 20)
        if program and device.type == "cpu":
            program = program.replace("-cuda", "-cpu")
        dtc = dtc_rate(bundle, program, steps) if program else None
        try:
            eager = torch_rate(models, key, batch, precision, steps, False, device)
        except Exception as e:  # e.g. torchvision missing for ResNet-50
            print(f"PyTorch eager {name} {precision}: {e}", file=sys.stderr)
            eager = None
        print(f"{name} batch {batch} {precision}: dtc {fmt(dtc)}  eager {fmt(eager)} samples/s  "
              f"dtc/eager {ratio(dtc, eager)} (torch.compile next)", flush=True)
        if args.no_compile:
            rows.append((name, batch, precision, dtc, eager, None))
            continue
        try:
            compiled = torch_rate(models, key, batch, precision, steps, True, device)
        except Exception as e:  # torch.compile needs a working Triton/compiler
            print(f"torch.compile {name} {precision}: {type(e).__name__}: {e}", file=sys.stderr)
            compiled = None
        rows.append((name, batch, precision, dtc, eager, compiled))
        print(f"{name} batch {batch} {precision}: dtc {fmt(dtc)}  eager {fmt(eager)}  "
              f"compile {fmt(compiled)} samples/s  dtc/eager {ratio(dtc, eager)}", flush=True)

    lines = [
        "| model | batch | precision | dtc samples/s | PyTorch eager | torch.compile "
        "| dtc / eager | dtc / compile |",
        "|---|---|---|---|---|---|---|---|",
    ] + [f"| {n} | {b} | {p} | {fmt(d)} | {fmt(e)} | {fmt(c)} | {ratio(d, e)} | {ratio(d, c)} |"
         for n, b, p, d, e, c in rows]
    footer = [
        "",
        (f"Device: {torch.cuda.get_device_name(0)}; PyTorch {torch.__version__} "
         f"(CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()})."
         if device.type == "cuda" else "Smoke test on the CPU (--torch-device=cpu)."),
        "TF32 off on both sides; dtc's CUDA programs replay the step as a CUDA graph (its default).",
        "Steady-state rates; each step's batch is copied from pinned host memory on both sides.",
        f"Command (on the device): `python3 bench/gpu_throughput.py BUNDLE --steps {args.steps}`"
        " with BUNDLE from `scripts/gpu/bundle.sh`.",
    ]
    text = "\n".join(lines + footer)
    print(text)
    with open(args.out, "w") as f:
        f.write("# GPU training throughput, dtc vs PyTorch\n\n" + text + "\n")


if __name__ == "__main__":
    main()
