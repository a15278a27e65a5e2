#!/usr/bin/env python3
"""Measures the CPU communicator's bus bandwidth by collective and buffer size.

The cluster file's intra_node.bus_bandwidth is one number, but dtc's
shared-memory rings run from the caches for small buffers and from memory
for large ones, and an all-gather or a reduce-scatter moves data at other
rates than an all-reduce: a ZeRO-3 plan gathering 42 MB of weights was
predicted 23% short. This runs build/.../dtcrt_comm_bandwidth_bench under
dtcrun on 2 ranks (median of repeats per size), keeps the median of
--runs runs per point, and writes the table (intra_node.bus_bandwidth_by_size
in the cluster file, docs/cluster-model.md) and a report. The median of
the runs, not the fastest: the cost model predicts a typical step (see
bench/calibrate_cost_model.py), and the fastest of a few runs on a host
whose speed drifts is an optimistic one.

Run:  /usr/bin/python3 bench/comm_bandwidth.py [--build DIR] [--runs 3]
          [--cluster clusters/this-machine-cpu.json] [--out FILE.md]
"""
import argparse
import json
import os
import statistics
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES_MIB = [0.25, 0.5, 1, 2, 4, 8, 16, 32, 64, 128]
COLLECTIVES = ["all_reduce", "all_gather", "reduce_scatter"]
CLUSTER = os.path.join(ROOT, "clusters", "this-machine-cpu.json")


def run_once(build):
    out = subprocess.run([os.path.join(build, "bin", "dtcrun"), "--nproc-per-node=2",
                          "--master-port=0",
                          os.path.join(build, "runtime", "test-runtime",
                                       "dtcrt_comm_bandwidth_bench")] +
                         [str(s) for s in SIZES_MIB],
                         check=True, capture_output=True, text=True, timeout=600).stdout
    points = {}
    for line in out.splitlines():
        fields = line.replace("[rank 0] ", "").split()
        if len(fields) == 4 and fields[0] in COLLECTIVES:
            points[(fields[0], int(fields[1]))] = float(fields[3])
    return points


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--cluster", default=CLUSTER)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--out")
    a = p.parse_args()
    start_load = os.getloadavg()
    runs = {}
    for _ in range(a.runs):
        for key, bandwidth in run_once(a.build).items():
            runs.setdefault(key, []).append(bandwidth)
    typical = {key: statistics.median(values) for key, values in runs.items()}
    sizes = sorted({b for _, b in typical})
    tables = {c: [[b, float(f"{typical[(c, b)]:.3g}")] for b in sizes if (c, b) in typical]
              for c in COLLECTIVES}

    with open(a.cluster) as f:
        cluster = json.load(f)
    cluster["intra_node"]["bus_bandwidth_by_size"] = tables
    cluster["sources"] = [s for s in cluster.get("sources", [])
                          if not s.startswith("intra_node.bus_bandwidth_by_size")]
    cluster["sources"].append(
        "intra_node.bus_bandwidth_by_size: bench/comm_bandwidth.py "
        "(bench/results/comm-bandwidth.md): the shared-memory communicator's collectives "
        f"on 2 ranks, median of repeats, median of {a.runs} runs per size")
    with open(a.cluster, "w") as f:
        json.dump(cluster, f, indent=2)
        f.write("\n")

    rows = ["| buffer | " + " | ".join(c.replace("_", "-") + " GB/s" for c in COLLECTIVES) + " |",
            "|---|---|---|---|"]
    for b in sizes:
        rows.append(f"| {b / 1048576:.3g} MiB | " +
                    " | ".join(f"{typical[(c, b)] / 1e9:.2f}" if (c, b) in typical else "-"
                               for c in COLLECTIVES) + " |")
    load = "Load average (1, 5, 15 min) at the start: {:.2f} {:.2f} {:.2f}; at the end: {:.2f} {:.2f} {:.2f}.".format(
        *start_load, *os.getloadavg())
    text = "\n".join([
        "# Bus bandwidth of the CPU communicator by collective and size",
        "",
        f"Command: `/usr/bin/python3 bench/comm_bandwidth.py{' --cluster ' + a.cluster if a.cluster != CLUSTER else ''}"
        f"{' --out ' + a.out if a.out else ''}` "
        f"(writes intra_node.bus_bandwidth_by_size of {os.path.relpath(a.cluster, ROOT)})",
        "",
        "2 ranks under dtcrun on this machine (the shared-memory communicator), "
        "`dtcrt_comm_bandwidth_bench` (bench/comm_bandwidth.cpp): each collective timed on "
        "buffers of each size, median of 7-21 repeats after a warm-up, a barrier before "
        f"each; the median of {a.runs} runs. Bus bandwidth as nccl-tests define it: "
        "2(n-1)/n S / t for an all-reduce of S bytes, (n-1)/n S / t for an all-gather "
        "(S gathered) and a reduce-scatter (S in).",
        "",
        load,
        "",
    ] + rows) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
