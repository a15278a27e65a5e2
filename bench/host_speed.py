"""A probe of this host's speed for the cost-model benches.

The sessions' 2-core VM runs the same program 1.5-2x faster or slower from
one few minutes to the next (bench/results/auto-plan-avx2.md), more than the
15% a prediction is judged by. calibrate_cost_model.py records the probe's
step time in the cluster file (calibration_probe_s) while it calibrates;
auto_plan.py runs it again before every plan it times, so a sweep can
report its errors both as measured and at the calibration's host speed
(each run's step time times calibration probe / probe now).

The probe: examples/models/lenet.onnx at batch 32 (convolutions, GEMMs,
pooling: the kernels the calibration fits), one process pinned to core 0,
one thread, synthetic data, the median step of steps 6..30.

The pair probe: the same, while a second copy trains on core 1. The two
vCPUs slow each other by an amount that moves from 2% to 40% within minutes
(bench/results/auto-plan-avx2.md, session 35): the hypervisor's placement
of them, which the probe alone cannot see. The calibration measures its
programs beside such a copy, as a 2-rank plan's ranks run, so the pair
probe's step (calibration_pair_probe_s) fixes the speed its op costs hold
at, for plans of two ranks.
"""
import os
import re
import statistics
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBE_STEPS = 30


def compile_probe(build, work):
    program = os.path.join(work, "host-speed-probe")
    if not os.path.exists(program):
        subprocess.run([os.path.join(build, "bin", "dtc"),
                        os.path.join(ROOT, "examples", "models", "lenet.onnx"), "-o", program,
                        "--batch-size=32", "--optimizer=sgd", "--lr=0.05", "--momentum=0.9"],
                       check=True, capture_output=True)
    return program


def probe_seconds(program):
    """The probe's median step time, in seconds."""
    run = subprocess.run(["taskset", "-c", "0", program, "--data=synthetic", "--epochs=1000",
                          f"--max-steps={PROBE_STEPS}", "--log-every=1", "--threads=1"],
                         capture_output=True, text=True, check=True, timeout=120)
    rates = [float(r) for r in re.findall(r"\(([0-9.]+) samples/s\)", run.stdout)]
    return statistics.median(32.0 / r for r in rates[5:] if r > 0)


def pair_probe_seconds(program):
    """The probe's median step time while a copy of it trains on core 1."""
    busy = subprocess.Popen(["taskset", "-c", "1", program, "--data=synthetic",
                             "--epochs=1000000", "--log-every=1000000", "--threads=1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.2)  # past its start-up, into its steps
        return probe_seconds(program)
    finally:
        busy.kill()
        busy.wait()
