"""How long `dtc MODEL -o PROGRAM` takes, with and without the build's
precompiled runtime headers (codegen/ProgramPrelude.h).

For each model, times the whole compile (import, passes, code generation,
the host compiler and the link) --rounds times in each mode and prints the
median of each: "precompiled" is dtc as built (the build's compiler, the
precompiled headers, gold where found); "from source" names the same
compiler through a wrapper script as CXX, which dtc does not take for the
build's compiler, so it parses the headers and links with the default
linker, as every compile did before. Prints a Markdown table.

  python3 bench/compile_time.py [--dtc build/bin/dtc] [--rounds 5] [MODEL.onnx ...]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_MODELS = ["mlp.onnx", "lenet.onnx", "gpt.onnx"]


def time_compile(dtc, model, out, env):
    start = time.perf_counter()
    subprocess.run([dtc, model, "-o", out], check=True, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dtc", default=os.path.join(ROOT, "build", "bin", "dtc"))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("models", nargs="*")
    args = p.parse_args()
    models = args.models or [os.path.join(ROOT, "examples", "models", m) for m in DEFAULT_MODELS]

    work = tempfile.mkdtemp(prefix="dtc-compile-time-")
    try:
        wrapper = os.path.join(work, "cxx")
        with open(wrapper, "w") as f:
            f.write('#!/bin/sh\nexec c++ "$@"\n')
        os.chmod(wrapper, 0o755)
        modes = [("precompiled", dict(os.environ)), ("from source", dict(os.environ, CXX=wrapper))]
        modes[0][1].pop("CXX", None)
        print("| model | precompiled (s) | from source (s) | ratio |")
        print("|---|---|---|---|")
        for model in models:
            medians = []
            for _, env in modes:
                out = os.path.join(work, "program")
                time_compile(args.dtc, model, out, env)  # warm the page cache
                times = [time_compile(args.dtc, model, out, env) for _ in range(args.rounds)]
                medians.append(statistics.median(times))
            print("| %s | %.2f | %.2f | %.1fx |" % (os.path.basename(model), medians[0], medians[1],
                                                   medians[1] / medians[0]), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
