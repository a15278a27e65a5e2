#!/usr/bin/env python3
"""Exports the GPT-2 models of Megatron-LM's scaling study as shape-only ONNX.

usage: megatron_export.py OUT_DIR [--models=1.2b,8.3b] [--untied] [--trace-all]

Megatron-LM (Shoeybi et al. 2019, arXiv:1909.08053, Table 1) scaled GPT-2
models from 1.2B parameters on one V100 to 8.3B over 8-way tensor
parallelism: hidden size, heads and layers (1536, 16, 40), (1920, 20, 54),
(2304, 24, 64), (3072, 32, 72); vocabulary 51,200, sequence 1,024. The
8.3B model's fp32 weights are 33 GB, more than this machine's memory, and
the simulator needs only their shapes. So the model is the zoo's nanoGPT
(test/zoo/zoo_models.py: pre-norm blocks, GELU, learned positions, the
output layer tied to the token embedding, as Megatron's GPT-2) built with
its weights on PyTorch's meta device, then given one shared float each
(a stride-0 view), traced by torch.onnx.export with export_params=False;
the exported weight inputs become initializers whose external data names a
file that is not written (weights.bin). `dtc --simulate` reads such a model
without its data; anything that would run it refuses it, naming the file.

Megatron-LM 2021 (Narayanan et al., arXiv:2104.04473, Table 1) trained
GPT models of 1.7B to 1T parameters with sequences of 2,048 tokens; the
configurations named "-2021" are its first five (hidden, heads, layers).
--untied gives the output layer a weight of its own. Tied, a pipeline
keeps the embedding on its first stage, which sends it to the last stage
each step and gets the last stage's part of its gradient back once
(Megatron keeps a copy in both and all-reduces their gradients: the same
two messages).

Tracing runs the forward pass once, at batch 1 and 16 tokens with the
sequence length dynamic; the file then fixes it (1,024 or 2,048). It
traces two blocks and repeats the second block's nodes in the ONNX graph
for the others, each copy reading the one before and its own weights
(repeat_last_block): tracing every block took 23 minutes and 9.2 GB for the
96 of the 310.1B model (the tracer computes each product with a dense
copy of the stride-0 weight), about 40 minutes for 529.6B and more memory
than this machine has for 1T. --trace-all traces every block;
test/simulate/megatron-export.test checks that both give the same step.
"""
import json
import os
import re
import sys
import warnings

import onnx
import torch
from onnx import TensorProto

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "zoo"))
sys.path.insert(0, os.path.join(HERE, "..", "tools", "export"))

from dtc_export import METADATA_KEY  # noqa: E402

# name: (hidden, heads, layers, sequence); "test" and "test-4" are
# test/simulate/megatron-export.test's.
CONFIGS = {"test": (64, 4, 2, 1024), "test-4": (64, 4, 4, 1024), "1.2b": (1536, 16, 40, 1024), "2.5b": (1920, 20, 54, 1024),
           "4.2b": (2304, 24, 64, 1024), "8.3b": (3072, 32, 72, 1024),
           "1.7b-2021": (2304, 24, 24, 2048), "3.6b-2021": (3072, 32, 30, 2048),
           "7.5b-2021": (4096, 32, 36, 2048), "18.4b-2021": (6144, 48, 40, 2048),
           "39.1b-2021": (8192, 64, 48, 2048), "76.1b-2021": (10240, 80, 60, 2048),
           "145.6b-2021": (12288, 96, 80, 2048), "310.1b-2021": (16384, 128, 96, 2048),
           "529.6b-2021": (20480, 128, 105, 2048), "1008b-2021": (25600, 160, 128, 2048)}
VOCAB = 51200
DATA_FILE = "weights.bin"


def on_meta(cls):
    """`cls` whose parameters are created on the meta device (no memory)."""
    class Meta(cls):
        def __init__(self, *args, **kwargs):
            kwargs["device"] = "meta"
            super().__init__(*args, **kwargs)
    Meta.__name__ = cls.__name__
    return Meta


def build(hidden, heads, layers, seq, untied=False):
    nn = torch.nn
    real = {n: getattr(nn, n) for n in ("Linear", "Embedding", "LayerNorm")}
    try:
        for name, cls in real.items():
            setattr(nn, name, on_meta(cls))
        from zoo_models import NanoGPT
        model = NanoGPT(vocab=VOCAB, seq=seq, d=hidden, heads=heads, layers=layers)
    finally:
        for name, cls in real.items():
            setattr(nn, name, cls)
    # Every weight a stride-0 view of one float: the shapes, no storage.
    shared = {}
    for module in model.modules():
        for name, p in list(module._parameters.items()):
            if p is None:
                continue
            if id(p) not in shared:
                shared[id(p)] = torch.nn.Parameter(torch.full((1,), 0.01).expand(p.shape))
            module._parameters[name] = shared[id(p)]
    if untied:
        model.lm_head.weight = torch.nn.Parameter(
            torch.full((1,), 0.01).expand(model.lm_head.weight.shape))
    return model


