"""Checks dtc --report's table for --micro-batches=auto (stdin).

Every divisor m of --batch-size from --stages up to min(batch, 64) must be a
candidate, with m x batch/m rows; exactly one is chosen, the one with the
smallest predicted step time, and the pipeline summary uses it. Prints one
line for FileCheck.

usage: check_auto.py BATCH STAGES < report.txt
"""
import re
import sys

batch, stages = int(sys.argv[1]), int(sys.argv[2])
text = sys.stdin.read()
rows = re.findall(r"^ +(\d+) x (\d+) +([0-9.]+) ms( +<- chosen)?$", text, re.M)
if not rows:
    sys.exit("no candidate table in the report")
candidates = [int(m) for m, _, _, _ in rows]
expected = [m for m in range(stages, min(batch, 64) + 1) if batch % m == 0]
if candidates != expected:
    sys.exit(f"candidates {candidates}, expected {expected}")
for m, rows_per, _, _ in rows:
    if int(m) * int(rows_per) != batch:
        sys.exit(f"candidate {m} x {rows_per} is not the batch of {batch}")
chosen = [int(m) for m, _, _, mark in rows if mark]
if len(chosen) != 1:
    sys.exit(f"{len(chosen)} candidates marked as chosen")
times = {int(m): float(t) for m, _, t, _ in rows}
fastest = min(times, key=lambda m: times[m])
if times[chosen[0]] != times[fastest]:
    sys.exit(f"chose {chosen[0]} ({times[chosen[0]]} ms), but {fastest} is faster ({times[fastest]} ms)")
summary = re.search(r"^pipeline: (\d+) stages, (\d+) micro-batches of (\d+), (\w+) schedule$", text, re.M)
if not summary:
    sys.exit("no pipeline summary in the report")
if int(summary.group(2)) != chosen[0] or int(summary.group(3)) * chosen[0] != batch:
    sys.exit(f"the summary says {summary.group(0)!r}, the table chose {chosen[0]}")
print(f"auto: {len(rows)} candidates, chose the fastest ({chosen[0]} x {batch // chosen[0]})")
