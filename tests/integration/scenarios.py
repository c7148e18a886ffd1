"""Real MPI applications (not written by us) with stragglers planted from outside the program.

Used by scripts/scenario-matrix.py and integration tests. Stdlib only.

* Apps: LAMMPS (Debian `lammps`, `lmp`, Lennard-Jones melt with a per-rank dump), HPCC (Debian
  `hpcc`: HPL, PTRANS, RandomAccess, FFT, b_eff latency/bandwidth), and our own mpi_train.
  Each is an `App`: the command after `mpirun ... -np N`, the input files it needs (written
  into a fresh work directory), and the per-rank files it writes (for the storage fault).
* Faults (context managers, see `Fault`): they are planted from outside: a watcher thread finds
  the target rank's process among the descendants of the launcher by its environment
  (OMPI_COMM_WORLD_RANK / PMIX_RANK in /proc/PID/environ, and libmpi mapped, so an agent or a
  wrapper shell with the same environment is never taken for the rank) and applies the fault
  within a few tens of milliseconds of the rank's exec. Cleanup always runs: cgroups removed,
  competitors killed, FIFO readers stopped.
    - CpuQuota: a cgroup CPU quota on the rank's process (cgroup v1 `cpu` or v2 `cpu.max`).
    - Competitor: the rank's threads pinned to one core, busy processes pinned beside it.
    - SlowStorage: the rank's per-rank output file is a FIFO drained slowly by a reader.
    - Freeze: the rank's cgroup frozen for F ms of every P ms (preemption / steal time), for
      apps that write no per-rank files.
* Runner: `run(app, mode="bare"|"rankscope", fault=None)` returns wall time, exit code, the
  fault's planting record and (under rankscope) report.json.
"""
import contextlib
import copy
import fcntl
import json
import os
import shutil
import signal
import stat
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.abspath(os.environ.get(
    "RANKSCOPE_BUILD", os.path.join(HERE, "..", "..", "build")))
RANKSCOPE = os.path.join(BUILD, "bin", "rankscope")
MPI_TRAIN = os.path.join(BUILD, "bin", "mpi_train")

RANK_VARS = ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID")
STRAGGLER_KINDS = ("straggler", "late_sender", "late_receiver")


class Skip(Exception):
    """A scenario cannot run on this machine (missing program, cgroup not writable...)."""


# Open MPI as root on loopback, oversubscribed: the same environment as the other integration
# tests.
from harness import mpi_env  # noqa: E402,F401


def mpirun(np, argv):
    return ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(np)] + list(argv)


# ---------------------------------------------------------------------------------------------
# Applications


class App:
    """A real MPI program: `argv` runs after `mpirun -np np`, in a work dir set up by `setup`."""

    def __init__(self, name, np, argv, inputs=(), rank_file=None, faults=(), profile_argv=None,
                 program=None, timeout=60, fault_params=None):
        self.name = name
        self.np = np
        self.argv = list(argv)
        self.inputs = list(inputs)          # (file in tests/integration/data, name in work dir)
        self.rank_file = rank_file          # rank -> path (relative to the work dir) it writes
        self.faults = list(faults)          # fault names run by default in the matrix
        # Per-fault parameters sized for this app (slowdown 1.5-4x on 2 cores), e.g.
        # {"cpu_quota": {"fraction": 0.4}}; make_fault's arguments override them.
        self.fault_params = fault_params or {}
        self.profile_argv = list(profile_argv or argv)  # a shorter run for the ltrace profile
        self.program = program or argv[0]
        self.timeout = timeout

    def with_steps(self, steps):
        """A copy running `steps` steps (LAMMPS' `-var steps N`, mpi_train's `--steps N`)."""
        argv = list(self.argv)
        for i, arg in enumerate(argv[:-1]):
            if arg == "--steps" or (arg == "steps" and i > 0 and argv[i - 1] == "-var"):
                argv[i + 1] = str(steps)
                break
        else:
            raise ValueError(f"{self.name} takes no step count")
        other = copy.copy(self)
        other.argv = argv
        return other

    def available(self):
        """None when the app can run here, else why not."""
        if os.path.isabs(self.program):
            return None if os.access(self.program, os.X_OK) else f"{self.program} not built"
        return None if shutil.which(self.program) else \
            f"{self.program} not installed (scripts/install-deps.sh)"

    def setup(self, workdir):
        for src, dst in self.inputs:
            shutil.copy(os.path.join(DATA, src), os.path.join(workdir, dst))
        if self.name == "hpcc" and self.np != 4:
            _hpcc_grid(os.path.join(workdir, "hpccinf.txt"), self.np)


