#!/usr/bin/python3
"""Runs ONNX's backend node tests through dtc's inference path.

For every test in the node-test folder (Debian's libonnx-testdata) whose
model uses only ONNX ops dtc supports, compile the model with
`dtc --mode=infer`, run the program on each test_data_set_*, and compare
every output with the expected one. Each test is classified as

  PASS     every output matches
  REFUSED  dtc exits 1 with a one-line `error:` message (recorded)
  WRONG    the program runs but an output differs (max error recorded)
  CRASH    a signal, a timeout, an unclear compiler error, or a run failure

A test dtc refuses because a graph input is not a compile-time constant (a
shape, axes, a ratio) is run again as `NAME@const`, with those inputs turned
into initializers from the test data; one dtc refuses for its opset (older than
11, with an op defined there otherwise than at 11) is run again as
`NAME@opset11`, upgraded by ONNX's version converter.

Writes a Markdown report (per op: passed/total and a one-line reason for every
case that does not pass) and prints `N passed, N refused, N wrong, N crashed`.
Exits 1 if a WRONG or CRASH test is not listed in expected-failures.txt, or if
a listed test no longer fails the way the list says (so the list stays true).
"""
import argparse
import collections
import concurrent.futures
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# The ONNX ops dtc imports (docs/supported-ops.md; the importer's
# builder table). The last group dtc evaluates only at compile time.
SUPPORTED_OPS = {
    "Gemm", "MatMul", "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Neg", "Exp",
    "Log", "Relu", "Sigmoid", "Tanh", "Erf", "Gelu", "Softmax", "LogSoftmax",
    "Conv", "BatchNormalization", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
    "Flatten", "Reshape", "Transpose", "Concat", "Split", "Slice", "Gather",
    "Squeeze", "Unsqueeze", "ReduceMean", "ReduceSum", "LayerNormalization",
    "Dropout", "Where", "Cast", "Identity", "Expand", "Constant",
    "LeakyRelu", "Elu", "Selu", "Celu", "PRelu", "ThresholdedRelu", "Softplus",
    "Softsign", "HardSigmoid", "HardSwish", "Mish", "Clip", "Abs", "Sign",
    "Floor", "Ceil", "Round", "Reciprocal", "Max", "Min", "Sum", "Mean",
    "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Xor",
    "SoftmaxCrossEntropyLoss", "InstanceNormalization", "Tile", "ReduceSumSquare", "ReduceL2",
    "ReduceL1", "Trilu", "ArgMax", "ArgMin", "GatherElements",
    "ReduceMax", "ReduceMin", "NegativeLogLikelihoodLoss", "CumSum", "ScatterElements", "LRN", "Einsum",
    "ReduceLogSum", "ScatterND", "GatherND",
    "Pad", "Resize", "ConvTranspose",
    "LSTM", "GRU", "RNN",
    "CastLike",
    "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
    "IsNaN", "IsInf", "Shrink", "BitShift",
    "ReduceProd", "ReduceLogSumExp", "GlobalMaxPool", "MeanVarianceNormalization", "Hardmax",
    "TopK", "Det",
    "DepthToSpace", "SpaceToDepth", "EyeLike", "OneHot", "GatherND", "ReverseSequence",
    "MaxUnpool",
    "QuantizeLinear", "DequantizeLinear",
    "Upsample",
    # folded at compile time (shapes are static)
    "Shape", "Size", "Range", "ConstantOfShape", "Mod",
}

# Float tolerance. dtc's kernels compute in float32 with vectorized
# exp/tanh/erf approximations (relative error < 2.5e-7 each) and sum in a
# different order than numpy (GEMM blocking, pooling, normalization
# statistics); the references were computed by numpy, often in float64 and
# then rounded. A relative 1e-4 leaves room for that rounding accumulated over
# the few hundred terms of the tests' reductions, while still catching any
# wrong formula or index; the absolute 1e-5 covers results that cancel to ~0.
# Integer and bool outputs must match exactly.
RTOL = 1e-4
ATOL = 1e-5

# Test names whose op is not a prefix match of the test name.
NAME_ALIASES = {"batchnorm": "BatchNormalization", "logsoftmax": "LogSoftmax",
                "constantpad": "Pad", "edgepad": "Pad", "reflectpad": "Pad", "wrappad": "Pad",
                "simplernn": "RNN"}

# The first default-domain opset dtc supports: older node tests also run
# upgraded to it (NAME@opset11).
MIN_OPSET = 11

