#!/usr/bin/env python3
"""Checks that a live finding captured raw GPU records around it (issue #16's flight recorder on
trigger): in a session whose agents sent compute kernels only summed after their raw budget
(--raw-gpu-records), the ranks a live finding asked (the named rank and its two neighbours,
their notices say so) hold a stretch of raw kernel records in the middle of the run, near the
time the finding was made, besides the budget's at the start and the flight recorder's at the
end; the other ranks hold only those two.

usage: check_live_capture.py SESSION_DIR   (prints what it saw; exit 1 when it does not hold)
"""
import json
import sqlite3
import sys


def clusters(starts, gap_ns=1_000_000_000):
    """Runs of sorted times with no gap over gap_ns: [(first, last, count)]."""
    out = []
    for t in sorted(starts):
        if out and t - out[-1][1] <= gap_ns:
            first, _, n = out[-1]
            out[-1] = (first, t, n + 1)
        else:
            out.append((t, t, 1))
    return out


def main(folder):
    db = sqlite3.connect(f"{folder}/session.sqlite")
    report = json.load(open(f"{folder}/report.json"))
    live = report.get("job", {}).get("live_findings", [])
    text = open(f"{folder}/report.txt").read()
    ranks = dict(db.execute("SELECT idx, rank FROM ranks"))
    index_of = {rank: idx for idx, rank in ranks.items()}
    starts = {}
    for idx, start in db.execute(
            "SELECT rank_idx, start_ns FROM gpu_activity a JOIN gpu_names n ON a.name_id = n.id "
            "WHERE a.kind = 1 AND n.name NOT LIKE '%nccl%'"):
        starts.setdefault(ranks[idx], []).append(start)
    if not starts:
        print("no compute kernel records in the session")
        return 1
    launched = int(dict(db.execute("SELECT key, value FROM meta"))["start_ns"])
    print("live findings:", [(f.get("rank"), f.get("cause"), f.get("began_s"), f.get("found_s"))
                             for f in live])
    if not live:
        print("FAIL: no live finding")
        return 1
    began, found = live[0]["began_s"], live[0]["found_s"]
    middle = {}
    for rank in sorted(starts):
        runs = [((a - launched) / 1e9, (b - launched) / 1e9, n) for a, b, n in clusters(starts[rank])]
        print(f"rank {rank}: raw compute kernels in runs (s after the launch, count): " +
              ", ".join(f"{a:.1f}-{b:.1f} ({n})" for a, b, n in runs))
        # The agents decide which records to sum 2 s behind the latest they have, and CUPTI hands
        # them its records seconds late: the capture holds what came shortly before the finding.
        captured = [(a, b) for a, b, _ in runs[1:] if began <= a <= found + 3]
        middle[rank] = bool(captured)
        for a, b in captured:  # the launch calls of that span came with its kernels
            launches = db.execute(
                "SELECT COUNT(*) FROM gpu_activity WHERE rank_idx = ? AND kind = 5 AND "
                "start_ns BETWEEN ? AND ?",
                (index_of[rank], int(a * 1e9) + launched - 50_000_000, int(b * 1e9) + launched)).fetchone()[0]
            print(f"rank {rank}: {launches} launch calls in the captured span {a:.1f}-{b:.1f} s")
    said = [line.strip() for line in text.splitlines() if "a live finding asked" in line]
    print("notices:", said[:6])
    named = live[0]["rank"]
    print(f"the finding: onset {began:.1f} s, found {found:.1f} s after the launch")
    want = set(range(max(0, named - 1), named + 2)) & set(starts)
    if len(want) < 3:  # the rank at an end of the range: its two nearest
        want = set(sorted(starts, key=lambda r: (abs(r - named), r))[:3])
    got = {r for r, m in middle.items() if m}
    print(f"named rank {named}; ranks with a captured stretch mid-run: {sorted(got)}; "
          f"expected {sorted(want)}")
    if got != want:
        print("FAIL")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
