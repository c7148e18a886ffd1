#!/usr/bin/env python3
"""Checks the agents' per-window GPU sums (table gpu_stats, model/gpu/gpu_stats.h) of a session
against its CUPTI records (table gpu_activity): per rank and kind of work (kernel name and stream,
runtime function, copy direction, sync type) the same count and total time (within the clock
alignment's rounding and drift), or more where the agent's buffer dropped records. Prints the rows, the records, and what each would cost on the wire.
usage: check_gpu_stats.py SESSION_DIR"""
import sqlite3
import sys
from collections import defaultdict


def main():
    db = sqlite3.connect(sys.argv[1] + "/session.sqlite")
    names = dict(db.execute("SELECT id, name FROM gpu_names"))
    dropped = dict(db.execute("SELECT idx, dropped_records FROM ranks"))

    def key(rank, kind, device, stream, sub, name_id):
        return (rank, kind, device, stream, sub, names[name_id] if kind in (1, 5) else "")

    records = defaultdict(lambda: [0, 0])
    name_bytes = 0
    n_records = 0
    for rank, kind, device, stream, copy_kind, sync_kind, start, end, name_id in db.execute(
            "SELECT rank_idx, kind, device, stream, copy_kind, sync_kind, start_ns, end_ns, name_id "
            "FROM gpu_activity"):
        sub = copy_kind if kind == 2 else sync_kind if kind == 4 else 0
        k = key(rank, kind, device, stream, sub, name_id)
        records[k][0] += 1
        records[k][1] += end - start
        name_bytes += len(names[name_id])
        n_records += 1
    sums = defaultdict(lambda: [0, 0])
    n_rows = 0
    windows = set()
    for rank, kind, device, stream, sub, name_id, count, total, start, window in db.execute(
            "SELECT rank_idx, kind, device, stream, sub_kind, name_id, count, total_ns, "
            "window_start_ns, window_ns FROM gpu_stats"):
        k = key(rank, kind, device, stream, sub, name_id)
        sums[k][0] += count
        sums[k][1] += total
        n_rows += 1
        windows.add((rank, start, window))
    bad = 0
    for k in sorted(set(records) | set(sums)):
        r, s = records.get(k, [0, 0]), sums.get(k, [0, 0])
        # The records' durations are on the coordinator's clock (each end rounded, the drift
        # applied), the rows' on the rank's: totals agree within a ns a record and 100 ppm.
        close = r[0] == s[0] and abs(r[1] - s[1]) <= r[0] + abs(r[1]) * 1e-4
        ok = close or (dropped.get(k[0], 0) > 0 and s[0] >= r[0])
        if not ok:
            bad += 1
            print(f"MISMATCH rank_idx {k[0]} kind {k[1]} stream {k[3]} {k[5][:60]!r}: "
                  f"records {r[0]} / {r[1]} ns, sums {s[0]} / {s[1]} ns")
    print(f"gpu_activity: {n_records} records ({n_records * 60 + name_bytes} bytes as sent: "
          f"about 60 per record plus its name); gpu_stats: {n_rows} rows in {len(windows)} "
          f"rank-windows; {len(records)} kinds of work; dropped {sum(dropped.values())}")
    print("check_gpu_stats: " + ("OK" if bad == 0 and n_rows > 0 else f"{bad} mismatches"))
    sys.exit(0 if bad == 0 and n_rows > 0 else 1)


if __name__ == "__main__":
    main()
