"""`rankscope run -- mpirun ...` end to end: real mpirun, agents, gRPC, analyses, writers."""
import os
import re
import shlex
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import BUILD, MPI_TRAIN, RANKSCOPE, RankscopeTest, Session, mpi_env, mpirun  # noqa: E402

STEPS = "30"
OUTPUT_FILES = ("report.txt", "report.json", "report.html", "trace.json", "session.sqlite")


def checksum_line(text):
    m = re.search(r"^mpi_train: .*checksum \S+", text, re.M)
    return m.group(0) if m else None


class RunMpirun(RankscopeTest):
    def test_straggler_found_and_only_it(self):
        proc, out = self.run_rankscope(
            mpirun(4, MPI_TRAIN, "--steps", STEPS, "--slow-rank", "2", "--slow-ms", "30"))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for name in OUTPUT_FILES:
            self.assertFile(os.path.join(out, name))
        s = Session(out)
        self.assertEqual(s.report["job"]["status"], "complete", s.report["job"])
        self.assertEqual(s.report["job"]["world_size"], 4)
        self.assertEqual(sorted(r["rank"] for r in s.report["ranks"]), [0, 1, 2, 3])
        kinds = [(f["kind"], f["ranks"]) for f in s.findings]
        self.assertEqual(kinds, [("straggler", [2])], s.findings)
        f = s.findings[0]
        # The others waited about 30 ms per step for rank 2: 3 ranks x 30 steps x 30 ms = 2.7 s;
        # more when 4 spinning ranks share 2 cores (a 30 ms spin can take 60 ms of wall time),
        # less when the waiting ranks are descheduled too (seen: 17 ms a step under ctest -j2).
        waited_s = f["evidence"]["others_wait_ns"] / 1e9
        self.assertGreater(waited_s, 1.0, f)
        self.assertLess(waited_s, 2.5 * 3 * 30 * 0.030, f)
        self.assertIn("compute", f["summary"], f)
        self.assertTrue(f["next_steps"], "a finding names what to run next")
        self.assertIn("rank 2", proc.stderr)  # the printed report
        # The planner's steps: nsys on rank 2 alone under the job's own mpirun, one report per
        # rank, and the way to the rest of the chain, which runs on this session as printed.
        nsys = f["next_steps"][0]["command"]
        self.assertIn('$PMI_RANK}" = 2 ]; then exec nsys profile', nsys)
        self.assertIn("--output=rank2 ", nsys)
        advise = shlex.split(f["next_steps"][-1]["command"])
        self.assertEqual(advise[:2], ["rankscope", "advise"], f["next_steps"])
        chain = subprocess.run([RANKSCOPE] + advise[1:], capture_output=True, text=True,
                               timeout=60)
        self.assertEqual(chain.returncode, 0, chain.stderr)
        self.assertIn("looking at rank 2", chain.stdout)

    def test_slow_pipeline_stage_is_the_late_sender_not_the_stages_behind_it(self):
        # Rank 1 of a 4-stage MPI_Send/MPI_Recv pipeline computes 20 ms longer: rank 2 waits for
        # it in MPI_Recv, and rank 3 waits for rank 2 only because rank 2 waited (a wait chain).
        proc, out = self.run_rankscope(
            mpirun(4, MPI_TRAIN, "--pipeline", "--steps", STEPS, "--elems", "1024",
                   "--slow-rank", "1", "--slow-ms", "20", "--slow-mode", "sleep"))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        s = Session(out)
        kinds = [(f["kind"], f["ranks"]) for f in s.findings]
        self.assertEqual(kinds, [("late_sender", [1])], s.findings)
        f = s.findings[0]
        self.assertEqual(f["evidence"]["receivers"], [2], f)
        self.assertGreater(f["evidence"]["median_direct_wait_ns"], 15e6, f)
        self.assertLess(f["evidence"]["median_direct_wait_ns"], 40e6, f)
        self.assertIn("NVTX range 'compute'", f["summary"], f)

    def test_slow_last_stage_with_large_messages_is_the_late_receiver(self):
        # 1 MiB messages go by rendezvous: rank 2's MPI_Send cannot finish until rank 3, which
        # computes 20 ms longer, posts its MPI_Recv. Ranks 1 and 0 then wait in their sends only
        # because the stage after them was waiting: one finding, rank 3.
        proc, out = self.run_rankscope(
            mpirun(4, MPI_TRAIN, "--pipeline", "--steps", STEPS, "--elems", "262144",
                   "--slow-rank", "3", "--slow-ms", "20", "--slow-mode", "sleep"))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        s = Session(out)
        kinds = [(f["kind"], f["ranks"]) for f in s.findings]
        self.assertEqual(kinds, [("late_receiver", [3])], s.findings)
        f = s.findings[0]
        self.assertEqual(f["evidence"]["senders"], [2], f)
        self.assertEqual(f["evidence"]["median_message_bytes"], 1 << 20, f)
        self.assertGreater(f["evidence"]["median_direct_wait_ns"], 10e6, f)
        self.assertLess(f["evidence"]["median_direct_wait_ns"], 30e6, f)
        self.assertIn("NVTX range 'compute'", f["summary"], f)
        self.assertIn("rank 3", proc.stderr)  # the printed report

    def test_dataloader_rank_found_and_only_it(self):
        proc, out = self.run_rankscope(
            mpirun(4, MPI_TRAIN, "--steps", STEPS, "--slow-loader-rank", "1", "--loader-ms", "25"))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        s = Session(out)
        kinds = [(f["kind"], f["ranks"]) for f in s.findings]
        self.assertEqual(kinds, [("dataloader_skew", [1])], s.findings)
        # The agents' /proc figures: rank 1's loader slept, it neither read nor computed more.
        self.assertEqual(s.findings[0]["evidence"]["process"]["verdict"], "waiting", s.findings)
        for r in s.report["ranks"]:
            self.assertGreater(r["process"]["samples"], 0, r)
            self.assertGreater(r["process"]["cpu_user_ns"] + r["process"]["cpu_system_ns"], 0, r)
            # Scheduler figures over every thread (Open MPI adds its own), and the wall covered.
            self.assertGreater(r["process"]["threads"], 1, r)
            self.assertGreater(r["process"]["sched_cpu_ns"], 0, r)
            self.assertGreater(r["process"]["sampled_wall_ns"], 0, r)
            self.assertIn("cpu_cgroup", r["process"], r)

    def test_reading_loader_is_called_io_heavy_from_proc(self):
        proc, out = self.run_rankscope(
            mpirun(4, MPI_TRAIN, "--steps", STEPS, "--slow-loader-rank", "2", "--loader-ms", "25",
                   "--loader-mode", "read"))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        s = Session(out)
        kinds = [(f["kind"], f["ranks"]) for f in s.findings]
        self.assertEqual(kinds, [("dataloader_skew", [2])], s.findings)
        p = s.findings[0]["evidence"]["process"]
        self.assertEqual(p["verdict"], "io", p)
        self.assertGreater(p["rchar_bytes"], 10 * p["others_rchar_bytes"], p)
        self.assertIn("I/O-heavy", s.findings[0]["summary"])

    def test_clean_run_reports_nothing_and_output_is_unchanged(self):
        plain = self.run_plain(mpirun(4, MPI_TRAIN, "--steps", STEPS))
        self.assertEqual(plain.returncode, 0, plain.stderr)
        proc, out = self.run_rankscope(mpirun(4, MPI_TRAIN, "--steps", STEPS))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        # Same program output (the checksum depends on every allreduce).
        self.assertIsNotNone(checksum_line(plain.stdout))
        self.assertEqual(checksum_line(proc.stdout), checksum_line(plain.stdout))
        s = Session(out)
        self.assertEqual(s.findings, [])
        self.assertEqual(s.report["job"]["status"], "complete")
        for r in s.report["ranks"]:
            self.assertEqual(r["exit_code"], 0)
            self.assertGreater(r["counts"]["collectives"], int(STEPS) - 1)
            self.assertGreater(r["counts"]["ranges"], 3 * int(STEPS) - 1)

    def test_status_line_on_a_terminal_and_none_in_a_pipe(self):
        # On a terminal (a pty from script(1)) the status line is redrawn each second while the
        # job runs and cleared before the report; the job's output and exit code are unchanged.
        out_dir = os.path.join(self.tmp, "tty")
        job = mpirun(4, MPI_TRAIN, "--steps", "200", "--compute-ms", "8")
        argv = [RANKSCOPE, "run", "-o", out_dir, "--"] + job
        proc = subprocess.run(["script", "-qfec", shlex.join(argv), "/dev/null"],
                              env=mpi_env(), capture_output=True, timeout=240, cwd=self.tmp)
        tty = proc.stdout.decode(errors="replace")  # bytes: text mode would turn \r into \n
        self.assertEqual(proc.returncode, 0, tty[-3000:])
        lines = re.findall(r"\rrankscope: 4 ranks, step [\d,]+, [\d.]+ (?:k |M )?records/s, "
                           r"\d+ s\x1b\[K", tty)
        self.assertGreaterEqual(len(lines), 2, tty[-3000:])
        self.assertIn("\r\x1b[K", tty)
        self.assertIsNotNone(checksum_line(tty.replace("\r\n", "\n")))
        # Not a terminal, no --live: nothing of it.
        plain, _ = self.run_rankscope(mpirun(4, MPI_TRAIN, "--steps", STEPS))
        self.assertNotIn("records/s", plain.stderr + plain.stdout)

    def test_crashing_rank_gives_launcher_exit_code_and_partial_report(self):
        plain = self.run_plain(mpirun(4, MPI_TRAIN, "--steps", STEPS, "--crash-rank", "2"))
        self.assertNotEqual(plain.returncode, 0)
        proc, out = self.run_rankscope(mpirun(4, MPI_TRAIN, "--steps", STEPS, "--crash-rank", "2"))
        self.assertEqual(proc.returncode, plain.returncode, proc.stderr)
        s = Session(out)
        self.assertEqual(s.report["job"]["status"], "partial")
        reasons = " ".join(s.report["job"]["partial_reasons"])
        self.assertIn("rank 2", reasons)
        # mpirun then kills the others, which all read as failed: the order names the first.
        self.assertRegex(reasons, r"rank 2 \(\S+\) ended first \(.*\), .* before the next")
        # The agent runs beside the rank, not as its parent: it reads the signal from the
        # rank's zombie, unless mpirun reaped it first (then it says it did not see it).
        if s.rank(2)["exit_unseen"]:
            self.assertIn("rank 2 (", reasons)
            self.assertIn("ended without calling exit()", reasons)
        else:
            self.assertEqual(s.rank(2)["term_signal"], 6)  # abort()
        self.reliability("A rank that aborts under mpirun (the others then killed by it)",
                         "the launcher's exit code; PARTIAL naming the rank that ended first",
                         f"rc {proc.returncode} = bare; " +
                         next(r for r in s.report["job"]["partial_reasons"] if "ended first" in r))

    def test_nvml_read_once_per_node_and_degraded_links_shown(self):
        # A stand-in libnvidia-ml (agent/fake_nvml.cc): GPU 1 trained down to gen 3 x8.
        fake = os.path.join(BUILD, "tests", "libfake_nvml.so")
        proc, out = self.run_rankscope(mpirun(4, MPI_TRAIN, "--steps", "10"),
                                       extra_env={"RANKSCOPE_NVML_LIBRARY": fake})
        self.assertEqual(proc.returncode, 0, proc.stderr)
        s = Session(out)
        self.assertEqual(len(s.report["nvml"]), 1, s.report["nvml"])  # local rank 0 only
        gpus = s.report["nvml"][0]["gpus"]
        self.assertEqual([g["pcie_degraded"] for g in gpus], [False, True])
        self.assertEqual(gpus[1]["nvlinks_up"], 16)
        self.assertIn("PCIe gen 3 x8 (max gen 5 x16), NVLink 16/18 up", proc.stderr)
        # ... and they are findings on that node, naming the GPU.
        kinds = sorted((f["kind"], f["nodes"][0]) for f in s.findings)
        node = s.report["nvml"][0]["node"]
        self.assertEqual(kinds, [("nvlink_down", node), ("pcie_bound", node)], s.findings)
        pcie = [f for f in s.findings if f["kind"] == "pcie_bound"][0]
        self.assertIn("gen 3 x8 of gen 5 x16", pcie["summary"])
        self.assertEqual(sorted(pcie["ranks"]), [0, 1, 2, 3])

    def test_no_nvml_is_silent_on_a_cpu_job(self):
        proc, out = self.run_rankscope(
            mpirun(2, MPI_TRAIN, "--steps", "5"),
            extra_env={"RANKSCOPE_NVML_LIBRARY": "libnvidia-ml-not-here.so.1"})
        self.assertEqual(proc.returncode, 0, proc.stderr)
        s = Session(out)
        self.assertIn("cannot load libnvidia-ml-not-here.so.1", s.report["nvml"][0]["error"])
        self.assertNotIn("NVML", proc.stderr)

    def test_report_reanalyses_a_saved_session_with_other_thresholds(self):
        proc, out = self.run_rankscope(
            mpirun(4, MPI_TRAIN, "--steps", "20", "--slow-rank", "1", "--slow-ms", "20"))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual([(f["kind"], f["ranks"]) for f in Session(out).findings],
                         [("straggler", [1])])
        # Same thresholds, another folder: the same finding, every file written.
        again = os.path.join(self.tmp, "again")
        p = self.run_plain([RANKSCOPE, "report", out, "-o", again])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("rank 1", p.stdout)
        for name in OUTPUT_FILES:
            self.assertFile(os.path.join(again, name))
        self.assertEqual([(f["kind"], f["ranks"]) for f in Session(again).findings],
                         [("straggler", [1])])
        # The planner fills its commands in with the straggler: nsys on rank 1 only.
        p = self.run_plain([RANKSCOPE, "advise", "--session", again, "where", "time", "goes"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("looking at rank 1 (straggler)", p.stdout)
        self.assertIn('= 1 ]; then exec nsys profile', p.stdout)
        # A what-if gain threshold above what rank 1 costs: nothing to report, in place.
        p = self.run_plain([RANKSCOPE, "report", out, "-q", "--min-gain-fraction", "0.99"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(Session(out).findings, [])
        # Not a session folder: a clear error naming the file.
        p = self.run_plain([RANKSCOPE, "report", self.tmp])
        self.assertEqual(p.returncode, 1)
        self.assertIn("session.sqlite", p.stderr)

    def test_exit_code_passes_through(self):
        proc, out = self.run_rankscope(["sh", "-c", "echo hello; exit 7"])
        self.assertEqual(proc.returncode, 7)
        self.assertEqual(proc.stdout, "hello\n")
        proc, out = self.run_rankscope(mpirun(2, "sh", "-c", "exit 3"), out="o2")
        bare_rc = self.run_plain(mpirun(2, "sh", "-c", "exit 3")).returncode
        self.assertEqual(proc.returncode, bare_rc)
        self.reliability("A program's exit code", "passes through unchanged",
                         f"7 alone; {proc.returncode} = bare under mpirun")

    def test_program_mpirun_cannot_start_fails_as_a_bare_launch(self):
        # A missing or non-executable program: mpirun's own message and exit code (132), not
        # one "cannot run" line per rank and 127 from agents; no session for nothing run.
        plain = os.path.join(self.tmp, "not-executable")
        with open(plain, "w") as f:
            f.write("data\n")
        for program in ("/no/such/program", plain):
            bare = self.run_plain(mpirun(2, program))
            proc, out = self.run_rankscope(mpirun(2, program))
            self.assertEqual(proc.returncode, bare.returncode, proc.stderr)
            self.assertNotEqual(bare.returncode, 0)
            self.assertEqual(proc.stdout, bare.stdout)
            self.assertIn("unable to launch the specified application", proc.stderr)
            self.assertNotIn("rankscope agent", proc.stderr)
            self.assertIn(program, proc.stderr.splitlines()[0])
            self.assertFalse(os.path.exists(out), out)
        self.reliability("mpirun of a missing or non-executable program",
                         "mpirun's own message and exit code, as bare",
                         f"rc {proc.returncode} = bare for both; one rankscope line, no agent "
                         "lines, no session folder")

    def test_a_program_in_the_working_directory_runs_as_under_bare_mpirun(self):
        # Open MPI runs a bare name found in the working directory, not in PATH; the agent used
        # to look in PATH only (rc 127, "cannot run").
        prog = os.path.join(self.tmp, "rankscope-it-prog")
        with open(prog, "w") as f:
            f.write('#!/bin/sh\necho "ran $OMPI_COMM_WORLD_RANK"\n')
        os.chmod(prog, 0o755)
        bare = self.run_plain(mpirun(2, "rankscope-it-prog"))
        self.assertEqual(bare.returncode, 0, bare.stderr)
        proc, out = self.run_rankscope(mpirun(2, "rankscope-it-prog"))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(sorted(proc.stdout.splitlines()), sorted(bare.stdout.splitlines()),
                         proc.stderr)
        job = Session(out).report["job"]
        self.assertEqual(job["status"], "complete", (job, proc.stderr))

    def test_launcher_not_installed(self):
        proc, out = self.run_rankscope(["no-such-launcher-xyz", "prog"])
        self.assertEqual(proc.returncode, 127)
        self.assertIn("no-such-launcher-xyz", proc.stderr)
        self.assertEqual(Session(out).report["job"]["status"], "partial")


if __name__ == "__main__":
    unittest.main()
