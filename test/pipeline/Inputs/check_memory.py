#!/usr/bin/python3
"""Check that 1F1B keeps less activation memory than GPipe, planned and measured.

  check_memory.py --report GPIPE.txt ONEF1B.txt --metrics GPIPE.jsonl ONEF1B.jsonl

The reports are `dtc --report` outputs (the per-stage "activations" column of
the pipeline table, the compiler's plan); the metrics are the programs'
--metrics files, whose {"memory": [...]} line holds each stage's planned arena
peak and the measured one (1 + the highest arena byte the first step wrote).
Checks, per stage: 1F1B's planned and measured peaks are below GPipe's; the
measured peak is within 1% below the planned one and never above it; the
report and the program agree on the plan.  Exits 1 naming the first failure.
"""
import argparse
import json
import re
import sys


def report_activations(path):
    """Per stage: the activations column (MB) of the report's pipeline table."""
    stages = {}
    for line in open(path):
        m = re.match(r"^\s+(\d+)\s+\d+\s+.*\s([0-9.]+) MB\s+([0-9.]+) MB\s+[0-9.]+ ms$", line)
        if m:
            stages[int(m.group(1))] = float(m.group(3)) * 1e6
    return stages


def measured(path):
    for line in open(path):
        record = json.loads(line)
        if "memory" in record:
            return {e["stage"]: (e["planned_bytes"], e["measured_bytes"]) for e in record["memory"]}
    sys.exit(f"FAIL: {path} has no memory record")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--report", nargs=2, required=True)
    p.add_argument("--metrics", nargs=2, required=True)
    args = p.parse_args()
    planned = [report_activations(f) for f in args.report]
    runs = [measured(f) for f in args.metrics]
    ok = True
    for stage in sorted(runs[0]):
        (gp_plan, gp_meas), (of_plan, of_meas) = runs[0][stage], runs[1][stage]
        print(f"stage {stage}: gpipe planned {gp_plan} measured {gp_meas}; "
              f"1f1b planned {of_plan} measured {of_meas}")
        checks = [
            (of_plan < gp_plan, "1F1B's planned peak is not below GPipe's"),
            (of_meas < gp_meas, "1F1B's measured peak is not below GPipe's"),
        ]
        for schedule, (plan, meas), report in (("gpipe", runs[0][stage], planned[0]),
                                              ("1f1b", runs[1][stage], planned[1])):
            checks.append((0.99 * plan <= meas <= plan,
                           f"{schedule}: measured {meas} is not within 1% below planned {plan}"))
            checks.append((abs(report.get(stage, -1e9) - plan) <= 0.006e6,
                           f"{schedule}: the report says {report.get(stage)} bytes, "
                           f"the program {plan}"))
        for good, message in checks:
            if not good:
                print(f"FAIL: stage {stage}: {message}")
                ok = False
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
