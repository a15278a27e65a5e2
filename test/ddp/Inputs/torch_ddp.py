#!/usr/bin/python3
"""PyTorch DistributedDataParallel reference for dtc's data-parallel tests.

Launches --world-size processes on this machine (subprocesses of this script
with RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT in their environment, as
torchrun would), each of which:

  1. joins torch.distributed.init_process_group("gloo") (env://);
  2. builds the PyTorch module and loads the ONNX initializers into it, with
     the e2e reference's functions (test/e2e/Inputs/torch_reference.py,
     imported by path: the same model class, strict name check, data reader
     and optimizer construction as the single-process tests);
  3. wraps it in DistributedDataParallel (which broadcasts rank 0's weights
     and averages the gradients over the ranks in buckets);
  4. reads the training set through DistributedSampler(shuffle=False) and a
     DataLoader with --batch-size per rank and drop_last, so rank r sees
     samples r, r+W, r+2W, ... in groups of B: what a dtc program started on
     W ranks with --shuffle=false reads;
  5. trains --steps steps (float32, one thread, oneDNN off as in the e2e
     reference) and all-reduces every step's loss, divided by W: the loss a
     dtc program logs on rank 0 (the mean over ranks).

Rank 0 then compares with what dtc wrote: --losses M.jsonl (every step, relative
to the reference loss) and --weights S.onnx (every tensor, relative to its
largest magnitude), with the e2e reference's check functions, and reports one
line per check.  Exit status: 0 when every check passes, 1 on a mismatch, and
non-zero when a rank fails or the job takes longer than --timeout seconds.
"""

import argparse
import importlib.util
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
E2E_REFERENCE = os.path.join(HERE, "..", "..", "e2e", "Inputs", "torch_reference.py")


def import_reference():
    spec = importlib.util.spec_from_file_location("torch_reference", E2E_REFERENCE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parse_args(argv):
    p = argparse.ArgumentParser(description="PyTorch DDP reference for dtc's data-parallel tests.")
    p.add_argument("--model", required=True)
    p.add_argument("--onnx", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--batch-size", type=int, default=64, help="per rank")
    p.add_argument("--world-size", type=int, default=2)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--master-port", type=int, default=0, help="0 (default): a free port of this machine")
    p.add_argument("--timeout", type=float, default=100.0, help="seconds for the whole job")
    p.add_argument("--optimizer", choices=["sgd", "adam", "adamw"], default="sgd")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--momentum", type=float, default=0.0)
    p.add_argument("--dampening", type=float, default=0.0)
    p.add_argument("--nesterov", action="store_true")
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--betas", default="0.9,0.999")
    p.add_argument("--eps", type=float, default=1e-8)
    p.add_argument("--losses", metavar="METRICS.jsonl")
    p.add_argument("--loss-rtol", type=float, default=1e-5)
    p.add_argument("--weights", metavar="SAVED.onnx")
    p.add_argument("--weight-rtol", type=float, default=1e-5)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def launch(argv, args):
    """Start the ranks, wait for all of them; the first failure stops the rest."""
    procs = []
    if args.master_port == 0:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            args.master_port = s.getsockname()[1]
    for rank in range(args.world_size):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(args.world_size),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.master_port),
                   OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker"] + argv, env=env))
    deadline = time.monotonic() + args.timeout
    status = 0
    while procs:
        for p in list(procs):
            rc = p.poll()
            if rc is None:
                continue
            procs.remove(p)
            if rc != 0 and status == 0:
                status = rc if rc > 0 else 128 - rc
                print(f"torch_ddp: a rank exited with status {rc}; stopping the others", file=sys.stderr)
                for q in procs:
                    q.kill()
        if procs and time.monotonic() > deadline:
            print(f"torch_ddp: the job took longer than {args.timeout:g} s; stopping it", file=sys.stderr)
            for q in procs:
                q.kill()
            return 124
        time.sleep(0.05)
    return status


def worker(args):
    import numpy as np
    import onnx
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data import DataLoader, TensorDataset
    from torch.utils.data.distributed import DistributedSampler

    ref = import_reference()
    torch.set_num_threads(1)
    torch.backends.mkldnn.enabled = False  # see torch_reference.run()
    torch.manual_seed(0)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()

    models = ref.import_export_models(ref.DEFAULT_EXPORT_SCRIPT)
    spec = models.MODELS[args.model]
    module = spec.make_model().float()
    ref.load_onnx_weights(module, ref.onnx_weights(onnx.load(args.onnx)))
    model = DistributedDataParallel(module)

    x, y = ref.load_training_set(args.data, tuple(spec.make_input().shape[1:]))
    dataset = TensorDataset(torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(np.ascontiguousarray(y)))
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=False)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, drop_last=True)
    optimizer = ref.make_optimizer(args, model.parameters())
    model.train()

    losses, step = [], 0
    while step < args.steps:
        for xb, yb in loader:
            optimizer.zero_grad(set_to_none=True)
            loss = ref.loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
            mean = loss.detach().clone()
            dist.all_reduce(mean)  # sum over ranks
            losses.append((mean / world).item())
            step += 1
            if step == args.steps:
                break
    dist.barrier()
    status = 0
    if rank == 0:
        print(f"torch ddp: {args.model}, {world} ranks x batch {args.batch_size}, {args.steps} steps of "
              f"{args.optimizer} lr {args.lr:g}, losses {losses[0]:.6f} .. {losses[-1]:.6f}")
        try:
            if args.losses:
                ref.check_losses(args.losses, losses, args.loss_rtol)
            if args.weights:
                saved = ref.onnx_weights(onnx.load(args.weights))
                ref.check_weights("weights", saved, module.state_dict(), sorted(saved), args.weight_rtol)
            print("OK")
        except ref.Mismatch as e:
            print(f"MISMATCH: {e}")
            status = 1
        sys.stdout.flush()
    dist.destroy_process_group()
    return status


def main(argv):
    args = parse_args(argv)
    if args.worker:
        return worker(args)
    return launch(argv, args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
