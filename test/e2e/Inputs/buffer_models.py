#!/usr/bin/python3
"""A model with registered buffers, for dtc's parameter-vs-buffer tests.

``BufferLM`` holds what PyTorch users register as buffers next to real
parameters: a sinusoidal positional encoding ``pe`` (float, added to the
embeddings, as in PyTorch's Transformer tutorial), a nanoGPT-style causal
mask ``bias`` (float ones/zeros compared with 0 in ``masked_fill``), and a
parameter ``gain`` whose name does not say it is one.

  buffer_models.py --out DIR [--plain]    writes DIR/bufferlm.onnx, marked
                                          with dtc_export.py (unmarked with
                                          --plain)

torch_reference.py uses this file as --export-script (MODELS).
"""

import argparse
import math
import os
import sys
from typing import Callable, NamedTuple, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB, SEQ, WIDTH = 32, 8, 16


class BufferLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, WIDTH)
        position = torch.arange(2 * SEQ).unsqueeze(1)
        freq = torch.exp(torch.arange(0, WIDTH, 2) * (-math.log(10000.0) / WIDTH))
        pe = torch.zeros(2 * SEQ, WIDTH)
        pe[:, 0::2] = torch.sin(position * freq)
        pe[:, 1::2] = torch.cos(position * freq)
        self.register_buffer("pe", pe)
        self.register_buffer("bias", torch.tril(torch.ones(SEQ, SEQ)).view(1, SEQ, SEQ))
        self.gain = nn.Parameter(torch.ones(WIDTH))
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, idx):
        T = idx.size(1)
        x = self.emb(idx) + self.pe[:T]
        q, k, v = self.qkv(x).split(WIDTH, dim=2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(WIDTH))
        att = att.masked_fill(self.bias[:, :T, :T] == 0, float("-inf"))
        y = (F.softmax(att, dim=-1) @ v) * self.gain
        return self.head(y + x)


class Spec(NamedTuple):
    make_model: Callable[[], nn.Module]
    make_input: Callable[[], torch.Tensor]
    input_name: str = "tokens"
    opset: Optional[int] = None


MODELS = {"bufferlm": Spec(BufferLM, lambda: torch.randint(0, VOCAB, (2, SEQ)))}


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--plain", action="store_true", help="plain torch.onnx.export, no parameter list")
    args = p.parse_args(argv)
    sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tools", "export"))
    from dtc_export import export

    torch.manual_seed(0)
    model = BufferLM()
    path = os.path.join(args.out, "bufferlm.onnx")
    options = dict(input_names=["tokens"], output_names=["logits"],
                   dynamic_axes={"tokens": {0: "batch"}, "logits": {0: "batch"}}, opset_version=14)
    if args.plain:
        torch.onnx.export(model, MODELS["bufferlm"].make_input(), path,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False, **options)
    else:
        export(model, MODELS["bufferlm"].make_input(), path, **options)
    return 0


if __name__ == "__main__":
    sys.exit(main())
