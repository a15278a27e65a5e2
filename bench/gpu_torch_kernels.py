#!/usr/bin/env python3
"""PyTorch's own CUDA kernels for ResNet-50 training (bench/gpu_throughput.py's
model, batch 64, SGD with momentum), bf16 autocast and fp32: torch.profiler's
kernel table of 2 steps after 8 warm-up steps, the slowest first. The
counterpart of a dtc program's --profile on the same GPU.

Run on the device:  python3 bench/gpu_torch_kernels.py > kernels.txt
"""
import importlib.util, os, sys, torch
from torch.profiler import profile, ProfilerActivity
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
spec = importlib.util.spec_from_file_location("m", os.path.join(ROOT, "examples/models/export_models.py"))
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
for prec in ["bf16", "fp32"]:
    torch.manual_seed(0)
    model = m.MODELS["resnet50"].make_model().cuda().train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.rand(64, 3, 224, 224, device="cuda"); y = torch.randint(0, 10, (64,), device="cuda")
    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=prec == "bf16"):
            loss = torch.nn.functional.cross_entropy(model(x).float(), y)
        loss.backward(); opt.step()
    for _ in range(8): step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(2): step()
        torch.cuda.synchronize()
    print(f"===== PyTorch ResNet-50 {prec}, 2 steps")
    print(p.key_averages().table(sort_by="self_cuda_time_total", row_limit=45, max_name_column_width=110))
