#!/usr/bin/python3
"""PyTorch reference for dtc's end-to-end tests: the definition of "equal to PyTorch".

A dtc training program and this script start from the same weights (the ONNX
file's initializers), see the same batches in the same order, and apply the
same loss and optimizer.  This script does the PyTorch side of that and
compares it with what the dtc program wrote:

  1. Build the PyTorch module with the class in examples/models/export_models.py
     (imported by path, so the reference can never drift from the exporter).
  2. Load every ONNX initializer into it with ``load_state_dict(strict=True)``:
     every initializer must name a state_dict entry and vice versa (except
     BatchNorm's ``num_batches_tracked``, which the exporter drops; it only
     matters for ``momentum=None``, which these models do not use).
  3. Read the training set exactly as a dtc program does with
     ``--shuffle=false``: batch k is samples [k*B, (k+1)*B) in file order, the
     last incomplete batch is dropped, and the next epoch starts again at
     sample 0.  IDX images are scaled to value/255 and reshaped to the model's
     per-sample input shape; npy files are used as they are.
  4. Train ``--steps`` steps in train mode (batch norm uses batch statistics
     and updates its running statistics), float32 (``--precision=bf16``: with
     dtc's bf16 matrix products, see bf16_products.py), one thread, with the
     torch.optim optimizer named by the same flags dtc takes.  The loss is
     ``F.cross_entropy`` (mean over the batch, and over every position of a
     sequence model).  Parameters matching ``--freeze`` (a full match, as
     dtc's std::regex_match) get ``requires_grad=False`` and are not given to
     the optimizer, so they have no optimizer state and no weight decay.
  5. Compare, as asked by the check flags:
       --losses M.jsonl   dtc's per-step losses (``--log-every=1``): every step
                          1..steps, |l_dtc - l_ref| <= loss-rtol * |l_ref|.
       --grads S.onnx     S is what dtc saved after exactly one step of plain
                          SGD with lr=1 (no momentum, no weight decay), so
                          g_dtc = w_before - w_after.  See grad_check() for the
                          tolerance.  Also the batch-norm running statistics in
                          S against PyTorch's after one forward pass.
       --weights S.onnx   every initializer dtc saved after ``--steps`` steps
                          against the reference's state_dict (weight-rtol,
                          relative to the tensor's largest magnitude;
                          --weight-rtol-for REGEX=TOL for named exceptions).
       --stepwise DIR     teacher-forced steps, for chaotic models (see
                          check_stepwise): DIR/step-K.onnx is dtc's model after
                          K steps (K = 1..steps); each step K is recomputed in
                          float64 from dtc's own weights after step K-1 and
                          compared: the loss (loss-rtol), the whole update
                          (update-rtol, relative to its norm) and the batch-norm
                          running statistics (weight-rtol).  SGD, with or
                          without momentum (the momentum buffer is recovered
                          from dtc's previous update: the saved weights are
                          the whole training state).
       --frozen S.onnx    the weights matching --freeze are bit-identical in S
                          and in the initial model.
       --checker S.onnx   S passes onnx.checker.check_model (full check) and has
                          the same graph and initializer names, types and
                          shapes as the initial model.
Prints one summary line per check (max relative difference and tolerance) and
exits 1 on the first failing check, naming the first differing step or tensor.
"""

import argparse
import gzip
import importlib.util
import json
import math
import os
import re
import struct
import sys

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_EXPORT_SCRIPT = os.path.join(HERE, "..", "..", "..", "examples", "models", "export_models.py")

# One float32 rounding: fl(x) = x * (1 + d) with |d| <= 2^-24.
F32_UNIT_ROUNDOFF = 2.0**-24


class Mismatch(Exception):
    """A comparison failed; the message names the first differing step or tensor."""


# --------------------------------------------------------------------------
# Model and weights
# --------------------------------------------------------------------------


