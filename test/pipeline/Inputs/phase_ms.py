#!/usr/bin/python3
"""Print how much longer phase NAME of stage 0 is in trace B than in trace A.

  phase_ms.py A.json B.json NAME

Both are planned timelines (dtc --emit-schedule); times in ms.
"""
import json
import sys


def duration(path, name):
    events = json.load(open(path))["traceEvents"]
    return next(e["dur"] for e in events
                if e.get("ph") == "X" and e["tid"] == 0 and e["name"] == name) / 1000


a, b, name = sys.argv[1:4]
print(f"{name} of stage 0: {duration(b, name) - duration(a, name):+.3f} ms")
