#!/usr/bin/env python3
"""Checks that the ranks of a pipeline hold only their stage's state.

Reads the {"rank_memory": [...]} line of two --metrics files: a pipeline's
(one entry per rank) and a ddp run's of the same model (every rank holds
the whole state). Each pipeline rank must plan at most --max-fraction of
the whole state and have about that much resident; together the stages
plan at least the whole (every param lives on some stage). Prints one line
per rank, and exits 1 with the reason when a check fails.
"""
import argparse
import json
import sys


def rank_memory(path):
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            if "rank_memory" in record:
                return record["rank_memory"]
    sys.exit(f"{path}: no rank_memory line")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pipeline", required=True)
    parser.add_argument("--whole", required=True)
    parser.add_argument("--max-fraction", type=float, default=0.6)
    args = parser.parse_args()
    pipe = rank_memory(args.pipeline)
    whole = rank_memory(args.whole)[0]["state_bytes"]
    failed = []
    for r in pipe:
        planned, resident = r["state_bytes"], r["state_resident_bytes"]
        print(f"rank {r['rank']}: planned {planned / whole:.2f} of the whole state, "
              f"resident {resident / whole:.2f}")
        if planned > args.max_fraction * whole:
            failed.append(f"rank {r['rank']} plans {planned} bytes of the whole {whole}")
        # mincore counts pages: allow a page's rounding either way.
        if resident > planned + 8192 or resident < 0.9 * planned:
            failed.append(f"rank {r['rank']} has {resident} bytes resident, planned {planned}")
    if sum(r["state_bytes"] for r in pipe) < whole:
        failed.append("the stages together plan less than the whole state")
    for f in failed:
        print("FAIL:", f)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