COMPILE_TIMEOUT = 120
RUN_TIMEOUT = 60


def test_op(name, ops):
    """The op a node test is about (for grouping the report)."""
    stem = name[len("test_"):].replace("_", "").lower()
    candidates = {op.lower(): op for op in ops | SUPPORTED_OPS}
    candidates.update(NAME_ALIASES)
    best = ""
    for key in candidates:
        if stem.startswith(key) and len(key) > len(best):
            best = key
    if best:
        return candidates[best]
    rest = [op for op in ops if op != "Constant"]
    return sorted(rest)[0] if rest else "Constant"


def graph_ops(graph):
    """(domain, op_type) of every node, subgraphs included."""
    for node in graph.node:
        yield node.domain, node.op_type
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from graph_ops(attr.g)
            for g in attr.graphs:
                yield from graph_ops(g)


def select_tests(data_dir, pattern):
    """The node tests whose models use only supported default-domain ops."""
    selected = []
    for path in sorted(glob.glob(os.path.join(data_dir, "test_*"))):
        name = os.path.basename(path)
        if pattern and not re.search(pattern, name):
            continue
        model_path = os.path.join(path, "model.onnx")
        if not os.path.exists(model_path):
            continue
        try:
            model = onnx.load(model_path)
        except Exception:
            continue
        ops = list(graph_ops(model.graph))
        if not ops:
            continue
        if any(d not in ("", "ai.onnx") or op not in SUPPORTED_OPS for d, op in ops):
            continue
        selected.append((name, path, test_op(name, {op for _, op in ops})))
    return selected


def one_line(text, limit=220):
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def clear_error(stderr):
    """dtc's compiler-style error: one line `FILE: error: MESSAGE` per
    problem (e.g. one per unsupported input), nothing else (no IR dumps)."""
    lines = [l for l in stderr.strip().splitlines() if l.strip()]
    if not lines or any(": error: " not in l for l in lines):
        return None
    message = lines[0].split(": error: ", 1)[1].strip()
    if len(lines) > 1:
        message += " (and %d more such errors)" % (len(lines) - 1)
    return message


def describe_failure(proc, what):
    if proc.returncode < 0:
        return "%s killed by %s" % (what, signal.Signals(-proc.returncode).name)
    tail = (proc.stderr or proc.stdout or "").strip().splitlines()
    last = tail[-1] if tail else "no message"
    return "%s exit %d: %s" % (what, proc.returncode, last)


def compare(expected, actual):
    """None if equal within tolerance, else a one-line description."""
    if expected.dtype != actual.dtype:
        return "dtype %s, expected %s" % (actual.dtype, expected.dtype)
    if expected.shape != actual.shape:
        return "shape %s, expected %s" % (list(actual.shape), list(expected.shape))
    if expected.size == 0:
        return None
    if np.issubdtype(expected.dtype, np.floating):
        e = expected.astype(np.float64)
        a = actual.astype(np.float64)
        ok = np.isclose(a, e, rtol=RTOL, atol=ATOL, equal_nan=True)
        if ok.all():
            return None
        with np.errstate(invalid="ignore"):
            err = np.where(ok, 0.0, np.abs(a - e))
        err = np.nan_to_num(err, nan=np.inf)
        i = np.unravel_index(np.argmax(err), err.shape)
        return "max error %.3g at %s (got %r, expected %r), %d of %d elements differ" % (
            err[i], list(map(int, i)), float(a[i]), float(e[i]), int((~ok).sum()), ok.size)
    diff = expected != actual
    if not diff.any():
        return None
    i = np.unravel_index(np.argmax(diff), diff.shape)
    return "%d of %d elements differ, first at %s (got %r, expected %r)" % (
        int(diff.sum()), diff.size, list(map(int, i)), actual[i].item(), expected[i].item())


def load_tensor(path):
    """The tensor as a numpy array; bfloat16 as its bits (uint16), as the
    node tests of ONNX 1.12 store their bfloat16 data (a UINT16 tensor)."""
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    if t.data_type == onnx.TensorProto.BFLOAT16:
        bits = (np.frombuffer(t.raw_data, np.uint16) if t.raw_data
                else np.array(t.int32_data, np.int64).astype(np.uint16))
        return bits.reshape(tuple(t.dims))
    return numpy_helper.to_array(t)


