"""Writes a copy of an ONNX model whose initializers are all external data.

usage: external_copy.py IN.onnx OUT_DIR
Writes OUT_DIR/model.onnx and its data file OUT_DIR/model.data.
"""
import os
import sys

import onnx

model = onnx.load(sys.argv[1])
os.makedirs(sys.argv[2], exist_ok=True)
onnx.save_model(model, os.path.join(sys.argv[2], "model.onnx"), save_as_external_data=True,
                all_tensors_to_one_file=True, location="model.data", size_threshold=0)
external = sum(t.data_location == onnx.TensorProto.EXTERNAL
               for t in onnx.load(os.path.join(sys.argv[2], "model.onnx"),
                                  load_external_data=False).graph.initializer)
print(f"{external} external initializers")
