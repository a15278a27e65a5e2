#!/usr/bin/python3
"""Depthwise convolution: dtc's CPU runtime against PyTorch, one thread.

Times, on the same shapes (square windows, padding K/2), the forward pass,
the data gradient and the filter gradient: dtc's through build/runtime/
test-runtime/dtcrt_depthwise_kernels_bench (bench/depthwise_kernels.cpp,
the runtime's kernels as a generated program calls them), PyTorch's through
F.conv2d(groups=C) and torch.nn.grad.conv2d_input / conv2d_weight. The two
sides alternate --rounds times; each keeps its best time. Prints a Markdown
table with the ratio PyTorch time / dtc time (above 1: dtc faster).

  python3 bench/depthwise_kernels.py [--build build] [--out FILE.md]
"""

import argparse
import os
import platform
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# (where the shape comes from, N, C, H, W, window, stride)
SHAPES = [
    ("MobileNetV2 at 32x32 images, 1st block", 8, 32, 16, 16, 3, 1),
    ("MobileNetV2 at 32x32, a stride-2 block", 8, 96, 16, 16, 3, 2),
    ("MobileNetV2 at 32x32, 8x8 planes", 8, 144, 8, 8, 3, 1),
    ("MobileNetV2 at 32x32, 4x4 planes", 8, 192, 4, 4, 3, 1),
    ("MobileNetV2 at 32x32, 2x2 planes", 8, 576, 2, 2, 3, 1),
    ("ConvNeXt-T at 32x32, 7x7 window", 8, 96, 8, 8, 7, 1),
    ("MobileNetV2 at 224x224, 1st block", 8, 32, 112, 112, 3, 1),
    ("MobileNetV2 at 224x224, 28x28 planes", 8, 192, 28, 28, 3, 1),
    ("MobileNetV2 at 224x224, stride 2 to 28x28", 8, 144, 56, 56, 3, 2),
]
PASSES = ("forward", "backward_data", "backward_filter")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--reps", type=int, default=20, help="timed calls per pass per round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", help="write the Markdown table here")
    return p.parse_args()


def dtc_times(tool, shape, reps):
    args = [tool, str(reps)] + [str(v) for v in shape[1:]]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return {name: float(us) for name, us in (line.split("\t") for line in out.splitlines())}


def torch_times(torch, shape, reps):
    _, n, c, h, w, k, s = shape
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(n, c, h, w, generator=gen)
    weight = torch.randn(c, 1, k, k, generator=gen)
    bias = torch.randn(c, generator=gen)
    F = torch.nn.functional
    y = F.conv2d(x, weight, bias, s, k // 2, 1, c)
    dy = torch.randn(y.shape, generator=gen)
    grad = torch.nn.grad
    passes = {
        "forward": lambda: F.conv2d(x, weight, bias, s, k // 2, 1, c),
        "backward_data": lambda: grad.conv2d_input(x.shape, weight, dy, s, k // 2, 1, c),
        "backward_filter": lambda: grad.conv2d_weight(x, weight.shape, dy, s, k // 2, 1, c),
    }
    times = {}
    with torch.no_grad():
        for name, run in passes.items():
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
    tool = os.path.join(args.build, "runtime", "test-runtime", "dtcrt_depthwise_kernels_bench")
    rows = []
    for shape in SHAPES:
        dtc, ref = {}, {}
        for _ in range(args.rounds):
            for name, us in dtc_times(tool, shape, args.reps).items():
                dtc[name] = min(dtc.get(name, float("inf")), us)
            for name, us in torch_times(torch, shape, args.reps).items():
                ref[name] = min(ref.get(name, float("inf")), us)
        label = "{} ({}x{}x{}x{}, {}x{} s{})".format(shape[0], *shape[1:5], shape[5], shape[5],
                                                     shape[6])
        for name in PASSES:
            rows.append((label, name, dtc[name], ref[name]))
            print(f"{label:60s} {name:16s} dtc {dtc[name]:9.1f} us  PyTorch {ref[name]:9.1f} us  "
                  f"{ref[name] / dtc[name]:5.2f}x", flush=True)
    lines = ["# Depthwise convolution, dtc's CPU runtime vs PyTorch (1 thread)\n",
             "Command: `/usr/bin/python3 bench/depthwise_kernels.py"
             + (f" --out {args.out}" if args.out else "") + "`\n",
             "| shape | pass | dtc us | PyTorch us | PyTorch / dtc |", "|---|---|---|---|---|"]
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
