"""Median training-step time of one zoo model under torch.compile.

Run by bench/zoo_throughput.py --compile-python PY with that interpreter
(PyTorch 2.x and a matching torchvision, e.g. a virtual environment beside
Debian's PyTorch 1.13): builds the zoo model as test/zoo/zoo_models.py does,
wraps it in torch.compile (default mode, the inductor backend: C++/OpenMP
kernels on the CPU), and trains it with the same optimizer, loss and
batches as the eager side (the npy files zoo_throughput.py wrote). The first
steps compile and are not timed; then --rounds runs of --steps steps, each
run's median step time, the best run printed as JSON.

  PY bench/torch_compile_step.py --model NAME --data DIR --steps S [--rounds R] [--threads N]
"""

import argparse
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True)
    p.add_argument("--data", required=True, help="the folder with train_x.npy, train_y.npy")
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--compile-steps", type=int, default=3,
                   help="untimed first steps (compilation, recompilation after the first "
                        "backward)")
    return p.parse_args()


ARGS = parse_args()
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(ARGS.threads)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "test", "zoo"))
import zoo_models  # noqa: E402


def loss_of(spec, out, y):
    """As test/zoo/run_zoo.py's loss_of."""
    if spec.task == "mse":
        return F.mse_loss(out, y)
    if out.dim() == 3:
        return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
    return F.cross_entropy(out, y)


def main():
    torch.set_num_threads(ARGS.threads)
    torch.manual_seed(0)
    spec = zoo_models.MODELS[ARGS.model]
    module = spec.make_model()
    module.train()
    compiled = torch.compile(module)
    opt = torch.optim.SGD(module.parameters(), lr=0.01)
    x = np.load(os.path.join(ARGS.data, "train_x.npy"))
    y = np.load(os.path.join(ARGS.data, "train_y.npy"))
    batches = [(torch.from_numpy(x[i:i + ARGS.batch]), torch.from_numpy(y[i:i + ARGS.batch]))
               for i in range(0, len(x) - ARGS.batch + 1, ARGS.batch)]

    def step(i):
        xb, yb = batches[i % len(batches)]
        opt.zero_grad()
        if spec.task == "inside":
            loss = compiled(xb, yb)
        else:
            loss = loss_of(spec, compiled(xb), yb)
        loss.backward()
        opt.step()

    start = time.perf_counter()
    for i in range(ARGS.compile_steps):
        step(i)
    compile_seconds = time.perf_counter() - start
    best = float("inf")
    for _ in range(ARGS.rounds):
        times = []
        for i in range(ARGS.steps):
            t = time.perf_counter()
            step(i)
            times.append(time.perf_counter() - t)
        best = min(best, statistics.median(times))
    print(json.dumps({"step": best, "compile_seconds": compile_seconds,
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