def import_export_models(path):
    spec = importlib.util.spec_from_file_location("export_models", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def onnx_weights(model_proto):
    """name -> numpy array of every initializer (a copy, in the file's dtype)."""
    return {t.name: onnx.numpy_helper.to_array(t).copy() for t in model_proto.graph.initializer}


def load_onnx_weights(module, weights):
    """Load the ONNX initializers into `module`, strict about every name."""
    state = module.state_dict()
    expected = {k for k in state if not k.endswith("num_batches_tracked")}
    missing = sorted(expected - weights.keys())
    unknown = sorted(weights.keys() - state.keys())
    if missing or unknown:
        raise SystemExit(
            f"error: ONNX initializers do not match the PyTorch state_dict: "
            f"missing {missing[:5]}, unknown {unknown[:5]}"
        )
    new_state = {}
    for name, value in state.items():
        if name in weights:
            array = weights[name]
            if tuple(array.shape) != tuple(value.shape):
                raise SystemExit(f"error: {name}: ONNX shape {array.shape} != PyTorch {tuple(value.shape)}")
            new_state[name] = torch.from_numpy(array.copy()).to(value.dtype)
        else:
            new_state[name] = value  # num_batches_tracked
    module.load_state_dict(new_state, strict=True)


# --------------------------------------------------------------------------
# Data (the same batches as a dtc program with --shuffle=false)
# --------------------------------------------------------------------------


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    zero, dtype_code, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype_code != 0x08:
        raise SystemExit(f"error: {path}: not an unsigned-byte IDX file")
    dims = struct.unpack(">" + "I" * ndim, data[4 : 4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def find(directory, stem):
    for name in (stem, stem + ".gz"):
        path = os.path.join(directory, name)
        if os.path.exists(path):
            return path
    raise SystemExit(f"error: {directory}: no {stem}[.gz]")


def load_training_set(directory, sample_shape):
    """(x, y) as numpy arrays, x shaped [N, *sample_shape] for IDX data."""
    npy_x = os.path.join(directory, "train_x.npy")
    if os.path.exists(npy_x):
        return np.load(npy_x), np.load(os.path.join(directory, "train_y.npy"))
    images = read_idx(find(directory, "train-images-idx3-ubyte"))
    labels = read_idx(find(directory, "train-labels-idx1-ubyte"))
    x = (images.astype(np.float32) / np.float32(255.0)).reshape(len(images), *sample_shape)
    return x, labels.astype(np.int64)


def batches(x, y, batch_size, steps):
    """Yield `steps` batches in file order, dropping the incomplete tail."""
    per_epoch = len(x) // batch_size
    if per_epoch == 0:
        raise SystemExit(f"error: {len(x)} samples are less than one batch of {batch_size}")
    for step in range(steps):
        k = step % per_epoch
        lo, hi = k * batch_size, (k + 1) * batch_size
        yield torch.from_numpy(np.ascontiguousarray(x[lo:hi])), torch.from_numpy(
            np.ascontiguousarray(y[lo:hi])
        )


# --------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------


def make_optimizer(args, params):
    if args.optimizer == "sgd":
        return torch.optim.SGD(
            params,
            lr=args.lr,
            momentum=args.momentum,
            dampening=args.dampening,
            weight_decay=args.weight_decay,
            nesterov=args.nesterov,
        )
    betas = tuple(float(b) for b in args.betas.split(","))
    # dtc's default weight decay is 0 for every optimizer (torch's AdamW
    # defaults to 0.01): always pass it explicitly.
    cls = torch.optim.Adam if args.optimizer == "adam" else torch.optim.AdamW
    return cls(params, lr=args.lr, betas=betas, eps=args.eps, weight_decay=args.weight_decay)


def param_groups(args, named):
    """dtc's --no-decay=REGEX and --lr-scale=REGEX=X (full matches, the first
    --lr-scale that matches wins) as torch.optim parameter groups."""
    no_decay = re.compile(args.no_decay) if args.no_decay else None
    scales = [(re.compile(p), float(x)) for p, x in (o.rsplit("=", 1) for o in args.lr_scale)]
    groups = {}
    for name, p in named:
        decay = args.weight_decay
        if no_decay and no_decay.fullmatch(name):
            decay = 0.0
        scale = next((x for pattern, x in scales if pattern.fullmatch(name)), 1.0)
        groups.setdefault((decay, scale), []).append(p)
    return [{"params": ps, "weight_decay": d, "lr": args.lr * x, "dtc_scale": x} for (d, x), ps in groups.items()]


def make_scheduler(args, optimizer):
    """The train binary's --lr-schedule flags as torch.optim.lr_scheduler (one
    scheduler.step() per optimizer step)."""
    S = torch.optim.lr_scheduler
    kind, W = args.lr_schedule, args.lr_warmup
    T = args.lr_total or args.steps
    if kind == "onecycle":
        return S.OneCycleLR(optimizer, max_lr=[g["lr"] for g in optimizer.param_groups], total_steps=T,
                            pct_start=args.lr_pct_start, div_factor=args.lr_div_factor,
                            final_div_factor=args.lr_final_div_factor, anneal_strategy="cos",
                            cycle_momentum=False)
    if kind == "constant":
        main = S.LambdaLR(optimizer, lambda t: 1.0)
    elif kind == "step":
        main = S.StepLR(optimizer, step_size=args.lr_step_size, gamma=args.lr_gamma)
    elif kind == "multistep":
        main = S.MultiStepLR(optimizer, milestones=[int(m) for m in args.lr_milestones.split(",")],
                             gamma=args.lr_gamma)
    elif kind == "exponential":
        main = S.ExponentialLR(optimizer, gamma=args.lr_gamma)
    elif kind == "cosine":
        main = S.CosineAnnealingLR(optimizer, T_max=T - W, eta_min=args.lr_min)
    elif kind == "linear":
        main = S.LinearLR(optimizer, start_factor=1.0, end_factor=0.0, total_iters=T - W)
    else:
        raise SystemExit(f"unknown --lr-schedule {kind}")
    if W == 0:
        return main
    if args.lr_warmup_start > 0:
        warm = S.LinearLR(optimizer, start_factor=args.lr_warmup_start, end_factor=1.0, total_iters=W)
    else:  # Hugging Face's warm-up from 0 (LinearLR needs a positive start)
        warm = S.LambdaLR(optimizer, lambda t: min(1.0, t / W))
    return S.SequentialLR(optimizer, [warm, main], milestones=[W])


def loss_fn(logits, labels, args=None):
    weight = None
    smoothing = 0.0
    if args is not None:
        smoothing = args.label_smoothing
        if args.class_weights:
            weight = torch.tensor([float(w) for w in args.class_weights.split(",")], dtype=logits.dtype)
    if logits.dim() == 3:  # sequence model: [N, T, V] against [N, T]
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), weight=weight,
                               label_smoothing=smoothing)
    return F.cross_entropy(logits, labels, weight=weight, label_smoothing=smoothing)


def train(args, module, x, y):
    """Train; return (per-step losses, first step's gradients, buffers after the first forward)."""
    frozen = re.compile(args.freeze) if args.freeze else None
    named = []
    for name, p in module.named_parameters():
        if frozen and frozen.fullmatch(name):
            p.requires_grad_(False)
        else:
            named.append((name, p))
    params = [p for _, p in named]
    optimizer = make_optimizer(args, param_groups(args, named) if args.no_decay or args.lr_scale else params)
    scheduler = make_scheduler(args, optimizer)
    module.train()

    losses, first_grads, first_buffers = [], None, None
    args.lrs, args.grad_norms = [], []
    for xb, yb in batches(x, y, args.batch_size, args.steps):
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(module(xb.to(args.dtype) if xb.is_floating_point() else xb), yb, args)
        loss.backward()
        if first_grads is None:
            first_grads = {
                n: p.grad.detach().clone() for n, p in module.named_parameters() if p.grad is not None
            }
            first_buffers = {n: b.detach().clone() for n, b in module.named_buffers()}
        # dtc clamps by value first, then clips the norm of the clamped gradients.
        if args.clip_grad_value is not None:
            torch.nn.utils.clip_grad_value_(params, args.clip_grad_value)
        if args.clip_grad_norm is not None:
            norm = torch.nn.utils.clip_grad_norm_(params, args.clip_grad_norm)
            args.grad_norms.append(float(norm))
        # dtc logs the schedule's lr (before any --lr-scale).
        group = optimizer.param_groups[0]
        args.lrs.append(group["lr"] / group.get("dtc_scale", 1.0))
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    return losses, first_grads, first_buffers


# --------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------


def max_abs(a):
    return float(np.max(np.abs(a))) if a.size else 0.0


def read_metrics(path, field="loss"):
    values = {}
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            if "step" in record and field in record and not record.get("eval"):
                values[record["step"]] = record[field]
    return values


def check_logged(path, field, ref, rtol, scale=0.0):
    """dtc's logged `field` ("lr", "grad_norm") of every step against `ref`,
    relative to max(|ref|, scale)."""
    dtc = read_metrics(path, field)
    worst = 0.0
    for step, r in enumerate(ref, start=1):
        if step not in dtc:
            raise Mismatch(f"{path}: step {step} logged no {field}")
        got = dtc[step]
        rel = abs(got - r) / max(abs(r), scale, 1e-30)
        if not math.isfinite(got) or rel > rtol:
            raise Mismatch(f"{field}: step {step}: dtc {got:.9g} vs torch {r:.9g} (relative {rel:.3g} > {rtol:g})")
        worst = max(worst, rel)
    print(f"{field}: {len(ref)} steps, max relative difference {worst:.3g} (tolerance {rtol:g})")


def check_losses(path, ref_losses, rtol):
    dtc = read_metrics(path)
    expected = list(range(1, len(ref_losses) + 1))
    if sorted(dtc) != expected:
        raise Mismatch(f"{path}: logged steps {sorted(dtc)[:8]}... are not 1..{len(ref_losses)} (use --log-every=1)")
    worst = 0.0
    for step, ref in zip(expected, ref_losses):
        got = dtc[step]
        rel = abs(got - ref) / abs(ref)
        if not math.isfinite(got) or rel > rtol:
            raise Mismatch(f"losses: step {step}: dtc {got:.9g} vs torch {ref:.9g} (relative {rel:.3g} > {rtol:g})")
        worst = max(worst, rel)
    print(f"losses: {len(ref_losses)} steps, max relative difference {worst:.3g} (tolerance {rtol:g})")


def grad_check(initial, saved, ref_grads, rtol):
    """Compare dtc's first-step gradients, recovered from one SGD step with lr=1.

    dtc computed w_after = fl32(w_before - g_dtc).  The subtraction
    w_before - w_after, done here in float64, is exact, so it recovers g_dtc
    up to the one float32 rounding of the update: |fl32(z) - z| <= 2^-24 |z|
    with z = w_after.  That bound is added to the tolerance element-wise, so
    the recovered gradient is as good as the gradient itself.

    Tolerance per tensor: |g_dtc - g_torch| <= rtol * max|g_torch| + 2^-24 |w_after|
    element-wise (scaled by the tensor's largest gradient, because elements
    with tiny gradients are sums of cancelling terms whose relative error is
    unbounded under a different float32 summation order), and in addition
    | ||g_dtc|| - ||g_torch|| | <= rtol * ||g_torch|| for the whole tensor.
    """
    worst_elem, worst_norm = 0.0, 0.0
    for name, g_ref in ref_grads.items():
        g_ref = g_ref.numpy().astype(np.float64)
        after = saved[name].astype(np.float64)
        g_dtc = initial[name].astype(np.float64) - after
        scale = max_abs(g_ref)
        excess = np.abs(g_dtc - g_ref) - F32_UNIT_ROUNDOFF * np.abs(after)
        allowed = rtol * scale
        if not np.all(excess <= allowed) or not np.all(np.isfinite(g_dtc)):
            i = np.unravel_index(int(np.argmax(np.where(np.isfinite(excess), excess, np.inf))), g_ref.shape)
            raise Mismatch(
                f"gradients: {name}{list(i)}: dtc {g_dtc[i]:.7g} vs torch {g_ref[i]:.7g} "
                f"(difference {abs(g_dtc[i] - g_ref[i]):.3g} > {rtol:g} * max|g| = {allowed:.3g})"
            )
        norm_ref, norm_dtc = np.linalg.norm(g_ref), np.linalg.norm(g_dtc)
        norm_rel = abs(norm_dtc - norm_ref) / norm_ref if norm_ref > 0 else norm_dtc
        if norm_rel > rtol:
            raise Mismatch(f"gradients: {name}: norm dtc {norm_dtc:.7g} vs torch {norm_ref:.7g} (relative {norm_rel:.3g} > {rtol:g})")
        if scale > 0:
            worst_elem = max(worst_elem, max_abs(g_dtc - g_ref) / scale)
        worst_norm = max(worst_norm, norm_rel)
    print(
        f"gradients: {len(ref_grads)} tensors, max |g_dtc - g_torch| / max|g_torch| {worst_elem:.3g}, "
        f"max norm relative difference {worst_norm:.3g} (tolerance {rtol:g})"
    )


def check_weights(label, saved, state, names, rtol, overrides=()):
    """Per tensor: max|w_dtc - w_ref| <= rtol * max|w_ref|; integer/bool tensors exactly.

    `overrides` is a list of (regex, rtol): the first whose regex fully matches
    a tensor's name gives that tensor's tolerance instead of `rtol`.
    """
    worst = 0.0
    default_rtol = rtol
    for name in names:
        rtol = next((t for pattern, t in overrides if re.fullmatch(pattern, name)), default_rtol)
        ref = state[name].numpy()
        got = saved[name]
        if got.shape != ref.shape:
            raise Mismatch(f"{label}: {name}: dtc shape {got.shape} vs torch {ref.shape}")
        if ref.dtype.kind in "biu":
            if not np.array_equal(got, ref):
                raise Mismatch(f"{label}: {name}: differs (integer/bool tensor)")
            continue
        diff = np.abs(got.astype(np.float64) - ref.astype(np.float64))
        scale = max_abs(ref)
        rel = float(np.max(diff)) / scale if scale > 0 else float(np.max(diff))
        if not np.all(np.isfinite(got)) or rel > rtol:
            i = np.unravel_index(int(np.argmax(np.where(np.isfinite(diff), diff, np.inf))), ref.shape)
            raise Mismatch(
                f"{label}: {name}{list(i)}: dtc {got[i]:.7g} vs torch {ref[i]:.7g} "
                f"(relative to max|w| {rel:.3g} > {rtol:g})"
            )
        if rtol == default_rtol:
            worst = max(worst, rel)
        else:
            print(f"{label}: {name}: relative difference {rel:.3g} (tolerance {rtol:g})")
    print(f"{label}: {len(names)} tensors, max relative difference {worst:.3g} (tolerance {default_rtol:g})")


def check_stepwise(args, spec, initial, x, y):
    """Teacher forcing: every step recomputed in float64 from dtc's own state.

    A ReLU network on random data is chaotic under float32 rounding: once a
    pre-activation lies within rounding of its kink (every ResNet-18 batch
    here has ReLU inputs within ~1e-6 of 0 relative to their RMS, see
    kinks.py), two correct implementations may take different branches, and
    a free-running multi-step comparison then measures the luck of the BLAS
    kernels, not dtc.  Restarting each step from dtc's own weights removes
    the accumulation: step K's loss is a continuous function of dtc's
    weights after step K-1, so it must equal the float64 loss to float32
    accuracy whatever kernels ran; the update dtc applied, w_{K-1} - w_K,
    must equal lr * g64 up to the few gradient elements a kink decision can
    change, which the norm over the whole model keeps small (measured below
    1e-3 of the update's norm; a wrong lr, sign or stale weight is >= 1e-2).
    The float32 rounding of w_K (<= 2^-24 |w_K| per element) is added to
    the allowance.
    """
    if args.optimizer != "sgd" or args.weight_decay or args.nesterov or args.dampening:
        raise SystemExit("error: --stepwise needs SGD (momentum allowed; no weight decay, "
                         "dampening or Nesterov)")
    dtc_losses = read_metrics(args.losses) if args.losses else {}
    models_state = [initial] + [
        onnx_weights(onnx.load(os.path.join(args.stepwise, f"step-{k}.onnx"))) for k in range(1, args.steps + 1)
    ]
    module = spec.make_model().double()
    worst_loss = worst_update = worst_stats = 0.0
    for k, (xb, yb) in enumerate(batches(x, y, args.batch_size, args.steps), start=1):
        before, after = models_state[k - 1], models_state[k]
        load_onnx_weights(module, {n: v.astype(np.float64) if v.dtype.kind == "f" else v for n, v in before.items()})
        module.train()
        module.zero_grad(set_to_none=True)
        loss = loss_fn(module(xb.double() if xb.is_floating_point() else xb), yb)
        loss.backward()
        ref_loss = loss.item()
        if k in dtc_losses:
            rel = abs(dtc_losses[k] - ref_loss) / abs(ref_loss)
            if not math.isfinite(dtc_losses[k]) or rel > args.loss_rtol:
                raise Mismatch(f"stepwise: step {k}: loss dtc {dtc_losses[k]:.9g} vs float64 {ref_loss:.9g} "
                               f"from dtc's weights after step {k - 1} (relative {rel:.3g} > {args.loss_rtol:g})")
            worst_loss = max(worst_loss, rel)
        diff_sq = ref_sq = rounding_sq = 0.0
        for name, p in module.named_parameters():
            step = p.grad.numpy()
            rounding = F32_UNIT_ROUNDOFF * np.abs(after[name].astype(np.float64))
            if args.momentum and k >= 2:
                # torch.optim.SGD: buf_k = momentum * buf_{k-1} + g_k, w_k = w_{k-1} - lr * buf_k;
                # dtc's buf_{k-1} is recovered from its previous update (exact
                # but for the float32 rounding of the two weights, allowed for).
                older = models_state[k - 2][name].astype(np.float64)
                buf = (older - before[name].astype(np.float64)) / args.lr
                step = args.momentum * buf + step
                rounding = rounding + args.momentum * F32_UNIT_ROUNDOFF * (
                    np.abs(older) + np.abs(before[name].astype(np.float64)))
            expected = args.lr * step
            applied = before[name].astype(np.float64) - after[name].astype(np.float64)
            diff_sq += float(np.sum((applied - expected) ** 2))
            ref_sq += float(np.sum(expected**2))
            rounding_sq += float(np.sum(rounding**2))
        excess = max(0.0, math.sqrt(diff_sq) - math.sqrt(rounding_sq)) / math.sqrt(ref_sq)
        if not math.isfinite(excess) or excess > args.update_rtol:
            raise Mismatch(f"stepwise: step {k}: ||update_dtc - lr*g64|| / ||lr*g64|| = {excess:.3g} "
                           f"> {args.update_rtol:g} (the update dtc applied from its weights after step {k - 1})")
        worst_update = max(worst_update, excess)
        print(f"stepwise: step {k}: loss {ref_loss:.9g}, update difference {excess:.3g}")
        stats = {n: b.detach().numpy() for n, b in module.named_buffers() if n.endswith(("running_mean", "running_var"))}
        for name, ref in stats.items():
            scale = max_abs(ref)
            rel = max_abs(after[name].astype(np.float64) - ref) / scale if scale > 0 else 0.0
            if rel > args.weight_rtol:
                raise Mismatch(f"stepwise: step {k}: {name}: relative to max {rel:.3g} > {args.weight_rtol:g}")
            worst_stats = max(worst_stats, rel)
    print(f"stepwise: {args.steps} steps from dtc's own weights against float64: losses {worst_loss:.3g} "
          f"(tolerance {args.loss_rtol:g}), updates {worst_update:.3g} (tolerance {args.update_rtol:g}), "
          f"running stats {worst_stats:.3g} (tolerance {args.weight_rtol:g})")


def check_frozen(initial, saved, pattern):
    names = [n for n in initial if re.fullmatch(pattern, n)]
    if not names:
        raise Mismatch(f"frozen: no initializer matches {pattern!r}")
    for name in names:
        if saved[name].dtype != initial[name].dtype or saved[name].tobytes() != initial[name].tobytes():
            raise Mismatch(f"frozen: {name} changed (it must be bit-identical)")
    print(f"frozen: {len(names)} tensors bit-identical ({', '.join(names)})")


def check_saved_model(initial_proto, saved_proto, path):
    onnx.checker.check_model(saved_proto, full_check=True)

    def signature(proto):
        inits = [(t.name, t.data_type, tuple(t.dims)) for t in proto.graph.initializer]
        nodes = [(n.name, n.op_type, tuple(n.input), tuple(n.output)) for n in proto.graph.node]
        return sorted(inits), nodes

    a, b = signature(initial_proto), signature(saved_proto)
    if a[0] != b[0]:
        raise Mismatch(f"checker: {path}: initializer names, types or shapes differ from the input model")
    if a[1] != b[1]:
        raise Mismatch(f"checker: {path}: the graph's nodes differ from the input model")
    print(f"checker: {path} passes onnx.checker (full), same graph and initializers as the input model")


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------


def parse_args(argv):
    p = argparse.ArgumentParser(description="PyTorch reference for dtc's end-to-end tests.")
    p.add_argument("--model", required=True, help="a model name in export_models.MODELS")
    p.add_argument("--onnx", required=True, help="the ONNX file dtc compiled (initial weights)")
    p.add_argument("--data", required=True, help="IDX or npy directory, as the dtc program's --data")
    p.add_argument("--export-script", default=DEFAULT_EXPORT_SCRIPT)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--steps", type=int, required=True)
    # The optimizer, with dtc's flag names and defaults.
    p.add_argument("--optimizer", choices=["sgd", "adam", "adamw"], default="sgd")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--momentum", type=float, default=0.0)
    p.add_argument("--dampening", type=float, default=0.0)
    p.add_argument("--nesterov", action="store_true")
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--betas", default="0.9,0.999")
    p.add_argument("--eps", type=float, default=1e-8)
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                   help="bf16: dtc's --precision=bf16 products (see bf16_products.py)")
    p.add_argument("--freeze", default="", help="regex of weights kept fixed (full match)")
    p.add_argument("--float64", action="store_true",
                   help="train the reference in float64 (an exact reference, independent of the BLAS kernels)")
    # Parameter groups (dtc's flags).
    p.add_argument("--no-decay", default="", help="regex of weights without weight decay (full match)")
    p.add_argument("--lr-scale", action="append", default=[], metavar="REGEX=X",
                   help="lr multiplier of the weights matching REGEX (full match; the first wins)")
    # Gradient clipping and the loss (dtc's flags).
    p.add_argument("--clip-grad-norm", type=float, default=None)
    p.add_argument("--clip-grad-value", type=float, default=None)
    p.add_argument("--label-smoothing", type=float, default=0.0)
    p.add_argument("--class-weights", default="", help="W0,W1,...: cross-entropy class weights")
    # The lr schedule (the train binary's flags, per step).
    p.add_argument("--lr-schedule", default="constant")
    p.add_argument("--lr-warmup", type=int, default=0)
    p.add_argument("--lr-warmup-start", type=float, default=0.0)
    p.add_argument("--lr-step-size", type=int, default=0)
    p.add_argument("--lr-milestones", default="")
    p.add_argument("--lr-gamma", type=float, default=0.1)
    p.add_argument("--lr-min", type=float, default=0.0)
    p.add_argument("--lr-total", type=int, default=0)
    p.add_argument("--lr-pct-start", type=float, default=0.3)
    p.add_argument("--lr-div-factor", type=float, default=25.0)
    p.add_argument("--lr-final-div-factor", type=float, default=1e4)
    # Checks.
    p.add_argument("--losses", metavar="METRICS.jsonl")
    p.add_argument("--check-lr", action="store_true",
                   help="also compare the lr logged in --losses with the scheduler's (1e-12 relative)")
    p.add_argument("--check-grad-norm", action="store_true",
                   help="also compare the grad_norm logged in --losses with clip_grad_norm_'s (loss-rtol)")
    p.add_argument("--loss-rtol", type=float, default=1e-4)
    p.add_argument("--grads", metavar="SAVED.onnx", help="dtc's model after 1 step of SGD with lr=1")
    p.add_argument("--grad-rtol", type=float, default=1e-3)
    p.add_argument("--weights", metavar="SAVED.onnx", help="dtc's model after --steps steps")
    p.add_argument("--weight-rtol", type=float, default=1e-4)
    p.add_argument("--weight-rtol-for", action="append", default=[], metavar="REGEX=TOL",
                   help="another tolerance for the weights whose names match REGEX (repeatable)")
    p.add_argument("--stepwise", metavar="DIR", help="DIR/step-K.onnx: dtc's model after K steps (plain SGD)")
    p.add_argument("--update-rtol", type=float, default=1e-2)
    p.add_argument("--frozen", metavar="SAVED.onnx")
    p.add_argument("--checker", metavar="SAVED.onnx")
    return p.parse_args(argv)


