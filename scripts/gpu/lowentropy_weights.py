#!/usr/bin/python3
"""Rewrite an ONNX model's large float initializers with low-entropy random
values, so programs embedding it compress well enough to travel to the GPU
machine (a device call carries at most 64 MiB; ResNet-50's float32 weights
alone are 94 MB and do not compress).

Each float tensor of at least --min-elements elements becomes
std(original) * L[k], with k drawn uniformly from --levels symmetric levels
L spaced like the quantiles of N(0, 1): the same scale per tensor as the
exported initialization, zero-mean, with log2(levels) bits of entropy per
element. Small tensors (biases, batch-norm parameters and statistics) are
kept. For the GPU checks and benchmarks only: CPU and CUDA programs compiled
from the same rewritten file start from the same weights.

Usage: /usr/bin/python3 lowentropy_weights.py IN.onnx OUT.onnx [--levels 8]
"""
import argparse
import statistics

import numpy as np
import onnx
from onnx import numpy_helper


def levels(count):
    normal = statistics.NormalDist()
    return np.array([normal.inv_cdf((i + 0.5) / count) for i in range(count)], dtype=np.float32)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--levels", type=int, default=8)
    parser.add_argument("--min-elements", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    model = onnx.load(args.input)
    rng = np.random.default_rng(args.seed)
    table = levels(args.levels)
    rewritten = 0
    for i, init in enumerate(model.graph.initializer):
        if init.data_type != onnx.TensorProto.FLOAT:
            continue
        values = numpy_helper.to_array(init)
        if values.size < args.min_elements:
            continue
        scale = float(values.std()) or 1.0
        picks = rng.integers(0, args.levels, size=values.shape)
        new = numpy_helper.from_array((table[picks] * scale).astype(np.float32), init.name)
        model.graph.initializer[i].CopyFrom(new)
        rewritten += 1
    onnx.checker.check_model(model)
    onnx.save(model, args.output)
    print(f"{args.output}: {rewritten} initializers rewritten with {args.levels} levels")


if __name__ == "__main__":
    main()
