"""The training step's data wait on ResNet-18 at 2 ranks.

Trains torchvision's ResNet-18 (the zoo's export: 3x32x32 input, 10
classes), compiled with --strategy=ddp, under dtcrun --nproc-per-node=2 on
image folders of JPEGs made from Fashion-MNIST (upscaled, tinted RGB,
quality 90), with --augment=random-resized-crop,hflip and --normalize, for
each --data-workers count, and reads rank 0's --metrics: the mean wall time
of a step (step_s) and the part of it spent filling the batch (data_wait_s:
reading, decoding, augmenting, before the step's kernels), after the first
--skip steps (warm-up).
  jpeg-64    64x64 files (CIFAR-sized work per image)
  jpeg-256   256x256 files (ImageNet-sized decoding per image)

  python3 bench/data_wait.py [--build build] [--workers 1,2] [--steps 30] [--out FILE.md]
"""

import argparse
import gzip
import json
import os
import platform
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IDX = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    with gzip.open(path) as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def build_folder(root, side, count):
    """root/train/<label>/<i>.jpg: `count` Fashion-MNIST images as side x side RGB JPEGs."""
    import torch
    import torch.nn.functional as F
    from torchvision.io import encode_jpeg
    images = read_idx(os.path.join(IDX, "train-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(IDX, "train-labels-idx1-ubyte.gz"))
    tint = torch.tensor([1.0, 0.8, 0.6]).view(3, 1, 1)
    for i in range(count):
        d = os.path.join(root, "train", str(labels[i]))
        os.makedirs(d, exist_ok=True)
        x = torch.from_numpy(images[i].astype(np.float32)).view(1, 1, 28, 28)
        big = F.interpolate(x, size=(side, side), mode="bilinear", align_corners=False)[0] * tint
        data = encode_jpeg(big.clamp(0, 255).to(torch.uint8), quality=90)
        with open(os.path.join(d, f"{i:05d}.jpg"), "wb") as f:
            f.write(bytes(data.numpy()))


def run(build, program, folder, workers, steps, metrics):
    cmd = [os.path.join(build, "bin", "dtcrun"), "--nproc-per-node=2", "--master-port=0", program,
           f"--data={folder}", "--augment=random-resized-crop,hflip",
           "--normalize=0.485,0.456,0.406:0.229,0.224,0.225", f"--data-workers={workers}",
           f"--max-steps={steps}", "--log-every=1", f"--metrics={metrics}", "--quiet"]
    subprocess.run(cmd, check=True)
    return [json.loads(l) for l in open(metrics) if '"step"' in l]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--workers", default="1,2")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--skip", type=int, default=5, help="warm-up steps left out of the means")
    p.add_argument("--batch-size", type=int, default=32, help="per rank")
    p.add_argument("--out")
    args = p.parse_args()
    dtc = os.path.join(args.build, "bin", "dtc")
    if not os.path.exists(dtc):
        sys.exit(f"error: {dtc}: build dtc first (scripts/build.sh)")
    model = os.path.join(args.build, "generated-models", "resnet18.onnx")
    lines = ["| data | into | data workers per rank | step (ms) | data wait (ms) | share |",
             "|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        if not os.path.exists(model):
            model = os.path.join(tmp, "resnet18.onnx")
            subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "examples", "models",
                                                              "export_models.py"),
                            "--out", tmp, "resnet18"], check=True, stdout=subprocess.DEVNULL)
        program = os.path.join(tmp, "resnet18-ddp")
        subprocess.run([dtc, model, "--strategy=ddp", f"--batch-size={args.batch_size}",
                        "--optimizer=sgd", "--lr=0.05", "--momentum=0.9", "-o", program],
                       check=True)
        # Enough images for every step at 2 ranks, so no epoch boundary.
        count = 2 * args.batch_size * args.steps
        for name, side in (("jpeg-64", 64), ("jpeg-256", 256)):
            folder = os.path.join(tmp, name)
            build_folder(folder, side, count)
            for workers in map(int, args.workers.split(",")):
                steps = run(args.build, program, folder, workers, args.steps,
                                 os.path.join(tmp, "m.jsonl"))
                kept = steps[args.skip:]
                step = sum(s["step_s"] for s in kept) / len(kept)
                wait = sum(s["data_wait_s"] for s in kept) / len(kept)
                lines.append(f"| {name} | 3x32x32 | {workers} | {step * 1e3:.1f} | "
                             f"{wait * 1e3:.1f} | {100 * wait / step:.1f}% |")
                print(lines[-1], flush=True)
    cpu = platform.processor() or platform.machine()
    text = "\n".join(lines) + (f"\n\n(2 ranks x 1 kernel thread, batch {args.batch_size} per rank, "
                               f"steps {args.skip + 1}-{args.steps} of each run; "
                               f"{os.cpu_count()} cores, {cpu})\n")
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
