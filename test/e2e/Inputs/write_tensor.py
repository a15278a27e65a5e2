#!/usr/bin/python3
"""Writes one ONNX TensorProto file: write_tensor.py PATH DTYPE V1,V2,... [SHAPE]
(a 1-D tensor of numpy dtype DTYPE, or one of SHAPE, e.g. 3x2x3, filled with
the values or with the one value given), for tests that run inference
programs."""
import sys

import numpy as np
from onnx import numpy_helper

path, dtype, values = sys.argv[1:4]
array = np.array([float(v) for v in values.split(",")]).astype(dtype)
if len(sys.argv) > 4:
    shape = [int(d) for d in sys.argv[4].split("x")]
    array = np.broadcast_to(array, shape).copy() if array.size == 1 else array.reshape(shape)
with open(path, "wb") as f:
    f.write(numpy_helper.from_array(array).SerializeToString())
