#!/usr/bin/env python3
"""Rewrites a CUDA source file into host C++ for the SIMT layer (SimtRuntime.h).

  kernel<<<grid, block[, shared[, stream]]>>>(args)
    -> ::simt::launch(::simt::Site{__FILE__, __LINE__, "kernel", gridStride},
                      [](auto&&... a_) { kernel(a_...); }, grid, block, ...)(args)
     (gridStride: the grid expression starts with gridFor(, gridRows( or
      chunkGrid(, so the SIMT grid policies may change its block count)
  __shared__ T name[...];
    -> static T name[...]; ::simt::detail::sharedDeclared(&name, sizeof(name));
     (block-shared; poisoned when the first thread of a block reaches it)

The file's __global__ functions are registered for the coverage check.
Line numbers are kept (a #line directive names the original file).
Usage: simt_preprocess.py INPUT.cu OUTPUT.cpp
"""
import re
import sys

GRID_STRIDE = ("gridFor(", "gridRows(", "chunkGrid(")


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


def rewrite_launches(text):
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
        out.append(text[pos:start])
        out.append('::simt::launch(::simt::Site{__FILE__, __LINE__, "%s", %s}, '
                   '[](auto&&... a_) { %s(a_...); }, %s)' % (name, stride, callee, config))
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
    text = rewrite_shared(rewrite_launches(text))
    with open(dst, "w") as f:
        f.write('#line 1 "%s"\n' % src)
        f.write(text)
        # Every kernel of the file, for the coverage check (DTC_SIMT_COVERAGE).
        f.write('\nstatic const bool simt_kernels_registered_ = '
                '::simt::registerKernels(__FILE__, "%s");\n' % " ".join(kernels))


if __name__ == "__main__":
    main()
