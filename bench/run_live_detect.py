#!/usr/bin/env python3
"""How soon `rankscope run --live` names a rank held back from outside, and how often it names
one that is not (issue #16, "live findings"; coordinator/live_check.h).

Each case runs a real MPI program under `rankscope run --live` and plants a fault on one rank
from outside the program (tests/integration/scenarios.py) a few seconds after the launch, while
the job runs. Per run it prints when the fault was applied, when the live check named a rank
(found_s, seconds after the launch), the delay between the two, the onset it gave (began_s)
against the real one, and the cause. Clean runs print any rank named (a false finding).

usage: bench/run_live_detect.py [--runs 3] [--after 3] [--build build] [--cases lammps-quota,...]

Cases: lammps-quota (LAMMPS, rank 1 under a 20% CPU quota), lammps-competitor (rank 2 pinned
beside 3 busy processes), lammps-storage (rank 3's dump a FIFO drained at 500 KB/s: there from
the start, as the rank opens it, so "fault at" is the rank's exec), train-freeze
(mpi_train, rank 3 frozen 75 ms of every 100), lammps-clean, train-clean. Needs lammps
(scripts/install-deps.sh), root and a writable cgroup hierarchy.
"""
import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))

CASES = {
    # name: (app, steps, fault, rank)
    "lammps-quota": ("lammps", 300, "cpu_quota", 1),
    "lammps-competitor": ("lammps", 300, "competitor", 2),
    "lammps-storage": ("lammps", 300, "slow_storage", 3),
    "train-freeze": ("mpi_train", 250, "freeze", 3),
    "lammps-clean": ("lammps", 500, None, None),
    "train-clean": ("mpi_train", 300, None, None),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--after", type=float, default=3.0, help="seconds after the launch")
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--cases", default=",".join(CASES))
    args = ap.parse_args()
    os.environ["RANKSCOPE_BUILD"] = os.path.abspath(args.build)
    import scenarios  # after RANKSCOPE_BUILD is set

    print(f"{'case':18} {'run':>3} {'wall s':>7} {'fault at':>8} {'named':>6} {'delay':>6} "
          f"{'onset':>6}  ranks named (cause)")
    delays, false_names, misses = [], 0, 0
    for name in args.cases.split(","):
        app_name, steps, fault_name, rank = CASES[name]
        app = scenarios.apps()[app_name].with_steps(steps)
        for i in range(args.runs):
            fault = scenarios.make_fault(fault_name, app, rank) if fault_name else None
            try:
                r = scenarios.run(app, mode="rankscope", fault=fault, timeout=240,
                                  opts=["--live"], fault_after_s=args.after)
            except scenarios.Skip as e:
                print(f"{name:18} skipped: {e}")
                break
            report = r["report"] or {"job": {"live_findings": []}}
            live = report["job"]["live_findings"]
            applied = (r["fault"] or {}).get("applied_s")
            named = ", ".join(f"{f['rank']} ({f['cause']})" for f in live) or "-"
            hit = next((f for f in live if f["rank"] == rank), None)
            false_names += sum(f["rank"] != rank for f in live)
            cols = ["-"] * 3
            if fault_name and hit and applied is not None:
                delay = hit["found_s"] - applied
                delays.append(delay)
                cols = [f"{hit['found_s']:.1f}", f"{delay:.1f}", f"{hit['began_s'] - applied:+.1f}"]
            elif fault_name and (r["fault"] or {}).get("planted"):
                misses += 1
            at = f"{applied:.1f}" if applied is not None else "-"
            print(f"{name:18} {i + 1:>3} {r['wall_s']:>7.1f} {at:>8} {cols[0]:>6} {cols[1]:>6} "
                  f"{cols[2]:>6}  {named}  rc {r['rc']}", flush=True)
    print()
    if delays:
        print(f"planted ranks named: {len(delays)} of {len(delays) + misses}; delay from the "
              f"fault to the line: median {statistics.median(delays):.1f} s, "
              f"max {max(delays):.1f} s")
    print(f"ranks named that were not planted: {false_names}")


if __name__ == "__main__":
    main()
