"""Writes npy datasets for the MLP with and without ignored labels, or checks
a program's first loss against the MLP's cross-entropy with ignore_index=-100.

usage: ignored_labels.py write DIR
         DIR/{ignored,bad}/train_{x,y}.npy: 64 random images; every other
         label of `ignored` is -100, `bad` also has a -1
       ignored_labels.py check MODEL.onnx DIR/ignored METRICS.jsonl
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

if sys.argv[1] == "write":
    rng = np.random.default_rng(0)
    x = rng.random((64, 1, 28, 28), dtype=np.float32)
    y = rng.integers(0, 10, 64)
    y[::2] = -100
    for name in ("ignored", "bad"):
        os.makedirs(os.path.join(sys.argv[2], name), exist_ok=True)
        np.save(os.path.join(sys.argv[2], name, "train_x.npy"), x)
        if name == "bad":
            y[1] = -1
        np.save(os.path.join(sys.argv[2], name, "train_y.npy"), y)
    sys.exit(0)

_, _, model_path, data, metrics = sys.argv
w = {t.name: numpy_helper.to_array(t).astype(np.float64)
     for t in onnx.load(model_path).graph.initializer}
x = np.load(os.path.join(data, "train_x.npy")).reshape(64, -1).astype(np.float64)
y = np.load(os.path.join(data, "train_y.npy"))
h = np.maximum(x @ w["fc1.weight"].T + w["fc1.bias"], 0)
logits = h @ w["fc2.weight"].T + w["fc2.bias"]
logp = logits - logits.max(1, keepdims=True)
logp -= np.log(np.exp(logp).sum(1, keepdims=True))
kept = y != -100
expected = -logp[kept, y[kept]].mean()
loss = json.loads(open(metrics).readline())["loss"]
ok = abs(loss - expected) <= 1e-5 * abs(expected)
print(f"{kept.sum()} of {len(y)} labels kept; loss {loss:.6f}, expected {expected:.6f}: "
      f"{'match' if ok else 'MISMATCH'}")
