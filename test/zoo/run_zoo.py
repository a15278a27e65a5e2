#!/usr/bin/python3
"""Run the model zoo (zoo_models.py) through dtc and compare with PyTorch.

For each model: export it as a user would (training mode, dynamic batch,
parameters named in the metadata by tools/export/dtc_export.py), compile it
with `dtc --batch-size=8 --optimizer=sgd --lr=1`, run one step (the saved
model minus the initial one is dtc's first gradient) and three more steps
at lr 0.01 (the losses must stay finite), and compare with PyTorch on the
same weights and batch:

  loss     dtc's step-1 loss against PyTorch float32, relative (<= 1e-4);
  grads    max over tensors of max|g - g64| / max|g64| (see grad_error),
           g64 the float64 PyTorch gradient: dtc's error must be at most
           max(1e-3, 4 x PyTorch float32's own error). Comparing with
           float64, not with PyTorch float32, keeps the check independent
           of the machine's BLAS kernels; allowing a multiple of PyTorch
           float32's error covers models where float32 itself is unstable
           (a ReLU input or a max-pool tie within rounding of its kink);
  ort      where onnxruntime is installed (scripts/zoo.sh installs it): its
           forward output on the same batch against PyTorch float64,
           relative to the output's largest value, and dtc's step-1 loss
           against the loss of onnxruntime's output (relative): a second,
           independent reference. Reported, not checked.

Usage:
  run_zoo.py [--models a,b | --fast] [--out DIR] [--table docs/zoo.md] [--keep-going]
Exits 1 if any model that should pass does not (all models pass or are
listed in KNOWN_REFUSALS with the one-line error dtc gives).
"""

import argparse
import json
import os
import subprocess
import sys
import time
import warnings

import numpy as np
import onnx
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "test", "e2e", "Inputs"))
sys.path.insert(0, os.path.join(ROOT, "tools", "export"))
sys.path.insert(0, os.path.join(ROOT, "examples", "models"))

import zoo_models  # noqa: E402
from dtc_export import mark_parameters, trainable_names  # noqa: E402
from export_models import fix_output_shape  # noqa: E402
from torch_reference import grad_check, onnx_weights, Mismatch  # noqa: E402

BATCH = 8
SAMPLES = 4 * BATCH  # step 1, then 3 more steps
CLASSES = 10
LOSS_RTOL = 1e-4
GRAD_FLOOR = 1e-3  # the e2e tests' gradient tolerance
GRAD_FACTOR = 4.0  # times PyTorch float32's own error against float64


class ZooError(Exception):
    """A stage failed; the message is one line."""


def dtc_binary(args):
    return args.dtc or os.path.join(ROOT, "build", "bin", "dtc")


# --------------------------------------------------------------------------
# Export and data
# --------------------------------------------------------------------------


def export(name, spec, path):
    torch.manual_seed(0)
    model = spec.make_model()
    model.train()
    example = spec.make_input()
    if spec.task == "inside":  # (inputs, labels) -> loss
        args = (example, torch.randint(0, CLASSES, (example.shape[0],)))
        names, outputs = [spec.input_name, "labels"], ["loss"]
        dynamic = {spec.input_name: {0: "batch"}, "labels": {0: "batch"}}
    else:
        args, names, outputs = example, [spec.input_name], ["logits"]
        dynamic = {spec.input_name: {0: "batch"}, "logits": {0: "batch"}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, path, training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, input_names=names, output_names=outputs,
                          dynamic_axes=dynamic, opset_version=spec.opset or 14)
    proto = onnx.load(path)
    if spec.task != "inside" and fix_output_shape(proto, model, example):
        onnx.save(proto, path)
    mark_parameters(path, trainable_names(model))
    return model


