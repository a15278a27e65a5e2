"""Distance of a forward pass from the kinks of its piecewise-linear ops.

A float32 forward pass differs from the exact one by rounding, so an op with
a kink -- ReLU at 0, max pooling where the two largest values of a window tie
-- can take the other branch in float32 when its input is within rounding of
the kink. Its gradient then differs by an O(1) amount at that element (one
ReLU mask bit or one max-pool argmax), and no element-wise tolerance on the
gradient is meaningful: two correct implementations with different summation
orders disagree. (The loss, a continuous function, does not jump.)

``KinkMargin`` measures, during a float64 forward pass, how close every
ReLU input and every max-pool window came to a kink, relative to the RMS of
that op's input:

    relu:        |x| / rms(x)
    max pool:    (largest - second largest of the window) / rms(x)

What it showed (ResNet-18, batch 16, 32x32 random images): every batch has
a ReLU input within ~1e-6 of 0 (there are ~2 million of them), while float32
pre-activations differ from float64 by up to ~2e-5 of their RMS (PyTorch
float32 against float64). So no batch of such a network is provably free of
kink decisions; why test/e2e/resnet18.test checks its multi-step run by
teacher forcing and the update's norm, not element by element. Run as a
script to print each batch's smallest margin.
"""

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

# Margins above this are far outside float32 rounding of the op's input.
CERTIFIED_MARGIN = 1e-4


def _rms(x):
    return float(x.detach().double().pow(2).mean().sqrt())


def _maxpool_gap(x, args, kwargs):
    """Smallest (top1 - top2) over the windows of F.max_pool2d(x, ...)."""
    names = ["kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices"]
    params = dict(zip(names, args))
    params.update(kwargs)
    k = params["kernel_size"]
    k = (k, k) if isinstance(k, int) else tuple(k)
    s = params.get("stride") or k
    s = (s, s) if isinstance(s, int) else tuple(s)
    p = params.get("padding", 0)
    p = (p, p) if isinstance(p, int) else tuple(p)
    d = params.get("dilation", 1)
    d = (d, d) if isinstance(d, int) else tuple(d)
    if params.get("ceil_mode"):
        raise NotImplementedError("kink margin of a ceil-mode max pool")
    if k[0] * k[1] < 2:
        return float("inf")
    xd = x.detach().double()
    padded = F.pad(xd, (p[1], p[1], p[0], p[0]), value=float("-inf"))
    n, c = xd.shape[:2]
    cols = F.unfold(padded.reshape(n * c, 1, *padded.shape[2:]), k, dilation=d, stride=s)
    top2 = cols.topk(2, dim=1).values
    # Windows whose largest value is exactly 0 follow a ReLU that zeroed them:
    # every implementation produces those zeros exactly, so ties among them
    # are broken identically, and the ReLU's own margin covers its inputs.
    first, second = top2[:, 0], top2[:, 1]
    gap = (first - second)[(first != 0) & torch.isfinite(first - second)]
    return float(gap.min()) if gap.numel() else float("inf")


class KinkMargin(TorchFunctionMode):
    """Records the smallest relative kink margin of the ops run under it."""

    def __init__(self):
        super().__init__()
        self.margin = float("inf")
        self.where = ""
        self.count = 0

    def _note(self, margin, op):
        self.count += 1
        if margin < self.margin:
            self.margin, self.where = margin, f"{op} #{self.count}"

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name in ("relu", "relu_") and args:
            x = args[0]
            rms = _rms(x)
            if rms > 0:
                self._note(float(x.detach().double().abs().min()) / rms, "relu")
        elif name == "max_pool2d" and args:
            x = args[0]
            rms = _rms(x)
            if rms > 0:
                self._note(_maxpool_gap(x, args[1:], kwargs) / rms, "max_pool2d")
        return func(*args, **kwargs)


def main(argv=None):
    """kinks.py --model M --onnx F --data DIR --batch-size B --batches N:
    print each batch's smallest kink margin (float64, the ONNX file's weights)."""
    import argparse
    import os
    import sys

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import onnx
    import torch_reference as ref

    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("--model", required=True)
    p.add_argument("--onnx", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--batches", type=int, default=10)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    spec = ref.import_export_models(ref.DEFAULT_EXPORT_SCRIPT).MODELS[args.model]
    module = spec.make_model().double()
    ref.load_onnx_weights(module, ref.onnx_weights(onnx.load(args.onnx)))
    module.train()
    x, y = ref.load_training_set(args.data, tuple(spec.make_input().shape[1:]))
    for k, (xb, _) in enumerate(ref.batches(x, y, args.batch_size, args.batches)):
        with KinkMargin() as km:
            module(xb.double())
        verdict = "certified" if km.margin >= CERTIFIED_MARGIN else "within rounding of a kink"
        print(f"batch {k}: smallest margin {km.margin:.2e} ({km.where} of {km.count} ops): {verdict}")


if __name__ == "__main__":
    main()
