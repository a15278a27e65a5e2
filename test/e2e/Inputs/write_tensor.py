#!/usr/bin/python3
"""Writes one ONNX TensorProto file: write_tensor.py PATH DTYPE V1,V2,...
(a 1-D tensor of numpy dtype DTYPE), for tests that run inference programs."""
import sys

import numpy as np
from onnx import numpy_helper

path, dtype, values = sys.argv[1:4]
array = np.array([float(v) for v in values.split(",")]).astype(dtype)
with open(path, "wb") as f:
    f.write(numpy_helper.from_array(array).SerializeToString())
