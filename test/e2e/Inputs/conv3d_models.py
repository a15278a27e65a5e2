#!/usr/bin/python3
"""A small Fashion-MNIST classifier through 3-D convolution and pooling,
for test/e2e/conv3d.test: each 28 x 28 image read as a 4 x 7 x 28 volume,
then nn.Conv3d (padded, strided; grouped and dilated), nn.MaxPool3d,
nn.AvgPool3d (with and without count_include_pad) and nn.ConvTranspose3d.

Importable by torch_reference.py as its --export-script (it reads MODELS);
run as a script it exports the model with examples/models/export_models.py's
export() (training mode, dynamic batch).
"""

import argparse
import importlib.util
import os
import sys

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORT_SCRIPT = os.path.join(HERE, "..", "..", "..", "examples", "models", "export_models.py")


def _export_models():
    spec = importlib.util.spec_from_file_location("export_models", EXPORT_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Conv3dNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv3d(1, 4, (2, 3, 3), stride=(1, 1, 2), padding=(1, 1, 0))
        self.pool = nn.MaxPool3d((2, 2, 2), stride=(1, 2, 2), padding=(1, 0, 1))
        self.conv2 = nn.Conv3d(4, 4, 3, padding=1, dilation=(2, 1, 1), groups=2)
        self.avg = nn.AvgPool3d((2, 3, 3), stride=2, padding=1, count_include_pad=False)
        self.up = nn.ConvTranspose3d(4, 2, (1, 2, 2), stride=(1, 2, 2))
        self.avg2 = nn.AvgPool3d(2, stride=2, ceil_mode=True)
        self.fc = nn.Linear(2 * 2 * 2 * 4, 10)

    def forward(self, x):
        v = x.view(x.shape[0], 1, 4, 7, 28)
        h = torch.relu(self.conv1(v))  # [N, 4, 5, 7, 13]
        h = self.pool(h)  # [N, 4, 6, 3, 7]
        h = torch.relu(self.conv2(h))  # [N, 4, 4, 3, 7]
        h = self.avg(h)  # [N, 4, 3, 2, 4]
        h = self.up(h)  # [N, 2, 3, 4, 8]
        h = self.avg2(h)  # [N, 2, 2, 2, 4]
        return self.fc(h.flatten(1))


MODELS = {"conv3d": None}


def _spec():
    return _export_models().Spec(Conv3dNet, lambda: torch.randn(2, 1, 28, 28))


MODELS["conv3d"] = _spec()


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