def _hpcc_grid(path, np):
    """HPL's process grid in hpccinf.txt (2 x 2 for 4 ranks) made 1 x np."""
    with open(path) as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines):
        value, _, label = line.partition(" ")
        if label.strip() == "Ps":
            lines[i] = "1" + " " * 12 + "Ps"
        elif label.strip() == "Qs":
            lines[i] = str(np).ljust(13) + "Qs"
    with open(path, "w") as f:
        f.write("\n".join(lines))


def apps():
    """The scenario apps, sized so a clean np 4 run takes a few seconds on 2 cores."""
    return {
        # LAMMPS' bench/in.lj (32000 atoms), 100 steps, every rank dumping its atoms to its own
        # file (dump.lj.<rank>) every 10 steps. Calls: Sendrecv/Irecv/Send/Wait (halo exchange),
        # Allreduce (thermo, neighbor), Bcast/Barrier (setup).
        "lammps": App(
            "lammps", 4,
            ["lmp", "-in", "in.lj", "-log", "none", "-screen", "none", "-var", "steps", "100"],
            inputs=[("lammps-lj.in", "in.lj")],
            rank_file=lambda r: f"dump.lj.{r}",
            faults=["cpu_quota", "competitor", "slow_storage"],
            fault_params={"cpu_quota": {"fraction": 0.2}, "competitor": {"count": 3},
                          "slow_storage": {"rate": 500_000}},
            profile_argv=["lmp", "-in", "in.lj", "-log", "none", "-screen", "none",
                          "-var", "steps", "20"]),
        # HPC Challenge 1.5 (HPL N=400, PTRANS, MPIRandomAccess, MPIFFT, b_eff ping-pong/rings,
        # STREAM/DGEMM). Rank 0 writes hpccoutf.txt; no per-rank files.
        "hpcc": App(
            "hpcc", 4, ["hpcc"], inputs=[("hpccinf.txt", "hpccinf.txt")], timeout=120,
            faults=["cpu_quota", "competitor", "freeze"],
            # RandomAccess and b_eff are latency-bound: HPCC's response to a quota depends on the
            # machine's load (seen: 20% -> 4-5x with builds running, 25% -> 1.5-5.8x, 40% ->
            # 1.1-1.3x on a quieter machine).
            fault_params={"cpu_quota": {"fraction": 0.3}, "competitor": {"count": 2},
                          "freeze": {"frozen_ms": 60, "period_ms": 100}}),
        # Our example: allreduce training loop.
        "mpi_train": App(
            "mpi_train", 4, [MPI_TRAIN, "--steps", "60", "--compute-ms", "15", "--quiet"],
            faults=["cpu_quota", "competitor", "freeze"],
            fault_params={"cpu_quota": {"fraction": 0.2}, "competitor": {"count": 3},
                          "freeze": {"frozen_ms": 75, "period_ms": 100}},
            profile_argv=[MPI_TRAIN, "--steps", "20", "--compute-ms", "15", "--quiet"],
            program=MPI_TRAIN),
    }


# ---------------------------------------------------------------------------------------------
# Finding a rank's process from outside


def _children_map():
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                data = f.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may contain spaces and parentheses.
        fields = data[data.rfind(")") + 2:].split()
        children.setdefault(int(fields[1]), []).append(int(entry))
    return children


def descendants(root):
    """(pid, depth) of every live descendant of root, breadth first."""
    children = _children_map()
    out, frontier, depth = [], [root], 0
    while frontier:
        depth += 1
        nxt = []
        for pid in frontier:
            for child in children.get(pid, ()):
                out.append((child, depth))
                nxt.append(child)
        frontier = nxt
    return out


def proc_rank(pid):
    """The MPI rank in the process's environment, or None."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read().split(b"\0")
    except OSError:
        return None
    values = {}
    for item in env:
        name, _, value = item.partition(b"=")
        values[name.decode(errors="replace")] = value
    for var in RANK_VARS:
        if var in values:
            try:
                return int(values[var])
            except ValueError:
                return None
    return None


def maps_libmpi(pid):
    try:
        with open(f"/proc/{pid}/maps") as f:
            return any("libmpi" in line for line in f)
    except OSError:
        return False


def find_rank_processes(root, rank):
    """PIDs of rank `rank`'s MPI process(es) below root: the deepest descendants whose
    environment says that rank and that have libmpi mapped (not agents or wrapper shells)."""
    found = [(pid, d) for pid, d in descendants(root)
             if proc_rank(pid) == rank and maps_libmpi(pid)]
    if not found:
        return []
    deepest = max(d for _, d in found)
    return [pid for pid, d in found if d == deepest]


def proc_start_time(pid):
    """Seconds since boot at which pid started (for the planting lag)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
        ticks = int(data[data.rfind(")") + 2:].split()[19])
        return ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def uptime():
    with open("/proc/uptime") as f:
        return float(f.read().split()[0])


