#!/usr/bin/env python3
"""Scenario matrix: real MPI apps x {clean, each fault planted from outside on 2 ranks}.

For each app (tests/integration/scenarios.py: LAMMPS, HPCC, mpi_train) it runs
  - bare clean runs (--clean-runs, default 3; the median is the reference time),
  - for each fault and planted rank: a bare run (slowdown = wall / clean median) and a run under
    `rankscope run -o DIR -- mpirun ...` (what rankscope's report.json says),
  - a clean run under rankscope (any finding there is a false positive),
and prints and writes a markdown table with precision/recall. A planted rank counts as found
when a finding of kind straggler/late_sender/late_receiver names exactly that rank.

Examples:
  scripts/scenario-matrix.py                          # everything (~5 min on 2 cores)
  scripts/scenario-matrix.py --apps lammps --faults cpu_quota --ranks 1
  scripts/scenario-matrix.py --no-bare                # only rankscope runs (re-check analysis)
  scripts/scenario-matrix.py --set cpu_quota.fraction=0.3 --set slow_storage.rate=300000
  scripts/scenario-matrix.py --profile --apps lammps  # MPI call profile per rank (ltrace)
Exit code: 0 when every run ran (skips allowed), 1 when a run failed or timed out,
2 with --require-recall X / --require-precision X when the figures fall below.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import scenarios  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--apps", default="", help="comma list (default: all available)")
    p.add_argument("--faults", default="", help="comma list overriding each app's default faults")
    p.add_argument("--ranks", default="",
                   help="comma list of planted ranks (default: 1 and np-1; 0 and 1 at np 2)")
    p.add_argument("--np", type=int, default=0,
                   help="ranks per app instead of its own (4); 2 puts one rank on each core here")
    p.add_argument("--clean-runs", type=int, default=3, help="bare clean runs per app")
    p.add_argument("--repeat", type=int, default=1, help="bare runs per fault x rank")
    p.add_argument("--no-bare", action="store_true", help="skip the bare faulted runs")
    p.add_argument("--no-rankscope", action="store_true", help="skip the rankscope runs")
    p.add_argument("--set", action="append", default=[], metavar="FAULT.PARAM=VALUE",
                   help="fault parameter, e.g. cpu_quota.fraction=0.3 (repeatable)")
    p.add_argument("--timeout", type=float, default=0, help="per-run timeout (s; default app's)")
    p.add_argument("--out", default=os.path.join(ROOT, "out-scenarios"),
                   help="folder for matrix.md, matrix.json and kept rankscope sessions")
    p.add_argument("--keep-sessions", action="store_true",
                   help="keep every rankscope session folder under --out")
    p.add_argument("--profile", action="store_true",
                   help="only the MPI call profile of each app (ltrace), no matrix")
    p.add_argument("--docs", default="", metavar="FILE",
                   help="also write the precision/recall and per-found-rank tables into FILE "
                        "between its <!-- scenario-matrix:begin/end --> lines (with --np N, "
                        "between <!-- scenario-matrix:begin np N --> and its end line)")
    p.add_argument("--require-recall", type=float, default=None)
    p.add_argument("--require-precision", type=float, default=None)
    return p.parse_args()


def fault_params(sets):
    params = {}
    for item in sets:
        key, _, value = item.partition("=")
        fault, _, param = key.partition(".")
        if fault not in scenarios.FAULTS or not param or not value:
            sys.exit(f"--set {item}: want FAULT.PARAM=VALUE with FAULT in "
                     f"{', '.join(scenarios.FAULTS)}")
        try:
            value = float(value) if "." in value or "e" in value else int(value)
        except ValueError:
            pass
        params.setdefault(fault, {})[param] = value
    return params


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def short_findings(report):
    if report is None:
        return "(no report.json)"
    fs = report.get("findings", [])
    if not fs:
        return "none"
    return "; ".join(f"{f.get('kind')}{f.get('ranks')}" for f in fs)


def fmt(x, spec=".2f"):
    return "–" if x is None else format(x, spec)


def found_row(app, scenario, rank, report, rs_clean, bare_clean, clean_report):
    """A found rank's row: its finding's kind, cause and confidence, the job's wall and the
    what-if, against the clean run under rankscope (the same overhead: what the what-if models)
    and the bare clean run; and how far the fault reached the other ranks: the longest time
    outside MPI of any other rank against the clean run's median (the what-if keeps the others'
    work as it was)."""
    f = next(f for f in report.get("findings", [])
             if f.get("kind") in scenarios.STRAGGLER_KINDS and f.get("ranks") == [rank])
    ev = f.get("evidence") or {}
    wi = ev.get("what_if") or {}
    job = wi.get("job_ns", 0) * 1e-9 or None
    what_if = scenarios.what_if_seconds(wi) if wi else None
    cause = f"{ev.get('cause_kind', '-')}/{ev.get('cpu_cause', '-')}"
    ratio = (lambda ref: f"{what_if / ref:.2f}x" if what_if and ref else "–")
    others = scenarios.outside_mpi_seconds(report, rank, max)
    clean_others = scenarios.outside_mpi_seconds(clean_report)
    return [app, scenario, f"{f['kind']} {f['ranks']}", cause, fmt(f.get("confidence")),
            fmt(job), fmt(what_if), fmt(rs_clean), fmt(bare_clean), ratio(rs_clean),
            ratio(bare_clean),
            f"{others / clean_others:.2f}x" if others and clean_others else "–"]


def write_docs(path, text, region=""):
    """Replaces what lies between `<!-- scenario-matrix:begin[ region] -->` and the next
    `<!-- scenario-matrix:end[ region] -->` in `path` with `text`."""
    suffix = f" {region}" if region else ""
    begin_mark = f"<!-- scenario-matrix:begin{suffix} -->"
    end_mark = f"<!-- scenario-matrix:end{suffix} -->"
    with open(path) as f:
        doc = f.read()
    begin = doc.find(begin_mark)
    end = doc.find(end_mark, begin + 1)
    if begin < 0 or end < begin:
        sys.exit(f"{path}: no {begin_mark} ... {end_mark} lines to write between")
    doc = doc[:begin + len(begin_mark)] + "\n" + text + "\n" + doc[end:]
    with open(path, "w") as f:
        f.write(doc)


def run_one(app, mode, fault, timeout, out_dir=None):
    try:
        r = scenarios.run(app, mode=mode, fault=fault, timeout=timeout or None, out_dir=out_dir)
    except scenarios.Skip as e:
        return {"app": app.name, "mode": mode, "skipped": str(e)}
    except Exception as e:  # noqa: BLE001 - one broken run must not stop the matrix
        return {"app": app.name, "mode": mode, "error": repr(e)}
    if r.get("timed_out") or r.get("rc") != 0:
        log(f"[{app.name}] {mode} run {'timed out' if r.get('timed_out') else 'rc=%s' % r.get('rc')}"
            f"; stderr tail:\n{r.get('stderr_tail', '')[-800:]}")
    return r


def run_failed(r):
    return "error" in r or r.get("timed_out") or (r.get("rc") not in (0, None))


def profile(apps, out):
    lines = ["# MPI call profile (ltrace -c -x 'MPI_*@libmpi.so*', calls per rank)", ""]
    for app in apps:
        log(f"[profile] {app.name} ...")
        t0 = time.monotonic()
        try:
            prof = scenarios.profile_mpi_calls(app)
        except scenarios.Skip as e:
            lines += [f"## {app.name}", "", f"skipped: {e}", ""]
            continue
        fns = sorted({fn for calls in prof.values() for fn in calls},
                     key=lambda fn: -sum(c.get(fn, 0) for c in prof.values()))
        ranks = sorted(prof)
        lines += [f"## {app.name} (`{' '.join(app.profile_argv)}`, np {app.np}, "
                  f"{time.monotonic() - t0:.0f} s under ltrace)", "",
                  "| function | " + " | ".join(f"rank {r}" for r in ranks) + " |",
                  "|---|" + "---:|" * len(ranks)]
        for fn in fns:
            lines.append(f"| {fn} | " + " | ".join(str(prof[r].get(fn, 0)) for r in ranks) + " |")
        lines.append("")
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(out, "mpi-profile.md"), "w") as f:
        f.write(text + "\n")
    return 0


def warn_slow_mpi_startup():
    """Every run's wall holds MPI's start-up: say so when it is slow (Open MPI's PMIx retries a
    stopped munged for about 2 s before it gives up on munge), since it dilutes the slowdowns
    and the what-if ratios alike."""
    start = time.monotonic()
    try:
        subprocess.run(scenarios.mpirun(1, ["true"]), env=scenarios.mpi_env(), timeout=30,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return
    took = time.monotonic() - start
    if took > 1.0:
        log(f"warning: `mpirun -np 1 true` takes {took:.1f} s here; if munged died and left its "
            f"socket behind, PMIx retries it on every start-up (start it: mkdir -p "
            f"/run/munge && munged --force)")


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    # SIGTERM (a CI timeout) unwinds like Ctrl-C, so every fault's cleanup runs.
    def on_term(*_):
        raise KeyboardInterrupt()
    signal.signal(signal.SIGTERM, on_term)
    params = fault_params(args.set)
    all_apps = scenarios.apps()
    names = [a for a in args.apps.split(",") if a] or list(all_apps)
    for n in names:
        if n not in all_apps:
            sys.exit(f"unknown app {n} (have {', '.join(all_apps)})")
    apps = [all_apps[n] for n in names]
    if args.profile:
        return profile(apps, args.out)
    warn_slow_mpi_startup()

    results = []
    md = ["# Scenario matrix", "",
          f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, rankscope "
          f"{scenarios.RANKSCOPE if os.path.exists(scenarios.RANKSCOPE) else '(not built)'}", ""]
    totals = {"planted": 0, "found": 0, "wrong": 0, "clean_fp": 0, "clean_runs": 0}
    per_app = []
    found_rows = []  # per found rank: what the finding says, against the clean runs
    failures = 0
    for app in apps:
        why = app.available()
        if why:
            log(f"[{app.name}] skipped: {why}")
            md += [f"## {app.name}", "", f"skipped: {why}", ""]
            continue
        if args.np:
            app.np = args.np
        ranks = [int(r) for r in args.ranks.split(",") if r] or sorted({min(1, app.np - 2),
                                                                         app.np - 1})
        faults = [f for f in args.faults.split(",") if f] or app.faults
        cmd = " ".join(scenarios.mpirun(app.np, app.argv))
        md += [f"## {app.name}", "", f"`{cmd}`", ""]

        clean = []
        for i in range(args.clean_runs):
            r = run_one(app, "bare", None, args.timeout)
            r["scenario"] = "clean"
            results.append(r)
            failures += run_failed(r) and "skipped" not in r
            if "wall_s" in r and not run_failed(r):
                clean.append(r["wall_s"])
            log(f"[{app.name}] bare clean #{i + 1}: {r.get('wall_s')} s rc={r.get('rc')}"
                f"{' ' + r.get('error', '') if 'error' in r else ''}")
        ref = statistics.median(clean) if clean else None
        md.append(f"Bare clean wall: {', '.join(f'{t:.2f}' for t in clean)} s "
                  f"(median {fmt(ref)} s).")
        md.append("")
        app_counts = {"planted": 0, "found": 0, "wrong": 0, "clean_fp": 0, "clean_runs": 0}
        rows = []
        rs_clean = None  # the clean run's wall under rankscope, as its report states it
        rs_clean_report = None

        if not args.no_rankscope:
            session = os.path.join(args.out, f"{app.name}-clean") if args.keep_sessions else None
            r = run_one(app, "rankscope", None, args.timeout, session)
            r["scenario"] = "clean"
            results.append(r)
            failures += run_failed(r) and "skipped" not in r
            n_find = len((r.get("report") or {}).get("findings", [])) if r.get("report") else 0
            if "skipped" not in r:
                app_counts["clean_runs"] += 1
                app_counts["clean_fp"] += n_find
                rs_clean = scenarios.job_seconds(r.get("report"))
                rs_clean_report = r.get("report")
            verdict = ("skip" if "skipped" in r else ("FP" if n_find else "TN"))
            log(f"[{app.name}] rankscope clean: {r.get('wall_s')} s -> {short_findings(r.get('report'))}")
            rows.append(["clean", "–", fmt(ref), "1.00", "–",
                         fmt(r.get("wall_s")), f"{fmt(r.get('wall_s') / ref if ref and r.get('wall_s') else None)}x",
                         r.get("skipped") or short_findings(r.get("report")), verdict, "–", "–"])

        for fname in faults:
            for rank in ranks:
                label = f"{fname} @ rank {rank}"
                bare_walls, lag, what = [], None, ""
                if not args.no_bare:
                    for _ in range(args.repeat):
                        fault = scenarios.make_fault(fname, app, rank, **params.get(fname, {}))
                        r = run_one(app, "bare", fault, args.timeout)
                        r["scenario"] = label
                        results.append(r)
                        failures += run_failed(r) and "skipped" not in r
                        if r.get("fault"):
                            what = r["fault"].get("what", "")
                            lag = r["fault"].get("lag_s")
                            if not r["fault"].get("planted"):
                                log(f"[{app.name}] {label}: NOT PLANTED: {r['fault'].get('error')}")
                        if "wall_s" in r and not run_failed(r):
                            bare_walls.append(r["wall_s"])
                        log(f"[{app.name}] bare {label}: {r.get('wall_s')} s rc={r.get('rc')} "
                            f"{r.get('skipped') or r.get('error') or ''}")
                bare = statistics.median(bare_walls) if bare_walls else None
                slow = bare / ref if bare and ref else None

                rs_wall, findings, verdict, wi, procs = None, "–", "–", "–", "–"
                if not args.no_rankscope:
                    fault = scenarios.make_fault(fname, app, rank, **params.get(fname, {}))
                    session = (os.path.join(args.out, f"{app.name}-{fname}-r{rank}")
                               if args.keep_sessions else None)
                    r = run_one(app, "rankscope", fault, args.timeout, session)
                    r["scenario"] = label
                    results.append(r)
                    failures += run_failed(r) and "skipped" not in r
                    rs_wall = r.get("wall_s")
                    rep = r.get("report")
                    planted = bool(r.get("fault") and r["fault"].get("planted"))
                    if r.get("fault"):
                        what = what or r["fault"].get("what", "")
                        lag = lag if lag is not None else r["fault"].get("lag_s")
                    if "skipped" in r:
                        verdict, findings = "skip", r["skipped"]
                    elif not planted:
                        verdict = "not planted"
                        findings = (r.get("fault") or {}).get("error") or r.get("error", "")
                    else:
                        app_counts["planted"] += 1
                        hit = scenarios.found_rank(rep, rank)
                        wrong = sum(1 for _, rk in scenarios.named_ranks(rep) if rk != [rank])
                        app_counts["found"] += hit
                        if hit:
                            found_rows.append(found_row(app.name, f"{fname}-r{rank}", rank, rep,
                                                        rs_clean, ref, rs_clean_report))
                        app_counts["wrong"] += wrong
                        verdict = ("TP" if hit else "FN") + (f" +{wrong} FP" if wrong else "")
                        findings = short_findings(rep)
                        rp = scenarios.rank_process(rep, rank)
                        if rp and rp["cpu_per_wall"] is not None:
                            procs = (f"cpu/wall {rp['cpu_per_wall']:.2f} vs "
                                     f"{fmt(rp['others_cpu_per_wall'])}"
                                     + (f", throttled {rp['throttled_s']:.1f} s"
                                        if rp["throttled_s"] else ""))
                        wis = scenarios.what_if(rep)
                        if wis:
                            parts = []
                            for w in wis:
                                sec = scenarios.what_if_seconds(w["what_if"])
                                job = w["what_if"].get("job_ns") if isinstance(
                                    w["what_if"], dict) else None
                                txt = (f"job {job / 1e9:.2f} s -> {sec:.2f} s"
                                       if job is not None and sec is not None
                                       else json.dumps(w["what_if"], separators=(",", ":"))[:80])
                                parts.append(txt + (f" ({sec / ref:.2f}x the bare clean run)"
                                                    if sec is not None and ref else ""))
                            wi = "; ".join(parts)
                        elif rep is not None:
                            wi = "(no what_if)"
                    log(f"[{app.name}] rankscope {label}: {rs_wall} s -> {findings} [{verdict}]")
                rows.append([label, what, fmt(bare), f"{fmt(slow)}x" if slow else "–",
                             fmt(lag, ".3f") if lag is not None else "–", fmt(rs_wall),
                             f"{fmt(rs_wall / ref)}x" if rs_wall and ref else "–",
                             findings, verdict, procs, wi])

        md += ["| scenario | fault | bare wall s | slowdown | plant lag s | rankscope wall s | "
               "vs clean | findings | verdict | planted rank's /proc (agent) vs others | what_if |",
               "|---|---|---:|---:|---:|---:|---:|---|---|---|---|"]
        md += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
        md.append("")
        per_app.append((app.name, app_counts))
        for k in totals:
            totals[k] += app_counts[k]

    def pr(c):
        tp, fp = c["found"], c["wrong"] + c["clean_fp"]
        prec = tp / (tp + fp) if tp + fp else None
        rec = tp / c["planted"] if c["planted"] else None
        return prec, rec

    md += ["## Precision / recall", "",
           "Found: a straggler/late_sender/late_receiver finding names exactly the planted rank. "
           "False positives: such findings naming any other rank set in faulted runs, plus every "
           "finding of a clean run.", "",
           "| app | planted | found | wrong-rank findings | clean runs | clean findings | "
           "precision | recall |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, c in per_app + [("**all**", totals)]:
        prec, rec = pr(c)
        md.append(f"| {name} | {c['planted']} | {c['found']} | {c['wrong']} | {c['clean_runs']} | "
                  f"{c['clean_fp']} | {fmt(prec)} | {fmt(rec)} |")
    md.append("")
    pr_table = md[md.index("## Precision / recall") + 4:]
    found_table = [
        "| app | scenario | finding | cause | confidence | job s | what-if s | clean s (rankscope) "
        "| bare clean s | what-if / clean | what-if / bare | slowest other outside MPI / clean |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    found_table += ["| " + " | ".join(str(c) for c in row) + " |" for row in found_rows]
    md += ["## Found ranks: cause, confidence, what-if", "",
           "what-if: the job's wall had the rank run like the others, as the finding states it; "
           "against the clean run under rankscope (same overhead) and the bare clean run. Slowest "
           "other outside MPI / clean: the longest time outside MPI of any other rank against "
           "the clean run's median (the what-if keeps it as it was: far above 1x, the fault "
           "slowed that rank too).", ""]
    md += found_table + [""]
    text = "\n".join(md)
    print(text)
    with open(os.path.join(args.out, "matrix.md"), "w") as f:
        f.write(text + "\n")
    for r in results:  # keep matrix.json small: findings only, not whole reports
        rep = r.pop("report", None)
        if rep is not None:
            r["findings"] = rep.get("findings", [])
    with open(os.path.join(args.out, "matrix.json"), "w") as f:
        json.dump({"results": results, "totals": totals,
                   "per_app": dict(per_app)}, f, indent=1)
    log(f"wrote {os.path.join(args.out, 'matrix.md')} and matrix.json")
    if args.docs:
        argv = " ".join(sys.argv[1:])
        write_docs(args.docs, "\n".join(
            [f"Generated {time.strftime('%Y-%m-%d')} at commit {scenarios.git_commit()} by "
             f"`scripts/scenario-matrix.py {argv}`.", "", "### Precision and recall", ""]
            + pr_table + ["### Found ranks: cause, confidence, what-if", ""] + found_table),
            region=f"np {args.np}" if args.np else "")
        log(f"wrote the tables into {args.docs}")

    prec, rec = pr(totals)
    if failures:
        log(f"{failures} run(s) failed or timed out")
        return 1
    if args.require_recall is not None and (rec is None or rec < args.require_recall):
        return 2
    if args.require_precision is not None and (prec is None or prec < args.require_precision):
        return 2
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        log("interrupted; faults cleaned up")
        sys.exit(130)
