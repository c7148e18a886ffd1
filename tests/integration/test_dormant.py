"""`rankscope run --dormant` + `rankscope capture`: ranks record nothing until a capture is
started from outside, then only for its window; the job runs and exits as without rankscope."""
import os
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import MPI_TRAIN, RANKSCOPE, RankscopeTest, Session, mpi_env, mpirun  # noqa: E402

STEPS = 1500  # ~2 ms each: a few seconds, long enough to start a capture in the middle


class Dormant(RankscopeTest):
    def env(self):
        # Each test its own endpoint directory, so `capture` without a session id finds this one.
        runtime = os.path.join(self.tmp, "runtime")
        os.makedirs(runtime, mode=0o700, exist_ok=True)
        return mpi_env({"XDG_RUNTIME_DIR": runtime})

    def start(self, out, *train_args):
        argv = [RANKSCOPE, "run", "--dormant", "-q", "-o", os.path.join(self.tmp, out), "--"] + \
            mpirun(2, MPI_TRAIN, "--steps", str(STEPS), "--compute-ms", "2", *train_args)
        return subprocess.Popen(argv, env=self.env(), cwd=self.tmp, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def endpoint_files(self):
        d = os.path.join(self.tmp, "runtime", "rankscope")
        return os.listdir(d) if os.path.isdir(d) else []

    def capture(self, *args):
        return subprocess.run([RANKSCOPE, "capture", *args], env=self.env(), capture_output=True,
                              text=True, timeout=60)

    def test_capture_window_of_a_dormant_run(self):
        # Progress lines (rank 0, every 10 steps, flushed) tell when the ranks are in their loop.
        job = self.start("out")
        lines, in_loop = [], threading.Event()

        def read_stdout():
            for line in job.stdout:
                lines.append(line)
                if "step 20/" in line:
                    in_loop.set()

        reader = threading.Thread(target=read_stdout, daemon=True)
        reader.start()
        deadline = time.time() + 30
        while not self.endpoint_files() and time.time() < deadline:
            time.sleep(0.05)
        self.assertTrue(self.endpoint_files(), "run --dormant left no endpoint file")
        # More agents than the job has: a clear error after --wait, and nothing started.
        c = self.capture("--agents", "3", "--wait", "1", "--for", "0.5")
        self.assertEqual(c.returncode, 1, c.stderr)
        self.assertRegex(c.stderr, r"[0-2] of 3 agents registered after 1 s; nothing started")
        # On a busy machine mpirun can take seconds to start the ranks after the endpoint file
        # appears, and MPI_Init and calibration take more; the agents register before both, so
        # a window opened when they have registered can end before the first step. Wait for the
        # loop instead.
        self.assertTrue(in_loop.wait(60), "no progress line from the job: " + "".join(lines))
        c = self.capture("--agents", "2", "--for", "0.5")
        self.assertEqual(c.returncode, 0, c.stderr)
        self.assertIn("started session", c.stderr)
        self.assertIn("(2 agents)", c.stderr)
        err = job.stderr.read()
        job.wait(timeout=120)
        reader.join(timeout=10)
        self.assertEqual(job.returncode, 0, err)
        out = "".join(lines)
        self.assertIn(f"mpi_train: {STEPS} steps, world 2", out)  # the job's output, untouched
        self.assertEqual(out.count("mpi_train: step "), STEPS // 10)
        self.assertEqual(self.endpoint_files(), [], "the endpoint file outlived the run")
        s = Session(os.path.join(self.tmp, "out"))
        counts = [s.rank(r)["counts"]["collectives"] for r in (0, 1)]
        # Only the window: some collectives, far from all of them (STEPS + 2 per rank).
        for n in counts:
            self.assertGreater(n, 10, counts)
            self.assertLess(n, STEPS * 0.9, counts)
        # The same window on both ranks, give or take when each agent got the command (tens of ms
        # of ~2 ms steps on a loaded 2-core machine).
        self.assertLess(abs(counts[0] - counts[1]), 0.5 * max(counts), counts)
        for r in (0, 1):
            notices = s.rank(r)["notices"]
            self.assertIn("capture started by the coordinator", notices)
            self.assertIn("capture stopped by the coordinator", notices)
        self.assertEqual(s.findings, [])

    def test_dormant_run_without_capture_records_nothing(self):
        job = self.start("quiet", "--quiet")
        out, err = job.communicate(timeout=120)
        self.assertEqual(job.returncode, 0, err)
        self.assertIn("dormant: ranks record nothing until `rankscope capture", err)
        s = Session(os.path.join(self.tmp, "quiet"))
        for r in (0, 1):
            self.assertEqual(s.rank(r)["counts"]["collectives"], 0)
            self.assertEqual(s.rank(r)["counts"]["ranges"], 0)
            self.assertTrue(s.rank(r)["finished"])
        self.assertEqual(s.findings, [])

    def test_capture_without_a_running_session_says_so(self):
        c = self.capture()
        self.assertEqual(c.returncode, 2)
        self.assertIn("no running rankscope session of yours", c.stderr)
        c = self.capture("rs-does-not-exist")
        self.assertEqual(c.returncode, 2)
        self.assertIn("no running session rs-does-not-exist", c.stderr)


if __name__ == "__main__":
    unittest.main()
