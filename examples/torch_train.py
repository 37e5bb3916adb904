#!/usr/bin/env python3
"""A small PyTorch data-parallel training loop for scripts/gpu-check.

Each step (an NVTX range ``ProfilerStep#N``, which cutrace's shim records
and torch.profiler names the same way): a forward pass of an MLP, the
backward pass, one NCCL all-reduce per gradient (a one-rank process group
when only one GPU or one process is available), an SGD step, and a
synchronisation. Shapes are fixed so every steady step launches the same
kernels.

usage: torch_train.py [--steps N] [--profile TRACE.json]
  --profile runs the same loop under torch.profiler (CPU and CUDA
  activities) and writes its Chrome trace to TRACE.json.
"""
import argparse
import os
import socket

import torch
import torch.distributed as dist
import torch.nn as nn


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--profile", default=None)
    args = ap.parse_args()

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(free_port()))
    dist.init_process_group("nccl", rank=0, world_size=1)
    torch.manual_seed(0)
    dev = torch.device("cuda", 0)
    model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(256, 1024, device=dev)

    def step(i):
        torch.cuda.nvtx.range_push(f"ProfilerStep#{i}")
        loss = model(x).square().mean()
        opt.zero_grad(set_to_none=False)
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        opt.step()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()

    if args.profile:
        acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=acts) as prof:
            for i in range(args.steps):
                step(i)
                prof.step()
        prof.export_chrome_trace(args.profile)
    else:
        for i in range(args.steps):
            step(i)
    dist.destroy_process_group()
    print(f"torch_train: {args.steps} steps done")


if __name__ == "__main__":
    main()
