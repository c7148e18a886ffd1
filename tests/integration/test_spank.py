"""`srun --rankscope` through the SPANK plugin (launchers/spank/rankscope_spank.c) on the real
4-node SLURM cluster (scripts/slurm-cluster.sh, started by the CTest fixture `slurm`): the plugin
is installed by one plugstack.conf line, as docs/spank.md says, for each test and removed after."""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import BUILD, MPI_TRAIN, RANKSCOPE, Session, mpi_env  # noqa: E402
from test_slurm import SLOW_JOB, SlurmTest, check_session  # noqa: E402

PLUGIN = os.path.join(BUILD, "lib", "rankscope_spank.so")

# Counts the SIGUSR1s it gets while it runs, then prints the count.
SIGNAL_COUNTER = """
import signal, sys, time
got = []
signal.signal(signal.SIGUSR1, lambda s, f: got.append(s))
print("ready", flush=True)
deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    time.sleep(0.02)
print("usr1", len(got), flush=True)
"""


@unittest.skipUnless(os.environ.get("SLURM_CONF"), "needs the slurm fixture (SLURM_CONF)")
class Spank(SlurmTest):
    def setUp(self):
        super().setUp()
        self.assertTrue(os.path.exists(PLUGIN),
                        f"{PLUGIN} is not built (libslurm-dev: scripts/install-deps.sh)")
        # Without PlugStackConfig in slurm.conf, srun and slurmstepd read plugstack.conf beside it.
        self.plugstack = os.path.join(os.path.dirname(os.environ["SLURM_CONF"]), "plugstack.conf")
        with open(self.plugstack, "w") as f:
            f.write(f"optional {PLUGIN} bin={RANKSCOPE}\n")

    def tearDown(self):
        os.unlink(self.plugstack)

    def srun(self, args, timeout=240):
        return subprocess.run(["srun"] + args, env=mpi_env(), cwd=self.tmp, capture_output=True,
                              text=True, timeout=timeout)

    def test_srun_rankscope_across_four_nodes_finds_the_slow_rank(self):
        p = self.srun(["-N", "4", "-n", "8", "--mpi=pmix", "--rankscope=out=out,quiet"] +
                      SLOW_JOB)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("mpi_train: 30 steps, world 8", p.stdout)  # the job's output, untouched
        self.assertNotIn("rankscope  job", p.stderr)  # quiet: no report printed
        s = Session(os.path.join(self.tmp, "out"))
        check_session(self, s)
        self.assertIn("--rankscope=out=out,quiet", " ".join(s.report["job"]["command"]))
        self.assertEqual(s.report["job"]["status"], "complete", s.report["job"])

    def test_default_folder_report_and_exit_codes(self):
        # The report on srun's stderr, the folder named after the step, the exit code the
        # program's, with and without the plugin alike.
        for program, code in ((["sh", "-c", "exit 7"], 7), (["/nonexistent/prog"], 2),
                              (["sh", "-c", "kill -SEGV $$"], 139)):
            plain = self.srun(["-N", "2", "-n", "2"] + program)
            profiled = self.srun(["-N", "2", "-n", "2", "--rankscope"] + program)
            self.assertEqual(plain.returncode, code, plain.stderr)
            self.assertEqual(profiled.returncode, code, profiled.stderr)
            self.assertIn("rankscope: profiling step", profiled.stderr)
            self.assertIn("session written to rankscope-", profiled.stderr)
            if code == 2:  # Slurm's own words for a program that is not there
                self.assertIn("execve(): /nonexistent/prog: No such file or directory",
                              profiled.stderr)
        folders = sorted(d for d in os.listdir(self.tmp) if d.startswith("rankscope-"))
        self.assertEqual(len(folders), 3, folders)
        for d in folders:
            self.assertRegex(d, r"^rankscope-\d+\.0$")
            s = Session(os.path.join(self.tmp, d))
            # None of the three ran to a clean end: each report says it is partial.
            self.assertEqual(s.report["job"]["status"], "partial", s.report["job"])

    def test_the_program_sees_no_secret(self):
        p = self.srun(["-n", "1", "--rankscope=quiet", "env"])
        self.assertEqual(p.returncode, 0, p.stderr)
        env = dict(line.split("=", 1) for line in p.stdout.splitlines() if "=" in line)
        self.assertIn("RANKSCOPE_COORDINATOR", env)  # for the inject library
        for name in ("RANKSCOPE_TOKEN", "SLURM_RANKSCOPE_TOKEN", "RANKSCOPE_SPANK_ARGV0",
                     "SLURM_RANKSCOPE_COORDINATOR"):
            self.assertNotIn(name, env)

    def test_a_slurm_signal_reaches_the_program_once(self):
        # slurmstepd signals every process of the step; the agent must not add a second copy.
        script = os.path.join(self.tmp, "count.py")
        with open(script, "w") as f:
            f.write(SIGNAL_COUNTER)
        for flag in ([], ["--rankscope=quiet"]):
            job = subprocess.Popen(["srun", "-J", "rs-signal", "-n", "1"] + flag +
                                   [sys.executable, script, "4"], env=mpi_env(), cwd=self.tmp,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self.assertEqual(job.stdout.readline().strip(), "ready")
            job_id = self.running_job("rs-signal")
            subprocess.run(["scancel", "-s", "USR1", job_id], env=mpi_env(), check=True)
            out, err = job.communicate(timeout=60)
            self.assertEqual(job.returncode, 0, err)
            self.assertEqual(out.strip(), "usr1 1", (flag, err))

    def test_dormant_step_captured_by_attach(self):
        job = subprocess.Popen(
            ["srun", "-J", "rs-spank-dormant", "-N", "2", "-n", "2", "--mpi=pmix",
             "--rankscope=dormant,out=out,quiet", MPI_TRAIN, "--steps", "3000", "--elems", "1024",
             "--compute-ms", "2"],
            env=mpi_env(), cwd=self.tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        try:
            # A progress line: the ranks are in their loop, past MPI_Init.
            line = job.stdout.readline()
            while line and "step 20/" not in line:
                line = job.stdout.readline()
            self.assertIn("step 20/", line, "the job ended before its 20th step")
            job_id = self.running_job("rs-spank-dormant")
            a = subprocess.run([RANKSCOPE, "attach", job_id, "--for", "0.5"], env=mpi_env(),
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(a.returncode, 0, a.stdout + a.stderr)
            self.assertIn("capture started (2 agents", a.stdout)
            out, err = job.communicate(timeout=240)
        finally:
            subprocess.run(["scancel", "-n", "rs-spank-dormant"], env=mpi_env())
            job.wait(timeout=60)
        self.assertEqual(job.returncode, 0, err)
        self.assertIn("mpi_train: 3000 steps, world 2", out)
        s = Session(os.path.join(self.tmp, "out"))
        counts = [r["counts"]["collectives"] for r in s.report["ranks"]]
        self.assertEqual(len(counts), 2)
        for n in counts:  # the window only
            self.assertGreater(n, 5, counts)
            self.assertLess(n, 3000 * 0.9, counts)

    def test_what_the_plugin_cannot_do_leaves_the_job_unprofiled(self):
        conf = os.path.join(self.tmp, "multi.conf")
        with open(conf, "w") as f:
            f.write("0 echo zero\n1 echo one\n")
        p = self.srun(["-n", "2", "--multi-prog", "--rankscope", conf])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(p.stdout.split("\n")), ["", "one", "zero"])
        self.assertIn("--multi-prog gives every task its own argv", p.stderr)
        p = self.srun(["-n", "1", "--rankscope=colour", "true"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("unknown --rankscope word 'colour'", p.stderr)
        # No usable rankscope binary in plugstack.conf: said, and the job runs as it is.
        with open(self.plugstack, "w") as f:
            f.write(f"optional {PLUGIN} bin=/nonexistent/rankscope\n")
        p = self.srun(["-n", "1", "--rankscope", "echo", "ran"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "ran\n")
        self.assertIn("no usable bin=PATH of rankscope ('/nonexistent/rankscope')", p.stderr)
        self.assertEqual([d for d in os.listdir(self.tmp) if d.startswith("rankscope-")], [])
        # Without --rankscope the plugin does nothing at all.
        os.unlink(self.plugstack)
        with open(self.plugstack, "w") as f:
            f.write(f"optional {PLUGIN} bin={RANKSCOPE}\n")
        p = self.srun(["-n", "1", "env"])
        self.assertNotIn("RANKSCOPE_SPANK", p.stdout)
        self.assertNotIn("SLURM_RANKSCOPE", p.stdout)


if __name__ == "__main__":
    unittest.main()
