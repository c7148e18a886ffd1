"""Checks one session of tests/gpu/run_ncu_rank_check.sh: SESSION_DIR VARIANT.

heavy:     a straggler on rank 1 naming heavy_stencil, its next steps include `rankscope run
           --ncu-rank 1 --ncu-kernel heavy_stencil`.
heavy-ncu: rank1_kernel.ncu-rep in the folder, tool_reports with heavy_stencil analysed, the
           straggler on rank 1 carrying heavy_stencil's verdict and marked under_tool ncu.
clean-ncu: a tool report for rank 0; any finding is information marked under_tool ncu (ncu slows
           rank 0 all through the run: its start-up, launch interception and replay).
"""
import json
import os
import sys

folder, variant = sys.argv[1], sys.argv[2]
report = json.load(open(os.path.join(folder, "report.json")))
findings = report.get("findings", [])
tools = report.get("tool_reports", [])
problems = []
for f in findings:
    e = f.get("evidence", {})
    print(f"  {variant}: {f['severity']} {f['kind']} ranks {f['ranks']} confidence {f['confidence']:.2f} "
          f"cost {f['cost_ns'] / 1e9:.2f} s under_tool {e.get('under_tool')}")
    for v in e.get("kernel_verdicts", []):
        print(f"    kernel (ncu): {v['kernel']}: {v['bound']} ({v['why']}); {v['top_stall']}")
    for step in f.get("next_steps", [])[:3]:
        print(f"    next: {step['command'][:160]}")
if not findings:
    print(f"  {variant}: no findings")
for t in tools:
    print(f"  {variant}: tool report rank {t['rank']} {t['tool']} {t['path']} error {t['error']}")
    for k in t["kernels"]:
        print(f"    {k['kernel'][:60]}: {k['bound']} ({k['why']}); SM {k['sm_throughput_pct']:.1f} % "
              f"memory {k['memory_throughput_pct']:.1f} %")

stragglers = [f for f in findings if f["kind"] == "straggler" and f["ranks"] == [1]]
if variant == "heavy":
    if not stragglers or "heavy_stencil" not in json.dumps(stragglers[0]):
        problems.append("no straggler on rank 1 naming heavy_stencil")
    elif not any("--ncu-rank 1 --ncu-kernel heavy_stencil" in s["command"]
                 for s in stragglers[0]["next_steps"]):
        problems.append("the next steps do not run ncu on rank 1 through rankscope")
elif variant == "heavy-ncu":
    if not os.path.exists(os.path.join(folder, "rank1_kernel.ncu-rep")):
        problems.append("no rank1_kernel.ncu-rep in the session folder")
    if [t["rank"] for t in tools] != [1] or not tools[0]["kernels"]:
        problems.append(f"tool_reports: {tools}")
    elif "heavy_stencil" not in tools[0]["kernels"][0]["kernel"]:
        problems.append("ncu profiled another kernel: " + tools[0]["kernels"][0]["kernel"])
    if not stragglers:
        problems.append("no straggler on rank 1")
    else:
        e = stragglers[0]["evidence"]
        if [v["kernel"] for v in e.get("kernel_verdicts", [])] != ["heavy_stencil"]:
            problems.append(f"kernel_verdicts: {e.get('kernel_verdicts')}")
        if e.get("under_tool") != "ncu":
            problems.append("not marked under_tool ncu")
        if stragglers[0]["severity"] != "info":
            problems.append("a finding on the rank ncu slowed is not information")
elif variant == "clean-ncu":
    if [t["rank"] for t in tools] != [0] or not tools[0]["kernels"]:
        problems.append(f"tool_reports: {tools}")
    # ncu slows rank 0 all through the run: whatever is found on it is said as the tool's.
    for f in findings:
        if f["severity"] != "info" or f["evidence"].get("under_tool") != "ncu":
            problems.append(f"a {f['severity']} {f['kind']} on ranks {f['ranks']} in a clean run")
print(f"ncu rank check {variant}:", "OK" if not problems else "FAILED " + "; ".join(problems))
sys.exit(1 if problems else 0)
