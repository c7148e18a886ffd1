#!/usr/bin/env python3
"""What a session costs as the job gets longer (issue #16): examples' mpi_train under
`rankscope run`, the same ranks for each step count given, measured side by side in one run.

Per step count it prints the job's wall time bare and under rankscope, the peak resident memory
of `rankscope run` (the coordinator runs in it), the session folder's size and its parts, the
records the ranks reported, and bytes per rank per step of the folder and of session.sqlite.
The ratios between the longest and the shortest run say whether the cost grows with the job:
the target is a memory ratio of 1.5 or less and a folder that grows only by summaries.

usage: bench/run_session_cost.py [--np 4] [--steps 2000,20000] [--compute-ms 1] [--build build]
       bench/run_session_cost.py --netpipe [--repeats 2000,20000] [--upper 65536]
       bench/run_session_cost.py --torch [--steps 2000,10000] [--small-ops 250] (GPU machine)
       bench/run_session_cost.py --lammps [--np 4] [--steps 200,2000]

With --netpipe the job is a point-to-point code nobody here wrote: Debian's NetPIPE
(`apt install netpipe-openmpi`), 2 ranks ping-ponging every message size up to --upper bytes
--repeats times each; the figures are per point-to-point record instead of per rank and step.

With --torch the job is one rank of a launch-bound PyTorch loop on the GPU machine
(tests/gpu/torch_allreduce.py under `torchrun --nproc_per_node=1`: per step NVTX ranges, 4
1024-square matmuls, --small-ops tiny kernels and an all-reduce of 1 MiB), the issue's GPU case; it also prints the
loop's own median step time bare and under rankscope (tests/gpu/run_session_cost_check.sh).

With --lammps the job is Debian's LAMMPS (`lmp`, the Lennard-Jones melt of
tests/integration/data/lammps-lj.in at 4,000 atoms, one dump at the start): a halo-exchange code
(Sendrecv, Irecv/Send/Wait, Allreduce) nobody here wrote.

Last, between the shortest and the longest run: what each more step costs a rank in the folder
and in session.sqlite (the target is <= 2 KB per rank and step).
"""
import argparse
import json
import re
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from harness import mpi_env, mpirun  # noqa: E402


def peak_resident_kib(pid, stop, out):
    """Polls VmHWM (the kernel's own peak) of `pid` until `stop` is set; the last value read."""
    while not stop.is_set():
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        out[0] = max(out[0], int(line.split()[1]))
        except OSError:
            return
        time.sleep(0.01)


def folder_bytes(path):
    sizes = {}
    for name in os.listdir(path):
        p = os.path.join(path, name)
        if os.path.isfile(p):
            sizes[name] = os.path.getsize(p)
        else:
            sizes[name] = sum(os.path.getsize(os.path.join(d, f))
                              for d, _, files in os.walk(p) for f in files)
    return sizes


def run_once(argv, env, cwd):
    """Wall seconds, polled VmHWM (KiB), the tree's ru_maxrss (KiB), exit status, stderr."""
    start = time.monotonic()
    with open(os.path.join(cwd, "stdout"), "w") as out, open(os.path.join(cwd, "stderr"), "w+") as err:
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=err)
        stop, peak = threading.Event(), [0]
        watcher = threading.Thread(target=peak_resident_kib, args=(proc.pid, stop, peak))
        watcher.start()
        _, status, rusage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - start
        stop.set()
        watcher.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        return wall, peak[0], rusage.ru_maxrss, proc.returncode, err.read()


