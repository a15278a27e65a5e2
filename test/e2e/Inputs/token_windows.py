"""Token files and the same windows as npy arrays, and an exact comparison
of the losses two runs logged.

  write OUT [--windows 80] [--seq 16] [--vocab 96] [--extra 5] [--seed 0]
      OUT/bin/train.bin, OUT/bin/val.bin  uint16 token ids (numpy .tofile)
      OUT/bin32/train.bin, val.bin        the same ids as uint32
      OUT/npy/{train,test}_{x,y}.npy      the windows the runtime cuts from
                                          them, as int64 arrays
    A file holds windows*seq + 1 + extra ids (extra < seq: a partial last
    window the runtime must drop). Window i is ids[i*seq : i*seq+seq], its
    labels ids[i*seq+1 : i*seq+seq+1] (the next tokens).
  same A.jsonl B.jsonl
      every step's loss and every eval loss of A equal B's, as logged
      (%.9g: a float32 loss prints exactly); exits 1 naming the first
      difference.
"""

import json
import os
import sys

import numpy as np


def windows(ids, seq):
    n = (len(ids) - 1) // seq
    x = np.stack([ids[i * seq:i * seq + seq] for i in range(n)]).astype(np.int64)
    y = np.stack([ids[i * seq + 1:i * seq + seq + 1] for i in range(n)]).astype(np.int64)
    return x, y


def write(out, n_windows, seq, vocab, extra, seed):
    assert 0 <= extra < seq
    rng = np.random.default_rng(seed)
    splits = {name: rng.integers(0, vocab, size=n_windows * seq + 1 + extra)
              for name in ("train", "val")}
    for d in ("bin", "bin32", "npy"):
        os.makedirs(os.path.join(out, d), exist_ok=True)
    for name, ids in splits.items():
        ids.astype(np.uint16).tofile(os.path.join(out, "bin", name + ".bin"))
        ids.astype(np.uint32).tofile(os.path.join(out, "bin32", name + ".bin"))
        x, y = windows(ids, seq)
        assert len(x) == n_windows
        prefix = "train" if name == "train" else "test"
        np.save(os.path.join(out, "npy", prefix + "_x.npy"), x)
        np.save(os.path.join(out, "npy", prefix + "_y.npy"), y)


def losses(path):
    steps, evals = [], []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if "loss" in r:
                steps.append((r["step"], repr(r["loss"])))
            if "eval_loss" in r:
                evals.append((r["epoch"], repr(r["eval_loss"])))
    return steps, evals


def same(a, b):
    sa, ea = losses(a)
    sb, eb = losses(b)
    for what, la, lb in (("step", sa, sb), ("eval after epoch", ea, eb)):
        if len(la) != len(lb):
            print(f"{a} logged {len(la)} {what} losses, {b} {len(lb)}")
            return 1
        for (ka, va), (kb, vb) in zip(la, lb):
            if ka != kb or va != vb:
                print(f"{what} {ka}: loss {va} in {a}, {what} {kb}: loss {vb} in {b}")
                return 1
    print(f"{len(sa)} step losses and {len(ea)} eval losses identical")
    return 0


def main(argv):
    if len(argv) >= 2 and argv[0] == "write":
        import argparse
        p = argparse.ArgumentParser()
        p.add_argument("out")
        p.add_argument("--windows", type=int, default=80)
        p.add_argument("--seq", type=int, default=16)
        p.add_argument("--vocab", type=int, default=96)
        p.add_argument("--extra", type=int, default=5)
        p.add_argument("--seed", type=int, default=0)
        a = p.parse_args(argv[1:])
        write(a.out, a.windows, a.seq, a.vocab, a.extra, a.seed)
        return 0
    if len(argv) == 3 and argv[0] == "same":
        return same(argv[1], argv[2])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
