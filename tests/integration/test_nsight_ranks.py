"""`rankscope run --ncu-rank R` / `--nsys-ranks` and `rankscope report --ncu RANK=FILE` on CPU:
real mpirun, agents, gRPC and writers; ncu cannot run here, so a stand-in on PATH plays it (it
logs how it was called, writes the report file, runs the rank's program and, for `--import`,
prints the real H200 raw page of tests/fixtures/h200-ncu). The real ncu runs in
tests/gpu/run_ncu_rank_check.sh."""
import json
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import MPI_TRAIN, RANKSCOPE, RankscopeTest, Session, mpirun  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures")
NCU_CSV = os.path.join(FIXTURES, "h200-ncu", "heavy_stencil.raw.csv")
GPU_SESSION = os.path.join(FIXTURES, "h100-mpi-gpu-steps", "heavy-rank1.sqlite")

# ncu's command line as the agent writes it: 13 words before the program (-k REGEX included).
STAND_IN_NCU = """#!/bin/sh
if [ "$1" = --import ]; then
  [ "$3 $4 $5" = "--csv --page raw" ] && [ -f "$2" ] || exit 2
  cat "%(csv)s"
  echo "==WARNING== said on stderr, kept out of the job's output" >&2
  exit 0
fi
echo "$*" >> "%(log)s"
while [ $# -gt 0 ] && [ "$1" != -o ]; do shift; done
printf 'rep' > "$2.ncu-rep"
shift 2
exec "$@"
"""