def thread_ids(pid):
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


# ---------------------------------------------------------------------------------------------
# cgroups


def _mountinfo():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, rfields = left.split(), right.split()
            if len(rfields) >= 3:
                yield fields[4], rfields[0], rfields[2].split(",")


def cgroup_dir(controller):
    """(version, directory) where a child cgroup with `controller` can be made, or raises Skip.
    v1: the hierarchy that has the controller mounted; v2: the unified mount if it offers it."""
    v1, v2 = None, None
    for mount_point, fstype, options in _mountinfo():
        if fstype == "cgroup" and controller in options and v1 is None:
            v1 = mount_point
        elif fstype == "cgroup2" and v2 is None:
            v2 = mount_point
    if v1 and os.access(v1, os.W_OK):
        return 1, v1
    v2_note = "not mounted"
    if v2:
        try:
            with open(os.path.join(v2, "cgroup.controllers")) as f:
                offered = f.read().split()
        except OSError:
            offered = []
        if controller != "freezer" and controller not in offered:  # v2 freezing is built in
            v2_note = f"{v2} offers [{' '.join(offered)}]"
        elif not os.access(v2, os.W_OK):
            v2_note = f"{v2} not writable (read-only, or not root)"
        else:
            return 2, v2
    v1_note = v1 and (f"{v1} not writable (read-only, or not root)")
    raise Skip(f"no writable cgroup hierarchy with the '{controller}' controller "
               f"(v1: {v1_note or 'not mounted'}; v2: {v2_note})")


class Cgroup:
    """A fresh child cgroup; `close` moves any process left back to the parent and removes it."""

    def __init__(self, controller):
        self.version, self.parent = cgroup_dir(controller)
        self.controller = controller
        if self.version == 2 and controller != "freezer":
            # The controller must be enabled for the parent's children.
            try:
                with open(os.path.join(self.parent, "cgroup.subtree_control")) as f:
                    enabled = f.read().split()
                if controller not in enabled:
                    with open(os.path.join(self.parent, "cgroup.subtree_control"), "w") as f:
                        f.write("+" + controller)
            except OSError as e:
                raise Skip(f"cannot enable the {controller} controller in {self.parent}: {e}")
        self.path = os.path.join(self.parent, f"rankscope-fault-{uuid.uuid4().hex[:8]}")
        try:
            os.mkdir(self.path)
        except OSError as e:
            raise Skip(f"cannot create a cgroup in {self.parent}: {e}")

    def write(self, name, value):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(str(value))

    def read(self, name):
        with open(os.path.join(self.path, name)) as f:
            return f.read()

    def add(self, pid):
        self.write("cgroup.procs", pid)

    def close(self):
        if not os.path.isdir(self.path):
            return
        with contextlib.suppress(OSError):
            if self.version == 1 and self.controller == "freezer":
                self.write("freezer.state", "THAWED")
            elif self.version == 2 and self.controller == "freezer":
                self.write("cgroup.freeze", "0")
        for _ in range(50):
            try:
                pids = self.read("cgroup.procs").split()
            except OSError:
                pids = []
            for pid in pids:
                with contextlib.suppress(OSError):
                    with open(os.path.join(self.parent, "cgroup.procs"), "w") as f:
                        f.write(pid)
            try:
                os.rmdir(self.path)
                return
            except OSError:
                time.sleep(0.02)


# ---------------------------------------------------------------------------------------------
# Faults


