#!/usr/bin/env python3
"""Checks one run_cupti_check.sh session: what librankscope_inject.so captured from cupti_probe
against what the probe did, and the capture's overhead. Reads WORK (probe outputs LABEL.out,
step windows LABEL.steps, bench_ipc_sink summaries LABEL.sink and GPU records LABEL.tsv, for
LABEL in bare1.., all1.., kernels1..); writes summary.txt and summary.json to RESULTS.

usage: cupti_check.py WORK RESULTS RUNS      exit status 0 when every check passes, else 1
"""
import bisect, json, os, re, statistics, sys

work, results, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])

def probe_info(label):
    info = {}
    for line in open(os.path.join(work, label + ".out")):
        if line.startswith("probe: "):
            for kv in line[7:].split():
                k, v = kv.split("=", 1)
                info[k] = v
    return info

def sink_info(label):
    text = open(os.path.join(work, label + ".sink")).read()
    m = re.search(r"(\d+) connections, (\d+) batches, (\d+) records \((\d+) ranges, (\d+) marks, "
                  r"(\d+) collectives, (\d+) p2p, (\d+) gpu\), (\d+) dropped, (\d+) bad", text)
    keys = ["connections", "batches", "records", "ranges", "marks", "collectives", "p2p", "gpu",
            "dropped", "bad"]
    out = dict(zip(keys, map(int, m.groups()))) if m else {}
    out["notices"] = [l.split("notice: ", 1)[1] for l in text.splitlines() if "notice: " in l]
    return out

def gpu_rows(label):
    rows = []
    for line in open(os.path.join(work, label + ".tsv")):
        f = line.rstrip("\n").split("\t")
        rows.append(dict(pid=int(f[0]), kind=f[1], device=int(f[2]), context=int(f[3]),
                         stream=int(f[4]), corr=int(f[5]), start=int(f[6]), end=int(f[7]),
                         bytes=int(f[8]), copy_kind=int(f[9]), sync_kind=int(f[10]),
                         tid=int(f[11]), grid=tuple(map(int, f[12:15])),
                         block=tuple(map(int, f[15:18])), name=f[18] if len(f) > 18 else ""))
    return rows

checks = []
def check(name, ok, detail):
    checks.append({"check": name, "ok": bool(ok), "detail": detail})

# ---- correctness, on the first captured run in mode "all" ----
p = probe_info("all1")
s = sink_info("all1")
rows = [r for r in gpu_rows("all1") if r["pid"] == int(p["pid"])]
steps = int(p["steps"])
step_grid, block, final_grid = int(p["step_grid"]), int(p["block"]), int(p["final_grid"])
nbytes = int(p["buffer_bytes"])
host_start, host_end = int(p["host_start"]), int(p["host_end"])
by_kind = {}
for r in rows:
    by_kind.setdefault(r["kind"], []).append(r)
counts = {k: len(v) for k, v in sorted(by_kind.items())}

check("sink: records decoded, none bad", s.get("bad", 1) == 0 and s.get("gpu", 0) == len(rows),
      f"{s}")
check("no dropped records", s.get("dropped", 1) == 0, f"dropped={s.get('dropped')}")
check("no notices from the library", not s.get("notices"), "; ".join(s.get("notices", [])))
for kind in ["kernel", "memcpy", "memset", "sync", "runtime"]:
    check(f"{kind} records arrive", counts.get(kind, 0) > 0, f"{counts.get(kind, 0)}")

kernels = by_kind.get("kernel", [])
probe_kernels = [k for k in kernels if "probe_axpy" in k["name"] or "probe_scale" in k["name"]]
names = sorted({k["name"] for k in kernels})
check("every probe kernel arrives (4 per step + 1 final)",
      len(probe_kernels) == 4 * steps + 1,
      f"{len(probe_kernels)} of {4 * steps + 1}; names: {names}")
final = [k for k in probe_kernels if k["grid"][0] == final_grid]
check("the final kernel arrives (only the exit flush can deliver it)", len(final) == 1,
      f"{len(final)} with grid {final_grid}")
check("kernel grid/block as launched",
      probe_kernels and all(k["grid"] in [(step_grid, 1, 1), (final_grid, 1, 1)] and k["block"] == (block, 1, 1)
          for k in probe_kernels), f"grids {sorted({k['grid'] for k in probe_kernels})}")
