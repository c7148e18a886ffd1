"""Checks a one-GPU torchrun all-reduce session (tests/gpu/run_nccl_typed_check.sh): report.json's
NCCL section and session.sqlite's stored summary hold the real log's communicator and calls, typed
by the agent and named again by the coordinator. Exit 0 when every check holds."""
import json
import os
import sqlite3
import sys


def main(session):
    failures = []

    def check(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    report = json.load(open(os.path.join(session, "report.json")))
    nccl = report.get("nccl") or {}
    comms = nccl.get("communicators") or []
    check(bool(nccl.get("version")), f"NCCL version {nccl.get('version')!r}")
    check(len(comms) >= 1, f"{len(comms)} communicator(s)")
    shapes = [s for c in comms for s in c.get("shapes", [])]
    print("shapes:", json.dumps(shapes)[:600])
    ar = [s for s in shapes if s.get("op") == "AllReduce"]
    check(bool(ar), "an AllReduce shape")
    check(all(s.get("datatype") == "ncclFloat32" for s in ar), "its data type ncclFloat32")
    check(any(s.get("bytes") == 64 << 20 for s in ar), "64 MiB calls")
    check(sum(s.get("calls", 0) for s in ar) >= 10, "at least the 10 steps' calls")
    # NCCL prints a tuning line on a communicator's rank 0, where it tunes (a one-rank
    # communicator may not): every algorithm and protocol named is one NCCL names.
    algos = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT", None}
    protos = {"LL", "LL128", "SIMPLE", None}
    check(all(s.get("algo") in algos and s.get("proto") in protos for s in shapes),
          "algorithms/protocols NCCL names: " +
          ", ".join(f"{s.get('algo')}/{s.get('proto')}" for s in shapes))
    db = sqlite3.connect(os.path.join(session, "session.sqlite"))
    rows = [json.loads(r[0]) for r in db.execute("SELECT nccl FROM rank_gpu WHERE nccl IS NOT NULL")]
    check(len(rows) == 1, f"{len(rows)} stored NCCL summary")
    if rows:
        calls = rows[0].get("calls", [])
        check(bool(calls) and all(c[2] in ("AllReduce", "Broadcast", "AllGather") for c in calls),
              f"stored calls named by NCCL op ({len(calls)})")
    print("FAILED:" if failures else "all checks hold", *failures, sep="\n  ")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
