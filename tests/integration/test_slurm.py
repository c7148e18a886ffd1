"""`rankscope run -- srun ...` on a real 4-node SLURM cluster (scripts/slurm-cluster.sh, started
by the CTest fixture `slurm`; SLURM_CONF names it): agents under srun, node identity from
SLURMD_NODENAME, srun-aware next steps, and the same from inside an sbatch script."""
import json
import os
import subprocess
import sys
import textwrap
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import MPI_TRAIN, RANKSCOPE, RankscopeTest, Session, mpi_env  # noqa: E402

# The planted rank is 7, alone on n4 (SLURM packs 8 tasks on these 4-CPU nodes as n1: 0-3,
# n2: 4-5, n3: 6, n4: 7). With rank 5 on n2 the CI host twice showed its node-mate rank 4 as
# slow in 'compute' as rank 5 was (2.26 s against 331 ms, confidence 0.69): four "nodes" share
# two cores here, and a node-mate of a rank that sleeps is not a clean control.
# Its sleep must save a clear share of the job, start-up included, for the confidence the tests
# ask: of a 50 ms sleep per step the what-if saved only 0.57 s of a 4.59 s srun job in CI (12.5 %,
# the gain margin 0.7998 against 0.8), as on 2 cores the slowest of the 7 others' steps, not their
# median, sets the pace once rank 7 is like them.
SLOW_RANK = 7
SLOW_JOB = [MPI_TRAIN, "--steps", "30", "--elems", "1024", "--slow-rank", str(SLOW_RANK),
            "--slow-mode", "sleep", "--slow-ms", "100"]


def rank_figures(s):
    """Per rank: own work outside MPI, CPU, run delay and involuntary switches over its wall."""
    lines = []
    for r in s.report["ranks"]:
        p = r.get("process") or {}
        own = r["mpi"]["outside_mpi_ns"] / 1e6
        lines.append(f"rank {r['rank']} {r['node']}: outside MPI {own:.0f} ms, "
                     f"cpu {(p.get('cpu_user_ns', 0) + p.get('cpu_system_ns', 0)) / 1e6:.0f} ms, "
                     f"run delay {p.get('run_delay_ns', 0) / 1e6:.0f} ms of "
                     f"{p.get('sampled_wall_ns', 0) / 1e6:.0f} ms, "
                     f"involuntary {p.get('involuntary_switches', 0)}, "
                     f"main thread {p.get('main_thread')}")
    return "\n".join(lines)


def check_session(test, s):
    """8 ranks on n1..n4, launched by SLURM, SLOW_RANK the one straggler, alone on its node."""
    test.assertEqual(s.report["job"]["world_size"], 8, s.report["job"])
    test.assertEqual(s.report["job"]["launcher"], "slurm", s.report["job"])
    ranks = {r["rank"]: r for r in s.report["ranks"]}
    test.assertEqual(sorted(ranks), list(range(8)))
    test.assertEqual({r["node"] for r in ranks.values()}, {"n1", "n2", "n3", "n4"})
    slow_node = ranks[SLOW_RANK]["node"]
    test.assertEqual([r for r in ranks if ranks[r]["node"] == slow_node], [SLOW_RANK],
                     "the planted rank shares its node: SLURM's task layout changed")
    # The planted rank first and sure. Another finding may follow only as a weak one (confidence
    # under 0.5): 8 ranks share 2 cores here (see SLOW_RANK). Any other finding, or a first one
    # that is not the planted rank, prints every rank's figures, to read the cause from the log.
    test.assertTrue(s.findings, rank_figures(s))
    first, rest = s.findings[0], s.findings[1:]
    test.assertEqual((first["kind"], first["ranks"]), ("straggler", [SLOW_RANK]),
                     f"{s.findings}\n{rank_figures(s)}")
    test.assertGreaterEqual(first["confidence"], 0.8, first)
    test.assertEqual([f for f in rest if f["confidence"] >= 0.5], [], rank_figures(s))
    if rest:
        print("weak findings besides the planted rank:", [f["summary"] for f in rest],
              rank_figures(s), sep="\n")
    test.assertEqual(first["nodes"], [slow_node])
    commands = " ".join(step["command"] for step in s.findings[0]["next_steps"])
    test.assertIn(f'"$SLURM_PROCID" = {SLOW_RANK}', commands)