class Fault:
    """A fault planted on one rank from outside. Use as a context manager around the run:

        with fault:                 # prepare (cgroup, FIFO ...); raises Skip if impossible
            proc = Popen(...)
            fault.watch(proc.pid)   # find the rank's process, apply within ~20 ms of its exec
            proc.wait()
        # cleanup always ran; fault.record says when/where it was applied
    """

    name = "fault"
    # A file (relative to the run's folder) whose first bytes start the `after_s` count instead
    # of the launch: a fault planted once the program is inside its main loop, however long
    # its start took (LAMMPS writes its step-0 dump just before the loop).
    after_file = None
    # And a text that file must hold first (HPCC's "Begin of MPIRandomAccess section").
    after_text = None

    def __init__(self, rank):
        self.rank = rank
        self.workdir = None
        self.record = {"fault": self.name, "rank": rank, "planted": False}
        self._stop = threading.Event()
        self._thread = None
        self._lock = threading.Lock()

    def _file_ready(self, path):
        """True once `path` has bytes (and holds after_text, when one is set)."""
        if not self.after_text:
            return os.path.getsize(path) > 0
        with open(path, errors="replace") as f:
            return self.after_text in f.read()

    # Subclasses override these.
    def prepare(self, workdir):
        pass

    def apply(self, pids):
        pass

    def refresh(self, pids):
        """Called every ~0.25 s after apply while the rank lives (e.g. to pin new threads)."""

    def cleanup(self):
        pass

    def describe(self):
        return self.name

    # Context manager and watcher.
    def __enter__(self):
        return self

    def setup(self, workdir):
        self.workdir = workdir
        self.prepare(workdir)

    def watch(self, root_pid, poll_s=0.01, give_up_s=60, after_s=0):
        """Applies the fault once the rank's process is found, or `after_s` seconds after the
        watch began if that is later (a fault that starts mid-run)."""
        self._thread = threading.Thread(target=self._watch,
                                        args=(root_pid, poll_s, give_up_s, after_s), daemon=True)
        self._thread.start()

    def _watch(self, root, poll_s, give_up_s, after_s=0):
        not_before = time.monotonic() + after_s
        deadline = time.monotonic() + give_up_s
        pids = []
        while not self._stop.is_set() and time.monotonic() < deadline:
            pids = find_rank_processes(root, self.rank)
            if pids:
                break
            self._stop.wait(poll_s)
        if not pids:
            self.record["error"] = f"rank {self.rank}'s process not found below pid {root}"
            return
        if self.after_file:
            path = os.path.join(self.workdir or ".", self.after_file)
            while not self._stop.is_set() and time.monotonic() < deadline:
                with contextlib.suppress(OSError):
                    if self._file_ready(path):
                        break
                self._stop.wait(poll_s)
            else:
                if not self._stop.is_set():
                    self.record["error"] = f"{self.after_file} was not written within {give_up_s} s"
                return
            self.record["after_file_s"] = round(time.monotonic() - (not_before - after_s), 3)
            if self.after_text:
                self.record["after_text"] = self.after_text
            not_before = time.monotonic() + after_s
        if self._stop.wait(max(0.0, not_before - time.monotonic())):
            return
        try:
            with self._lock:
                self.apply(pids)
        except Exception as e:  # noqa: BLE001 - recorded, the run is marked unplanted
            self.record["error"] = f"apply failed: {e!r}"
            return
        self.record["applied_monotonic"] = time.monotonic()
        now = uptime()
        exes = []
        for pid in pids:
            with contextlib.suppress(OSError):
                exes.append(os.readlink(f"/proc/{pid}/exe"))
        self.record["exe"] = exes
        starts = [s for s in (proc_start_time(p) for p in pids) if s is not None]
        self.record.update({"planted": True, "pids": pids,
                            "lag_s": round(now - min(starts), 3) if starts else None})
        while not self._stop.wait(0.25):
            live = [p for p in pids if os.path.exists(f"/proc/{p}")]
            if not live:
                break
            with contextlib.suppress(Exception), self._lock:
                self.refresh(live)

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)
        with self._lock:
            self.cleanup()
        return False


class CpuQuota(Fault):
    """The rank's process in a cgroup limited to `fraction` of one CPU (cfs quota)."""

    name = "cpu_quota"

    def __init__(self, rank, fraction=0.2, period_us=100000):
        super().__init__(rank)
        self.fraction, self.period_us = fraction, period_us
        self.cg = None

    def describe(self):
        return f"cpu_quota {self.fraction:.0%} of a CPU"

    def prepare(self, workdir):
        self.cg = Cgroup("cpu")
        quota = int(self.period_us * self.fraction)
        if self.cg.version == 1:
            self.cg.write("cpu.cfs_period_us", self.period_us)
            self.cg.write("cpu.cfs_quota_us", quota)
        else:
            self.cg.write("cpu.max", f"{quota} {self.period_us}")
        self.record["cgroup"] = self.cg.path

    def apply(self, pids):
        for pid in pids:
            self.cg.add(pid)

    def cleanup(self):
        if self.cg:
            with contextlib.suppress(OSError):
                name = "cpu.stat"
                self.record["cpu_stat"] = dict(
                    line.split() for line in self.cg.read(name).splitlines() if line.strip())
            self.cg.close()


