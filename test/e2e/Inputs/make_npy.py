#!/usr/bin/python3
"""Write deterministic npy training sets for dtc's end-to-end tests.

dtc's programs read ``DIR/train_x.npy`` and ``DIR/train_y.npy`` (C order,
first axis = sample).  Two kinds of set:

  images  x float32 [N, *shape] ~ N(0, 1), y int64 [N] uniform in [0, classes)
  tokens  a random int64 sequence of length T+1 per sample in [0, vocab):
          x = seq[:, :T] (the model's tokens), y = seq[:, 1:] (the next tokens);
          with --classes K, y is one int64 class per sample in [0, K) instead

Usage:
  make_npy.py images --out DIR [--n 640] [--shape 3,32,32] [--classes 10] [--seed 0]
  make_npy.py tokens --out DIR [--n 80] [--seq 16] [--vocab 96] [--classes K] [--seed 0]
"""

import argparse
import os
import sys

import numpy as np


def make_images(n, shape, classes, rng):
    x = rng.standard_normal((n, *shape), dtype=np.float32)
    y = rng.integers(0, classes, size=n, dtype=np.int64)
    return x, y


def make_tokens(n, seq, vocab, classes, rng):
    tokens = rng.integers(0, vocab, size=(n, seq + 1), dtype=np.int64)
    if classes:
        return np.ascontiguousarray(tokens[:, :-1]), rng.integers(0, classes, size=n, dtype=np.int64)
    return np.ascontiguousarray(tokens[:, :-1]), np.ascontiguousarray(tokens[:, 1:])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="kind", required=True)
    images = sub.add_parser("images", help="float32 images, int64 class labels")
    images.add_argument("--n", type=int, default=640)
    images.add_argument("--shape", default="3,32,32", help="per-sample shape")
    images.add_argument("--classes", type=int, default=10)
    tokens = sub.add_parser("tokens", help="int64 tokens, int64 next tokens")
    tokens.add_argument("--n", type=int, default=80)
    tokens.add_argument("--seq", type=int, default=16)
    tokens.add_argument("--vocab", type=int, default=96)
    tokens.add_argument("--classes", type=int, default=0,
                        help="one class label per sample (a classifier) instead of next tokens")
    for p in (images, tokens):
        p.add_argument("--out", required=True, help="output directory")
        p.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    if args.kind == "images":
        shape = tuple(int(d) for d in args.shape.split(","))
        x, y = make_images(args.n, shape, args.classes, rng)
    else:
        x, y = make_tokens(args.n, args.seq, args.vocab, args.classes, rng)
    os.makedirs(args.out, exist_ok=True)
    np.save(os.path.join(args.out, "train_x.npy"), x)
    np.save(os.path.join(args.out, "train_y.npy"), y)
    return 0


if __name__ == "__main__":
    sys.exit(main())
