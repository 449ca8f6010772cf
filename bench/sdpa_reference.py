#!/usr/bin/env python3
"""PyTorch's scaled_dot_product_attention on the shapes bench_kernel_gpu times, timed the same
way (warm-up calls, then REPS calls between CUDA events, median), printing the same JSON lines
(impl "torch-sdpa"). TFLOP/s counts unmasked pairs only: 4 * pairs * head_dim * heads, with
pairs = n(n+1)/2 causal and n^2 bidirectional (FlashAttention's convention); the backward (pass
"bwd": the gradients of one saved forward, torch.autograd.grad) 2.5 times that.

Usage: python3 bench/sdpa_reference.py [--seq-lens 4096,8192,16384,32768] [--heads 16]
       [--head-dim 128] [--masks causal,bidirectional] [--dtype bf16] [--warmup 5] [--reps 20]
       [--sdpa-backend auto|flash|cudnn|efficient|math] [--passes fwd,bwd]
"""
import argparse
import json
import statistics
import sys


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq-lens", default="4096,8192,16384,32768")
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--head-dim", type=int, default=128)
    parser.add_argument("--masks", default="causal,bidirectional")
    parser.add_argument("--dtype", default="bf16", choices=["bf16", "fp16"])
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--sdpa-backend", default="auto", choices=["auto", "flash", "cudnn", "efficient", "math"])
    parser.add_argument("--passes", default="fwd", help="fwd, bwd or fwd,bwd")
    args = parser.parse_args()
    passes = args.passes.split(",")
    if not passes or any(p not in ("fwd", "bwd") for p in passes):
        print(f"sdpa_reference.py: --passes {args.passes}: fwd, bwd or fwd,bwd", file=sys.stderr)
        return 2

    import torch
    import torch.nn.functional as F

    if not torch.cuda.is_available():
        print("sdpa_reference.py: no CUDA device is visible to PyTorch", file=sys.stderr)
        return 1
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    device = torch.device("cuda", 0)
    name = torch.cuda.get_device_name(device)

    def backend_scope():
        # Pins one SDPA implementation when asked; "auto" lets PyTorch choose as it does in models.
        if args.sdpa_backend == "auto":
            import contextlib
            return contextlib.nullcontext()
        from torch.nn.attention import SDPBackend, sdpa_kernel
        chosen = {
            "flash": SDPBackend.FLASH_ATTENTION,
            "cudnn": SDPBackend.CUDNN_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION,
            "math": SDPBackend.MATH,
        }[args.sdpa_backend]
        return sdpa_kernel([chosen])

    generator = torch.Generator(device=device).manual_seed(1)
    for n in (int(x) for x in args.seq_lens.split(",")):
        for mask in args.masks.split(","):
            if mask not in ("causal", "bidirectional"):
                print(f"sdpa_reference.py: --masks {mask}: causal or bidirectional", file=sys.stderr)
                return 2
            shape = (1, args.heads, n, args.head_dim)
            q, k, v = (torch.rand(shape, device=device, dtype=dtype, generator=generator) * 2 - 1 for _ in range(3))
            causal = mask == "causal"
            pairs = n * (n + 1) / 2 if causal else n * n

            def timed(call):
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                times = []
                for rep in range(-args.warmup, args.reps):
                    start.record()
                    call()
                    end.record()
                    end.synchronize()
                    if rep >= 0:
                        times.append(start.elapsed_time(end))
                return times

            for pass_name in passes:
                with backend_scope():
                    if pass_name == "fwd":
                        with torch.no_grad():
                            times = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
                    else:
                        leaves = [t.detach().requires_grad_() for t in (q, k, v)]
                        out = F.scaled_dot_product_attention(*leaves, is_causal=causal)
                        dout = torch.rand(shape, device=device, dtype=dtype, generator=generator) * 2 - 1
                        times = timed(lambda: torch.autograd.grad(out, leaves, dout, retain_graph=True))
                        del leaves, out, dout
                median = statistics.median(times)
                flops = (10.0 if pass_name == "bwd" else 4.0) * pairs * args.head_dim * args.heads
                print(json.dumps({
                    "impl": "torch-sdpa",
                    "pass": pass_name,
                    "sdpa_backend": args.sdpa_backend,
                    "torch": torch.__version__,
                    "device": name,
                    "dtype": args.dtype,
                    "seq_len": n,
                    "heads": args.heads,
                    "head_dim": args.head_dim,
                    "mask": mask,
                    "reps": args.reps,
                    "median_ms": round(median, 4),
                    "min_ms": round(min(times), 4),
                    "tflops": round(flops / (median * 1e-3) / 1e12, 2),
                }), flush=True)
            del q, k, v
    return 0


if __name__ == "__main__":
    sys.exit(main())
