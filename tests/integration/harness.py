"""Shared helpers for rankscope's integration tests: real mpirun, real agents, real gRPC.

Every test runs real processes built in the build tree (RANKSCOPE_BUILD, default ../../build)
and reads the session folder rankscope writes.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

BUILD = os.path.abspath(os.environ.get(
    "RANKSCOPE_BUILD", os.path.join(os.path.dirname(__file__), "..", "..", "build")))
RANKSCOPE = os.path.join(BUILD, "bin", "rankscope")
MPI_TRAIN = os.path.join(BUILD, "bin", "mpi_train")
HERE = os.path.dirname(os.path.abspath(__file__))


SCHEMA = os.path.join(HERE, "..", "..", "coordinator", "report", "report.schema.json")


def schema_errors(report):
    """report.json's violations of its schema (rankscope.report/v1), or None without jsonschema."""
    try:
        import jsonschema
    except ImportError:
        return None
    with open(SCHEMA) as f:
        schema = json.load(f)
    validator = jsonschema.Draft202012Validator(schema)
    return [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(report)]


def mpi_env(extra=None):
    """Environment for Open MPI as root on loopback, oversubscribed (TESTBED.md)."""
    env = dict(os.environ)
    env.update({
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        "OMPI_MCA_btl": "self,tcp",
        "OMPI_MCA_btl_tcp_if_include": "lo",
        "OMPI_MCA_oob_tcp_if_include": "lo",
        "OMPI_MCA_mpi_yield_when_idle": "1",
        "OMPI_MCA_rmaps_base_oversubscribe": "1",
        "NO_COLOR": "1",
    })
    env.pop("RANKSCOPE_COORDINATOR", None)
    env.pop("RANKSCOPE_TOKEN", None)
    env.pop("RANKSCOPE_SESSION", None)
    if extra:
        env.update(extra)
    return env


def mpirun(np, *args):
    return ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(np)] + list(args)


class Session:
    """A finished session folder."""

    def __init__(self, path):
        self.path = path
        with open(os.path.join(path, "report.json")) as f:
            self.report = json.load(f)

    @property
    def findings(self):
        return self.report["findings"]

    def findings_of(self, kind):
        return [f for f in self.findings if f["kind"] == kind]

    def rank(self, r):
        return next(x for x in self.report["ranks"] if x["rank"] == r)


class RankscopeTest(unittest.TestCase):
    """Gives each test a scratch folder and a helper to run `rankscope run`."""

    def setUp(self):
        for exe in (RANKSCOPE, MPI_TRAIN):
            if not os.path.exists(exe):
                self.fail(f"{exe} is not built (build the project first)")
        self.tmp = tempfile.mkdtemp(prefix="rankscope-it-")
        # A cleanup, not tearDown: cleanups run last-in first-out after tearDown, so what a test
        # mounts in its folder (addCleanup) comes off before the folder goes.
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def reliability(self, case, promise, result):
        """A row of docs/reliability.md (scripts/reliability-table.py): written when the test
        got this far, i.e. the promise held; `result` says what was measured."""
        folder = os.path.join(BUILD, "reliability")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, self.id() + ".json"), "w") as f:
            json.dump({"case": case, "promise": promise, "result": result, "test": self.id()}, f)

    def run_rankscope(self, command, out="out", timeout=240, extra_env=None, opts=()):
        out_dir = os.path.join(self.tmp, out)
        argv = [RANKSCOPE, "run", "-o", out_dir, *opts, "--"] + command
        proc = subprocess.run(argv, env=mpi_env(extra_env), capture_output=True, text=True,
                              timeout=timeout, cwd=self.tmp)
        return proc, out_dir

    def run_plain(self, command, timeout=240, extra_env=None):
        return subprocess.run(command, env=mpi_env(extra_env), capture_output=True, text=True,
                              timeout=timeout, cwd=self.tmp)

    def assertFile(self, path):
        self.assertTrue(os.path.exists(path), f"{path} missing")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Coordinator:
    """A stand-alone `rankscope coordinator` process."""

    def __init__(self, tmp, ranks, session="it-session", extra=()):
        self.token_file = os.path.join(tmp, "token")
        self.out = os.path.join(tmp, "coord-out")
        self.proc = subprocess.Popen(
            [RANKSCOPE, "coordinator", "--token-file", self.token_file, "--session", session,
             "-o", self.out, "--ranks", str(ranks), *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=mpi_env())
        line = self.proc.stdout.readline()
        if "listening on" not in line:
            raise RuntimeError("coordinator did not start: " + line + self.proc.stderr.read())
        self.address = line.strip().rsplit(" ", 1)[1]
        self.session = session
        with open(self.token_file) as f:
            self.token = f.read().strip()

    def agent_env(self, **overrides):
        env = {"RANKSCOPE_COORDINATOR": self.address, "RANKSCOPE_TOKEN": self.token,
               "RANKSCOPE_SESSION": self.session}
        env.update(overrides)
        return env

    def wait(self, timeout=60):
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
        return self.proc.returncode, out, err

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