_BUSY = "import os\nwhile True:\n    pass\n"


class Competitor(Fault):
    """The rank's threads pinned to one core with `count` busy processes pinned beside it."""

    name = "competitor"

    def __init__(self, rank, count=2, core=None):
        super().__init__(rank)
        self.count = count
        self.core = core
        self.procs = []
        self.pinned = set()

    def describe(self):
        return f"competitor x{self.count} on the rank's core"

    def prepare(self, workdir):
        cpus = sorted(os.sched_getaffinity(0))
        if self.core is None:
            self.core = cpus[self.rank % len(cpus)]
        self.record["core"] = self.core

    def helper_pids(self):
        return [p.pid for p in self.procs]

    def _pin(self, pids):
        for pid in pids:
            for tid in thread_ids(pid):
                if tid not in self.pinned:
                    with contextlib.suppress(OSError):
                        os.sched_setaffinity(tid, {self.core})
                        self.pinned.add(tid)

    def apply(self, pids):
        # Started here, not in prepare, so that a fault planted mid-run (watch's after_s) loads
        # the machine only from then on.
        for _ in range(self.count):
            p = subprocess.Popen([sys.executable, "-c", _BUSY], stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 start_new_session=True)
            os.sched_setaffinity(p.pid, {self.core})
            self.procs.append(p)
        self.record["competitor_pids"] = [p.pid for p in self.procs]
        self._pin(pids)

    def refresh(self, pids):
        self._pin(pids)

    def cleanup(self):
        for p in self.procs:
            with contextlib.suppress(OSError):
                p.kill()
            with contextlib.suppress(Exception):
                p.wait(timeout=5)
        self.procs = []


class SlowStorage(Fault):
    """The rank's per-rank output file is a FIFO (pipe buffer shrunk to one page) that a reader
    drains at `rate` bytes/s: the rank blocks in write() like on a slow file system."""

    name = "slow_storage"

    def __init__(self, rank, rate=400_000, burst=16384, rank_file=None):
        super().__init__(rank)
        self.rate, self.burst = rate, burst
        self.rank_file = rank_file
        self.fifo = None
        self.reader = None
        self.drained = 0

    def describe(self):
        return f"slow_storage {self.rate / 1e3:.0f} kB/s"

    def prepare(self, workdir):
        if self.rank_file is None:
            raise Skip("the app writes no per-rank file")
        self.fifo = os.path.join(workdir, self.rank_file(self.rank))
        os.mkfifo(self.fifo)
        self.reader = threading.Thread(target=self._drain, daemon=True)
        self.reader.start()
        self.record["fifo"] = self.fifo

    def _drain(self):
        try:
            fd = os.open(self.fifo, os.O_RDONLY)  # blocks until the rank opens it
        except OSError:
            return
        try:
            with contextlib.suppress(OSError):
                fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 4096)
            # Token bucket with a small burst: each write costs its size / rate, as on a slow
            # file system, and time the rank spends computing earns no credit beyond `burst`.
            tokens, last = 0.0, time.monotonic()
            while True:
                now = time.monotonic()
                tokens, last = min(self.burst, tokens + (now - last) * self.rate), now
                if self._stop.is_set():
                    n = 1 << 20  # after the run: drain freely so a writer never hangs
                elif tokens < 1024:
                    time.sleep((1024 - tokens) / self.rate)
                    continue
                else:
                    n = int(tokens)
                data = os.read(fd, n)
                if not data:
                    break
                tokens -= len(data)
                self.drained += len(data)
        finally:
            os.close(fd)

    def watch(self, root_pid, poll_s=0.01, give_up_s=60, after_s=0):
        # Planted before the start (the file is there when the rank opens it), whatever
        # `after_s` says; the watcher only records the rank's process (applied_s: its exec).
        super().watch(root_pid, poll_s, give_up_s)

    def cleanup(self):
        if self.reader and self.reader.is_alive():
            # Release a reader still blocked in open() (the rank never opened the file).
            with contextlib.suppress(OSError):
                fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
                os.close(fd)
            self.reader.join(timeout=5)
        self.record["drained_bytes"] = self.drained


