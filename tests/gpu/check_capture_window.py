#!/usr/bin/env python3
"""Checks a session captured with a GPU capture window (rankscope run --capture-steps /
--capture-every): on every rank, every captured kernel ran inside one of the expected steps
(NVTX ranges named 'step', counted from 0), and every expected step has kernels.

usage: check_capture_window.py SESSION_DIR STEP[,STEP...] [--slack-ms 1]
"""
import argparse
import sqlite3
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("session")
    p.add_argument("steps", help="comma-separated step indices that should have GPU activity")
    p.add_argument("--slack-ms", type=float, default=1.0)
    a = p.parse_args()
    wanted = sorted(int(s) for s in a.steps.split(","))
    db = sqlite3.connect(a.session + "/session.sqlite")
    ranks = [r for (r,) in db.execute("SELECT idx FROM ranks ORDER BY idx")]
    slack = int(a.slack_ms * 1e6)
    failures = 0
    for idx in ranks:
        steps = db.execute("SELECT start_ns, end_ns FROM ranges WHERE rank_idx = ? AND "
                           "name = 'step' ORDER BY start_ns", (idx,)).fetchall()
        kernels = [t for (t,) in db.execute("SELECT start_ns FROM gpu_activity WHERE "
                                            "rank_idx = ? AND kind = 1", (idx,))]
        windows = [steps[s] for s in wanted if s < len(steps)]
        outside = [t for t in kernels
                   if not any(s - slack <= t <= e + slack for s, e in windows)]
        per_step = [sum(1 for t in kernels if s <= t <= e) for s, e in windows]
        empty = [wanted[i] for i, n in enumerate(per_step) if n == 0]
        ok = kernels and not outside and not empty and len(windows) == len(wanted)
        failures += not ok
        print("rank_idx %d: %d steps, %d kernels, per captured step %s, outside %d, "
              "captured steps without kernels %s: %s"
              % (idx, len(steps), len(kernels), per_step, len(outside), empty,
                 "ok" if ok else "FAIL"))
    marks = db.execute("SELECT COUNT(*) FROM marks WHERE domain = 'rankscope'").fetchone()[0]
    print("capture on/off marks: %d" % marks)
    return 1 if failures or not ranks else 0


if __name__ == "__main__":
    sys.exit(main())