def make_data(spec, model, directory):
    """npy training set: inputs like the example, labels for the task."""
    rng = np.random.default_rng(0)
    example = spec.make_input()
    shape = tuple(example.shape[1:])
    if example.dtype == torch.int64:
        vocab = int(model.state_dict()[next(k for k in model.state_dict() if "embed" in k
                                            or k.startswith(("wte", "tok")))].shape[0])
        x = rng.integers(0, vocab, size=(SAMPLES, *shape), dtype=np.int64)
    else:
        x = rng.standard_normal((SAMPLES, *shape), dtype=np.float32)
    if spec.task == "tokens":
        y = np.roll(x, -1, axis=1)  # the next token (wrapping)
    elif spec.task == "mse":
        y = x.copy()
    else:
        y = rng.integers(0, CLASSES, size=SAMPLES, dtype=np.int64)
    os.makedirs(directory, exist_ok=True)
    np.save(os.path.join(directory, "train_x.npy"), x)
    np.save(os.path.join(directory, "train_y.npy"), y)
    return x, y


# --------------------------------------------------------------------------
# dtc
# --------------------------------------------------------------------------


def run(cmd, what, timeout):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ZooError(f"{what}: timed out after {timeout} s")
    if p.returncode != 0:
        lines = [l for l in (p.stderr + p.stdout).splitlines() if "error" in l] or \
            (p.stderr + p.stdout).splitlines() or ["(no output)"]
        raise ZooError(f"{what}: {lines[0].strip()[:400]}")
    return p


def dtc_side(args, spec, onnx_path, data, work):
    program = os.path.join(work, "train")
    cmd = [dtc_binary(args), onnx_path, "-o", program, f"--batch-size={BATCH}",
           "--optimizer=sgd", "--lr=1"]
    if spec.task == "mse":
        cmd.append("--loss=mse")
    start = time.time()
    run(cmd, "dtc", 900)
    compile_s = time.time() - start
    common = [program, f"--data={data}", "--shuffle=false", "--log-every=1", "--quiet",
              "--threads=1"]
    run(common + ["--max-steps=1", f"--metrics={work}/step1.jsonl", f"--save={work}/step1.onnx"],
        "step 1", 600)
    run(common + ["--max-steps=4", "--lr=0.01", f"--metrics={work}/steps.jsonl"], "4 steps", 600)
    losses = [json.loads(l)["loss"] for l in open(f"{work}/steps.jsonl") if '"loss"' in l]
    if len(losses) < 4 or not all(np.isfinite(losses)):
        raise ZooError(f"4 steps: losses {losses}")
    step1 = json.loads(next(l for l in open(f"{work}/step1.jsonl") if '"loss"' in l))["loss"]
    return compile_s, step1, losses


# --------------------------------------------------------------------------
# PyTorch (and onnxruntime)
# --------------------------------------------------------------------------


def load_weights(module, weights):
    """The ONNX initializers into `module`; a tied weight is one initializer."""
    state = module.state_dict()
    new_state = module.state_dict()  # keeps _metadata (MNASNet checks its version)
    for name, value in state.items():
        if name in weights:
            new_state[name] = torch.from_numpy(weights[name].copy()).to(value.dtype)
        elif name.endswith("num_batches_tracked"):
            new_state[name] = value
        else:
            # A tied parameter (nanoGPT's lm_head.weight is wte.weight) is
            # exported once, under the name of the first module that owns it.
            first_name = {id(p): n for n, p in reversed(list(module.named_parameters()))}
            owner = first_name.get(id(module.get_parameter(name)))
            if owner is None or owner not in weights:
                raise ZooError(f"reference: no initializer for {name}")
            new_state[name] = torch.from_numpy(weights[owner].copy()).to(value.dtype)
    unknown = sorted(set(weights) - set(state))
    if unknown:
        raise ZooError(f"reference: initializers {unknown[:3]} are not in the state_dict")
    module.load_state_dict(new_state, strict=True)


def loss_of(spec, out, y):
    if spec.task == "mse":
        return F.mse_loss(out, y)
    if out.dim() == 3:
        return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
    return F.cross_entropy(out, y)


