"""Faults from outside, each against a bare run of the same job (issue #14): what the user sees
(output, exit code, time) must be the bare run's, and the report must keep every rank's data,
saying what was wrong and where.

Bad strings: text that is not UTF-8 (a Latin-1 argument, an NVTX name longer than the wire's
255-byte limit that ends in a multi-byte character). Before the proto carried text as bytes,
one such byte made the coordinator drop every batch of the rank from there on, printed tens of
thousands of libprotobuf errors on the job's stderr and returned 10 s late.
"""
import glob
import json
import os
import pty
import re
import select
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scenarios  # noqa: E402
from harness import (BUILD, MPI_TRAIN, RANKSCOPE, Coordinator, RankscopeTest, Session,  # noqa
                     mpi_env, mpirun, schema_errors)

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures",
                        "h200x2-torch-allreduce")
LATIN1 = "caf\udce9"  # b"caf\xe9" as a command-line argument (surrogateescape)
FFFD = "\ufffd"


def without_wall(stdout):
    """mpi_train's output less its timing: what a run under rankscope must keep."""
    return [ln.split(", wall")[0] for ln in stdout.splitlines()]


def wait_until_ranks_run(pid, ranks=2, timeout=60.0):
    """Until `ranks` descendants of pid run mpi_train, then one second more: a fault must reach
    a running job (mpirun's own start takes 2 s more on some machines)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        running = 0
        for child, _ in scenarios.descendants(pid):
            try:
                with open(f"/proc/{child}/comm") as f:
                    running += f.read().strip() == "mpi_train"
            except OSError:
                pass
        if running >= ranks:
            time.sleep(1.0)
            return
        time.sleep(0.05)
    raise AssertionError(f"the job's {ranks} ranks did not start within {timeout} s")


class BadStrings(RankscopeTest):
    def run_both(self, command):
        """(bare, profiled, seconds of each, session folder); bytes for stdout/stderr."""
        t0 = time.monotonic()
        bare = subprocess.run(command, env=mpi_env(), capture_output=True, timeout=120,
                              cwd=self.tmp)
        bare_s = time.monotonic() - t0
        out = os.path.join(self.tmp, "out")
        t0 = time.monotonic()
        prof = subprocess.run([RANKSCOPE, "run", "-o", out, "--"] + command, env=mpi_env(),
                              capture_output=True, timeout=120, cwd=self.tmp)
        prof_s = time.monotonic() - t0
        return bare, prof, bare_s, prof_s, out

    def assertLikeBare(self, bare, prof, bare_s, prof_s):
        self.assertEqual(prof.returncode, bare.returncode, prof.stderr[-2000:])
        self.assertFalse(b"libprotobuf" in prof.stderr,
                         f"{prof.stderr.count(b'libprotobuf')} libprotobuf lines: "
                         f"{prof.stderr[-1000:]!r}")
        # Only rankscope's own summary lines are added to stderr.
        self.assertLess(len(prof.stderr), len(bare.stderr) + 4000, prof.stderr[-2000:])
        self.assertLess(prof_s, bare_s + 5.0)

    def test_an_argument_that_is_not_utf8_keeps_the_rank(self):
        command = ["sh", "-c", 'echo "$1"; exit 3', "sh", LATIN1]
        bare, prof, bare_s, prof_s, out = self.run_both(command)
        self.assertEqual(bare.returncode, 3)
        self.assertEqual(prof.stdout, bare.stdout)
        self.assertEqual(prof.stdout, b"caf\xe9\n")
        self.assertLikeBare(bare, prof, bare_s, prof_s)
        s = Session(out)
        self.assertEqual([r["rank"] for r in s.report["ranks"]], [0])
        self.assertTrue(s.rank(0)["finished"], s.rank(0))
        self.assertEqual(s.rank(0)["exit_code"], 3)
        self.assertIn("caf" + FFFD, s.report["job"]["command"])
        self.reliability("A program argument that is not UTF-8",
                         "output and exit code as bare, the rank's data kept",
                         f"rc {prof.returncode} = bare; rank 0 finished; shown as caf\ufffd; "
                         f"{prof_s:.2f} s vs {bare_s:.2f} s bare")

    def test_nvtx_names_cut_in_a_character_or_in_latin1_keep_every_record(self):
        steps = 30
        base = mpirun(2, MPI_TRAIN, "--steps", str(steps), "--quiet")
        # The same job with the compute range named "compute": the records it must keep.
        ref_out = os.path.join(self.tmp, "ref")
        ref = subprocess.run([RANKSCOPE, "run", "-o", ref_out, "--"] + base, env=mpi_env(),
                             capture_output=True, timeout=120, cwd=self.tmp)
        self.assertEqual(ref.returncode, 0, ref.stderr)
        ref_counts = [Session(ref_out).rank(r)["counts"] for r in (0, 1)]
        self.assertGreaterEqual(ref_counts[0]["ranges"], 3 * steps, ref_counts)
        ref_names = self.range_names(ref_out)
        self.assertIn("compute", ref_names)
        for name, shown in ((("n" * 254) + "\u20ac", "n" * 254),  # 257 bytes: cut at 254
                            (LATIN1, "caf" + FFFD)):
            with self.subTest(name=shown[:12]):
                bare, prof, bare_s, prof_s, out = self.run_both(base + ["--compute-name", name])
                self.assertEqual(bare.returncode, 0, bare.stderr)
                checksum = [ln.split(b", wall")[0] for ln in bare.stdout.splitlines()]
                self.assertEqual([ln.split(b", wall")[0] for ln in prof.stdout.splitlines()],
                                 checksum)
                self.assertLikeBare(bare, prof, bare_s, prof_s)
                s = Session(out)
                self.assertNotIn("PARTIAL", open(os.path.join(out, "report.txt")).readline())
                self.assertEqual([s.rank(r)["counts"] for r in (0, 1)], ref_counts)
                self.assertEqual(self.range_names(out), (ref_names - {"compute"}) | {shown})
                os.rename(out, out + "-" + str(len(name)))
        self.reliability("NVTX names cut inside a character, or Latin-1",
                         "every record kept, no libprotobuf errors, output as bare",
                         f"both ranks' counts equal the clean run's ({ref_counts[0]['ranges']} "
                         "ranges a rank); the names shown with U+FFFD")

    def test_inspect_json_of_a_log_and_a_dump_with_a_latin1_byte(self):
        # Before: an uncaught nlohmann type_error.316, rc 134, no output.
        with open(os.path.join(FIXTURES, "nccl.vm.747.log"), "rb") as f:
            lines = f.read().split(b"\n")
        lines.insert(5, b"vm:747:747 [0] NCCL WARN caf\xe9 cannot open the plugin")
        log = os.path.join(self.tmp, "nccl.log")
        with open(log, "wb") as f:
            f.write(b"\n".join(lines))
        with open(os.path.join(FIXTURES, "topo.xml"), "rb") as f:
            xml = f.read().replace(b'name="eth0"', b'name="eth\xe9"')
        topo = os.path.join(self.tmp, "topo.xml")
        with open(topo, "wb") as f:
            f.write(xml)
        for what, path, expect in (("nccl-log", log, "caf" + FFFD), ("topo", topo, "eth" + FFFD)):
            with self.subTest(what=what):
                proc = subprocess.run([RANKSCOPE, "inspect", what, "--json", path],
                                      capture_output=True, timeout=60)
                self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
                text = proc.stdout.decode("utf-8")  # valid UTF-8, or this raises
                self.assertIn(expect, text)
                json.loads(text)
        self.reliability("`inspect --json` of an NCCL log or topology dump with a Latin-1 byte",
                         "valid UTF-8 JSON, rc 0", "both rc 0, JSON parses, byte shown as U+FFFD")

    @staticmethod
    def range_names(out):
        db = sqlite3.connect(os.path.join(out, "session.sqlite"))
        try:
            return {n for (n,) in db.execute("SELECT DISTINCT name FROM ranges")}
        finally:
            db.close()


class Usage(RankscopeTest):
    def test_a_launch_without_the_dashes_says_where_they_go(self):
        marker = os.path.join(self.tmp, "ran")
        proc = subprocess.run([RANKSCOPE, "run", "-o", os.path.join(self.tmp, "out"), "sh", "-c",
                               "touch " + marker], capture_output=True, text=True, timeout=60)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("not expected: -c", proc.stderr)
        self.assertIn("Put -- before the launch command", proc.stderr)
        self.assertFalse(os.path.exists(marker))
        self.reliability("`rankscope run` without `--`", "a hint where it goes; nothing run",
                         f"rc {proc.returncode}, 'Put -- before the launch command'")


    def test_a_port_in_use_or_an_address_not_here_still_runs_the_job(self):
        job = mpirun(2, MPI_TRAIN, "--steps", "5")
        bare = self.run_plain(job)
        with socket.socket() as held:
            held.bind(("127.0.0.1", 0))
            held.listen()
            port = str(held.getsockname()[1])
            proc, out = self.run_rankscope(job, opts=("--port", port))
        self.assertEqual(proc.returncode, bare.returncode, proc.stderr)
        self.assertEqual(without_wall(proc.stdout), without_wall(bare.stdout))
        self.assertIn("listening on a free port instead", proc.stderr)
        self.assertEqual(Session(out).report["job"]["status"], "complete")
        # Nowhere to listen at all: the job runs unprofiled, and says so.
        proc, out = self.run_rankscope(job, out="out2", opts=("--bind", "192.0.2.1"))
        self.assertEqual(proc.returncode, bare.returncode, proc.stderr)
        self.assertEqual(without_wall(proc.stdout), without_wall(bare.stdout))
        self.assertIn("running the job unprofiled", proc.stderr)
        self.assertFalse(os.path.exists(out))
        self.reliability("`--port` taken; an address not on this host",
                         "the job runs as bare either way",
                         f"rc {bare.returncode} = bare both times; a free port, complete "
                         "report; unprofiled, said so")


    def test_a_stand_alone_coordinator_refuses_a_weak_or_readable_secret(self):
        for name, secret, mode, says in (("short", "x\n", 0o600, "at least 16"),
                                         ("shared", "a" * 48 + "\n", 0o644, "chmod 600")):
            path = os.path.join(self.tmp, name)
            with open(path, "w") as f:
                f.write(secret)
            os.chmod(path, mode)
            proc = subprocess.run([RANKSCOPE, "coordinator", "--token-file", path],
                                  capture_output=True, text=True, timeout=30)
            self.assertEqual(proc.returncode, 2, proc.stderr)
            self.assertIn(says, proc.stderr)
            self.assertIn(path, proc.stderr)
        self.reliability("Stand-alone coordinator: a 1-character secret, a 0644 token file",
                         "refused before listening", "rc 2 for both, naming the file")


class Signals(RankscopeTest):
    """SIGINT and SIGTERM to `rankscope run` end the job as they end a bare mpirun."""
    JOB = mpirun(2, MPI_TRAIN, "--steps", "100000")

    def interrupt(self, argv, how):
        """Starts argv, interrupts it once its ranks run; its exit code and how long it took to
        end."""
        if how == "terminal":
            pid, fd = pty.fork()
            if pid == 0:
                os.chdir(self.tmp)
                os.execvpe(argv[0], argv, mpi_env())
            wait_until_ranks_run(pid)
            start = time.monotonic()
            os.write(fd, b"\x03")  # the terminal's foreground process group gets SIGINT
            while select.select([fd], [], [], 60)[0]:
                try:
                    if not os.read(fd, 65536):
                        break
                except OSError:
                    break
            _, status = os.waitpid(pid, 0)
            os.close(fd)
            return os.waitstatus_to_exitcode(status), time.monotonic() - start
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=mpi_env(), cwd=self.tmp, start_new_session=True)
        wait_until_ranks_run(proc.pid)
        start = time.monotonic()
        proc.send_signal(signal.SIGINT if how == "SIGINT" else signal.SIGTERM)
        proc.wait(timeout=60)
        return proc.returncode, time.monotonic() - start

    def test_each_signal_ends_the_job_as_it_ends_a_bare_launch(self):
        took_by = {}
        for k, how in enumerate(("SIGTERM", "SIGINT", "terminal")):
            bare_rc, bare_s = self.interrupt(self.JOB, how)
            out = os.path.join(self.tmp, "out%d" % k)
            rc, took = self.interrupt([RANKSCOPE, "run", "-o", out, "--"] + self.JOB, how)
            self.assertEqual(rc, bare_rc, how)
            self.assertLess(took, bare_s + 2.0, how)  # the report is written, not waited for
            self.assertEqual(Session(out).report["job"]["status"], "partial", how)
            took_by[how] = (took, bare_s)
        self.reliability("SIGTERM, SIGINT to `rankscope run` alone; Ctrl-C on a terminal",
                         "the job ends as a bare launch does; the report is written",
                         "; ".join(f"{h}: {t:.2f} s (bare {b:.2f} s)"
                                   for h, (t, b) in took_by.items()))

    def fake_launcher(self, version_delay_s):
        """An `mpirun` that answers --version after version_delay_s and otherwise waits 30 s
        without starting anything (a launcher in its start-up), exiting 1 on SIGTERM; and the
        file it touches once it runs as the launcher."""
        bindir = os.path.join(self.tmp, "bin")
        os.makedirs(bindir, exist_ok=True)
        marker = os.path.join(self.tmp, "launched")
        asked = os.path.join(self.tmp, "asked")
        with open(os.path.join(bindir, "mpirun"), "w") as f:
            f.write("#!/bin/sh\n"
                    f'if [ "$1" = --version ]; then touch {asked}; sleep {version_delay_s}; '
                    'echo "mpirun (Open MPI) 4.1.4"; exit 0; fi\n'
                    f"touch {marker}\n"
                    "sleep 30 & trap 'kill $!; exit 1' TERM\nwait\n")
        os.chmod(os.path.join(bindir, "mpirun"), 0o755)
        return mpi_env({"PATH": bindir + ":" + os.environ["PATH"]}), marker

    def run_under_fake_launcher(self, env):
        """`rankscope run -o OUT -- mpirun -np 2 true` with the fake launcher: (process, OUT)."""
        out = os.path.join(self.tmp, "out")
        proc = subprocess.Popen([RANKSCOPE, "run", "-o", out, "--", "mpirun", "-np", "2", "true"],
                                env=env, cwd=self.tmp, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        return proc, out

    @staticmethod
    def wait_for_file(path, timeout=30.0):
        deadline = time.monotonic() + timeout
        while not os.path.exists(path) and time.monotonic() < deadline:
            time.sleep(0.05)
        return os.path.exists(path)

    def test_a_launcher_killed_before_its_ranks_start_is_not_waited_for(self):
        # Before: the report waited 5 s for agents that were never started.
        env, marker = self.fake_launcher(0)
        proc, out = self.run_under_fake_launcher(env)
        self.assertTrue(self.wait_for_file(marker), "the launcher did not start")
        start = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
        took = time.monotonic() - start
        self.assertEqual(proc.returncode, 1, stderr)  # the launcher's own
        self.assertLess(took, 4.0, stderr)  # 1 s for agents still starting; it was 5 s
        report = Session(out).report
        self.assertEqual(report["job"]["status"], "partial")
        self.assertIn("no agent registered", " ".join(report["job"]["partial_reasons"]))
        self.reliability("SIGTERM to `rankscope run` while its launcher starts (no rank yet)",
                         "ends as soon as the launcher; a partial report says no agent came",
                         f"rc 1 (the launcher's), {took:.2f} s after the signal")

    def test_a_signal_before_the_launch_ends_rankscope_as_it_ends_a_launcher(self):
        # Before: the signal came before rankscope caught it (it was still asking `mpirun
        # --version`), and it died without a word.
        env, marker = self.fake_launcher(2)
        proc, out = self.run_under_fake_launcher(env)
        # rankscope asks `mpirun --version` first.
        self.assertTrue(self.wait_for_file(os.path.join(self.tmp, "asked")))
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, -signal.SIGTERM, stderr)
        self.assertIn("before the launch; nothing was run", stderr)
        self.assertFalse(os.path.exists(marker), "the launch was made")
        self.assertFalse(os.path.exists(out), "an empty session folder was left")
        self.reliability("SIGTERM to `rankscope run` before it launched anything",
                         "nothing is launched; it ends by that signal, as a launcher would",
                         "killed by SIGTERM, no launch, no folder left")


def peak_mib_of(argv, env, cwd=None, timeout=120):
    """Runs argv in a child of a fresh Python, so that its RUSAGE_CHILDREN peak is argv's own:
    (exit code, stderr tail, peak resident MiB)."""
    probe = ("import json, os, resource, subprocess, sys\n"
             "p = subprocess.run(json.loads(sys.argv[1]), stdout=subprocess.DEVNULL,"
             " stderr=subprocess.PIPE, text=True, timeout=%d)\n"
             "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
             "print(json.dumps([p.returncode, p.stderr[-3000:], peak]))\n" % timeout)
    out = subprocess.run([sys.executable, "-c", probe, json.dumps(argv)], env=env, cwd=cwd,
                         capture_output=True, text=True, timeout=timeout + 30)
    rc, stderr, peak = json.loads(out.stdout)
    return rc, stderr, peak


class HostileInput(RankscopeTest):
    """Sizes that come from input are checked before anything is allocated from them (issue
    #14, item 5): each case ends with a clear message and a small peak, where each once took
    gigabytes."""
    LIMIT_MIB = 200

    def test_a_world_size_of_2_31_from_the_environment_is_refused_at_register(self):
        # Before: the coordinator listed every missing rank (8 GB) or aborted with rc 134.
        env = mpi_env({"OMPI_COMM_WORLD_SIZE": "2147483647", "OMPI_COMM_WORLD_RANK": "0"})
        out = os.path.join(self.tmp, "out")
        rc, stderr, peak = peak_mib_of([RANKSCOPE, "run", "-o", out, "--", "sh", "-c", "exit 3"],
                                       env)
        self.assertEqual(rc, 3, stderr)  # the program's, as bare
        self.assertLess(peak, self.LIMIT_MIB)
        self.assertIn("not a rank of a job of at most 1048576 ranks", stderr)
        job = Session(out).report["job"]
        self.assertEqual(job["status"], "partial")
        self.assertIn("rank 0 of world size 2147483647", " ".join(job["partial_reasons"]))
        self.reliability("A world size of 2^31 in the job's environment",
                         "the agent is refused at Register, naming it; the program runs as bare",
                         f"rc 3 = bare; partial, the rank named; peak {peak:.0f} MiB")

    def test_a_saved_session_claiming_2_31_ranks_is_read_with_little_memory(self):
        out = os.path.join(self.tmp, "out")
        proc, _ = self.run_rankscope(["sh", "-c", "exit 0"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with sqlite3.connect(os.path.join(out, "session.sqlite")) as db:
            db.execute("UPDATE ranks SET world_size = 2147483647")
            db.execute("UPDATE meta SET value = 2147483647 WHERE key = 'world_size'")
        rc, stderr, peak = peak_mib_of([RANKSCOPE, "report", "-q", out], mpi_env())
        self.assertLess(peak, self.LIMIT_MIB)
        self.assertEqual(rc, 1, stderr)
        self.assertIn("session.sqlite", stderr)
        self.reliability("A saved session.sqlite that claims 2^31 ranks",
                         "refused as corrupt, naming the file, before allocating",
                         f"rc 1; peak {peak:.0f} MiB")

    def test_a_topology_dump_of_4000_gpus_is_refused_before_deriving_pairs(self):
        # Before: 2.2 GB (the GPU pairs are quadratic in GPUs; 50,000 filled 24 GB).
        path = os.path.join(self.tmp, "topo.xml")
        with open(path, "w") as f:
            f.write('<system version="1">\n<cpu numaid="0" arch="x86_64">\n')
            for g in range(4000):
                f.write(f'<pci busid="0000:{g // 256:02x}:{g % 256:02x}.0" class="0x030200">'
                        f'<gpu dev="{g}" sm="90" rank="{g}" gdr="1"/></pci>\n')
            f.write("</cpu>\n</system>\n")
        rc, stderr, peak = peak_mib_of([RANKSCOPE, "inspect", "topo", path], mpi_env())
        self.assertLess(peak, self.LIMIT_MIB)
        self.assertNotEqual(rc, 0)
        self.assertIn(path, stderr)
        self.assertIn("1024", stderr.replace(",", ""))
        self.reliability("An NCCL topology dump of 4,000 GPUs",
                         "refused naming the file and the limit (1,024) before the GPU pairs",
                         f"rc {rc}; peak {peak:.0f} MiB")

    def test_requests_without_the_token_are_refused_before_they_are_read(self):
        # Before: gRPC read each request whole before its token was checked (16 x 60 MiB: 575 MB).
        client = os.path.join(BUILD, "bin", "bench_hostile_upload")
        if not os.path.exists(client):
            self.skipTest("bench_hostile_upload not built (RANKSCOPE_BUILD_BENCH=OFF)")
        coord = Coordinator(self.tmp, ranks=1)
        try:
            attack = subprocess.run([client, coord.address, "16", "60"], capture_output=True,
                                    text=True, timeout=120)
            with open(f"/proc/{coord.proc.pid}/status") as f:
                peak = int(re.search(r"VmHWM:\s+(\d+) kB", f.read()).group(1)) / 1024
        finally:
            coord.kill()
        self.assertEqual(attack.returncode, 0, attack.stderr)
        self.assertIn("16 refused (unauthenticated), 0 other", attack.stdout)
        self.assertLess(peak, 100)
        self.reliability("16 requests of 60 MiB without the token (Upload and Register)",
                         "refused before they are read; the coordinator's memory stays small",
                         f"16 of 16 refused; coordinator peak {peak:.0f} MiB (575 MB before)")


class FullDisks(RankscopeTest):
    def test_a_full_tmpdir_runs_the_program_as_bare(self):
        # The agent's control page was a file in TMPDIR whose size was set but whose blocks were
        # never allocated: on a full file system the first write raised SIGBUS (rc 135 instead of
        # the program's) and the file stayed behind. (Bare mpirun itself fails in a full TMPDIR,
        # PMIx cannot create its store, so the program here is a plain one.)
        tmpdir = os.path.join(self.tmp, "full")
        os.mkdir(tmpdir)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", tmpdir],
                          capture_output=True).returncode != 0:
            self.skipTest("cannot mount a small tmpfs (needs root)")
        try:
            subprocess.run(["dd", "if=/dev/zero", "of=" + os.path.join(tmpdir, "fill"), "bs=4k"],
                           capture_output=True)
            env = mpi_env({"TMPDIR": tmpdir})
            command = ["sh", "-c", "echo step 1; echo step 2; exit 5"]
            bare = subprocess.run(command, env=env, capture_output=True, timeout=60)
            out = os.path.join(self.tmp, "out")
            prof = subprocess.run([RANKSCOPE, "run", "-o", out, "--"] + command, env=env,
                                  capture_output=True, timeout=60)
            self.assertEqual(bare.returncode, 5)
            self.assertEqual(prof.returncode, 5, prof.stderr[-2000:])
            self.assertEqual(prof.stdout, bare.stdout)
            self.assertEqual(os.listdir(tmpdir), ["fill"])
            self.assertEqual(Session(out).rank(0)["exit_code"], 5)
            self.reliability("A full TMPDIR", "the program runs as bare; no files left",
                             "rc 5 = bare, same output, TMPDIR holds only its filler")
        finally:
            subprocess.run(["umount", tmpdir], capture_output=True)

    def mount_tmpfs(self, options):
        path = os.path.join(self.tmp, "fs-" + options.replace(",", "-").replace("=", ""))
        os.mkdir(path)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", path],
                          capture_output=True).returncode != 0:
            self.skipTest("cannot mount a small tmpfs (needs root)")
        self.addCleanup(subprocess.run, ["umount", path], capture_output=True)
        return path

    def test_a_read_only_session_folder_fails_before_the_launch(self):
        # Before: the job ran, then the analysis was lost and nothing reached stderr.
        marker = os.path.join(self.tmp, "ran")
        folder = os.path.join(self.mount_tmpfs("size=64k,ro"), "out")
        proc = subprocess.run([RANKSCOPE, "run", "-o", folder, "--", "touch", marker],
                              env=mpi_env(), capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("cannot create the session folder " + folder, proc.stderr)
        self.assertIn("Read-only file system; the job was not started", proc.stderr)
        self.assertFalse(os.path.exists(marker))
        self.reliability("A read-only session folder", "refused before the launch",
                         "rc 1, 'Read-only file system; the job was not started'")

    def test_a_session_folder_that_fills_up_says_what_it_lacks(self):
        # 700 KiB: the reports fit, trace.json (about 630 KB here) or session.sqlite (written at
        # the same time, beside the run's record spill: about 250 KB each) not. 600 KiB, with
        # session.sqlite's two GPU summary tables (8 KB), left report.txt no room at times.
        # Before: report.json said complete beside no report.txt, and no report was shown.
        folder = os.path.join(self.mount_tmpfs("size=700k"), "out")
        command = mpirun(2, MPI_TRAIN, "--steps", "400", "--quiet")
        bare = subprocess.run(command, env=mpi_env(), capture_output=True, text=True, timeout=120)
        proc = subprocess.run([RANKSCOPE, "run", "-o", folder, "--"] + command, env=mpi_env(),
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, bare.returncode, proc.stderr[-2000:])
        self.assertEqual(proc.stdout.split(", wall")[0], bare.stdout.split(", wall")[0])
        self.assertIn("free in " + folder, proc.stderr)  # warned before the launch
        self.assertIn("Not written (this folder is incomplete):", proc.stderr)  # report shown
        self.assertIn("session folder " + folder + " is incomplete: ", proc.stderr)
        report = Session(folder).report
        self.assertFalse(schema_errors(report))
        job = report["job"]
        missing = [u.split(":")[0] for u in job["files_not_written"]]
        self.assertTrue(missing, job)
        with open(os.path.join(folder, "report.txt")) as f:
            text = f.read()
        for name in missing:
            self.assertIn(name, ("trace.json", "report.html", "session.sqlite"))
            self.assertFalse(os.path.exists(os.path.join(folder, name)), name)
            self.assertIn("  " + name + ": ", text)
        self.reliability("A session folder that fills up", "no report claims more than written",
                         "output as bare; report.json lists " + ", ".join(missing) +
                         " as not written")


def agents_of(session_dir_marker=None):
    """{world rank: pid} of the `rankscope agent` processes running now, from their cmdline and
    environment (OMPI_COMM_WORLD_RANK)."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            if len(argv) < 2 or not argv[0].endswith(b"rankscope") or argv[1] != b"agent":
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
        except OSError:
            continue
        if session_dir_marker is not None and env.get(b"RANKSCOPE_IT") != session_dir_marker:
            continue
        if b"OMPI_COMM_WORLD_RANK" in env:
            found[int(env[b"OMPI_COMM_WORLD_RANK"])] = int(pid)
    return found


class DyingCoordinator(RankscopeTest):
    def test_killing_rankscope_run_keeps_every_rank_in_the_agents_spools(self):
        # kill -9 of `rankscope run` in the middle of the job: the job finishes as bare, each
        # agent keeps its records in its spool and says where, and `rankscope report --spools`
        # rebuilds the session with every rank, every step, marked partial.
        steps = 1000  # about 3-4 s under rankscope: it is killed 1 s after the ranks start
        job = mpirun(2, MPI_TRAIN, "--steps", str(steps))
        bare = self.run_plain(job)
        tmp = os.path.join(self.tmp, "agents-tmp")
        os.mkdir(tmp)
        out = os.path.join(self.tmp, "out")
        proc = subprocess.Popen([RANKSCOPE, "run", "-o", out, "--"] + job,
                                env=mpi_env({"TMPDIR": tmp}), cwd=self.tmp, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        wait_until_ranks_run(proc.pid)
        self.assertIsNone(proc.poll(), "the job ended before rankscope was killed")
        proc.kill()
        stdout, stderr = proc.communicate(timeout=120)
        deadline = time.monotonic() + 60  # the job runs on, orphaned: wait for its ranks
        while time.monotonic() < deadline and subprocess.run(
                ["pgrep", "-f", f"mpi_train --steps {steps}"], capture_output=True).returncode == 0:
            time.sleep(0.2)
        self.assertEqual(without_wall(stdout)[-1:], without_wall(bare.stdout)[-1:])  # checksum
        spools = sorted(glob.glob(os.path.join(tmp, "rankscope-*-spool.*")))
        self.assertEqual(len(spools), 2, os.listdir(tmp))
        for s in spools:
            self.assertIn(s, stderr)  # each agent said where its records are
        rebuilt = os.path.join(self.tmp, "rebuilt")
        rep = subprocess.run([RANKSCOPE, "report", "-q", "--spools", *spools, "-o", rebuilt],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(rep.returncode, 0, rep.stderr)
        s = Session(rebuilt)
        self.assertEqual(s.report["job"]["status"], "partial")
        self.assertIn("rebuilt from 2 agent spool(s)", " ".join(s.report["job"]["partial_reasons"]))
        self.assertEqual([(r["rank"], r["exit_code"], r["finished"]) for r in s.report["ranks"]],
                         [(0, 0, True), (1, 0, True)])
        self.assertGreaterEqual(s.report["collectives"]["by_op"]["allreduce"], steps)
        self.assertEqual(s.report["collectives"]["mismatched"], 0)
        # A file that is no spool is named and left out; none at all is an error.
        junk = os.path.join(self.tmp, "junk")
        with open(junk, "w") as f:
            f.write("not a spool")
        rep = subprocess.run([RANKSCOPE, "report", "-q", "--spools", junk, "-o", rebuilt + "2"],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(rep.returncode, 1)
        self.assertIn("junk is not a rankscope spool", rep.stderr)
        self.reliability("kill -9 of `rankscope run` mid-job",
                         "the job as bare; the session rebuilt from the agents' spools",
                         f"checksum as bare; 2 spools named on stderr; rebuilt: both ranks, "
                         f"{s.report['collectives']['by_op']['allreduce']} all-reduces, partial")


class DyingAgents(RankscopeTest):
    def test_killing_an_agent_leaves_the_job_as_bare(self):
        # Before, the agent was the process mpirun started for the rank: kill -9 of it was the
        # rank's death to mpirun, which aborted the job (output stopped at step 350 of 400,
        # rc 137). Now the program is exec'd in place and the agent runs beside it.
        command = mpirun(2, MPI_TRAIN, "--steps", "300", "--compute-ms", "6", "--quiet")
        bare = subprocess.run(command, env=mpi_env(), capture_output=True, text=True, timeout=120)
        self.assertEqual(bare.returncode, 0, bare.stderr)
        marker = os.path.basename(self.tmp).encode()
        out = os.path.join(self.tmp, "out")
        tmpdir = os.path.join(self.tmp, "tmp")
        os.mkdir(tmpdir)
        prof = subprocess.Popen([RANKSCOPE, "run", "-o", out, "--"] + command,
                                env=mpi_env({"RANKSCOPE_IT": marker.decode(), "TMPDIR": tmpdir}),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        killed = None
        deadline = time.monotonic() + 30
        while killed is None and time.monotonic() < deadline and prof.poll() is None:
            if 1 in agents_of(marker):
                # Well into the run (about 2 s); looked for again, since the process mpirun
                # started is an agent only until it execs the program.
                time.sleep(0.8)
                agents = agents_of(marker)
                if 1 in agents:
                    os.kill(agents[1], signal.SIGKILL)
                    killed = agents[1]
            time.sleep(0.05)
        t0 = time.monotonic()
        stdout, stderr = prof.communicate(timeout=120)
        after_kill_s = time.monotonic() - t0
        self.assertIsNotNone(killed, "no agent of rank 1 was seen")
        # Nobody waits for the dead agent's final batch (its control stream broke).
        self.assertLess(after_kill_s, 8.0)
        self.assertEqual(prof.returncode, bare.returncode, stderr[-2000:])
        self.assertEqual(stdout.split(", wall")[0], bare.stdout.split(", wall")[0])
        self.assertFalse(agents_of(marker), "agents left running")
        # The killed agent's control page, socket and NCCL directory are removed by
        # `rankscope run` (they were left in TMPDIR).
        self.assertEqual([n for n in os.listdir(tmpdir) if n.startswith("rankscope-")], [])
        s = Session(out)
        job = s.report["job"]
        self.assertEqual(job["status"], "partial", job)
        self.assertTrue(any("rank(s) 1 never sent their final records" in r
                            for r in job["partial_reasons"]), job["partial_reasons"])
        self.assertTrue(s.rank(0)["finished"], s.rank(0))
        self.assertEqual(s.rank(0)["exit_code"], 0)
        self.assertGreater(s.rank(1)["counts"]["collectives"], 0)  # kept until the kill
        self.reliability("kill -9 of one agent mid-job",
                         "the job's output and exit code as bare; that rank partial",
                         f"rc {prof.returncode} = bare, same output; returned {after_kill_s:.1f} s "
                         f"after the kill; rank 1 partial with {s.rank(1)['counts']['collectives']}"
                         " collectives kept; no files or agents left")

    def test_a_program_killed_by_a_signal_is_named_though_the_agent_is_not_its_parent(self):
        # The agent beside the program reads its status from its zombie (/proc/PID/stat) or,
        # for exit(), from the control page; a signal's death must still name the rank.
        command = mpirun(2, "sh", "-c",
                         'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then sleep 0.3; kill -9 $$; fi; '
                         'sleep 1; exit 0')
        bare = subprocess.run(command, env=mpi_env(), capture_output=True, text=True, timeout=120)
        out = os.path.join(self.tmp, "out")
        prof = subprocess.run([RANKSCOPE, "run", "-o", out, "--"] + command, env=mpi_env(),
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(prof.returncode, bare.returncode, prof.stderr[-2000:])
        s = Session(out)
        self.assertEqual(s.report["job"]["status"], "partial")
        r1 = s.rank(1)
        self.assertTrue(r1["finished"], r1)
        if r1["exit_unseen"]:  # reaped before the agent looked: said so, and named
            self.assertIsNone(r1["exit_code"])
            self.assertTrue(any("ended without calling exit()" in n for n in r1["notices"]), r1)
            self.assertTrue(any(r.startswith("rank 1 (") for r in s.report["job"]["partial_reasons"]))
        else:
            self.assertEqual(r1["term_signal"], 9, r1)
        self.reliability("A rank killed by SIGKILL (the agent beside it, not its parent)",
                         "its exit code passes through; the rank is named",
                         f"rc {prof.returncode} = bare; rank 1 " +
                         ("status unseen, named" if r1["exit_unseen"] else "signal 9"))


if __name__ == "__main__":
    unittest.main()
