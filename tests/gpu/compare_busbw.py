#!/usr/bin/env python3
"""Compares the NCCL bus bandwidth rankscope derived (report.json nccl shapes, from CUPTI kernel
times of NCCL calls joined with NCCL's log) with nccl_allreduce's own CUDA-event timing (its
--json: a loop of calls queued back to back, time per call = elapsed / calls, nccl-tests' way).

Like for like is rankscope's `stream_busbw_gbps` (kernel end to kernel end of consecutive calls,
so NCCL's per-call GPU overhead between kernels counts, as in the benchmark's loop). The kernel
busbw (`busbw_gbps`, the bus time alone) and the per-call gap are shown beside it.

usage: compare_busbw.py REPORT_JSON BENCH_JSON [--min-bytes N] [--tolerance 0.10]
Exits 1 when a size >= --min-bytes is missing from the report or differs by more than the
tolerance (relative to the benchmark's figure).
"""
import argparse
import json
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("report")
    p.add_argument("bench")
    p.add_argument("--min-bytes", type=int, default=1 << 20)
    p.add_argument("--tolerance", type=float, default=0.10)
    a = p.parse_args()
    report = json.load(open(a.report))
    bench = json.load(open(a.bench))
    nccl = report.get("nccl") or {}
    ours = {}  # bytes -> shape
    for comm in nccl.get("communicators", []):
        if comm.get("nranks") != bench["nranks"]:
            continue
        for shape in comm.get("shapes", []):
            if shape["op"] == "AllReduce" and shape.get("stream_busbw_gbps") is not None:
                ours[shape["bytes"]] = shape
    failures = 0
    print("%12s %11s %11s %8s %11s %8s %5s  %s" % ("bytes", "bench GB/s", "rankscope", "diff",
                                                   "kernel GB/s", "gap us", "n", "algo/proto"))
    for r in bench["results"]:
        size, theirs = r["bytes"], r["busbw_gbps"]
        checked = size >= a.min_bytes
        shape = ours.get(size)
        if shape is None:
            print("%12d %11.2f %11s %8s %11s %8s %5s  %s" % (size, theirs, "-", "-", "-", "-", "-",
                                                           "MISSING" if checked else ""))
            failures += checked
            continue
        bw = shape["stream_busbw_gbps"]
        diff = (bw - theirs) / theirs if theirs > 0 else float("inf")
        bad = checked and abs(diff) > a.tolerance
        failures += bad
        print("%12d %11.2f %11.2f %+7.1f%% %11.2f %8.2f %5d  %s/%s%s" % (
            size, theirs, bw, 100 * diff, shape["busbw_gbps"], shape["gap_us"],
            shape["back_to_back_instances"], shape["algo"], shape["proto"],
            "  OUT OF TOLERANCE" if bad else ""))
    checked = sum(1 for r in bench["results"] if r["bytes"] >= a.min_bytes)
    print("%d sizes >= %d B checked, %d outside +-%.0f%%" % (checked, a.min_bytes, failures,
                                                         100 * a.tolerance))
    return 1 if failures or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
