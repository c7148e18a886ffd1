#!/usr/bin/env python3
"""Checks the agents' per-window GPU sums (table gpu_stats, model/gpu/gpu_stats.h) of a session
against its CUPTI records (table gpu_activity): per rank and kind of work (kernel name and stream,
runtime function, copy direction, sync type) the same count and total time (within the clock
alignment's rounding and drift), or more where the agent's buffer dropped records; and the
launch latencies report.json gives (from the agents' per-window histograms, table launch_latency)
against those of the records (kernel start less its launch call's end, by correlation id): the
same number of kernels, median and p99 within 1 %; and the kernel time per name between
collectives (table kernel_pieces) against the records clipped to each gap the straggler analysis
reads (from a rank's latest collective exit to a call's enter), within the alignment's rounding.
Prints the rows, the records, and what each would cost on the wire.
usage: check_gpu_stats.py SESSION_DIR"""
import bisect
import json
import sqlite3
import sys
from collections import defaultdict


def quantile(values, q):
    """core/robust_stats' Quantile: interpolated between the order statistics around q."""
    values = sorted(values)
    pos = q * (len(values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


def check_launch_latency(db, session_dir):
    """Mismatches between report.json's launch latency per rank and the records'."""
    if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'launch_latency'").fetchone():
        print("launch_latency: no table (an older rankscope)")
        return 1
    rank_of = dict(db.execute("SELECT idx, rank FROM ranks"))
    launch_end = defaultdict(dict)
    kernels = defaultdict(list)
    for idx, kind, corr, start, end in db.execute(
            "SELECT rank_idx, kind, correlation_id, start_ns, end_ns FROM gpu_activity "
            "WHERE correlation_id != 0 ORDER BY rowid"):
        if kind == 5:
            launch_end[idx].setdefault(corr, end)
        elif kind == 1:
            kernels[idx].append((corr, start))
    n_rows = db.execute("SELECT COUNT(DISTINCT rank_idx || '-' || row) FROM launch_latency").fetchone()[0]
    with open(session_dir + "/report.json") as f:
        report = json.load(f)
    by_rank = {r.get("rank"): r.get("gpu") or {} for r in report.get("ranks", [])}
    bad = 0
    for idx, ks in sorted(kernels.items()):
        lat = [s - launch_end[idx][c] for c, s in ks if c in launch_end[idx]]
        if not lat:
            continue
        got = by_rank.get(rank_of[idx], {}).get("launch_latency") or {}
        want = (len(lat), quantile(lat, 0.5), quantile(lat, 0.99))
        have = (got.get("samples"), got.get("median_ns"), got.get("p99_ns"))
        ok = have[0] == want[0] and all(
            h is not None and abs(h - w) <= 0.01 * abs(w) + 1 for h, w in zip(have[1:], want[1:]))
        print(f"launch latency rank {rank_of[idx]}: records {want[0]} kernels, median "
              f"{want[1]:.0f} ns, p99 {want[2]:.0f} ns; report {have}" + ("" if ok else "  MISMATCH"))
        bad += 0 if ok else 1
    print(f"launch_latency: {n_rows} rows")
    return bad


def check_kernel_pieces(db, names):
    """Mismatches between each collective gap's kernel time per name from the pieces and from
    the records (non-NCCL kernels clipped to the gap)."""
    if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'kernel_pieces'").fetchone():
        print("kernel_pieces: no table (an older rankscope)")
        return 1
    pieces = defaultdict(list)
    for idx, f, t, name_id, time in db.execute(
            "SELECT rank_idx, from_ns, to_ns, name_id, time_ns FROM kernel_pieces ORDER BY rowid"):
        pieces[idx].append((f, t, names[name_id], time))
    kernels = defaultdict(list)
    for idx, start, end, name_id in db.execute(
            "SELECT rank_idx, start_ns, end_ns, name_id FROM gpu_activity WHERE kind = 1"):
        if "nccl" not in names[name_id].lower() and end > start:
            kernels[idx].append((start, end, names[name_id]))
    calls = defaultdict(list)
    for idx, enter, exit_ in db.execute("SELECT rank_idx, enter_ns, exit_ns FROM collectives"):
        calls[idx].append((enter, exit_))
    bad = gaps = with_kernels = 0
    for idx, cs in calls.items():
        exits = sorted(x for _, x in cs)
        ks = sorted(kernels[idx])
        starts = [k[0] for k in ks]
        longest = max((e - s for s, e, _ in ks), default=0)
        ps = sorted(pieces[idx])
        froms = [p[0] for p in ps]
        for enter, _ in cs:
            i = bisect.bisect_left(exits, enter)
            if i == 0:
                continue
            begin = exits[i - 1]
            want = defaultdict(int)
            count = 0
            for s, e, n in ks[bisect.bisect_left(starts, begin - longest):
                              bisect.bisect_left(starts, enter)]:
                d = min(e, enter) - max(s, begin)
                if d > 0:
                    want[n] += d
                    count += 1
            got = defaultdict(int)
            for f, t, n, time in ps[bisect.bisect_left(froms, begin):bisect.bisect_left(froms, enter)]:
                if t <= enter:
                    got[n] += time
            gaps += 1
            with_kernels += bool(want)
            for n in set(want) | set(got):
                if abs(want[n] - got[n]) > 2 * count + want[n] * 1e-4:
                    bad += 1
                    print(f"kernel pieces MISMATCH rank_idx {idx} gap [{begin}, {enter}) {n[:50]!r}: "
                          f"records {want[n]} ns, pieces {got[n]} ns")
    rows = sum(len(p) for p in pieces.values())
    print(f"kernel_pieces: {rows} rows; {gaps} collective gaps ({with_kernels} with kernels) "
          f"checked, {bad} mismatches")
    return bad


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
    bad += check_launch_latency(db, sys.argv[1])
    bad += check_kernel_pieces(db, names)
    print(f"gpu_activity: {n_records} records ({n_records * 60 + name_bytes} bytes as sent: "
          f"about 60 per record plus its name); gpu_stats: {n_rows} rows in {len(windows)} "
          f"rank-windows; {len(records)} kinds of work; dropped {sum(dropped.values())}")
    print("check_gpu_stats: " + ("OK" if bad == 0 and n_rows > 0 else f"{bad} mismatches"))
    sys.exit(0 if bad == 0 and n_rows > 0 else 1)


if __name__ == "__main__":
    main()
