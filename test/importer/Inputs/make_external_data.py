"""Writes a model whose initializer `w` lives in an external data file.

usage: make_external_data.py OUT_DIR [--drop | --truncate | --location=LOC]
  --drop          delete the data file afterwards (the model points at nothing)
  --truncate      cut the data file short
  --location=LOC  the model names LOC as the data file (weights.bin is still
                  written; tests plant what LOC points at)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
w = numpy_helper.from_array(np.arange(16, dtype=np.float32).reshape(4, 4), "w")
w.ClearField("raw_data")
w.data_location = TensorProto.EXTERNAL
for key, value in (("location", "weights.bin"), ("offset", "0"), ("length", "64")):
    entry = w.external_data.add()
    entry.key, entry.value = key, value
data = np.arange(16, dtype=np.float32).tobytes()
mode = sys.argv[2] if len(sys.argv) > 2 else ""
if mode.startswith("--location="):
    w.external_data[0].value = mode[len("--location="):]
path = os.path.join(out, "weights.bin")
with open(path, "wb") as f:
    f.write(data[:20] if mode == "--truncate" else data)
if mode == "--drop":
    os.remove(path)
graph = helper.make_graph(
    [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "external",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])], [w])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
with open(os.path.join(out, "model.onnx"), "wb") as f:
    f.write(model.SerializeToString())