def loop_step_ms(work):
    """The median step time torch_allreduce.py printed in the last run's stdout, or None."""
    with open(os.path.join(work, "stdout")) as f:
        found = re.findall(r"median step ([0-9.]+) ms", f.read())
    return float(found[-1]) if found else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--np", type=int, default=4)
    ap.add_argument("--steps", default="2000,20000")
    ap.add_argument("--compute-ms", type=float, default=1)
    ap.add_argument("--elems", type=int, default=1024)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--netpipe", action="store_true",
                    help="measure NetPIPE (NPopenmpi, 2 ranks) instead of mpi_train")
    ap.add_argument("--repeats", default="2000,20000",
                    help="with --netpipe: messages of each size, one run per value")
    ap.add_argument("--upper", type=int, default=65536,
                    help="with --netpipe: the largest message size")
    ap.add_argument("--torch", action="store_true",
                    help="measure one rank of tests/gpu/torch_allreduce.py (needs a GPU)")
    ap.add_argument("--lammps", action="store_true",
                    help="measure Debian's LAMMPS (lmp) on the Lennard-Jones melt")
    ap.add_argument("--small-ops", type=int, default=250,
                    help="with --torch: tiny kernels per step (launch-bound at about 250)")
    ap.add_argument("--rankscope-args", default="",
                    help="more options for rankscope run, e.g. '--raw-gpu-records 0'")
    args = ap.parse_args()
    rankscope = os.path.join(args.build, "bin", "rankscope")
    env = mpi_env()
    if args.netpipe:
        netpipe = shutil.which("NPopenmpi")
        if netpipe is None:
            sys.exit("NPopenmpi not found: apt install netpipe-openmpi")
        args.np = 2
        lengths = [int(s) for s in args.repeats.split(",")]
    elif args.torch:
        args.np = 1
        lengths = [int(s) for s in args.steps.split(",")]
    elif args.lammps:
        if shutil.which("lmp") is None:
            sys.exit("lmp not found: apt install lammps")
        lengths = [int(s) for s in args.steps.split(",")]
    else:
        program = os.path.join(args.build, "bin", "mpi_train")
        lengths = [int(s) for s in args.steps.split(",")]
    rows = []
    for steps in lengths:
        work = tempfile.mkdtemp(prefix="rankscope-cost-")
        try:
            if args.netpipe:
                job = mpirun(2, netpipe, "-u", str(args.upper), "-n", str(steps), "-o",
                             os.path.join(work, "np.out"))
            elif args.lammps:
                job = mpirun(args.np, "lmp", "-in",
                             os.path.join(ROOT, "tests", "integration", "data", "lammps-lj.in"),
                             "-log", "none", "-screen", "none", "-var", "s", "0.5", "-var",
                             "steps", str(steps), "-var", "dumpevery", str(10 * steps))
            elif args.torch:
                job = ["torchrun", "--nproc_per_node=1", "--no-python", "--", "python3",
                       os.path.join(ROOT, "tests", "gpu", "torch_allreduce.py"), "--steps",
                       str(steps), "--small-ops", str(args.small_ops), "--mib", "1", "--dim", "1024"]
            else:
                job = mpirun(args.np, program, "--steps", str(steps), "--compute-ms",
                             str(args.compute_ms), "--elems", str(args.elems), "--quiet")
            bare_wall, _, _, rc, err = run_once(job, env, work)
            if rc != 0:
                sys.exit(f"the bare run of {steps} steps failed ({rc}): {err[-2000:]}")
            bare_step = loop_step_ms(work)
            out_dir = os.path.join(work, "session")
            wall, hwm_kib, maxrss_kib, rc, err = run_once(
                [rankscope, "run", "-q", "-o", out_dir] + args.rankscope_args.split() + ["--"] + job,
                env, work)
            report_path = os.path.join(out_dir, "report.json")
            if rc != 0 or not os.path.exists(report_path):
                sys.exit(f"rankscope run of {steps} steps: exit {rc}, {err[-2000:]}")
            with open(report_path) as f:
                report = json.load(f)
            records = sum(sum(r["counts"].values()) for r in report["ranks"])
            run_step = loop_step_ms(work)
            dropped = sum(r.get("dropped_records", 0) for r in report["ranks"])
            sizes = folder_bytes(out_dir)
            folder = sum(sizes.values())
            per = max(records, 1) if args.netpipe else args.np * steps
            rows.append({
                "steps": steps, "ranks": args.np, "bare_wall_s": bare_wall, "wall_s": wall,
                "peak_resident_mib": hwm_kib / 1024, "maxrss_tree_mib": maxrss_kib / 1024,
                "records": records, "dropped_records": dropped, "folder_bytes": folder,
                "sizes": sizes, "folder_bytes_per_rank_step": folder / per,
                "sqlite_bytes_per_rank_step": sizes.get("session.sqlite", 0) / per,
                "bare_step_ms": bare_step, "run_step_ms": run_step,
                "status": report.get("job", {}).get("status"),
            })
        finally:
            shutil.rmtree(work, ignore_errors=True)
    if args.netpipe:
        print(f"NetPIPE (NPopenmpi), 2 ranks, every message size up to {args.upper} bytes, "
              f"'steps' = repeats of each, under rankscope run (default capture); bytes per "
              f"point-to-point record instead of per rank and step")
    elif args.lammps:
        print(f"LAMMPS (lmp, Lennard-Jones melt, 4,000 atoms), {args.np} ranks, under rankscope "
              f"run (default capture)")
    elif args.torch:
        print(f"tests/gpu/torch_allreduce.py, 1 rank, {args.small_ops} small kernels a step, "
              f"under rankscope run (default capture)")
    else:
        print(f"mpi_train, {args.np} ranks, {args.compute_ms:g} ms compute and an allreduce of "
              f"{args.elems} floats a step, under rankscope run (default capture)")
    unit = "record" if args.netpipe else "rank/step"
    print(f"{'steps':>7} {'bare s':>7} {'run s':>7} {'peak RSS MiB':>12} {'records':>9} "
          f"{'dropped':>7} {'folder MB':>9} {'sqlite MB':>9} {'trace MB':>8} "
          f"{'B/' + unit:>11} {'sqlite B/' + unit:>18}")
    for r in rows:
        s = r["sizes"]
        print(f"{r['steps']:>7} {r['bare_wall_s']:>7.2f} {r['wall_s']:>7.2f} "
              f"{r['peak_resident_mib']:>12.1f} {r['records']:>9} {r['dropped_records']:>7} "
              f"{r['folder_bytes'] / 1e6:>9.1f} {s.get('session.sqlite', 0) / 1e6:>9.1f} "
              f"{s.get('trace.json', 0) / 1e6:>8.1f} {r['folder_bytes_per_rank_step']:>11.0f} "
              f"{r['sqlite_bytes_per_rank_step']:>18.0f}")
    for r in rows:
        if r["bare_step_ms"] is not None and r["run_step_ms"] is not None:
            print(f"{r['steps']:>7} steps: median step {r['bare_step_ms']:.3f} ms bare, "
                  f"{r['run_step_ms']:.3f} ms under rankscope "
                  f"(x{r['run_step_ms'] / r['bare_step_ms']:.2f}); report {r['status']}")
    if len(rows) >= 2:
        a, b = rows[0], rows[-1]
        print(f"longest / shortest: steps {b['steps'] / a['steps']:.1f}x, peak resident "
              f"{b['peak_resident_mib'] / a['peak_resident_mib']:.2f}x (target <= 1.5), folder "
              f"{b['folder_bytes'] / a['folder_bytes']:.2f}x, records "
              f"{b['records'] / max(a['records'], 1):.2f}x")
        if not args.netpipe and b["steps"] > a["steps"]:
            more = args.np * (b["steps"] - a["steps"])
            print(f"each more step: {(b['folder_bytes'] - a['folder_bytes']) / more:.0f} B of the "
                  f"folder, {(b['sizes'].get('session.sqlite', 0) - a['sizes'].get('session.sqlite', 0)) / more:.0f} "
                  f"B of session.sqlite per rank (target <= 2 KB)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
