"""Checks tests/gpu/run_planner_ring_checks.sh's sessions.
- straggler/: a straggler finding on rank 1 whose cause is its GPU work, with the kernels that
  grew; its next steps: nsys with the CUDA trace, an ncu -k regex naming a real kernel (not the
  KERNEL placeholder) and a `rankscope advise ... --rank 1` that runs and looks at rank 1.
- p2p/ and shm/: every NCCL shape's busbw and, from the ring findings if any, the ceiling; over
  NVLink a healthy run must give no ring finding. Over SHM the figures are printed for the
  record (the SHM fraction of 0.25 is NVIDIA's figure, not measured before).
usage: check_planner_ring.py RANKSCOPE SESSIONS_DIR
"""
import json
import os
import re
import shlex
import subprocess
import sys

rankscope, root = sys.argv[1], sys.argv[2]
ok = True


def report(name):
    with open(os.path.join(root, name, "report.json")) as f:
        return json.load(f)


r = report("straggler")
stragglers = [f for f in r["findings"] if f["kind"] == "straggler"]
print("straggler findings:", [(f["ranks"], f["evidence"].get("cause_kind")) for f in stragglers])
if not stragglers or stragglers[0]["ranks"] != [1]:
    print("FAIL: no straggler finding on rank 1")
    ok = False
else:
    f = stragglers[0]
    print("summary:", f["summary"][:400])
    print("kernels:", [k["kernel"][:80] for k in f["evidence"].get("kernels", [])])
    for step in f["next_steps"]:
        print(f"  [{step['tool']}] {step['command'][:220]}")
    ncu = [s for s in f["next_steps"] if s["tool"] == "ncu"]
    if f["evidence"].get("cause_kind") in ("gpu_kernels", "gpu_queue"):
        m = re.search(r"regex:([^ ']+)", ncu[0]["command"]) if ncu else None
        if not m or m.group(1) == "KERNEL":
            print("FAIL: the ncu step names no kernel")
            ok = False
        else:
            print("ncu -k regex:", m.group(1))
    else:
        print("FAIL: the straggler's cause is not its GPU work:", f["evidence"].get("cause_kind"))
        ok = False
    advise = shlex.split(f["next_steps"][-1]["command"])
    chain = subprocess.run([rankscope] + advise[1:], capture_output=True, text=True, timeout=120)
    print("advise chain exit", chain.returncode, "|", chain.stdout.splitlines()[:1])
    if chain.returncode != 0 or "looking at rank 1" not in chain.stdout:
        print("FAIL: the advise step does not answer for rank 1")
        ok = False

for variant in ("p2p", "shm"):
    r = report(variant)
    rings = [f for f in r["findings"] if f["kind"] in ("imbalanced_ring", "below_link_ceiling")]
    print(f"{variant}: findings {[f['kind'] for f in r['findings']]}")
    for comm in r.get("nccl", {}).get("communicators", []):
        for s in comm["shapes"]:
            if s["bytes"] >= 16 << 20:
                print(f"  {s['op']} {s['bytes'] >> 20} MiB busbw {s.get('busbw_gbps')} GB/s")
    for f in rings:
        e = f["evidence"]
        print(f"  {f['kind']}: {e.get('busbw_gbps')} GB/s of {e.get('ceiling_busbw_gbps')} "
              f"({e.get('limiting_link', {}).get('link')}): {f['summary'][:300]}")
    if variant == "p2p" and rings:
        print("FAIL: a healthy NVLink run gave a ring finding")
        ok = False
print("OK" if ok else "FAILED")
sys.exit(0 if ok else 1)
