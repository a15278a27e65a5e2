"""An image folder of Fashion-MNIST PNGs, PyTorch's view of it as npy arrays,
and exact comparisons of the metrics of two runs.

  write IDXDIR OUT [--train-per-class 32] [--test-per-class 8]
      OUT/images/{train,test}/<class name>/<index>.png: the first images of
      each class of IDXDIR's training and test sets (gray, 28x28), written
      with torchvision.io.write_png. Class folders carry Fashion-MNIST's
      names, whose sorted order is not the IDX label order.
  npy OUT
      OUT/npy/{train,test}_{x,y}.npy: OUT/images read back by
      torchvision.datasets.ImageFolder (sorted classes, sorted files;
      torchvision.io.read_image in gray, ToTensor's / 255): what PyTorch
      trains on when it reads the folder without augmentation.
  same A.jsonl B.jsonl
      every step's and eval loss of A equal B's as logged; exits 1 naming the
      first difference.
"""

import argparse
import gzip
import json
import os
import sys

import numpy as np

CLASSES = ["T-shirt", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
           "Bag", "Ankle boot"]


def read_idx(path):
    with gzip.open(path) if path.endswith(".gz") else open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def write(idx_dir, out, per_split):
    import torch
    from torchvision.io import write_png
    for split, prefix in (("train", "train"), ("test", "t10k")):
        images = read_idx(os.path.join(idx_dir, prefix + "-images-idx3-ubyte.gz"))
        labels = read_idx(os.path.join(idx_dir, prefix + "-labels-idx1-ubyte.gz"))
        for c, name in enumerate(CLASSES):
            folder = os.path.join(out, "images", split, name)
            os.makedirs(folder, exist_ok=True)
            for i in np.nonzero(labels == c)[0][:per_split[split]]:
                write_png(torch.from_numpy(images[i].copy()).unsqueeze(0),
                          os.path.join(folder, f"{i:05d}.png"))


def to_npy(out):
    import torch
    from torchvision.datasets import ImageFolder
    from torchvision.io import ImageReadMode, read_image
    os.makedirs(os.path.join(out, "npy"), exist_ok=True)
    for split in ("train", "test"):
        folder = ImageFolder(os.path.join(out, "images", split),
                             loader=lambda p: read_image(p, ImageReadMode.GRAY).float() / 255)
        assert folder.classes == sorted(CLASSES)
        x = torch.stack([img for img, _ in folder]).numpy().astype(np.float32)
        y = np.array(folder.targets, dtype=np.int64)
        np.save(os.path.join(out, "npy", split + "_x.npy"), x)
        np.save(os.path.join(out, "npy", split + "_y.npy"), y)


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
    for what, x, y in (("step", sa, sb), ("eval", ea, eb)):
        if len(x) != len(y):
            sys.exit(f"{what} losses: {len(x)} in {a}, {len(y)} in {b}")
        for (k, u), (_, v) in zip(x, y):
            if u != v:
                sys.exit(f"{what} {k}: loss {u} in {a}, {v} in {b}")
    print(f"{len(sa)} step losses and {len(ea)} eval losses identical")


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("idx_dir")
    w.add_argument("out")
    w.add_argument("--train-per-class", type=int, default=32)
    w.add_argument("--test-per-class", type=int, default=8)
    n = sub.add_parser("npy")
    n.add_argument("out")
    s = sub.add_parser("same")
    s.add_argument("a")
    s.add_argument("b")
    args = p.parse_args()
    if args.cmd == "write":
        write(args.idx_dir, args.out, {"train": args.train_per_class, "test": args.test_per_class})
    elif args.cmd == "npy":
        to_npy(args.out)
    else:
        same(args.a, args.b)


if __name__ == "__main__":
    main()
