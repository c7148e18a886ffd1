"""Checks trace.json of a session over the default event budget against the same session
written with --full-trace: the default one keeps whole steps (every kept step's kernels from its
first to its last), at most 100,000 events, names the kept steps in its metadata and in report.txt,
and parses; prints sizes and bytes per event of both.
usage: check_trace_sample.py SAMPLED_DIR FULL_DIR
"""
import json
import os
import sys

BUDGET = 100_000


def load(path):
    with open(path) as f:
        return json.load(f)


def events(trace):
    return [e for e in trace["traceEvents"] if e.get("ph") in ("X", "i", "I")]


sampled_dir, full_dir = sys.argv[1], sys.argv[2]
sampled = load(os.path.join(sampled_dir, "trace.json"))
full = load(os.path.join(full_dir, "trace.json"))
ok = True
n_s, n_f = len(events(sampled)), len(events(full))
b_s = os.path.getsize(os.path.join(sampled_dir, "trace.json"))
b_f = os.path.getsize(os.path.join(full_dir, "trace.json"))
print(f"full: {n_f} events, {b_f / 1e6:.1f} MB, {b_f / max(n_f, 1):.0f} B/event")
print(f"sampled: {n_s} events, {b_s / 1e6:.1f} MB, {b_s / max(n_s, 1):.0f} B/event")
window = sampled.get("metadata", {}).get("window")
print("window:", json.dumps({k: v for k, v in (window or {}).items() if k != "steps_kept"}))
if n_f <= BUDGET:
    print(f"FAIL: the session has only {n_f} events; the budget never applied")
    ok = False
if not window or not window.get("steps_kept"):
    print("FAIL: no kept steps in the metadata")
    ok = False
else:
    kept = window["steps_kept"]
    print(f"kept {len(kept)} of {window.get('steps_total')} steps: {kept[:5]} ... {kept[-3:]}")
    if window.get("events_kept", 0) > BUDGET or n_s > BUDGET * 1.01:
        print(f"FAIL: {n_s} events written, {window.get('events_kept')} kept, over the budget")
        ok = False
    # 300 steps ran; a few step ranges can be lost when the agent's buffers fill (report.txt says
    # so), so most of them, not all, must be there.
    if len(kept) < 3 or window.get("steps_total", 0) < 250:
        print("FAIL: expected at least 3 kept of about 300 steps")
        ok = False
    # Whole steps: each kept step's NVTX "step" slice is in the trace, and every kernel the full
    # trace has inside that slice's span is in the sampled trace too.
    steps_full = sorted((e["ts"], e["ts"] + e["dur"]) for e in events(full)
                        if e.get("name") == "step" and e.get("ph") == "X")
    kernels_full = [e for e in events(full) if e.get("cat") == "cuda_kernel"]
    kernels_sampled = {(e["ts"], e.get("name")) for e in events(sampled) if e.get("cat") == "cuda_kernel"}
    missing = 0
    for k in kept[1:4]:
        a, b = steps_full[k]
        inside = [e for e in kernels_full if a <= e["ts"] and e["ts"] + e.get("dur", 0) <= b]
        missing += sum((e["ts"], e.get("name")) not in kernels_sampled for e in inside)
        print(f"step {k}: {len(inside)} kernels in the full trace")
    if missing:
        print(f"FAIL: {missing} kernels of kept steps missing from the sampled trace")
        ok = False
report = open(os.path.join(sampled_dir, "report.txt")).read()
if "trace.json holds" not in report:
    print("FAIL: report.txt does not say what trace.json holds")
    ok = False
print("OK" if ok else "FAILED")
sys.exit(0 if ok else 1)
