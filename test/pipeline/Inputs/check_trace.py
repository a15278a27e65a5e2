#!/usr/bin/python3
"""Check a pipeline timeline (Chrome trace) against the schedule it should follow.

  check_trace.py FILE.json --stages N --micro-batches M --schedule gpipe|1f1b [--steps K]
                [--kernels]

FILE.json is either the compiler's planned timeline (dtc --emit-schedule, one
step) or the program's measured one (--trace, steps 2-4: K = 3).  Checks that
it is valid Chrome-trace JSON, that every stage has a named thread, and that
each stage's events ("F3" = forward of micro-batch 3, "B3" its backward), in
time order, repeat the schedule's order once per step; and that events on a
stage never overlap.  With --kernels (a CPU program's measured trace): that
every forward and backward phase holds kernel events (args.op, with FLOPs and
bytes), each inside its phase's span on the same row and naming its step and
micro-batch.  Exits 1 naming the first mismatch.
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


def check_kernels(stage, phases, kernels):
    """Each phase holds kernels; each kernel of a micro-batch lies inside its phase."""
    ok = True
    for phase in phases:
        a = phase["args"]
        inside = [k for k in kernels if k["args"]["step"] == a["step"]
                  and k["args"]["micro_batch"] == a["micro_batch"] and k["cat"] == phase["cat"]]
        if phase["cat"] in ("forward", "backward") and not inside:
            print(f"FAIL: stage {stage}: {phase['name']} of step {a['step']} holds no kernels")
            ok = False
        for k in inside:
            if k["ts"] < phase["ts"] - 0.01 or k["ts"] + k["dur"] > phase["ts"] + phase["dur"] + 0.01:
                print(f"FAIL: stage {stage}: kernel {k['name']} outside {phase['name']}")
                ok = False
            if not all(key in k["args"] for key in ("op", "flops", "bytes")):
                print(f"FAIL: stage {stage}: kernel {k['name']} without op, flops, bytes")
                ok = False
    return ok


def main():
    p = argparse.ArgumentParser()
    p.add_argument("trace")
    p.add_argument("--stages", type=int, required=True)
    p.add_argument("--micro-batches", type=int, required=True)
    p.add_argument("--schedule", required=True)
    p.add_argument("--steps", type=int, default=1)
    p.add_argument("--kernels", action="store_true")
    args = p.parse_args()
    with open(args.trace) as f:
        events = json.load(f)["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    ok = True
    for stage in range(args.stages):
        if stage not in names:
            print(f"FAIL: no thread_name for stage {stage}")
            ok = False
        spans = sorted((e for e in events if e.get("ph") == "X" and e["tid"] == stage
                        and "op" not in e.get("args", {})), key=lambda e: e["ts"])
        kernels = [e for e in events if e.get("ph") == "X" and e["tid"] == stage
                   and "op" in e.get("args", {})]
        if args.kernels:
            ok = check_kernels(stage, spans, kernels) and ok
        elif kernels:
            print(f"FAIL: stage {stage}: kernel events in a trace without --kernels")
            ok = False
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
