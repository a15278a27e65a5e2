#!/usr/bin/python3
"""2-D pooling kernels: dtc's CPU runtime against PyTorch, one thread.

Times, on the same shapes, average pooling and max pooling (with indices),
forward and backward: dtc's through build/runtime/test-runtime/
dtcrt_pool_kernels_bench (bench/pool_kernels.cpp, the runtime's kernels as
a generated program calls them), PyTorch's through its ATen ops
(F.avg_pool2d, aten.avg_pool2d_backward, F.max_pool2d with indices,
aten.max_pool2d_with_indices_backward). The two sides alternate --rounds
times; each keeps its best time. Prints a Markdown table with the ratio
PyTorch time / dtc time (above 1: dtc faster).

  python3 bench/pool_kernels.py [--build build] [--out FILE.md]
"""

import argparse
import os
import platform
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# (where the shape comes from, N, C, H, W, window, stride, pad, count_include_pad, ceil_mode)
SHAPES = [
    ("LeNet-5, batch 32", 32, 6, 28, 28, 2, 2, 0, True, False),
    ("LeNet-5, 2nd pool", 32, 16, 10, 10, 2, 2, 0, True, False),
    ("DenseNet transition, batch 8", 8, 128, 56, 56, 2, 2, 0, True, False),
    ("Inception branch 3x3 s1, batch 8", 8, 192, 28, 28, 3, 1, 1, False, False),
    ("ResNet stem pool 3x3 s2, batch 8", 8, 64, 112, 112, 3, 2, 1, True, False),
    ("the zoo's GoogLeNet (32x32 images), 1st pool", 8, 64, 16, 16, 3, 2, 0, True, True),
    ("the zoo's GoogLeNet, inception branch", 8, 480, 4, 4, 3, 1, 1, True, True),
    ("the zoo's AlexNet (64x64 images), 1st pool", 8, 64, 15, 15, 3, 2, 0, True, False),
    ("the zoo's AlexNet, 3rd pool", 8, 256, 3, 3, 3, 2, 0, True, False),
    ("the zoo's SqueezeNet (64x64 images), 1st pool", 8, 64, 31, 31, 3, 2, 0, True, True),
    ("the zoo's SqueezeNet, 3rd pool", 8, 256, 7, 7, 3, 2, 0, True, True),
]
KERNELS = ("avg_pool", "avg_pool_grad", "max_pool", "max_pool_grad")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--reps", type=int, default=50, help="timed calls per kernel per round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", help="write the Markdown table here")
    return p.parse_args()


def dtc_times(tool, shape, reps):
    _, n, c, h, w, k, s, pad, incl, ceil = shape
    args = [tool, str(reps)] + [str(v) for v in (n, c, h, w, k, s, pad, int(incl), int(ceil))]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return {name: float(us) for name, us in (line.split("\t") for line in out.splitlines())}


def torch_times(torch, shape, reps):
    _, n, c, h, w, k, s, pad, incl, ceil = shape
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(n, c, h, w, generator=gen)
    F, aten = torch.nn.functional, torch.ops.aten
    y, indices = F.max_pool2d(x, k, s, pad, ceil_mode=ceil, return_indices=True)
    dy = torch.randn(y.shape, generator=gen)
    avg_dy = torch.randn(F.avg_pool2d(x, k, s, pad, ceil_mode=ceil).shape, generator=gen)
    kernels = {
        "avg_pool": lambda: F.avg_pool2d(x, k, s, pad, ceil_mode=ceil, count_include_pad=incl),
        "avg_pool_grad": lambda: aten.avg_pool2d_backward(avg_dy, x, [k, k], [s, s], [pad, pad],
                                                          ceil, incl, None),
        "max_pool": lambda: F.max_pool2d(x, k, s, pad, ceil_mode=ceil, return_indices=True),
        "max_pool_grad": lambda: aten.max_pool2d_with_indices_backward(
            dy, x, [k, k], [s, s], [pad, pad], [1, 1], ceil, indices),
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
    tool = os.path.join(args.build, "runtime", "test-runtime", "dtcrt_pool_kernels_bench")
    rows = []
    for shape in SHAPES:
        dtc, ref = {}, {}
        for _ in range(args.rounds):
            for name, us in dtc_times(tool, shape, args.reps).items():
                dtc[name] = min(dtc.get(name, float("inf")), us)
            for name, us in torch_times(torch, shape, args.reps).items():
                ref[name] = min(ref.get(name, float("inf")), us)
        label = "{} ({}x{}x{}x{}, {}x{} s{} p{}{}{})".format(
            shape[0], *shape[1:5], shape[5], shape[5], shape[6], shape[7],
            "" if shape[8] else ", pads not counted", ", ceil" if shape[9] else "")
        for name in KERNELS:
            rows.append((label, name, dtc[name], ref[name]))
            print(f"{label:60s} {name:14s} dtc {dtc[name]:9.1f} us  PyTorch {ref[name]:9.1f} us  "
                  f"{ref[name] / dtc[name]:5.2f}x", flush=True)
    lines = ["# Pooling kernels, dtc's CPU runtime vs PyTorch (1 thread)\n",
             "Command: `/usr/bin/python3 bench/pool_kernels.py"
             + (f" --out {args.out}" if args.out else "") + "`\n",
             "| shape | kernel | dtc us | PyTorch us | PyTorch / dtc |", "|---|---|---|---|---|"]
    lines += [f"| {label} | {name} | {d:.1f} | {r:.1f} | {r / d:.2f}x |"
              for label, name, d, r in rows]
    lines.append(f"\nBest of {args.rounds} rounds of {args.reps} calls per side, sides alternating; "
                 f"PyTorch {torch.__version__}, dtc's kernels on AVX2 where the CPU has it "
                 f"(DTC_CPU_ISA={os.environ.get('DTC_CPU_ISA', 'native')}). CPU: "
                 f"{platform.processor() or platform.machine()}, load average "
                 "{:.2f} {:.2f} {:.2f} at the end.".format(*os.getloadavg()))
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
