"""Checks a session store (session.sqlite) from a GPU run for launch records: every kernel should
point back, by CUPTI correlation id, to the API call that launched it, NCCL's kernels included
(NCCL launches through the driver API, cuLaunchKernelEx). Prints per rank: kernels, those with a
launch call, the launch calls' names, and launch latency (kernel start - call end) for NCCL and
other kernels. Exit 1 when fewer than 99% of a rank's NCCL or other kernels have their call.
usage: check_launch_records.py SESSION.sqlite
"""
import sqlite3
import statistics
import sys

db = sqlite3.connect(sys.argv[1])
names = dict(db.execute("SELECT id, name FROM gpu_names"))
ok = True
for (rank_idx,) in db.execute("SELECT DISTINCT rank_idx FROM gpu_activity ORDER BY rank_idx"):
    rows = db.execute("SELECT kind, correlation_id, start_ns, end_ns, name_id FROM gpu_activity "
                      "WHERE rank_idx = ?", (rank_idx,)).fetchall()
    calls = {c: (names.get(n, "?"), e) for k, c, s, e, n in rows if k == 5}
    api_names = {}
    for name, _ in calls.values():
        api_names[name] = api_names.get(name, 0) + 1
    print(f"rank_idx {rank_idx}: {len(calls)} API records {dict(sorted(api_names.items()))}")
    for group in ("nccl", "other"):
        kernels = [(c, s, names.get(n, "")) for k, c, s, e, n in rows if k == 1 and
                   (("nccl" in names.get(n, "")) == (group == "nccl"))]
        joined = [(s - calls[c][1], calls[c][0]) for c, s, _ in kernels if c in calls]
        lat = sorted(l for l, _ in joined)
        via = sorted({n for _, n in joined})
        frac = len(joined) / len(kernels) if kernels else 1.0
        line = f"  {group:5s} kernels {len(kernels):6d}, with their launch call {len(joined):6d}"
        if lat:
            line += (f"; launch latency median {statistics.median(lat) / 1e3:.1f} us, "
                     f"p99 {lat[int(0.99 * (len(lat) - 1))] / 1e3:.1f} us; via {via}")
        print(line)
        if kernels and frac < 0.99:
            print(f"  FAIL: {group} kernels without a launch call: {1 - frac:.1%}")
            ok = False
sys.exit(0 if ok else 1)
