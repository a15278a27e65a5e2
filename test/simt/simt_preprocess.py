#!/usr/bin/env python3
"""Rewrites a CUDA source file into host C++ for the SIMT layer (SimtRuntime.h).

  kernel<<<grid, block[, shared[, stream]]>>>(args)
    -> ::simt::launch(::simt::Site{__FILE__, __LINE__, "kernel", gridStride, cooperative},
                      [](auto&&... a_) { kernel(a_...); }, grid, block, ...)(args)
     (gridStride: the grid expression starts with gridFor(, gridRows( or
      chunkGrid(, so the SIMT grid policies may change its block count;
      cooperative: the kernel reaches __syncthreads or a warp primitive,
      through the __device__ functions of the file and Internal.cuh, so its
      threads run as fibers; the others run as plain calls, and a primitive
      reached anyway fails the launch)
  __shared__ T name[...];
    -> static T name[...]; ::simt::detail::sharedDeclared(&name, sizeof(name));
     (block-shared; poisoned when the first thread of a block reaches it)

The file's __global__ functions are registered for the coverage check.
Line numbers are kept (a #line directive names the original file).
Usage: simt_preprocess.py INPUT.cu OUTPUT.cpp
"""
import os
import re
import sys

GRID_STRIDE = ("gridFor(", "gridRows(", "chunkGrid(")
PRIMITIVES = re.compile(r"__syncthreads|__shfl_\w*sync|__ballot_sync|__any_sync|__all_sync|"
                        r"__syncwarp")


def device_functions(text):
    """name -> concatenated bodies of the __device__/__global__ functions."""
    bodies = {}
    for m in re.finditer(r"(?:__global__|__device__)[^;{}]*?\b([A-Za-z_]\w*)\s*\(", text):
        depth, i = 0, m.end() - 1
        while i < len(text):  # the parameter list
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
            if depth == 0:
                break
        j = text.find("{", i)
        if j < 0 or text[i:j].strip().endswith(";") or ";" in text[i:j]:
            continue  # a declaration
        depth, k = 0, j
        while k < len(text):
            depth += {"{": 1, "}": -1}.get(text[k], 0)
            k += 1
            if depth == 0:
                break
        bodies[m.group(1)] = bodies.get(m.group(1), "") + text[j:k]
    return bodies


def cooperative_functions(text):
    """Functions that reach __syncthreads or a warp primitive (fixpoint over calls)."""
    bodies = device_functions(text)
    coop = {f for f, b in bodies.items() if PRIMITIVES.search(b)}
    changed = True
    while changed:
        changed = False
        for f, b in bodies.items():
            if f not in coop and any(re.search(r"\b%s\s*[<(]" % g, b) for g in coop):
                coop.add(f)
                changed = True
    return coop


def callee_start(text, end):
    """Start of the kernel expression ending at `end` (name, ::, <...>)."""
    i = end
    while i > 0 and text[i - 1].isspace():
        i -= 1
    while True:
        if i > 0 and text[i - 1] == ">":  # template arguments
            depth = 0
            j = i - 1
            while j >= 0:
                if text[j] == ">":
                    depth += 1
                elif text[j] == "<":
                    depth -= 1
                    if depth == 0:
                        break
                j -= 1
            i = j
        m = re.search(r"[A-Za-z_][A-Za-z_0-9]*$", text[:i])
        if not m:
            raise SystemExit("simt_preprocess: cannot find the kernel before <<<")
        i = m.start()
        if text[max(0, i - 2):i] == "::":
            i -= 2
            continue
        return i


def rewrite_launches(text, coop):
    out = []
    pos = 0
    while True:
        k = text.find("<<<", pos)
        if k < 0:
            out.append(text[pos:])
            return "".join(out)
        start = callee_start(text, k)
        callee = text[start:k].strip()
        close = text.find(">>>", k)
        config = text[k + 3:close]
        grid = config.strip()
        stride = "true" if grid.startswith(GRID_STRIDE) else "false"
        name = re.sub(r"<.*", "", callee)
        cooperative = "true" if name in coop else "false"
        out.append(text[pos:start])
        out.append('::simt::launch(::simt::Site{__FILE__, __LINE__, "%s", %s, %s}, '
                   '[](auto&&... a_) { %s(a_...); }, %s)'
                   % (name, stride, cooperative, callee, config))
        pos = close + 3


SHARED = re.compile(r"__shared__\s+([^;]+);")
FIRST = re.compile(r"^(.*?)\s*([A-Za-z_]\w*)\s*((?:\[[^\]]*\]\s*)*)$", re.S)


def rewrite_shared(text):
    def repl(m):
        parts = m.group(1).split(",")
        first = FIRST.match(parts[0].strip())
        ctype = first.group(1)
        decls = ",".join([first.group(2) + first.group(3)] + parts[1:])
        names = [re.match(r"\s*([A-Za-z_]\w*)", d).group(1) for d in decls.split(",")]
        marks = " ".join("::simt::detail::sharedDeclared(&%s, sizeof(%s));" % (n, n)
                         for n in names)
        return "static %s %s; %s" % (ctype, decls, marks)
    return SHARED.sub(repl, text)


def main():
    src, dst = sys.argv[1], sys.argv[2]
    with open(src) as f:
        text = f.read()
    kernels = re.findall(r"__global__\s+void\s+([A-Za-z_]\w*)", text)
    helpers = os.path.join(os.path.dirname(os.path.abspath(src)), "Internal.cuh")
    shared_text = open(helpers).read() if os.path.exists(helpers) else ""
    coop = cooperative_functions(shared_text + "\n" + text)
    text = rewrite_shared(rewrite_launches(text, coop))
    with open(dst, "w") as f:
        f.write('#line 1 "%s"\n' % src)
        f.write(text)
        # Every kernel of the file, for the coverage check (DTC_SIMT_COVERAGE).
        f.write('\nstatic const bool simt_kernels_registered_ = '
                '::simt::registerKernels(__FILE__, "%s");\n' % " ".join(kernels))


if __name__ == "__main__":
    main()
