"""Helpers of data-wait.test.

  noise-folder OUT --images N --side S
      OUT/train/{a,b}/<i>.jpg: N random-noise RGB JPEGs of S x S (quality
      95), slow to decode on purpose (noise compresses badly).
  check METRICS.jsonl --share-above X | --share-below X
      every logged step has 0 <= data_wait_s <= step_s, and the data wait's
      share of the total step time is above (below) X; prints the share.
"""

import argparse
import json
import os
import sys


def noise_folder(out, images, side):
    import torch
    from torchvision.io import encode_jpeg
    g = torch.Generator().manual_seed(0)
    for i in range(images):
        d = os.path.join(out, "train", "ab"[i % 2])
        os.makedirs(d, exist_ok=True)
        pixels = torch.randint(0, 256, (3, side, side), generator=g, dtype=torch.uint8)
        with open(os.path.join(d, f"{i:03d}.jpg"), "wb") as f:
            f.write(bytes(encode_jpeg(pixels, quality=95).numpy()))


def check(path, above, below):
    steps = [json.loads(l) for l in open(path) if '"step"' in l]
    if not steps:
        sys.exit(f"{path}: no step lines")
    for s in steps:
        if not 0 <= s["data_wait_s"] <= s["step_s"]:
            sys.exit(f"{path}: step {s['step']}: data_wait_s {s['data_wait_s']} is not within "
                     f"[0, step_s {s['step_s']}]")
    share = sum(s["data_wait_s"] for s in steps) / sum(s["step_s"] for s in steps)
    if above is not None and not share > above:
        sys.exit(f"{path}: data wait share {share:.3f}, expected above {above}")
    if below is not None and not share < below:
        sys.exit(f"{path}: data wait share {share:.3f}, expected below {below}")
    print(f"{len(steps)} steps, every data wait within [0, step time], share "
          f"{'above ' + str(above) if above is not None else 'below ' + str(below)}")


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    n = sub.add_parser("noise-folder")
    n.add_argument("out")
    n.add_argument("--images", type=int, default=32)
    n.add_argument("--side", type=int, default=512)
    c = sub.add_parser("check")
    c.add_argument("metrics")
    c.add_argument("--share-above", type=float)
    c.add_argument("--share-below", type=float)
    a = p.parse_args()
    if a.cmd == "noise-folder":
        noise_folder(a.out, a.images, a.side)
    else:
        check(a.metrics, a.share_above, a.share_below)


if __name__ == "__main__":
    main()
