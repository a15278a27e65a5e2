"""Image-folder loading speed: images/s decoded and transformed, per thread.

Builds two folders from Fashion-MNIST (Debian's dataset-fashion-mnist) and
times build/runtime/test-runtime/dtcrt_image_loader_bench (bench/
image_loader.cpp: the training program's batch filling on a Decoded column)
on them with 1..N decoding threads:
  fmnist-png   28x28 gray PNGs (the demo's data), into 1x28x28, as they
               are and with random-resized-crop,hflip;
  jpeg-256     256x256 RGB JPEGs (quality 90; Fashion-MNIST images
               upscaled and tinted), into 3x224x224 with
               random-resized-crop,hflip: ImageNet-sized work per image.

  python3 bench/image_loader.py [--build build | --tool BIN] [--threads 1,2] [--out FILE.md]
"""

import argparse
import gzip
import os
import platform
import subprocess
import sys
import tempfile

import numpy as np

IDX = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    with gzip.open(path) as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def build_folders(root, n_png, n_jpeg):
    import torch
    import torch.nn.functional as F
    from torchvision.io import encode_jpeg, write_png
    images = read_idx(os.path.join(IDX, "train-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(IDX, "train-labels-idx1-ubyte.gz"))
    for i in range(n_png):
        d = os.path.join(root, "fmnist-png", "train", str(labels[i]))
        os.makedirs(d, exist_ok=True)
        write_png(torch.from_numpy(images[i].copy()).unsqueeze(0), os.path.join(d, f"{i:05d}.png"))
    tint = torch.tensor([1.0, 0.8, 0.6]).view(3, 1, 1)
    for i in range(n_jpeg):
        d = os.path.join(root, "jpeg-256", "train", str(labels[i]))
        os.makedirs(d, exist_ok=True)
        x = torch.from_numpy(images[i].astype(np.float32)).view(1, 1, 28, 28)
        big = F.interpolate(x, size=(256, 256), mode="bilinear", align_corners=False)[0] * tint
        data = encode_jpeg(big.clamp(0, 255).to(torch.uint8), quality=90)
        with open(os.path.join(d, f"{i:05d}.jpg"), "wb") as f:
            f.write(bytes(data.numpy()))


def run(tool, folder, chw, batch, batches, workers, augment):
    cmd = [tool, folder, *map(str, chw), str(batch), str(batches), str(workers)]
    if augment:
        cmd.append(augment)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.split()
    return float(out[5]), float(out[7])


def torchvision_rate(folder, chw, images, augment):
    """images/s of torchvision on one thread: torchvision.io.read_image and
    the tensor transforms (RandomResizedCrop with antialias, as PIL), the
    work one DataLoader worker does per sample."""
    import time
    import torch
    import torchvision.transforms as T
    from torchvision.datasets import ImageFolder
    from torchvision.io import ImageReadMode, read_image
    torch.set_num_threads(1)
    mode = ImageReadMode.GRAY if chw[0] == 1 else ImageReadMode.RGB
    steps = [T.RandomResizedCrop(chw[1:], antialias=True), T.RandomHorizontalFlip()] if augment else []
    tf = T.Compose(steps + [T.ConvertImageDtype(torch.float32)])
    ds = ImageFolder(folder, loader=lambda p: read_image(p, mode), transform=tf)
    t0 = time.perf_counter()
    for i in range(images):
        ds[i % len(ds)]
    return images / (time.perf_counter() - t0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default="build")
    p.add_argument("--tool", help="the dtcrt_image_loader_bench binary (default: under --build)")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--out")
    args = p.parse_args()
    tool = args.tool or os.path.join(args.build, "runtime", "test-runtime",
                                     "dtcrt_image_loader_bench")
    if not os.path.exists(tool):
        sys.exit(f"error: {tool}: build it first (cmake --build {args.build} "
                 "--target dtcrt_image_loader_bench)")
    cases = [("fmnist-png", (1, 28, 28), 64, 1000, ""),
             ("fmnist-png", (1, 28, 28), 64, 1000, "random-resized-crop,hflip"),
             ("jpeg-256", (3, 224, 224), 32, 100, "random-resized-crop,hflip")]
    lines = ["| data | into | augment | threads | images/s | images/s per thread |",
             "|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as root:
        build_folders(root, 4000, 640)
        for name, chw, batch, batches, augment in cases:
            for workers in map(int, args.threads.split(",")):
                total, per = run(tool, os.path.join(root, name), chw, batch, batches, workers,
                                 augment)
                lines.append(f"| {name} | {'x'.join(map(str, chw))} | {augment or 'none'} | "
                             f"{workers} | {total:.0f} | {per:.0f} |")
                print(lines[-1], flush=True)
            rate = torchvision_rate(os.path.join(root, name, "train"), chw,
                                    min(batch * batches, 4000), augment)
            lines.append(f"| {name} | {'x'.join(map(str, chw))} | {augment or 'none'} | "
                         f"torchvision, 1 | {rate:.0f} | {rate:.0f} |")
            print(lines[-1], flush=True)
    cpu = platform.processor() or platform.machine()
    text = "\n".join(lines) + f"\n\n({os.cpu_count()} cores, {cpu})\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
