#!/usr/bin/env python3
"""Activation recomputation (dtc --recompute) in a pipeline: each stage's
planned arena (its activations) and the step's speed, with and without.

The models: the zoo's ViT-tiny and BERT-style encoder (test/zoo/zoo_models.py),
--strategy=pipeline --stages=2 on 2 ranks, 1F1B, a step of 128 samples in
8 micro-batches of 16, AdamW, synthetic data, one thread per rank. Each
configuration trains --steps steps --rounds times, taking turns; samples/s
= 128 / median step time after the warm-up, the median round. The arena of
each stage is the compiled memory plan's (rank_memory in the metrics).

Run:  /usr/bin/python3 bench/pipeline_recompute.py [--build DIR] [--out FILE.md]
"""
import argparse
import datetime
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fsdp_memory import ROOT, run  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "test", "zoo"))
MODELS = ["vit_tiny", "bert_encoder"]
BATCH, MICRO = 128, 8


def export(name, path):
    import run_zoo
    import zoo_models
    run_zoo.export(name, zoo_models.MODELS[name], path)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--out")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    dtc = os.path.join(args.build, "bin", "dtc")
    work = tempfile.mkdtemp(prefix="dtc-recompute-")
    rows = []
    for name in MODELS:
        onnx = os.path.join(work, name + ".onnx")
        export(name, onnx)
        programs = {}
        for mode in ("off", "on"):
            prog = os.path.join(work, f"{name}-{mode}")
            flags = ["--strategy=pipeline", "--stages=2", f"--micro-batches={MICRO}",
                     f"--batch-size={BATCH}", "--optimizer=adamw", "--lr=1e-3"]
            if mode == "on":
                flags.append("--recompute")
            subprocess.run([dtc, onnx, "-o", prog] + flags, check=True)
            programs[mode] = prog
        rates = {"off": [], "on": []}
        memory = {}
        for r in range(args.rounds):
            for mode, prog in programs.items():
                rate, mem = run(args.build, prog, 2, args.steps, f"{prog}-{r}.jsonl",
                                rows_per_step=BATCH)
                rates[mode].append(rate)
                memory[mode] = [m["arena_bytes"] / 2**20 for m in mem]
        rows.append((name, memory, {m: statistics.median(v) for m, v in rates.items()}))
        print(name, memory, rates, flush=True)

    out = ["# Activation recomputation in a pipeline (--recompute)", "",
           f"Produced by `{' '.join(['/usr/bin/python3 bench/pipeline_recompute.py'] + sys.argv[1:])}` "
           f"on {datetime.date.today()} "
           f"({os.cpu_count()} cores). " + " ".join(__doc__.split("\n\n")[1].split()), "",
           "| model | arena stage 0, MiB (off -> on) | arena stage 1, MiB (off -> on) | "
           "samples/s off | samples/s on | on / off |", "|---|---|---|---|---|---|"]
    for name, memory, rate in rows:
        out.append(f"| {name} | {memory['off'][0]:.2f} -> {memory['on'][0]:.2f} | "
                   f"{memory['off'][1]:.2f} -> {memory['on'][1]:.2f} | {rate['off']:.1f} | "
                   f"{rate['on']:.1f} | {rate['on'] / rate['off']:.2f} |")
    text = "\n".join(out) + "\n"
    print(text)
    if args.out:
        open(args.out, "w").write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
