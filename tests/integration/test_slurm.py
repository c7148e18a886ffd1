"""`rankscope run -- srun ...` on a real 4-node SLURM cluster (scripts/slurm-cluster.sh, started
by the CTest fixture `slurm`; SLURM_CONF names it): agents under srun, node identity from
SLURMD_NODENAME, srun-aware next steps, and the same from inside an sbatch script."""
import json
import os
import subprocess
import sys
import textwrap
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


if __name__ == "__main__":
    unittest.main()
