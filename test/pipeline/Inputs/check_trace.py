#!/usr/bin/python3
"""Check a pipeline timeline (Chrome trace) against the schedule it should follow.

  check_trace.py FILE.json --stages N --micro-batches M --schedule gpipe|1f1b [--steps K]

FILE.json is either the compiler's planned timeline (dtc --emit-schedule, one
step) or the program's measured one (--trace, steps 2-4: K = 3).  Checks that
it is valid Chrome-trace JSON, that every stage has a named thread, and that
each stage's events ("F3" = forward of micro-batch 3, "B3" its backward), in
time order, repeat the schedule's order once per step; and that events on a
stage never overlap.  Exits 1 naming the first mismatch.
"""
import argparse
import json
import sys


def schedule_order(schedule, stage, stages, micro):
    if schedule == "gpipe":
        return [f"F{m}" for m in range(micro)] + [f"B{m}" for m in range(micro)]
    warmup = min(stages - 1 - stage, micro)
    order = [f"F{m}" for m in range(warmup)]
    forward, backward = warmup, 0
    while forward < micro:
        order += [f"F{forward}", f"B{backward}"]
        forward += 1
        backward += 1
    order += [f"B{m}" for m in range(backward, micro)]
    return order


def main():
    p = argparse.ArgumentParser()
    p.add_argument("trace")
    p.add_argument("--stages", type=int, required=True)
    p.add_argument("--micro-batches", type=int, required=True)
    p.add_argument("--schedule", required=True)
    p.add_argument("--steps", type=int, default=1)
    args = p.parse_args()
    with open(args.trace) as f:
        events = json.load(f)["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    ok = True
    for stage in range(args.stages):
        if stage not in names:
            print(f"FAIL: no thread_name for stage {stage}")
            ok = False
        spans = sorted((e for e in events if e.get("ph") == "X" and e["tid"] == stage),
                       key=lambda e: e["ts"])
        got = [e["name"] for e in spans]
        want = schedule_order(args.schedule, stage, args.stages, args.micro_batches) * args.steps
        if got != want:
            print(f"FAIL: stage {stage}: {got} != {want}")
            ok = False
        for a, b in zip(spans, spans[1:]):
            if a["ts"] + a["dur"] > b["ts"] + 0.01:  # µs, printed to 3 decimals
                print(f"FAIL: stage {stage}: {a['name']} overlaps {b['name']}")
                ok = False
        print(f"stage {stage} ({names.get(stage)}): {' '.join(got[:2 * args.micro_batches])}")
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
