#!/usr/bin/python3
"""A small Fashion-MNIST classifier through CumSum, ReduceMax/ReduceMin,
ScatterElements (none and add) and Einsum, for test/e2e/new-ops.test.
(torch 1.13 exports nn.LocalResponseNorm as Pad/AveragePool/Pow inside an
If, not as ONNX's LRN, so LRN is not here.)

Importable by torch_reference.py as its --export-script (it reads MODELS);
run as a script it exports the model with examples/models/export_models.py's
export() (training mode, dynamic batch) at opset 16, the first at which
torch 1.13 writes scatter_add as ScatterElements with reduction "add".
"""

import argparse
import importlib.util
import os
import sys

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORT_SCRIPT = os.path.join(HERE, "..", "..", "..", "examples", "models", "export_models.py")
OPSET = 16


def _export_models():
    spec = importlib.util.spec_from_file_location("export_models", EXPORT_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class NewOps(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, stride=2)
        self.fc = nn.Linear(4 * 13 * 13, 32)
        self.upd = nn.Parameter(torch.randn(1, 8) * 0.5)
        self.w = nn.Parameter(torch.randn(108, 10) * 0.1)
        self.b = nn.Parameter(torch.zeros(10))
        self.register_buffer("idx", torch.tensor([[3, 9, 1, 30, 17, 22, 5, 12]]))
        self.register_buffer("dup", torch.tensor([[0, 4, 4, 31, 7, 7, 7, 20]]))

    def forward(self, x):
        h = self.fc(self.conv(x).flatten(1))  # [N, 32]
        n = h.shape[0]
        c = torch.cumsum(h, dim=1)
        s = c.scatter(1, self.idx.expand(n, 8), self.upd.expand(n, 8))
        src = h[:, :8]
        s = s.scatter_add(1, torch.zeros_like(src, dtype=torch.long) + self.dup, src)
        g = h.view(n, 4, 8)
        top = g.amax(dim=2)  # [N, 4]
        low = g.amin(dim=1)  # [N, 8]
        pairs = torch.einsum("bhi,bhj->bij", g, g).flatten(1)  # [N, 64]
        feats = torch.cat([s, top, low, pairs * 0.1], dim=1)  # [N, 108]
        return torch.einsum("bi,ij->bj", feats, self.w) + self.b


def _spec_class():
    return _export_models().Spec


MODELS = {"newops": _spec_class()(NewOps, lambda: torch.randn(2, 1, 28, 28), "input", OPSET)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("names", nargs="+", choices=sorted(MODELS))
    args = parser.parse_args()
    em = _export_models()
    os.makedirs(args.out, exist_ok=True)
    for name in args.names:
        em.MODELS[name] = MODELS[name]
        em.export(name, args.out, None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