check("kernels on two streams", len({k["stream"] for k in probe_kernels}) == 2,
      f"streams {sorted({k['stream'] for k in probe_kernels})}")

copies = by_kind.get("memcpy", [])
h2d = [c for c in copies if c["copy_kind"] == 1]
d2h = [c for c in copies if c["copy_kind"] == 2]
check("2 H2D copies of 16 MiB", len(h2d) == 2 and all(c["bytes"] == nbytes for c in h2d),
      f"{[(c['copy_kind'], c['bytes']) for c in copies]}")
check("1 D2H copy of 16 MiB (at exit)", len(d2h) == 1 and d2h[0]["bytes"] == nbytes,
      f"{[(c['copy_kind'], c['bytes']) for c in d2h]}")
sets = by_kind.get("memset", [])
check("1 memset of 16 MiB", len(sets) == 1 and sets[0]["bytes"] == nbytes,
      f"{[m['bytes'] for m in sets]}")
syncs = by_kind.get("sync", [])
check("stream syncs >= 2 per step", sum(1 for x in syncs if x["sync_kind"] == 3) >= 2 * steps,
      f"{len(syncs)} sync records, kinds {sorted({x['sync_kind'] for x in syncs})}")

check("NVTX ranges arrive too (probe-setup, probe-step x steps, probe-final)",
      s.get("ranges", 0) >= steps + 2, f"{s.get('ranges', 0)} ranges")

outside = [r for r in rows if not (host_start <= r["start"] <= r["end"] <= host_end)]
check("every GPU time inside the probe's CLOCK_MONOTONIC window", rows and not outside,
      f"{len(outside)} of {len(rows)} outside [{host_start}, {host_end}]"
      + (f"; first: {outside[0]}" if outside else ""))

runtime = by_kind.get("runtime", [])
launch = {r["corr"]: r for r in runtime if "LaunchKernel" in r["name"]}
# Mode all traces the launching calls only (LaunchApis): no cudaGetDevice, cudaStreamSynchronize...
others = sorted({r["name"] for r in runtime
                 if not any(w in r["name"] for w in ("Launch", "Memcpy", "Memset"))})
check("API records are launch, copy and memset calls only", not others, f"others: {others[:8]}")
matched = [k for k in probe_kernels if k["corr"] in launch]
latency = sorted(k["start"] - launch[k["corr"]]["end"] for k in matched)
check("each kernel matches a cudaLaunchKernel runtime record by correlation id",
      probe_kernels and len(matched) == len(probe_kernels),
      f"{len(matched)} of {len(probe_kernels)}; runtime names: "
      f"{sorted({r['name'] for r in runtime})[:12]}")

# The step of a kernel is the step whose host window holds its cudaLaunchKernel call (host
# clock, by construction inside); its GPU execution must then lie inside that window as well.
windows = [tuple(map(int, l.split()[1:3])) for l in open(os.path.join(work, "all1.steps"))]
starts = [w[0] for w in windows]
step_kernels = [k for k in probe_kernels if k["grid"][0] == step_grid]
early, late, misses, unplaced = [], [], 0, 0
for k in step_kernels:
    call = launch.get(k["corr"])
    i = bisect.bisect_right(starts, call["start"]) - 1 if call else -1
    if i < 0 or call["end"] > windows[i][1]:
        unplaced += 1
        continue
    w0, w1 = windows[i]
    early.append(k["start"] - w0)  # >= 0 when the kernel starts after its step began
    late.append(w1 - k["end"])     # >= 0 when it ends before its step's host window closed
    if k["start"] < w0 or k["end"] > w1:
        misses += 1
check("every step kernel inside its step's host window",
      step_kernels and misses == 0 and unplaced == 0,
      f"{misses} of {len(step_kernels)} outside, {unplaced} without a launch in a step; "
      f"min(start - step start) = {min(early, default=0) / 1e3:.1f} us, "
      f"min(step end - end) = {min(late, default=0) / 1e3:.1f} us")
