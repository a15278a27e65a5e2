"""Writes an ONNX model of two bias-free Gemms, y = (x w1^T) w2^T, each
weight 512x512 floats (exactly 1 MiB): under ddp each gradient is a bucket
of its own (the first bucket closes at 1 MiB). Usage: two_gemms.py OUT.onnx"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

w1 = numpy_helper.from_array(np.full((512, 512), 0.01, np.float32), "w1")
w2 = numpy_helper.from_array(np.full((512, 512), 0.01, np.float32), "w2")
graph = helper.make_graph(
    [helper.make_node("Gemm", ["x", "w1"], ["h"], transB=1),
     helper.make_node("Gemm", ["h", "w2"], ["y"], transB=1)],
    "two_gemms",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 512])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 512])],
    [w1, w2])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.save(model, sys.argv[1])