def torch_step(spec, weights, x, y, dtype):
    torch.manual_seed(0)
    module = spec.make_model().to(dtype)
    load_weights(module, weights)
    module.train()
    xb = torch.from_numpy(x[:BATCH])
    xb = xb.to(dtype) if xb.is_floating_point() else xb
    yb = torch.from_numpy(y[:BATCH])
    yb = yb.to(dtype) if yb.is_floating_point() else yb
    if spec.task == "inside":
        out = loss = module(xb, yb)
    else:
        out = module(xb)
        loss = loss_of(spec, out, yb)
    loss.backward()
    grads = {n: p.grad.detach().to(torch.float64).clone()
             for n, p in module.named_parameters() if p.grad is not None}
    return loss.item(), grads, out.detach().to(torch.float64)


def grad_error(grads, ref):
    """max over tensors of max|g - ref| / scale. The scale is the tensor's
    largest reference gradient, but at least a thousandth of the model's
    largest: a tensor whose exact gradient is zero (a bias before a
    normalization) holds only rounding noise, relative to nothing."""
    floor = 1e-3 * max(float(g.abs().max()) for g in ref.values())
    worst = 0.0
    for name, g in ref.items():
        scale = max(float(g.abs().max()), floor)
        if scale > 0:
            worst = max(worst, float((grads[name] - g).abs().max()) / scale)
    return worst


def dtc_grads(initial, saved, names):
    return {n: torch.from_numpy(initial[n].astype(np.float64) - saved[n].astype(np.float64))
            for n in names}


def ort_check(onnx_path, spec, x, y, ref_out, dtc_loss):
    """onnxruntime's forward output against PyTorch float64, and dtc's
    step-1 loss against the loss of onnxruntime's output."""
    try:
        import onnxruntime as ort
    except ImportError:
        return "not installed"
    try:
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        session = ort.InferenceSession(onnx_path, options, providers=["CPUExecutionProvider"])
        feeds = {spec.input_name: x[:BATCH]}
        if spec.task == "inside":
            feeds["labels"] = y[:BATCH]
        out = session.run(None, feeds)[0]
    except Exception as e:  # onnxruntime refuses some training-mode graphs
        return "refused: " + str(e).splitlines()[0][:80]
    ref = ref_out.numpy()
    # (ViT's head starts at zero: its outputs are all 0, compared absolutely.)
    forward = float(np.abs(out - ref).max()) / max(float(np.abs(ref).max()), 1e-30)
    if spec.task == "inside":
        ort_loss = float(out)
    else:
        ort_loss = loss_of(spec, torch.from_numpy(out).double(), torch.from_numpy(y[:BATCH])).item()
    return "%.1e, loss %.1e" % (forward, abs(dtc_loss - ort_loss) / max(abs(ort_loss), 1e-30))


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------


def check_model(args, name):
    spec = zoo_models.MODELS[name]
    work = os.path.join(args.out, name)
    os.makedirs(work, exist_ok=True)
    row = {"model": name, "family": spec.family, "status": "FAIL"}
    try:
        onnx_path = os.path.join(work, name + ".onnx")
        model = export(name, spec, onnx_path)
        row["params"] = sum(p.numel() for p in model.parameters())
        x, y = make_data(spec, model, os.path.join(work, "data"))
        row["compile_s"], dtc_loss, _ = dtc_side(args, spec, onnx_path, os.path.join(work, "data"),
                                                 work)
        initial = onnx_weights(onnx.load(onnx_path))
        saved = onnx_weights(onnx.load(os.path.join(work, "step1.onnx")))
        torch.backends.mkldnn.enabled = False  # see torch_reference.py
        torch.set_num_threads(1)
        loss32, grads32, _ = torch_step(spec, initial, x, y, torch.float32)
        _, grads64, out64 = torch_step(spec, initial, x, y, torch.float64)
        row["loss_rel"] = abs(dtc_loss - loss32) / abs(loss32)
        ours = dtc_grads(initial, saved, grads64.keys())
        row["grad_err"] = grad_error(ours, grads64)
        row["torch_err"] = grad_error(grads32, grads64)
        row["ort"] = ort_check(onnx_path, spec, x, y, out64, dtc_loss)
        allowed = max(GRAD_FLOOR, GRAD_FACTOR * row["torch_err"])
        if row["loss_rel"] > LOSS_RTOL:
            raise ZooError(f"step-1 loss: dtc {dtc_loss:.7g} vs torch {loss32:.7g}")
        if not row["grad_err"] <= allowed:
            raise ZooError(f"gradients: error {row['grad_err']:.2e} against float64 > {allowed:.2e}")
        row["status"] = "pass"
    except (ZooError, Mismatch) as e:
        row["error"] = str(e)
    except Exception as e:  # an exporter or reference failure: still one line
        row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
    return row