def bfloat16_inputs(model_path, inputs, folder):
    """The input files, where the model's input is bfloat16 but the file (as
    ONNX 1.12's node tests store it) a UINT16 tensor of its bits, rewritten
    as the BFLOAT16 tensor it stands for."""
    model = onnx.load(model_path)
    init = {t.name for t in model.graph.initializer}
    graph_inputs = [i for i in model.graph.input if i.name not in init]
    fixed = []
    for n, (value_info, path) in enumerate(zip(graph_inputs, inputs)):
        t = onnx.TensorProto()
        with open(path, "rb") as f:
            t.ParseFromString(f.read())
        if (value_info.type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16
                and t.data_type == onnx.TensorProto.UINT16):
            t.data_type = onnx.TensorProto.BFLOAT16
            path = os.path.join(folder, "bfloat16_input_%d.pb" % n)
            with open(path, "wb") as f:
                f.write(t.SerializeToString())
        fixed.append(path)
    return fixed + inputs[len(fixed):]


def numbered(folder, prefix):
    files = glob.glob(os.path.join(folder, prefix + "_*.pb"))
    return sorted(files, key=lambda p: int(re.search(r"_(\d+)\.pb$", p).group(1)))


def run_case(dtc, folder, model_path, datasets):
    """(category, detail) of one model and its [(input files, output files)]."""
    os.makedirs(folder, exist_ok=True)
    program = os.path.join(folder, "run")
    cmd = [dtc, model_path, "--mode=infer", "-o", program]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT,
                              errors="replace")
    except subprocess.TimeoutExpired:
        return "CRASH", "dtc timed out after %d s" % COMPILE_TIMEOUT
    except OSError as e:
        return "CRASH", "cannot run dtc: %s" % e
    if proc.returncode != 0:
        message = clear_error(proc.stderr)
        if proc.returncode == 1 and message:
            return "REFUSED", one_line(message)
        return "CRASH", one_line(describe_failure(proc, "dtc"))
    if not os.path.exists(program):
        return "CRASH", "dtc exited 0 but wrote no program"

    for n, (inputs, outputs) in enumerate(datasets):
        out = os.path.join(folder, "out_%d" % n)
        os.makedirs(out, exist_ok=True)
        inputs = bfloat16_inputs(model_path, inputs, out)
        run = [program] + ["--input=" + p for p in inputs] + ["--output-dir=" + out, "--quiet"]
        try:
            proc = subprocess.run(run, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                                  errors="replace")
        except subprocess.TimeoutExpired:
            return "CRASH", "program timed out after %d s" % RUN_TIMEOUT
        except OSError as e:
            return "CRASH", "cannot run the program: %s" % e
        if proc.returncode != 0:
            return "CRASH", one_line(describe_failure(proc, "program"))
        for k, expected_path in enumerate(outputs):
            got_path = os.path.join(out, "output_%d.pb" % k)
            if not os.path.exists(got_path):
                return "CRASH", "program wrote no output_%d.pb" % k
            problem = compare(load_tensor(expected_path), load_tensor(got_path))
            if problem:
                return "WRONG", one_line("output %d: %s" % (k, problem))
    shutil.rmtree(folder, ignore_errors=True)
    return "PASS", ""


def needs_constants(category, detail):
    return category == "REFUSED" and "compile-time" in detail


def with_constant_inputs(path, folder, constant):
    """The test's model with the graph inputs named in `constant` turned into
    initializers holding test_data_set_0's values, and its data set without
    them. Keeps at least one run-time input (the program needs one)."""
    model = onnx.load(os.path.join(path, "model.onnx"))
    data = os.path.join(path, "test_data_set_0")
    inputs = numbered(data, "input")
    graph_inputs = [i for i in model.graph.input
                    if i.name not in {t.name for t in model.graph.initializer}]
    keep_inputs, keep_files = [], []
    for value_info, file in zip(graph_inputs, inputs):
        if value_info.name in constant:
            t = onnx.TensorProto()
            with open(file, "rb") as f:
                t.ParseFromString(f.read())
            t.name = value_info.name
            model.graph.initializer.append(t)
        else:
            keep_inputs.append(value_info)
            keep_files.append(file)
    if not keep_inputs:
        dummy = helper.make_tensor_value_info("dtc_unused", onnx.TensorProto.FLOAT, [1])
        keep_inputs.append(dummy)
        dummy_file = os.path.join(folder, "dtc_unused.pb")
        with open(dummy_file, "wb") as f:
            f.write(numpy_helper.from_array(np.zeros([1], np.float32)).SerializeToString())
        keep_files.append(dummy_file)
    del model.graph.input[:]
    model.graph.input.extend(keep_inputs)
    # The test's values are constants, not weights: an empty parameter list
    # (tools/export/dtc_export.py's metadata) keeps every initializer fixed
    # and known at compile time.
    if not any(p.key == "dtc.parameters" for p in model.metadata_props):
        entry = model.metadata_props.add()
        entry.key, entry.value = "dtc.parameters", "[]"
    model_path = os.path.join(folder, "model.onnx")
    onnx.save(model, model_path)
    return model_path, [(keep_files, numbered(data, "output"))]


