#!/usr/bin/env python3
"""Holds a GPU sweep's figures (report.json of `rankscope sweep`) against what the GPUs can do.

Ranges are per GPU model, from the part's specification: a figure outside them means the check
measures wrongly (or the GPU is sick), either way something to look at. Prints one line per
figure and exits 1 when a figure is missing or out of range.
"""
import json
import sys

GB = 1e9
TB = 1e12
# model -> check -> (lowest plausible, highest plausible)
RANGES = {
    "NVIDIA H200": {
        # HBM3e 4.8 TB/s peak; a copy reads and writes, counted both.
        "gpu.d2d_bandwidth": (3.0 * TB, 4.8 * TB),
        # PCIe gen 5 x16: 64 GB/s raw per direction.
        "gpu.h2d_bandwidth": (25 * GB, 64 * GB),
        "gpu.d2h_bandwidth": (25 * GB, 64 * GB),
        # 132 SMs x 128 FP32 lanes x 2 flops x up to 1.98 GHz = 67 TFLOP/s.
        "gpu.fp32_flops": (35 * TB, 67.5 * TB),
        # NVLink 4 between two GPUs (18 links, 450 GB/s each way).
        "gpu.nccl_allreduce_busbw": (150 * GB, 450 * GB),
    },
}
HEALTH_ZERO = ["gpu.xid_events", "gpu.nvlinks_down", "gpu.row_remap_failed",
               "gpu.ecc_uncorrected_volatile", "gpu.pcie_lanes_below_max"]


def main(path):
    report = json.load(open(path))
    bad = 0
    for node in report["nodes"]:
        checks = node.get("checks", [])
        gpus = sorted({c["subject"] for c in checks if c["subject"].startswith("gpu")})
        models = {c.get("model") for c in checks if c.get("model")}
        print(f"node {node['node']}: {node['status']}, GPUs {gpus}, models {sorted(models)}")
        for c in checks:
            shown = c.get("value", c.get("error"))
            print(f"  {c['name']:32} {c['subject']:6} {shown!s:>22} {c['unit']:17} "
                  f"{c['status']:5} {c.get('detail', '')[:70]}")
            if "error" in c and c["name"].startswith("gpu."):
                print(f"BAD: {c['name']} {c['subject']}: {c['error']}")
                bad += 1
        for model in models:
            for name, (low, high) in RANGES.get(model, {}).items():
                subjects = ["node"] if name == "gpu.nccl_allreduce_busbw" else gpus
                for subject in subjects:
                    found = [c for c in checks if c["name"] == name and c["subject"] == subject]
                    if not found or "value" not in found[0]:
                        print(f"BAD: {name} {subject}: missing")
                        bad += 1
                        continue
                    v = found[0]["value"]
                    ok = low <= v <= high
                    print(f"{'ok' if ok else 'BAD'}: {name} {subject} = {v:.4g} "
                          f"(plausible {low:.3g}..{high:.3g})")
                    bad += not ok
        for name in HEALTH_ZERO:
            for c in checks:
                if c["name"] == name and c.get("value", 0) != 0:
                    print(f"BAD: {name} {c['subject']} = {c['value']}: {c.get('detail')}")
                    bad += 1
        if not gpus:
            print("BAD: no GPU figures")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
