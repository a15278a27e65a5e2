#!/usr/bin/env python3
"""dtc --strategy=auto against a sweep: is the plan it picks the fastest?

For each model, `dtc --strategy=auto --devices=2 --cluster=clusters/this-machine-cpu.json
--report` lists every plan for this machine's 2 cores with its predicted step
time and the flags that compile it. This script compiles every plan with
those flags, times it here (dtcrun, synthetic data, one thread per rank, the
median step of steps 6..STEPS, median of --runs runs, 5 by default), and reports per model: each
plan's predicted and measured step, the prediction's error, the plan auto
chose (without --tune: the prediction alone), and how far its measured step
is from the best measured plan's.

Models: the zoo's transformers and CNNs that train quickly here
(test/zoo/zoo_models.py: bert_encoder, nanogpt, vit_tiny, lenet5_avgpool,
resnet18 at batch 8) and the examples' MLP and LeNet.

The host speed probe (bench/host_speed.py) runs before every plan; where the
cluster file records the probe's step during calibration
(calibration_probe_s), each plan's error is also given at the calibration's
host speed: a host whose speed moves by more than the 15% a prediction is
judged by otherwise hides the model's error behind its own drift.

The pair probe (the same program beside a busy copy on the other core)
runs before every plan too: the two vCPUs slow each other by 2% to 40%,
moving within minutes, and the calibration measured its op costs beside
such a copy. Where the cluster file records the pair probe's step
(calibration_pair_probe_s), each plan of two ranks also gets its error at
the calibration's contended speed (each run times calibration pair probe /
the pair probe just before it); a plan of one rank keeps the probe alone.

The median of the runs, not the fastest: a prediction is of a typical step
(the cost model is calibrated on median op times), and on a host whose speed
drifts by 10-20% over minutes the fastest of five runs is a lucky one.

Run:  /usr/bin/python3 bench/auto_plan.py [--build DIR] [--out FILE.md]
          [--cluster clusters/this-machine-cpu.json]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import host_speed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLUSTER = os.path.join(ROOT, "clusters", "this-machine-cpu.json")
# name, source, global batch, optimizer flags
MODELS = [
    ("mlp", "examples", 64, ["--optimizer=adam", "--lr=0.001"]),
    ("lenet", "examples", 64, ["--optimizer=sgd", "--lr=0.05", "--momentum=0.9"]),
    ("lenet5_avgpool", "zoo", 64, ["--optimizer=sgd", "--lr=0.05", "--momentum=0.9"]),
    ("bert_encoder", "zoo", 16, ["--optimizer=adamw", "--lr=0.001"]),
    ("nanogpt", "zoo", 16, ["--optimizer=adamw", "--lr=0.001"]),
    ("vit_tiny", "zoo", 16, ["--optimizer=adamw", "--lr=0.001"]),
    ("resnet18", "zoo", 8, ["--optimizer=sgd", "--lr=0.01", "--momentum=0.9"]),
]
ROW = re.compile(r"^  (.+?)\s{2,}(-- .*|([0-9.]+)\s+([0-9.]+)\s+(\S+)\s+(.*?))(\s+<- chosen)?$")


def onnx_path(name, source, work):
    if source == "examples":
        return os.path.join(ROOT, "examples", "models", name + ".onnx")
    path = os.path.join(work, name + ".onnx")
    if not os.path.exists(path):
        sys.path.insert(0, os.path.join(ROOT, "test", "zoo"))
        import run_zoo
        import zoo_models
        run_zoo.export(name, zoo_models.MODELS[name], path)
    return path


def plans(dtc, cluster, onnx, batch, flags, tune=False):
    out = subprocess.run([dtc, onnx, "--strategy=auto", "--devices=2", "--cluster=" + cluster,
                          f"--batch-size={batch}", "--report"] + (["--tune"] if tune else []) +
                         flags, check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        if line.startswith("chosen:"):
            break
        m = ROW.match(line)
        if not m or m.group(1).startswith("plan"):
            continue
        if m.group(2).startswith("--"):
            rows.append({"plan": m.group(1).strip(), "refused": m.group(2)[3:]})
            continue
        rest = m.group(6).split()
        if rest and not rest[0].startswith("--"):  # --tune's measured column
            rest = rest[1:]
        rows.append({"plan": m.group(1).strip(), "predicted": float(m.group(3)) / 1e3,
                     "flags": rest, "chosen": bool(m.group(7))})
    return rows


def ranks_of(flags):
    get = lambda key, default: next((int(f.split("=")[1]) for f in flags
                                     if f.startswith(key + "=")), default)
    tp, stages, dp = get("--tp", 1), get("--stages", 0), get("--dp", 1)
    if stages:
        return stages * dp * tp
    return 2 if any(f.startswith("--strategy=") for f in flags) else tp


def measure_once(build, program, ranks, steps):
    run = subprocess.run([os.path.join(build, "bin", "dtcrun"), f"--nproc-per-node={ranks}",
                          "--master-port=0", program, "--data=synthetic", "--epochs=1000",
                          f"--max-steps={steps}", "--log-every=1", "--threads=1"],
                         capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        raise RuntimeError(run.stdout[-1000:] + run.stderr[-1000:])
    rates = [float(r) for r in re.findall(r"\(([0-9.]+) samples/s\)", run.stdout)]
    times = [1.0 / r for r in rates[5:] if r > 0]  # seconds per sample, steps 6..
    return statistics.median(times) if times else None  # step time / global batch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--out")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--runs", type=int, default=5, help="runs per plan; the median counts")
    p.add_argument("--cluster", default=CLUSTER, help="the cluster file that predicts")
    p.add_argument("--models", default=",".join(m[0] for m in MODELS))
    a = p.parse_args()
    dtc = os.path.join(a.build, "bin", "dtc")
    start_load = os.getloadavg()
    work = tempfile.mkdtemp(prefix="dtc-auto-")
    lines = ["# --strategy=auto against a sweep of every plan (2 devices: this machine's cores)\n",
             f"Command: `/usr/bin/python3 bench/auto_plan.py{' --out ' + a.out if a.out else ''}"
             f"{' --cluster ' + a.cluster if a.cluster != CLUSTER else ''}`\n",
             "Each plan compiled with the flags `--report` lists, run under dtcrun on synthetic "
             f"data (one thread per rank, median step of steps 6..{a.steps}, median of {a.runs} runs, "
             "every plan of every model run once per round). "
             f"Predicted: the cluster model of {a.cluster if a.cluster != CLUSTER else 'clusters/this-machine-cpu.json'}. Step times in ms "
             "for the same global batch.\n"]
    summary = ["| model | batch | auto's plan | its measured ms | best measured plan | best ms "
               "| auto / best | --tune's plan | --tune / best | mean abs prediction error |",
               "|---|---|---|---|---|---|---|---|---|---|"]
    errors, scaled_errors, contended_errors = [], [], []
    models = []  # (name, batch, flags, onnx, rows)
    for name, source, batch, flags in MODELS:
        if name not in a.models.split(","):
            continue
        onnx = onnx_path(name, source, work)
        rows = plans(dtc, a.cluster, onnx, batch, flags)
        for i, r in enumerate(rows):
            if "refused" not in r:
                r["program"] = os.path.join(work, f"{name}-{i}")
                subprocess.run([dtc, onnx] + r["flags"] + flags + ["-o", r["program"]],
                               check=True, capture_output=True)
                r["runs"] = []
                r["probes"] = []
                r["pair_probes"] = []
        models.append((name, batch, flags, onnx, rows))
    # Round robin over every plan of every model: one run of each per round.
    # This machine has slow spells lasting minutes; a plan's five runs are
    # then minutes apart, and its fastest is from outside any one spell.
    # The host speed probe runs before each: its step against the one the
    # calibration recorded scales that run to the calibration's host speed.
    with open(a.cluster) as f:
        calibration = json.load(f)
    calibration_probe = calibration.get("calibration_probe_s")
    calibration_pair_probe = calibration.get("calibration_pair_probe_s")
    probe = host_speed.compile_probe(a.build, work)
    for round_ in range(a.runs):
        for name, batch, _, _, rows in models:
            for r in rows:
                if "program" in r:
                    speed = host_speed.probe_seconds(probe)
                    paired = host_speed.pair_probe_seconds(probe)
                    t = measure_once(a.build, r["program"], ranks_of(r["flags"]), a.steps)
                    if t is not None:
                        r["runs"].append(t * batch)
                        r["probes"].append(speed)
                        r["pair_probes"].append(paired)
        print(f"round {round_ + 1} of {a.runs} done", flush=True)
    for name, batch, flags, onnx, rows in models:
        lines += [f"\n## {name} (batch {batch})\n",
                  "| plan | predicted ms | measured ms | slowest run / fastest | error "
                  "| probe / calibration's | error at the calibration's speed "
                  "| pair probe / calibration's | error at the calibration's contention |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            if "refused" in r:
                lines.append(f"| {r['plan']} | refused: {r['refused']} | | | | | | | |")
                continue
            r["measured"] = statistics.median(r["runs"])
            r["error"] = (r["predicted"] - r["measured"]) / r["measured"]
            scaled = ""
            if calibration_probe:
                ratios = [p / calibration_probe for p in r["probes"]]
                at_calibration = statistics.median(t / q for t, q in zip(r["runs"], ratios))
                r["scaled_error"] = (r["predicted"] - at_calibration) / at_calibration
                scaled = f"{statistics.median(ratios):.2f} | {r['scaled_error'] * 100:+.0f}%"
            else:
                scaled = "- | -"
            if calibration_pair_probe and ranks_of(r["flags"]) > 1:
                ratios = [p / calibration_pair_probe for p in r["pair_probes"]]
            elif calibration_probe:
                ratios = [p / calibration_probe for p in r["probes"]]
            else:
                ratios = None
            if ratios and calibration_pair_probe:
                at_contention = statistics.median(t / q for t, q in zip(r["runs"], ratios))
                r["contended_error"] = (r["predicted"] - at_contention) / at_contention
                scaled += f" | {statistics.median(ratios):.2f} | {r['contended_error'] * 100:+.0f}%"
            else:
                scaled += " | - | -"
            lines.append(f"| {r['plan']}{' (auto)' if r['chosen'] else ''} | "
                         f"{r['predicted'] * 1e3:.3f} | {r['measured'] * 1e3:.3f} | "
                         f"{max(r['runs']) / min(r['runs']):.2f} | {r['error'] * 100:+.0f}% | "
                         f"{scaled} |")
            print(name, r["plan"], f"{r['predicted'] * 1e3:.3f}", f"{r['measured'] * 1e3:.3f}",
                  flush=True)
        timed = [r for r in rows if "measured" in r]
        best = min(timed, key=lambda r: r["measured"])
        chosen = next(r for r in timed if r["chosen"])
        err = statistics.mean(abs(r["error"]) for r in timed)
        errors += [abs(r["error"]) for r in timed]
        scaled_errors += [abs(r["scaled_error"]) for r in timed if "scaled_error" in r]
        contended_errors += [abs(r["contended_error"]) for r in timed if "contended_error" in r]
        # --tune: the chosen plan and the next two predicted, timed by dtc itself.
        tuned_name = next(r["plan"] for r in plans(dtc, a.cluster, onnx, batch, flags, tune=True)
                          if r.get("chosen"))
        tuned = next(r for r in timed if r["plan"] == tuned_name)
        summary.append(f"| {name} | {batch} | {chosen['plan']} | {chosen['measured'] * 1e3:.3f} | "
                       f"{best['plan']} | {best['measured'] * 1e3:.3f} | "
                       f"{chosen['measured'] / best['measured']:.2f} | {tuned_name} | "
                       f"{tuned['measured'] / best['measured']:.2f} | {err * 100:.0f}% |")
    load = "Load average (1, 5, 15 min) at the start: {:.2f} {:.2f} {:.2f}; at the end: {:.2f} {:.2f} {:.2f} (2 cores; other work on the machine shows as load above 2).\n".format(*start_load, *os.getloadavg())
    summary.append(f"\n{sum(e <= 0.15 for e in errors)} of {len(errors)} plans predicted within "
                   f"15% of their measured step; median error {statistics.median(errors) * 100:.1f}%.")
    if scaled_errors:
        probes = [p for _, _, _, _, rows in models for r in rows for p in r.get("probes", [])]
        summary.append(
            f"\nAt the calibration's host speed (each run times calibration_probe_s / the probe "
            f"just before it; bench/host_speed.py): {sum(e <= 0.15 for e in scaled_errors)} of "
            f"{len(scaled_errors)} within 15%, median error "
            f"{statistics.median(scaled_errors) * 100:.1f}%. The probe ran "
            f"{min(probes) * 1e3:.3f}-{max(probes) * 1e3:.3f} ms a step during the sweep, "
            f"{calibration_probe * 1e3:.3f} ms in the calibration.")
    if contended_errors:
        pairs = [p for _, _, _, _, rows in models for r in rows for p in r.get("pair_probes", [])]
        summary.append(
            f"\nAt the calibration's contention (each run of a 2-rank plan times "
            f"calibration_pair_probe_s / the pair probe just before it, a 1-rank plan's as "
            f"above): {sum(e <= 0.15 for e in contended_errors)} of {len(contended_errors)} "
            f"within 15%, median error {statistics.median(contended_errors) * 100:.1f}%. The pair "
            f"probe ran {min(pairs) * 1e3:.3f}-{max(pairs) * 1e3:.3f} ms a step during the sweep "
            f"(median {statistics.median(pairs) * 1e3:.3f}), "
            f"{calibration_pair_probe * 1e3:.3f} ms in the calibration.")
    text = "\n".join(lines[:3] + [load, "\n## Summary\n"] + summary + lines[3:]) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
