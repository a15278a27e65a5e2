#!/usr/bin/env python3
"""Pipeline stage exchanges: shared-memory point-to-point against Gloo's.

The same pipeline programs (2 stages, 2/4/8 micro-batches, zoo transformers
and the examples' MLP) run under dtcrun twice per round: once with the
default shared-memory communicator, whose send/recv copy through rings in
its segment on the calling thread (runtime/comm/ShmPointToPoint.h), once
with DTC_COMM_BACKEND=gloo, whose send/recv move the bytes on Gloo's loop
thread (how the shared-memory communicator sent them before). A pipeline
of 2 stages has no collective in its step, so the two runs differ in the
exchanges alone. dtcrun binds each rank to a core (its default); one
thread per rank. Step time: median of steps 6..STEPS, best of ROUNDS runs,
the two sides taking turns.

Run:  /usr/bin/python3 bench/pipeline_p2p.py [--out FILE.md] [--rounds 3]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import auto_plan  # noqa: E402  (model export)

MODELS = [
    ("mlp", "examples", 64, ["--optimizer=adam", "--lr=0.001"]),
    ("bert_encoder", "zoo", 16, ["--optimizer=adamw", "--lr=0.001"]),
    ("vit_tiny", "zoo", 16, ["--optimizer=adamw", "--lr=0.001"]),
]


def step_ms(build, program, backend, steps):
    env = dict(os.environ)
    env.pop("DTC_COMM_BACKEND", None)
    if backend == "gloo":
        env["DTC_COMM_BACKEND"] = "gloo"
    run = subprocess.run([os.path.join(build, "bin", "dtcrun"), "--nproc-per-node=2",
                          "--master-port=0", program, "--data=synthetic", "--epochs=1000",
                          f"--max-steps={steps}", "--log-every=1", "--threads=1"],
                         capture_output=True, text=True, timeout=600, env=env)
    if run.returncode != 0:
        raise RuntimeError(run.stdout[-1000:] + run.stderr[-1000:])
    rates = [float(r) for r in re.findall(r"\(([0-9.]+) samples/s\)", run.stdout)]
    return rates[5:]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--out")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    dtc = os.path.join(a.build, "bin", "dtc")
    work = tempfile.mkdtemp(prefix="dtc-p2p-")
    rows = []
    for name, source, batch, flags in MODELS:
        onnx = auto_plan.onnx_path(name, source, work)
        for micro in (2, 4, 8):
            program = os.path.join(work, f"{name}-{micro}")
            subprocess.run([dtc, onnx, "--strategy=pipeline", "--stages=2",
                            f"--micro-batches={micro}", f"--batch-size={batch}"] + flags +
                           ["-o", program], check=True, capture_output=True)
            best = {}
            for _ in range(a.rounds):
                for backend in ("shm", "gloo"):
                    rates = step_ms(a.build, program, backend, a.steps)
                    ms = statistics.median(batch / r * 1e3 for r in rates if r > 0)
                    best[backend] = min(best.get(backend, ms), ms)
            rows.append((name, batch, micro, best["shm"], best["gloo"]))
            print(f"{name} batch {batch} x {micro} micro-batches: shm {best['shm']:.3f} ms, "
                  f"gloo {best['gloo']:.3f} ms ({best['gloo'] / best['shm']:.2f}x)", flush=True)
    lines = ["# Pipeline exchanges: shared-memory point-to-point vs Gloo's\n",
             f"Command: `/usr/bin/python3 bench/pipeline_p2p.py{' --out ' + a.out if a.out else ''}`"
             f" (steps 6..{a.steps}, median, best of {a.rounds} runs per side, sides taking "
             "turns; 2 stages on 2 ranks bound to one core each by dtcrun, one thread per "
             "rank). Step times in ms for the global batch.\n",
             "| model | batch | micro-batches | shared memory | Gloo | Gloo / shared memory |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {n} | {b} | {m} | {s:.3f} | {g:.3f} | {g / s:.2f}x |" for n, b, m, s, g in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
