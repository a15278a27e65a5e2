"""Checks that two ONNX files are self-contained (no external data), pass the
ONNX checker and hold bit-identical initializers.

usage: same_weights.py A.onnx B.onnx
"""
import sys

import numpy as np
import onnx
from onnx import numpy_helper

models = [onnx.load(path, load_external_data=False) for path in sys.argv[1:3]]
for path, model in zip(sys.argv[1:3], models):
    onnx.checker.check_model(model, full_check=True)
    for t in model.graph.initializer:
        assert t.data_location != onnx.TensorProto.EXTERNAL, f"{path}: {t.name} is external"
a = {t.name: numpy_helper.to_array(t) for t in models[0].graph.initializer}
b = {t.name: numpy_helper.to_array(t) for t in models[1].graph.initializer}
assert a.keys() == b.keys(), (sorted(a), sorted(b))
for name in a:
    assert a[name].dtype == b[name].dtype and np.array_equal(a[name], b[name]), name
print(f"{len(a)} initializers, self-contained, identical")