tids = {r["tid"] for r in runtime}
tid_note = ("CUPTI threadId == gettid()" if tids == {int(p["tid"])} else
            f"CUPTI threadIds {sorted(tids)[:4]} vs gettid {p['tid']}")

# ---- overhead ----
def loop_ms(prefix):
    return [int(probe_info(f"{prefix}{i}")["loop_ns"]) / 1e6 for i in range(1, runs + 1)]
def wall_ms(prefix):
    return [int(probe_info(f"{prefix}{i}")["wall_ns"]) / 1e6 for i in range(1, runs + 1)]
modes = ["bare", "all", "kernels", "nvtx"]
loops = {m: loop_ms(m) for m in modes}
walls = {m: wall_ms(m) for m in modes}
overhead = {
    "step_loop_ms_median": {m: statistics.median(loops[m]) for m in modes},
    "process_wall_ms_median": {m: statistics.median(walls[m]) for m in modes},
    "step_loop_ms_runs": loops,
}
ratio = {m: overhead["step_loop_ms_median"][m] / overhead["step_loop_ms_median"]["bare"]
         for m in modes[1:]}
kernels_mode = [r for r in gpu_rows("kernels1")]
check("kernels mode sends kernels only",
      kernels_mode and all(r["kind"] == "kernel" for r in kernels_mode),
      f"{sorted({r['kind'] for r in kernels_mode})}")

# ---- exit() from a second thread: the last kernel and copy still arrive ----
if os.path.exists(os.path.join(work, "threadexit1.tsv")):
    tp, ts = probe_info("threadexit1"), sink_info("threadexit1")
    trows = [r for r in gpu_rows("threadexit1") if r["pid"] == int(tp["pid"])]
    tfinal = [r for r in trows if r["kind"] == "kernel" and r["grid"][0] == final_grid]
    td2h = [r for r in trows if r["kind"] == "memcpy" and r["copy_kind"] == 2]
    tkernels = sum(1 for r in trows if r["kind"] == "kernel")
    check("exit() from a second thread: every kernel and the D2H copy arrive, none dropped",
          len(tfinal) == 1 and len(td2h) == 1 and tkernels == 4 * steps + 1
          and ts.get("dropped", 1) == 0,
          f"{tkernels} kernels, final {len(tfinal)}, D2H {len(td2h)}, "
          f"dropped {ts.get('dropped')}")

summary = {
    "steps": steps, "counts": counts, "kernel_names": names, "sink": s,
    "launch_latency_us": ({"median": latency[len(latency) // 2] / 1e3,
                           "p99": latency[int(len(latency) * 0.99)] / 1e3,
                           "min": latency[0] / 1e3} if latency else None),
    "runtime_tid": tid_note,
    "overhead": overhead,
    "overhead_ratio": ratio,
    "checks": checks,
}
with open(os.path.join(results, "summary.json"), "w") as f:
    json.dump(summary, f, indent=2)
lines = [f"CUPTI capture check: probe with {steps} steps x 4 kernels on 2 streams"]
lines.append(f"records (first captured run): {counts}")
for c in checks:
    lines.append(f"  [{'PASS' if c['ok'] else 'FAIL'}] {c['check']}: {c['detail']}")
if latency:
    lines.append(f"launch latency (kernel start - cudaLaunchKernel end): median "
                 f"{summary['launch_latency_us']['median']:.1f} us, p99 "
                 f"{summary['launch_latency_us']['p99']:.1f} us")
lines.append(f"runtime tid: {tid_note}")
med = overhead["step_loop_ms_median"]
lines.append(f"step loop ({steps} steps), median of {runs}: bare {med['bare']:.1f} ms; "
             + "; ".join(f"{m} {med[m]:.1f} ms (x{ratio[m]:.3f})" for m in modes[1:])
             + "   [all/kernels: CUPTI mode + NVTX injection; nvtx: NVTX injection alone]")
wm = overhead["process_wall_ms_median"]
lines.append("process wall, median: " + ", ".join(f"{m} {wm[m]:.0f} ms" for m in modes))
failed = [c for c in checks if not c["ok"]]
lines.append("RESULT: " + ("PASS" if not failed else f"FAIL ({len(failed)} checks)"))
open(os.path.join(results, "summary.txt"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
sys.exit(1 if failed else 0)
