"""Clock recovery across real time namespaces, a coordinator that dies, and bad input."""
import os
import socket
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (HERE, MPI_TRAIN, RANKSCOPE, Coordinator, RankscopeTest, Session,  # noqa
                     mpi_env, mpirun)


def can_unshare_time():
    return subprocess.run(["unshare", "--time", "--monotonic", "5", "--fork", "true"],
                          capture_output=True).returncode == 0


class Clocks(RankscopeTest):
    def test_time_namespace_offsets_are_recovered(self):
        if not can_unshare_time():
            self.skipTest("time namespaces unavailable (needs root and Linux >= 5.6)")
        coord = Coordinator(self.tmp, ranks=4)
        wrapper = os.path.join(HERE, "timens_agent.sh")
        proc = self.run_plain(
            mpirun(4, "-x", "RANKSCOPE_COORDINATOR", "-x", "RANKSCOPE_TOKEN", "-x",
                   "RANKSCOPE_SESSION", wrapper, RANKSCOPE, MPI_TRAIN, "--steps", "20"),
            extra_env=coord.agent_env())
        self.assertEqual(proc.returncode, 0, proc.stderr)
        rc, out, err = coord.wait()
        self.assertEqual(rc, 0, err)
        s = Session(coord.out)
        for r in range(4):
            offset_s = 1000 * r + 17  # timens_agent.sh: CLOCK_MONOTONIC ahead by this many s
            clock = s.rank(r)["clock"]
            error_ns = clock["offset_ns"] + offset_s * 10**9
            self.assertLess(abs(error_ns), 100_000, f"rank {r}: {clock}")
            # The stated uncertainty is honest (covers the real error) and useful (well under
            # a millisecond even on 2 loaded cores).
            self.assertLessEqual(abs(error_ns), clock["uncertainty_ns"], clock)
            self.assertLess(clock["uncertainty_ns"], 1_000_000, clock)
        # Aligned, the job looks normal: no straggler invented by the clock offsets.
        self.assertEqual(s.findings, [])


