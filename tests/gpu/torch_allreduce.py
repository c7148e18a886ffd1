"""A small PyTorch training-like loop for the GPU machine: per step an NVTX 'data' range (host
work, optionally slowed on one rank), a 'compute' range (matmuls on the GPU) and an all-reduce
through NCCL. Launch with torchrun (one process per GPU):
  torchrun --nproc_per_node=2 --no-python python3 tests/gpu/torch_allreduce.py --steps 40
Options: --steps N, --sleep-rank R --sleep-ms M (host sleep before compute on rank R),
--slow-gpu-rank R --extra-matmuls K (K more matmuls per step on rank R: GPU work, the host
launches on time),
--mib M (all-reduce size), --dim D (the matmuls' size, default 4096), --small-ops N (N tiny
element-wise kernels per step besides the
matmuls, to make the loop launch-bound like many real models), --print-step-times,
--fail-rank R --fail-step K (rank R exits with code 3 at step K in torchrun's first attempt only,
TORCHELASTIC_RESTART_COUNT=0: with --max-restarts 1 the second attempt runs through).
"""
import argparse
import faulthandler
import os
import statistics
import time

import torch
import torch.distributed as dist


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--sleep-rank", type=int, default=-1)
    p.add_argument("--sleep-ms", type=float, default=20.0)
    p.add_argument("--mib", type=float, default=64.0)
    p.add_argument("--print-step-times", action="store_true")
    p.add_argument("--small-ops", type=int, default=0)
    p.add_argument("--dim", type=int, default=4096)
    p.add_argument("--slow-gpu-rank", type=int, default=-1)
    p.add_argument("--extra-matmuls", type=int, default=4)
    p.add_argument("--fail-rank", type=int, default=-1)
    p.add_argument("--fail-step", type=int, default=5)
    p.add_argument("--torch-profiler", action="store_true",
                   help="run the loop under torch.profiler with CUDA activities (for comparison)")
    p.add_argument("--hang-dump-s", type=float, default=0,
                   help="dump every thread's Python stack and exit if still running after this")
    args = p.parse_args()
    if args.hang_dump_s > 0:
        faulthandler.dump_traceback_later(args.hang_dump_s, exit=True)

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    a = torch.randn(args.dim, args.dim, device="cuda")
    small = torch.zeros(4096, device="cuda")
    grad = torch.ones(int(args.mib * (1 << 20) // 4), device="cuda")
    times = []
    profiler = None
    if args.torch_profiler:
        profiler = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
        profiler.__enter__()
    first_attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0"
    for step in range(args.steps):
        if rank == args.fail_rank and step == args.fail_step and first_attempt:
            print(f"torch_allreduce: rank {rank} failing at step {step} (--fail-rank)", flush=True)
            os._exit(3)
        t0 = time.perf_counter()
        torch.cuda.nvtx.range_push("step")
        torch.cuda.nvtx.range_push("data")
        batch = torch.randn(args.dim, args.dim, device="cuda")
        torch.cuda.nvtx.range_pop()
        if rank == args.sleep_rank:
            time.sleep(args.sleep_ms / 1000.0)
        torch.cuda.nvtx.range_push("compute")
        matmuls = 4 + (args.extra_matmuls if rank == args.slow_gpu_rank else 0)
        for _ in range(matmuls):
            batch = torch.mm(a, batch)
        for _ in range(args.small_ops):
            small.add_(1.0)
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_push("allreduce")
        dist.all_reduce(grad)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_pop()
        times.append(time.perf_counter() - t0)
    if profiler is not None:
        profiler.__exit__(None, None, None)
    if rank == 0:
        steady = times[len(times) // 4:]
        print(f"torch_allreduce: {args.steps} steps, world {dist.get_world_size()}, "
              f"median step {statistics.median(steady) * 1e3:.3f} ms", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