class Freeze(Fault):
    """The rank's process frozen (cgroup freezer) for `frozen_ms` of every `period_ms`: the
    preemption a VM's steal time or a node daemon inflicts."""

    name = "freeze"

    def __init__(self, rank, frozen_ms=60, period_ms=100):
        super().__init__(rank)
        self.frozen_ms, self.period_ms = frozen_ms, period_ms
        self.cg = None
        self.cycler = None
        self.cycles = 0

    def describe(self):
        return f"freeze {self.frozen_ms}/{self.period_ms} ms"

    def prepare(self, workdir):
        self.cg = Cgroup("freezer")
        self.record["cgroup"] = self.cg.path

    def _set(self, frozen):
        if self.cg.version == 1:
            self.cg.write("freezer.state", "FROZEN" if frozen else "THAWED")
        else:
            self.cg.write("cgroup.freeze", "1" if frozen else "0")

    def _cycle(self):
        while not self._stop.is_set():
            with contextlib.suppress(OSError):
                self._set(True)
            self._stop.wait(self.frozen_ms / 1000)
            with contextlib.suppress(OSError):
                self._set(False)
            self.cycles += 1
            self._stop.wait((self.period_ms - self.frozen_ms) / 1000)

    def apply(self, pids):
        for pid in pids:
            self.cg.add(pid)
        self.cycler = threading.Thread(target=self._cycle, daemon=True)
        self.cycler.start()

    def cleanup(self):
        if self.cycler:
            self.cycler.join(timeout=5)
        self.record["cycles"] = self.cycles
        if self.cg:
            self.cg.close()


class Stop(Fault):
    """The rank's process stopped (SIGSTOP) for `stopped_s` seconds, then continued: a debugger
    attached, a job-control stop, a node that stops scheduling it. Applied at the rank's exec or
    `fault_after_s` into the run (or after `after_file` is written); SIGCONT is sent however the
    run ends."""

    name = "stop"

    def __init__(self, rank, stopped_s=6.0, after_file=None, after_text=None):
        super().__init__(rank)
        self.stopped_s = stopped_s
        self.after_file = after_file
        self.after_text = after_text
        self.pids = []
        self.timer = None
        self.continued = threading.Event()

    def describe(self):
        return f"stopped {self.stopped_s:g} s"

    def _continue(self):
        for pid in self.pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGCONT)
        self.continued.set()

    def apply(self, pids):
        self.pids = list(pids)
        for pid in self.pids:
            os.kill(pid, signal.SIGSTOP)
        self.timer = threading.Timer(self.stopped_s, self._continue)
        self.timer.daemon = True
        self.timer.start()

    def cleanup(self):
        if self.timer:
            self.timer.cancel()
        if self.pids and not self.continued.is_set():
            self._continue()
        self.record["continued"] = self.continued.is_set()


FAULTS = {"cpu_quota": CpuQuota, "competitor": Competitor, "slow_storage": SlowStorage,
          "freeze": Freeze, "stop": Stop}


def make_fault(name, app, rank, **params):
    """Fault `name` on `rank` of `app`, with the app's sizing unless params override it."""
    cls = FAULTS[name]
    params = dict(app.fault_params.get(name, {}), **params)
    if cls is SlowStorage:
        params.setdefault("rank_file", app.rank_file)
    return cls(rank, **params)


# ---------------------------------------------------------------------------------------------
# Running


def _become_subreaper():
    """Ranks orphaned by a dying launcher are re-parented to this process (not init), so they
    stay findable as descendants and are killed and reaped here."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except Exception:  # noqa: BLE001 - best effort (not Linux, no libc)
        pass


def _proc_state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
        return data[data.rfind(")") + 2]
    except (OSError, IndexError):
        return None


def _reap(pids, wait_s=5.0):
    """Wait until every pid is gone (reaping our own children), at most wait_s."""
    deadline = time.monotonic() + wait_s
    pending = set(pids)
    while pending and time.monotonic() < deadline:
        for pid in list(pending):
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
            if _proc_state(pid) in (None, "Z"):  # gone, or a zombie that is not ours to reap
                pending.discard(pid)
        if pending:
            time.sleep(0.05)
    return sorted(pending)


def _kill_tree(proc):
    """Kill the run's whole process group and every descendant, wherever its group."""
    pids = [p for p, _ in descendants(proc.pid)]
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        proc.wait(timeout=10)
    _reap(pids)


