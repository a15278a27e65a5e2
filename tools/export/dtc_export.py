#!/usr/bin/python3
"""Export a PyTorch model to ONNX for dtc, marking which tensors are parameters.

ONNX does not tell parameters from buffers: ``torch.onnx.export`` writes a
registered buffer (a positional encoding, a causal mask) as an initializer
exactly like a weight. dtc trains what the model's metadata entry
``dtc.parameters`` lists -- the names of ``model.named_parameters()`` that
require gradients -- and keeps every other initializer constant. This module
writes that entry.

As a library::

    import sys; sys.path.insert(0, "DTC/tools/export")
    from dtc_export import export
    export(model, example_input, "model.onnx", input_names=["input"],
           dynamic_axes={"input": {0: "batch"}})

``export`` calls ``torch.onnx.export`` the way dtc needs it (training mode,
no constant folding, so weights stay initializers under their PyTorch names)
and then ``mark_parameters``. To mark a file exported some other way:

    /usr/bin/python3 dtc_export.py MODEL.onnx --names fc1.weight,fc1.bias,...

Parameters with ``requires_grad=False`` are left out: dtc keeps them fixed
as PyTorch would (``--freeze`` does the same at compile time).
"""

import argparse
import json
import sys

METADATA_KEY = "dtc.parameters"


def mark_parameters(path, names):
    """Write the parameter list `names` into the ONNX file at `path`.

    Raises ValueError naming the parameters the file has no initializer for
    (exported with constant folding on, or renamed by the exporter).
    """
    import onnx

    proto = onnx.load(path)
    initializers = {t.name for t in proto.graph.initializer}
    missing = [n for n in names if n not in initializers]
    if missing:
        raise ValueError(
            f"{path}: no initializer for parameters {missing[:8]}: export with "
            "training=TrainingMode.TRAINING and do_constant_folding=False"
        )
    kept = [p for p in proto.metadata_props if p.key != METADATA_KEY]
    del proto.metadata_props[:]
    proto.metadata_props.extend(kept)
    entry = proto.metadata_props.add()
    entry.key = METADATA_KEY
    entry.value = json.dumps(list(names))
    onnx.save(proto, path)


def trainable_names(model):
    """The names of `model`'s parameters that require gradients (each once)."""
    return [name for name, p in model.named_parameters() if p.requires_grad]


def export(model, args, path, *, opset_version=14, **kwargs):
    """torch.onnx.export for training with dtc, then mark_parameters."""
    import torch

    options = dict(training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                   opset_version=opset_version)
    options.update(kwargs)
    was_training = model.training
    model.train()
    torch.onnx.export(model, args, path, **options)
    model.train(was_training)
    mark_parameters(path, trainable_names(model))


def main(argv=None):
    p = argparse.ArgumentParser(description="Mark the parameters of an exported ONNX model for dtc.")
    p.add_argument("model", help="the ONNX file, rewritten in place")
    p.add_argument("--names", required=True, help="comma-separated parameter names")
    args = p.parse_args(argv)
    try:
        mark_parameters(args.model, [n for n in args.names.split(",") if n])
    except ValueError as e:
        print(f"dtc_export.py: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
