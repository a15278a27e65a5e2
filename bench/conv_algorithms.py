#!/usr/bin/python3
"""Convolution algorithms per pass: im2col + OpenBLAS against oneDNN.

Lists every 2-D convolution shape of the model zoo (test/zoo/zoo_models.py)
at batch 8 with PyTorch forward hooks, times each pass of each shape on
both algorithms with build/runtime/test-runtime/dtcrt_conv_algorithms_bench (bench/
conv_algorithms.cpp: the runtime's own kernels, one thread, best of --reps,
alternating), and writes a Markdown report: per model, the convolution time
of a training step (forward, input gradient, filter gradient; each shape
times its count in the model) with every pass on im2col, every pass on
oneDNN, the per-pass rule of runtime/cpu/ConvAlgorithm.h, and the best of
the two per pass (the bound of any rule); then every shape.

Shapes the rule gives dtc's own direct or depthwise kernels are listed but
left out of the totals (neither algorithm runs them).

  python3 bench/conv_algorithms.py [--build build] [--models a,b] [--reps 5] [--out FILE.md]
"""

import argparse
import collections
import os
import platform
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PASSES = ("forward", "input grad", "filter grad")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--models", help="comma-separated zoo names (default: all)")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--out", help="write the Markdown report here")
    return p.parse_args()


def zoo_shapes(names, batch):
    """{shape tuple: {model: count}} of every nn.Conv2d the zoo runs."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch
    import torch.nn as nn

    sys.path.insert(0, os.path.join(ROOT, "test", "zoo"))
    import zoo_models

    shapes = collections.OrderedDict()
    for name, spec in zoo_models.MODELS.items():
        if names and name not in names:
            continue
        model = spec.make_model()
        x = spec.make_input()
        x = torch.cat([x] * (batch // x.shape[0]))

        def hook(mod, inputs, _output, name=name):
            i = inputs[0]
            if i.dim() != 4:
                return
            pad = mod.padding if isinstance(mod.padding, tuple) else (0, 0)
            key = (i.shape[0], i.shape[1], i.shape[2], i.shape[3], mod.out_channels,
                   mod.kernel_size[0], mod.kernel_size[1], mod.stride[0], mod.stride[1],
                   pad[0], pad[1], mod.dilation[0], mod.dilation[1], mod.groups)
            counts = shapes.setdefault(key, collections.Counter())
            counts[name] += 1

        hooks = [m.register_forward_hook(hook) for m in model.modules()
                 if type(m) is nn.Conv2d]
        with torch.no_grad():
            try:
                model(x)
            except Exception as e:  # a model that needs another input
                print(f"{name}: skipped ({e})", file=sys.stderr)
        for h in hooks:
            h.remove()
    return shapes


def main():
    args = parse_args()
    names = set(args.models.split(",")) if args.models else None
    shapes = zoo_shapes(names, args.batch)
    tool = os.path.join(args.build, "runtime", "test-runtime", "dtcrt_conv_algorithms_bench")
    if not os.path.exists(tool):
        sys.exit(f"error: {tool} not found (cmake --build {args.build} "
                 "--target dtcrt_conv_algorithms_bench)")
    stdin = "".join(" ".join(map(str, k)) + f" s{i}\n" for i, k in enumerate(shapes))
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([tool, f"--reps={args.reps}"], input=stdin, capture_output=True,
                         text=True, env=env, check=True).stdout
    keys = list(shapes)
    rows = []
    for line in out.splitlines():
        f = line.split("\t")
        key = keys[int(f[0][1:])]
        rule = f[2:5]
        t = list(map(float, f[5:11]))
        rows.append((key, rule, [(t[0], t[1]), (t[2], t[3]), (t[4], t[5])]))

    totals = collections.OrderedDict()  # model -> [gemm, onednn, rule, best]
    for key, rule, times in rows:
        if any(r not in ("gemm", "onednn") for r in rule):
            continue
        for model, count in shapes[key].items():
            acc = totals.setdefault(model, [0.0, 0.0, 0.0, 0.0])
            for (g, o), r in zip(times, rule):
                acc[0] += count * g
                acc[1] += count * o
                acc[2] += count * (o if r == "onednn" else g)
                acc[3] += count * min(g, o)

    lines = ["# Convolution algorithms per pass: im2col + OpenBLAS vs oneDNN", "",
             f"Command: `python3 bench/conv_algorithms.py --reps {args.reps}"
             + (f" --models {args.models}" if args.models else "") + "`", "",
             f"Every 2-D convolution of the zoo at batch {args.batch}, one thread; each "
             "pass timed on dtc's im2col + OpenBLAS path and on oneDNN 2.6 (Debian's "
             "libdnnl, blocked layouts with the reorders from and to NCHW counted), "
             f"best of {args.reps} alternating runs. CPU: {cpu_name()}; "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.", "",
             "## Per model: convolution ms per training step", "",
             "Forward + input gradient + filter gradient of every convolution the rule "
             "gives im2col or oneDNN (not the direct and depthwise ones), each shape "
             "times its count in the model. `rule` is what dtc compiles "
             "(runtime/cpu/ConvAlgorithm.h), `best` the faster algorithm of each pass.", "",
             "| model | all im2col | all oneDNN | rule | best per pass | rule / im2col |",
             "|---|---|---|---|---|---|"]
    for model, (g, o, r, b) in totals.items():
        lines.append(f"| {model} | {g:.3f} | {o:.3f} | {r:.3f} | {b:.3f} | {r / g:.2f} |")
    sums = [sum(v[i] for v in totals.values()) for i in range(4)]
    lines.append(f"| **all** | {sums[0]:.2f} | {sums[1]:.2f} | {sums[2]:.2f} | {sums[3]:.2f} "
                 f"| {sums[2] / sums[0]:.2f} |")
    lines += ["", "## Every shape", "",
              "N C H W, K RxS, stride, pad, dilation, groups; ms im2col / oneDNN per pass; "
              "the rule's choice in bold.", "",
              "| shape | models | forward | input grad | filter grad |", "|---|---|---|---|---|"]
    for key, rule, times in rows:
        n, c, h, w, k, r, s, sh, sw, ph, pw, dh, dw, g = key
        shape = (f"{n} {c} {h}x{w}, K{k} {r}x{s}, s{sh}x{sw}, p{ph}x{pw}, "
                 f"d{dh}x{dw}, g{g}")
        models = ", ".join(f"{m} x{c}" for m, c in shapes[key].items())
        cells = []
        for (gm, on), choice in zip(times, rule):
            if choice == "gemm":
                cells.append(f"**{gm:.3f}** / {on:.3f}")
            elif choice == "onednn":
                cells.append(f"{gm:.3f} / **{on:.3f}**")
            else:
                cells.append(f"{gm:.3f} / {on:.3f} ({choice})")
        lines.append(f"| {shape} | {models} | " + " | ".join(cells) + " |")
    report = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(report)
    print("\n".join(lines[:lines.index("## Every shape")]))


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


if __name__ == "__main__":
    main()
