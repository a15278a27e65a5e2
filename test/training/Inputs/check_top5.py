#!/usr/bin/env python3
"""Recomputes a run's last evaluation (accuracy and top-5) with PyTorch.

  check_top5.py --model=mlp --onnx=SAVED.onnx --data=DIR --metrics=M.jsonl
                [--batch-size=64] [--ranks=1]

Loads SAVED.onnx's weights into the model of examples/models/export_models.py
(torch_reference.py's loader), evaluates the IDX test set the way a dtc
program of --ranks data-parallel ranks does (rank r: samples r, r + ranks, ...
padded like DistributedSampler, full batches only), and compares the
fraction of rows whose label is the argmax (first maximum) and among the 5
largest logits with the last eval_accuracy and eval_top5 of M.jsonl:
within 2 samples (float rounding may flip a near tie). Exits 1 otherwise.
"""
import argparse
import json
import os
import sys

import numpy as np
import onnx
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "e2e", "Inputs"))
import torch_reference as ref  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--onnx", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--metrics", required=True)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--ranks", type=int, default=1)
    args = p.parse_args()

    spec = ref.import_export_models(ref.DEFAULT_EXPORT_SCRIPT).MODELS[args.model]
    module = spec.make_model()
    ref.load_onnx_weights(module, ref.onnx_weights(onnx.load(args.onnx)))
    module.eval()
    shape = tuple(spec.make_input().shape[1:])
    images = ref.read_idx(ref.find(args.data, "t10k-images-idx3-ubyte"))
    labels = ref.read_idx(ref.find(args.data, "t10k-labels-idx1-ubyte")).astype(np.int64)
    x = (images.astype(np.float32) / np.float32(255.0)).reshape(len(images), *shape)

    n, w, b = len(x), args.ranks, args.batch_size
    per_rank = (n + w - 1) // w
    order = list(range(n)) + [i % n for i in range(per_rank * w - n)]
    rows = []
    for r in range(w):
        mine = order[r::w]
        rows += mine[: len(mine) // b * b]
    with torch.no_grad():
        logits = module(torch.from_numpy(x[rows])).numpy()
    y = labels[rows]
    top1 = float(np.mean(np.argmax(logits, axis=1) == y))
    # The label's rank: larger logits, then equal ones of lower index.
    label_logit = logits[np.arange(len(y)), y][:, None]
    index = np.arange(logits.shape[1])[None, :]
    ahead = np.sum((logits > label_logit) | ((logits == label_logit) & (index < y[:, None])), axis=1)
    top5 = float(np.mean(ahead < 5))

    with open(args.metrics) as f:
        last = [json.loads(line) for line in f if "eval_loss" in line][-1]
    tol = 2.0 / len(rows) + 1e-9
    print(f"torch: {len(rows)} samples, accuracy {top1:.6f} top-5 {top5:.6f}; "
          f"dtc: accuracy {last['eval_accuracy']:.6f} top-5 {last['eval_top5']:.6f}")
    if not top5 >= top1:
        sys.exit("top-5 below accuracy in the reference")
    if abs(last["eval_accuracy"] - top1) > tol or abs(last["eval_top5"] - top5) > tol:
        sys.exit(f"differ by more than {tol:.2e}")
    print("top-5 ok")


if __name__ == "__main__":
    main()