def old_opset(category, detail):
    """True when dtc refused the model only for its opset, below the first
    one it supports."""
    match = re.search(r"ONNX opset (\d+) is not supported", detail)
    return category == "REFUSED" and match and int(match.group(1)) < MIN_OPSET


def upgraded(path, folder):
    """The test's model converted to MIN_OPSET by ONNX's version converter
    (the ops these tests are about are unchanged up to it), or an error."""
    from onnx import version_converter

    try:
        model = version_converter.convert_version(onnx.load(os.path.join(path, "model.onnx")),
                                                  MIN_OPSET)
        onnx.checker.check_model(model)
    except Exception as e:  # the converter raises several exception types
        return None, one_line("ONNX's version converter cannot upgrade it: %s" % e)
    os.makedirs(folder, exist_ok=True)
    model_path = os.path.join(folder, "model.onnx")
    onnx.save(model, model_path)
    return model_path, ""


def run_test(dtc, name, path, work):
    """[(test name, category, detail)] of one node test: the test itself and,
    when dtc refuses it because an input is not a compile-time constant (a
    shape, axes, a ratio given as a graph input), its `@const` variant with
    those inputs turned into initializers, as PyTorch exports them; when dtc
    refuses it for an opset older than it supports, its `@opset11` variant
    upgraded by ONNX's version converter."""
    datasets = [(numbered(d, "input"), numbered(d, "output"))
                for d in sorted(glob.glob(os.path.join(path, "test_data_set_*")))]
    folder = os.path.join(work, name)
    category, detail = run_case(dtc, folder, os.path.join(path, "model.onnx"), datasets)
    results = [(name, category, detail)]
    if old_opset(category, detail):
        variant = "%s@opset%d" % (name, MIN_OPSET)
        model_path, error = upgraded(path, os.path.join(work, variant))
        if model_path:
            results.append((variant,) + run_case(dtc, os.path.join(work, variant), model_path,
                                                 datasets))
        else:
            results.append((variant, "REFUSED", error))
        return results
    if not needs_constants(category, detail):
        return results
    model = onnx.load(os.path.join(path, "model.onnx"))
    init = {t.name for t in model.graph.initializer}
    all_inputs = [i.name for i in model.graph.input if i.name not in init]
    constant = []
    variant = os.path.join(work, name + "@const")
    while needs_constants(category, detail):
        named = re.search(r"input '([^']+)'", detail)
        if named and named.group(1) in all_inputs and named.group(1) not in constant:
            constant.append(named.group(1))
        elif "only at compile time" in detail and len(constant) < len(all_inputs):
            constant = list(all_inputs)  # evaluated on the host: all inputs constant
        else:
            break
        os.makedirs(variant, exist_ok=True)
        model_path, sets = with_constant_inputs(path, variant, constant)
        category, detail = run_case(dtc, variant, model_path, sets)
    detail = "constant %s; %s" % (", ".join(constant), detail) if detail else \
        "constant %s" % ", ".join(constant)
    results.append((name + "@const", category, detail))
    return results


def read_expected(path):
    """name -> (category, reason) from expected-failures.txt."""
    expected = {}
    if not os.path.exists(path):
        return expected
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 2)
            if len(parts) < 3 or parts[1] not in ("WRONG", "CRASH"):
                sys.exit("%s:%d: expected `NAME WRONG|CRASH REASON`" % (path, lineno))
            expected[parts[0]] = (parts[1], parts[2])
    return expected


