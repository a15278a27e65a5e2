#!/usr/bin/python3
"""Export the example PyTorch models used by dtc to ONNX.

dtc imports ONNX training graphs, so every model here is exported in
training mode without constant folding: weights stay graph initializers and
BatchNorm keeps its training form.  Each model is built right after
``torch.manual_seed(0)`` so the files are reproducible.

Models:
  mlp       PyTorch MNIST example MLP            input  [N,1,28,28] float32
  toy       PyTorch DDP tutorial ToyModel        input  [N,10] float32
  lenet     LeNet-style CNN for MNIST            input  [N,1,28,28] float32
  activations  small CNN through the activation family  [N,1,28,28] float32
  convae    conv encoder + ConvTranspose2d decoder, classifier head  [N,1,28,28]
  unet      tiny U-Net: reflection pad, Upsample nearest, bilinear, skip concat
  lenet5    LeNet-5 with nn.AvgPool2d (exported as an all-zero Pad + AveragePool)
  gpt       small GPT-style decoder (opset 17)   tokens [N,16] int64
  lstm      Embedding, 2-layer LSTM, Linear      tokens [N,12] int64
  gru       Embedding, bidirectional GRU, Linear tokens [N,12] int64
  audiocnn  Conv1d/BatchNorm1d/pools, Linear     input  [N,1,64] float32
  deepmlp   MLP, 6 hidden layers of 1024         input  [N,1,28,28] float32
  resnet18  torchvision resnet18, 10 classes     input  [N,3,32,32] float32
  resnet50  torchvision resnet50, 10 classes     input  [N,3,224,224] float32

deepmlp (the pipeline benchmark's model) and the ResNets are large and only
written when named (or with ``all``).

Usage (Debian's python3 with python3-torch, python3-torchvision, python3-onnx):
  /usr/bin/python3 export_models.py [--out DIR] [--opset N] [names...]
"""

import argparse
import math
import os
import sys
import warnings
from typing import Callable, NamedTuple, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

DEFAULT_OPSET = 14  # torch 1.13's default
GPT_OPSET = 17  # LayerNormalization is a single op from opset 17


# --------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------


class MnistMLP(nn.Module):
    """The MLP from the PyTorch MNIST example."""

    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(784, 128)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(self.flatten(x))))