class Failures(RankscopeTest):
    def test_garbage_on_the_inject_channel_is_reported_not_fatal(self):
        # A "program" that writes garbage and a truncated batch to the agent's socket.
        script = ("import os, socket\n"
                  "s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)\n"
                  "s.connect(os.environ['RANKSCOPE_IPC_SOCKET'])\n"
                  "s.send(b'garbage' * 20)\n"
                  "s.send(b'RSC1')\n"
                  "print('done')\n")
        proc, out = self.run_rankscope(["python3", "-c", script])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout, "done\n")
        notices = " ".join(Session(out).rank(0)["notices"])
        self.assertIn("bad magic", notices)
        self.assertIn("shorter than the 32-byte header", notices)
        self.reliability("Garbage and a truncated batch on the inject socket",
                         "the program unharmed; the problem said", "rc 0, 'bad magic' and "
                         "'shorter than the 32-byte header' in the rank's notices")

    def test_another_tools_cuda_injection_is_kept_and_said(self):
        # Nsight Systems and friends own CUDA_INJECTION64_PATH; the agent leaves it alone (only
        # one can load) and says that GPU activity will be missing, instead of going silent.
        other = "/opt/nvidia/nsight-systems/target-linux-x64/libToolsInjection64.so"
        script = "import os; print(os.environ['CUDA_INJECTION64_PATH'])"
        proc, out = self.run_rankscope(["python3", "-c", script],
                                       extra_env={"CUDA_INJECTION64_PATH": other})
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout, other + "\n")
        notices = " ".join(Session(out).rank(0)["notices"])
        self.assertIn("CUDA_INJECTION64_PATH is already set (" + other, notices)
        self.assertIn("no GPU activity from CUPTI", notices)

    def test_coordinator_killed_mid_run_job_finishes_normally(self):
        coord = Coordinator(self.tmp, ranks=4)
        # About 4 s of steps, so the coordinator dies in the middle of the job.
        train = [MPI_TRAIN, "--steps", "100", "--compute-ms", "40"]
        cmd = mpirun(4, "-x", "RANKSCOPE_COORDINATOR", "-x", "RANKSCOPE_TOKEN", "-x",
                     "RANKSCOPE_SESSION", RANKSCOPE, "agent", "--", *train)
        t0 = time.monotonic()
        baseline = self.run_plain(mpirun(4, *train))
        baseline_s = time.monotonic() - t0
        start = time.monotonic()
        tmp = os.path.join(self.tmp, "agents-tmp")  # the agents' spools stay there
        os.mkdir(tmp)
        job = subprocess.Popen(cmd, env=mpi_env(coord.agent_env(TMPDIR=tmp)),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)
        self.assertIsNone(job.poll(), "the job ended before the coordinator was killed")
        coord.kill()
        out, err = job.communicate(timeout=120)
        elapsed = time.monotonic() - start
        self.assertEqual(job.returncode, 0, err)
        self.assertIn("checksum", out)
        self.assertEqual(out.splitlines()[-1].split(" wall")[0],
                         baseline.stdout.splitlines()[-1].split(" wall")[0])
        # The agents notice and say so, and their final delivery attempt is bounded (5 s).
        self.assertIn("could not deliver the final report", err)
        print(f"job with coordinator killed: {elapsed:.2f} s; without rankscope: "
              f"{baseline_s:.2f} s")
        self.assertLess(elapsed, baseline_s * 1.5 + 6)
        self.reliability("kill -9 of a stand-alone coordinator mid-job",
                         "the job finishes normally, its output as bare",
                         f"rc 0, checksum as bare; {elapsed:.1f} s vs {baseline_s:.1f} s bare")

    def test_wrong_token_and_foreign_session_are_refused_job_unharmed(self):
        coord = Coordinator(self.tmp, ranks=1, extra=("--timeout", "20"))
        wrong = self.run_plain([RANKSCOPE, "agent", "--", "sh", "-c", "echo out; exit 5"],
                               extra_env=coord.agent_env(RANKSCOPE_TOKEN="not-the-token"))
        self.assertEqual(wrong.returncode, 5)
        self.assertEqual(wrong.stdout, "out\n")
        self.assertIn("missing or wrong session token", wrong.stderr)
        foreign = self.run_plain([RANKSCOPE, "agent", "--", "sh", "-c", "exit 0"],
                                 extra_env=coord.agent_env(RANKSCOPE_SESSION="other-session"))
        self.assertEqual(foreign.returncode, 0)
        self.assertIn("belongs to session 'other-session'", foreign.stderr)
        good = self.run_plain([RANKSCOPE, "agent", "--", "sh", "-c", "exit 0"],
                              extra_env=coord.agent_env())
        self.assertEqual(good.returncode, 0, good.stderr)
        rc, out, err = coord.wait()
        self.assertEqual(rc, 0, err)
        s = Session(coord.out)
        # Refused traffic cost the session nothing: complete, and one note that counts it.
        self.assertEqual(s.report["job"]["status"], "complete", s.report["job"])
        refused = [n for n in s.report["job"]["notes"] if n.startswith("refused ")]
        self.assertEqual(len(refused), 1, s.report["job"]["notes"])
        self.assertIn("with a wrong session token", refused[0])
        self.assertIn("of session 'other-session'", refused[0])
        self.reliability("A wrong token; an agent of another session",
                         "refused; the job unharmed; the session complete",
                         f"rc {wrong.returncode} and 0 as bare; one note counts the refusals")

    def test_garbage_on_the_grpc_port(self):
        coord = Coordinator(self.tmp, ranks=1, extra=("--timeout", "20"))
        host, port = coord.address.rsplit(":", 1)
        payloads = [b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", os.urandom(4096),
                    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + os.urandom(64), b"\x00" * 9]
        for p in payloads:
            with socket.create_connection((host, int(port)), timeout=5) as s:
                s.sendall(p)
                s.settimeout(2)
                try:
                    s.recv(1024)
                except (socket.timeout, ConnectionResetError):
                    pass
        # Still serving real agents afterwards.
        good = self.run_plain([RANKSCOPE, "agent", "--", "sh", "-c", "exit 0"],
                              extra_env=coord.agent_env())
        self.assertEqual(good.returncode, 0, good.stderr)
        rc, out, err = coord.wait()
        self.assertEqual(rc, 0, err)
        job = Session(coord.out).report["job"]
        self.assertEqual(job["status"], "complete")
        self.assertEqual(job["partial_reasons"], [])
        self.assertLessEqual(len([n for n in job["notes"] if n.startswith("refused ")]), 1)
        self.reliability("HTTP/1, random bytes, a bad HTTP/2 preface on the coordinator's port",
                         "still serves agents; the session stays complete",
                         "agent rc 0 after; complete, no partial reasons, at most one note")


if __name__ == "__main__":
    unittest.main()