class ViewsNotCloned:
    """torch.onnx.export's tracer clones every input, the weights included
    (torch.jit's ONNXTracedModule), and the clone of a stride-0 view is dense:
    33 GB for the 8.3B model. Inside this context, cloning a tensor whose
    storage is one element (the weights above) returns the view itself."""

    def __enter__(self):
        self.clone = torch.Tensor.clone
        real = self.clone

        def clone(tensor, *args, **kwargs):
            if tensor.numel() > 1 and tensor.storage().size() == 1:
                return tensor
            return real(tensor, *args, **kwargs)
        torch.Tensor.clone = clone
        return self

    def __exit__(self, *exc):
        torch.Tensor.clone = self.clone


def shape_only(path, names, seq):
    """Turns the exported weight and buffer inputs (all but the tokens) into
    initializers whose external data lives in DATA_FILE (not written), and
    lists the weights `names` as the parameters (dtc_export.py's metadata)."""
    proto = onnx.load(path)
    graph = proto.graph
    weights = [i for i in graph.input if i.name != "tokens"]
    kept = [i for i in graph.input if i.name == "tokens"]
    offset = 0
    for info in weights:
        dims = [d.dim_value for d in info.type.tensor_type.shape.dim]
        tensor = graph.initializer.add()
        tensor.name = info.name
        tensor.data_type = info.type.tensor_type.elem_type
        tensor.dims.extend(dims)
        tensor.data_location = TensorProto.EXTERNAL
        length = onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[tensor.data_type].itemsize
        for d in dims:
            length *= d
        for key, value in (("location", DATA_FILE), ("offset", str(offset)),
                           ("length", str(length))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        offset += length
    del graph.input[:]
    graph.input.extend(kept)
    for value in (graph.input[0], graph.output[0]):
        value.type.tensor_type.shape.dim[1].dim_value = seq  # was "sequence"
    entry = proto.metadata_props.add()
    entry.key, entry.value = METADATA_KEY, json.dumps(names)
    onnx.save(proto, path)
    return offset


def repeat_last_block(path, names, layers):
    """Grows the exported graph at `path`, whose blocks h.0 .. h.{t} were
    traced, to `layers` blocks by copying block h.{t}'s nodes: copy j reads
    copy j-1's output where h.{t} read h.{t-1}'s, weights h.{j}.* (graph
    inputs, as the export left them) where it read h.{t}.*, and everything
    else it read (shape constants of earlier blocks) as h.{t} did; the
    final norm reads the last copy. Returns the parameter names in order."""
    proto = onnx.load(path)
    graph = proto.graph
    traced = 1 + max(int(m.group(1)) for n in graph.node
                     for m in [re.match(r"/model/h\.(\d+)/", n.name)] if m)
    if layers <= traced:
        return names
    last = traced - 1
    prefix = f"/model/h.{last}/"
    consumers = {}
    for i, node in enumerate(graph.node):
        for name in node.input:
            consumers.setdefault(name, set()).add(i)
    members = {i for i, n in enumerate(graph.node) if n.name.startswith(prefix)}
    # Unscoped nodes (the exporter's Unsqueeze axes) that only the block reads.
    for i, node in enumerate(graph.node):
        if not node.name.startswith("/model/") and node.output and all(
                consumers.get(o) and consumers[o] <= members for o in node.output):
            members.add(i)
    produced = {o for i in members for o in graph.node[i].output}
    outputs = [o for o in produced if consumers.get(o, set()) - members
               or o in {v.name for v in graph.output}]
    inputs = {x for i in members for x in graph.node[i].input
              if x and x not in produced}
    weight = re.compile(rf"(^|\.)h\.{last}\.")
    carried = [x for x in inputs if x.startswith(f"/model/h.{last - 1}/Add")]
    if len(outputs) != 1 or len(carried) != 1:
        sys.exit(f"megatron_export.py: block h.{last} of {path} has outputs {outputs} and "
                 f"residual inputs {carried}, not one each")
    block_out, block_in = outputs[0], carried[0]
    inputs_by_name = {v.name: v for v in graph.input}
    copies, new_inputs, new_names = [], [], []
    previous = block_out
    for j in range(traced, layers):
        def renamed(name):
            if name in produced:
                return (name.replace(prefix, f"/model/h.{j}/") if prefix in name
                        else f"{name}.h{j}")
            if name == block_in:
                return previous
            if weight.search(name):
                return weight.sub(lambda m: f"{m.group(1)}h.{j}.", name)
            return name
        for i in sorted(members):
            node = onnx.NodeProto()
            node.CopyFrom(graph.node[i])
            node.name = renamed(node.name) if node.name.startswith(prefix) else f"{node.name}.h{j}"
            node.input[:] = [renamed(x) for x in node.input]
            node.output[:] = [renamed(x) for x in node.output]
            copies.append(node)
        for x in sorted(inputs):
            if weight.search(x):
                info = onnx.ValueInfoProto()
                info.CopyFrom(inputs_by_name[x])
                info.name = renamed(x)
                new_inputs.append(info)
        new_names += [renamed(n) for n in names if weight.search(n)]
        previous = renamed(block_out)
    # The copies go after the block's last node; what read its output reads the last copy.
    end = max(members) + 1
    rest = list(graph.node[end:])
    for node in rest:
        node.input[:] = [previous if x == block_out else x for x in node.input]
    del graph.node[end:]
    graph.node.extend(copies + rest)
    # The parameter list, each block's weights after the block before's; the
    # graph's inputs in the order the tracer writes them: the tokens, the
    # parameters, then the buffers (each block's causal mask).
    at = max(i for i, n in enumerate(names) if weight.search(n)) + 1
    names = names[:at] + new_names + names[at:]
    every = list(graph.input) + new_inputs
    by_name, is_param = {v.name: v for v in every}, set(names)
    order = ([v for v in every if v.name == "tokens"] + [by_name[n] for n in names]
             + [v for v in every if v.name != "tokens" and v.name not in is_param])
    kept = [onnx.ValueInfoProto() for _ in order]
    for copy, value in zip(kept, order):
        copy.CopyFrom(value)
    del graph.input[:]
    graph.input.extend(kept)
    onnx.save(proto, path)
    return names


class WeightsAsInputs(torch.nn.Module):
    """`model` with its weights passed to forward after the tokens, so the
    exporter sees inputs, not parameters: it folds expressions of
    parameters into constants (a weight's transpose), which would
    materialize them."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        # Every attribute name of each weight (a tied one has two).
        self.names, self.attributes = [], []
        index = {}
        for prefix, module in model.named_modules():
            for attr, p in module._parameters.items():
                if p is None:
                    continue
                qualified = f"{prefix}.{attr}" if prefix else attr
                if id(p) not in index:
                    index[id(p)] = len(self.names)
                    self.names.append(qualified)
                self.attributes.append((qualified, index[id(p)]))
        self.weights = [dict(model.named_parameters())[n] for n in self.names]

    def forward(self, tokens, *weights):
        modules = dict(self.model.named_modules())
        saved = []
        for qualified, i in self.attributes:
            prefix, _, attr = qualified.rpartition(".")
            table = modules[prefix]._parameters
            saved.append((table, attr, table[attr]))
            table[attr] = weights[i]
        try:
            return self.model(tokens)
        finally:
            for table, attr, p in saved:
                table[attr] = p


def export(name, out, untied=False, trace_all=False):
    hidden, heads, layers, seq = CONFIGS[name]
    traced = layers if trace_all else min(layers, 2)
    model = build(hidden, heads, traced, seq, untied)
    model.train()
    wrapper = WeightsAsInputs(model)
    names = wrapper.names
    # Traced at 16 tokens with the sequence dynamic (the tracer keeps every
    # activation: at 1,024 tokens the 8.3B model's are 40 GB), then fixed.
    tokens = torch.zeros(1, 16, dtype=torch.long)
    path = os.path.join(out, f"gpt-{name}{'-untied' if untied else ''}.onnx")
    with warnings.catch_warnings(), torch.no_grad(), ViewsNotCloned():
        warnings.simplefilter("ignore")
        torch.onnx.export(wrapper, (tokens, *wrapper.weights), path, export_params=False,
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, input_names=["tokens"] + names,
                          output_names=["logits"],
                          dynamic_axes={"tokens": {0: "batch", 1: "sequence"},
                                        "logits": {0: "batch", 1: "sequence"}},
                          opset_version=17)
    names = repeat_last_block(path, names, layers)
    shape_only(path, names, seq)
    block = sum(p.numel() for p in model.h[-1].parameters())
    count = sum(p.numel() for p in model.parameters()) + (layers - traced) * block
    print(f"{path}: {count / 1e9:.2f}B parameters (hidden {hidden}, {heads} heads, "
          f"{layers} layers), weights not written")
    return path


def main(argv):
    out = argv[1] if len(argv) > 1 else "megatron"
    models = ["1.2b", "8.3b"]
    untied = "--untied" in argv[2:]
    trace_all = "--trace-all" in argv[2:]
    for arg in argv[2:]:
        if arg.startswith("--models="):
            models = arg[len("--models="):].split(",")
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(os.cpu_count() or 1)
    for name in models:
        export(name, out, untied, trace_all)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
