# Checks that every line of FILE is one whole line of one rank, as printed by
# `rank.py lines N WIDTH`: `[rank R] ` and WIDTH copies of one letter, and
# that each rank has N lines. Prints "ok" or what is wrong.
#   check_lines.py FILE NRANKS N WIDTH upper|lower
import re
import sys

path, nranks, count, width, case = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
seen = {}
pattern = re.compile(r"^\[rank (\d+)\] ([a-zA-Z])\2{%d}$" % (width - 1))
for number, line in enumerate(open(path), 1):
    m = pattern.match(line.rstrip("\n"))
    if not m:
        sys.exit("line %d is mixed or cut: %r" % (number, line[:80]))
    rank = int(m.group(1))
    letter = chr(ord("a") + rank % 26)
    if m.group(2) != (letter.upper() if case == "upper" else letter):
        sys.exit("line %d has rank %d's prefix but other text" % (number, rank))
    seen[rank] = seen.get(rank, 0) + 1
if seen != {r: count for r in range(nranks)}:
    sys.exit("lines per rank: %r" % seen)
print("ok")
