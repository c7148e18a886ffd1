"""Checks a torchrun session's report.json (tests/gpu/run_torchrun_checks.sh): both workers
reported with collectives; for the restart case, attempt 0 kept apart with rank 1's exit code 3
and the last attempt (restart_count 1) analysed.
Usage: check_attempts.py REPORT_JSON implicit|module|restart"""
import json
import sys


def main():
    report = json.load(open(sys.argv[1]))
    case = sys.argv[2]
    ranks = report["ranks"]
    ok = True

    def check(cond, what):
        nonlocal ok
        print(("PASS " if cond else "FAIL ") + what)
        ok = ok and cond

    check(sorted(r["rank"] for r in ranks) == [0, 1], f"{case}: ranks 0 and 1 reported")
    for r in ranks:
        check(r["counts"]["collectives"] > 0, f"{case}: rank {r['rank']} has collectives")
        check(r["exit_code"] == 0, f"{case}: rank {r['rank']} exit code 0 ({r['exit_code']})")
    if case == "restart":
        check(all(r["restart_count"] == 1 for r in ranks), "restart: last attempt is restart 1")
        attempts = report.get("attempts", [])
        check(len(attempts) == 1 and attempts[0]["restart_count"] == 0,
              f"restart: attempt 0 kept apart ({[a['restart_count'] for a in attempts]})")
        if attempts:
            codes = {r["rank"]: r["exit_code"] for r in attempts[0]["ranks"]}
            check(codes.get(1) == 3, f"restart: attempt 0 rank 1 exit code 3 ({codes})")
        check(any("torchrun restarted the workers 1 time" in n for n in report["job"]["notes"]),
              "restart: the report says so")
        # The failed attempt does not make the recovered run partial.
        check(report["job"]["status"] == "complete",
              f"restart: the run is complete ({report['job']['status']})")
    else:
        check("attempts" not in report, f"{case}: no earlier attempts")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
