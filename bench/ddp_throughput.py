#!/usr/bin/env python3
"""Data-parallel training throughput on this machine: dtc DDP against
PyTorch DDP (Gloo), both with 2 ranks of one thread each, same run.

For each model (ToyModel at batch 20, the MNIST MLP and the LeNet CNN at
batch 64, per rank) this prints the global samples/s of
  - dtc, one process (the single-rank baseline),
  - dtc --strategy=ddp on 2 ranks (dtcrun --nproc-per-node=2),
  - PyTorch DistributedDataParallel with the gloo backend on 2 processes,
and the ratios dtc DDP / PyTorch DDP and dtc 2 ranks / dtc 1 rank.
Data: synthetic batches (dtc --data=synthetic; PyTorch: pre-made random
batches), SGD lr 0.01. Threads: one per rank (OMP_NUM_THREADS=1).

Run:  /usr/bin/python3 bench/ddp_throughput.py [--steps N] [--out FILE.md]
"""
import argparse
import importlib.util
import os
import re
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")

MODELS = [("toy", 20), ("mlp", 64), ("lenet", 64)]
SHAPES = {"toy": (10,), "mlp": (1, 28, 28), "lenet": (1, 28, 28)}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dtc_rate(name, batch, steps, build, ranks):
    program = os.path.join(build, "bench", f"ddp_{name}_{ranks}")
    os.makedirs(os.path.dirname(program), exist_ok=True)
    subprocess.run([os.path.join(build, "bin", "dtc"),
                    os.path.join(ROOT, "examples", "models", f"{name}.onnx"),
                    f"--batch-size={batch}", "--optimizer=sgd", "--lr=0.01",
                    f"--strategy={'ddp' if ranks > 1 else 'none'}", "-o", program], check=True)
    args = [program, "--data=synthetic", "--epochs=100000", f"--max-steps={steps}",
            "--threads=1"]
    if ranks > 1:
        args = [os.path.join(build, "bin", "dtcrun"), f"--nproc-per-node={ranks}",
                f"--master-port={free_port()}"] + args
    best = 0.0
    for _ in range(3):
        out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
        m = re.search(r"done: \d+ steps in [0-9.]+ s \(([0-9.]+) samples/s\)", out)
        best = max(best, float(m.group(1)))
    return best


TORCH_WORKER = r"""
import os, sys, time, importlib.util
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
torch.set_num_threads(1)
name, batch, steps, root, shape, classes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], eval(sys.argv[5]), int(sys.argv[6])
dist.init_process_group("gloo")
spec = importlib.util.spec_from_file_location("export_models", os.path.join(root, "examples", "models", "export_models.py"))
models = importlib.util.module_from_spec(spec); spec.loader.exec_module(models)
torch.manual_seed(0)
model = DistributedDataParallel(models.MODELS[name].make_model())
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = torch.nn.CrossEntropyLoss()
xs = [torch.rand((batch,) + shape) for _ in range(16)]
ys = [torch.randint(0, classes, (batch,)) for _ in range(16)]
def step(i):
    opt.zero_grad(); loss_fn(model(xs[i % 16]), ys[i % 16]).backward(); opt.step()
for i in range(min(steps // 10, 100)): step(i)
best = 0.0
for _ in range(3):
    dist.barrier(); t0 = time.perf_counter()
    for i in range(steps): step(i)
    dist.barrier(); best = max(best, steps * batch * dist.get_world_size() / (time.perf_counter() - t0))
if dist.get_rank() == 0: print("RATE", best)
dist.destroy_process_group()
"""


def torch_ddp_rate(name, batch, steps, ranks):
    port = str(free_port())
    procs = []
    for rank in range(ranks):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(ranks), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=port, LOCAL_RANK=str(rank))
        procs.append(subprocess.Popen(
            [sys.executable, "-c", TORCH_WORKER, name, str(batch), str(steps), ROOT,
             repr(SHAPES[name]), "5" if name == "toy" else "10"],
            env=env, stdout=subprocess.PIPE, text=True))
    outs = [p.communicate()[0] for p in procs]
    if any(p.returncode for p in procs):
        raise SystemExit(f"PyTorch DDP run failed for {name}")
    return float(re.search(r"RATE ([0-9.]+)", outs[0]).group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--out")
    args = parser.parse_args()
    import torch
    rows = []
    for name, batch in MODELS:
        steps = args.steps
        one = dtc_rate(name, batch, steps, args.build, 1)
        two = dtc_rate(name, batch, steps, args.build, 2)
        ref = torch_ddp_rate(name, batch, steps, 2)
        rows.append((name, batch, one, two, ref))
        print(f"{name:6s} batch {batch:3d}/rank: dtc 1 rank {one:9.0f}  dtc DDP {two:9.0f}  "
              f"PyTorch DDP {ref:9.0f} samples/s   dtc/PyTorch {two / ref:5.2f}x   "
              f"2 ranks/1 rank {two / one:4.2f}x", flush=True)
    lines = ["| model | batch per rank | dtc 1 rank | dtc DDP 2 ranks | PyTorch DDP 2 ranks (gloo) "
             "| dtc DDP / PyTorch DDP | dtc 2 ranks / 1 rank |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {n} | {b} | {o:.0f} | {t:.0f} | {r:.0f} | {t / r:.2f}x | {t / o:.2f}x |"
              for n, b, o, t, r in rows]
    backend = os.environ.get("DTC_COMM_BACKEND", "default (shared memory for local ranks, else Gloo)")
    footer = ["", "Global samples/s (all ranks), one thread per rank, synthetic data, SGD. "
              f"dtc communicator: {backend}. PyTorch {torch.__version__} DDP with the gloo "
              "backend over loopback TCP.",
              "Command: `/usr/bin/python3 bench/ddp_throughput.py`"]
    print("\n".join(lines + footer))
    if args.out:
        with open(args.out, "w") as f:
            f.write("# Data-parallel training throughput, 2 ranks, dtc vs PyTorch DDP\n\n")
            f.write("\n".join(lines + footer) + "\n")


if __name__ == "__main__":
    main()
