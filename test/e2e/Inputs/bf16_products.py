"""dtc's --precision=bf16 arithmetic in PyTorch, for torch_reference.py.

dtc's bf16 programs compute every matrix product (linear layers and
convolutions, forward and backward) on bf16 copies of both operands and round
the float32 result to bf16; biases are added in float32 afterwards, and
everything else (activations, losses, weights, gradients, optimizer state)
stays float32.  ``use_bf16_products()`` makes ``F.linear`` and ``F.conv2d``
(what ``nn.Linear`` and ``nn.Conv2d`` call) do exactly that, with backward
passes that round the same way:

  y  = r(r(x) @ r(W)^T) + b        dx = r(r(dy) @ r(W))     dW = r(r(dy)^T @ r(x))
  y  = r(conv(r(x), r(W))) + b     dx = r(conv_input(r(W), r(dy)))
                                   dW = r(conv_weight(r(x), r(dy)))
  db = sum(dy)  (float32)

where r() rounds to bf16 (nearest even) and back to float32.  Products of
bf16 values are exact in float32, so the only differences left between dtc
and this reference are float32 summation order and the rare bf16 rounding
that such a difference flips.
"""

import torch
import torch.nn.functional as F


def r(t):
    """Round to bf16 (nearest even) and widen back: dtc's cast pair."""
    return t.to(torch.bfloat16).to(torch.float32)


class _Linear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b):
        xr, wr = r(x), r(w)
        ctx.save_for_backward(xr, wr)
        ctx.has_bias = b is not None
        y = r(xr @ wr.t())
        return y + b if b is not None else y

    @staticmethod
    def backward(ctx, dy):
        xr, wr = ctx.saved_tensors
        dyr = r(dy)
        dx = r(dyr @ wr) if ctx.needs_input_grad[0] else None
        dw = None
        if ctx.needs_input_grad[1]:
            dw = r(dyr.reshape(-1, dyr.shape[-1]).t() @ xr.reshape(-1, xr.shape[-1]))
        db = dy.reshape(-1, dy.shape[-1]).sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
        return dx, dw, db


class _Conv2d(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b, stride, padding, dilation, groups):
        xr, wr = r(x), r(w)
        ctx.save_for_backward(xr, wr)
        ctx.conf = (stride, padding, dilation, groups)
        ctx.has_bias = b is not None
        y = r(torch.conv2d(xr, wr, None, stride, padding, dilation, groups))
        return y + b.view(1, -1, 1, 1) if b is not None else y

    @staticmethod
    def backward(ctx, dy):
        xr, wr = ctx.saved_tensors
        stride, padding, dilation, groups = ctx.conf
        dyr = r(dy)
        dx = dw = db = None
        if ctx.needs_input_grad[0]:
            dx = r(torch.nn.grad.conv2d_input(xr.shape, wr, dyr, stride, padding, dilation, groups))
        if ctx.needs_input_grad[1]:
            dw = r(torch.nn.grad.conv2d_weight(xr, wr.shape, dyr, stride, padding, dilation, groups))
        if ctx.has_bias and ctx.needs_input_grad[2]:
            db = dy.sum((0, 2, 3))
        return dx, dw, db, None, None, None, None


def _linear(x, w, b=None):
    return _Linear.apply(x, w, b)


def _conv2d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    if isinstance(padding, str):
        raise SystemExit("error: bf16 reference: string padding is not supported")
    return _Conv2d.apply(x, w, b, stride, padding, dilation, groups)


def use_bf16_products():
    """Route nn.Linear and nn.Conv2d (through F.linear / F.conv2d) to the bf16 versions."""
    F.linear = _linear
    F.conv2d = _conv2d
