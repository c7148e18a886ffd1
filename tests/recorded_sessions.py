"""The recorded sessions under tests/fixtures that `rankscope report` re-analyses in CI, and how to
re-analyse one: shared by real_app_replay_test.py and report_identity_test.py."""
import json
import os
import shutil
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
REAL_APPS = os.path.join(FIXTURES, "cpu2-real-apps")
SLOW_LAUNCH = os.path.join(FIXTURES, "cpu2-slow-launch")


def real_app_matrix():
    """cpu2-real-apps/matrix.json: the bare clean walls per app and what was planted where."""
    with open(os.path.join(REAL_APPS, "matrix.json")) as f:
        return json.load(f)


def slow_launch_recording():
    """cpu2-slow-launch/recording.json: a real app behind a launcher that took 2.3 s."""
    with open(os.path.join(SLOW_LAUNCH, "recording.json")) as f:
        return json.load(f)


def all_sessions():
    """Name -> session.sqlite of every recorded session: 2xH200 and H100 GPU jobs and real MPI
    apps."""
    sessions = {}
    for name in ("h200x2-nccl-allreduce-bench", "h200x2-nccl-allreduce-shm"):
        sessions[name] = os.path.join(FIXTURES, name, "session.sqlite")
    for folder in ("h200x2-torchrun-launch", "h200x2-torchrun-sessions"):
        for stem in ("clean", "sleep-rank1-20ms"):
            sessions[f"{folder}-{stem}"] = os.path.join(FIXTURES, folder, stem + ".sqlite")
    for stem in ("clean", "heavy-rank1", "heavy-rank1-ncu"):
        sessions[f"h100-mpi-gpu-steps-{stem}"] = os.path.join(FIXTURES, "h100-mpi-gpu-steps",
                                                              stem + ".sqlite")
    for entry in real_app_matrix()["sessions"]:
        sessions["cpu2-" + entry["session"]] = os.path.join(REAL_APPS, entry["session"],
                                                            "session.sqlite")
    slow = slow_launch_recording()["session"]
    sessions["cpu2-slow-launch-" + slow] = os.path.join(SLOW_LAUNCH, slow, "session.sqlite")
    return sessions


class Reanalysis:
    """`rankscope report` on a copy of one session.sqlite, in a temporary folder of its own (the
    report writes beside the session, and the fixtures stay untouched)."""

    def __init__(self, rankscope, sqlite_path, extra=()):
        self.dir = tempfile.mkdtemp(prefix="rankscope-replay-")
        self.session = os.path.join(self.dir, "session")
        os.makedirs(self.session)
        shutil.copy(sqlite_path, os.path.join(self.session, "session.sqlite"))
        run = subprocess.run([rankscope, "report", "-q", *extra, self.session],
                             capture_output=True, text=True, timeout=120)
        if run.returncode != 0:
            raise AssertionError(f"rankscope report {sqlite_path} exited {run.returncode}: "
                                 f"{run.stderr[-2000:]}")
        with open(os.path.join(self.session, "report.json")) as f:
            self.report = json.load(f)

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)
