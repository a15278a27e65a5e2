#!/usr/bin/env python3
"""ZeRO-3's communication overlapping compute, shown in a trace.

fsdp --shard=parameters on 2 ranks of this machine, the 53.6M MLP of
fsdp_memory.py (Adam, batch 32 per rank, one thread per rank), with the
shared-memory communicator in its two modes: a collective run inside its
wait() (the default) and on a worker thread (DTC_SHM_THREAD=1), where it
proceeds while the step computes. Each mode trains --steps steps with
--trace (rank 0's ops of step 2), --rounds times, the modes taking turns.

Prints per mode: the median step time (after the warm-up) of the best
round, and from the trace of that round: the time rank 0 waited for the
weight gathers and for the gradient reductions, and its GEMM time. Inside
wait() the waits are the transfers; what the worker thread takes off them
ran during compute (the overlap). The threaded mode's trace is copied next
to the results (open it in ui.perfetto.dev).

Run:  /usr/bin/python3 bench/fsdp_overlap.py [--build DIR] [--out FILE.md]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fsdp_memory import BATCH, ROOT, WARMUP, export, free_port  # noqa: E402

MODES = {"inside wait()": {}, "worker thread": {"DTC_SHM_THREAD": "1"}}


def train(build, program, steps, metrics, trace, extra_env):
    env = dict(os.environ, DTC_COMM_BACKEND="shm")
    env.pop("DTC_SHM_THREAD", None)
    env.update(extra_env)
    subprocess.run([os.path.join(build, "bin", "dtcrun"), "--nproc-per-node=2",
                    f"--master-port={free_port()}", program, "--data=synthetic", "--epochs=1000",
                    f"--max-steps={steps}", "--threads=1", f"--metrics={metrics}",
                    f"--trace={trace}", "--timeout=600", "--log-every=1", "--quiet"],
                   check=True, capture_output=True, text=True, env=env)
    records = [json.loads(l) for l in open(metrics)]
    return statistics.median(r["step_s"] for r in records if "step_s" in r and r["step"] > WARMUP)


def summarize(trace):
    """Rank 0's waits, GEMMs and the gathers' overlap, in ms."""
    events = sorted((e for e in json.load(open(trace))["traceEvents"]
                     if e.get("ph") == "X" and e.get("pid") == 0), key=lambda e: e["ts"])
    def total(suffix):
        return sum(e["dur"] for e in events if e["name"].endswith(suffix)) / 1e3
    return {"gather_wait": total("gather_params_wait"), "reduce_wait": total("all_reduce_wait"),
            "gemm": total("dtc.gemm"), "all": sum(e["dur"] for e in events) / 1e3}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--out")
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    work = os.path.join(a.build, "bench", "fsdp-overlap")
    os.makedirs(work, exist_ok=True)
    onnx = os.path.join(work, "mlp53m.onnx")
    params = export(onnx)
    program = os.path.join(work, "train-zero3")
    subprocess.run([os.path.join(a.build, "bin", "dtc"), onnx, "--strategy=fsdp",
                    "--shard=parameters", f"--batch-size={BATCH}", "--optimizer=adam",
                    "--lr=1e-4", "-o", program], check=True)
    best = {m: (float("inf"), None) for m in MODES}
    names = list(MODES)
    for round_ in range(a.rounds):
        for mode in names[round_ % 2:] + names[:round_ % 2]:
            tag = f"{'thread' if MODES[mode] else 'inline'}-{round_}"
            trace = os.path.join(work, f"trace-{tag}.json")
            step = train(a.build, program, a.steps, os.path.join(work, f"{tag}.jsonl"), trace,
                         MODES[mode])
            if step < best[mode][0]:
                best[mode] = (step, trace)
    lines = ["# ZeRO-3 on 2 ranks: communication overlapping compute\n",
             f"Command: `/usr/bin/python3 bench/fsdp_overlap.py --steps {a.steps} --rounds "
             f"{a.rounds}{' --out ' + a.out if a.out else ''}`\n",
             f"Model: MLP 784 -> 4x4096 -> 10, {params:,} parameters; `--strategy=fsdp "
             f"--shard=parameters`, Adam float32, batch {BATCH} per rank, synthetic data, 1 "
             f"thread per rank, 2 ranks on this 2-core machine, the shared-memory communicator. "
             f"Step: median after {WARMUP} warm-up steps, the best of {a.rounds} runs of "
             f"{a.steps} steps, the modes taking turns; the rest from that run's `--trace` "
             "(rank 0, step 2).\n",
             "| collectives run | step ms | samples/s | weight-gather waits ms | gradient "
             "reduction waits ms | GEMMs ms | all ops ms |",
             "|---|---|---|---|---|---|---|"]
    summary = {}
    for mode in names:
        step, trace = best[mode]
        s = summary[mode] = summarize(trace)
        lines.append(f"| {mode} | {step * 1e3:.1f} | {2 * BATCH / step:.1f} | "
                     f"{s['gather_wait']:.1f} | {s['reduce_wait']:.1f} | {s['gemm']:.1f} | "
                     f"{s['all']:.1f} |")
    inline, threaded = summary[names[0]], summary[names[1]]
    lines.append("")
    lines.append("Inside wait() a collective's whole transfer is waited for. On the worker "
                 f"thread it runs while the step computes: the gathers' waits are "
                 f"{100 * (1 - threaded['gather_wait'] / inline['gather_wait']):.0f}% shorter "
                 f"and the reductions' {100 * (1 - threaded['reduce_wait'] / inline['reduce_wait']):.0f}% "
                 f"(hidden behind GEMMs), but the thread shares the 2 cores with the ranks: the "
                 f"GEMMs take {threaded['gemm'] - inline['gemm']:.0f} ms more. Samples/s: "
                 f"{best[names[0]][0] / best[names[1]][0]:.2f}x with the thread. Its trace: "
                 "[fsdp-overlap-trace.json](fsdp-overlap-trace.json) (open in ui.perfetto.dev; "
                 "each `dtc.gather_params_start` is issued one group ahead, and where the GEMM "
                 "after it outlasts the transfer, the next wait is near zero).")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
        shutil.copyfile(best[names[1]][1],
                        os.path.join(os.path.dirname(a.out), "fsdp-overlap-trace.json"))


if __name__ == "__main__":
    sys.exit(main())
