#!/usr/bin/python3
"""Transcendental activation kernels: dtc's CPU runtime against PyTorch.

Times, on one thread and the same values (N normal values, standard
deviation 1.5), each kernel's forward and gradient: dtc's through
build/runtime/test-runtime/dtcrt_activation_kernels_bench (bench/
activation_kernels.cpp, the runtime's own kernels as a generated program
calls them), PyTorch's through its ATen ops (F.gelu, aten::gelu_backward,
torch.sigmoid, torch.tanh, torch.erf). The two sides alternate --rounds
times; each keeps its best time. Prints a Markdown table with the ratio
PyTorch time / dtc time (above 1: dtc faster).

  python3 bench/activation_kernels.py [--build build] [--sizes 32768,...] [--out FILE.md]
"""

import argparse
import os
import platform
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--sizes", default="4096,32768,262144,2097152")
    p.add_argument("--reps", type=int, default=200, help="timed calls per kernel per round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", help="write the Markdown table here")
    return p.parse_args()


def dtc_times(tool, n, reps):
    out = subprocess.run([tool, str(n), str(reps)], check=True, capture_output=True,
                         text=True).stdout
    return {name: float(us) for name, us in (line.split("\t") for line in out.splitlines())}


def torch_times(torch, n, reps):
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(n, generator=gen) * 1.5
    dy = torch.randn(n, generator=gen) * 1.5
    F = torch.nn.functional
    aten = torch.ops.aten
    kernels = {
        "gelu": lambda: F.gelu(x),
        "gelu_grad": lambda: aten.gelu_backward(dy, x),
        "gelu_tanh": lambda: F.gelu(x, approximate="tanh"),
        "gelu_tanh_grad": lambda: aten.gelu_backward(dy, x, approximate="tanh"),
        "sigmoid": lambda: torch.sigmoid(x),
        "tanh": lambda: torch.tanh(x),
        "erf": lambda: torch.erf(x),
    }
    times = {}
    with torch.no_grad():
        for name, run in kernels.items():
            best = float("inf")
            for _ in range(reps):
                start = time.perf_counter()
                run()
                best = min(best, time.perf_counter() - start)
            times[name] = best * 1e6
    return times


def main():
    args = parse_args()
    import torch
    torch.set_num_threads(1)
    tool = os.path.join(args.build, "runtime", "test-runtime", "dtcrt_activation_kernels_bench")
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        dtc, ref = {}, {}
        for _ in range(args.rounds):
            for name, us in dtc_times(tool, n, args.reps).items():
                dtc[name] = min(dtc.get(name, float("inf")), us)
            for name, us in torch_times(torch, n, args.reps).items():
                ref[name] = min(ref.get(name, float("inf")), us)
        for name in dtc:
            rows.append((name, n, dtc[name], ref[name]))
            print(f"{name:15s} {n:8d}  dtc {dtc[name]:9.1f} us  PyTorch {ref[name]:9.1f} us  "
                  f"{ref[name] / dtc[name]:5.2f}x", flush=True)
    lines = ["# Activation kernels, dtc's CPU runtime vs PyTorch (1 thread)\n",
             "Command: `/usr/bin/python3 bench/activation_kernels.py"
             + (f" --out {args.out}" if args.out else "") + "`\n",
             "| kernel | values | dtc us | PyTorch us | PyTorch / dtc |", "|---|---|---|---|---|"]
    lines += [f"| {name} | {n} | {d:.1f} | {r:.1f} | {r / d:.2f}x |" for name, n, d, r in rows]
    lines.append(f"\nBest of {args.rounds} rounds of {args.reps} calls per side, sides alternating; "
                 f"PyTorch {torch.__version__} (ATen kernels on its own CPU dispatch, "
                 "whatever vector width it picks), dtc's kernels on AVX-512 where the CPU has it, "
                 f"else AVX2 + FMA (DTC_CPU_ISA={os.environ.get('DTC_CPU_ISA', 'native')}). CPU: {platform.processor() or platform.machine()}, load average "
                 "{:.2f} {:.2f} {:.2f} at the end.".format(*os.getloadavg()))
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