def write_report(path, results, counts, data_dir):
    by_op = collections.defaultdict(list)
    for name, op, category, detail in results:
        by_op[op].append((name, category, detail))
    lines = [
        "# ONNX backend node tests",
        "",
        "Generated by `test/onnx-node/run_node_tests.py` (do not edit by hand).",
        "",
        "Every node test of `%s` whose model uses only ONNX ops dtc supports is "
        "compiled with `dtc --mode=infer`, run, and compared with the expected "
        "outputs (float: rtol %g, atol %g; integers and bools exactly)." % (data_dir, RTOL, ATOL),
        "",
        "**%d passed, %d refused, %d wrong, %d crashed** (of %d tests)." % (
            counts["PASS"], counts["REFUSED"], counts["WRONG"], counts["CRASH"],
            len(results)),
        "",
        "REFUSED: dtc stops with a one-line error (an attribute, dtype or input it does "
        "not support). WRONG: runs but numbers differ. CRASH: anything else. "
        "Known WRONG and CRASH cases are listed, with their reason, in "
        "`test/onnx-node/expected-failures.txt`.",
        "",
        "Many node tests pass shapes, axes or ratios as graph inputs, which dtc refuses "
        "because it compiles for static shapes. For each such test, `NAME@const` is the "
        "same test with those inputs turned into initializers holding the test's values "
        "(as PyTorch exports them); it counts as a test of its own. Likewise a test "
        "dtc refuses for its opset (older than %d, with an op defined there otherwise "
        "than at %d) runs again as `NAME@opset%d`, upgraded by ONNX's version "
        "converter." % (MIN_OPSET, MIN_OPSET, MIN_OPSET),
        "",
        "| op | passed | total | not passing |",
        "|---|---|---|---|",
    ]
    for op in sorted(by_op):
        cases = by_op[op]
        passed = sum(1 for _, c, _ in cases if c == "PASS")
        lines.append("| %s | %d | %d | %d |" % (op, passed, len(cases), len(cases) - passed))
    lines.append("")
    lines.append("## Cases that do not pass")
    for op in sorted(by_op):
        failing = [c for c in by_op[op] if c[1] != "PASS"]
        if not failing:
            continue
        lines.append("")
        lines.append("### %s" % op)
        lines.append("")
        for name, category, detail in failing:
            lines.append("* `%s` %s: %s" % (name, category, detail.replace("|", "\\|")))
    lines.append("")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtc", default=shutil.which("dtc") or
                        os.path.join(ROOT, "build", "bin", "dtc"))
    parser.add_argument("--data", default="/usr/share/libonnx-testdata/data/node")
    parser.add_argument("--report", default=os.path.join(ROOT, "docs", "onnx-node-tests.md"),
                        help="the Markdown report to write ('' for none)")
    parser.add_argument("--expected", default=os.path.join(HERE, "expected-failures.txt"))
    parser.add_argument("--filter", default="", help="regex on test names")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("-v", "--verbose", action="store_true", help="print every result")
    args = parser.parse_args()

    if not os.path.isdir(args.data):
        sys.exit("no node tests at %s (apt-get install libonnx-testdata)" % args.data)
    tests = select_tests(args.data, args.filter)
    expected = read_expected(args.expected)
    start = time.time()
    work = tempfile.mkdtemp(prefix="dtc-node-tests-")
    results = []
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futures = {pool.submit(run_test, args.dtc, name, path, work): (name, op)
                       for name, path, op in tests}
            for future in concurrent.futures.as_completed(futures):
                op = futures[future][1]
                for name, category, detail in future.result():
                    results.append((name, op, category, detail))
                    if args.verbose:
                        print("%-8s %s %s" % (category, name, detail), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results.sort()

    counts = collections.Counter(category for _, _, category, _ in results)
    if args.report:
        write_report(args.report, results, counts, args.data)

    problems = []
    seen = {name: (category, detail) for name, _, category, detail in results}
    for name, (category, detail) in sorted(seen.items()):
        if category in ("WRONG", "CRASH"):
            if name not in expected:
                problems.append("unexpected %s: %s: %s" % (category, name, detail))
            elif expected[name][0] != category:
                problems.append("%s is %s, but expected-failures.txt says %s: %s" % (
                    name, category, expected[name][0], detail))
    for name, (category, _) in sorted(expected.items()):
        if args.filter and not re.search(args.filter, name):
            continue
        if name not in seen:
            problems.append("%s is listed in expected-failures.txt but not run" % name)
        elif seen[name][0] not in ("WRONG", "CRASH"):
            problems.append("%s now %s: remove it from expected-failures.txt" % (
                name, "passes" if seen[name][0] == "PASS" else "is " + seen[name][0]))
    for p in problems:
        print(p)
    print("%d passed, %d refused, %d wrong, %d crashed (%d tests, %.0f s)" % (
        counts["PASS"], counts["REFUSED"], counts["WRONG"], counts["CRASH"], len(results),
        time.time() - start))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
