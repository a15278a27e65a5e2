#!/usr/bin/env python3
"""Activation recomputation (dtc --recompute): the planned arena (the
activations) and the step's speed, without it, with --recompute=selective
and with --recompute (full), in a pipeline and in ddp.

The models: the zoo's ViT-tiny, BERT-style encoder and nanoGPT, and in ddp
also ResNet-18 and MobileNetV2 (test/zoo/zoo_models.py), AdamW, synthetic
data, one thread per rank, a step of 128 samples on 2 ranks:
--strategy=pipeline --stages=2, 1F1B, 8 micro-batches of 16 (each stage's
arena), and --strategy=ddp, 64 samples a rank (rank 0's arena). Each configuration trains --steps steps --rounds
times, taking turns; samples/s = 128 / median step time after the warm-up,
the median round. The arenas are the compiled memory plans' (rank_memory in
the metrics).

Run:  /usr/bin/python3 bench/recompute.py [--build DIR] [--out FILE.md]
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
MODELS = ["vit_tiny", "bert_encoder", "nanogpt", "resnet18", "mobilenet_v2"]
CNNS = {"resnet18", "mobilenet_v2"}  # ddp only: their pipelines are not the point here
STEP = 128
MODES = ["off", "selective", "full"]
STRATEGIES = {
    "pipeline": ["--strategy=pipeline", "--stages=2", "--micro-batches=8", f"--batch-size={STEP}"],
    "ddp": ["--strategy=ddp", f"--batch-size={STEP // 2}"],
}


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
        for strategy, strategy_flags in STRATEGIES.items():
            if name in CNNS and strategy == "pipeline":
                continue
            programs = {}
            for mode in MODES:
                prog = os.path.join(work, f"{name}-{strategy}-{mode}")
                flags = strategy_flags + ["--optimizer=adamw", "--lr=1e-3"]
                if mode != "off":
                    flags.append(f"--recompute={mode}")
                subprocess.run([dtc, onnx, "-o", prog] + flags, check=True)
                programs[mode] = prog
            rates = {mode: [] for mode in MODES}
            memory = {}
            for r in range(args.rounds):
                for mode, prog in programs.items():
                    rate, mem = run(args.build, prog, 2, args.steps, f"{prog}-{r}.jsonl",
                                    rows_per_step=STEP)
                    rates[mode].append(rate)
                    memory[mode] = [m["arena_bytes"] / 2**20 for m in mem]
            rows.append((name, strategy, memory,
                         {m: statistics.median(v) for m, v in rates.items()}))
            print(name, strategy, memory, rates, flush=True)

    out = ["# Activation recomputation (--recompute[=selective])", "",
           f"Produced by `{' '.join(['/usr/bin/python3 bench/recompute.py'] + sys.argv[1:])}` "
           f"on {datetime.date.today()} "
           f"({os.cpu_count()} cores). " + " ".join(__doc__.split("\n\n")[1].split()), "",
           "| model | strategy | recompute | arena rank 0 (stage 0), MiB | "
           "arena rank 1 (stage 1), MiB | samples/s | / off |",
           "|---|---|---|---|---|---|---|"]
    for name, strategy, memory, rate in rows:
        for mode in MODES:
            out.append(f"| {name} | {strategy} | {mode} | {memory[mode][0]:.2f} | "
                       f"{memory[mode][1]:.2f} | {rate[mode]:.1f} | "
                       f"{rate[mode] / rate['off']:.2f} |")
    text = "\n".join(out) + "\n"
    print(text)
    if args.out:
        open(args.out, "w").write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