def fmt(row, key, spec="%.1e"):
    return spec % row[key] if key in row else ""


def write_table(rows, path, command):
    passed = sum(r["status"] == "pass" for r in rows)
    lines = [
        "# The model zoo",
        "",
        "Generated by `%s` (test/zoo/run_zoo.py; the models are in test/zoo/zoo_models.py)." % command,
        "Each model is exported from PyTorch 1.13 / torchvision 0.14 in training mode, compiled with",
        "`dtc --batch-size=8`, trained 1 step (SGD, lr 1) and 3 more (lr 0.01), and compared with",
        "PyTorch on the same weights and batch: **loss** is the step-1 loss against PyTorch float32",
        "(relative, must be <= 1e-4); **grad** is dtc's first-step gradient error against a float64",
        "PyTorch reference (max over tensors of max|g - g64| / max|g64|) and **torch f32** the same",
        "for PyTorch's own float32 gradient (dtc must be within max(1e-3, 4 x torch f32));",
        "**ort** is onnxruntime's forward output against PyTorch float64, and dtc's step-1 loss",
        "against the loss of onnxruntime's output. **compile s** is dtc's wall time (import,",
        "passes, C++ compile) as measured during the run, on a shared machine.",
        "",
        "%d of %d models pass." % (passed, len(rows)),
        "",
        "| model | family | params | compile s | loss | grad | torch f32 | ort | result |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        result = "pass" if r["status"] == "pass" else "**%s**" % r.get("error", "fail").replace("|", "\\|")
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["model"], r["family"], "{:,}".format(r["params"]) if "params" in r else "",
            fmt(r, "compile_s", "%.0f"), fmt(r, "loss_rel"), fmt(r, "grad_err"),
            fmt(r, "torch_err"), r.get("ort", ""), result))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", help="comma-separated names (default: all)")
    p.add_argument("--fast", action="store_true", help="the CI subset")
    p.add_argument("--out", default="/tmp/dtc-zoo")
    p.add_argument("--dtc", help="the dtc binary (default: build/bin/dtc)")
    p.add_argument("--table", help="write a markdown table here")
    p.add_argument("--command", help="the command named in the table (default: this one)")
    p.add_argument("--expect-fail", default="",
                   help="comma-separated models that are known not to pass yet")
    args = p.parse_args(argv)
    if args.models:
        names = args.models.split(",")
        unknown = [n for n in names if n not in zoo_models.MODELS]
        if unknown:
            p.error("unknown models: " + ", ".join(unknown))
    elif args.fast:
        names = [n for n, s in zoo_models.MODELS.items() if s.fast]
    else:
        names = list(zoo_models.MODELS)
    expect_fail = set(filter(None, args.expect_fail.split(",")))
    rows, unexpected = [], []
    for name in names:
        row = check_model(args, name)
        rows.append(row)
        print("%-20s %-4s loss %s grad %s (torch f32 %s) ort %s compile %ss%s" % (
            name, row["status"], fmt(row, "loss_rel"), fmt(row, "grad_err"), fmt(row, "torch_err"),
            row.get("ort", "-"), fmt(row, "compile_s", "%.0f"),
            ("  " + row["error"]) if "error" in row else ""), flush=True)
        if (row["status"] == "pass") == (name in expect_fail):
            unexpected.append(name)
    if args.table:
        write_table(rows, args.table,
                    (args.command or "test/zoo/run_zoo.py " + " ".join(argv or sys.argv[1:])).strip())
    passed = sum(r["status"] == "pass" for r in rows)
    print("zoo: %d of %d pass" % (passed, len(rows)))
    if unexpected:
        print("zoo: unexpected results: " + ", ".join(unexpected))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