class SlurmTest(RankscopeTest):
    """A test on the slurm fixture's cluster."""

    def running_job(self, name, timeout=60):
        """The id of our running job called `name`, once squeue shows it RUNNING."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            q = subprocess.run(["squeue", "-h", "-n", name, "-o", "%i %T"], env=mpi_env(),
                               capture_output=True, text=True)
            for line in q.stdout.split("\n"):
                if line.endswith(" RUNNING"):
                    return line.split()[0]
            time.sleep(0.1)
        self.fail(f"job {name} never ran: {q.stdout} {q.stderr}")


@unittest.skipUnless(os.environ.get("SLURM_CONF"), "needs the slurm fixture (SLURM_CONF)")
class Slurm(SlurmTest):
    def test_srun_across_four_nodes_finds_the_slow_rank(self):
        proc, out = self.run_rankscope(["srun", "-N", "4", "-n", "8", "--mpi=pmix"] + SLOW_JOB)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        check_session(self, Session(out))
        self.assertIn("8 ranks on 4 nodes", proc.stderr)

    def test_inside_an_sbatch_script(self):
        out = os.path.join(self.tmp, "out")
        script = os.path.join(self.tmp, "job.sh")
        with open(script, "w") as f:
            f.write(textwrap.dedent(f"""\
                #!/bin/sh
                #SBATCH -N 4 -n 8
                exec {RANKSCOPE} run -o {out} -- srun --mpi=pmix {" ".join(SLOW_JOB)}
                """))
        log = os.path.join(self.tmp, "slurm.out")
        p = subprocess.run(["sbatch", "--wait", "-o", log, "--chdir", self.tmp, script],
                           env=mpi_env(), capture_output=True, text=True, timeout=240)
        with open(log) as f:
            job_output = f.read()
        self.assertEqual(p.returncode, 0, p.stderr + job_output)
        s = Session(out)
        check_session(self, s)
        # The batch job's id names the session's job.
        job_id = p.stdout.split()[-1]
        self.assertEqual(s.report["job"]["id"], job_id, p.stdout)

    def test_attach_captures_a_window_of_a_dormant_job(self):
        out = os.path.join(self.tmp, "out")
        job = subprocess.Popen(
            [RANKSCOPE, "run", "--dormant", "-q", "-o", out, "--", "srun", "-J", "rs-attach",
             "-N", "2", "-n", "4", "--mpi=pmix", MPI_TRAIN, "--steps", "4000", "--elems", "1024",
             "--compute-ms", "2", "--quiet"],
            env=mpi_env(), cwd=self.tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        job_id = self.running_job("rs-attach")
        time.sleep(2)  # agents registered, ranks running dormant
        a = subprocess.run([RANKSCOPE, "attach", job_id, "--for", "0.5"], env=mpi_env(),
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(a.returncode, 0, a.stdout + a.stderr)
        self.assertIn("capture started", a.stdout)
        stdout, stderr = job.communicate(timeout=240)
        self.assertEqual(job.returncode, 0, stderr)
        s = Session(out)
        self.assertEqual(s.report["job"]["id"], job_id)
        counts = [r["counts"]["collectives"] for r in s.report["ranks"]]
        self.assertEqual(len(counts), 4)
        for n in counts:  # the window only
            self.assertGreater(n, 5, counts)
            self.assertLess(n, 4000 * 0.9, counts)
        for r in s.report["ranks"]:
            self.assertIn("capture started by the coordinator", r["notices"])

    def test_attach_names_what_it_cannot_do(self):
        a = subprocess.run([RANKSCOPE, "attach", "999999"], env=mpi_env(), capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(a.returncode, 2)
        self.assertIn("job 999999 does not exist", a.stderr)
        a = subprocess.run([RANKSCOPE, "attach", "12ab"], env=mpi_env(), capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(a.returncode, 2)
        self.assertIn("'12ab' is not a SLURM job id", a.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "rankscope-attach-999999")))

    def test_attach_samples_a_job_without_rankscope_from_outside(self):
        # A plain srun job (no rankscope), rank 2's loader reading: attach finds the ranks by
        # their environment, samples /proc for the window, writes its own session folder naming
        # rank 2, and the job runs on to its normal end.
        job = subprocess.Popen(
            ["srun", "-J", "rs-plain", "-N", "2", "-n", "4", "--mpi=pmix", MPI_TRAIN, "--steps",
             "600", "--compute-ms", "2", "--slow-loader-rank", "2", "--loader-ms", "3",
             "--loader-mode", "read", "--quiet"],
            env=mpi_env(), cwd=self.tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        try:
            job_id = self.running_job("rs-plain")
            time.sleep(1)
            out = os.path.join(self.tmp, "attached")
            a = subprocess.run([RANKSCOPE, "attach", job_id, "--for", "2", "-o", out],
                               env=mpi_env(), capture_output=True, text=True, timeout=120)
            self.assertEqual(a.returncode, 0, a.stdout + a.stderr)
            self.assertIn("was not launched with rankscope run; sampling rank(s)", a.stdout)
            stdout, stderr = job.communicate(timeout=240)
        finally:
            subprocess.run(["scancel", "-n", "rs-plain"], env=mpi_env())
            job.wait(timeout=60)
        self.assertEqual(job.returncode, 0, stderr)
        self.assertIn("mpi_train: 600 steps, world 4", stdout)  # ran to its end
        s = Session(out)
        self.assertEqual(s.report["job"]["id"], job_id)
        ranks = {r["rank"]: r for r in s.report["ranks"]}
        self.assertEqual(sorted(ranks), [0, 1, 2, 3])
        self.assertEqual({r["node"] for r in ranks.values()}, {"n1", "n2"})
        for r in ranks.values():
            self.assertIsNone(r["exit_code"], r)  # still running when sampled
            self.assertIn("process", r, s.report["ranks"])
            self.assertGreater(r["process"]["samples"], 1, r)
            self.assertTrue(any("sampled from outside by rankscope attach" in n
                                for n in r["notices"]), r["notices"])
        kinds = [(f["kind"], f["ranks"]) for f in s.findings]
        self.assertEqual(kinds, [("process_outlier", [2])], s.findings)
        self.assertIn("io_heavy", s.findings[0]["evidence"]["verdicts"])
        self.assertIn("rank 2", a.stderr)  # the printed report

    def test_attach_window_ends_with_the_job(self):
        # The job ends 3 s into a 60 s window: attach stops there, keeps what it sampled and says
        # the window was cut short.
        job = subprocess.Popen(["srun", "-J", "rs-short", "-N", "1", "-n", "2", "sleep", "4"],
                               env=mpi_env(), cwd=self.tmp)
        try:
            job_id = self.running_job("rs-short")
            out = os.path.join(self.tmp, "short")
            started = time.time()
            a = subprocess.run([RANKSCOPE, "attach", job_id, "--for", "60", "-o", out, "-q"],
                               env=mpi_env(), capture_output=True, text=True, timeout=120)
            self.assertLess(time.time() - started, 30, a.stdout + a.stderr)
            self.assertEqual(a.returncode, 0, a.stdout + a.stderr)
            self.assertEqual(job.wait(timeout=60), 0)
        finally:
            subprocess.run(["scancel", "-n", "rs-short"], env=mpi_env())
        s = Session(out)
        self.assertEqual(len(s.report["ranks"]), 2)
        for r in s.report["ranks"]:
            self.assertTrue(r["finished"], r)
            self.assertTrue(any("the window was cut short" in n for n in r["notices"]), r)

if __name__ == "__main__":
    unittest.main()