class NsightRanks(RankscopeTest):
    def stand_in(self, name, body):
        bin_dir = os.path.join(self.tmp, "bin")
        os.makedirs(bin_dir, exist_ok=True)
        path = os.path.join(bin_dir, name)
        with open(path, "w") as f:
            f.write(body)
        os.chmod(path, 0o755)
        return {"PATH": bin_dir + os.pathsep + os.environ["PATH"]}

    def test_ncu_runs_on_the_chosen_rank_only_and_its_report_joins_the_findings(self):
        log = os.path.join(self.tmp, "ncu-calls")
        env = self.stand_in("ncu", STAND_IN_NCU % {"csv": NCU_CSV, "log": log})
        proc, out = self.run_rankscope(
            mpirun(3, MPI_TRAIN, "--steps", "20", "--slow-rank", "1", "--slow-ms", "30"),
            extra_env=env, opts=["--ncu-rank", "1", "--ncu-kernel", "heavy_stencil"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotIn("said on stderr", proc.stderr + proc.stdout)
        with open(log) as f:
            calls = f.read().splitlines()
        report = os.path.join(os.path.abspath(out), "rank1_kernel")
        self.assertEqual(len(calls), 1, calls)  # rank 1 alone
        self.assertTrue(
            calls[0].startswith("--set full -k regex:heavy_stencil --launch-skip 0 --launch-count 1 "
                                "--target-processes all -f -o " + report + " " + MPI_TRAIN),
            calls[0])
        self.assertFile(report + ".ncu-rep")
        s = Session(out)
        tools = s.report["tool_reports"]
        self.assertEqual([(t["rank"], t["tool"], t["path"], t["error"]) for t in tools],
                         [(1, "ncu", report + ".ncu-rep", None)])
        self.assertEqual([k["bound"] for k in tools[0]["kernels"]], ["compute-bound"])
        # The program ran under ncu and still was rank 1: its straggling found, but as
        # information that opens with the tool's part in it, with the verdict on the kernel ncu
        # measured, and the next steps: that report in full, then the run without ncu.
        stragglers = [f for f in s.findings if f["kind"] == "straggler"]
        self.assertEqual([f["ranks"] for f in stragglers], [[1]], proc.stderr)
        f = stragglers[0]
        self.assertEqual(f["evidence"].get("under_tool"), "ncu", f)
        self.assertEqual(f["severity"], "info")
        self.assertTrue(f["summary"].startswith("rank 1 ran under ncu, "), f["summary"])
        self.assertEqual([v["kernel"] for v in f["evidence"]["kernel_verdicts"]], ["heavy_stencil"])
        steps = [step["command"] for step in f["next_steps"]]
        self.assertEqual(steps[0], "rankscope inspect ncu %s.ncu-rep --html rank1_kernel.html"
                         % report)
        self.assertTrue(steps[1].startswith("rankscope run -o rankscope-without-ncu -- mpirun "),
                        steps)
        with open(os.path.join(out, "report.txt")) as f:
            text = f.read()
        self.assertIn("rank 1 ran under ncu: ", text)
        self.assertIn("kernel (ncu): heavy_stencil: compute-bound", text)
        with open(os.path.join(out, "report.html")) as f:
            html = f.read()
        self.assertIn('<section id="ncu">', html)
        self.assertIn("<svg", html[html.index('<section id="ncu">'):])
        # Saved and read back: `rankscope report` on the folder gives the same tool report.
        again = subprocess.run([RANKSCOPE, "report", "-q", out, "-o", out + "-again"],
                               capture_output=True, text=True, timeout=120)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertEqual(Session(out + "-again").report["tool_reports"], tools)

    def test_a_rank_whose_node_has_no_ncu_runs_without_it_and_the_report_says_so(self):
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin"}
        self.assertIsNone(shutil.which("ncu", path=env["PATH"]))
        proc, out = self.run_rankscope(mpirun(2, "sh", "-c", "exit 0"), extra_env=env,
                                       opts=["--ncu-rank", "0"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("rank 0 was to run under ncu, which is not on PATH", proc.stderr)
        s = Session(out)
        self.assertNotIn("tool_reports", s.report)
        notices = json.dumps(s.report["ranks"])
        self.assertIn("which is not on PATH on this node", notices)

    def test_ncu_that_wrote_no_report_is_an_error_naming_the_file_and_the_exit_code_passes(self):
        # ncu that profiles nothing (no kernel matched): no file, the program's own exit code.
        env = self.stand_in("ncu", '#!/bin/sh\nwhile [ "$1" != -o ]; do shift; done\nshift 2\n'
                                   'exec "$@"\n')
        proc, out = self.run_rankscope(mpirun(2, "sh", "-c", "exit 3"), extra_env=env,
                                       opts=["--ncu-rank", "1"])
        bare_rc = self.run_plain(mpirun(2, "sh", "-c", "exit 3")).returncode
        self.assertEqual(proc.returncode, bare_rc)
        tools = Session(out).report["tool_reports"]
        self.assertEqual(len(tools), 1)
        self.assertIn("ncu wrote no report at " + os.path.abspath(out) + "/rank1_kernel.ncu-rep",
                      tools[0]["error"])

    def test_nsys_ranks_each_write_their_own_report(self):
        log = os.path.join(self.tmp, "nsys-calls")
        env = self.stand_in("nsys", '#!/bin/sh\necho "$*" >> "%s"\nout=${4#--output=}\n'
                                    'printf rep > "$out.nsys-rep"\nshift 4\nexec "$@"\n' % log)
        proc, out = self.run_rankscope(mpirun(3, "sh", "-c", "exit 0"), extra_env=env,
                                       opts=["--nsys-ranks", "0,2"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(log) as f:
            self.assertEqual(len(f.read().splitlines()), 2)
        for rank in (0, 2):
            self.assertFile(os.path.join(out, "rank%d.nsys-rep" % rank))
        tools = Session(out).report["tool_reports"]
        self.assertEqual([(t["rank"], t["tool"], t["error"]) for t in tools],
                         [(0, "nsys", None), (2, "nsys", None)])

    def test_report_joins_an_ncu_report_of_another_run_into_the_gpu_straggler(self):
        # The real H100 session whose rank 1 ran heavy_stencil 3.5 ms a step, and ncu's real
        # report of that kernel from an H200.
        folder = os.path.join(self.tmp, "gpu")
        os.makedirs(folder)
        shutil.copy(GPU_SESSION, os.path.join(folder, "session.sqlite"))
        proc = subprocess.run([RANKSCOPE, "report", "-q", folder, "--ncu", "1=" + NCU_CSV],
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        f = Session(folder).findings[0]
        self.assertEqual((f["kind"], f["ranks"]), ("straggler", [1]))
        verdicts = f["evidence"]["kernel_verdicts"]
        self.assertEqual([(v["kernel"], v["bound"], v["report"]) for v in verdicts],
                         [("heavy_stencil", "compute-bound", NCU_CSV)])
        self.assertIn("cycles per issued instruction", verdicts[0]["top_stall"])
        self.assertNotIn("under_tool", f["evidence"])  # ncu slowed the other run, not this one
        self.assertEqual(f["next_steps"][0]["command"],
                         "rankscope inspect ncu %s --html rank1_kernel.html" % NCU_CSV)
        with open(os.path.join(folder, "report.txt")) as t:
            text = t.read()
        self.assertIn("kernel (ncu): heavy_stencil: compute-bound", text)
        self.assertIn("rank 1's ncu report (of another run): " + NCU_CSV, text)

        for arg, says in (("x=" + NCU_CSV, "give RANK=FILE"), ("7=" + NCU_CSV, "no rank 7"),
                          ("1=/nonexistent.csv", "/nonexistent.csv: cannot open")):
            bad = subprocess.run([RANKSCOPE, "report", "-q", folder, "--ncu", arg],
                                 capture_output=True, text=True, timeout=120)
            self.assertEqual(bad.returncode, 1, arg)
            self.assertIn(says, bad.stderr)


if __name__ == "__main__":
    unittest.main()
