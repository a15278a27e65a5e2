#!/usr/bin/env python3
"""Fails unless the first number REGEX captures in FILE_A is less than the
first it captures in FILE_B (planned memory with and without a flag).

    first_less.py REGEX FILE_A FILE_B
"""
import re
import sys


def first(pattern, path):
    for line in open(path):
        m = re.search(pattern, line)
        if m:
            return float(m.group(1))
    sys.exit(f"first_less.py: {path}: no line matches {pattern!r}")


def main(argv):
    pattern, a_path, b_path = argv[1:4]
    a, b = first(pattern, a_path), first(pattern, b_path)
    if not a < b:
        sys.exit(f"first_less.py: {a} ({a_path}) is not less than {b} ({b_path})")
    print(f"{a} < {b}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