def _kill_orphans(exclude):
    """Kill and reap processes re-parented to us (we are a subreaper) that are not ours to
    keep: ranks or agents that outlived their launcher."""
    mine = {c for c, d in descendants(os.getpid()) if d == 1}
    orphans = sorted(mine - set(exclude))
    for pid in orphans:
        # Everything below an orphan goes too.
        for sub, _ in descendants(pid):
            with contextlib.suppress(OSError):
                os.kill(sub, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    _reap(orphans)


def run(app, mode="bare", fault=None, out_dir=None, timeout=None, keep=False, opts=(),
        fault_after_s=0):
    """Run `app` once, bare (`mpirun ...`) or under `rankscope run -o OUT -- mpirun ...`.

    Returns a dict: app, mode, fault (its record), wall_s, rc, timed_out, report (report.json
    or None), out_dir, stderr_tail, live_lines (what `--live` printed). The fault is applied
    at the rank's exec, or `fault_after_s` after the launch (its record's `applied_s`). Raises
    Skip when the app or fault cannot run here."""
    why = app.available()
    if why:
        raise Skip(why)
    if mode == "rankscope" and not os.access(RANKSCOPE, os.X_OK):
        raise Skip(f"{RANKSCOPE} not built")
    timeout = timeout or app.timeout
    _become_subreaper()
    keep_pids = {c for c, d in descendants(os.getpid()) if d == 1}  # children we had before
    workdir = tempfile.mkdtemp(prefix=f"rankscope-scn-{app.name}-")
    try:
        app.setup(workdir)
        argv = mpirun(app.np, app.argv)
        if mode == "rankscope":
            out_dir = out_dir or os.path.join(workdir, "out")
            argv = [RANKSCOPE, "run", "-o", out_dir, *opts, "--"] + argv
        stdout_path = os.path.join(workdir, "stdout.log")
        stderr_path = os.path.join(workdir, "stderr.log")
        result = {"app": app.name, "mode": mode, "fault": None, "timed_out": False,
                  "out_dir": out_dir, "report": None}
        with contextlib.ExitStack() as stack:
            if fault is not None:
                stack.enter_context(fault)
                fault.setup(workdir)
            with open(stdout_path, "w") as out, open(stderr_path, "w") as err:
                start = time.monotonic()
                proc = subprocess.Popen(argv, cwd=workdir, env=mpi_env(), stdin=subprocess.DEVNULL,
                                        stdout=out, stderr=err, start_new_session=True)
                if fault is not None:
                    fault.watch(proc.pid, after_s=fault_after_s)
                try:
                    proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    result["timed_out"] = True
                    _kill_tree(proc)
                except BaseException:  # Ctrl-C / SIGTERM: no rank outlives the run
                    _kill_tree(proc)
                    _kill_orphans(exclude=set(keep_pids) |
                                  set(getattr(fault, "helper_pids", lambda: [])()))
                    raise
                result["wall_s"] = round(time.monotonic() - start, 3)
                result["rc"] = proc.returncode
                # Nothing of the run (orphaned ranks, agents) outlives it; competitors and
                # other helpers of the fault are its own to stop.
                spare = set(keep_pids) | set(getattr(fault, "helper_pids", lambda: [])())
                _kill_orphans(exclude=spare)
        if fault is not None:
            result["fault"] = dict(fault.record, what=fault.describe())
            if "applied_monotonic" in fault.record:
                result["fault"]["applied_s"] = round(fault.record["applied_monotonic"] - start, 3)
        with open(stderr_path, errors="replace") as f:
            stderr = f.read()
        result["stderr_tail"] = stderr[-2000:]
        # What the live check printed while the job ran (`--live`).
        result["live_lines"] = [line for line in stderr.splitlines()
                                if line.startswith("rankscope: live: ")]
        if mode == "rankscope":
            path = os.path.join(out_dir, "report.json")
            if os.path.exists(path):
                with open(path) as f:
                    result["report"] = json.load(f)
        return result
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# Judging a report


def named_ranks(report, kinds=STRAGGLER_KINDS):
    """Findings of the straggler kinds as (kind, ranks) pairs."""
    if not report:
        return []
    return [(f["kind"], list(f.get("ranks", []))) for f in report.get("findings", [])
            if f.get("kind") in kinds]


def found_rank(report, rank):
    """True when a straggler/late_sender/late_receiver finding names exactly `rank`."""
    return any(ranks == [rank] for _, ranks in named_ranks(report))


def rank_process(report, rank):
    """What the agents' /proc figures say about `rank` against the others' median: its
    cpu_per_wall, the others' median, its cgroup's throttled seconds. None if not there."""
    if not report:
        return None
    procs = {x.get("rank"): x.get("process") or {} for x in report.get("ranks", [])}
    if rank not in procs:
        return None
    mine = procs[rank]
    others = sorted(p.get("cpu_per_wall", 0) for r, p in procs.items() if r != rank)
    median = others[len(others) // 2] if others else None
    return {"cpu_per_wall": mine.get("cpu_per_wall"), "others_cpu_per_wall": median,
            "throttled_s": (mine.get("cpu_cgroup") or {}).get("throttled_ns", 0) / 1e9,
            "write_bytes": mine.get("write_bytes")}


def what_if(report):
    """findings[].evidence.what_if of the straggler kinds, as found (None when absent)."""
    if not report:
        return []
    out = []
    for f in report.get("findings", []):
        ev = f.get("evidence") or {}
        if f.get("kind") in STRAGGLER_KINDS and "what_if" in ev:
            out.append({"kind": f["kind"], "ranks": f.get("ranks"), "what_if": ev["what_if"]})
    return out


def job_seconds(report):
    """The job's wall as the report states it (job.duration_ns), in seconds; None without."""
    ns = ((report or {}).get("job") or {}).get("duration_ns")
    return ns * 1e-9 if isinstance(ns, (int, float)) else None


def outside_mpi_seconds(report, skip_rank=None, pick=statistics.median):
    """`pick` (default the median) over the report's ranks but `skip_rank` of the time each spent
    outside MPI (ranks[].mpi.outside_mpi_ns), in seconds; None without figures."""
    vals = [r["mpi"]["outside_mpi_ns"] for r in (report or {}).get("ranks", [])
            if r.get("rank") != skip_rank and isinstance((r.get("mpi") or {}).get("outside_mpi_ns"),
                                                         (int, float))]
    return pick(vals) * 1e-9 if vals else None


def git_commit():
    """The checkout's short commit (with -dirty when it has changes), or "unknown"."""
    try:
        out = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def what_if_seconds(value):
    """A job time in seconds from a what_if value: a number (taken as seconds), or the first
    field whose name ends in _s / _ns / _ms (e.g. {"job_wall_s": 3.1}). None if none."""
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, dict):
        if isinstance(value.get("what_if_ns"), (int, float)):  # rankscope.report/v1
            return value["what_if_ns"] * 1e-9
        for scale, suffix in ((1.0, "_s"), (1e-3, "_ms"), (1e-9, "_ns")):
            for key, v in value.items():
                if key.endswith(suffix) and isinstance(v, (int, float)) and \
                        not (suffix == "_s" and (key.endswith("_ns") or key.endswith("_ms"))):
                    return v * scale
    return None


# ---------------------------------------------------------------------------------------------
# MPI call profile


def profile_mpi_calls(app, timeout=400):
    """Which MPI functions each rank calls and how often: every rank runs under
    `ltrace -c -x 'MPI_*@libmpi.so*'` (entry breakpoints on libmpi's exported MPI_ symbols, so
    calls from the program and from its libraries both count). Returns {rank: {fn: calls}}."""
    if not shutil.which("ltrace"):
        raise Skip("ltrace not installed")
    why = app.available()
    if why:
        raise Skip(why)
    workdir = tempfile.mkdtemp(prefix=f"rankscope-prof-{app.name}-")
    try:
        app.setup(workdir)
        wrapper = os.path.join(workdir, "ltrace-rank.sh")
        with open(wrapper, "w") as f:
            f.write("#!/bin/sh\nexec ltrace -c -x 'MPI_*@libmpi.so*' -L "
                    f"-o {workdir}/ltrace.$OMPI_COMM_WORLD_RANK \"$@\"\n")
        os.chmod(wrapper, 0o755)
        proc = subprocess.Popen(mpirun(app.np, [wrapper] + app.profile_argv), cwd=workdir,
                                env=mpi_env(), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_tree(proc)
            raise Skip(f"ltrace profile of {app.name} ran past {timeout} s")
        profile = {}
        for rank in range(app.np):
            calls = {}
            path = os.path.join(workdir, f"ltrace.{rank}")
            if os.path.exists(path):
                with open(path) as f:
                    for line in f:
                        parts = line.split()
                        if len(parts) == 5 and parts[4].startswith("MPI_"):
                            calls[parts[4]] = calls.get(parts[4], 0) + int(parts[3])
            profile[rank] = calls
        return profile
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