class ActivationsCNN(nn.Module):
    """A small CNN for 1x28x28 images through the activation family:
    LeakyReLU, PReLU (per channel), ReLU6 (Clip), Hardswish, ELU,
    Hardsigmoid, Softplus with beta=2 (exported as Mul/Softplus/Div), Mish
    (exported as Softplus/Tanh/Mul) and a scalar PReLU."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, stride=2)
        self.conv2 = nn.Conv2d(4, 8, 3, stride=2)
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(8 * 3 * 3, 32)
        self.fc2 = nn.Linear(32, 32)
        self.fc3 = nn.Linear(32, 10)
        self.leaky = nn.LeakyReLU(0.1)
        self.prelu_channels = nn.PReLU(4, init=0.2)
        self.relu6 = nn.ReLU6()
        self.hardswish = nn.Hardswish()
        self.elu = nn.ELU(alpha=0.8)
        self.hardsigmoid = nn.Hardsigmoid()
        self.softplus = nn.Softplus(beta=2.0)
        self.mish = nn.Mish()
        self.prelu = nn.PReLU()

    def forward(self, x):
        x = self.prelu_channels(self.leaky(self.conv1(x)))
        x = self.hardswish(self.relu6(4.0 * self.conv2(x)))
        x = self.pool(x).flatten(1)
        x = self.elu(self.fc1(x))
        x = self.hardsigmoid(3.0 * x) + self.softplus(x)
        x = self.prelu(self.mish(self.fc2(x)))
        return self.fc3(x)


class ConvAutoencoder(nn.Module):
    """A convolutional autoencoder's encoder (Conv2d, stride 2) and decoder
    (ConvTranspose2d with stride, padding, output_padding and groups), with
    a linear classifier on the reconstruction so that it trains with
    cross-entropy."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Conv2d(1, 4, 3, stride=2, padding=1)
        self.dec1 = nn.ConvTranspose2d(4, 4, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.dec2 = nn.ConvTranspose2d(4, 2, 3, padding=1)
        self.fc = nn.Linear(2 * 28 * 28, 10)

    def forward(self, x):
        x = F.relu(self.enc(x))
        x = F.relu(self.dec1(x))
        return self.fc(torch.sigmoid(self.dec2(x)).flatten(1))


class TinyUNet(nn.Module):
    """A two-level U-Net: reflection padding, max pooling down, nn.Upsample
    (nearest) and bilinear F.interpolate (align_corners False and True) up,
    and skip connections concatenated on the channels."""

    def __init__(self):
        super().__init__()
        self.pad = nn.ReflectionPad2d(1)
        self.down1 = nn.Conv2d(1, 4, 3)
        self.down2 = nn.Conv2d(4, 8, 3, padding=1)
        self.bottom = nn.Conv2d(8, 8, 3, padding=1)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.up2 = nn.Conv2d(16, 4, 3, padding=1)
        self.up1 = nn.Conv2d(8, 4, 3, padding=1)
        self.fc = nn.Linear(4 * 7 * 7, 10)

    def forward(self, x):
        d1 = F.relu(self.down1(self.pad(x)))                       # 4 x 28 x 28
        d2 = F.relu(self.down2(F.max_pool2d(d1, 2)))               # 8 x 14 x 14
        b = F.relu(self.bottom(F.max_pool2d(d2, 2)))               # 8 x 7 x 7
        u2 = F.relu(self.up2(torch.cat([self.up(b), d2], 1)))      # 4 x 14 x 14
        u1 = F.interpolate(u2, scale_factor=2, mode="bilinear", align_corners=False)
        u1 = F.relu(self.up1(torch.cat([u1, d1], 1)))              # 4 x 28 x 28
        s = F.interpolate(u1, size=(7, 7), mode="bilinear", align_corners=True)
        return self.fc(s.flatten(1))


class LeNet5(nn.Module):
    """LeNet-5 with average pooling: nn.AvgPool2d exports, from opset 11 on,
    as an all-zero Pad followed by AveragePool."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.pool = nn.AvgPool2d(2)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(torch.tanh(self.conv1(x)))
        x = self.pool(torch.tanh(self.conv2(x)))
        x = torch.tanh(self.fc1(x.flatten(1)))
        return self.fc3(torch.tanh(self.fc2(x)))


class DeepMLP(nn.Module):
    """An MNIST MLP deep enough to split over devices: 6 hidden layers of 1024."""

    def __init__(self, width=1024, depth=6):
        super().__init__()
        layers = [nn.Flatten()]
        features = 784
        for _ in range(depth):
            layers += [nn.Linear(features, width), nn.ReLU()]
            features = width
        layers.append(nn.Linear(features, 10))
        self.layers = nn.Sequential(*layers)

    def forward(self, x):
        return self.layers(x)


class ToyModel(nn.Module):
    """The ToyModel from the PyTorch DDP tutorial."""

    def __init__(self):
        super().__init__()
        self.net1 = nn.Linear(10, 10)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(10, 5)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


class LeNet(nn.Module):
    """LeNet-style CNN for 1x28x28 images."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        # Deliberately view() on the dynamic batch size so the exporter emits
        # the Shape/Gather/Unsqueeze/Concat/Reshape chain.
        x = x.view(x.size(0), -1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        assert n_embd % n_head == 0
        self.n_head = n_head
        self.n_embd = n_embd
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        mask = torch.tril(torch.ones(block_size, block_size, dtype=torch.bool))
        self.register_buffer("mask", mask)

    def forward(self, x):
        B, T, C = x.size()
        hd = self.n_embd // self.n_head
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q = q.view(B, T, self.n_head, hd).transpose(1, 2)  # (B, nh, T, hd)
        k = k.view(B, T, self.n_head, hd).transpose(1, 2)
        v = v.view(B, T, self.n_head, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        att = att.masked_fill(~self.mask[:T, :T], float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v  # (B, nh, T, hd)
        y = y.transpose(1, 2).reshape(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.gelu = nn.GELU()  # exact (erf) form
        self.c_proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.ln1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size)
        self.ln2 = nn.LayerNorm(n_embd)
        self.mlp = MLP(n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return x


class GPT(nn.Module):
    """A small GPT-style decoder built from plain modules (no dropout)."""

    def __init__(self, vocab_size=96, block_size=16, n_embd=32, n_head=2, n_layer=2):
        super().__init__()
        self.block_size = block_size
        self.tok_emb = nn.Embedding(vocab_size, n_embd)
        self.pos_emb = nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList(
            [Block(n_embd, n_head, block_size) for _ in range(n_layer)]
        )
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)

    def forward(self, idx):
        T = idx.size(1)
        pos = torch.arange(T, device=idx.device)
        x = self.tok_emb(idx) + self.pos_emb(pos)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


class SeqFirstLM(nn.Module):
    """The layout of PyTorch's TransformerModel tutorial: token ids turned
    sequence-first with ``tokens.t()`` (an int64 Transpose), scaled
    embeddings plus a sinusoidal positional encoding held as a buffer (not a
    parameter), a residual feed-forward block, logits back to batch-first."""

    def __init__(self, vocab_size=96, seq_len=16, d_model=32):
        super().__init__()
        self.scale = math.sqrt(d_model)
        self.embed = nn.Embedding(vocab_size, d_model)
        position = torch.arange(seq_len).unsqueeze(1)
        div = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(seq_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div)
        pe[:, 0, 1::2] = torch.cos(position * div)
        self.register_buffer("pe", pe)
        self.ff = nn.Sequential(nn.Linear(d_model, 64), nn.ReLU(), nn.Linear(64, d_model))
        self.decoder = nn.Linear(d_model, vocab_size)

    def forward(self, tokens):
        x = self.embed(tokens.t()) * self.scale + self.pe  # [T, N, d]
        x = x + self.ff(x)
        return self.decoder(x).transpose(0, 1)  # [N, T, vocab]


class LstmClassifier(nn.Module):
    """Text classifier: Embedding, a 2-layer LSTM over 12 tokens, Linear on
    the last time step's output."""

    def __init__(self, vocab_size=50, embed=16, hidden=24, classes=4):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=2, batch_first=True)
        self.fc = nn.Linear(hidden, classes)

    def forward(self, tokens):
        out, _ = self.lstm(self.emb(tokens))
        return self.fc(out[:, -1])


class GruClassifier(nn.Module):
    """Text classifier: Embedding, a bidirectional GRU over 12 tokens, Linear
    on the mean over time of both directions' outputs."""

    def __init__(self, vocab_size=50, embed=16, hidden=20, classes=4):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, embed)
        self.gru = nn.GRU(embed, hidden, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, classes)

    def forward(self, tokens):
        out, _ = self.gru(self.emb(tokens))
        return self.fc(out.mean(dim=1))


class AudioCNN(nn.Module):
    """1-D CNN for a 1x64 signal: Conv1d (padded, without bias before
    BatchNorm1d; then strided, dilated and grouped, with bias), BatchNorm1d,
    ReLU, MaxPool1d, AvgPool1d, AdaptiveAvgPool1d, Linear. The AvgPool1d has
    count_include_pad=False: with the default, torch 1.13 exports it as an
    explicit Pad and an AveragePool."""

    def __init__(self, classes=4):
        super().__init__()
        self.conv1 = nn.Conv1d(1, 8, 5, padding=2, bias=False)
        self.bn1 = nn.BatchNorm1d(8)
        self.pool1 = nn.MaxPool1d(2)
        self.conv2 = nn.Conv1d(8, 16, 3, stride=2, padding=2, dilation=2, groups=2)
        self.pool2 = nn.AvgPool1d(3, stride=1, count_include_pad=False)
        self.gap = nn.AdaptiveAvgPool1d(1)
        self.fc = nn.Linear(16, classes)

    def forward(self, x):
        x = self.pool1(F.relu(self.bn1(self.conv1(x))))
        x = self.pool2(F.relu(self.conv2(x)))
        return self.fc(self.gap(x).flatten(1))


# --------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------

def torchvision():
    """torchvision, imported when a ResNet is built (the GPU benchmark imports
    this file for the model classes on machines that may lack it)."""
    import torchvision as tv

    return tv


class Spec(NamedTuple):
    make_model: Callable[[], nn.Module]
    make_input: Callable[[], torch.Tensor]  # example input, batch size 2
    input_name: str = "input"
    opset: Optional[int] = None  # None: DEFAULT_OPSET


MODELS = {
    "mlp": Spec(MnistMLP, lambda: torch.randn(2, 1, 28, 28)),
    "toy": Spec(ToyModel, lambda: torch.randn(2, 10)),
    "lenet": Spec(LeNet, lambda: torch.randn(2, 1, 28, 28)),
    "activations": Spec(ActivationsCNN, lambda: torch.randn(2, 1, 28, 28)),
    "convae": Spec(ConvAutoencoder, lambda: torch.randn(2, 1, 28, 28)),
    "unet": Spec(TinyUNet, lambda: torch.randn(2, 1, 28, 28)),
    "lenet5": Spec(LeNet5, lambda: torch.randn(2, 1, 28, 28)),
    "gpt": Spec(GPT, lambda: torch.randint(0, 96, (2, 16)), "tokens", GPT_OPSET),
    "seqfirst": Spec(SeqFirstLM, lambda: torch.randint(0, 96, (2, 16)), "tokens"),
    "lstm": Spec(LstmClassifier, lambda: torch.randint(0, 50, (2, 12)), "tokens"),
    "gru": Spec(GruClassifier, lambda: torch.randint(0, 50, (2, 12)), "tokens"),
    "audiocnn": Spec(AudioCNN, lambda: torch.randn(2, 1, 64)),
    "deepmlp": Spec(DeepMLP, lambda: torch.randn(2, 1, 28, 28)),
    "resnet18": Spec(
        lambda: torchvision().models.resnet18(weights=None, num_classes=10),
        lambda: torch.randn(2, 3, 32, 32),
    ),
    "resnet50": Spec(
        lambda: torchvision().models.resnet50(weights=None, num_classes=10),
        lambda: torch.randn(2, 3, 224, 224),
    ),
}
SMALL = ["mlp", "toy", "lenet", "gpt"]
OUTPUT_NAME = "logits"


def fix_output_shape(proto, model, example):
    """Give the output static sizes on every axis but the batch axis.

    The tracer records ``idx.size(1)`` as a graph computation, so for gpt the
    exporter declares the sequence axis of ``logits`` as a made-up symbol
    even though the input's sequence axis is fixed.  Replace such symbols by
    the size PyTorch actually produces.  Returns True if anything changed.
    """
    with torch.no_grad():
        shape = model(example).shape
    dims = proto.graph.output[0].type.tensor_type.shape.dim
    changed = False
    for axis, dim in enumerate(dims):
        if axis > 0 and dim.HasField("dim_param"):
            dim.dim_value = shape[axis]  # clears dim_param (oneof)
            changed = True
    return changed


def export(name, out_dir, opset):
    import onnx

    spec = MODELS[name]
    input_name = spec.input_name
    if opset is None:
        opset = spec.opset or DEFAULT_OPSET

    torch.manual_seed(0)
    model = spec.make_model()
    model.train()
    example = spec.make_input()

    path = os.path.join(out_dir, f"{name}.onnx")
    with warnings.catch_warnings():
        # BatchNorm's num_batches_tracked counter has no ONNX counterpart: the
        # exporter drops its update and warns once per layer, as expected.
        warnings.filterwarnings("ignore", message="ONNX Preprocess - Removing mutation")
        torch.onnx.export(
            model,
            example,
            path,
            training=torch.onnx.TrainingMode.TRAINING,
            do_constant_folding=False,
            input_names=[input_name],
            output_names=[OUTPUT_NAME],
            dynamic_axes={input_name: {0: "batch"}, OUTPUT_NAME: {0: "batch"}},
            opset_version=opset,
        )

    proto = onnx.load(path)
    if fix_output_shape(proto, model, example):
        onnx.save(proto, path)
    if any(True for _ in model.buffers()):
        # Buffers are initializers like weights: name the parameters
        # (tools/export/dtc_export.py) so that dtc keeps the rest constant.
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                        "..", "..", "tools", "export"))
        from dtc_export import mark_parameters, trainable_names

        mark_parameters(path, trainable_names(model))
        proto = onnx.load(path)
    onnx.checker.check_model(proto)
    ops = sorted({node.op_type for node in proto.graph.node})
    print(f"{path}: {os.path.getsize(path)} bytes, opset {opset}")
    print(f"  ops: {', '.join(ops)}")
    print(f"  initializers: {len(proto.graph.initializer)}")


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Export the dtc example models to ONNX (training mode)."
    )
    parser.add_argument(
        "--out",
        default=os.path.dirname(os.path.abspath(__file__)),
        help="output directory (default: this script's folder)",
    )
    parser.add_argument(
        "--opset",
        type=int,
        default=None,
        help=f"ONNX opset (default: {DEFAULT_OPSET}, {GPT_OPSET} for gpt)",
    )
    parser.add_argument(
        "names",
        nargs="*",
        metavar="name",
        help=f"models to export: {', '.join(MODELS)} or 'all' "
        f"(default: {' '.join(SMALL)})",
    )
    args = parser.parse_args(argv)

    names = args.names or SMALL
    if "all" in names:
        names = list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"unknown model(s): {', '.join(unknown)}")

    os.makedirs(args.out, exist_ok=True)
    for name in names:
        export(name, args.out, args.opset)
    return 0


if __name__ == "__main__":
    sys.exit(main())
