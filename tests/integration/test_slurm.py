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

SLOW_JOB = [MPI_TRAIN, "--steps", "30", "--elems", "1024", "--slow-rank", "5",
            "--slow-mode", "sleep", "--slow-ms", "50"]


def check_session(test, s):
    """8 ranks on n1..n4, launched by SLURM, rank 5 the one straggler, on its own node."""
    test.assertEqual(s.report["job"]["world_size"], 8, s.report["job"])
    test.assertEqual(s.report["job"]["launcher"], "slurm", s.report["job"])
    ranks = {r["rank"]: r for r in s.report["ranks"]}
    test.assertEqual(sorted(ranks), list(range(8)))
    test.assertEqual({r["node"] for r in ranks.values()}, {"n1", "n2", "n3", "n4"})
    test.assertEqual([(f["kind"], f["ranks"]) for f in s.findings], [("straggler", [5])],
                     s.findings)
    test.assertEqual(s.findings[0]["nodes"], [ranks[5]["node"]])
    commands = " ".join(step["command"] for step in s.findings[0]["next_steps"])
    test.assertIn('"$SLURM_PROCID" = 5', commands)


@unittest.skipUnless(os.environ.get("SLURM_CONF"), "needs the slurm fixture (SLURM_CONF)")
class Slurm(RankscopeTest):
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
        # A job not launched with rankscope: said, with how to relaunch it.
        plain = subprocess.Popen(["srun", "-J", "rs-plain", "-N", "1", "sleep", "30"],
                                 env=mpi_env(), cwd=self.tmp)
        try:
            job_id = self.running_job("rs-plain")
            a = subprocess.run([RANKSCOPE, "attach", job_id, "--for", "0.1"], env=mpi_env(),
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(a.returncode, 3, a.stdout + a.stderr)
            self.assertIn("was not launched with `rankscope run`", a.stdout)
            self.assertIn("rankscope run --dormant -- srun", a.stdout)
        finally:
            subprocess.run(["scancel", "-n", "rs-plain"], env=mpi_env())
            plain.wait(timeout=60)


if __name__ == "__main__":
    unittest.main()
