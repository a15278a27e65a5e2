#!/usr/bin/python3
"""GroupNormalization (opset 18: scale and bias per group; opset 21: per
channel) through a dtc inference program against PyTorch's
torch.nn.functional.group_norm in float64, for test/e2e/group-norm.test.

Writes an ONNX model with both forms (onnx.helper; the installed onnx
package predates opset 18, so the model is not checked by it), compiles it
with `dtc --mode=infer`, runs the program on a random input and compares
its outputs. Bar: 1e-5 relative + 1e-6 absolute (float32 statistics over
24 values per group, outputs of order 1: a few float32 ulps).

Usage: group_norm_check.py DTC WORKDIR
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import torch
from onnx import helper, numpy_helper, TensorProto


def main():
    dtc, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(7)
    N, C, H, W, G = 2, 6, 3, 4, 3
    x = (rng.standard_normal((N, C, H, W)) * 2 + 0.5).astype(np.float32)
    sg = rng.standard_normal(G).astype(np.float32)
    bg = rng.standard_normal(G).astype(np.float32)
    sc = rng.standard_normal(C).astype(np.float32)
    bc = rng.standard_normal(C).astype(np.float32)
    eps = 1e-3
    nodes = [
        helper.make_node("GroupNormalization", ["x", "sg", "bg"], ["y_group"], num_groups=G,
                         epsilon=eps),
        helper.make_node("GroupNormalization", ["x", "sc", "bc"], ["y_channel"], num_groups=G,
                         epsilon=eps),
    ]
    graph = helper.make_graph(
        nodes, "group_norm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N, C, H, W])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [N, C, H, W])
         for n in ("y_group", "y_channel")],
        [numpy_helper.from_array(a, name) for a, name in
         ((sg, "sg"), (bg, "bg"), (sc, "sc"), (bc, "bc"))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.save(model, os.path.join(work, "group_norm.onnx"))
    program = os.path.join(work, "group_norm")
    subprocess.run([dtc, os.path.join(work, "group_norm.onnx"), "--mode=infer", "-o", program],
                   check=True)
    with open(os.path.join(work, "x.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, "x").SerializeToString())
    out = os.path.join(work, "out")
    os.makedirs(out, exist_ok=True)
    subprocess.run([program, "--input=" + os.path.join(work, "x.pb"), "--output-dir=" + out,
                    "--quiet"], check=True)

    xt = torch.from_numpy(x).double()
    normed = torch.nn.functional.group_norm(xt, G, eps=eps)  # no affine
    per = C // G
    want_group = (normed * torch.from_numpy(np.repeat(sg, per)).double().view(1, C, 1, 1)
                  + torch.from_numpy(np.repeat(bg, per)).double().view(1, C, 1, 1))
    want_channel = torch.nn.functional.group_norm(xt, G, torch.from_numpy(sc).double(),
                                                  torch.from_numpy(bc).double(), eps=eps)
    ok = True
    for k, (name, want) in enumerate((("y_group", want_group), ("y_channel", want_channel))):
        t = onnx.TensorProto()
        with open(os.path.join(out, f"output_{k}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        got = numpy_helper.to_array(t).astype(np.float64)
        err = np.abs(got - want.numpy())
        bad = err > 1e-6 + 1e-5 * np.abs(want.numpy())
        print(f"{name}: max abs error {err.max():.2e} against torch float64, "
              f"{int(bad.sum())} of {bad.size} beyond the bar")
        ok &= not bad.any()
    print("group norm:", "OK" if ok else "FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
