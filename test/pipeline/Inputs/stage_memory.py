#!/usr/bin/env python3
"""Compares stage 0's planned activation memory in two training logs (the
"[rank 0] stage 0: activation memory planned X MiB" line) and fails unless
the first plans less than the second.

    stage_memory.py WITH.log WITHOUT.log
"""
import re
import sys


def planned(path):
    for line in open(path):
        m = re.search(r"stage 0: activation memory planned ([0-9.]+) MiB", line)
        if m:
            return float(m.group(1))
    sys.exit(f"stage_memory.py: {path}: no stage 0 activation memory line")


def main(argv):
    a, b = planned(argv[1]), planned(argv[2])
    if not a < b:
        sys.exit(f"stage_memory.py: stage 0 plans {a} MiB with, {b} MiB without: not less")
    print(f"stage 0: planned activation memory {a} MiB < {b} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
