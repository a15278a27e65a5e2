#!/usr/bin/env python3
"""What one GPU's libraries achieve, for the cluster model's device rates
(clusters/h100-sxm-8x.json takes its GEMM, convolution and memory rates
from this script's run on an H200): bf16 and fp32 GEMMs by size and
at GPT shapes (Megatron's GPT-3 175B layers with --tp=8), ResNet-50's
convolutions at batch 64 (forward + both backward passes; NCHW and
channels-last; cuDNN benchmark mode), a 2 GiB device copy, and an eager
PyTorch launch of a tiny kernel. Timed with CUDA events, best of 3.

Run on the device:  python3 bench/gpu_calibrate.py
"""
import time, torch
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = True
dev = "cuda"
def bench(fn, reps=20):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    best = 1e9
    for _ in range(3):
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(reps): fn()
        e.record(); torch.cuda.synchronize()
        best = min(best, s.elapsed_time(e) / 1e3 / reps)
    return best
print(torch.cuda.get_device_name(0), torch.__version__, "cuDNN", torch.backends.cudnn.version())
for dt in [torch.bfloat16, torch.float32]:
    for n in [128, 256, 512, 1024, 2048, 4096, 8192]:
        a = torch.randn(n, n, device=dev, dtype=dt); b = torch.randn(n, n, device=dev, dtype=dt)
        t = bench(lambda: a @ b)
        print(f"gemm {str(dt)[6:]} {n}^3: {2*n**3/t/1e12:.1f} TFLOP/s ({t*1e6:.1f} us)")
# GPT shapes: tokens x hidden x out (Megatron GPT-3 175B, h=12288, tp=8, 2048 tokens per micro-batch)
for m, k, n, what in [(2048, 12288, 4608, "175B qkv tp8"), (2048, 1536, 12288, "175B proj tp8"),
                      (2048, 12288, 6144, "175B fc1 tp8"), (2048, 6144, 12288, "175B fc2 tp8"),
                      (8192, 4096, 4096, "h4096 square"), (4096, 2048, 8192, "1.3B fc1 b2")]:
    a = torch.randn(m, k, device=dev, dtype=torch.bfloat16); b = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
    t = bench(lambda: a @ b)
    print(f"gemm bf16 {what} [{m}x{k}]x[{k}x{n}]: {2*m*k*n/t/1e12:.1f} TFLOP/s")
# ResNet-50 convolutions at batch 64 (forward, input grad, weight grad)
shapes = [(3, 64, 224, 7, 2), (64, 64, 56, 1, 1), (64, 64, 56, 3, 1), (64, 256, 56, 1, 1), (256, 128, 56, 1, 1),
          (128, 128, 28, 3, 1), (128, 512, 28, 1, 1), (256, 256, 14, 3, 1), (256, 1024, 14, 1, 1), (512, 512, 7, 3, 1),
          (512, 2048, 7, 1, 1)]
for fmt in [torch.contiguous_format, torch.channels_last]:
    for dt in [torch.bfloat16, torch.float32]:
        tot_flops = tot_t = 0
        for c, k, hw, r, st in shapes:
            x = torch.randn(64, c, hw, hw, device=dev, dtype=dt).to(memory_format=fmt).requires_grad_()
            conv = torch.nn.Conv2d(c, k, r, st, r // 2, bias=False).to(dev, dt).to(memory_format=fmt)
            y = conv(x); g = torch.randn_like(y)
            t = bench(lambda: torch.autograd.grad(conv(x), [x, conv.weight], g), reps=5)
            fl = 3 * 2 * y.numel() * c * r * r
            tot_flops += fl; tot_t += t
        print(f"conv resnet50 layers {str(dt)[6:]} {'NHWC' if fmt == torch.channels_last else 'NCHW'}: {tot_flops/tot_t/1e12:.1f} TFLOP/s fwd+bwd")
x = torch.empty(2 << 30, dtype=torch.uint8, device=dev); y = torch.empty_like(x)
t = bench(lambda: y.copy_(x), reps=5)
print(f"copy 2 GiB: {2*x.numel()/t/1e12:.2f} TB/s read+write")
z = torch.zeros(1, device=dev)
t = bench(lambda: z.add_(1), reps=2000)
print(f"tiny kernel: {t*1e6:.2f} us per launch (eager PyTorch)")