def run(args):
    torch.set_num_threads(1)
    # PyTorch's oneDNN (MKL-DNN) convolution is not used: in torch 1.13 on
    # CPU its float32 weight gradient is off by ~5e-4 of the tensor's largest
    # element from the float64 result (LeNet, first step), 1000x the error of
    # PyTorch's own im2col + GEMM path (~5e-7), which is PyTorch's kernel when
    # oneDNN is off.  The reference should be as exact as float32 allows.
    torch.backends.mkldnn.enabled = False
    torch.manual_seed(0)
    if args.precision == "bf16":
        sys.path.insert(0, HERE)
        from bf16_products import use_bf16_products

        use_bf16_products()
    models = import_export_models(args.export_script)
    spec = models.MODELS[args.model]
    args.dtype = torch.float64 if args.float64 else torch.float32
    module = spec.make_model().to(args.dtype)

    initial_proto = onnx.load(args.onnx)
    initial = onnx_weights(initial_proto)
    load_onnx_weights(module, initial)

    sample_shape = tuple(spec.make_input().shape[1:])
    x, y = load_training_set(args.data, sample_shape)
    if args.stepwise:
        check_stepwise(args, spec, initial, x, y)
        return
    losses, first_grads, first_buffers = train(args, module, x, y)
    print(f"torch: {args.model}, {args.steps} steps of {args.optimizer} lr {args.lr:g}, batch {args.batch_size}, "
          f"losses {losses[0]:.6f} .. {losses[-1]:.6f}")

    if args.losses:
        check_losses(args.losses, losses, args.loss_rtol)
    if args.check_lr:
        # torch's chainable schedulers round differently from dtc's closed
        # forms (~1e-16 per step), and near lr 0 only absolutely.
        check_logged(args.losses, "lr", args.lrs, 1e-12, scale=args.lr)
    if args.check_grad_norm:
        check_logged(args.losses, "grad_norm", args.grad_norms, args.loss_rtol)
    if args.grads:
        saved = onnx_weights(onnx.load(args.grads))
        grad_check(initial, saved, first_grads, args.grad_rtol)
        # The same file holds the batch-norm running statistics after one
        # forward pass in train mode.
        buffers = sorted(n for n in saved if n.endswith(("running_mean", "running_var")))
        if buffers:
            check_weights("running stats", saved, first_buffers, buffers, args.weight_rtol)
    if args.weights:
        saved = onnx_weights(onnx.load(args.weights))
        overrides = [(p, float(t)) for p, t in (o.rsplit("=", 1) for o in args.weight_rtol_for)]
        check_weights("weights", saved, module.state_dict(), sorted(saved), args.weight_rtol, overrides)
    if args.frozen:
        check_frozen(initial, onnx_weights(onnx.load(args.frozen)), args.freeze)
    if args.checker:
        check_saved_model(initial_proto, onnx.load(args.checker), args.checker)


def main(argv=None):
    args = parse_args(argv)
    try:
        run(args)
    except Mismatch as e:
        print(f"MISMATCH: {e}")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
